"""Pods on a network of their own, for tests/k8s_pods.py --netns.

Each pod gets a network namespace with one interface, eth0, on a
non-loopback address 10.88.0.N/24 (a veth pair whose other end is on a
bridge in the runner's namespace, which has 10.88.0.1), and its own
/etc/hosts (/etc/netns/<ns>/hosts, which `ip netns exec` mounts over
/etc/hosts) naming every Service and StatefulSet pod of the job, as
cluster DNS would. Its processes start under `ip netns exec`.

Needs root. It changes the namespaces and the /etc/netns it runs in, so run
it in namespaces of its own: `unshare -n -m` with a tmpfs on /etc/netns
(tests/k8s_pods_test.sh does).
"""
import os
import subprocess

SUBNET = "10.88.0"
BRIDGE = "podbr0"


def ip(*args):
    subprocess.run(("ip",) + args, check=True)


class Network:
    def __init__(self):
        if os.geteuid() != 0:
            raise SystemExit("--netns needs root")
        if not os.access("/etc/netns", os.W_OK):
            raise SystemExit("--netns needs a writable /etc/netns "
                             "(a tmpfs in a mount namespace of its own)")
        self.namespaces = {}  # pod name -> namespace
        self.hosts = {}  # DNS name -> address, for every pod's /etc/hosts
        ip("link", "set", "lo", "up")
        ip("link", "add", BRIDGE, "type", "bridge")
        ip("addr", "add", SUBNET + ".1/24", "dev", BRIDGE)
        ip("link", "set", BRIDGE, "up")

    @staticmethod
    def address(n):
        return "%s.%d" % (SUBNET, n)

    def add(self, pod):
        """The pod's namespace, on the bridge at pod.ip, with its hosts."""
        n = len(self.namespaces)
        ns, veth = "pod%d" % n, "vpod%d" % n
        ip("netns", "add", ns)
        ip("link", "add", veth, "type", "veth", "peer", "name", "eth0",
           "netns", ns)
        ip("link", "set", veth, "master", BRIDGE, "up")
        ip("-n", ns, "addr", "add", pod.ip + "/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        ip("-n", ns, "link", "set", "lo", "up")
        os.makedirs("/etc/netns/" + ns, exist_ok=True)
        with open("/etc/netns/%s/hosts" % ns, "w") as f:
            f.write("127.0.0.1 localhost\n%s %s\n" % (pod.ip, pod.name))
            for name, address in sorted(self.hosts.items()):
                f.write("%s %s\n" % (address, name))
        self.namespaces[pod.name] = ns

    def prefix(self, pod):
        """What the pod's commands run under."""
        if pod.name not in self.namespaces:
            self.add(pod)
        return ["ip", "netns", "exec", self.namespaces[pod.name]]

    def close(self):
        for ns in self.namespaces.values():
            subprocess.run(["ip", "netns", "delete", ns])
        subprocess.run(["ip", "link", "delete", BRIDGE])

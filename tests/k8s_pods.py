#!/usr/bin/env python3
"""Runs rendered Kubernetes objects as local processes: pods as processes.

    k8s_pods.py OBJECTS.yaml SAMPAN WORKDIR [--replace-trainer=RANK]
                [--netns] [--secret=NAME=DIR]...

OBJECTS.yaml is `kubectl kustomize` output. Each pod that the Deployments,
StatefulSets and Indexed Jobs would create becomes a set of local processes
started from its containers' command, args and env, the way the kubelet
would start them:
  - every pod gets its own loopback address (127.X.Y.N) as status.podIP,
    or with --netns a network namespace of its own on a non-loopback
    address (tests/k8s_netns.py), where Sampan's servers refuse to listen
    without TLS and a token, as they do on a cluster;
  - env from `value` and from the downward API (podIP, pod name, labels such
    as apps.kubernetes.io/pod-index, annotations such as
    batch.kubernetes.io/job-completion-index) as the controllers set them;
  - $(VAR) in command and args expanded as the kubelet does;
  - volumes (ConfigMap files, emptyDir, volumeClaimTemplates) become
    per-pod directories, and their mount paths (and workingDir) are mapped
    to them in the arguments and in the ConfigMap files the pod reads (the
    job's checkpoint.dir names a mount path);
  - a persistentVolumeClaim volume is one directory, claims/<claimName>,
    shared by every pod that mounts it; a claim rendered with only
    ReadWriteOnce that more than one pod mounts fails the run (a cluster
    would not attach it to pods on different nodes);
  - Service names are mapped to the address of the pod they select, with
    the service port translated to the target port (what kube-proxy does),
    and a StatefulSet pod's DNS name under its headless Service
    (<pod>.<service>, what pservers advertise) to that pod's address: in
    the arguments on loopback, in each pod's /etc/hosts with --netns (so
    clients dial, and check TLS certificates against, the names);
  - a Secret volume is the directory --secret=NAME=DIR names (its files are
    the Secret's keys), copied per pod;
  - init containers run to completion before the main container.
Servers (Deployments, StatefulSets) start first and must pass their
readiness probe's port check before the Job's pods start, like a rollout
that waits for readiness. Then every Job pod must exit 0 within the deadline,
each pod's Prometheus scrape annotation must name a live /metrics endpoint
(scraped as the ServiceMonitor says when it asks for https: the Secret's CA
and server name, the Secret's token; a scrape without it must get 401),
and rank 0 must have written result.txt. Prints a summary; exits 1 on any
failure.

--replace-trainer=RANK does what the Job controller does when a pod fails:
once a complete checkpoint (a MANIFEST under a shared claim) exists, the
trainer pod of that completion index is SIGKILLed and a replacement pod
(new name, address and emptyDir, init containers again) is started from
the same template; it must log that it resumed from that checkpoint and
complete.
"""
import glob
import os
import random
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_netns  # noqa: E402

DEADLINE_SECONDS = 240
INDEX = "batch.kubernetes.io/job-completion-index"


class Pod:
    def __init__(self, name, kind, owner, template, labels, annotations, ip):
        self.name, self.kind, self.owner = name, kind, owner
        self.spec = template["spec"]
        self.labels, self.annotations, self.ip = labels, annotations, ip
        self.procs = []
        self.advertise = None  # the expanded --advertise, if any


def expand_pods(objects, netns):
    pods = []
    n = 10
    # A random 127.X.Y.0/24 per run, so that concurrent runs (or anything
    # else on the fixed container ports) cannot collide; a network of its
    # own with --netns.
    prefix = (k8s_netns.SUBNET if netns else
              "127.%d.%d" % (random.randint(1, 254), random.randint(0, 255)))
    for obj in objects:
        kind = obj["kind"]
        if kind not in ("Deployment", "StatefulSet", "Job"):
            continue
        spec, name = obj["spec"], obj["metadata"]["name"]
        count = spec.get("completions", 1) if kind == "Job" else spec.get(
            "replicas", 1)
        if kind == "Job" and spec.get("completionMode") != "Indexed":
            raise SystemExit("%s: only Indexed Jobs are supported" % name)
        for i in range(count):
            template = spec["template"]
            labels = dict(template["metadata"].get("labels", {}))
            annotations = dict(template["metadata"].get("annotations", {}))
            if kind == "StatefulSet":
                labels["apps.kubernetes.io/pod-index"] = str(i)
                labels["statefulset.kubernetes.io/pod-name"] = "%s-%d" % (name, i)
            if kind == "Job":
                annotations["batch.kubernetes.io/job-completion-index"] = str(i)
                labels["batch.kubernetes.io/job-completion-index"] = str(i)
            pods.append(Pod("%s-%d" % (name, i), kind, obj, template, labels,
                            annotations, "%s.%d" % (prefix, n)))
            n += 1
    return pods


def dns_forms(name, ns):
    return (name, "%s.%s" % (name, ns), "%s.%s.svc" % (name, ns),
            "%s.%s.svc.cluster.local" % (name, ns))


def service_map(objects, pods):
    """({'svc:port' (and the namespaced forms): 'podip:targetport',
    '<pod>.<headless svc>' (and its namespaced forms): 'podip'},
    {DNS name: podip} for /etc/hosts, services whose port is not their
    target port (which DNS alone cannot map))."""
    mapping, hosts, remapped = {}, {}, []
    for svc in objects:
        if svc["kind"] != "Service":
            continue
        selector = svc["spec"].get("selector", {})
        selected = [p for p in pods
                    if all(p.labels.get(k) == v for k, v in selector.items())]
        if not selected:
            continue
        pod = selected[0]
        name = svc["metadata"]["name"]
        ns = svc["metadata"].get("namespace", "default")
        if svc["spec"].get("clusterIP") == "None":
            for p in selected:
                if p.kind == "StatefulSet":
                    for host in dns_forms("%s.%s" % (p.name, name), ns):
                        mapping[host] = hosts[host] = p.ip
        for host in dns_forms(name, ns):
            hosts[host] = pod.ip
        for port in svc["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            if isinstance(target, str):
                target = next(cp["containerPort"] for c in pod.spec["containers"]
                              for cp in c.get("ports", [])
                              if cp.get("name") == target)
            if target != port["port"]:
                remapped.append("%s:%d" % (name, port["port"]))
            for host in dns_forms(name, ns):
                mapping["%s:%d" % (host, port["port"])] = "%s:%d" % (pod.ip,
                                                                      target)
    return mapping, hosts, remapped


def field_ref(pod, path):
    if path == "status.podIP":
        return pod.ip
    if path == "metadata.name":
        return pod.name
    if path == "metadata.namespace":
        return pod.owner["metadata"].get("namespace", "default")
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if m:
        source = pod.labels if m.group(1) == "labels" else pod.annotations
        if m.group(2) not in source:
            raise SystemExit("%s: fieldRef %s is not set" % (pod.name, path))
        return source[m.group(2)]
    raise SystemExit("%s: unsupported fieldRef %s" % (pod.name, path))


def kubelet_expand(text, env):
    """$(VAR) -> value for defined VARs; $$ escapes; unknown ones stay."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else
                  env.get(m.group(1), m.group(0)), text)


class Runner:
    def __init__(self, objects, sampan, workdir, network=None, secrets=None):
        self.objects, self.sampan, self.workdir = objects, sampan, workdir
        self.network, self.secrets = network, secrets or {}
        self.config_maps = {o["metadata"]["name"]: o.get("data", {})
                            for o in objects if o["kind"] == "ConfigMap"}
        self.pods = expand_pods(objects, network is not None)
        self.services, hosts, remapped = service_map(objects, self.pods)
        if network is not None:
            if remapped:
                raise SystemExit("--netns maps names, not ports: %s" % remapped)
            network.hosts = hosts
            self.services = {}  # the pods resolve names themselves
        monitors = [o for o in objects if o["kind"] == "ServiceMonitor"]
        self.monitor = (monitors[0]["spec"]["endpoints"][0] if monitors
                        else {})
        self.failures = []
        self.claims = {o["metadata"]["name"]: o["spec"] for o in objects
                       if o["kind"] == "PersistentVolumeClaim"}
        self.claim_users = {}  # claimName -> pod names mounting it

    def volumes(self, pod):
        """Volume name -> local directory, with ConfigMap files written."""
        root = os.path.join(self.workdir, pod.name)
        dirs = {}
        configs = []
        claims = [t["metadata"]["name"] for t in
                  pod.owner["spec"].get("volumeClaimTemplates", [])]
        for v in pod.spec.get("volumes", []) + [{"name": c, "claim": 1}
                                                 for c in claims]:
            path = os.path.join(root, "volumes", v["name"])
            if "persistentVolumeClaim" in v:
                claim = v["persistentVolumeClaim"]["claimName"]
                path = os.path.join(self.workdir, "claims", claim)
                self.claim_users.setdefault(claim, set()).add(pod.name)
                modes = self.claims.get(claim, {}).get("accessModes", [])
                if (len(self.claim_users[claim]) > 1 and modes and
                        "ReadWriteMany" not in modes):
                    raise SystemExit("claim %s is %s but mounted by %s" %
                                     (claim, modes, sorted(self.claim_users[claim])))
            os.makedirs(path, exist_ok=True)
            if "configMap" in v:
                data = self.config_maps.get(v["configMap"]["name"])
                if data is None:
                    raise SystemExit("%s: ConfigMap %s not rendered" %
                                     (pod.name, v["configMap"]["name"]))
                for key, text in data.items():
                    with open(os.path.join(path, key), "w") as f:
                        f.write(text)
                configs.append(path)
            elif "secret" in v:
                secret = v["secret"]["secretName"]
                if secret in self.secrets:
                    for key in os.listdir(self.secrets[secret]):
                        shutil.copy(os.path.join(self.secrets[secret], key),
                                    path)
                elif not v["secret"].get("optional"):
                    raise SystemExit("%s: needs Secret %s (--secret)" %
                                     (pod.name, secret))
            dirs[v["name"]] = path
        # The pod's mount paths, as its processes see them, in the files it
        # reads (a pod has one set of mounts: its containers agree).
        mounts = {m["mountPath"]: dirs[m["name"]]
                  for c in pod.spec["containers"]
                  for m in c.get("volumeMounts", [])}
        for config_dir in configs:
            for key in os.listdir(config_dir):
                with open(os.path.join(config_dir, key)) as f:
                    text = f.read()
                for mount_path, path in sorted(mounts.items(),
                                               key=lambda m: -len(m[0])):
                    text = re.sub(r"(?<![\w/])" + re.escape(mount_path) +
                                  r"(?=/|$|\s|\"|')", path, text,
                                  flags=re.MULTILINE)
                with open(os.path.join(config_dir, key), "w") as f:
                    f.write(text)
        return dirs

    def command(self, pod, container, dirs):
        env = {}
        for e in container.get("env", []):
            if "value" in e:
                env[e["name"]] = kubelet_expand(e["value"], env)
            elif "fieldRef" in e.get("valueFrom", {}):
                env[e["name"]] = field_ref(pod, e["valueFrom"]["fieldRef"]["fieldPath"])
            else:
                raise SystemExit("%s: unsupported env source for %s" %
                                 (pod.name, e["name"]))
        mounts = sorted(((m["mountPath"], dirs[m["name"]])
                         for m in container.get("volumeMounts", [])),
                        key=lambda m: -len(m[0]))

        def local(text):
            text = kubelet_expand(text, env)
            # Longest first: a pod's name under its Service before the
            # Service's own.
            for service in sorted(self.services, key=len, reverse=True):
                text = text.replace(service, self.services[service])
            for mount_path, path in mounts:
                text = re.sub(r"(?<![\w/])" + re.escape(mount_path) + r"(?=/|$)",
                              path, text)
            return text

        argv = [local(a) for a in container.get("command", []) +
                container.get("args", [])]
        if argv[0] != "sampan":
            raise SystemExit("%s: command %s is not sampan" % (pod.name, argv[0]))
        argv[0] = self.sampan
        if self.network is not None:
            argv = self.network.prefix(pod) + argv
        cwd = local(container.get("workingDir", "/"))
        if not cwd.startswith(self.workdir):
            raise SystemExit("%s: workingDir %s is not on a volume" %
                             (pod.name, container.get("workingDir")))
        return argv, cwd, dict(os.environ, **env)

    def start(self, pod):
        dirs = self.volumes(pod)
        for i, init in enumerate(pod.spec.get("initContainers", [])):
            argv, cwd, env = self.command(pod, init, dirs)
            log = os.path.join(self.workdir, pod.name, "init-%d.log" % i)
            with open(log, "w") as out:
                rc = subprocess.call(argv, cwd=cwd, env=env, stdout=out,
                                     stderr=subprocess.STDOUT,
                                     timeout=DEADLINE_SECONDS)
            if rc != 0:
                raise SystemExit("%s: init container %s exited %d" %
                                 (pod.name, init["name"], rc))
        for container in pod.spec["containers"]:
            argv, cwd, env = self.command(pod, container, dirs)
            log = open(os.path.join(self.workdir, pod.name,
                                    container["name"] + ".log"), "w")
            pod.procs.append(subprocess.Popen(argv, cwd=cwd, env=env,
                                              stdout=log, stderr=subprocess.STDOUT,
                                              start_new_session=True))
            print("started %-24s %s" % (pod.name, " ".join(argv[1:])))
            for a in argv:
                if a.startswith("--advertise="):
                    pod.advertise = a.split("=", 1)[1]

    def wait_ready(self, pod, deadline):
        """The readiness probe's port accepts connections."""
        for container in pod.spec["containers"]:
            probe = container.get("readinessProbe")
            if not probe:
                continue
            port = (probe.get("grpc") or probe.get("tcpSocket"))["port"]
            while True:
                if pod.procs[0].poll() is not None:
                    self.fail("%s exited %d before it was ready" %
                              (pod.name, pod.procs[0].returncode))
                    return False
                try:
                    socket.create_connection((pod.ip, port), timeout=1).close()
                    break
                except OSError:
                    if time.time() > deadline:
                        self.fail("%s not ready in time" % pod.name)
                        return False
                    time.sleep(0.1)
        return True

    def secret_file(self, ref):
        """The file of a Secret key reference {name, key}."""
        if ref["name"] not in self.secrets:
            raise SystemExit("the ServiceMonitor needs Secret %s (--secret)" %
                             ref["name"])
        return os.path.join(self.secrets[ref["name"]], ref["key"])

    def scrape(self, address, path, token):
        """(HTTP status, body) of GET path, over TLS as the ServiceMonitor's
        endpoint says, with `token` as the bearer token when not None."""
        e = self.monitor
        ctx = ssl.create_default_context(
            cafile=self.secret_file(e["tlsConfig"]["ca"]["secret"]))
        with socket.create_connection(address, timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname=e["tlsConfig"]
                                 ["serverName"]) as tls:
                auth = ("Authorization: Bearer %s\r\n" % token
                        if token is not None else "")
                tls.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n%s"
                             "Connection: close\r\n\r\n" %
                             (path, e["tlsConfig"]["serverName"], auth)).encode())
                reply = b""
                while True:
                    chunk = tls.recv(65536)
                    if not chunk:
                        break
                    reply += chunk
        head, _, body = reply.decode(errors="replace").partition("\r\n\r\n")
        return int(head.split()[1]), body

    def check_metrics(self, pod):
        a = pod.annotations
        if a.get("prometheus.io/scrape") != "true":
            self.fail("%s has no prometheus.io/scrape annotation" % pod.name)
            return
        port = int(a["prometheus.io/port"])
        path = a.get("prometheus.io/path", "/metrics")
        url = "%s://%s:%d%s" % (a.get("prometheus.io/scheme", "http"), pod.ip,
                                port, path)
        try:
            if a.get("prometheus.io/scheme") == "https":
                if self.monitor.get("scheme") != "https":
                    self.fail("%s: https, but the ServiceMonitor scrapes %s" %
                              (pod.name, self.monitor.get("scheme", "http")))
                    return
                auth = self.monitor["authorization"]
                with open(self.secret_file(auth["credentials"])) as f:
                    token = f.read().strip()
                status, body = self.scrape((pod.ip, port), path, token)
                refused, rbody = self.scrape((pod.ip, port), path, None)
                if refused != 401 or "process_" in rbody:
                    self.fail("%s: a scrape without the token got %d" %
                              (pod.name, refused))
            else:
                body = urllib.request.urlopen(url, timeout=5).read().decode()
        except (OSError, ValueError) as e:
            self.fail("%s: scrape %s failed: %s" % (pod.name, url, e))
            return
        if "process_resident_memory_bytes" not in body:
            self.fail("%s: %s does not look like Sampan metrics" % (pod.name, url))

    def check_advertised(self, pod):
        """A server started with --advertise=NAME serves on its pod IP as
        NAME (what it registers); with --netns, NAME is one of the job's
        DNS names, not an address."""
        if pod.advertise is None:
            return
        with open(os.path.join(self.workdir, pod.name,
                               pod.spec["containers"][0]["name"] + ".log")) as f:
            log = f.read()
        if not re.search(r"serving on %s:\d+ as %s:\d+" %
                         (re.escape(pod.ip), re.escape(pod.advertise)), log):
            self.fail("%s did not serve on %s as %s" % (pod.name, pod.ip,
                                                        pod.advertise))
        elif self.network is not None and (
                pod.advertise not in self.network.hosts or
                re.fullmatch(r"[\d.]+", pod.advertise)):
            self.fail("%s advertises %s, not a DNS name of the job" %
                      (pod.name, pod.advertise))

    def fail(self, message):
        print("FAIL: " + message)
        self.failures.append(message)

    def stop_all(self):
        for pod in self.pods:
            for p in pod.procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
        for pod in self.pods:
            for p in pod.procs:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def replace_trainer(self, jobs, rank, deadline):
        """SIGKILLs trainer `rank` once a complete checkpoint exists and starts
        a new pod from its template, as the Job controller would."""
        old = next(p for p in jobs if p.annotations.get(INDEX) == str(rank))
        pattern = os.path.join(self.workdir, "claims", "**", "ckpt-*",
                               "MANIFEST")
        while not glob.glob(pattern, recursive=True):
            if old.procs[0].poll() is not None or time.time() > deadline:
                self.fail("no complete checkpoint (%s) while %s ran" %
                          (pattern, old.name))
                return None
            time.sleep(0.05)
        old.procs[0].kill()
        old.procs[0].wait()
        print("killed  %-24s after %s" % (old.name, sorted(glob.glob(pattern, recursive=True))[-1]))
        template = old.owner["spec"]["template"]
        new = Pod(old.name + "-replacement", old.kind, old.owner, template,
                  old.labels, old.annotations,
                  old.ip.rsplit(".", 1)[0] + ".250")
        self.pods[self.pods.index(old)] = new
        jobs[jobs.index(old)] = new
        self.start(new)
        return new

    def run(self, replace_rank=None):
        deadline = time.time() + DEADLINE_SECONDS
        servers = [p for p in self.pods if p.kind != "Job"]
        jobs = [p for p in self.pods if p.kind == "Job"]
        if not servers or not jobs:
            raise SystemExit("expected server pods and Job pods")
        try:
            for pod in servers:
                self.start(pod)
            if not all(self.wait_ready(p, deadline) for p in servers):
                return
            for pod in servers:
                self.check_metrics(pod)
            for pod in jobs:
                self.start(pod)
            replacement = None
            if replace_rank is not None:
                replacement = self.replace_trainer(jobs, replace_rank, deadline)
            for pod in jobs:
                p = pod.procs[0]
                try:
                    rc = p.wait(timeout=max(1, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    self.fail("%s did not finish in %d s" % (pod.name,
                                                             DEADLINE_SECONDS))
                    continue
                if rc != 0:
                    self.fail("%s exited %d" % (pod.name, rc))
            if replacement is not None:
                with open(os.path.join(self.workdir, replacement.name,
                                       "trainer.log")) as f:
                    log = f.read()
                m = re.search(r"resumes from checkpoint \d+ \([^)]*\)", log)
                if m and "/claims/" in m.group(0):
                    print("%s %s" % (replacement.name, m.group(0)))
                else:
                    self.fail("%s did not resume from a checkpoint on a "
                              "shared claim" % replacement.name)
            for pod in servers:
                if pod.procs[0].poll() is not None:
                    self.fail("%s exited while serving" % pod.name)
                self.check_advertised(pod)
        finally:
            self.stop_all()


def main():
    args, replace, netns, secrets = [], [], False, {}
    for a in sys.argv[1:]:
        if a.startswith("--replace-trainer="):
            replace.append(int(a.split("=", 1)[1]))
        elif a == "--netns":
            netns = True
        elif a.startswith("--secret="):
            name, _, path = a.split("=", 1)[1].partition("=")
            secrets[name] = os.path.abspath(path)
        else:
            args.append(a)
    if len(args) != 3:
        raise SystemExit(__doc__)
    objects_path, sampan, workdir = args
    with open(objects_path) as f:
        objects = [o for o in yaml.safe_load_all(f) if o]
    network = k8s_netns.Network() if netns else None
    try:
        runner = Runner(objects, os.path.abspath(sampan),
                        os.path.abspath(workdir), network, secrets)
        runner.run(replace[0] if replace else None)
    finally:
        if network is not None:
            network.close()
    for pod in runner.pods:
        for name in sorted(os.listdir(os.path.join(runner.workdir, pod.name))):
            if name.endswith(".log") and runner.failures:
                path = os.path.join(runner.workdir, pod.name, name)
                print("--- %s/%s" % (pod.name, name))
                print("".join(open(path).readlines()[-8:]), end="")
    rank0 = next(p for p in runner.pods if p.annotations.get(INDEX) == "0")
    work = [m for m in rank0.spec["containers"][0]["volumeMounts"]
            if m["mountPath"] == rank0.spec["containers"][0]["workingDir"]][0]
    result = os.path.join(runner.workdir, rank0.name, "volumes", work["name"],
                          "result.txt")
    metrics = {}
    if os.path.exists(result):
        metrics = dict(line.strip().split("=", 1) for line in open(result)
                       if "=" in line)
    auc = float(metrics.get("test_auc", 0))
    if auc <= 0.6:
        runner.fail("rank 0 result.txt test_auc %s <= 0.6 (%s)" % (auc, result))
    if runner.failures:
        raise SystemExit("%d check(s) failed" % len(runner.failures))
    print("ok: %d pods ran as processes; the Job completed; test AUC %.4f" %
          (len(runner.pods), auc))


if __name__ == "__main__":
    main()

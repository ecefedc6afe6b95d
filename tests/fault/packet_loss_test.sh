#!/usr/bin/env bash
# Fault (d): packet loss on a pserver's port. The whole job runs in a new
# network namespace (unshare -n: its own loopback), where nftables drops
# FAULT_LOSS_PERCENT (10) % of the TCP segments to and from pserver-0's port
# for FAULT_LOSS_SECONDS (20; the Bazel target uses 6). TCP retransmits,
# RPCs that miss their deadline are retried; the job must finish exactly.
set -uo pipefail
CASE=packet_loss
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" 2>/dev/null ||
  source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/fault/lib.sh"

if [ -z "${FAULT_IN_NETNS:-}" ]; then
  require_root "a network namespace and nftables"
  command -v nft > /dev/null ||
    skip "nft not installed (Debian nftables; scripts/install-deps.sh installs it)"
  unshare -n true 2> /dev/null || skip "cannot create a network namespace (unshare -n)"
  FAULT_IN_NETNS=1 exec unshare -n -- bash "${BASH_SOURCE[0]}" "$@"
fi
ip link set lo up || skip "cannot bring up loopback in the namespace"
nft add table inet sampan_fault 2> /dev/null ||
  skip "nftables does not work in this network namespace"
trap 'nft delete table inet sampan_fault 2>/dev/null; cleanup_job' EXIT

loss="${FAULT_LOSS_PERCENT:-10}"
seconds="${FAULT_LOSS_SECONDS:-20}"
job="$TMP/packet-loss"
write_job "$job"
start_time=$(date +%s)
start_job "$job" || finish
start_counter "$job"
port=$(cat "$job/pserver-0.port")
nft add chain inet sampan_fault input '{ type filter hook input priority 0; }'
nft add rule inet sampan_fault input tcp dport "$port" numgen random mod 100 '<' "$loss" counter drop
nft add rule inet sampan_fault input tcp sport "$port" numgen random mod 100 '<' "$loss" counter drop
log "dropping $loss% of TCP segments to and from pserver-0 (port $port) for ${seconds}s"
sleep "$seconds"
dropped=$(nft list table inet sampan_fault | awk '/counter packets/ { for (i = 1; i <= NF; i++) if ($i == "packets") n += $(i + 1) } END { print n + 0 }')
nft delete table inet sampan_fault
log "loss off: $dropped segments dropped"
wait $launcher; rc=$?
elapsed=$(( $(date +%s) - start_time ))
tail -4 "$job.out"
EXTRA_LINE="$loss% loss for ${seconds}s, $dropped segments dropped, ${elapsed}s"
[ $rc -eq 0 ] && pass "job finished through ${loss}% packet loss" \
  || fail "job exited $rc: $(grep error "$job.out" | head -3)"
[ "$dropped" -gt 0 ] || fail "no packet was dropped: the rules never matched"
check_auc "$job"
check_counter "$job"
check_leftover "$job"
finish

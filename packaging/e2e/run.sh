#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# vipd end to end, under real systemd (make e2e).
#
# Boots three Debian 12 containers with systemd as PID 1 (systemd-nspawn
# --boot, no machined needed) on a private bridge, installs the freshly built
# .deb on them with the Ansible role in packaging/ansible, and checks what an
# operator relies on: the service is active and READY everywhere, exactly
# one node holds the VIP and `vipd status` and systemd's status line agree,
# an exec tracker, a notify hook, metrics and a socket group work under the
# hardened unit, a drain survives a restart, a powered-off Master is
# replaced and the VIP answers a client, a package upgrade re-executes the
# new binary in place (same PID, the VIP stays), `systemctl reload` keeps
# the VIP and refuses a bad file, `systemctl restart` hands the VIP over, a
# bad configuration is refused without a restart loop, the watchdog
# restarts a daemon that stops answering, ExecStopPost removes the VIP
# of a killed daemon, and a purge removes the state directory. The role
# runs in check mode on the fresh containers first, and the journal is
# read back by priority and by the daemon's structured fields (VIPD_*). Everything it creates has a unique name and is removed
# on exit, also after a failure.
#
# Needs root, systemd-nspawn, debootstrap and ansible-playbook
# (packaging/e2e/install-deps); without them it says why and skips.
#
# Environment:
#   VIPD_E2E_CACHE  where the debootstrapped root is kept between runs
#                   (default /var/cache/vipd-e2e)
#   VIPD_E2E_KEEP   set to 1 to leave the containers running on failure, for
#                   a look inside (the script prints how to clean up)
#   VIPD_COMPLETION_FROM
#                   passed to packaging/build.sh: the vipd that writes the
#                   packages' shell completions, when the one built cannot
set -uo pipefail

# The whole script is one compound command, read before it runs: editing
# this file during a run cannot change what the run does.
{

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

# Only addresses of this network (TEST-NET-2) are used.
NET=198.51.100
VIP=$NET.10
CLIENT=$NET.200
PRIORITY=(0 150 100 50) # node 1 is the preferred Master
ADVERT=300ms
PREEMPT_DELAY=5s        # the role's default
# The unit's WatchdogSec + TimeoutAbortSec: how long a SIGSTOPped Master's
# kernel may keep the VIP beside the new Master's.
STOPPED_HOLD_MAX=15

start_time=$(date +%s)
passed=0 failed=0 skipped=0
failures=()

log() { printf 'e2e: %s\n' "$*" >&2; }
pass() { passed=$((passed + 1)); log "PASS $*"; }
fail() { failed=$((failed + 1)); failures+=("$*"); log "FAIL $*"; }

summary() {
	log "took $(($(date +%s) - start_time))s"
	for f in "${failures[@]}"; do log "failed: $f"; done
	echo "e2e: $passed passed, $failed failed, $skipped skipped"
}

skip_all() {
	log "SKIP the end-to-end test: $*"
	skipped=1
	summary
	exit 0
}

# ---------------------------------------------------------------- prerequisites

[ "$(id -u)" = 0 ] || skip_all "needs root (it boots containers and creates a bridge)"
for tool in systemd-nspawn debootstrap ansible-playbook nsenter ip; do
	command -v "$tool" >/dev/null || skip_all "$tool is missing (run packaging/e2e/install-deps)"
done
[ -d /sys/fs/cgroup ] || skip_all "no cgroup file system"

id=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
work=$(mktemp -d "/tmp/vipd-e2e-$id.XXXXXX")
bridge=vpe$id
client_ns=vipd-e2e-$id-client
client_veth=vpe${id}c
declare -a NSPAWN PID MACHINE
for n in 1 2 3; do MACHINE[n]=vp${id}n$n; done

# ---------------------------------------------------------------- teardown

teardown() {
	local n
	if [ "${VIPD_E2E_KEEP:-}" = 1 ] && [ "$failed" -gt 0 ]; then
		log "VIPD_E2E_KEEP=1: left running; nspawn pids ${NSPAWN[*]:-}, bridge $bridge, netns $client_ns, $work"
		return
	fi
	for n in 1 2 3; do
		[ -n "${NSPAWN[n]:-}" ] || continue
		kill -0 "${NSPAWN[n]}" 2>/dev/null || continue
		# nspawn turns SIGTERM into an orderly shutdown of the container.
		kill -TERM "${NSPAWN[n]}" 2>/dev/null
	done
	for n in 1 2 3; do
		[ -n "${NSPAWN[n]:-}" ] || continue
		for _ in $(seq 100); do kill -0 "${NSPAWN[n]}" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "${NSPAWN[n]}" 2>/dev/null
	done
	wait 2>/dev/null
	ip netns del "$client_ns" 2>/dev/null
	ip link del "$client_veth" 2>/dev/null
	ip link del "$bridge" 2>/dev/null
	rm -rf "$work"
}
trap 'teardown; summary' EXIT
trap 'fail "interrupted"; exit 130' INT TERM

die() {
	fail "$*"
	dump_logs
	exit 1
}

# ---------------------------------------------------------------- helpers

# ct N CMD...: run CMD in container N.
ct() {
	local n=$1
	shift
	nsenter --target "${PID[n]}" --mount --uts --ipc --net --pid --root --wd -- "$@"
}

alive() { [ -n "${NSPAWN[$1]:-}" ] && kill -0 "${NSPAWN[$1]}" 2>/dev/null; }

dump_logs() {
	local n
	for n in 1 2 3; do
		alive "$n" || continue
		log "---- node $n: systemctl status vipd; journalctl -u vipd"
		ct "$n" systemctl --no-pager status vipd >&2 2>&1
		ct "$n" journalctl --no-pager -n 60 -u vipd >&2 2>&1
	done
}

# init_pid NSPAWN_PID: the container's PID 1 as the host sees it.
init_pid() {
	local p c
	for p in $(pgrep -P "$1"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = systemd ] && { echo "$p"; return 0; }
		for c in $(pgrep -P "$p"); do
			[ "$(cat "/proc/$c/comm" 2>/dev/null)" = systemd ] && { echo "$c"; return 0; }
		done
	done
	return 1
}

# holders: the live nodes that have the VIP on host0, space separated.
holders() {
	local n out=""
	for n in 1 2 3; do
		alive "$n" || continue
		if ct "$n" ip -4 -o addr show dev host0 2>/dev/null | grep -q " $VIP/"; then
			out="$out $n"
		fi
	done
	echo "${out# }"
}

# wait_holder EXPECTED SECONDS: until exactly that node holds the VIP.
wait_holder() {
	local want=$1 deadline=$(($(date +%s) + $2)) got
	while :; do
		got=$(holders)
		[ "$got" = "$want" ] && return 0
		[ "$(date +%s)" -ge "$deadline" ] && { log "VIP holders: '${got}', want '$want'"; return 1; }
		sleep 0.2
	done
}

# client_reaches: the client gets an answer from the VIP.
client_reaches() {
	local i
	for i in $(seq 10); do
		ip netns exec "$client_ns" ping -n -c1 -W1 "$VIP" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	return 1
}

show() { ct "$1" systemctl show vipd.service -p "$2" --value; }

# journal N: vipd.service's journal on node N (into a variable first: a
# `grep -q` reading straight from journalctl ends the pipe early, and
# pipefail then calls the search a failure).
journal() { ct "$1" journalctl --no-pager -o cat -u vipd.service 2>/dev/null; }

# status_json N PYTHON: evaluates PYTHON with s, the first instance of
# `vipd status --json` on node N, and prints the result.
status_json() {
	ct "$1" vipd status --json 2>/dev/null | python3 -c '
import json, sys
v = json.load(sys.stdin)
s = v[0] if v else {}
print(eval(sys.argv[1]))' "$2" 2>/dev/null
}

# ---------------------------------------------------------------- build

log "building the packages (current and upgrade)"
arch=$(dpkg --print-architecture)
ARCHS=$arch DIST=$work/dist1 packaging/build.sh deb >"$work/build1.log" 2>&1 || {
	cat "$work/build1.log" >&2
	die "packaging/build.sh deb"
}
v1=$(packaging/build.sh version)
deb1=$(ls "$work"/dist1/vipd_*_"$arch".deb)
v2=$v1.1
# The upgrade's binary says its own version, so that the re-exec shows.
ARCHS=$arch DIST=$work/dist2 PKG_VERSION=$v2 VERSION=$v2 packaging/build.sh deb >"$work/build2.log" 2>&1 || {
	cat "$work/build2.log" >&2
	die "packaging/build.sh deb (upgrade)"
}
deb2=$(ls "$work"/dist2/vipd_*_"$arch".deb)

# ---------------------------------------------------------------- boot

root=$("$here/rootfs.sh") || die "building the container root (packaging/e2e/rootfs.sh)"
log "root file system: $root"

ip link add "$bridge" type bridge || die "creating bridge $bridge"
ip link set "$bridge" up
ip netns add "$client_ns"
ip link add "$client_veth" type veth peer name eth0 netns "$client_ns"
ip link set "$client_veth" master "$bridge" up
ip -n "$client_ns" addr add "$CLIENT/24" dev eth0
ip -n "$client_ns" link set eth0 up
ip -n "$client_ns" link set lo up

boot() {
	local n=$1
	cat >"$work/n$n.network" <<-EOF
		[Match]
		Name=host0
		[Network]
		Address=$NET.1$n/24
		LinkLocalAddressing=no
		IPv6AcceptRA=no
	EOF
	systemd-nspawn --quiet --directory="$root" --volatile=overlay --boot \
		--register=no --keep-unit --machine="${MACHINE[n]}" \
		--network-bridge="$bridge" --capability=CAP_NET_ADMIN \
		--bind-ro="$work/n$n.network:/etc/systemd/network/10-host0.network" \
		--console=passive </dev/null >"$work/n$n.console" 2>&1 &
	NSPAWN[n]=$!
}

log "booting three containers on $bridge"
for n in 1 2 3; do boot "$n"; done
for n in 1 2 3; do
	for _ in $(seq 100); do
		PID[n]=$(init_pid "${NSPAWN[n]}") && break
		alive "$n" || break
		sleep 0.2
	done
	[ -n "${PID[n]:-}" ] || { cat "$work/n$n.console" >&2; die "container $n did not start"; }
done
for n in 1 2 3; do
	# Until its bus is up, systemctl inside cannot even ask, and says
	# nothing; then --wait waits for the end of the boot.
	state=""
	deadline=$(($(date +%s) + 120))
	while [ -z "$state" ] && [ "$(date +%s)" -lt "$deadline" ] && alive "$n"; do
		state=$(timeout 120 nsenter --target "${PID[n]}" --mount --pid --root -- systemctl is-system-running --wait 2>/dev/null)
		[ -n "$state" ] || sleep 0.5
	done
	case $state in
	running | degraded) ;;
	*) cat "$work/n$n.console" >&2; die "container $n did not boot (state '$state')" ;;
	esac
done
pass "three containers booted with systemd as PID 1"

# ---------------------------------------------------------------- ansible

# Beyond the VIP: a socket group, metrics, an exec tracker and a notify hook,
# to show that the hardened unit lets them work. The tracker's program and
# the hook's shell are absolute paths, as vipd requires.
cat >"$work/inventory.yml" <<EOF
all:
  children:
    control_plane:
      hosts:
        node1: {ansible_host: "${PID[1]}", vipd_priority: ${PRIORITY[1]}}
        node2: {ansible_host: "${PID[2]}", vipd_priority: ${PRIORITY[2]}}
        node3: {ansible_host: "${PID[3]}", vipd_priority: ${PRIORITY[3]}}
      vars:
        ansible_connection: nsenter
        ansible_python_interpreter: /usr/bin/python3
        # Already root inside; the containers have no sudo.
        ansible_become: false
        vipd_package_file: "$deb1"
        vipd_interface: host0
        vipd_vrid: 51
        vipd_vips: ["$VIP"]
        vipd_advert_interval: $ADVERT
        vipd_node_name: "{{ inventory_hostname }}"
        vipd_socket_group: vipd-ops
        vipd_metrics_listen: "127.0.0.1:9650"
        vipd_trackers:
          - name: networkd
            type: exec
            command: ["/usr/bin/systemctl", "is-active", "--quiet", "systemd-networkd.service"]
            interval: 2s
            timeout: 1s
        vipd_notify:
          master: ["/bin/sh", "-c", "echo e2e-hook \$VIPD_STATE \$VIPD_VIPS"]
EOF
export ANSIBLE_CONNECTION_PLUGINS=$here/connection_plugins
export ANSIBLE_LOCAL_TEMP=$work/ansible-tmp
export ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_FORCE_COLOR=0

playbook() { # LOG ARGS...
	local logf=$1
	shift
	# The playbook users start from (packaging/ansible/site.yml).
	ansible-playbook -i "$work/inventory.yml" "$repo/packaging/ansible/site.yml" "$@" >"$logf" 2>&1
}

# Check mode on hosts without vipd: it must get through (no package to
# inspect, no unit yet) and change nothing.
log "the Ansible role in check mode on the fresh containers"
if playbook "$work/ansible0.log" --check --diff &&
	[ "$(grep -Ec 'unreachable=0 +failed=0' "$work/ansible0.log")" = 3 ]; then
	untouched=1
	for n in 1 2 3; do
		if ct "$n" dpkg-query -W vipd >/dev/null 2>&1 || ct "$n" test -e /etc/vipd/vipd.toml ||
			ct "$n" getent group vipd-ops >/dev/null; then
			untouched=0
			log "node $n: check mode changed something"
		fi
	done
	if [ $untouched = 1 ] && grep -q '^+vrid = 51$' "$work/ansible0.log"; then
		pass "the role in --check --diff on fresh containers succeeds, shows the configuration and changes nothing"
	else
		fail "the role in check mode changes nothing and shows the configuration"
	fi
else
	tail -n 40 "$work/ansible0.log" >&2
	fail "the role in --check mode on fresh containers"
fi

log "applying the Ansible role"
if playbook "$work/ansible1.log"; then
	pass "the Ansible role installs, configures and starts vipd on three nodes"
else
	tail -n 40 "$work/ansible1.log" >&2
	die "ansible-playbook"
fi
if playbook "$work/ansible2.log" && grep -Eq 'changed=0 +unreachable=0 +failed=0' "$work/ansible2.log" &&
	[ "$(grep -Ec 'changed=0 +unreachable=0 +failed=0' "$work/ansible2.log")" = 3 ]; then
	pass "a second run of the role changes nothing"
else
	tail -n 30 "$work/ansible2.log" >&2
	fail "a second run of the role changes nothing"
fi
if playbook "$work/ansible2c.log" --check &&
	[ "$(grep -Ec 'changed=0 +unreachable=0 +failed=0' "$work/ansible2c.log")" = 3 ]; then
	pass "the role in check mode on configured nodes predicts no change"
else
	tail -n 30 "$work/ansible2c.log" >&2
	fail "the role in check mode on configured nodes predicts no change"
fi

ok=1
for f in /usr/share/bash-completion/completions/vipd /usr/share/zsh/vendor-completions/_vipd \
	/usr/share/fish/vendor_completions.d/vipd.fish /usr/share/vipd/alerts.yml /usr/share/vipd/grafana-dashboard.json; do
	ct 1 test -s "$f" || { ok=0; log "node 1: no $f"; }
done
[ $ok = 1 ] && pass "the package installs the shell completions, alerts.yml and the dashboard" ||
	fail "shell completions, alerts.yml and the dashboard installed"

# ---------------------------------------------------------------- steady state

ok=1
for n in 1 2 3; do
	[ "$(ct "$n" systemctl is-active vipd.service)" = active ] || { ok=0; log "node $n: vipd not active"; }
	[ "$(ct "$n" systemctl is-enabled vipd.service)" = enabled ] || { ok=0; log "node $n: vipd not enabled"; }
	[ "$(ct "$n" stat -c %U "/proc/$(show "$n" MainPID)" 2>/dev/null)" = vipd ] ||
		{ ok=0; log "node $n: vipd does not run as user vipd"; }
done
[ $ok = 1 ] && pass "vipd.service is enabled and active on all three, as user vipd" || fail "vipd.service active everywhere"

if ct 1 systemd-analyze verify --man=no vipd.service >"$work/verify.log" 2>&1; then
	pass "systemd-analyze verify vipd.service on an installed node"
else
	cat "$work/verify.log" >&2
	fail "systemd-analyze verify vipd.service"
fi

# Type=notify: the unit is active only after READY=1; activating otherwise.
ok=1
for n in 1 2 3; do
	[ "$(show "$n" Type)" = notify ] && [ "$(show "$n" ActiveState)" = active ] &&
		[ "$(show "$n" SubState)" = running ] && [ "$(show "$n" NRestarts)" = 0 ] &&
		[ "$(show "$n" WatchdogUSec)" = 10s ] || { ok=0; log "node $n: $(show "$n" Type) $(show "$n" ActiveState)/$(show "$n" SubState), restarts $(show "$n" NRestarts)"; }
	j=$(journal "$n")
	grep -q "ready: every instance has joined its group" <<<"$j" || { ok=0; log "node $n: no ready line"; }
done
[ $ok = 1 ] && pass "READY=1 reached systemd on all three (Type=notify, active, watchdog 10s)" || fail "READY under Type=notify"

if wait_holder 1 20; then
	pass "exactly one node holds $VIP: node 1, the highest priority"
else
	die "exactly one node holds $VIP"
fi

# status_state N: the first instance's state in `vipd status --json` on
# node N, in lower case.
status_state() { status_json "$1" "s.get('state', 'unknown').lower()"; }
got="$(status_state 1) $(status_state 2) $(status_state 3)"
if [ "$got" = "master backup backup" ]; then
	pass "vipd status: node 1 master, nodes 2 and 3 backup"
else
	fail "vipd status says '$got', want 'master backup backup'"
fi

# STATUS=: what `systemctl status vipd` shows, e.g. "k8s-api MASTER
# 198.51.100.10 since 12:00:01". It changes with each transition.
ok=0
for _ in $(seq 10); do
	s1=$(show 1 StatusText) s2=$(show 2 StatusText)
	case "$s1|$s2" in "k8s-api MASTER $VIP since "*"|k8s-api BACKUP since "*) ok=1; break ;; esac
	sleep 0.5
done
if [ $ok = 1 ]; then
	pass "systemd's status line agrees: node 1 '$s1', node 2 '$s2'"
else
	fail "systemd's status line: node 1 '$s1', node 2 '$s2' (want 'k8s-api MASTER $VIP since …' and 'k8s-api BACKUP since …')"
fi

ok=1
for n in 1 2 3; do
	got=$(status_json "$n" "[(t['name'], t['healthy']) for t in s.get('trackers', [])]")
	[ "$got" = "[('networkd', True)]" ] || { ok=0; log "node $n: trackers $got"; }
done
[ $ok = 1 ] && pass "the exec tracker (systemctl is-active, run as user vipd in the sandbox) is healthy on all three" ||
	fail "exec tracker healthy under the hardened unit"

j=$(journal 1)
if grep -qF "e2e-hook MASTER $VIP/32" <<<"$j"; then
	pass "the notify hook ran on the Master, with VIPD_STATE and VIPD_VIPS"
else
	fail "the notify hook ran on the Master (no 'e2e-hook MASTER $VIP/32' in its journal)"
fi

metrics=$(ct 1 python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:9650/metrics", timeout=3).read().decode())' 2>&1)
if grep -qx "vipd_vip_held{vip=\"$VIP\",vrrp_instance=\"k8s-api\"} 1" <<<"$metrics" &&
	grep -qx 'vipd_tracker_healthy{tracker="networkd",vrrp_instance="k8s-api"} 1' <<<"$metrics" &&
	grep -Eqx 'vipd_build_info\{commit="[^"]+",goversion="go[^"]+",version="[^"]+"\} 1' <<<"$metrics"; then
	pass "metrics_listen: /metrics on 127.0.0.1:9650 says the Master holds the VIP, and which vipd it is"
else
	grep '^vipd_vip_held\|^vipd_tracker_healthy\|^vipd_build_info' <<<"$metrics" >&2
	fail "metrics on 127.0.0.1:9650"
fi

# socket_group: the role made vipd-ops and let the daemon's user join it
# (SupplementaryGroups), so that the socket belongs to the group.
gid=$(ct 1 getent group vipd-ops | cut -d: -f3)
sock_group=$(ct 1 stat -c '%G %a' /run/vipd/vipd.sock 2>&1)
if [ -n "$gid" ] && [ "$sock_group" = "vipd-ops 660" ] &&
	ct 1 setpriv --reuid=65534 --regid=65534 --groups="$gid" vipd status 2>&1 | grep -q MASTER &&
	! ct 1 setpriv --reuid=65534 --regid=65534 --clear-groups vipd status >/dev/null 2>&1; then
	pass "socket_group: a member of vipd-ops runs vipd status without root, others may not"
else
	fail "socket_group (socket: '$sock_group', gid '$gid')"
fi

if client_reaches; then
	pass "the client reaches $VIP"
else
	fail "the client reaches $VIP"
fi

# ---------------------------------------------------------------- drain

log "vipd drain --wait on node 1 (the Master)"
out=$(ct 1 vipd drain --wait --timeout 20s --note e2e 2>&1)
if wait_holder 2 5 && grep -q "$NET.12 took over" <<<"$out"; then
	pass "vipd drain --wait on the Master: node 2 took over"
else
	printf '%s\n' "$out" >&2
	fail "vipd drain --wait (holders '$(holders)')"
fi
ct 1 systemctl restart vipd.service
if ct 1 test -f /var/lib/vipd/drained/k8s-api.json && [ "$(status_json 1 "s.get('drained')")" = True ] &&
	wait_holder 2 3; then
	pass "the drain is kept in /var/lib/vipd (StateDirectory) and survives systemctl restart"
else
	fail "the drain survives a restart (drained: $(status_json 1 "s.get('drained')"), holders '$(holders)')"
fi

# The journal by priority: the restarted daemon warns that the instance is
# still drained; informational lines stay out of -p warning. (Needs the
# daemon's native journal output; with plain stderr everything is
# priority 6.)
jw=$(ct 1 journalctl --no-pager -o cat -u vipd.service -p warning 2>/dev/null)
if grep -q "instance is drained" <<<"$jw" && ! grep -q "ready: every instance has joined its group" <<<"$jw"; then
	pass "journalctl -u vipd -p warning shows the daemon's warning (still drained), without its info lines"
else
	printf '%s\n' "$jw" | tail -n 5 >&2
	fail "journalctl -u vipd -p warning: no 'instance is drained' warning, or info lines in it ($(journal 1 | grep -c 'instance is drained') such warnings in the whole journal)"
fi
# The journal by structured field: every line about the instance carries
# VIPD_INSTANCE.
ji=$(ct 1 journalctl --no-pager -o cat -u vipd.service VIPD_INSTANCE=k8s-api 2>/dev/null)
jo=$(ct 1 journalctl --no-pager -o cat -u vipd.service VIPD_INSTANCE=no-such-instance 2>/dev/null)
if grep -q "state changed" <<<"$ji" && [ -z "$jo" ]; then
	pass "journalctl -u vipd VIPD_INSTANCE=k8s-api returns the instance's lines ($(grep -c . <<<"$ji"))"
else
	fail "journalctl -u vipd VIPD_INSTANCE=k8s-api: $(grep -c . <<<"$ji") lines, none saying 'state changed' (the whole journal has $(journal 1 | grep -c 'state changed')), or VIPD_INSTANCE=no-such-instance matched $(grep -c . <<<"$jo")"
fi
ct 1 vipd undrain >/dev/null 2>&1
if wait_holder 1 $((${PREEMPT_DELAY%s} + 10)); then
	pass "vipd undrain: node 1 (priority 150) takes the VIP back after preempt_delay"
else
	fail "node 1 takes the VIP back after vipd undrain"
fi

# ---------------------------------------------------------------- failover

log "powering off node 1 (the Master)"
ct 1 systemctl poweroff >/dev/null 2>&1
for _ in $(seq 150); do alive 1 || break; sleep 0.2; done
if alive 1; then
	fail "node 1 powered off"
else
	if wait_holder 2 10; then
		pass "after node 1 powered off, node 2 holds $VIP and nobody else"
	else
		fail "node 2 takes over $VIP"
	fi
	if client_reaches; then
		pass "the client reaches $VIP on the new Master"
	else
		fail "the client reaches $VIP after the failover"
	fi
	[ "$(status_state 2)" = master ] && pass "vipd status on node 2: master" || fail "vipd status on node 2: $(status_state 2)"
fi

# ---------------------------------------------------------------- upgrade, reload

pid_before=$(show 2 MainPID)
sed -i "s|^        vipd_package_file: .*|        vipd_package_file: \"$deb2\"|" "$work/inventory.yml"
log "upgrading nodes 2 and 3 to $v2 with the role"
if playbook "$work/ansible3.log" --limit node2,node3; then
	got=$(ct 2 dpkg-query -W -f='${Version}' vipd)
	if [ "$got" = "$v2-1" ]; then
		pass "the role upgrades the package ($got)"
	else
		fail "the role upgrades the package (dpkg says $got)"
	fi
else
	tail -n 30 "$work/ansible3.log" >&2
	fail "ansible-playbook (upgrade)"
fi
if [ "$(show 2 MainPID)" = "$pid_before" ] && [ "$(show 2 ActiveState)" = active ] && wait_holder 2 3; then
	pass "the upgrade did not restart the daemon on the Master, and the VIP stayed"
else
	fail "the upgrade kept the daemon and the VIP (MainPID $pid_before -> $(show 2 MainPID), holders '$(holders)')"
fi
# The package's postinst ran `systemctl reload`: the daemon found the new
# /usr/sbin/vipd and re-executed it under the same PID.
j=$(journal 2)
exe=$(ct 2 readlink "/proc/$pid_before/exe")
ver=$(ct 2 vipd version)
if grep -qF "msg=\"resuming after a binary upgrade\" version=$v2 " <<<"$j" && [ "$exe" = /usr/sbin/vipd ] &&
	[ "${ver#vipd $v2 }" != "$ver" ] && [ "$(status_state 2)" = master ]; then
	pass "the upgrade re-executed the new binary in place: MainPID $pid_before runs vipd $v2, still Master"
else
	grep -E 'binary|resuming|re-exec' <<<"$j" >&2
	fail "re-exec after the upgrade (exe '$exe', version '$ver', state $(status_state 2))"
fi

if ct 2 systemctl reload vipd.service && [ "$(show 2 MainPID)" = "$pid_before" ] && wait_holder 2 3; then
	pass "systemctl reload on the Master after the upgrade keeps the daemon and the VIP"
else
	fail "systemctl reload keeps the VIP (holders '$(holders)')"
fi
ct 2 cp /etc/vipd/vipd.toml /run/vipd.toml.good
ct 2 sh -c 'printf "\n[global]\nbogus = 1\n" >>/etc/vipd/vipd.toml'
if ct 2 systemctl reload vipd.service >"$work/badreload.log" 2>&1; then
	fail "systemctl reload refuses a bad configuration"
elif [ "$(show 2 MainPID)" = "$pid_before" ] && [ "$(show 2 ActiveState)" = active ] && wait_holder 2 3 &&
	grep -q "reload refused" <<<"$(journal 2)"; then
	pass "systemctl reload refuses a bad configuration; the daemon and the VIP stay, the journal says why"
else
	fail "a refused reload kept the daemon and the VIP"
fi
ct 2 cp /run/vipd.toml.good /etc/vipd/vipd.toml

# ---------------------------------------------------------------- refused config

log "starting node 3 with a broken configuration"
ct 3 cp /etc/vipd/vipd.toml /run/vipd.toml.good
ct 3 sh -c 'sed -i "s/^vrid = .*/vrid = 300/" /etc/vipd/vipd.toml'
restarts_before=$(show 3 NRestarts)
ct 3 systemctl restart vipd.service >/dev/null 2>&1
sleep 5
status=$(show 3 ExecMainStatus)
if [ "$status" = 78 ] && [ "$(show 3 ActiveState)" = failed ] && [ "$(show 3 NRestarts)" = "$restarts_before" ] &&
	grep -q 'vipd.toml:[0-9]*: .*vrid' <<<"$(journal 3)"; then
	pass "a refused configuration exits 78, is not restarted, and the journal names the line"
else
	fail "refused configuration: status $status, state $(show 3 ActiveState), restarts $(show 3 NRestarts)"
fi
ct 3 cp /run/vipd.toml.good /etc/vipd/vipd.toml
ct 3 systemctl reset-failed vipd.service
ct 3 systemctl start vipd.service
wait_holder 2 5 || fail "node 2 kept the VIP while node 3 restarted"

# ---------------------------------------------------------------- restart

log "systemctl restart on the Master (node 2)"
ct 2 systemctl restart vipd.service
if wait_holder 3 3; then
	pass "systemctl restart on the Master releases the VIP: node 3 takes it over at once"
else
	fail "systemctl restart releases the VIP (holders '$(holders)')"
fi
if wait_holder 2 $((${PREEMPT_DELAY%s} + 10)); then
	pass "and node 2, re-elected with the higher priority, takes it back after preempt_delay"
else
	fail "node 2 takes the VIP back after its restart"
fi

# ---------------------------------------------------------------- watchdog

pid=$(show 2 MainPID)
restarts=$(show 2 NRestarts)
log "SIGSTOP to vipd on node 2 (pid $pid in the container)"
ct 2 kill -STOP "$pid"
start=$(date +%s.%N)
ok=0 first="" last=""
for _ in $(seq 120); do
	if [ "$(holders)" = "2 3" ]; then
		now=$(date +%s.%N)
		first=${first:-$now}
		last=$now
	fi
	cur=$(show 2 MainPID)
	if [ "$(show 2 NRestarts)" -gt "$restarts" ] && [ "$cur" != 0 ] && [ "$cur" != "$pid" ] &&
		[ "$(show 2 ActiveState)" = active ]; then
		ok=1
		break
	fi
	sleep 0.5
done
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
if [ $ok = 1 ]; then
	result=$(journal 2 | grep -o "Failed with result '[a-z-]*'" | tail -n1 | cut -d"'" -f2)
	pass "the watchdog killed the stopped daemon (result '$result') and systemd restarted it, ${took}s after SIGSTOP"
else
	ct 2 kill -CONT "$pid" 2>/dev/null
	fail "watchdog restart (restarts $(show 2 NRestarts), MainPID $(show 2 MainPID))"
fi
# While it is stopped, its kernel keeps answering ARP for the VIP beside
# node 3's: WatchdogSec + TimeoutAbortSec bound that.
window=0.0
[ -n "$first" ] && window=$(awk -v a="$first" -v b="$last" 'BEGIN { printf "%.1f", b - a }')
if awk -v w="$window" -v max="$STOPPED_HOLD_MAX" 'BEGIN { exit !(w <= max) }'; then
	pass "the stopped Master's address stayed beside the new Master's for ${window}s (at most ${STOPPED_HOLD_MAX}s)"
else
	fail "the stopped Master kept the VIP for ${window}s, more than ${STOPPED_HOLD_MAX}s"
fi
if wait_holder 2 $((${PREEMPT_DELAY%s} + 10)); then
	pass "after the restart exactly one node holds $VIP (node 2)"
else
	fail "one holder of $VIP after the watchdog restart"
fi

# ---------------------------------------------------------------- SIGKILL

wait_holder 2 5
cleaned_before=$(journal 2 | grep -cF "k8s-api: removed $VIP/32 from host0")
ct 2 systemctl kill --signal=SIGKILL vipd.service
# The daemon cannot release; ExecStopPost=vipd cleanup must remove its
# address before node 3 takes over, and the restarted daemon takes the VIP
# back (higher priority). Two holders at once for more than a moment (a
# preemption's handover) would be the split brain.
both=0
for _ in $(seq 40); do
	[ "$(holders)" = "2 3" ] && both=$((both + 1))
	sleep 0.2
done
cleaned_after=$(journal 2 | grep -cF "k8s-api: removed $VIP/32 from host0")
if [ $both -le 2 ] && [ "$cleaned_after" -gt "$cleaned_before" ] && wait_holder 2 $((${PREEMPT_DELAY%s} + 10)); then
	pass "after SIGKILL, ExecStopPost=vipd cleanup removed the VIP, it never stayed on two nodes, and node 2 holds it again"
else
	fail "one holder of $VIP after SIGKILL (two holders in $both samples, cleanups $cleaned_before -> $cleaned_after, now '$(holders)')"
fi

# ---------------------------------------------------------------- purge

log "purging the package on node 3 (a Backup)"
ct 3 test -d /var/lib/vipd || ct 3 mkdir -p /var/lib/vipd
if ct 3 env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q vipd >"$work/purge.log" 2>&1 &&
	! ct 3 test -e /var/lib/vipd && ! ct 3 dpkg-query -W vipd >/dev/null 2>&1 && wait_holder 2 3; then
	pass "apt-get purge vipd removes /var/lib/vipd; the VIP stays on node 2"
else
	cat "$work/purge.log" >&2
	fail "purge removes /var/lib/vipd (exists: $(ct 3 test -e /var/lib/vipd && echo yes || echo no), holders '$(holders)')"
fi

[ "$failed" = 0 ] || dump_logs
exit $((failed > 0))
}

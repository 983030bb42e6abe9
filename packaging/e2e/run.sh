#!/bin/bash
# vipd end to end, under real systemd (make e2e).
#
# Boots three Debian 12 containers with systemd as PID 1 (systemd-nspawn
# --boot, no machined needed) on a private bridge, installs the freshly built
# .deb on them with the Ansible role in packaging/ansible, and checks what an
# operator relies on: the service is active (and READY) everywhere, exactly
# one node holds the VIP and `vipd status` agrees, a powered-off Master is
# replaced and the VIP answers a client, a package upgrade and
# `systemctl reload` keep the VIP where it is, a bad configuration is
# refused without a restart loop, and the watchdog restarts a daemon that
# stops answering. Everything it creates has a unique name and is removed on
# exit, also after a failure.
#
# Steps that need a daemon feature this build lacks (packaging/features.sh:
# status, reload, cleanup, notify) are reported as skipped, not failed.
#
# Needs root, systemd-nspawn, debootstrap and ansible-playbook
# (packaging/e2e/install-deps); without them it says why and skips.
#
# Environment:
#   VIPD_E2E_CACHE  where the debootstrapped root is kept between runs
#                   (default /var/cache/vipd-e2e)
#   VIPD_E2E_KEEP   set to 1 to leave the containers running on failure, for
#                   a look inside (the script prints how to clean up)
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

start_time=$(date +%s)
passed=0 failed=0 skipped=0
failures=()

log() { printf 'e2e: %s\n' "$*" >&2; }
pass() { passed=$((passed + 1)); log "PASS $*"; }
fail() { failed=$((failed + 1)); failures+=("$*"); log "FAIL $*"; }
skip() { skipped=$((skipped + 1)); log "SKIP $*"; }

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

has() { printf '%s\n' "$FEATURES" | grep -qx "$1"; }

# ---------------------------------------------------------------- build

log "building the packages (current and upgrade)"
arch=$(dpkg --print-architecture)
ARCHS=$arch DIST=$work/dist1 packaging/build.sh deb >"$work/build1.log" 2>&1 || {
	cat "$work/build1.log" >&2
	die "packaging/build.sh deb"
}
v1=$(packaging/build.sh version)
deb1=$(ls "$work"/dist1/vipd_*_"$arch".deb)
ARCHS=$arch DIST=$work/dist2 PKG_VERSION=$v1.1 packaging/build.sh deb >"$work/build2.log" 2>&1 || {
	cat "$work/build2.log" >&2
	die "packaging/build.sh deb (upgrade)"
}
deb2=$(ls "$work"/dist2/vipd_*_"$arch".deb)
FEATURES=$("$here/../features.sh" "$work/dist1/build/$arch/vipd")
log "vipd $v1 has: $(echo $FEATURES)"
missing_feature() { has "$1" || { skip "$2 (needs vipd $1, not available yet)"; return 0; }; return 1; }

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
        vipd_vips: ["$VIP"]
        vipd_advert_interval: $ADVERT
        vipd_node_name: "{{ inventory_hostname }}"
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

if ! missing_feature notify "READY=1 under Type=notify"; then
	ok=1
	for n in 1 2 3; do
		[ "$(show "$n" Type)" = notify ] && [ "$(show "$n" ActiveState)" = active ] &&
			[ "$(show "$n" StatusErrno)" = 0 ] || ok=0
	done
	[ $ok = 1 ] && pass "READY=1 reached systemd on all three (Type=notify, active)" || fail "READY under Type=notify"
fi

if wait_holder 1 20; then
	pass "exactly one node holds $VIP: node 1, the highest priority"
else
	die "exactly one node holds $VIP"
fi

# status_master N: what `vipd status --json` on node N says about mastership:
# "master" or "backup" (the first instance's state, case-insensitive).
status_state() {
	ct "$1" vipd status --json 2>/dev/null | python3 -c '
import json, sys
def states(v):
    if isinstance(v, dict):
        for k, x in v.items():
            if k.lower() == "state" and isinstance(x, str):
                yield x.lower()
            else:
                yield from states(x)
    elif isinstance(v, list):
        for x in v:
            yield from states(x)
s = list(states(json.load(sys.stdin)))
print(s[0] if s else "unknown")'
}
if ! missing_feature status "vipd status agrees with the addresses"; then
	got="$(status_state 1) $(status_state 2) $(status_state 3)"
	if [ "$got" = "master backup backup" ]; then
		pass "vipd status: node 1 master, nodes 2 and 3 backup"
	else
		fail "vipd status says '$got', want 'master backup backup'"
	fi
fi

if client_reaches; then
	pass "the client reaches $VIP"
else
	fail "the client reaches $VIP"
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
	if ! missing_feature status "vipd status on the new Master"; then
		[ "$(status_state 2)" = master ] && pass "vipd status on node 2: master" || fail "vipd status on node 2: $(status_state 2)"
	fi
fi

# ---------------------------------------------------------------- upgrade, reload

pid_before=$(show 2 MainPID)
sed -i "s|^        vipd_package_file: .*|        vipd_package_file: \"$deb2\"|" "$work/inventory.yml"
log "upgrading nodes 2 and 3 to $v1.1 with the role"
if playbook "$work/ansible3.log" --limit node2,node3; then
	got=$(ct 2 dpkg-query -W -f='${Version}' vipd)
	if [ "$got" = "$v1.1-1" ]; then
		pass "the role upgrades the package ($got)"
	else
		fail "the role upgrades the package (dpkg says $got)"
	fi
else
	tail -n 30 "$work/ansible3.log" >&2
	fail "ansible-playbook (upgrade)"
fi
if [ "$(show 2 MainPID)" = "$pid_before" ] && wait_holder 2 3; then
	pass "the upgrade did not restart the daemon on the Master, and the VIP stayed"
else
	fail "the upgrade kept the daemon and the VIP (MainPID $pid_before -> $(show 2 MainPID), holders '$(holders)')"
fi

if ! missing_feature reload "systemctl reload keeps the VIP"; then
	if ct 2 systemctl reload vipd.service && [ "$(show 2 MainPID)" = "$pid_before" ] && wait_holder 2 3; then
		pass "systemctl reload on the Master after the upgrade keeps the daemon and the VIP"
	else
		fail "systemctl reload keeps the VIP (holders '$(holders)')"
	fi
	ct 2 cp /etc/vipd/vipd.toml /run/vipd.toml.good
	ct 2 sh -c 'printf "\n[global]\nbogus = 1\n" >>/etc/vipd/vipd.toml'
	if ct 2 systemctl reload vipd.service >"$work/badreload.log" 2>&1; then
		fail "systemctl reload refuses a bad configuration"
	elif [ "$(show 2 MainPID)" = "$pid_before" ] && wait_holder 2 3; then
		pass "systemctl reload refuses a bad configuration; the daemon and the VIP stay"
	else
		fail "a refused reload kept the daemon and the VIP"
	fi
	ct 2 cp /run/vipd.toml.good /etc/vipd/vipd.toml
fi

# ---------------------------------------------------------------- refused config

log "starting node 3 with a broken configuration"
ct 3 cp /etc/vipd/vipd.toml /run/vipd.toml.good
ct 3 sh -c 'sed -i "s/^vrid = .*/vrid = 300/" /etc/vipd/vipd.toml'
restarts_before=$(show 3 NRestarts)
ct 3 systemctl restart vipd.service >/dev/null 2>&1
sleep 5
status=$(show 3 ExecMainStatus)
if [ "$status" = 78 ] && [ "$(show 3 ActiveState)" = failed ] && [ "$(show 3 NRestarts)" = "$restarts_before" ] &&
	ct 3 journalctl --no-pager -u vipd.service | grep -q 'vipd.toml:[0-9]*: .*vrid'; then
	pass "a refused configuration exits 78, is not restarted, and the journal names the line"
else
	fail "refused configuration: status $status, state $(show 3 ActiveState), restarts $(show 3 NRestarts)"
fi
ct 3 cp /run/vipd.toml.good /etc/vipd/vipd.toml
ct 3 systemctl reset-failed vipd.service
ct 3 systemctl start vipd.service
wait_holder 2 5 || fail "node 2 kept the VIP while node 3 restarted"

# ---------------------------------------------------------------- watchdog

if ! missing_feature notify "the watchdog restarts a daemon that stops answering"; then
	pid=$(show 2 MainPID)
	restarts=$(show 2 NRestarts)
	log "SIGSTOP to vipd on node 2 (pid $pid in the container)"
	ct 2 kill -STOP "$pid"
	ok=0
	for _ in $(seq 60); do
		now=$(show 2 MainPID)
		if [ "$(show 2 NRestarts)" -gt "$restarts" ] && [ "$now" != 0 ] && [ "$now" != "$pid" ] &&
			[ "$(show 2 ActiveState)" = active ]; then
			ok=1
			break
		fi
		sleep 1
	done
	if [ $ok = 1 ]; then
		pass "the watchdog killed the stopped daemon and systemd restarted it"
	else
		ct 2 kill -CONT "$pid" 2>/dev/null
		fail "watchdog restart (restarts $(show 2 NRestarts), MainPID $(show 2 MainPID))"
	fi
	if wait_holder 2 15; then
		pass "after the restart exactly one node holds $VIP (node 2)"
	else
		fail "one holder of $VIP after the watchdog restart"
	fi
fi

if ! missing_feature cleanup "ExecStopPost=vipd cleanup removes a killed daemon's VIP"; then
	wait_holder 2 5
	ct 2 systemctl kill --signal=SIGKILL vipd.service
	# The daemon cannot release; ExecStopPost=vipd cleanup must remove its
	# address before node 3 takes over, and the restarted daemon takes the
	# VIP back (higher priority). Two holders at once for more than a
	# moment (a preemption's handover) would be the split brain.
	both=0
	for _ in $(seq 40); do
		[ "$(holders)" = "2 3" ] && both=$((both + 1))
		sleep 0.2
	done
	if [ $both -le 2 ] && wait_holder 2 15; then
		pass "after SIGKILL the VIP never stays on two nodes, and node 2 holds it again"
	else
		fail "one holder of $VIP after SIGKILL (two holders in $both samples, now '$(holders)')"
	fi
fi

[ "$failed" = 0 ] || dump_logs
exit $((failed > 0))
}

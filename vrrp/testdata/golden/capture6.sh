#!/usr/bin/env bash
# capture6.sh regenerates the golden VRRPv3-over-IPv6 advertisements in this
# directory, as capture.sh does for IPv4: it runs keepalived and FRR vrrpd in a
# throw-away network-namespace lab and captures their adverts with tcpdump.
#
# Usage: sudo ./capture6.sh [OUTDIR [PCAPDIR]]
#   OUTDIR  where the .txt files go (default: this directory)
#   PCAPDIR if given, the raw captures are copied there for inspection
#
# Needs root, iproute2, tcpdump, keepalived and frr (zebra + vrrpd). Everything
# it creates has a per-run random suffix and is removed by the EXIT trap, also
# on failure. Only 2001:db8::/32 and link-local addresses are used, and only
# inside the lab's own namespaces. Link-local addresses are fixed (fixed MACs,
# a fixed address on FRR's macvlan) so that every run writes the same files.
set -euo pipefail

OUT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
PCAPDIR=${2:-}
[[ $(id -u) -eq 0 ]] || { echo "capture6.sh: needs root (network namespaces, raw sockets)" >&2; exit 1; }
for bin in ip tcpdump keepalived awk; do
	command -v "$bin" >/dev/null || { echo "capture6.sh: $bin not found" >&2; exit 1; }
done
FRRBIN=/usr/lib/frr
[[ -x $FRRBIN/zebra && -x $FRRBIN/vrrpd ]] || { echo "capture6.sh: FRR zebra/vrrpd not found in $FRRBIN" >&2; exit 1; }

SUF=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
NS_BR=v6b-$SUF # holds the bridge, so the host namespace is never touched
NS_O=v6o-$SUF  # observer: runs tcpdump
NS_K=v6k-$SUF  # keepalived, sends from eth0's link-local fe80::ff:fe00:11
NS_F=v6f-$SUF  # FRR zebra + vrrpd, sends from its macvlan's link-local fe80::12
K_MAC=02:00:00:00:00:11 K_ADDR=fe80::ff:fe00:11 # EUI-64 of K_MAC
F_MAC=02:00:00:00:00:12 F_ADDR=fe80::12
O_MAC=02:00:00:00:00:02
VIP1=2001:db8::10 VIP2=2001:db8::20
VRID=51
MIN_ADVERTS=5 # normal adverts to capture per run before stopping the daemon

WORK=$(mktemp -d)
chmod 0755 "$WORK" # the FRR daemons run as user frr and must reach their directory
declare -A PIDS=() # children still running; reaped ones are removed so a reused pid is never signalled

spawned() { PIDS[$1]=1; }
reap() { # PID: wait for a child we signalled and forget it
	wait "$1" || true
	unset "PIDS[$1]"
}

cleanup() {
	local rc=$? pid
	set +e
	for pid in "${!PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	local i alive
	for i in $(seq 50); do
		alive=0
		for pid in "${!PIDS[@]}"; do
			kill -0 "$pid" 2>/dev/null && alive=1
		done
		((alive)) || break
		sleep 0.1
	done
	for pid in "${!PIDS[@]}"; do
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	for ns in "$NS_K" "$NS_F" "$NS_O" "$NS_BR"; do
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf 'capture6.sh: %s\n' "$*" >&2; }

# ---------------------------------------------------------------- the lab
ip netns add "$NS_BR"
ip -n "$NS_BR" link add br0 type bridge mcast_snooping 0
ip -n "$NS_BR" link set br0 up

# node NS PORT MAC: a namespace whose eth0 is a veth plugged into the bridge,
# IPv6 on without DAD (a tentative link-local cannot send adverts).
node() {
	local ns=$1 port=$2 mac=$3
	ip netns add "$ns"
	ip -n "$NS_BR" link add "$port" type veth peer name eth0 netns "$ns"
	ip -n "$NS_BR" link set "$port" master br0 up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 \
		net.ipv6.conf.all.autoconf=0 net.ipv6.conf.default.autoconf=0
	ip -n "$ns" link set eth0 address "$mac"
	ip -n "$ns" link set lo up
	ip -n "$ns" link set eth0 up
}
node "$NS_O" po "$O_MAC"
node "$NS_K" pk "$K_MAC"
node "$NS_F" pf "$F_MAC"

# ---------------------------------------------------------------- helpers
TCPDUMP_PID=
start_capture() { # PCAP
	ip netns exec "$NS_O" tcpdump -i eth0 --immediate-mode -nn -U -Z root -w "$1" 'ip6 proto 112' 2>"$1.log" &
	TCPDUMP_PID=$!
	spawned "$TCPDUMP_PID"
	local i
	for i in $(seq 100); do
		grep -q 'listening on' "$1.log" 2>/dev/null && return 0
		sleep 0.1
	done
	log "tcpdump did not start: $(cat "$1.log")"
	return 1
}
stop_capture() { # PCAP NAME
	kill -INT "$TCPDUMP_PID"
	reap "$TCPDUMP_PID"
	if [[ -n $PCAPDIR ]]; then cp "$1" "$PCAPDIR/$2.pcap"; fi
}

count_adverts() { # PCAP SRC
	tcpdump -r "$1" -nn "src host $2" 2>/dev/null | wc -l
}
wait_adverts() { # PCAP SRC MIN TIMEOUT_S
	local deadline=$((SECONDS + $4))
	while ((SECONDS < deadline)); do
		(($(count_adverts "$1" "$2") >= $3)) && return 0
		sleep 0.2
	done
	log "timed out waiting for $3 adverts from $2"
	return 1
}

# decode PCAP: one line per IPv6 packet without extension headers:
#   src dst hoplimit tclass(0xNN) nexthdr payload-hex stored-cksum cksum-with-pseudo-header
# Addresses are printed in full (8 groups of 4 hex digits); store() compresses them.
decode() {
	tcpdump -r "$1" -nn -x 2>/dev/null | awk '
	function hv(s,   i, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
	function fold(s) { while (s > 65535) s = (s % 65536) + int(s / 65536); return 65535 - s }
	function addr(o,   i, s) { s = ""; for (i = 0; i < 16; i += 2) s = s (i ? ":" : "") sprintf("%02x%02x", b[o + i], b[o + i + 1]); return s }
	function flush(   n, i, pl, ph, body, hi, lo) {
		if (hex == "") return
		n = length(hex) / 2
		for (i = 0; i < n; i++) b[i] = hv(substr(hex, 2 * i + 1, 2))
		pl = b[4] * 256 + b[5]
		body = 0
		for (i = 40; i < 40 + pl; i += 2) {
			hi = b[i]; lo = (i + 1 < 40 + pl) ? b[i + 1] : 0
			if (i == 46) { hi = 0; lo = 0 }  # the checksum field itself
			body += hi * 256 + lo
		}
		# Pseudo-header (RFC 8200 section 8.1): src, dst, 32-bit length, 3 zero bytes, next header.
		ph = pl + b[6]
		for (i = 8; i < 40; i += 2) ph += b[i] * 256 + b[i + 1]
		printf "%s %s %d 0x%02x %d %s %04x %04x\n", addr(8), addr(24), b[7], (b[0] % 16) * 16 + int(b[1] / 16), b[6], tolower(substr(hex, 81, 2 * pl)), b[46] * 256 + b[47], fold(ph + body)
		hex = ""
	}
	/^[^ \t]/ { flush(); next }
	/^[ \t]+0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) hex = hex $i }
	END { flush() }'
}

# short ADDR: the canonical text form of a full IPv6 address (as Go prints it).
short() {
	python3 -c 'import ipaddress, sys; print(ipaddress.ip_address(sys.argv[1]).compressed)' "$1"
}

# store PCAP SRC PRIOSEL NAME COMMENT...: as in capture.sh.
store() {
	local pcap=$1 src=$2 sel=$3 name=$4
	shift 4
	local lines
	lines=$(decode "$pcap" | while read -r s rest; do printf '%s %s\n' "$(short "$s")" "$rest"; done |
		awk -v src="$src" -v sel="$sel" '$1 == src && $5 == 112 {
		p = substr($6, 5, 2)
		if ((sel == "0" && p == "00") || (sel == "nonzero" && p != "00")) print }')
	if [[ -z $lines ]]; then
		log "no adverts from $src with priority $sel in $(basename "$pcap")"
		return 1
	fi
	local count uniq
	count=$(wc -l <<<"$lines")
	uniq=$(cut -d' ' -f1-6 <<<"$lines" | sort -u)
	if [[ $(wc -l <<<"$uniq") -ne 1 ]]; then
		log "adverts in $(basename "$pcap") differ:"
		printf '%s\n' "$uniq" >&2
		return 1
	fi
	local s d hl tc nh payload stored ph
	read -r s d hl tc nh payload stored ph <<<"$(head -1 <<<"$lines")"
	if [[ $stored != "$ph" ]]; then
		log "$name: checksum 0x$stored does not match 0x$ph (IPv6 pseudo-header)"
		return 1
	fi
	{
		local c
		for c in "$@"; do printf '# %s\n' "$c"; done
		if [[ $sel == 0 ]]; then
			printf '# priority-0 adverts sent at shutdown: %d\n' "$count"
		else
			printf "# the Master's adverts were byte-identical (at least %d captured); this is one of them\n" "$MIN_ADVERTS"
		fi
		printf '# checksum 0x%s verified: RFC 1071 sum over the IPv6 pseudo-header (src, dst, VRRP length, 0, 112) + VRRP payload\n' "$stored"
		printf 'src %s\ndst %s\nttl %s\ntclass %s\npayload %s\n' "$s" "$(short "$d")" "$hl" "$tc" "$payload"
	} >"$OUT/$name"
	log "wrote $name ($count adverts, payload $payload)"
}

# ---------------------------------------------------------------- keepalived
KA_VER=$(keepalived --version 2>&1 | awk 'NR == 1 { print $2 }')
KA_PKG=$(dpkg-query -W -f '${Version}' keepalived 2>/dev/null || echo unknown)
KA_SRC="keepalived ${KA_VER#v} (Debian package $KA_PKG), vrrp_version 3, IPv6"

# keepalived_run TAG PRIORITY ADVERT_INT VIP...
keepalived_run() {
	local tag=$1 prio=$2 adv=$3
	shift 3
	local dir=$WORK/ka-$tag vip vips=
	mkdir -p "$dir"
	for vip in "$@"; do vips+="        $vip/128 dev eth0"$'\n'; done
	cat >"$dir/keepalived.conf" <<EOC
global_defs {
    vrrp_version 3
}
vrrp_instance VI_$VRID {
    state BACKUP
    interface eth0
    virtual_router_id $VRID
    priority $prio
    advert_int $adv
    virtual_ipaddress {
$vips    }
}
EOC
	start_capture "$dir/cap.pcap"
	local pid
	ip netns exec "$NS_K" keepalived --dont-fork --log-console --no-syslog --vrrp \
		-f "$dir/keepalived.conf" -p "$dir/keepalived.pid" -r "$dir/vrrp.pid" >"$dir/keepalived.log" 2>&1 &
	pid=$!
	spawned "$pid"
	wait_adverts "$dir/cap.pcap" "$K_ADDR" "$MIN_ADVERTS" 30 || { cat "$dir/keepalived.log" >&2; return 1; }
	kill -TERM "$pid"
	reap "$pid"
	sleep 1
	stop_capture "$dir/cap.pcap" "keepalived6-$tag"
}

keepalived_run a 100 1 "$VIP1"
store "$WORK/ka-a/cap.pcap" "$K_ADDR" nonzero keepalived-v3-ipv6-vrid51-prio100.txt \
	"source: $KA_SRC, advert_int 1, captured with tcpdump in a network-namespace lab" \
	"config: state BACKUP, virtual_router_id 51, priority 100, advert_int 1 (100 cs), VIP $VIP1/128"
store "$WORK/ka-a/cap.pcap" "$K_ADDR" 0 keepalived-v3-ipv6-vrid51-prio0.txt \
	"source: $KA_SRC, advert_int 1, captured with tcpdump in a network-namespace lab" \
	"config: as keepalived-v3-ipv6-vrid51-prio100.txt; sent by the Master when keepalived got SIGTERM"

keepalived_run c 200 0.1 "$VIP1" "$VIP2"
store "$WORK/ka-c/cap.pcap" "$K_ADDR" nonzero keepalived-v3-ipv6-vrid51-prio200-2vips-int10cs.txt \
	"source: $KA_SRC, advert_int 0.1, captured with tcpdump in a network-namespace lab" \
	"config: state BACKUP, virtual_router_id 51, priority 200, advert_int 0.1 (10 cs), VIPs $VIP1/128 $VIP2/128 (in that order)"
store "$WORK/ka-c/cap.pcap" "$K_ADDR" 0 keepalived-v3-ipv6-vrid51-prio0-2vips-int10cs.txt \
	"source: $KA_SRC, advert_int 0.1, captured with tcpdump in a network-namespace lab" \
	"config: as keepalived-v3-ipv6-vrid51-prio200-2vips-int10cs.txt; sent by the Master when keepalived got SIGTERM"

# ---------------------------------------------------------------- FRR vrrpd
FRR_VER=$("$FRRBIN/vrrpd" --version 2>&1 | awk '/version/ && !v { v = $NF } END { print v }')
FRR_PKG=$(dpkg-query -W -f '${Version}' frr 2>/dev/null || echo unknown)
FRR_SRC="FRR vrrpd $FRR_VER (Debian package $FRR_PKG), vrrp $VRID version 3, IPv6"

# FRR's vrrpd sends IPv6 adverts from the link-local address of a macvlan that
# carries the IPv6 virtual MAC 00:00:5e:00:02:VRID and the VIPs. Its link-local
# must not be derived from that MAC (every router would get the same one), so
# address generation is off and a fixed one is added.
ip -n "$NS_F" link add vrrp6-$VRID link eth0 type macvlan mode bridge
ip -n "$NS_F" link set vrrp6-$VRID addrgenmode none
ip -n "$NS_F" link set vrrp6-$VRID address "00:00:5e:00:02:$(printf %02x $VRID)"

# frr_run TAG PRIORITY INTERVAL_MS VIP...
frr_run() {
	local tag=$1 prio=$2 ms=$3
	shift 3
	local dir=$WORK/frr-$tag vip
	mkdir -p "$dir"
	ip -n "$NS_F" addr flush dev vrrp6-$VRID
	ip -n "$NS_F" addr add "$F_ADDR/64" dev vrrp6-$VRID
	for vip in "$@"; do ip -n "$NS_F" addr add "$vip/128" dev vrrp6-$VRID; done
	ip -n "$NS_F" link set vrrp6-$VRID up
	printf 'hostname v6-zebra\n' >"$dir/zebra.conf"
	{
		printf 'hostname v6-vrrpd\n!\ninterface eth0\n vrrp %d version 3\n vrrp %d priority %d\n vrrp %d advertisement-interval %d\n' \
			"$VRID" "$VRID" "$prio" "$VRID" "$ms"
		for vip in "$@"; do printf ' vrrp %d ipv6 %s\n' "$VRID" "$vip"; done
		printf '!\n'
	} >"$dir/vrrpd.conf"
	chown -R frr:frr "$dir"
	start_capture "$dir/cap.pcap"
	local zpid vpid i
	ip netns exec "$NS_F" "$FRRBIN/zebra" -P 0 -z "$dir/zserv.api" --vty_socket "$dir" \
		-f "$dir/zebra.conf" -i "$dir/zebra.pid" --log "file:$dir/zebra.log" >"$dir/zebra.out" 2>&1 &
	zpid=$!
	spawned "$zpid"
	for i in $(seq 100); do
		[[ -S $dir/zserv.api ]] && break
		sleep 0.1
	done
	[[ -S $dir/zserv.api ]] || { log "zebra did not create its socket"; cat "$dir/zebra.out" >&2; return 1; }
	ip netns exec "$NS_F" "$FRRBIN/vrrpd" -P 0 -z "$dir/zserv.api" --vty_socket "$dir" \
		-f "$dir/vrrpd.conf" -i "$dir/vrrpd.pid" --log "file:$dir/vrrpd.log" >"$dir/vrrpd.out" 2>&1 &
	vpid=$!
	spawned "$vpid"
	wait_adverts "$dir/cap.pcap" "$F_ADDR" "$MIN_ADVERTS" 30 || { cat "$dir/vrrpd.log" >&2; return 1; }
	kill -TERM "$vpid"
	reap "$vpid"
	sleep 1
	kill -TERM "$zpid"
	reap "$zpid"
	stop_capture "$dir/cap.pcap" "frr6-$tag"
}

frr_run a 100 1000 "$VIP1"
store "$WORK/frr-a/cap.pcap" "$F_ADDR" nonzero frr-v3-ipv6-vrid51-prio100.txt \
	"source: $FRR_SRC, advertisement-interval 1000 ms, captured with tcpdump in a network-namespace lab" \
	"config: interface eth0, vrrp 51 version 3, priority 100, advertisement-interval 1000 (100 cs), ipv6 $VIP1"
store "$WORK/frr-a/cap.pcap" "$F_ADDR" 0 frr-v3-ipv6-vrid51-prio0.txt \
	"source: $FRR_SRC, advertisement-interval 1000 ms, captured with tcpdump in a network-namespace lab" \
	"config: as frr-v3-ipv6-vrid51-prio100.txt; sent by the Master when vrrpd got SIGTERM"

frr_run b 200 100 "$VIP1" "$VIP2"
store "$WORK/frr-b/cap.pcap" "$F_ADDR" nonzero frr-v3-ipv6-vrid51-prio200-2vips-int10cs.txt \
	"source: $FRR_SRC, advertisement-interval 100 ms, captured with tcpdump in a network-namespace lab" \
	"config: interface eth0, vrrp 51 version 3, priority 200, advertisement-interval 100 (10 cs), ipv6 $VIP1 and ipv6 $VIP2 (in that order)"
store "$WORK/frr-b/cap.pcap" "$F_ADDR" 0 frr-v3-ipv6-vrid51-prio0-2vips-int10cs.txt \
	"source: $FRR_SRC, advertisement-interval 100 ms, captured with tcpdump in a network-namespace lab" \
	"config: as frr-v3-ipv6-vrid51-prio200-2vips-int10cs.txt; sent by the Master when vrrpd got SIGTERM"

log "done; files in $OUT"

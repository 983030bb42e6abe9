#!/usr/bin/env bash
# capture.sh regenerates the golden IPv4 VRRP advertisements in this directory
# by running keepalived and FRR vrrpd in a throw-away network-namespace lab and
# capturing what they put on the wire with tcpdump.
#
# Usage: sudo ./capture.sh [-v 3|2] [OUTDIR [PCAPDIR]]
#   -v 3    VRRPv3 (RFC 5798) from keepalived and FRR vrrpd (the default)
#   -v 2    VRRPv2 (RFC 3768) from keepalived only: the keepalived-v2-* files
#   OUTDIR  where the .txt files go (default: this directory)
#   PCAPDIR if given, the raw captures (and keepalived's logs) are copied there
#
# Needs root, iproute2, tcpdump, keepalived and, for -v 3, frr (zebra + vrrpd). Everything
# it creates (namespaces, bridge, veths, processes, a temporary directory) has a
# per-run random suffix and is removed by the EXIT trap, also on failure. Only
# 198.51.100.0/24 is used, and only inside the lab's own namespaces.
set -euo pipefail

VER=3 # VRRP version to capture
usage() { echo "usage: capture.sh [-v 3|2] [OUTDIR [PCAPDIR]]" >&2; exit 2; }
while getopts v: opt; do
	case $opt in
	v) VER=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[[ $VER == 2 || $VER == 3 ]] || usage
OUT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
PCAPDIR=${2:-}
[[ $(id -u) -eq 0 ]] || { echo "capture.sh: needs root (network namespaces, raw sockets)" >&2; exit 1; }
for bin in ip tcpdump keepalived awk; do
	command -v "$bin" >/dev/null || { echo "capture.sh: $bin not found" >&2; exit 1; }
done
FRRBIN=/usr/lib/frr
if [[ $VER == 3 ]]; then
	[[ -x $FRRBIN/zebra && -x $FRRBIN/vrrpd ]] || { echo "capture.sh: FRR zebra/vrrpd not found in $FRRBIN" >&2; exit 1; }
fi

SUF=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
NS_BR=vgb-$SUF # holds the bridge, so the host namespace is never touched
NS_O=vgo-$SUF  # observer: runs tcpdump, 198.51.100.2
NS_K=vgk-$SUF  # keepalived, 198.51.100.11
NS_F=vgf-$SUF  # FRR zebra + vrrpd, 198.51.100.12
O_ADDR=198.51.100.2 K_ADDR=198.51.100.11 F_ADDR=198.51.100.12
VIP1=198.51.100.10 VIP2=198.51.100.20
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
	# keepalived needs about a second to stop its VRRP child; killing the parent
	# earlier would orphan that child.
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

log() { printf 'capture.sh: %s\n' "$*" >&2; }

# ---------------------------------------------------------------- the lab
ip netns add "$NS_BR"
ip -n "$NS_BR" link add br0 type bridge mcast_snooping 0
ip -n "$NS_BR" link set br0 up

# node NS PORT ADDR: a namespace whose eth0 is a veth plugged into the bridge.
node() {
	local ns=$1 port=$2 addr=$3
	ip netns add "$ns"
	ip -n "$NS_BR" link add "$port" type veth peer name eth0 netns "$ns"
	ip -n "$NS_BR" link set "$port" master br0 up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip -n "$ns" addr add "$addr/24" dev eth0
	ip -n "$ns" link set lo up
	ip -n "$ns" link set eth0 up
}
node "$NS_O" po "$O_ADDR"
node "$NS_K" pk "$K_ADDR"
if [[ $VER == 3 ]]; then node "$NS_F" pf "$F_ADDR"; fi

# ---------------------------------------------------------------- helpers
TCPDUMP_PID=
start_capture() { # PCAP
	# --immediate-mode: otherwise libpcap hands packets over in blocks with a 1 s
	# timeout, and a block not yet handed over when tcpdump is stopped is lost
	# (that is how a shutdown advert silently goes missing).
	ip netns exec "$NS_O" tcpdump -i eth0 --immediate-mode -nn -U -Z root -w "$1" 'ip proto 112' 2>"$1.log" &
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
wait_adverts() { # PCAP SRC MIN TIMEOUT_S: wait until MIN adverts from SRC are captured
	local deadline=$((SECONDS + $4))
	while ((SECONDS < deadline)); do
		(($(count_adverts "$1" "$2") >= $3)) && return 0
		sleep 0.2
	done
	log "timed out waiting for $3 adverts from $2"
	return 1
}

# decode PCAP: one line per IPv4 packet:
#   src dst ttl tos(0xNN) proto payload-hex stored-cksum cksum-with-pseudo-header cksum-without
# The IP total length is used to cut off Ethernet padding (a 1-VIP advert is a short frame).
decode() {
	tcpdump -r "$1" -nn -x 2>/dev/null | awk '
	function hv(s,   i, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
	function fold(s) { while (s > 65535) s = (s % 65536) + int(s / 65536); return 65535 - s }
	function flush(   n, i, ihl, tl, ph, body, hi, lo) {
		if (hex == "") return
		n = length(hex) / 2
		for (i = 0; i < n; i++) b[i] = hv(substr(hex, 2 * i + 1, 2))
		ihl = (b[0] % 16) * 4; tl = b[2] * 256 + b[3]
		body = 0
		for (i = ihl; i < tl; i += 2) {
			hi = b[i]; lo = (i + 1 < tl) ? b[i + 1] : 0
			if (i == ihl + 6) { hi = 0; lo = 0 }  # the checksum field itself
			body += hi * 256 + lo
		}
		ph = b[12] * 256 + b[13] + b[14] * 256 + b[15] + b[16] * 256 + b[17] + b[18] * 256 + b[19] + b[9] + (tl - ihl)
		printf "%d.%d.%d.%d %d.%d.%d.%d %d 0x%02x %d %s %04x %04x %04x\n", b[12], b[13], b[14], b[15], b[16], b[17], b[18], b[19], b[8], b[1], b[9], tolower(substr(hex, 2 * ihl + 1, 2 * (tl - ihl))), b[ihl + 6] * 256 + b[ihl + 7], fold(ph + body), fold(body)
		hex = ""
	}
	/^[^ \t]/ { flush(); next }
	/^[ \t]+0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) hex = hex $i }
	END { flush() }'
}

# store PCAP SRC PRIOSEL NAME COMMENT...: write the advert(s) from SRC whose priority
# byte matches PRIOSEL ("0" or "nonzero") as OUT/NAME. All matching adverts of one
# run must be byte-identical (neither VRRPv2 nor VRRPv3 has sequence numbers), else
# we stop. Under -v 2 the checksum must be the RFC 3768 one (VRRP packet only) and
# the file gets a "version 2" line.
store() {
	local pcap=$1 src=$2 sel=$3 name=$4
	shift 4
	local lines
	lines=$(decode "$pcap" | awk -v src="$src" -v sel="$sel" '$1 == src && $5 == 112 {
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
	local s d ttl tos proto payload stored ph noph
	read -r s d ttl tos proto payload stored ph noph <<<"$(head -1 <<<"$lines")"
	if [[ ${payload:0:1} != "$VER" ]]; then
		log "$name: version nibble ${payload:0:1}, expected $VER"
		return 1
	fi
	local ck
	if [[ $VER == 2 ]]; then
		# RFC 3768 section 5.3.8: the checksum covers the VRRP message only.
		if [[ $stored != "$noph" || $stored == "$ph" ]]; then
			log "$name: v2 checksum 0x$stored is not the RFC 3768 one 0x$noph (with pseudo-header: 0x$ph)"
			return 1
		fi
		ck="checksum 0x$stored verified: RFC 1071 sum over the VRRP packet alone, auth data included, no IPv4 pseudo-header (RFC 3768 5.3.8; with the pseudo-header it would be 0x$ph)"
	elif [[ $stored == "$ph" ]]; then
		ck="checksum 0x$stored verified: RFC 1071 sum over the IPv4 pseudo-header (src, dst, 0, 112, VRRP length) + VRRP payload"
	elif [[ $stored == "$noph" ]]; then
		ck="checksum 0x$stored verified: sum over the VRRP payload only, WITHOUT the IPv4 pseudo-header"
	else
		log "$name: checksum 0x$stored matches neither 0x$ph (pseudo-header) nor 0x$noph (payload only)"
		return 1
	fi
	{
		local c
		for c in "$@"; do printf '# %s\n' "$c"; done
		# The exact count of normal adverts depends on timing, so it stays out of
		# the file to keep regenerated files free of noise.
		if [[ $sel == 0 ]]; then
			printf '# priority-0 adverts sent at shutdown: %d\n' "$count"
		else
			printf "# the Master's adverts were byte-identical (at least %d captured); this is one of them\n" "$MIN_ADVERTS"
		fi
		printf '# %s\n' "$ck"
		printf 'src %s\ndst %s\nttl %s\ntos %s\n' "$s" "$d" "$ttl" "$tos"
		if [[ $VER == 2 ]]; then printf 'version 2\n'; fi
		printf 'payload %s\n' "$payload"
	} >"$OUT/$name"
	log "wrote $name ($count adverts, payload $payload)"
}

first_advert_delay() { # PCAP SRC START_EPOCH: seconds from START to the first advert
	local t
	t=$(tcpdump -r "$1" -nn -tt "src host $2" 2>/dev/null | awk 'NR == 1 { print $1 }')
	[[ -n $t ]] && awk -v a="$t" -v b="$3" 'BEGIN { printf "%.1f", a - b }'
}

# ---------------------------------------------------------------- keepalived
KA_VER=$(keepalived --version 2>&1 | awk 'NR == 1 { print $2 }') # v2.2.7; awk reads all, so no SIGPIPE under pipefail
KA_PKG=$(dpkg-query -W -f '${Version}' keepalived 2>/dev/null || echo unknown)
KA_SRC="keepalived ${KA_VER#v} (Debian package $KA_PKG), vrrp_version $VER"

# keepalived_run TAG STATE PRIORITY ADVERT_INT AUTH_PASS VIP...: run one keepalived
# instance until it is Master and has sent a few adverts, then SIGTERM it (which
# sends priority 0). An empty PRIORITY leaves the priority line out, so keepalived
# picks its default; a non-empty AUTH_PASS adds authentication with auth_type PASS.
keepalived_run() {
	local tag=$1 state=$2 prio=$3 adv=$4 pass=$5
	shift 5
	local dir=$WORK/ka-$tag vip vips= prioline= auth=
	mkdir -p "$dir"
	for vip in "$@"; do vips+="        $vip/32 dev eth0"$'\n'; done
	if [[ -n $prio ]]; then prioline="    priority $prio"$'\n'; fi
	if [[ -n $pass ]]; then
		auth="    authentication {"$'\n'"        auth_type PASS"$'\n'"        auth_pass $pass"$'\n'"    }"$'\n'
	fi
	cat >"$dir/keepalived.conf" <<EOF
global_defs {
    vrrp_version $VER
}
vrrp_instance VI_$VRID {
    state $state
    interface eth0
    virtual_router_id $VRID
${prioline}    advert_int $adv
${auth}    virtual_ipaddress {
$vips    }
}
EOF
	start_capture "$dir/cap.pcap"
	local start pid
	start=$(date +%s.%N)
	ip netns exec "$NS_K" keepalived --dont-fork --log-console --no-syslog --vrrp \
		-f "$dir/keepalived.conf" -p "$dir/keepalived.pid" -r "$dir/vrrp.pid" >"$dir/keepalived.log" 2>&1 &
	pid=$!
	spawned "$pid"
	# Master_Down_Interval is 3 advert intervals plus a skew (under 1 s in VRRPv2, under
	# 1 interval in VRRPv3), then MIN_ADVERTS-1 more intervals.
	wait_adverts "$dir/cap.pcap" "$K_ADDR" "$MIN_ADVERTS" $((30 + 5 * ${adv%.*}))
	log "keepalived $tag: first advert $(first_advert_delay "$dir/cap.pcap" "$K_ADDR" "$start")s after start"
	kill -TERM "$pid"
	reap "$pid"
	sleep 1
	stop_capture "$dir/cap.pcap" "keepalived-$tag"
	if [[ -n $PCAPDIR ]]; then cp "$dir/keepalived.log" "$PCAPDIR/keepalived-$tag.log"; fi
}

# ka_conf TAG: the config of run TAG as comment lines, for store's COMMENT arguments.
ka_conf() {
	KA_CONF=("keepalived.conf:")
	local l
	while IFS= read -r l; do KA_CONF+=("  $l"); done <"$WORK/ka-$1/keepalived.conf"
}

# ---------------------------------------------------------------- VRRPv2 (-v 2)
if [[ $VER == 2 ]]; then
	V2_SRC="source: $KA_SRC (RFC 3768), captured with tcpdump in a network-namespace lab"

	keepalived_run v2-a BACKUP 100 1 "" "$VIP1"
	ka_conf v2-a
	store "$WORK/ka-v2-a/cap.pcap" "$K_ADDR" nonzero keepalived-v2-vrid51-prio100.txt "$V2_SRC" \
		"config: state BACKUP, virtual_router_id 51, priority 100, advert_int 1, no authentication, VIP $VIP1/32" \
		"${KA_CONF[@]}"
	store "$WORK/ka-v2-a/cap.pcap" "$K_ADDR" 0 keepalived-v2-vrid51-prio0.txt "$V2_SRC" \
		"config: as keepalived-v2-vrid51-prio100.txt; sent by the Master when keepalived got SIGTERM" \
		"${KA_CONF[@]}"

	keepalived_run v2-b BACKUP 200 1 "" "$VIP1" "$VIP2"
	ka_conf v2-b
	store "$WORK/ka-v2-b/cap.pcap" "$K_ADDR" nonzero keepalived-v2-vrid51-prio200-2vips.txt "$V2_SRC" \
		"config: state BACKUP, virtual_router_id 51, priority 200, advert_int 1, no authentication, VIPs $VIP1/32 $VIP2/32 (in that order)" \
		"${KA_CONF[@]}"

	keepalived_run v2-c BACKUP 100 1 secret12 "$VIP1"
	ka_conf v2-c
	store "$WORK/ka-v2-c/cap.pcap" "$K_ADDR" nonzero keepalived-v2-vrid51-prio100-pass.txt "$V2_SRC" \
		"config: state BACKUP, virtual_router_id 51, priority 100, advert_int 1, auth_type PASS, auth_pass secret12 (8 characters, keepalived's maximum), VIP $VIP1/32" \
		"${KA_CONF[@]}"

	keepalived_run v2-d BACKUP 100 1 abc "$VIP1"
	ka_conf v2-d
	store "$WORK/ka-v2-d/cap.pcap" "$K_ADDR" nonzero keepalived-v2-vrid51-prio100-pass-short.txt "$V2_SRC" \
		"config: state BACKUP, virtual_router_id 51, priority 100, advert_int 1, auth_type PASS, auth_pass abc (3 characters), VIP $VIP1/32" \
		"${KA_CONF[@]}"

	keepalived_run v2-e MASTER "" 1 "" "$VIP1"
	ka_conf v2-e
	store "$WORK/ka-v2-e/cap.pcap" "$K_ADDR" nonzero keepalived-v2-vrid51-prio255-owner.txt "$V2_SRC" \
		"config: state MASTER, virtual_router_id 51, no priority line (keepalived then uses 255, address owner), advert_int 1, no authentication, VIP $VIP1/32" \
		"${KA_CONF[@]}"

	keepalived_run v2-f BACKUP 100 3 "" "$VIP1"
	ka_conf v2-f
	store "$WORK/ka-v2-f/cap.pcap" "$K_ADDR" nonzero keepalived-v2-vrid51-prio100-int3s.txt "$V2_SRC" \
		"config: state BACKUP, virtual_router_id 51, priority 100, advert_int 3 (seconds), no authentication, VIP $VIP1/32" \
		"${KA_CONF[@]}"

	log "done; files in $OUT"
	exit 0
fi

# ---------------------------------------------------------------- VRRPv3 (-v 3)
keepalived_run a BACKUP 100 1 "" "$VIP1"
store "$WORK/ka-a/cap.pcap" "$K_ADDR" nonzero keepalived-v3-vrid51-prio100.txt \
	"source: $KA_SRC, advert_int 1, captured with tcpdump in a network-namespace lab" \
	"config: state BACKUP, virtual_router_id 51, priority 100, advert_int 1 (100 cs), VIP $VIP1/32"
store "$WORK/ka-a/cap.pcap" "$K_ADDR" 0 keepalived-v3-vrid51-prio0.txt \
	"source: $KA_SRC, advert_int 1, captured with tcpdump in a network-namespace lab" \
	"config: as keepalived-v3-vrid51-prio100.txt; sent by the Master when keepalived got SIGTERM"

keepalived_run b BACKUP 100 0.1 "" "$VIP1"
store "$WORK/ka-b/cap.pcap" "$K_ADDR" nonzero keepalived-v3-vrid51-prio100-int10cs.txt \
	"source: $KA_SRC, advert_int 0.1, captured with tcpdump in a network-namespace lab" \
	"config: state BACKUP, virtual_router_id 51, priority 100, advert_int 0.1 (10 cs), VIP $VIP1/32"
store "$WORK/ka-b/cap.pcap" "$K_ADDR" 0 keepalived-v3-vrid51-prio0-int10cs.txt \
	"source: $KA_SRC, advert_int 0.1, captured with tcpdump in a network-namespace lab" \
	"config: as keepalived-v3-vrid51-prio100-int10cs.txt; sent by the Master when keepalived got SIGTERM"

keepalived_run c BACKUP 200 1 "" "$VIP1" "$VIP2"
store "$WORK/ka-c/cap.pcap" "$K_ADDR" nonzero keepalived-v3-vrid51-prio200-2vips.txt \
	"source: $KA_SRC, advert_int 1, captured with tcpdump in a network-namespace lab" \
	"config: state BACKUP, virtual_router_id 51, priority 200, advert_int 1 (100 cs), VIPs $VIP1/32 $VIP2/32 (in that order)"
store "$WORK/ka-c/cap.pcap" "$K_ADDR" 0 keepalived-v3-vrid51-prio0-2vips.txt \
	"source: $KA_SRC, advert_int 1, captured with tcpdump in a network-namespace lab" \
	"config: as keepalived-v3-vrid51-prio200-2vips.txt; sent by the Master when keepalived got SIGTERM"

# ---------------------------------------------------------------- FRR vrrpd
FRR_VER=$("$FRRBIN/vrrpd" --version 2>&1 | awk '/version/ && !v { v = $NF } END { print v }')
FRR_PKG=$(dpkg-query -W -f '${Version}' frr 2>/dev/null || echo unknown)
FRR_SRC="FRR vrrpd $FRR_VER (Debian package $FRR_PKG), vrrp $VRID version 3"

# FRR's vrrpd wants a macvlan per VRID carrying the virtual MAC and the VIPs; the
# sysctls keep the node from answering ARP for the VIP with eth0's MAC.
ip netns exec "$NS_F" sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 \
	net.ipv4.conf.eth0.ignore_routes_with_linkdown=1
ip -n "$NS_F" link add vrrp4-$VRID link eth0 type macvlan mode bridge
ip -n "$NS_F" link set vrrp4-$VRID address "00:00:5e:00:01:$(printf %02x $VRID)"

# frr_run TAG PRIORITY INTERVAL_MS VIP...
frr_run() {
	local tag=$1 prio=$2 ms=$3
	shift 3
	local dir=$WORK/frr-$tag vip
	mkdir -p "$dir"
	ip -n "$NS_F" addr flush dev vrrp4-$VRID
	for vip in "$@"; do ip -n "$NS_F" addr add "$vip/32" dev vrrp4-$VRID; done
	ip -n "$NS_F" link set vrrp4-$VRID up
	printf 'hostname vg-zebra\n' >"$dir/zebra.conf"
	{
		printf 'hostname vg-vrrpd\n!\ninterface eth0\n vrrp %d version 3\n vrrp %d priority %d\n vrrp %d advertisement-interval %d\n' \
			"$VRID" "$VRID" "$prio" "$VRID" "$ms"
		for vip in "$@"; do printf ' vrrp %d ip %s\n' "$VRID" "$vip"; done
		printf '!\n'
	} >"$dir/vrrpd.conf"
	chown -R frr:frr "$dir"
	start_capture "$dir/cap.pcap"
	local start zpid vpid i
	start=$(date +%s.%N)
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
	wait_adverts "$dir/cap.pcap" "$F_ADDR" "$MIN_ADVERTS" 30
	log "FRR $tag: first advert $(first_advert_delay "$dir/cap.pcap" "$F_ADDR" "$start")s after zebra start"
	kill -TERM "$vpid"
	reap "$vpid"
	sleep 1
	kill -TERM "$zpid"
	reap "$zpid"
	stop_capture "$dir/cap.pcap" "frr-$tag"
}

frr_run a 100 1000 "$VIP1"
store "$WORK/frr-a/cap.pcap" "$F_ADDR" nonzero frr-v3-vrid51-prio100.txt \
	"source: $FRR_SRC, advertisement-interval 1000 ms, captured with tcpdump in a network-namespace lab" \
	"config: interface eth0, vrrp 51 version 3, priority 100, advertisement-interval 1000 (100 cs), ip $VIP1"
# FRR 8.4 sends one priority-0 advert when vrrpd stops as Master; if a future
# version does not, store fails loudly, which is what we want to know.
store "$WORK/frr-a/cap.pcap" "$F_ADDR" 0 frr-v3-vrid51-prio0.txt \
	"source: $FRR_SRC, advertisement-interval 1000 ms, captured with tcpdump in a network-namespace lab" \
	"config: as frr-v3-vrid51-prio100.txt; sent by the Master when vrrpd got SIGTERM"

frr_run b 200 100 "$VIP1" "$VIP2"
store "$WORK/frr-b/cap.pcap" "$F_ADDR" nonzero frr-v3-vrid51-prio200-2vips-int10cs.txt \
	"source: $FRR_SRC, advertisement-interval 100 ms, captured with tcpdump in a network-namespace lab" \
	"config: interface eth0, vrrp 51 version 3, priority 200, advertisement-interval 100 (10 cs), ip $VIP1 and ip $VIP2 (in that order)"
store "$WORK/frr-b/cap.pcap" "$F_ADDR" 0 frr-v3-vrid51-prio0-2vips-int10cs.txt \
	"source: $FRR_SRC, advertisement-interval 100 ms, captured with tcpdump in a network-namespace lab" \
	"config: as frr-v3-vrid51-prio200-2vips-int10cs.txt; sent by the Master when vrrpd got SIGTERM"

log "done; files in $OUT"

#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: rootfs.sh [PACKAGE...]   (as root)
#
# Prints the path of a Debian 12 root file system for the end-to-end test's
# containers, debootstrapping it on the first call. The root is cached under
# $VIPD_E2E_CACHE (default /var/cache/vipd-e2e), keyed by what goes into it,
# so later runs on the same machine reuse it and a change to the package
# list builds a new one. The containers never write to it (they boot with
# --volatile=overlay). Extra PACKAGEs (migrate.sh: keepalived) go into
# the include list, hence into the key: a root without them is never reused
# for a run that needs them, and run.sh's root stays as it was.
#
# The mirror is the one this machine's apt uses (apt-get indextargets), so
# nothing here names a host.
set -eu

SUITE=bookworm
# python3 and python3-apt: Ansible's modules; the rest: a systemd host with
# networkd and the tools the test uses.
INCLUDE=systemd,systemd-sysv,dbus,iproute2,python3,python3-apt,iputils-ping,procps
for pkg in "$@"; do INCLUDE=$INCLUDE,$pkg; done
LAYOUT=1 # bump when the post-install steps below change

cache=${VIPD_E2E_CACHE:-/var/cache/vipd-e2e}
arch=$(dpkg --print-architecture)
key=$(printf '%s %s %s %s\n' "$SUITE" "$arch" "$INCLUDE" "$LAYOUT" | sha256sum | cut -c1-12)
root=$cache/rootfs-$SUITE-$arch-$key

say() { echo "rootfs.sh: $*" >&2; }

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

if [ -f "$root/.complete" ]; then
	echo "$root"
	exit 0
fi

mirror=$(apt-get indextargets --format '$(REPO_URI)' "Release: $SUITE" "Created-By: Packages" | head -n1)
[ -n "$mirror" ] || { say "apt knows no mirror for $SUITE: run apt-get update"; exit 1; }

tmp=$(mktemp -d "$cache/.build-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
say "debootstrapping Debian $SUITE ($arch) into the cache; later runs reuse it"
start=$(date +%s)
debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$tmp/root" "$mirror" >"$tmp/debootstrap.log" 2>&1 || {
	tail -n 30 "$tmp/debootstrap.log" >&2
	exit 1
}
r=$tmp/root
# Addresses come from a per-container .network file bound in at boot.
chroot "$r" systemctl enable systemd-networkd.service systemd-networkd-wait-online.service >/dev/null 2>&1
# Let nspawn set the host name from the machine name; a fresh machine id
# per boot.
: >"$r/etc/hostname"
rm -f "$r/etc/machine-id" "$r/var/lib/dbus/machine-id"
: >"$r/etc/machine-id"
# The containers have no route out: no package lists to keep.
chroot "$r" apt-get clean
rm -rf "$r/var/lib/apt/lists/"*
touch "$r/.complete"
mv "$r" "$root"
say "built $root in $(($(date +%s) - start))s"
echo "$root"

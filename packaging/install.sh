#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs vipd from a source build the way the packages do (make install):
#
#   /usr/sbin/vipd                              from bin/vipd (make build)
#   /usr/lib/systemd/system/vipd.service
#   /usr/lib/sysusers.d/vipd.conf               the system user
#   /usr/share/man/man8/vipd.8.gz, man5/vipd.toml.5.gz
#   /usr/share/doc/vipd/vipd.toml.example
#   /usr/share/vipd/alerts.yml, grafana-dashboard.json
#   shell completions for bash, zsh and fish    from `vipd completion SHELL`
#   /etc/vipd/                                  empty: the service starts once
#                                               /etc/vipd/vipd.toml exists
#
# With DESTDIR set it only lays the files out under it (for other packaging);
# without, as root on a systemd host, it also creates the user and enables
# the unit, and reloads a running daemon, which then re-executes the new
# binary in place (same PID, the VIP stays), as a package upgrade does. It
# never writes /etc/vipd/vipd.toml.
#
# Environment: DESTDIR, BIN (default bin/vipd), GO.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"

DESTDIR=${DESTDIR:-}
BIN=${BIN:-bin/vipd}
[ -x "$BIN" ] || { echo "install.sh: no $BIN: run make build first" >&2; exit 1; }
[ -f dist/man/vipd.8.gz ] || packaging/build.sh man

install -D -m 0755 "$BIN" "$DESTDIR/usr/sbin/vipd"
install -D -m 0644 packaging/systemd/vipd.service "$DESTDIR/usr/lib/systemd/system/vipd.service"
install -D -m 0644 packaging/systemd/vipd.sysusers "$DESTDIR/usr/lib/sysusers.d/vipd.conf"
install -D -m 0644 dist/man/vipd.8.gz "$DESTDIR/usr/share/man/man8/vipd.8.gz"
install -D -m 0644 dist/man/vipd.toml.5.gz "$DESTDIR/usr/share/man/man5/vipd.toml.5.gz"
install -D -m 0644 packaging/vipd.toml "$DESTDIR/usr/share/doc/vipd/vipd.toml.example"
install -D -m 0644 metrics/alerts.yml "$DESTDIR/usr/share/vipd/alerts.yml"
install -D -m 0644 packaging/grafana/vipd.json "$DESTDIR/usr/share/vipd/grafana-dashboard.json"
install -d -m 0755 "$DESTDIR/etc/vipd"

# Shell completions from the binary being installed, as the packages have
# them; a vipd without the completion command gets none (the packages
# refuse to build without it).
completions=$(mktemp -d)
trap 'rm -rf "$completions"' EXIT
if "$BIN" completion bash >"$completions/bash" 2>/dev/null && "$BIN" completion zsh >"$completions/zsh" 2>/dev/null &&
	"$BIN" completion fish >"$completions/fish" 2>/dev/null; then
	install -D -m 0644 "$completions/bash" "$DESTDIR/usr/share/bash-completion/completions/vipd"
	install -D -m 0644 "$completions/zsh" "$DESTDIR/usr/share/zsh/vendor-completions/_vipd"
	install -D -m 0644 "$completions/fish" "$DESTDIR/usr/share/fish/vendor_completions.d/vipd.fish"
else
	echo "install.sh: $BIN has no completion command: no shell completions installed" >&2
fi

# Earlier versions of this script installed drop-ins that adapted the unit
# to a vipd without sd_notify, reload or cleanup; every vipd has them now.
rm -f "$DESTDIR"/usr/lib/systemd/system/vipd.service.d/compat-notify.conf \
	"$DESTDIR"/usr/lib/systemd/system/vipd.service.d/compat-reload.conf \
	"$DESTDIR"/usr/lib/systemd/system/vipd.service.d/compat-cleanup.conf
rmdir "$DESTDIR/usr/lib/systemd/system/vipd.service.d" 2>/dev/null || true

if [ -z "$DESTDIR" ] && [ -d /run/systemd/system ]; then
	systemd-sysusers /usr/lib/sysusers.d/vipd.conf
	systemctl daemon-reload
	systemctl enable vipd.service
	if systemctl is-active --quiet vipd.service; then
		systemctl reload vipd.service
		echo "install.sh: the running vipd re-executed the new binary (systemctl reload vipd)"
	else
		echo "install.sh: vipd.service enabled; it starts once /etc/vipd/vipd.toml exists (systemctl start vipd)"
	fi
fi

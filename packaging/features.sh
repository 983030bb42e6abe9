#!/bin/sh
# Usage: features.sh VIPD_BINARY
#
# Prints, one a line, which of the features that packaging and the end-to-end
# test depend on the given vipd binary has:
#   status   `vipd status [--json]`
#   reload   `vipd reload` over the control socket
#   cleanup  `vipd cleanup`
#   notify   sd_notify READY=1 and WATCHDOG=1 (Type=notify, WatchdogSec)
# Commands are read from `vipd help`; sd_notify from the strings the binary
# must carry to send those messages. The binary must run on this machine.
set -eu
bin=${1:?usage: features.sh VIPD_BINARY}
help=$("$bin" help 2>&1) || true
for cmd in status reload cleanup; do
	if printf '%s\n' "$help" | grep -Eq "^[[:space:]]+$cmd([[:space:]]|$)"; then
		echo "$cmd"
	fi
done
if grep -aq 'READY=1' "$bin" && grep -aq 'WATCHDOG=1' "$bin"; then
	echo notify
fi

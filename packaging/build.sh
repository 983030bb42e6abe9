#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds vipd's man pages and its .deb and .rpm packages, and checks them.
#
#   packaging/build.sh man          docs/*.md -> dist/man/*.gz
#   packaging/build.sh deb|rpm      dist/*.deb or dist/*.rpm for $ARCHS
#   packaging/build.sh lint         lintian on the .debs, rpm -qpl/-qpi on the
#                                   .rpms, systemd-analyze verify and
#                                   security on the unit
#
# Run from anywhere, as any user; `lint` needs lintian, rpm and systemd
# (packaging/e2e/install-deps installs them). The tools come from the Go module
# proxy at pinned versions through `go run`, so that they stay out of the
# daemon's go.mod and no prebuilt binary is downloaded.
#
# Environment (all optional):
#   ARCHS             Debian architecture names, default "amd64 arm64"
#   DIST              output directory, default dist
#   PKG_VERSION       package version; default from git: the last tag
#                     (vX.Y.Z -> X.Y.Z, +gitN.HASH after it) or
#                     0.0.0+gitN.HASH without one, N counting commits
#   VERSION, COMMIT   what `vipd version` prints, as the Makefile sets them
#   VIPD_PREBUILT     a directory with ARCH/vipd binaries to package instead
#                     of building them (for example from CI's build step)
#   VIPD_MAINTAINER   "Name <address>" for the package metadata
#   VIPD_COMPLETION_FROM
#                     the vipd whose `vipd completion bash|zsh|fish` writes
#                     the shell completions the packages install; default
#                     the binary built for this machine's architecture (the
#                     scripts are the same for every architecture)
#   SOURCE_DATE_EPOCH file times and man page dates; default the last commit
set -eu

NFPM=github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.48.0
MD2MAN=github.com/cpuguy83/go-md2man/v2@v2.0.7

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"

GO=${GO:-go}
ARCHS=${ARCHS:-amd64 arm64}
DIST=${DIST:-dist}
case $DIST in /*) ;; *) DIST=$root/$DIST ;; esac
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
VIPD_MAINTAINER=${VIPD_MAINTAINER:-vipd maintainers <vipd@example.org>}
# vipd's licence; nfpm.yaml and the role's meta say the same.
LICENSE_FILE=$root/LICENSE
LICENSE_ID=Apache-2.0
# The packages' revision: nfpm.yaml's release, and the Debian changelog's
# "-1" (packaging/changelog.yaml).
PKG_RELEASE=1
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

say() { echo "build.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# pkg_version turns git's view into a version dpkg and rpm both order
# correctly: snapshots after a tag sort after it, and before the next tag.
pkg_version() {
	if [ -n "${PKG_VERSION:-}" ]; then
		echo "$PKG_VERSION"
		return
	fi
	count=$(git rev-list --count HEAD 2>/dev/null || echo 0)
	hash=$(git rev-parse --short=7 HEAD 2>/dev/null || echo unknown)
	if tag=$(git describe --tags --abbrev=0 --match 'v[0-9]*' 2>/dev/null); then
		base=${tag#v}
		since=$(git rev-list --count "$tag..HEAD")
		if [ "$since" = 0 ]; then
			echo "$base"
		else
			echo "$base+git$since.$hash"
		fi
	else
		echo "0.0.0+git$count.$hash"
	fi
}

# rpm_arch maps a Debian architecture name to RPM's.
rpm_arch() {
	case $1 in
	amd64) echo x86_64 ;;
	arm64) echo aarch64 ;;
	*) echo "$1" ;;
	esac
}

build_man() {
	out=$DIST/man
	mkdir -p "$out"
	check_man_keys
	date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
	for md in docs/vipd.8.md docs/vipd.toml.5.md; do
		page=$(basename "$md" .md)
		sed -e "s/@DATE@/$date/" -e "s/@VERSION@/$VERSION/" "$md" >"$out/$page.md"
		$GO run "$MD2MAN" -in "$out/$page.md" -out "$out/$page"
		gzip -9nf "$out/$page"
		rm -f "$out/$page.md"
	done
	say "man pages in $out"
}

# check_man_keys: every key the reference config documents is documented in
# vipd.toml(5) too, so the man page cannot fall behind the file.
check_man_keys() {
	missing=""
	for key in $(sed -n 's/^#\{0,1\} *\([a-z_]\{1,\}\) = .*/\1/p' packaging/vipd.toml | sort -u); do
		grep -q "^\*\*$key\*\*\|, \*\*$key\*\*" docs/vipd.toml.5.md || missing="$missing $key"
	done
	[ -z "$missing" ] && return 0
	say "docs/vipd.toml.5.md does not document:$missing"
	[ "${1:-}" = strict ] && return 1
	return 0
}

build_binary() { # ARCH -> $DIST/build/ARCH/vipd
	mkdir -p "$DIST/build/$1"
	if [ -n "${VIPD_PREBUILT:-}" ]; then
		[ -x "$VIPD_PREBUILT/$1/vipd" ] || die "no $VIPD_PREBUILT/$1/vipd"
		cp "$VIPD_PREBUILT/$1/vipd" "$DIST/build/$1/vipd"
		return
	fi
	# PIE: address space layout randomisation for the one binary that holds
	# network capabilities (and lintian's statically-linked-binary does not
	# apply to it).
	CGO_ENABLED=0 GOOS=linux GOARCH=$1 $GO build -trimpath -buildvcs=false -buildmode=pie \
		-ldflags "-s -w -X main.version=$VERSION -X main.commit=$COMMIT" \
		-o "$DIST/build/$1/vipd" ./cmd/vipd
}

# build_completions writes $DIST/completion/vipd.{bash,zsh,fish} with the
# packaged binary's own `vipd completion SHELL`, so that they complete exactly
# the commands and flags of the vipd they ship with.
build_completions() {
	out=$DIST/completion
	host=$($GO env GOARCH)
	gen=${VIPD_COMPLETION_FROM:-$DIST/build/$host/vipd}
	if [ -z "${VIPD_COMPLETION_FROM:-}" ] && [ ! -x "$gen" ]; then
		build_binary "$host"
	fi
	[ -x "$gen" ] || die "no $gen to write the shell completions with"
	mkdir -p "$out"
	for sh in bash zsh fish; do
		if ! "$gen" completion "$sh" >"$out/vipd.$sh" 2>"$out/vipd.$sh.err" || [ ! -s "$out/vipd.$sh" ]; then
			cat "$out/vipd.$sh.err" >&2
			die "\`$gen completion $sh\` failed or wrote nothing: this vipd has no completion command, which the packages need for their shell completions"
		fi
		rm -f "$out/vipd.$sh.err"
	done
	say "shell completions in $out"
}

# guess_license names a third-party licence text by its wording.
guess_license() {
	if grep -q "Apache License" "$1"; then echo Apache-2.0
	elif grep -q "Permission is hereby granted, free of charge" "$1"; then echo MIT
	elif grep -q "Neither the name" "$1"; then echo BSD-3-clause
	elif grep -q "Redistribution and use" "$1"; then echo BSD-2-clause
	else echo other
	fi
}

# write_licenses BINARY STAGE: the Debian copyright file (DEP-5) and the
# files RPM marks %license: vipd's own licence, and those of the Go standard
# library and of every module linked into the binary.
write_licenses() {
	bin=$1 stage=$2
	[ -f "$LICENSE_FILE" ] || die "no $LICENSE_FILE"
	cp "$LICENSE_FILE" "$stage/LICENSE"
	{
		echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
		echo "Upstream-Name: vipd"
		echo "Source: https://github.com/vipd/vipd"
		echo "Comment: /usr/sbin/vipd is a Go program; it contains the Go"
		echo " standard library and the Go modules listed below, each under its own"
		echo " licence."
		echo
		echo "Files: *"
		echo "Copyright: The vipd authors"
		echo "License: $LICENSE_ID"
		echo " On Debian systems the full text of the Apache License 2.0 is in"
		echo " /usr/share/common-licenses/Apache-2.0."
		goroot=$($GO env GOROOT)
		deps="go@$($GO env GOVERSION)"
		deps="$deps $($GO version -m "$bin" | awk '$1 == "dep" { print $2 "@" $3 }')"
		for dep in $deps; do
			case $dep in
			go@*) dir=$goroot ;;
			*) dir=$($GO list -m -f '{{.Dir}}' "$dep") ;;
			esac
			lic=$(find "$dir" -maxdepth 1 -type f \( -iname 'licen[cs]e*' -o -iname 'copying*' \) | sort | head -n1)
			[ -n "$lic" ] || die "no licence file for $dep"
			name=$(guess_license "$lic")
			echo
			echo "Files: embedded/${dep%@*}/*"
			case $dep in
			go@*) echo "Comment: the Go standard library, ${dep#go@}, compiled into /usr/sbin/vipd" ;;
			*) echo "Comment: Go module ${dep} ($(basename "$lic")), compiled into /usr/sbin/vipd" ;;
			esac
			echo "Copyright: the ${dep%@*} authors"
			echo "License: $name"
			if [ "$name" = Apache-2.0 ]; then
				echo " On Debian systems the full text of the Apache License 2.0 is in"
				echo " /usr/share/common-licenses/Apache-2.0."
			else
				sed -e 's/^[[:space:]]*$/./' -e 's/^/ /' "$lic"
			fi
			{
				echo "== ${dep} ($name) =="
				echo
				cat "$lic"
				echo
			} >>"$stage/THIRD-PARTY-LICENSES"
		done
	} >"$stage/copyright"
}

# write_changelog VERSION STAGE: the curated packaging/changelog.yaml, with an
# entry for a snapshot version on top (the packages' changelogs must start
# with the version they carry).
write_changelog() {
	v=$1 stage=$2
	v=$v-$PKG_RELEASE
	if grep -q "^- semver: \"\{0,1\}$v\"\{0,1\}\$" packaging/changelog.yaml; then
		cp packaging/changelog.yaml "$stage/changelog.yaml"
		return
	fi
	{
		echo "- semver: \"$v\""
		echo "  date: \"$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)\""
		echo "  packager: \"$VIPD_MAINTAINER\""
		echo "  deb:"
		echo "    urgency: low"
		echo "    distributions: [unstable]"
		echo "  changes:"
		echo "    - note: \"Snapshot built from commit $COMMIT.\""
		sed -n '/^- /,$p' packaging/changelog.yaml
	} >"$stage/changelog.yaml"
}

stage() { # ARCH -> $DIST/stage/ARCH
	arch=$1
	st=$DIST/stage/$arch
	rm -rf "$st"
	mkdir -p "$st"
	build_binary "$arch"
	cp "$DIST/build/$arch/vipd" "$st/vipd"
	cp packaging/systemd/vipd.service "$st/vipd.service"
	cp packaging/systemd/vipd.sysusers "$st/vipd.sysusers"
	cp packaging/vipd.toml "$st/vipd.toml.example"
	cp "$DIST/man/vipd.8.gz" "$DIST/man/vipd.toml.5.gz" "$st/"
	cp -r packaging/scripts "$st/scripts"
	cp packaging/lintian-overrides "$st/lintian-overrides"
	cp packaging/systemd/vipd.preset "$st/vipd.preset"
	cp metrics/alerts.yml "$st/alerts.yml"
	cp packaging/grafana/vipd.json "$st/grafana-dashboard.json"
	cp "$DIST/completion/vipd.bash" "$DIST/completion/vipd.zsh" "$DIST/completion/vipd.fish" "$st/"
	write_licenses "$st/vipd" "$st"
	write_changelog "$(pkg_version)" "$st"
	cp packaging/nfpm.yaml "$st/nfpm.yaml"
	{
		echo "  - src: THIRD-PARTY-LICENSES"
		echo "    dst: /usr/share/licenses/vipd/THIRD-PARTY-LICENSES"
		echo "    type: license"
		echo "    packager: rpm"
		echo "    file_info: {mode: 0644}"
	} >>"$st/nfpm.yaml"
}

build_packages() { # deb|rpm
	format=$1
	[ -f "$DIST/man/vipd.8.gz" ] || build_man
	build_completions
	version=$(pkg_version)
	for arch in $ARCHS; do
		# One package per format and architecture in $DIST: the one built now.
		case $format in
		deb) rm -f "$DIST"/vipd_*_"$arch".deb ;;
		rpm) rm -f "$DIST"/vipd-*."$(rpm_arch "$arch")".rpm ;;
		esac
		stage "$arch"
		(
			cd "$DIST/stage/$arch"
			if [ "$format" = rpm ]; then
				# RPM shows the summary apart: the description starts
				# after Debian's synopsis line and has no "." lines.
				awk '/^description: \|-$/ { print; getline; next } /^  \.$/ { print ""; next } { print }' \
					nfpm.yaml >nfpm-rpm.yaml
				mv nfpm-rpm.yaml nfpm.yaml
			fi
			VIPD_ARCH=$arch VIPD_PKG_VERSION=$version VIPD_MAINTAINER=$VIPD_MAINTAINER \
				$GO run "$NFPM" package --config nfpm.yaml --packager "$format" --target "$DIST/" >nfpm.log 2>&1 || { cat nfpm.log >&2; exit 1; }
		)
	done
	for arch in $ARCHS; do
		case $format in
		deb) f=$DIST/vipd_${version}-${PKG_RELEASE}_$arch.deb ;;
		rpm) f=$DIST/vipd-${version}-${PKG_RELEASE}.$(rpm_arch "$arch").rpm ;;
		esac
		[ -f "$f" ] || die "nfpm did not write $f"
		say "built $f"
	done
}

lint() {
	status=0
	found=""
	for arch in $ARCHS; do
		deb=$(ls "$DIST"/vipd_*_"$arch".deb 2>/dev/null | head -n1)
		rpm=$(ls "$DIST"/vipd-*."$(rpm_arch "$arch")".rpm 2>/dev/null | head -n1)
		found="$found$deb$rpm"
		if [ -f "$deb" ]; then
			say "lintian $deb"
			# Errors fail; the warnings the package overrides are justified in
			# packaging/lintian-overrides, shipped as its lintian override.
			lintian --fail-on error --tag-display-limit 0 --show-overrides "$deb" || status=1
		fi
		if [ -f "$rpm" ]; then
			say "rpm -qpi $rpm"
			rpm -qpi "$rpm" || status=1
			say "rpm -qpl $rpm"
			rpm -qpl "$rpm" || status=1
			rpm -qp --scripts "$rpm" >/dev/null || status=1
			if [ -f "$deb" ]; then
				# The two packages carry the same files, less each format's
				# own licence, changelog, lintian, preset and zsh locations.
				own='^/usr/(share/(doc/vipd/(copyright|changelog\.Debian\.gz)|licenses/vipd/.*|lintian/overrides/vipd|zsh/(vendor-completions|site-functions)/_vipd)|lib/systemd/system-preset/.*)$'
				dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }' |
					grep -Ev "$own" | sort >"$DIST/files-deb.txt"
				rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$rpm" | awk '$1 !~ /^d/ { print $2 }' |
					grep -Ev "$own" | sort >"$DIST/files-rpm.txt"
				if ! diff -u "$DIST/files-deb.txt" "$DIST/files-rpm.txt" >&2; then
					say "the deb and the rpm for $arch carry different files"
					status=1
				fi
				# What the comparison leaves out, each in its own place.
				dpkg-deb -c "$deb" | grep -q '/usr/share/zsh/vendor-completions/_vipd$' ||
					{ say "$deb has no zsh completion"; status=1; }
				rpm -qpl "$rpm" | grep -qx '/usr/share/zsh/site-functions/_vipd' ||
					{ say "$rpm has no zsh completion"; status=1; }
			fi
		fi
	done
	[ -n "$found" ] || die "no packages in $DIST: run make deb rpm first"
	check_man_keys strict || status=1
	verify_unit || status=1
	return $status
}

# verify_unit runs systemd-analyze verify and security on the unit as
# installed, in a scratch root with the binary, the man pages and the
# machine's own system units.
verify_unit() {
	command -v systemd-analyze >/dev/null || { say "no systemd-analyze: unit not verified"; return 0; }
	host=$($GO env GOARCH)
	[ -x "$DIST/build/$host/vipd" ] || build_binary "$host"
	[ -f "$DIST/man/vipd.8.gz" ] || build_man
	scratch=$(mktemp -d)
	trap 'rm -rf "$scratch"' EXIT
	mkdir -p "$scratch/usr/sbin" "$scratch/usr/share/man/man8" "$scratch/usr/share/man/man5" "$scratch/usr/lib/systemd"
	cp -a /usr/lib/systemd/system "$scratch/usr/lib/systemd/system"
	cp "$DIST/build/$host/vipd" "$scratch/usr/sbin/vipd"
	cp packaging/systemd/vipd.service "$scratch/usr/lib/systemd/system/vipd.service"
	cp "$DIST/man/vipd.8.gz" "$scratch/usr/share/man/man8/"
	cp "$DIST/man/vipd.toml.5.gz" "$scratch/usr/share/man/man5/"
	say "systemd-analyze verify vipd.service"
	MANPATH=$scratch/usr/share/man systemd-analyze verify --root="$scratch" \
		"$scratch/usr/lib/systemd/system/vipd.service" || return 1
	say "systemd-analyze security --offline=true vipd.service"
	systemd-analyze security --offline=true --root="$scratch" --no-pager \
		"$scratch/usr/lib/systemd/system/vipd.service" >"$DIST/security.txt" 2>&1 || true
	grep -E '^✗|Overall' "$DIST/security.txt" >&2
	score=$(sed -n 's/.*Overall exposure level for vipd.service: \([0-9.]*\).*/\1/p' "$DIST/security.txt")
	[ -n "$score" ] || { say "no exposure level in $DIST/security.txt"; return 1; }
	# The README quotes this score; raise the bar when the unit improves.
	awk -v s="$score" 'BEGIN { exit !(s <= 1.8) }' || { say "exposure $score is above 1.8"; return 1; }
}

case ${1:-} in
man) build_man ;;
deb | rpm) build_packages "$1" ;;
lint) lint ;;
version) pkg_version ;;
*)
	echo "usage: packaging/build.sh man|deb|rpm|lint|version" >&2
	exit 2
	;;
esac

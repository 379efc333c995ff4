#!/usr/bin/env bash
# check-build-deps.sh: one source for the build dependencies, debian/control's
# Build-Depends (issue 26). The README's install section (between its
# install:begin and install:end markers, the lines make check-host runs
# verbatim) installs them with `apt-get build-dep ./`, and no apt-get
# install line of the README names one of them (a second list would drift);
# the .deb it installs is the one make deb writes (debian/changelog's
# version); tests/host/setup-host.sh (what CI installs) has every one of
# them and every package the install section names.
set -euo pipefail
cd "$(dirname "$0")/../.."
bad=0
fail() { echo "check-build-deps: $*"; bad=$((bad + 1)); }

block=$(sed -n '/<!-- install:begin/,/<!-- install:end -->/p' README.md | sed '1d;$d' | sed '/^```/d')
[ -n "$block" ] || fail "README.md: no install section between <!-- install:begin and <!-- install:end -->"
[ "$(grep -c '<!-- install:begin' README.md)" = 1 ] || fail "README.md: not exactly one install:begin marker"

# Build-Depends, one alternative group a line ("systemd-dev|systemd"), the
# version constraints dropped; debhelper-compat is debhelper's.
deps=$(awk '/^Build-Depends:/ { on = 1; sub(/^Build-Depends:/, "") }
	on && /^[A-Za-z-]+:/ && !/^Build-Depends:/ { on = 0 }
	on { print }' debian/control | tr ',' '\n' | sed 's/([^)]*)//g; s/\[[^]]*\]//g' |
	tr -d ' \t' | grep . | sed 's/^debhelper-compat$/debhelper/')
[ -n "$deps" ] || fail "no Build-Depends read from debian/control"

grep -qE '^sudo apt-get build-dep( -y)? \./( |$)' <<<"$block" ||
	fail "README.md's install section does not install debian/control's Build-Depends with 'sudo apt-get build-dep ./'"

# Every package an apt-get install line of the README names (the install
# section's and any other's), not the .deb files it installs.
named=$(grep -oE 'apt-get install( +-[a-z-]+)*( +[a-z0-9][a-z0-9.+-]+)+' README.md |
	sed -E 's/^apt-get install//; s/ -[a-z-]+//g' | tr ' ' '\n' | grep . | sort -u || true)
while IFS= read -r group; do
	for alt in ${group//|/ }; do
		if grep -qx "$alt" <<<"$named"; then
			fail "README.md names the build dependency $alt in an apt-get install line: apt-get build-dep ./ installs it from debian/control"
		fi
	done
done <<<"$deps"

# The .deb the section installs is the one make deb writes.
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
arch=$(dpkg --print-architecture)
want="./build/deb/vmact_${version}_${arch}.deb"
grep -qF "apt-get install -y $want" <<<"$block" ||
	fail "README.md's install section does not install $want (debian/changelog's version)"

# What CI installs (setup-host.sh's list) has each of them.
setup=$(sed -n '/^packages=(/,/^)/p' tests/host/setup-host.sh | sed 's/#.*//' | tr -s ' \t' '\n\n' | grep -v '^packages=($\|^)$' | grep .)
while IFS= read -r group; do
	found=0
	for alt in ${group//|/ }; do grep -qx "$alt" <<<"$setup" && found=1; done
	[ $found = 1 ] || fail "tests/host/setup-host.sh does not install the build dependency $group (debian/control)"
done <<<"$deps"
for p in $(grep -oE '^sudo apt-get install( +-[a-z-]+)*( +[a-z0-9][a-z0-9.+-]+)+' <<<"$block" |
	sed -E 's/^sudo apt-get install//; s/ -[a-z-]+//g'); do
	grep -qx "$p" <<<"$setup" || fail "tests/host/setup-host.sh does not install $p, which README.md's install section does"
done

if [ $bad -ne 0 ]; then
	echo "check-build-deps: $bad problem(s)"
	exit 1
fi
echo "check-build-deps: $(grep -c . <<<"$deps") build dependencies, from debian/control alone (README: apt-get build-dep ./; setup-host.sh has them all)"

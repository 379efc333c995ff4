#!/usr/bin/env bash
# make install DESTDIR=... into a scratch directory, then checks what it
# put there: exactly the files `make install-manifest` lists (none missing,
# none extra), each with its mode; the programs run (--version); the hook
# does not even load libvirt; the hook and vmact-guestd are in
# libexec/vmact (where vmactd looks for vmact-guestd: test_worker_program),
# the libvirt hook entry a symbolic link to the hook; the commented example
# configuration is the example, which vmactd accepts; vmact-cluster's
# sysusers.d entry creates no libvirt group, its tmpfiles.d entry makes its
# home and its units start only once configured; the unit names the installed vmactd and
# reloads with SIGHUP; every man page renders with no warning from man(1)
# and groff; the bash completion, sourced in bash, completes vmactl's
# commands and options and vmactd's options.
# Usage: tests/checks/check-install.sh [MAKE-VARIABLE=VALUE...] (the build to
# install, e.g. BUILD=build/san SANITIZE=1). Prints "N passed, M failed".
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
dest=$(mktemp -d /tmp/vmact-install-XXXXXX)
trap 'rm -rf "$dest"' EXIT
prefix=/usr
passed=0 failed=0

ok() { passed=$((passed + 1)); }
bad() { echo "check-install: $*"; failed=$((failed + 1)); }

if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s "$@" PREFIX=$prefix DESTDIR="$dest" install >"$dest.log" 2>&1; then
	cat "$dest.log"; rm -f "$dest.log"
	echo "check-install: make install failed"
	echo "0 passed, 1 failed"
	exit 1
fi
rm -f "$dest.log"
mapfile -t manifest < <(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s "$@" PREFIX=$prefix install-manifest)

# What every install has, whatever Kbuild adds later.
hook=/usr/libexec/vmact/vmact-hook
for f in /usr/sbin/vmactd /usr/sbin/vmact-arbiter /etc/libvirt/hooks/qemu.d/vmact \
	/usr/libexec/vmact/vmact-guestd $hook \
	/usr/lib/systemd/system/vmactd.service /usr/lib/sysusers.d/vmact.conf \
	/usr/share/man/man8/vmactd.8 \
	/usr/share/man/man8/vmactl.8 /usr/share/man/man8/vmact-arbiter.8 \
	/usr/share/man/man8/vmact-hook.8 /usr/share/man/man5/vmactd.json.5 \
	/usr/share/bash-completion/completions/vmactl \
	/usr/share/bash-completion/completions/vmactd \
	/usr/share/doc/vmact/README.md /usr/share/doc/vmact/vmactd.json.example \
	/usr/share/doc/vmact/vmactd.json.commented \
	/usr/share/doc/vmact/doc/hook.md; do
	case " ${manifest[*]} " in
	*" $f "*) ok ;;
	*) bad "$f is not in the install manifest" ;;
	esac
done

# Exactly the manifest, with the right modes.
# The libvirt hook entry: a symbolic link to the program in libexec (a
# program in /etc would be a conffile, left behind on removal).
for f in "${manifest[@]}"; do
	case $f in
	*/hooks/qemu.d/*)
		if [ -L "$dest$f" ] && [ "$(readlink "$dest$f")" = "$hook" ]; then ok
		else bad "$f is not a symbolic link to $hook"; fi ;;
	esac
done
for f in "${manifest[@]}"; do
	case $f in */hooks/qemu.d/*) continue ;; esac
	if [ ! -f "$dest$f" ]; then
		bad "$f not installed"
		continue
	fi
	case $f in
	*/sbin/*|*/bin/*|*/libexec/*) want=755 ;;
	*) want=644 ;;
	esac
	mode=$(stat -c %a "$dest$f")
	if [ "$mode" = "$want" ]; then ok; else bad "$f has mode $mode, not $want"; fi
done
while IFS= read -r f; do
	f=${f#"$dest"}
	case " ${manifest[*]} " in
	*" $f "*) ;;
	*) bad "$f installed but not in the manifest" ;;
	esac
done < <(find "$dest" -type f -o -type l)

# Programs run.
for f in "${manifest[@]}"; do
	case $f in
	*/sbin/*|*/bin/*|*/libexec/*)
		if out=$("$dest$f" --version 2>&1) && [[ $out == *0.* ]]; then ok
		else bad "$f --version: $out"; fi ;;
	esac
done
if readelf -d "$dest$hook" | grep -q 'NEEDED.*libvirt'; then
	bad "the hook loads libvirt"
else
	ok
fi
hook_out=$("$dest$hook" d started begin - </dev/null 2>/dev/null)
if [ -z "$hook_out" ]; then ok; else bad "the hook wrote to stdout: $hook_out"; fi

# The unit.
unit=$dest/usr/lib/systemd/system/vmactd.service
# No --config: a stock install has no /etc/vmact/vmactd.json, and a named
# file must exist; vmactd reads the default path only when it is there.
if grep -qx "ExecStart=$prefix/sbin/vmactd" "$unit"; then ok
else bad "vmactd.service: ExecStart is not $prefix/sbin/vmactd alone"; fi
if "$dest$prefix/sbin/vmactd" --check-config >/dev/null 2>&1 || [ -e /etc/vmact/vmactd.json ]; then ok
else bad "vmactd --check-config fails without a configuration file"; fi
# ... and says that the file is absent, never that it is valid; a named
# file that is absent is an error.
if [ ! -e /etc/vmact/vmactd.json ]; then
	msg=$("$dest$prefix/sbin/vmactd" --check-config 2>&1)
	case $msg in
	*"/etc/vmact/vmactd.json does not exist: vmactd runs with the built-in defaults"*) ok ;;
	*) bad "vmactd --check-config without the default file says: $msg" ;;
	esac
fi
missing=$(mktemp -u /tmp/vmact-absent-XXXXXX.json)
if msg=$("$dest$prefix/sbin/vmactd" --check-config -c "$missing" 2>&1); then
	bad "vmactd --check-config -c $missing (absent) exits 0: $msg"
else
	case $msg in *"$missing"*"No such file"*) ok ;; *) bad "vmactd --check-config -c $missing says: $msg" ;; esac
fi
# libvirt restarts must not restart vmactd, and it must not start a libvirt
# daemon the host does not use: ordering only.
if grep -q '^Requires=\|^BindsTo=\|^Wants=' "$unit"; then bad "vmactd.service has Requires=, BindsTo= or Wants="
else ok; fi
for u in libvirtd.service libvirtd.socket virtqemud.service virtqemud.socket; do
	if grep '^After=' "$unit" | grep -qw "$u"; then ok; else bad "vmactd.service is not ordered after $u"; fi
done
for m in 'vmactd(8)' 'vmactd.json(5)' 'vmactl(8)'; do
	if grep '^Documentation=' "$unit" | grep -qF "man:$m"; then ok; else bad "vmactd.service: no Documentation=man:$m"; fi
done
if grep -q '^Documentation=file:///usr/share/doc/vmact/README.md' "$unit"; then ok
else bad "vmactd.service: Documentation= does not name the installed README"; fi
if command -v systemd-analyze >/dev/null; then
	if out=$(MANPATH=$dest/usr/share/man systemd-analyze verify --root="$dest" "$unit" 2>&1 |
		grep -v 'is not executable\|Cannot add dependency job\|not found'); [ -z "$out" ]; then ok
	else bad "systemd-analyze verify: $out"; fi
fi
# sysusers.d: the guest workers' user, as systemd-sysusers reads it.
sysusers=$dest/usr/lib/sysusers.d/vmact.conf
if out=$(systemd-sysusers --dry-run --root="$dest" "$sysusers" 2>&1) && grep -q "vmact" <<<"$out"; then ok
elif ! command -v systemd-sysusers >/dev/null && grep -q '^u vmact ' "$sysusers"; then ok
else bad "systemd-sysusers does not create vmact from $sysusers: $out"; fi
# vmact-cluster's: its user, never libvirt's group (libvirt's package
# makes that; the package's postinst adds the user to it where it exists).
sysusers=$dest/usr/lib/sysusers.d/vmact-cluster.conf
if out=$(systemd-sysusers --dry-run --root="$dest" "$sysusers" 2>&1) && grep -q "vmact-cluster" <<<"$out" &&
	! grep -qi "libvirt" <<<"$out"; then ok
elif ! command -v systemd-sysusers >/dev/null && ! grep -q 'libvirt' "$sysusers"; then ok
else bad "systemd-sysusers from $sysusers: $out"; fi
if grep -qx 'd /var/lib/vmact-cluster 0700 vmact-cluster vmact-cluster -' "$dest/usr/lib/tmpfiles.d/vmact-cluster.conf"; then ok
else bad "tmpfiles.d/vmact-cluster.conf does not make vmact-cluster's home"; fi
# The cluster's units start only once configured (their package enables them).
for u in vmact-groupd.service vmact-cloudprovider.service; do
	if grep -qx 'ConditionPathExists=/etc/vmact/groupd.json' "$dest/usr/lib/systemd/system/$u"; then ok
	else bad "$u: no ConditionPathExists=/etc/vmact/groupd.json"; fi
done
if grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' "$unit"; then ok
else bad "vmactd.service: no ExecReload with SIGHUP"; fi

# The commented example: without its comment lines, the example itself,
# which vmactd accepts.
commented=$dest/usr/share/doc/vmact/vmactd.json.commented
if diff <(grep -v '^ *//' "$commented") "$dest/usr/share/doc/vmact/vmactd.json.example" >/dev/null; then ok
else bad "vmactd.json.commented without its comments is not vmactd.json.example"; fi
cfg=$(mktemp)
grep -v '^ *//' "$commented" >"$cfg"
if msg=$("$dest/usr/sbin/vmactd" --check-config -c "$cfg" 2>&1); then ok
else bad "vmactd --check-config on vmactd.json.commented without its comments: $msg"; fi
rm -f "$cfg"

# Man pages: rendered without a warning, with the sections a page needs.
for f in "${manifest[@]}"; do
	case $f in */share/man/*) ;; *) continue ;; esac
	warn=$(MANWIDTH=80 man --warnings -l "$dest$f" 2>&1 >/dev/null)
	text=$(MANWIDTH=80 man -l "$dest$f" 2>/dev/null)
	if [ -n "$warn" ]; then
		bad "$f: $warn"
	elif ! grep -q '^NAME' <<<"$text" || ! grep -q '^SEE ALSO' <<<"$text" ||
	     ! grep -q '^SYNOPSIS' <<<"$text"; then
		bad "$f: NAME, SYNOPSIS or SEE ALSO missing"
	else
		ok
	fi
done
# vmactd.json(5) documents exactly the keys vmactd knows: the page's keys
# (section by section) against the key tables of actuator/config/config.c, both
# ways, and each of the page's keys is accepted by vmactd --check-config
# as a key (a value of the wrong type, never "unknown key").
page=$(MANWIDTH=200 man -l "$dest/usr/share/man/man5/vmactd.json.5" 2>/dev/null)
page_keys=$(awk '/^   [a-z_]+( |$)/ { sec = $1; next }
	/^[A-Z]/ { sec = "" }
	sec != "" && /^       [a-z_]+[ ,]/ {
		print sec "." $1; if ($2 ~ /^[a-z_]+$/) print sec "." $2 }' <<<"$page" |
	tr -d ',' | grep -v '^compute_unit\.\|^scaling\.' | sort -u)
code_keys=$(awk '/^static const struct key [a-z_]+_keys\[\]/ {
		t = $5; sub(/_keys.*/, "", t); next }
	t != "" && t != "top" && /^\t\{ "[a-z_]+",/ { split($0, f, "\""); print t "." f[2] }
	/^};/ { t = "" }' actuator/config/config.c | sort -u)
if [ -z "$page_keys" ] || [ -z "$code_keys" ]; then
	bad "no keys read from vmactd.json(5) or actuator/config/config.c"
fi
while IFS= read -r k; do
	[ -n "$k" ] || continue
	if grep -qx "$k" <<<"$code_keys"; then ok; else bad "vmactd.json(5) documents $k, which vmactd does not know"; fi
done <<<"$page_keys"
while IFS= read -r k; do
	[ -n "$k" ] || continue
	if grep -qx "$k" <<<"$page_keys"; then ok; else bad "vmactd.json(5) does not document $k"; fi
done <<<"$code_keys"
cfg=$(mktemp)
for k in $page_keys; do
	printf '{"%s":{"%s":{}}}' "${k%%.*}" "${k#*.}" >"$cfg"
	msg=$("$dest/usr/sbin/vmactd" --check-config -c "$cfg" 2>&1)
	if [[ $msg == *"unknown key"* ]]; then bad "vmactd.json(5): $k: $msg"; else ok; fi
done
rm -f "$cfg"

# Bash completion.
comp() {
	# comp FILE WORD... : what completing the last word offers.
	local file=$1; shift
	bash --norc --noprofile -c '
		source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		case $1 in vmactl) _vmactl ;; vmactd) _vmactd ;; vmact-arbiter) _vmact_arbiter ;; esac
		printf "%s\n" "${COMPREPLY[@]}"' comp "$file" "$@" | sort | tr '\n' ' '
}
cf=$dest/usr/share/bash-completion/completions/vmactl
check_comp() {
	local want=$1; shift
	local got
	got=$(comp "$cf" "$@")
	if [ "$got" = "$want " ]; then ok; else bad "completion of '$*': '$got', wanted '$want'"; fi
}
check_comp "set show status" vmactl s
check_comp "--help --json --socket --version" vmactl --socket /tmp/x --
check_comp "--follow" vmactl events --f
check_comp "--max-cpu --max-mem --max-memory" vmactl set vm1 --max
check_comp "pause" vmactl --json pa
check_comp "--check-config --config" vmactd --c
check_comp "--watermark" vmact-arbiter --wat
for c in vmactd vmact-arbiter; do
	if cmp -s "$cf" "$dest/usr/share/bash-completion/completions/$c"; then ok
	else bad "completion for $c differs from vmactl's"; fi
done

# make uninstall removes every file make install put there.
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s "$@" PREFIX=$prefix DESTDIR="$dest" uninstall >"$dest.log" 2>&1; then
	left=$(find "$dest" -type f -o -type l)
	if [ -z "$left" ]; then ok; else bad "left after make uninstall: $left"; fi
else
	bad "make uninstall failed: $(cat "$dest.log")"
fi
rm -f "$dest.log"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

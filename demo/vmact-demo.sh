#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# vmact's demo (`make demo`, README "Quickstart"): boots the TCG test guest
# (tests/guest) with vmact metadata (1-4 vCPUs, 512Mi-2Gi), starts vmactd
# with its defaults and the embedded arbiter, runs a load phase and an idle
# phase inside the guest, shows vmactd's events as they happen
# (`vmactl events --follow`), and ends with a summary: the sizes reached
# and the reaction times, and a plot (PNG, gnuplot) of the VM's vCPUs, CPU
# quota and memory against its load over the run, whose path it prints
# last. Ctrl-C or SIGTERM end it as cleanly as its own
# end: vmactd stopped (its BPF pins go with it), the guest destroyed, the
# temporary directory removed.
#
# `make demo` prepares the host (tests/host/setup-host.sh), builds vmact and the
# guest first; run alone, this script expects them built. Environment:
#   VMACT_DEMO_SHORT=1     short phases (the test, tests/integration/test_demo.c)
#   VMACT_DEMO_BUILD       where vmactd and vmactl are (default: build/)
#   VMACT_GUEST_DIR        the guest's kernel and initrd (default: build/guest)
#   VMACT_DEMO_CAPACITY=host  keep the arbiter's capacity at this host's
#                          (default: declare enough for the guest's 4 CPUs)
#   VMACT_DEMO_OUT         where the plot and its data go (default:
#                          VMACT_DEMO_BUILD/demo); kept after the demo
# Everything it creates carries its PID: the domain vmact-demo-PID, the
# temporary directory /tmp/vmact-demo-PID.*, the pins /sys/fs/bpf/vmact-demo-PID.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
build=${VMACT_DEMO_BUILD:-$top/build}
guestdir=${VMACT_GUEST_DIR:-$top/build/guest}
outdir=${VMACT_DEMO_OUT:-$build/demo}
short=${VMACT_DEMO_SHORT:-}
[ "$short" = 0 ] && short=
name=vmact-demo-$$
pins=/sys/fs/bpf/$name
uri=qemu:///system
start=$(date +%s.%N)

# Bounds of the demo guest (its metadata below).
min_cpu=1 max_cpu=4 min_mem=512Mi max_mem=2Gi
# Phases, seconds: load with 2 busy loops, then 3 (full mode only); idle
# until vmactd has the guest back at its minimum, at most idle_limit.
if [ -n "$short" ]; then
	load2=12 load3=0 idle_limit=120 idle_tail=0
else
	load2=40 load3=30 idle_limit=180 idle_tail=5
fi
# Safety limits, far above a normal run: the guest's boot, vmactd's start,
# the first resize (a load phase lasts at least until then).
boot_limit=240 ready_limit=120 resize_limit=120

# The demo's own lines in bold on a terminal, plain in a file.
if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold="" plain=""; fi
say() { printf '%s[demo %6.1fs]%s %s\n' "$bold" "$(elapsed)" "$plain" "$*"; }
die() { printf 'vmact-demo: error: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
since() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# past T S: at least S seconds have gone by since T.
past() { awk -v t="$1" -v s="$2" -v n="$(now)" 'BEGIN { exit !(n - t >= s) }'; }

[ "$(id -u)" -eq 0 ] || die "must run as root (libvirt's system domains, BPF, cgroups): sudo make demo"
for f in "$build/vmactd" "$build/vmactl" "$guestdir/vmlinuz" "$guestdir/initrd.img"; do
	[ -e "$f" ] || die "$f is missing: run make demo (it builds vmact and the guest first)"
done
for c in virsh socat jq gnuplot; do
	command -v "$c" >/dev/null || die "$c is missing: run make demo (tests/host/setup-host.sh installs it)"
done

tmp=$(mktemp -d "/tmp/$name.XXXXXX") || die "cannot create a temporary directory"
vmactd_pid="" follow_pid="" sampler_pid="" guest_started="" interrupted=""

# Everything the demo started goes, whichever way it ends. vmactd gets one
# SIGTERM (it unpins its BPF maps and closes its connections), and SIGKILL
# only if it has not exited 30 s later; then the guest is destroyed.
# stop_child PID: SIGTERM, and SIGKILL if it is still there 2 s later
# (vmactl events --follow finishes its long poll before it exits).
stop_child() {
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq 1 20); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# shellcheck disable=SC2317 # called by the traps
cleanup() {
	local rc=$?
	trap '' INT TERM HUP PIPE
	[ -n "$interrupted" ] && rc=$interrupted
	say "cleaning up"
	[ -n "$follow_pid" ] && stop_child "$follow_pid"
	[ -n "$sampler_pid" ] && stop_child "$sampler_pid"
	if [ -n "$vmactd_pid" ]; then
		kill -TERM "$vmactd_pid" 2>/dev/null
		for _ in $(seq 1 300); do
			kill -0 "$vmactd_pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$vmactd_pid" 2>/dev/null; then
			say "vmactd did not stop within 30 s: killing it"
			kill -KILL "$vmactd_pid" 2>/dev/null
		fi
		wait "$vmactd_pid" 2>/dev/null
		vmactd_rc=$?
		say "vmactd stopped (exit status $vmactd_rc)"
		[ "$vmactd_rc" -ne 0 ] && [ "$rc" -eq 0 ] && rc=1
	fi
	# A killed vmactd leaves its maps pinned.
	if [ -d "$pins" ]; then
		rm -f "$pins"/* 2>/dev/null
		rmdir "$pins" 2>/dev/null
	fi
	if [ -n "$guest_started" ]; then
		virsh -q -c "$uri" destroy "$name" >/dev/null 2>&1
		say "guest $name destroyed"
	fi
	rm -f "/var/log/libvirt/qemu/$name.log"
	[ -n "$tmp" ] && rm -rf "$tmp"
	say "done: nothing of the demo is left (libvirtd keeps running)"
	exit "$rc"
}
# shellcheck disable=SC2317
on_signal() {
	interrupted=$1
	printf '\n'
	say "interrupted"
	exit "$1"
}
trap cleanup EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap 'on_signal 129' HUP

# Sleeps in short steps so that a signal is handled within 0.1 s.
pause() {
	local end
	end=$(awk -v t="$(now)" -v d="$1" 'BEGIN { printf "%.3f", t + d }')
	while awk -v t="$(now)" -v e="$end" 'BEGIN { exit !(t < e) }'; do sleep 0.1; done
}

# ---- the guest's and vmactd's view ---------------------------------------
serial=$tmp/$name.log ctl=$tmp/$name.ctl log=$tmp/vmactd.log sock=$tmp/vmactd.sock

# The guest's latest "VMACT seq= cpus= ..." status line (tests/guest/init),
# as "CPUS MEMTOTAL_KB BUSY", or nothing before the first.
guest_status() {
	tr -d '\000' <"$serial" 2>/dev/null |
		sed -n 's/.*VMACT seq=[0-9]* cpus=\([0-9]*\) memtotal_kb=\([0-9]*\) busy=\([0-9]*\).*/\1 \2 \3/p' |
		tail -n 1
}
guest_cpus() { local s; s=$(guest_status); echo "${s%% *}"; }
count_in_log() { grep -c -- "$1" "$log" 2>/dev/null; }
# The CPU of vmactd's latest "resized to CPU / MEM" line, in milli-CPUs.
last_resized_milli() {
	grep -o "$name: resized to [^ ]* CPU" "$log" 2>/dev/null | tail -n 1 |
		awk '{ q = $4; if (q ~ /m$/) { sub(/m$/, "", q); print q + 0 } else print q * 1000 }'
}

# Sends one command line to the guest's second serial port. QEMU's
# chardev serves one client: give the guest the bytes before hanging up.
guest_cmd() {
	local t
	t=$(now)
	(printf '%s\n' "$1"; sleep 0.1) | socat -u - "UNIX-CONNECT:$ctl" ||
		die "cannot send '$1' to the guest's command channel $ctl"
	past "$t" 1 && say "(sending '$1' took $(since "$t" "$(now)") s)"
}
# The guest's own report that it runs n busy loops.
guest_busy() { local s; s=$(guest_status); echo "${s##* }"; }

# ---- the plot ---------------------------------------------------------------
# Once a second, what vmactd says of the VM (vmactl --json status) and what
# the guest says it runs, one line each in $data: seconds since the start,
# vCPUs, CPU quota (CPUs; NaN: none), memory (MiB), load1, the CPUs its
# vCPU threads wanted (the reactive policy's demand; NaN before the first
# readout), the busy loops the guest reports.
data=$outdir/$name.tsv plot=$outdir/$name.png
sample() {
	"$build/vmactl" --socket "$sock" --json status 2>/dev/null |
		jq -r --arg t "$(elapsed)" --arg n "$name" --arg b "$(guest_busy)" '
			.vms[] | select(.name == $n and .vcpus != null) |
			[$t, .vcpus,
			 (if .quota_milli_cpu == null then "NaN" else .quota_milli_cpu / 1000 end),
			 (if .mem_bytes == null then "NaN" else .mem_bytes / 1048576 end),
			 (.load1 // "NaN"), (.demand.cpus // "NaN"),
			 (if $b == "" then "NaN" else $b end)] | @tsv' >>"$data"
}
sample_loop() {
	trap - EXIT INT TERM HUP
	while :; do
		sample
		sleep 1
	done
}
# Draws $data into $plot; false when there is nothing to draw.
draw_plot() {
	[ -s "$data" ] || return 1
	gnuplot 2>"$tmp/gnuplot.err" <<EOF || { cat "$tmp/gnuplot.err" >&2; return 1; }
set terminal pngcairo size 1100,620 font "sans,11"
set output "$plot"
set title "vmact demo: $name (bounds $min_cpu-$max_cpu CPU, $min_mem-$max_mem)"
set xlabel "seconds since the demo started"
set ylabel "CPUs"
set y2label "memory (MiB)"
set ytics nomirror
set y2tics
set yrange [0:$((max_cpu + 1))]
set y2range [0:*]
set key outside bottom center horizontal
set grid
set datafile missing "NaN"
plot "$data" using 1:7 with filledcurves x1 lc rgb "#f2c6a0" title "guest busy loops (its load)", \\
     "" using 1:6 with lines lw 2 lc rgb "#c0392b" title "demand: CPUs its vCPUs wanted", \\
     "" using 1:2 with steps lw 3 lc rgb "#1f4e99" title "vCPUs", \\
     "" using 1:3 with steps lw 2 dt 2 lc rgb "#2e86c1" title "CPU quota", \\
     "" using 1:5 with lines lw 1 lc rgb "#7d3c98" title "load1", \\
     "" using 1:4 axes x1y2 with steps lw 2 lc rgb "#1e8449" title "memory (MiB, right)"
EOF
	[ -s "$plot" ]
}

# ---- set-up ---------------------------------------------------------------
ncpu=$(nproc)
overcommit=""
if [ "${VMACT_DEMO_CAPACITY:-}" != host ]; then
	# The arbiter grants growth up to 90 % (arbiter.watermark) of the host's
	# CPUs: on a 2-CPU host 1.8, less than the guest's max of 4. Declare
	# enough capacity (arbiter.overcommit_cpu, in quarter steps) for 4.
	overcommit=$(awk -v n="$ncpu" -v m="$max_cpu" 'BEGIN {
		need = m / 0.9 / n; if (need <= 1) exit; q = int(need * 4); if (q < need * 4) q++; printf "%.2f", q / 4 }')
fi

cat <<EOF

  vmact demo: vmactd scales a TCG guest's vCPUs and CPU quota with its load.
  guest $name: 1 of $max_cpu vCPUs, bounds $min_cpu-$max_cpu CPUs / $min_mem-$max_mem (virtio-mem),
  compute unit 250m / 256Mi. vmactd: its defaults (reactive CPU policy, shrink by quota,
  the embedded arbiter), its own control socket, state and BPF pin directories.
EOF
if [ -n "$overcommit" ]; then
	cat <<EOF
  NOTE: this host has $ncpu CPUs; the arbiter grants up to 90 % of capacity ($(awk -v n="$ncpu" 'BEGIN { printf "%.2g", n * 0.9 }') CPUs here),
  which would cap the guest below its max of $max_cpu. The demo DECLARES a larger capacity:
  arbiter.overcommit_cpu $overcommit ($(awk -v n="$ncpu" -v o="$overcommit" 'BEGIN { printf "%g", n * o }') CPUs). More vCPUs than host CPUs only queue for them:
  on a small host the guest cannot really use what it is given.
  (VMACT_DEMO_CAPACITY=host keeps the host's real capacity.)
EOF
else
	echo "  The arbiter's capacity is this host's: $ncpu CPUs (growth up to 90 % of it)."
fi
cat <<EOF
  The test guest runs no vm-monitor or any other agent (a busybox initramfs), as most
  guests on a host: vmactd sizes it on the host's own evidence, its CPU from what BPF
  sees of its vCPU threads (shrinking by the quota), its memory from the balloon's
  statistics.
  Phases: busy 2 for ${load2} s$([ "$load3" -gt 0 ] && echo ", busy 3 for ${load3} s"), then idle until back at the minimum. Ctrl-C ends it cleanly.

EOF

# The guest's domain: tests/guest/domain.xml.in with the demo's metadata, a
# virtio-mem device big enough for the max (boot 512 MiB + 1.5 GiB = 2 GiB)
# and a balloon reporting memory statistics every second (vmactd's memory
# readings).
meta="<metadata><vmact:autoscaling xmlns:vmact='https://vmact.dev/xmlns/vmact/1' enabled='true'>"
meta+="<vmact:cpu min='$min_cpu' max='$max_cpu'/>"
meta+="<vmact:memory min='$min_mem' max='$max_mem' method='virtio-mem'/>"
meta+="<vmact:compute-unit cpu='250m' memory='256Mi'/>"
meta+="</vmact:autoscaling></metadata>"
guestabs=$(cd "$guestdir" && pwd)
sed -e "s|@NAME@|$name|g" -e "s|@GUEST@|$guestabs|g" -e "s|@RUN@|$tmp|g" \
    -e "s|@METADATA@|$meta|" -e "s|@CMDLINE@||" \
    -e "s|<size unit='KiB'>1048576</size>|<size unit='KiB'>1572864</size>|" \
    -e "s|<memballoon model='none'/>|<memballoon model='virtio'><stats period='1'/></memballoon>|" \
    "$top/tests/guest/domain.xml.in" >"$tmp/domain.xml" || die "cannot write the domain XML"
if ! grep -q "<size unit='KiB'>1572864</size>" "$tmp/domain.xml" ||
   ! grep -q "memballoon model='virtio'" "$tmp/domain.xml"; then
	die "tests/guest/domain.xml.in changed: the demo's edits no longer apply"
fi

cat >"$tmp/vmactd.json" <<EOF
{
  "libvirt": {"name_prefix": "$name"},
  "control": {"socket": "$sock", "state_dir": "$tmp"},
  "sampler": {"pin_root": "$pins"}$([ -n "$overcommit" ] && printf ',\n  "arbiter": {"overcommit_cpu": %s}' "$overcommit")
}
EOF
"$build/vmactd" --check-config --config "$tmp/vmactd.json" >/dev/null || die "vmactd refused the demo's configuration"

say "temporary directory $tmp"

say "booting guest $name under TCG (QEMU without KVM: 5-30 s here)"
guest_started=1
# (virsh on a terminal warns that polkit is absent: only its errors matter.)
if ! virsh -q -c "$uri" create "$tmp/domain.xml" >"$tmp/virsh.out" 2>&1 </dev/null; then
	guest_started=""
	cat "$tmp/virsh.out" >&2
	die "virsh create failed"
fi
t=$(now)
until [ -n "$(guest_status)" ]; do
	past "$t" "$boot_limit" &&
		die "the guest did not report within $boot_limit s (its console: $serial)"
	pause 0.2
done
read -r c m _ <<<"$(guest_status)"
say "guest up: $c CPU, $(( m / 1024 )) MiB"

# vmactd in its own session: a Ctrl-C in the terminal reaches the demo,
# which stops vmactd with one SIGTERM (a second signal would make it exit
# without its orderly shutdown).
setsid "$build/vmactd" --config "$tmp/vmactd.json" >"$log" 2>&1 </dev/null &
vmactd_pid=$!
say "vmactd started (pid $vmactd_pid, log $log)"
t=$(now)
until grep -q "ready: managing 1 VM" "$log" 2>/dev/null; do
	kill -0 "$vmactd_pid" 2>/dev/null || { cat "$log" >&2; vmactd_pid=""; die "vmactd exited"; }
	past "$t" "$ready_limit" &&
		die "vmactd was not managing the guest within $ready_limit s (log: $log)"
	pause 0.2
done
say "vmactd manages $name; its events follow (vmactl events --follow):"
"$build/vmactl" --socket "$sock" events --follow --vm "$name" </dev/null &
follow_pid=$!
mkdir -p "$outdir" || die "cannot create $outdir"
: >"$data"
sample_loop </dev/null &
sampler_pid=$!

# ---- phases -----------------------------------------------------------------
# Polls every 0.1 s and notes the first time each thing is seen: the
# reaction times below have that resolution (plus the guest's 0.2 s
# status interval for what the guest sees).
guest_seen=$(guest_cpus) max_guest_cpus=$guest_seen
watch_guest() {
	local c
	c=$(guest_cpus)
	if [ -n "$c" ] && [ "$c" != "$guest_seen" ]; then
		say "the guest sees $c CPUs"
		guest_seen=$c
		[ "$c" -gt "$max_guest_cpus" ] && max_guest_cpus=$c
	fi
}

resizes_before=$(count_in_log ": resizing from")
t_load=$(now)
say "load phase: 'busy 2' in the guest (2 busy loops on 1 vCPU)"
guest_cmd "busy 2"
t_first_resize="" t_guest_2="" t_busy=""
phase_end=$(awk -v t="$t_load" -v d="$load2" 'BEGIN { printf "%.3f", t + d }')
limit_end=$(awk -v t="$t_load" -v d="$resize_limit" 'BEGIN { printf "%.3f", t + d }')
while :; do
	watch_guest
	if [ -z "$t_busy" ] && [ "$(guest_busy)" = 2 ]; then
		t_busy=$(now)
		say "the guest runs 2 busy loops"
	fi
	if [ -z "$t_first_resize" ] && [ "$(count_in_log ": resizing from")" -gt "$resizes_before" ]; then
		t_first_resize=$(now)
	fi
	if [ -z "$t_guest_2" ] && [ -n "$guest_seen" ] && [ "$guest_seen" -ge 2 ]; then
		t_guest_2=$(now)
	fi
	n=$(now)
	if awk -v n="$n" -v e="$phase_end" 'BEGIN { exit !(n >= e) }'; then
		[ -n "$t_first_resize" ] && break
		awk -v n="$n" -v e="$limit_end" 'BEGIN { exit !(n >= e) }' && break
	fi
	sleep 0.1
done
if [ "$load3" -gt 0 ]; then
	say "load phase: 'busy 3' in the guest"
	guest_cmd "busy 3"
	phase_end=$(awk -v t="$(now)" -v d="$load3" 'BEGIN { printf "%.3f", t + d }')
	while awk -v n="$(now)" -v e="$phase_end" 'BEGIN { exit !(n < e) }'; do
		watch_guest
		[ -z "$t_guest_2" ] && [ "${guest_seen:-0}" -ge 2 ] && t_guest_2=$(now)
		sleep 0.1
	done
fi

t_idle=$(now)
resized_before_idle=$(count_in_log ": resized to ")
say "idle phase: 'idle' in the guest; vmactd shrinks it once its demand has stayed low (about 15-20 s)"
guest_cmd "idle"
t_min=""
idle_end=$(awk -v t="$t_idle" -v d="$idle_limit" 'BEGIN { printf "%.3f", t + d }')
while awk -v n="$(now)" -v e="$idle_end" 'BEGIN { exit !(n < e) }'; do
	watch_guest
	if [ "$(count_in_log ": resized to ")" -gt "$resized_before_idle" ] &&
	   [ "$(last_resized_milli)" = "$((min_cpu * 1000))" ]; then
		t_min=$(now)
		break
	fi
	sleep 0.1
done
[ -n "$t_min" ] && [ "$idle_tail" -gt 0 ] && pause "$idle_tail"

# ---- summary -------------------------------------------------------------
stop_child "$follow_pid"
follow_pid=""
stop_child "$sampler_pid"
sampler_pid=""
# The end state too (the last resize may be less than a second old).
sample
resizes=$(count_in_log ": resized to ")
peak=$(grep -o "$name: resized to [^ ]* CPU / [^ ]*" "$log" | awk '
	function milli(q) { if (q ~ /m$/) { sub(/m$/, "", q); return q + 0 } return q * 1000 }
	function mib(q) { if (q ~ /Gi$/) { sub(/Gi$/, "", q); return q * 1024 }
			  if (q ~ /Mi$/) { sub(/Mi$/, "", q); return q + 0 }
			  if (q ~ /Ki$/) { sub(/Ki$/, "", q); return q / 1024 } return q / 1048576 }
	{ c = milli($4); m = mib($7); if (c > mc) mc = c; if (m > mm) mm = m }
	END { if (NR) printf "%.2f CPU, %d MiB", mc / 1000, mm }')
vcpus_now=$(virsh -q -c "$uri" vcpucount "$name" --live --active 2>/dev/null | tr -d ' ')
echo
echo "==== vmact demo summary ($( [ -n "$short" ] && echo short || echo full ) mode, $ncpu-CPU host, TCG) ===="
echo "resizes completed:          $resizes"
echo "largest size reached:       ${peak:-none} (bounds $min_cpu-$max_cpu CPU, $min_mem-$max_mem)"
echo "most CPUs the guest saw:    $max_guest_cpus"
echo "vCPUs plugged at the end:   ${vcpus_now:-?} (a shrink lowers the quota and keeps them: policy.cpu_shrink quota)"
if [ -n "$t_busy" ]; then
	echo "busy 2 -> guest busy:       $(since "$t_load" "$t_busy") s (the guest's status line says busy=2)"
fi
if [ -n "$t_first_resize" ]; then
	echo "busy 2 -> first resize:     $(since "$t_load" "$t_first_resize") s"
else
	echo "busy 2 -> first resize:     none within the load phase"
fi
if [ -n "$t_guest_2" ]; then
	echo "busy 2 -> guest sees 2 CPUs: $(since "$t_load" "$t_guest_2") s"
else
	echo "busy 2 -> guest sees 2 CPUs: not seen"
fi
if [ -n "$t_min" ]; then
	echo "idle -> back at $min_cpu CPU:      $(since "$t_idle" "$t_min") s"
else
	echo "idle -> back at $min_cpu CPU:      not within $idle_limit s"
fi
echo "(times measured by this script polling every 0.1 s; the guest reports every 0.2 s)"
[ -n "$overcommit" ] && echo "(arbiter capacity declared: overcommit_cpu $overcommit on $ncpu host CPUs)"
echo
[ "$resizes" -gt 0 ] || { say "vmactd resized nothing"; exit 1; }
if draw_plot; then
	echo "plot: $plot"
	echo "      (its data: $data; vCPUs, quota and memory against the guest's load)"
else
	say "no plot: nothing was sampled into $data"
	exit 1
fi
exit 0

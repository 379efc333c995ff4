#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make check-host, inside the Debian 12 machine (tests/host/check-host.sh
# boots it; vmact-check.service runs this from the host's 9p share at
# /mnt/host, as root, under systemd). Installs vmact by the README's
# install section, its lines run as they are in a clean clone of the tree
# (the host's HEAD), and puts a VM under it with vmactl enable; then shows
# with the real systemd, cgroup v2 and libvirt of a stock host: the unit
# starts, reloads and survives a libvirtd restart;
# its sandbox as the kernel shows it on vmactd; its log lines in the
# journal with their priorities; vmactd growing and shrinking a nested TCG
# test guest through the guest's cgroup under machine.slice, with the BPF
# sampler loaded; vmact-cluster's units idle until configured; then an
# upgrade to a newer build of both packages (the same source, a bumped
# version), their removal and their purge, each leaving what Debian's
# policy says. Every check prints "PASS: ..." or "FAIL: ..." (also into
# /mnt/host/report.txt); the last line is "N passed, M failed". Checks it
# cannot make say "NOT SHOWN: ..." and why.
set -u

share=/mnt/host
report=$share/report.txt
: >"$report"
start=$(date +%s)
passed=0 failed=0
t() { echo $(( $(date +%s) - start )); }
say() { printf 'check-host [%5ss] %s\n' "$(t)" "$*" | tee -a "$report"; }
pass() { passed=$((passed + 1)); say "PASS: $*"; }
fail() { failed=$((failed + 1)); say "FAIL: $*"; }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
notshown() { say "NOT SHOWN: $*"; }
# wait_for SECONDS WHAT CMD...: polls CMD every 2 s until it succeeds;
# on a timeout, what vmactd says of the guest (once it has one).
wait_for() {
	local limit=$1 what=$2 t0
	shift 2
	t0=$(date +%s)
	until "$@"; do
		if [ $(( $(date +%s) - t0 )) -ge "$limit" ]; then
			fail "$what (not within $limit s)"
			if [ -n "${name:-}" ] && command -v vmactl >/dev/null; then
				vmactl show "$name" 2>&1 | sed 's/^/    show: /' | tee -a "$report"
				vmactl events --vm "$name" 2>&1 | tail -n 15 | sed 's/^/    event: /' | tee -a "$report"
			fi
			return 1
		fi
		sleep 2
	done
	pass "$what ($(( $(date +%s) - t0 )) s)"
}
finish() {
	say "$passed passed, $failed failed"
	echo "$passed $failed" >"$share/result"
	sync
	# vmact-check.service's SuccessAction= has not powered the machine
	# off in every run: asked here too.
	systemctl --no-block poweroff
	exit 0
}
vmlog() { journalctl -u vmactd.service -o cat --no-pager 2>/dev/null; }
vmlog_has() { vmlog | grep -q -- "$1"; }

say "machine: $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo)"
say "systemd $(systemctl --version | sed -n '1s/systemd \([0-9]*\).*/\1/p'), libvirt $(dpkg-query -W -f='${Version}' libvirt-daemon), QEMU $(dpkg-query -W -f='${Version}' qemu-system-x86)"

# ---- the platform ------------------------------------------------------------
check "PID 1 is systemd ($(readlink /proc/1/exe))" [ "$(readlink /proc/1/exe)" = /usr/lib/systemd/systemd ]
check "cgroup v2 only: /sys/fs/cgroup is cgroup2, no v1 hierarchy mounted" \
	bash -c '[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] && ! grep -q " cgroup " /proc/mounts'
check "libvirtd runs under systemd" systemctl is-active -q libvirtd.service

# ---- install: the README's install section, verbatim, in a clean clone ------
deb=$(ls "$share"/vmact_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || { fail "no vmact .deb in the share"; finish; }
check "no /etc/vmact/vmactd.json before the install (a stock install needs none)" [ ! -e /etc/vmact/vmactd.json ]
check "getent passwd vmact: no such user before the install" bash -c '! getent passwd vmact >/dev/null'
src=/root/vmact
readme_ok=0
if [ ! -e "$share/vmact.bundle" ]; then
	notshown "the README's install section: VMACT_HOST_README=0 (a quick run on the host's build)"
elif git clone -q "$share/vmact.bundle" "$src" >/root/clone.log 2>&1; then
	pass "git clone of the tree ($(git -C "$src" log -1 --format='%h %s' | cut -c1-60))"
	# The lines between the README's markers, without the code fence.
	sed -n '/<!-- install:begin/,/<!-- install:end -->/p' "$src/README.md" | sed '1d;$d' | sed '/^```/d' \
		>/root/readme-install.sh
	say "the README's install section ($(grep -c . /root/readme-install.sh) lines):"
	sed 's/^/    | /' /root/readme-install.sh | tee -a "$report"
	t0=$(date +%s)
	if (cd "$src" && bash -e -x /root/readme-install.sh) >/root/readme.log 2>&1; then
		readme_ok=1
		pass "the README's install section ran in the clone, every line exiting 0 ($(( $(date +%s) - t0 )) s under TCG)"
	else
		fail "the README's install section failed ($(( $(date +%s) - t0 )) s); its end:"
		tail -n 25 /root/readme.log | sed 's/^/    /' | tee -a "$report"
	fi
	cp /root/readme.log "$share/readme.log" 2>/dev/null
	grep -E '^  (LINTIAN|DEB) |^build/deb/|^(W|E): ' /root/readme.log | sed 's/^/    /' | tee -a "$report"
else
	fail "git clone of the share's bundle: $(cat /root/clone.log)"
fi
if [ $readme_ok = 1 ]; then
	check "systemctl status vmactd: active (the section's last line)" systemctl is-active -q vmactd.service
	debs=$src/build/deb
else
	# The rest of the checks on the host's build of the same tree.
	say "installing the host's build instead: dpkg -i $(basename "$deb")"
	cp "$deb" /root/
	DEBIAN_FRONTEND=noninteractive dpkg -i "/root/$(basename "$deb")" >/root/dpkg.log 2>&1 ||
		{ fail "dpkg -i $(basename "$deb"): $(tail -n 5 /root/dpkg.log)"; finish; }
	debs=$share
fi
version=$(dpkg-query -W -f='${Version}' vmact 2>/dev/null)
check "vmact $version installed (dpkg: install ok installed)" \
	bash -c '[ "$(dpkg-query -W -f="\${Status}" vmact)" = "install ok installed" ]'
check "postinst created the system user vmact ($(getent passwd vmact))" \
	bash -c 'u=$(getent passwd vmact) && [ "$(cut -d: -f3 <<<"$u")" -lt 1000 ]'
check "postinst enabled vmactd.service ($(systemctl is-enabled vmactd.service))" \
	systemctl is-enabled -q vmactd.service
wait_for 300 "postinst started vmactd.service (active, READY=1 sent)" systemctl is-active -q vmactd.service
check "the hook: /etc/libvirt/hooks/qemu.d/vmact -> $(readlink /etc/libvirt/hooks/qemu.d/vmact), no program in /etc" \
	bash -c '[ -L /etc/libvirt/hooks/qemu.d/vmact ] && [ "$(readlink /etc/libvirt/hooks/qemu.d/vmact)" = /usr/sbin/vmact-hook ] && [ -x /usr/sbin/vmact-hook ]'
check "the package has no conffile (dpkg-query Conffiles empty)" \
	bash -c '[ -z "$(dpkg-query -W -f="\${Conffiles}" vmact)" ]'

# The host may have to take a lock before guests and daemons run here
# (tests/host/check-host.sh, VMACT_HOST_LOCK): asked for, and waited for.
touch "$share/ready"
say "waiting for the host's go"
until [ -e "$share/go" ]; do sleep 2; done
say "the host's go"

# ---- a VM enabled, as the README's next section does it -----------------------
check "vmactl enable on a defined domain with no vmact metadata (the test guest's layout)" bash -c '
	mkdir -p /var/lib/libvirt/images/vmact-enable &&
	sed -e "s|@NAME@|vmhost-enable|g" -e "s|@GUEST@|/var/lib/libvirt/images/vmact-enable|g" \
	    -e "s|@RUN@|/var/lib/libvirt/images/vmact-enable|g" -e "s|@METADATA@||" -e "s|@CMDLINE@||" \
	    '"$share"'/domain.xml.in >/root/enable.xml &&
	virsh -q define /root/enable.xml >/root/enable.log 2>&1 &&
	vmactl enable vmhost-enable >>/root/enable.log 2>&1'
say "vmactl enable: $(tail -n 3 /root/enable.log | tr '\n' ' ')"
check "its definition now has enabled='true' vmact metadata" \
	bash -c 'virsh metadata vmhost-enable https://vmact.dev/xmlns/vmact/1 --config 2>/dev/null | grep -q "enabled=.true."'
virsh -q undefine vmhost-enable >/dev/null 2>&1

# ---- vmact-cluster: installed, idle until configured ----------------------------
cdeb=$(ls "$debs"/vmact-cluster_*.deb 2>/dev/null | head -n 1)
if DEBIAN_FRONTEND=noninteractive apt-get install -y "$cdeb" >/root/cluster.log 2>&1; then
	pass "apt-get install $(basename "$cdeb")"
else
	fail "apt-get install $(basename "$cdeb"): $(tail -n 5 /root/cluster.log)"
fi
check "postinst created vmact-cluster ($(getent passwd vmact-cluster)), in libvirt's group ($(id -nG vmact-cluster 2>/dev/null))" \
	bash -c 'id -nG vmact-cluster | grep -qw libvirt'
check "its home /var/lib/vmact-cluster made ($(stat -c '%U %a' /var/lib/vmact-cluster 2>/dev/null))" \
	bash -c '[ "$(stat -c "%U %a" /var/lib/vmact-cluster)" = "vmact-cluster 700" ]'
for u in vmact-groupd.service vmact-cloudprovider.service; do
	check "$u enabled, not started: no /etc/vmact/groupd.json ($(systemctl is-active $u), ConditionResult=$(systemctl show -p ConditionResult --value $u))" \
		bash -c "systemctl is-enabled -q $u && ! systemctl is-active -q $u"
done

pid=$(systemctl show -p MainPID --value vmactd.service)
say "vmactd: pid $pid; $(vmlog | grep -m1 'started (')"
check "vmactd started on the default configuration (no file)" vmlog_has "started (libvirt qemu:///system"

# ---- the sandbox, as the kernel applies it to the running daemon ------------
st=/proc/$pid/status
say "$(grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs|Seccomp|Seccomp_filters):' "$st" | tr '\t\n' '  ')"
# CAP_BPF 39, CAP_PERFMON 38, CAP_NET_ADMIN 12, CAP_SETUID 7, CAP_SETGID 6.
want=000000c0000010c0
check "CapBnd = $want (CAP_BPF CAP_PERFMON CAP_NET_ADMIN CAP_SETUID CAP_SETGID only)" \
	grep -q "^CapBnd:[[:space:]]*$want$" "$st"
check "CapEff = $want" grep -q "^CapEff:[[:space:]]*$want$" "$st"
check "NoNewPrivs: 1" grep -q '^NoNewPrivs:[[:space:]]*1$' "$st"
check "Seccomp: 2 (a filter loaded by systemd)" grep -q '^Seccomp:[[:space:]]*2$' "$st"
check "vmactd has its own mount namespace (ProtectSystem=, PrivateTmp=)" \
	[ "$(readlink "/proc/$pid/ns/mnt")" != "$(readlink /proc/1/ns/mnt)" ]
# mount options of MOUNTPOINT in vmactd's namespace (mountinfo field 6)
mnt_opts() { awk -v m="$1" '$5 == m { print $6 }' "/proc/$pid/mountinfo" | tail -n 1; }
for m in / /sys /proc/sys; do
	check "$m is read-only for vmactd ($(mnt_opts "$m"))" bash -c "[[ '$(mnt_opts "$m")' == ro* ]]"
done
for m in /sys/fs/cgroup /sys/fs/bpf; do
	check "$m is writable for vmactd ($(mnt_opts "$m"))" bash -c "[[ '$(mnt_opts "$m")' == rw* ]]"
done
sec=$(systemd-analyze security --no-pager vmactd.service 2>/dev/null | grep 'Overall exposure')
say "systemd-analyze security (live): ${sec:-none}"
check "exposure below 5.0" awk -v s="$(sed -n 's/.*vmactd.service: \([0-9.]*\) .*/\1/p' <<<"$sec")" 'BEGIN { exit !(s != "" && s < 5.0) }'

# ---- journald, with priorities ------------------------------------------------
check "journal: vmactd's start line at priority info (6)" \
	bash -c 'journalctl -u vmactd.service -o json --no-pager | grep "started (libvirt" | grep -q "\"PRIORITY\":\"6\""'
# A broken configuration: the reload keeps the running one and says so at
# priority err.
mkdir -p /etc/vmact
echo '{"policy": {"tick_ms": "fast"}}' >/etc/vmact/vmactd.json
check "systemctl reload vmactd with a broken /etc/vmact/vmactd.json" systemctl reload vmactd.service
wait_for 60 "journalctl -p err shows the reload's refusal" \
	bash -c 'journalctl -u vmactd.service -p err -o cat --no-pager | grep -q "reload: configuration:.*running configuration is kept"'
check "vmactd kept running the same process ($pid)" \
	[ "$(systemctl show -p MainPID --value vmactd.service)" = "$pid" ]
# policy.cpu is applied live (info); policy.tick_ms needs a restart
# (warning): the same reload shows both priorities.
echo '{"policy": {"cpu": "neon", "tick_ms": 500}}' >/etc/vmact/vmactd.json
check "systemctl reload vmactd with a valid file" systemctl reload vmactd.service
wait_for 60 "journalctl -p info..info: the reload applied policy.cpu" \
	bash -c 'journalctl -u vmactd.service -p info..info -o cat --no-pager | grep -q "reload: policy.cpu changed: applied"'
wait_for 60 "journalctl -p warning..warning: policy.tick_ms needs a restart" \
	bash -c 'journalctl -u vmactd.service -p warning..warning -o cat --no-pager | grep -q "reload: policy.tick_ms changed: needs a restart"'
rm -f /etc/vmact/vmactd.json
systemctl reload vmactd.service
say "priorities in vmactd's journal so far: $(journalctl -u vmactd.service -o json --no-pager | grep -o '"PRIORITY":"[0-9]"' | sort | uniq -c | tr -s ' \n' ' ')"

# ---- a nested TCG test guest under vmactd --------------------------------------
name=vmhost-guest
run=/var/lib/libvirt/images/vmact-check
mkdir -p "$run"
cp "$share/guest/vmlinuz" "$share/guest/initrd.img" "$run/"
chown -R libvirt-qemu:kvm "$run" 2>/dev/null
mkdir -p /run/vmact-check
# The vm-monitor stand-in (the busybox guest runs none): approves every
# downscale. The guest worker (user vmact) connects to its socket.
# Its stdin stays open (at EOF it quits): a sleep feeds it nothing.
NODE_PATH=$share/node_modules node "$share/vm-monitor.js" --unix /run/vmact-check/monitor.sock \
	--no-cgroup < <(sleep infinity) >/run/vmact-check/monitor.log 2>&1 &
monitor_pid=$!
wait_for 60 "the vm-monitor stand-in listens" test -S /run/vmact-check/monitor.sock
chmod 0666 /run/vmact-check/monitor.sock
meta="<metadata><vmact:autoscaling xmlns:vmact='https://vmact.dev/xmlns/vmact/1' enabled='true'>"
meta+="<vmact:cpu min='1' max='4'/><vmact:memory min='512Mi' max='1536Mi' method='virtio-mem'/>"
meta+="<vmact:compute-unit cpu='250m' memory='256Mi'/>"
meta+="<vmact:monitor endpoint='unix:/run/vmact-check/monitor.sock'/>"
meta+="</vmact:autoscaling></metadata>"
# One status line a second (the test guest's vmact.report=1), not five:
# under nested TCG the reporter alone would keep its vCPU busy.
sed -e "s|@NAME@|$name|g" -e "s|@GUEST@|$run|g" -e "s|@RUN@|$run|g" \
    -e "s|@METADATA@|$meta|" -e "s|@CMDLINE@|vmact.report=1|" "$share/domain.xml.in" >/root/domain.xml
serial=$run/$name.log ctl=$run/$name.ctl
guest_status() {
	tr -d '\000' <"$serial" 2>/dev/null |
		sed -n 's/.*VMACT seq=[0-9]* cpus=\([0-9]*\) memtotal_kb=\([0-9]*\) busy=\([0-9]*\).*/\1 \2 \3/p' | tail -n 1
}
guest_cpus() { local s; s=$(guest_status); echo "${s%% *}"; }
guest_cmd() { (printf '%s\n' "$1"; sleep 0.5) | socat -u - "UNIX-CONNECT:$ctl"; }
if virsh -q create /root/domain.xml >/root/virsh.log 2>&1; then
	pass "virsh create $name (nested TCG: QEMU without KVM inside QEMU TCG)"
else
	fail "virsh create: $(cat /root/virsh.log)"
	finish
fi
qpid=$(cat "/run/libvirt/qemu/$name.pid")
qcg=$(sed -n 's/^0:://p' "/proc/$qpid/cgroup")
say "QEMU pid $qpid in cgroup $qcg"
check "the guest's QEMU runs under machine.slice (cgroup v2, systemd-machined)" \
	bash -c "[[ '$qcg' == /machine.slice/machine-qemu* ]]"
wait_for 2400 "the guest booted and reports its status (nested TCG boot)" bash -c '[ -n "$(tr -d "\000" <'"$serial"' 2>/dev/null | grep "VMACT seq=")" ]'
wait_for 600 "vmactd manages $name" vmlog_has "$name: managing ("
cg=$(vmlog | grep -m1 "$name: managing (" | sed -n 's/.*cgroup \([^,]*\),.*/\1/p')
say "vmactd: $(vmlog | grep -m1 "$name: managing (")"
cpumax() { cat "/sys/fs/cgroup/$cg/cpu.max" 2>/dev/null; }
say "cpu.max of $cg: $(cpumax)"
check "vmactd's cgroup for the VM is under /machine.slice" bash -c "[[ '$cg' == /machine.slice/* ]]"

# ---- libvirtd restarted under vmactd's feet ---------------------------------
check "systemctl restart libvirtd" systemctl restart libvirtd.service
wait_for 120 "vmactd reconnected to the new libvirtd (journal)" \
	bash -c 'journalctl -u vmactd.service -o cat --no-pager | grep -q "libvirt: reconnected"'
check "journalctl -p warning shows the lost connection at priority warning (4)" \
	bash -c 'journalctl -u vmactd.service -p warning..warning -o cat --no-pager | grep -q "libvirt: connection lost"'
check "vmactd survived it: same process ($pid), still active" \
	bash -c "[ \"\$(systemctl show -p MainPID --value vmactd.service)\" = $pid ] && systemctl is-active -q vmactd.service"
wait_for 300 "vmactl status still lists $name" bash -c "vmactl status | grep -q '$name'"
# The hook: libvirtd read /etc/libvirt/hooks/qemu.d/vmact at this restart
# (it reads the directory when it starts). A domain whose metadata is
# invalid (min above max) starts anyway; the hook's warning must reach the
# journal, since libvirtd drops the stderr of a hook that exits 0.
bad=vmhost-badmeta
badmeta="<metadata><vmact:autoscaling xmlns:vmact='https://vmact.dev/xmlns/vmact/1' enabled='true'>"
badmeta+="<vmact:cpu min='3' max='2'/><vmact:memory min='512Mi' max='1Gi'/></vmact:autoscaling></metadata>"
sed -e "s|@NAME@|$bad|g" -e "s|@GUEST@|$run|g" -e "s|@RUN@|$run|g" \
    -e "s|@METADATA@|$badmeta|" -e "s|@CMDLINE@||" "$share/domain.xml.in" >/root/bad.xml
check "virsh create $bad (invalid vmact metadata, no refuse-invalid): the start goes on" \
	bash -c 'virsh -q create /root/bad.xml >/root/bad.log 2>&1'
virsh -q destroy "$bad" >/dev/null 2>&1
wait_for 60 "journalctl -t vmact-hook -p warning shows the hook's line for $bad" \
	bash -c "journalctl -t vmact-hook -p warning -o cat --no-pager | grep -q '$bad: .*vmactd will not manage it'"
say "hook: $(journalctl -t vmact-hook -o cat --no-pager | grep "$bad" | tail -n 1)"
if [ -e /lib/systemd/system/virtqemud.service ]; then
	notshown "virtqemud is installed but this run uses the monolithic libvirtd"
else
	notshown "virtqemud: bookworm's libvirt $(dpkg-query -W -f='${Version}' libvirt-daemon) packages ship no modular daemons"
fi

# ---- the way down, growth, the way down again ------------------------------
# The kernel's own figure decides: the quota vmactd wrote into the VM's
# cgroup (cpu.max "QUOTA PERIOD"), one CPU or less, or more than one.
at_most_one() { read -r q p <"/sys/fs/cgroup/$cg/cpu.max" && [ "$q" != max ] && [ "$q" -le "$p" ]; }
above_one() { read -r q p <"/sys/fs/cgroup/$cg/cpu.max" && { [ "$q" = max ] || [ "$q" -gt "$p" ]; }; }
# The boot keeps a TCG guest's vCPU busy: vmactd may have grown it
# already. Idle first, so that the growth below is the load's.
say "idle in the guest"
guest_cmd "idle"
wait_for 900 "vmactd brought $name to 1 CPU (cpu.max: $(cpumax) -> one CPU)" at_most_one
say "cpu.max of $cg: $(cpumax); vmactd: $(vmlog | grep "$name: resized to " | tail -n 1)"
before=$(vmlog | grep -c "$name: resized to ")
say "busy 2 in the guest"
guest_cmd "busy 2"
wait_for 1800 "vmactd grew $name: the VM's cgroup quota rose above one CPU" above_one
say "cpu.max of $cg: $(cpumax); vmactd: $(vmlog | grep "$name: resized to " | tail -n 1)"
check "vmactd logged the growth (resized to … after busy 2)" \
	bash -c "journalctl -u vmactd.service -o cat --no-pager | grep \"$name: resized to \" | tail -n +$((before + 1)) | grep -q ."
wait_for 1800 "the guest sees 2 CPUs" bash -c "$(declare -f guest_status guest_cpus); serial=$serial; [ \"\$(guest_cpus)\" -ge 2 ]"

# ---- the BPF sampler -------------------------------------------------------------
if command -v bpftool >/dev/null; then
	progs=$(bpftool prog show 2>/dev/null | grep -c .)
	say "bpftool prog show: $(bpftool prog show 2>/dev/null | grep -oE 'name [a-z_0-9]+' | sort -u | tr '\n' ' ')"
	say "bpftool map show (pinned under /sys/fs/bpf/vmact): $(ls /sys/fs/bpf/vmact 2>/dev/null | tr '\n' ' ')"
	say "vmactd: $(vmlog | grep -m1 'sampler: ')"
	check "vmactd loaded the BPF sampler (journal: 'sampler: BPF')" vmlog_has "sampler: BPF"
	check "its maps are pinned under /sys/fs/bpf/vmact" bash -c '[ -n "$(ls /sys/fs/bpf/vmact 2>/dev/null)" ]'
	# The kernel's watch (doc/policy.md, "Saturation found in the kernel"):
	# where it loads, the loop waits in SCHED_FIFO 1, which the unit allows
	# with LimitRTPRIO=1 and no CAP_SYS_NICE; /proc/PID/sched says policy 1
	# whenever it is waiting, which is nearly always.
	say "vmactd: $(vmlog | grep -m1 'sampler: saturation watched\|sampler: no watch')"
	if vmlog_has "sampler: saturation watched in the kernel"; then
		say "vmactd: $(vmlog | grep -m1 'sampler: the loop')"
		check "vmactd's loop waits for the watch's windows in SCHED_FIFO under the unit (journal)" \
			vmlog_has "the loop waits for the watch's windows in SCHED_FIFO at priority 1"
		check "vmactd's main thread is seen waiting in SCHED_FIFO (/proc/PID/sched: policy 1)" \
			bash -c 'p=$(systemctl show -p MainPID --value vmactd.service); for i in $(seq 200); do grep -qE "^policy +: +1$" /proc/$p/sched && exit 0; sleep 0.05; done; exit 1'
	elif vmlog_has "the kernel refused the watch"; then
		# An older kernel: the line names the program refused and the
		# verifier's reason (bpf/libbpf-log.c), not only an errno.
		check "vmactd names the program the kernel refused and the verifier's reason (journal)" \
			bash -c 'journalctl -u vmactd.service -o cat --no-pager | grep -q "the kernel refused the watch.*prog .*the verifier: "'
	fi
	check "bpftool lists programs ($progs lines)" [ "$progs" -gt 0 ]
fi
metrics=$(exec 3<>/dev/tcp/127.0.0.1/9848 && printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 && cat <&3)
delay=$(grep "^vmact_vm_vcpu_run_delay_seconds_total{.*$name" <<<"$metrics" | head -n 1)
say "metrics: ${delay:-no run-delay series}"
check "the sampler's per-VM readings reach /metrics (run delay of the vCPU threads)" [ -n "$delay" ]

# ---- the way down -----------------------------------------------------------------
say "idle in the guest"
guest_cmd "idle"
wait_for 900 "vmactd shrank $name back to 1 CPU with the monitor's approval (cpu.max)" at_most_one
say "cpu.max of $cg: $(cpumax); vmactd: $(vmlog | grep "$name: resized to " | tail -n 1)"
check "the vm-monitor stand-in was asked and approved a downscale" \
	grep -qi 'DownscaleRequest' /run/vmact-check/monitor.log

virsh -q destroy "$name" >/dev/null 2>&1
kill "$monitor_pid" 2>/dev/null

# ---- vmact-groupd configured: it starts -----------------------------------------
mkdir -p /etc/vmact
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >/etc/vmact/lease.key
chown root:vmact-cluster /etc/vmact/lease.key && chmod 0640 /etc/vmact/lease.key
cat >/etc/vmact/groupd.json <<'JSON'
{"hosts": [{"name": "h1", "uri": "qemu:///system",
            "arbiter": {"url": "http://127.0.0.1:10299", "secret_file": "/etc/vmact/lease.key"}}],
 "groups": []}
JSON
check "systemctl start vmact-groupd, once configured" systemctl start vmact-groupd.service
wait_for 120 "vmact-groupd active" systemctl is-active -q vmact-groupd.service ||
	journalctl -u vmact-groupd.service -o cat --no-pager | tail -n 15 | sed 's/^/    groupd: /' | tee -a "$report"

# ---- upgrade: the same source built as a newer version --------------------------
main_pid() { systemctl show -p MainPID --value "$1"; }
vpid=$(main_pid vmactd.service) gpid=$(main_pid vmact-groupd.service)
uid_vmact=$(id -u vmact) uid_cluster=$(id -u vmact-cluster)
nv=$(ls "$share"/next/vmact_*.deb | head -n 1) nc=$(ls "$share"/next/vmact-cluster_*.deb | head -n 1)
if DEBIAN_FRONTEND=noninteractive apt-get install -y "$nv" "$nc" >/root/upgrade.log 2>&1; then
	pass "apt-get install $(basename "$nv") $(basename "$nc") (upgrade from $version)"
else
	fail "the upgrade: $(tail -n 5 /root/upgrade.log)"
fi
newv=$(dpkg-query -W -f='${Version}' vmact)
check "vmact and vmact-cluster are now $newv" \
	bash -c "[ '$newv' != '$version' ] && [ \"\$(dpkg-query -W -f='\${Version}' vmact-cluster)\" = '$newv' ]"
wait_for 120 "vmactd restarted by the upgrade (pid $vpid -> a new one), active" \
	bash -c "systemctl is-active -q vmactd.service && [ \"\$(systemctl show -p MainPID --value vmactd.service)\" != $vpid ]"
wait_for 120 "vmact-groupd restarted by the upgrade (pid $gpid -> a new one), active" \
	bash -c "systemctl is-active -q vmact-groupd.service && [ \"\$(systemctl show -p MainPID --value vmact-groupd.service)\" != $gpid ]"
check "both still enabled" bash -c 'systemctl is-enabled -q vmactd.service && systemctl is-enabled -q vmact-groupd.service'
check "the users kept their uids ($uid_vmact, $uid_cluster)" \
	bash -c "[ \"\$(id -u vmact)\" = $uid_vmact ] && [ \"\$(id -u vmact-cluster)\" = $uid_cluster ]"
check "the hook's link still there" [ -L /etc/libvirt/hooks/qemu.d/vmact ]

# ---- removal: stopped, gone, configuration and state kept ------------------------
since=$(date '+%Y-%m-%d %H:%M:%S')
sleep 1
check "apt-get remove vmact vmact-cluster" \
	bash -c 'DEBIAN_FRONTEND=noninteractive apt-get remove -y vmact vmact-cluster >/root/remove.log 2>&1'
check "vmactd stopped by the removal, exiting 0 (journal: Deactivated successfully)" \
	bash -c "! pgrep -x vmactd >/dev/null && journalctl -u vmactd.service --since '$since' -o cat --no-pager | grep -q 'Deactivated successfully'"
check "its pins are gone with it" bash -c '[ -z "$(ls /sys/fs/bpf/vmact 2>/dev/null)" ]'
check "vmact-groupd and vmact-cloudprovider stopped (no process left running a removed binary)" \
	bash -c '! pgrep -x vmact-groupd >/dev/null && ! pgrep -x vmact-cloudprov >/dev/null'
check "the units are gone" \
	bash -c '! systemctl cat vmactd.service >/dev/null 2>&1 && ! systemctl cat vmact-groupd.service >/dev/null 2>&1'
check "the programs and the hook's link are gone" \
	bash -c '[ ! -e /usr/sbin/vmactd ] && [ ! -e /usr/libexec/vmact ] && [ ! -L /etc/libvirt/hooks/qemu.d/vmact ] && [ ! -e /usr/sbin/vmact-groupd ]'
check "the operator's /etc/vmact files are kept (groupd.json, lease.key)" \
	bash -c '[ -f /etc/vmact/groupd.json ] && [ -f /etc/vmact/lease.key ]'
check "the state is kept until a purge (/var/lib/vmact-cluster)" [ -d /var/lib/vmact-cluster ]
check "both packages in state config-files (rc)" \
	bash -c '[ "$(dpkg-query -W -f="\${db:Status-Abbrev}" vmact vmact-cluster | tr -d " ")" = rcrc ]'

# ---- purge: the state goes, the system users stay --------------------------------
check "apt-get purge vmact vmact-cluster" \
	bash -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y vmact vmact-cluster >/root/purge.log 2>&1'
check "dpkg knows neither any more" \
	bash -c '! dpkg-query -W -f="\${db:Status-Abbrev}" vmact vmact-cluster 2>/dev/null | grep -q "[a-z]"'
check "/var/lib/vmact and /var/lib/vmact-cluster removed" bash -c '[ ! -e /var/lib/vmact ] && [ ! -e /var/lib/vmact-cluster ]'
# (vmact-check.service is this run's own driver.)
check "no unit enabled any more (no wants link, no deb-systemd-helper state)" \
	bash -c '[ -z "$(find /etc/systemd/system /var/lib/systemd/deb-systemd-helper-enabled -name "vmact*" ! -name "vmact-check*" 2>/dev/null)" ]'
check "the system users vmact and vmact-cluster stay (Debian keeps them: files they owned may remain)" \
	bash -c 'getent passwd vmact >/dev/null && getent passwd vmact-cluster >/dev/null'
say "vmactd's journal, by priority: $(journalctl -u vmactd.service -o json --no-pager | grep -o '"PRIORITY":"[0-9]"' | sort | uniq -c | tr -s ' \n' ' ')"
journalctl -u vmactd.service -o short-monotonic --no-pager >"$share/vmactd.journal" 2>&1
cp /run/vmact-check/monitor.log "$share/monitor.log" 2>/dev/null
finish

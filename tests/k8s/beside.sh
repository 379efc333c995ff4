#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# beside.sh LOG CACHE BUILD -- COMMAND...: make ci's way of fitting
# make check-k8s into .ci/run's hour. While COMMAND (make check) runs, the
# control plane's binaries (tests/k8s/build-bins.sh: a cold Go build of
# kube-apiserver, the kubelet and etcd, about 20 minutes of both cores
# here) and the node image (tests/k8s/build-node-image.sh) are made beside
# it at nice 19, on the CPU time the suite leaves idle, as the two
# nice -n 19 loops of a loaded run would take it (doc/testing.md). Their
# output goes to LOG. COMMAND's status is the script's; if COMMAND fails
# the preparation is stopped, if the preparation fails its log's tail is
# printed and the status is 1. Kept caches make the preparation instant.
set -uo pipefail
log=${1:?usage: beside.sh LOG CACHE BUILD -- COMMAND...}
cache=${2:?usage}
build=${3:?usage}
shift 3
[ "${1:-}" = "--" ] && shift
top=$(cd "$(dirname "$0")/../.." && pwd)

mkdir -p "$(dirname "$log")"
setsid nice -n 19 bash -c '
	set -euo pipefail
	bins=$("$1/tests/k8s/build-bins.sh")
	"$1/tests/k8s/build-node-image.sh" "$2/node" "$bins/kubelet" "$3"
' beside "$top" "$cache" "$build" >"$log" 2>&1 &
prep=$!
stop_prep() { kill -TERM -- "-$prep" 2>/dev/null; wait "$prep" 2>/dev/null; }
trap 'stop_prep; exit 130' INT TERM

"$@"
rc=$?
if [ "$rc" -ne 0 ]; then
	stop_prep
	exit "$rc"
fi
echo "beside.sh: waiting for the control plane's binaries and the node image ($log)"
if ! wait "$prep"; then
	echo "beside.sh: preparing make check-k8s failed:" >&2
	tail -n 40 "$log" >&2
	exit 1
fi
tail -n 3 "$log"

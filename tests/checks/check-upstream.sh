#!/usr/bin/env bash
# vmact's servers driven by upstream's own Go modules (doc/cloudprovider.md,
# "Autoscaler versions"): each Go module under tests/peers/kube/ pins one
# version of Kubernetes' k8s.io/api and reads vmact-cloudprovider's answers
# as the cluster-autoscaler of that version does. Each is built once
# (go test -c, -p 2) and run; its subtests are counted.
# Usage: tests/checks/check-upstream.sh [BUILD-DIR] (the build whose
# vmact-cloudprovider runs; default build). Prints per module
# "MODULE VERSION: N passed, M failed", then the sum alone.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
build=$(cd "${1:-build}" && pwd) || exit 1
out=$build/upstream
mkdir -p "$out"
passed=0 failed=0
summary=()

# the module's pinned version of a dependency, from its go.mod
pinned() {
	(cd "$1" && go list -mod=readonly -m -f '{{.Version}}' "$2")
}

for mod in tests/peers/kube/k8s-*/; do
	mod=${mod%/}
	name=$(basename "$mod")
	version=$(pinned "$mod" k8s.io/api) || version=unknown
	echo "=== upstream $mod: k8s.io/api $version"
	p=0 f=0
	if ! (cd "$mod" && go test -mod=readonly -p 2 -c -o "$out/$name.test" .) >"$out/$name.build.log" 2>&1; then
		cat "$out/$name.build.log"
		f=1
	else
		VMACT_TOP=$top VMACT_CP_BUILD=$build timeout --kill-after=10 300 \
			"$out/$name.test" -test.v -test.count=1 >"$out/$name.log" 2>&1
		rc=$?
		cat "$out/$name.log"
		p=$(grep -cE -- '^ +--- PASS: ' "$out/$name.log")
		f=$(grep -cE -- '^ +--- FAIL: ' "$out/$name.log")
		# a crash, a timeout, a failed start or stop: one more failure
		[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
		[ "$rc" -eq 0 ] && [ "$p" -eq 0 ] && f=1
	fi
	summary+=("k8s.io/api $version: $p passed, $f failed")
	passed=$((passed + p)); failed=$((failed + f))
done
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build-bins.sh [OUT]: kube-apiserver, the kubelet, etcd, and for joins by
# kubeadm kubeadm and kube-controller-manager (the CSR signer and approver,
# the bootstrap signer), for the tests of node VMs (tests/lib/kube.h, make
# check-k8s), built from the module
# tests/peers/kube/control-plane pins (k8s.io/kubernetes and etcd from the
# Go module proxy, as their releases build them: static, stripped). OUT:
# $VMACT_CACHE_DIR/k8s/bin, else /var/cache/vmact-tests/k8s/bin, outside
# the tree. A build whose inputs (go.mod, go.sum, this script, the Go
# version) did not change is kept: its stamp says so. Prints where the
# binaries are.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
mod=$top/tests/peers/kube/control-plane
out=${1:-${VMACT_CACHE_DIR:-/var/cache/vmact-tests}/k8s/bin}

stamp=$( (cat "$mod/go.mod" "$mod/go.sum" "$0"; go version) | sha256sum | cut -d' ' -f1)
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ] &&
	[ -x "$out/kube-apiserver" ] && [ -x "$out/kubelet" ] && [ -x "$out/etcd" ] &&
	[ -x "$out/kubeadm" ] && [ -x "$out/kube-controller-manager" ]; then
	echo "$out"
	exit 0
fi
tmp=$out.tmp.$$
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
start=$(date +%s)
# The version the binaries report (the kubelet's in its Node, the API
# server's at /version), as a release build stamps it: from the module's
# own version, where a module build leaves "v0.0.0-master".
ver=$(cd "$mod" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
[ -n "$ver" ] || { echo "build-bins: no k8s.io/kubernetes version in $mod/go.mod" >&2; exit 1; }
major=${ver#v}; major=${major%%.*}
minor=${ver#v*.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$ver -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
ldflags="$ldflags -X $pkg.gitTreeState=clean"
(cd "$mod" && CGO_ENABLED=0 go build -mod=readonly -p 2 -trimpath -ldflags="$ldflags" -o "$tmp/" \
	k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubelet \
	k8s.io/kubernetes/cmd/kubeadm k8s.io/kubernetes/cmd/kube-controller-manager \
	go.etcd.io/etcd/server/v3)
# etcd's main is its server module's root package, go.etcd.io/etcd/server/v3:
# go names the binary after "server".
mv "$tmp/server" "$tmp/etcd"
echo "$stamp" > "$tmp/.stamp"
rm -rf "$out"
mkdir -p "$(dirname "$out")"
mv "$tmp" "$out"
echo "build-bins: built in $(( $(date +%s) - start )) s" >&2
echo "$out"

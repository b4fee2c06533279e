#!/usr/bin/env bash
# k8s.sh: a real Kubernetes control plane for tests and demos, without containers.
#
#   k8s.sh build                     build and cache the binaries (skipped when cached)
#   k8s.sh start DIR [--nodes N] [--cpu C] [--memory M]
#                                    etcd, kube-apiserver, kube-controller-manager,
#                                    kube-scheduler and N test nodes (default 1, each with
#                                    C CPUs (default 1) and M of memory (default 1Gi));
#                                    writes DIR/kubeconfig and waits until all nodes are Ready
#   k8s.sh stop DIR                  stop everything DIR's start started (TERM, then KILL)
#   k8s.sh node DIR NAME [--cpu C] [--memory M]
#                                    one more test node NAME (its pid in DIR/node-NAME.pid)
#   k8s.sh kill-node DIR NAME        SIGKILL node NAME's agent and the processes it runs
#                                    (a node's death)
#   k8s.sh bin                       print the directory of the cached binaries
#
# The control plane is built from the Go module proxy at pinned versions
# (k8s.io/kubernetes v1.37.2 with its staging modules at v0.37.2, etcd v3.6.16)
# and cached by version in ${EJOB_CACHE:-$HOME/.cache/ejob}/k8s-v1.37.2; a
# machine that has the cache skips the build. The first build takes minutes
# (about 6.5 on 2 idle cores, twice that under load) and needs ~9 GB of disk for
# a module and build cache that are deleted afterwards; the binaries take ~420 MB.
#
# Everything listens on 127.0.0.1 only: the API server with RBAC on and a static
# admin token (DIR/kubeconfig), serving certificates generated into DIR. Nodes
# are the test node agent (ejob-k8s-nodeagent, built from the Kubernetes
# launcher's module into DIR): it registers a Node, renews its Lease and runs
# each bound pod's commands as host processes. The controller manager uses
# --node-monitor-grace-period=${K8S_NODE_GRACE:-10s}, so a dead node is noticed
# in seconds. EJOB_OWNER_PID (see owner.sh) stops the servers when that
# process ends. K8S_WAIT_SECONDS (default 90) bounds every wait.
set -euo pipefail

K8S_VERSION=1.37.2
STAGING_VERSION=0.37.2
ETCD_VERSION=3.6.16
WAIT_SECONDS=${K8S_WAIT_SECONDS:-90}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${EJOB_CACHE:-$HOME/.cache/ejob}/k8s-v$K8S_VERSION
BINARIES="etcd kube-apiserver kube-controller-manager kube-scheduler kubectl"

die() { echo "k8s.sh: $*" >&2; exit 1; }

# shellcheck source=ports.sh
. "$ROOT/scripts/ports.sh"
# shellcheck source=owner.sh
. "$ROOT/scripts/owner.sh"

cached() {
	local b
	for b in $BINARIES; do [ -x "$CACHE/$b" ] || return 1; done
}

build() {
	if cached; then return 0; fi
	command -v go >/dev/null || die "go is not on PATH"
	local tmp start out
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/ejob-k8s-build.XXXXXX")
	out="$CACHE.partial.$$"
	# shellcheck disable=SC2064
	trap "chmod -R u+w '$tmp' 2>/dev/null; rm -rf '$tmp' '$out'" EXIT
	start=$SECONDS
	echo "k8s.sh: building Kubernetes v$K8S_VERSION and etcd v$ETCD_VERSION into $CACHE" >&2
	echo "k8s.sh: this happens once per machine and takes minutes (about 6.5 on 2 idle cores, longer under load)" >&2
	mkdir -p "$tmp/kube" "$tmp/etcd" "$out"
	export GOMODCACHE="$tmp/mod" GOCACHE="$tmp/cache" GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
	# etcd: a main that calls etcdmain.Main, in a module of its own.
	(
		cd "$tmp/etcd"
		go mod init ejob.local/k8sbuild/etcd >/dev/null 2>&1
		cat >main.go <<-'EOF'
		package main

		import (
			"os"

			"go.etcd.io/etcd/server/v3/etcdmain"
		)

		func main() { etcdmain.Main(os.Args) }
		EOF
		go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >/dev/null
		go mod tidy >/dev/null
		go build -trimpath -ldflags "-s -w" -o "$out/etcd" .
	) || die "building etcd failed"
	echo "k8s.sh: etcd built ($((SECONDS - start)) s)" >&2
	# Kubernetes: k8s.io/kubernetes replaces its staging modules with ./staging/...,
	# which its module zip lacks, so a wrapper module requires it and replaces
	# every staging module with its published version.
	(
		cd "$tmp/kube"
		go mod init ejob.local/k8sbuild/kube >/dev/null 2>&1
		gomod=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
		[ -f "$gomod" ] || { echo "no go.mod for k8s.io/kubernetes@v$K8S_VERSION" >&2; exit 1; }
		staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*#\1#p' "$gomod" | sort -u)
		[ -n "$staging" ] || { echo "no staging replaces in $gomod" >&2; exit 1; }
		{
			echo "require k8s.io/kubernetes v$K8S_VERSION"
			for m in $staging; do echo "replace $m => $m v$STAGING_VERSION"; done
		} >>go.mod
		cat >tools.go <<-'EOF'
		//go:build tools

		package tools

		import (
			_ "k8s.io/kubernetes/cmd/kube-apiserver"
			_ "k8s.io/kubernetes/cmd/kube-controller-manager"
			_ "k8s.io/kubernetes/cmd/kube-scheduler"
			_ "k8s.io/kubernetes/cmd/kubectl"
		)
		EOF
		go mod tidy >/dev/null
		go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2)" \
			-o "$out/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
			k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
	) || die "building Kubernetes failed"
	mkdir -p "$(dirname "$CACHE")"
	rm -rf "$CACHE"
	mv "$out" "$CACHE"
	echo "k8s.sh: built in $((SECONDS - start)) s; binaries in $CACHE" >&2
}

case "${1:-}" in
build) build ;;
bin) cached || die "not built yet: run k8s.sh build"; echo "$CACHE" ;;
*) die "usage: k8s.sh build|bin|start DIR [--nodes N] [--cpu C] [--memory M]|stop DIR|node DIR NAME|kill-node DIR NAME" ;;
esac

#!/usr/bin/env bash
# k8s.sh: a real Kubernetes control plane for tests and demos, without containers.
#
#   k8s.sh build                     build and cache the binaries (skipped when cached)
#   k8s.sh start DIR [--nodes N] [--cpu C] [--memory M] [--kwok-nodes K]
#                                    etcd, kube-apiserver, kube-controller-manager,
#                                    kube-scheduler, N test nodes (default 1, each with
#                                    C CPUs (default 1) and M of memory (default 1Gi)) and
#                                    K kwok nodes kwok-1..K of the same size (default 0);
#                                    writes DIR/kubeconfig and waits until all nodes are Ready
#   k8s.sh stop DIR                  stop everything DIR's start started (TERM, then KILL)
#   k8s.sh node DIR NAME [--cpu C] [--memory M]
#                                    one more test node NAME (its pid in DIR/agent-NAME.pid)
#   k8s.sh kwok-node DIR NAME [--cpu C] [--memory M]
#                                    one more kwok node NAME (starts kwok when none runs)
#   k8s.sh kill-node DIR NAME        SIGKILL node NAME's agent and the processes it runs
#                                    (a node's death)
#   k8s.sh bin                       print the directory of the cached control plane binaries
#   k8s.sh kwok-bin                  print the directory of the cached kwok and its stages
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
# in seconds. Kwok nodes (kwok v0.8.0, built and cached by version in
# ${EJOB_CACHE:-$HOME/.cache/ejob}/kwok-v0.8.0) are fake: kwok marks their pods
# Running and a Job's pods Succeeded at once and runs nothing (the scheduler
# places pods on them as on any node, so tests keep them in clusters of their
# own). EJOB_OWNER_PID (see owner.sh) stops the servers when that
# process ends. K8S_WAIT_SECONDS (default 90) bounds every wait.
set -euo pipefail

K8S_VERSION=1.37.2
STAGING_VERSION=0.37.2
ETCD_VERSION=3.6.16
KWOK_VERSION=0.8.0
WAIT_SECONDS=${K8S_WAIT_SECONDS:-90}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${EJOB_CACHE:-$HOME/.cache/ejob}/k8s-v$K8S_VERSION
KWOK_CACHE=${EJOB_CACHE:-$HOME/.cache/ejob}/kwok-v$KWOK_VERSION
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
	build_control_plane
	build_kwok
}

# build_kwok: kwok and the stages it plays (its "fast" node and pod stages,
# taken from its module), cached by version in a directory of their own.
build_kwok() {
	if [ -x "$KWOK_CACHE/kwok" ] && [ -s "$KWOK_CACHE/stages.yaml" ]; then return 0; fi
	command -v go >/dev/null || die "go is not on PATH"
	local tmp start out
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/ejob-kwok-build.XXXXXX")
	out="$KWOK_CACHE.partial.$$"
	start=$SECONDS
	rm -rf "$out"
	mkdir -p "$out"
	[ ! -x "$KWOK_CACHE/kwok" ] || cp "$KWOK_CACHE/kwok" "$out/kwok"
	if ! (
		export GOMODCACHE="$tmp/mod" GOCACHE="$tmp/cache" GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 GOBIN="$out"
		if [ ! -x "$out/kwok" ]; then
			echo "k8s.sh: building kwok v$KWOK_VERSION into $KWOK_CACHE (about a minute on 2 idle cores)" >&2
			go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
		fi
		dir=$(go mod download -json "sigs.k8s.io/kwok@v$KWOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
		[ -d "$dir/kustomize/stage" ] || { echo "no stages in the kwok module ($dir)" >&2; exit 1; }
		for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
			pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
			cat "$dir/kustomize/stage/$f"
			echo ---
		done >"$out/stages.yaml"
	); then
		chmod -R u+w "$tmp" 2>/dev/null
		rm -rf "$tmp" "$out"
		die "building kwok failed"
	fi
	chmod -R u+w "$tmp" 2>/dev/null
	rm -rf "$tmp" "$KWOK_CACHE"
	mv "$out" "$KWOK_CACHE"
	echo "k8s.sh: kwok ready in $((SECONDS - start)) s: $KWOK_CACHE" >&2
}

build_control_plane() {
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

# spawn NAME DIR CMD...: start CMD in a session of its own (so stop and
# kill-node reach everything it starts), log in DIR/NAME.log, pid in DIR/NAME.pid.
spawn() {
	local name=$1 dir=$2
	shift 2
	setsid "$@" >"$dir/$name.log" 2>&1 </dev/null &
	echo $! >"$dir/$name.pid"
	watch_owner "$!"
}

# alive DIR NAME: NAME's process runs.
alive() { [ -s "$1/$2.pid" ] && kill -0 "$(cat "$1/$2.pid")" 2>/dev/null; }

# session_pids SID: the processes of session SID.
session_pids() { ps -e -o pid=,sid= | awk -v s="$1" '$2 == s { print $1 }'; }

# halt DIR NAME [KILL]: stop NAME's session (TERM, then KILL after 10 s; KILL at once with a third argument).
halt() {
	local dir=$1 name=$2 sid pids i
	[ -s "$dir/$name.pid" ] || return 0
	sid=$(cat "$dir/$name.pid")
	if [ -z "${3:-}" ]; then
		pids=$(session_pids "$sid")
		[ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
		for i in $(seq 1 100); do
			[ -n "$(session_pids "$sid")" ] || break
			sleep 0.1
		done
	fi
	pids=$(session_pids "$sid")
	[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
	for i in $(seq 1 50); do
		[ -n "$(session_pids "$sid")" ] || break
		sleep 0.1
	done
	rm -f "$dir/$name.pid"
}

# wait_for DIR NAME WHAT CMD...: run CMD until it succeeds; fail when NAME's
# process exits or the wait runs out.
wait_for() {
	local dir=$1 name=$2 what=$3 deadline=$((SECONDS + WAIT_SECONDS))
	shift 3
	while [ $SECONDS -lt $deadline ]; do
		if "$@" >/dev/null 2>&1; then return 0; fi
		if ! alive "$dir" "$name"; then
			echo "k8s.sh: $name exited while waiting for $what; last log lines ($dir/$name.log):" >&2
			tail -n 30 "$dir/$name.log" >&2 || true
			return 1
		fi
		sleep 0.2
	done
	echo "k8s.sh: no $what after ${WAIT_SECONDS} s; last lines of $dir/$name.log:" >&2
	tail -n 30 "$dir/$name.log" >&2 || true
	return 1
}

certs() { # certs DIR: a CA, the API server's serving certificate, the service-account key
	local d=$1/pki
	mkdir -p "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=ejob-test-ca" \
		-keyout "$d/ca.key" -out "$d/ca.crt" >/dev/null 2>&1
	openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout "$d/apiserver.key" \
		-out "$d/apiserver.csr" >/dev/null 2>&1
	printf 'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n' >"$d/san.ext"
	openssl x509 -req -in "$d/apiserver.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 3650 \
		-extfile "$d/san.ext" -out "$d/apiserver.crt" >/dev/null 2>&1
	openssl genrsa -out "$d/sa.key" 2048 >/dev/null 2>&1
	openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" >/dev/null 2>&1
	[ -s "$d/apiserver.crt" ] && [ -s "$d/sa.pub" ] || die "openssl failed to make the certificates in $d"
}

kubectl_() { "$CACHE/kubectl" --kubeconfig "$DIR/kubeconfig" "$@"; }

api_ready() { curl -sf --cacert "$DIR/pki/ca.crt" -H "Authorization: Bearer $(cat "$DIR/token")" "https://127.0.0.1:$(cat "$DIR/apiserver.port")/readyz"; }

node_ready() {
	[ "$(kubectl_ get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

agent_binary() { # builds the node agent into DIR/bin (from the Kubernetes launcher's module)
	mkdir -p "$DIR/bin"
	(cd "$ROOT/plugins/launcher/kubernetes" && GOWORK=off go build -o "$DIR/bin/nodeagent" ./internal/nodeagent) ||
		die "building the node agent failed"
}

start_node() { # start_node NAME CPU MEMORY
	local name=$1
	[ -x "$DIR/bin/nodeagent" ] || agent_binary
	alive "$DIR" "agent-$name" && die "node $name already runs in $DIR"
	mkdir -p "$DIR/nodes/$name"
	spawn "agent-$name" "$DIR" "$DIR/bin/nodeagent" -kubeconfig "$DIR/kubeconfig" -name "$name" \
		-cpu "$2" -memory "$3" -dir "$DIR/nodes/$name"
}

# start_kwok: kwok for DIR's cluster, managing the nodes annotated
# kwok.x-k8s.io/node=fake (started once; kwok_node starts it when needed).
start_kwok() {
	alive "$DIR" kwok && return 0
	spawn kwok "$DIR" "$KWOK_CACHE/kwok" --kubeconfig "$DIR/kubeconfig" --config "$KWOK_CACHE/stages.yaml" \
		--manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
		--node-lease-duration-seconds 40 --cidr 10.0.1.0/24 --node-ip 127.0.0.1
}

# kwok_node NAME CPU MEMORY: a fake node of kwok (labelled ejob.io/kwok-node=true):
# its pods become Running and, for a Job's, Succeeded at once, and run nothing.
kwok_node() {
	build_kwok
	start_kwok
	kubectl_ apply -f - >/dev/null <<-EOF
	apiVersion: v1
	kind: Node
	metadata:
	  name: $1
	  annotations: {kwok.x-k8s.io/node: fake}
	  labels: {kubernetes.io/hostname: $1, kubernetes.io/os: linux, ejob.io/kwok-node: "true"}
	status:
	  capacity: {cpu: "$2", memory: "$3", pods: "1000"}
	  allocatable: {cpu: "$2", memory: "$3", pods: "1000"}
	EOF
	wait_for "$DIR" kwok "node $1 Ready" node_ready "$1"
}

start() {
	local nodes=1 cpu=1 memory=1Gi kwok_nodes=0 i token etcd_port peer_port api_port
	while [ $# -gt 0 ]; do
		case "$1" in
		--nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
		--cpu) cpu=${2:?--cpu needs a quantity}; shift 2 ;;
		--memory) memory=${2:?--memory needs a quantity}; shift 2 ;;
		--kwok-nodes) kwok_nodes=${2:?--kwok-nodes needs a number}; shift 2 ;;
		*) die "start: unknown argument $1 (--nodes N, --cpu C, --memory M, --kwok-nodes K)" ;;
		esac
	done
	case "$nodes" in '' | *[!0-9]*) die "start: --nodes $nodes is not a number" ;; esac
	case "$kwok_nodes" in '' | *[!0-9]*) die "start: --kwok-nodes $kwok_nodes is not a number" ;; esac
	for i in etcd kube-apiserver kube-controller-manager kube-scheduler; do
		alive "$DIR" "$i" && die "a cluster already runs in $DIR (k8s.sh stop $DIR first)"
	done
	build_control_plane
	[ "$kwok_nodes" -eq 0 ] || build_kwok
	command -v openssl >/dev/null || die "openssl is needed for the API server's certificates"
	mkdir -p "$DIR"
	rm -rf "$DIR/etcd" "$DIR/nodes" "$DIR/pki" "$DIR"/*.log
	certs "$DIR"
	token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	echo "$token" >"$DIR/token"
	printf '%s,admin,admin,system:masters\n' "$token" >"$DIR/pki/tokens.csv"
	etcd_port=$(pick_port)
	peer_port=$(pick_port)
	spawn etcd "$DIR" "$CACHE/etcd" --name default --data-dir "$DIR/etcd" --log-level warn --unsafe-no-fsync \
		--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
		--listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
		--initial-cluster "default=http://127.0.0.1:$peer_port"
	wait_for "$DIR" etcd "etcd health" curl -sf "http://127.0.0.1:$etcd_port/health" || { stop_all; exit 1; }
	api_port=$(pick_port)
	echo "$api_port" >"$DIR/apiserver.port"
	spawn kube-apiserver "$DIR" "$CACHE/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
		--tls-cert-file "$DIR/pki/apiserver.crt" --tls-private-key-file "$DIR/pki/apiserver.key" \
		--client-ca-file "$DIR/pki/ca.crt" --token-auth-file "$DIR/pki/tokens.csv" --authorization-mode Node,RBAC \
		--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$DIR/pki/sa.pub" \
		--service-account-signing-key-file "$DIR/pki/sa.key" --service-cluster-ip-range 10.0.0.0/24 \
		--enable-priority-and-fairness=false --profiling=false --cert-dir "$DIR/pki" --endpoint-reconciler-type none
	cat >"$DIR/kubeconfig" <<-EOF
	apiVersion: v1
	kind: Config
	clusters:
	- name: ejob-test
	  cluster:
	    server: https://127.0.0.1:$api_port
	    certificate-authority-data: $(base64 -w0 "$DIR/pki/ca.crt")
	users:
	- name: admin
	  user:
	    token: $token
	contexts:
	- name: ejob-test
	  context:
	    cluster: ejob-test
	    user: admin
	    namespace: default
	current-context: ejob-test
	EOF
	chmod 600 "$DIR/kubeconfig" "$DIR/token"
	wait_for "$DIR" kube-apiserver "API server /readyz" api_ready || { stop_all; exit 1; }
	spawn kube-controller-manager "$DIR" "$CACHE/kube-controller-manager" --kubeconfig "$DIR/kubeconfig" \
		--leader-elect=false --secure-port 0 --service-account-private-key-file "$DIR/pki/sa.key" \
		--root-ca-file "$DIR/pki/ca.crt" --node-monitor-grace-period "${K8S_NODE_GRACE:-10s}" \
		--node-monitor-period 1s
	spawn kube-scheduler "$DIR" "$CACHE/kube-scheduler" --kubeconfig "$DIR/kubeconfig" --leader-elect=false \
		--secure-port 0
	wait_for "$DIR" kube-controller-manager "default service account" kubectl_ get serviceaccount default ||
		{ stop_all; exit 1; }
	alive "$DIR" kube-scheduler || { tail -n 30 "$DIR/kube-scheduler.log" >&2; stop_all; die "kube-scheduler exited"; }
	[ "$nodes" -eq 0 ] || agent_binary
	for i in $(seq 1 "$nodes"); do start_node "node-$i" "$cpu" "$memory"; done
	for i in $(seq 1 "$nodes"); do
		wait_for "$DIR" "agent-node-$i" "node node-$i Ready" node_ready "node-$i" || { stop_all; exit 1; }
	done
	for i in $(seq 1 "$kwok_nodes"); do kwok_node "kwok-$i" "$cpu" "$memory" || { stop_all; exit 1; }; done
	echo "k8s.sh: cluster up: $nodes node(s) and $kwok_nodes kwok node(s) of $cpu CPU and $memory; KUBECONFIG=$DIR/kubeconfig" >&2
}

stop_all() {
	local f
	for f in "$DIR"/agent-*.pid; do
		[ -e "$f" ] || continue
		halt "$DIR" "$(basename "$f" .pid)"
	done
	for f in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do halt "$DIR" "$f"; done
}

case "${1:-}" in
build) build ;;
bin) cached || die "not built yet: run k8s.sh build"; echo "$CACHE" ;;
kwok-bin)
	[ -x "$KWOK_CACHE/kwok" ] && [ -s "$KWOK_CACHE/stages.yaml" ] || die "kwok not built yet: run k8s.sh build"
	echo "$KWOK_CACHE"
	;;
start)
	DIR=${2:?usage: k8s.sh start DIR [--nodes N] [--cpu C] [--memory M]}
	shift 2
	start "$@"
	;;
stop)
	DIR=${2:?usage: k8s.sh stop DIR}
	stop_all
	;;
node | kwok-node)
	cmd=$1
	DIR=${2:?usage: k8s.sh $cmd DIR NAME [--cpu C] [--memory M]}
	name=${3:?usage: k8s.sh $cmd DIR NAME [--cpu C] [--memory M]}
	shift 3
	cpu=1 memory=1Gi
	while [ $# -gt 0 ]; do
		case "$1" in
		--cpu) cpu=${2:?--cpu needs a quantity}; shift 2 ;;
		--memory) memory=${2:?--memory needs a quantity}; shift 2 ;;
		*) die "$cmd: unknown argument $1 (--cpu C, --memory M)" ;;
		esac
	done
	[ -s "$DIR/kubeconfig" ] || die "no cluster in $DIR"
	if [ "$cmd" = node ]; then
		start_node "$name" "$cpu" "$memory"
		wait_for "$DIR" "agent-$name" "node $name Ready" node_ready "$name"
	else
		kwok_node "$name" "$cpu" "$memory"
	fi
	;;
kill-node)
	DIR=${2:?usage: k8s.sh kill-node DIR NAME}
	name=${3:?usage: k8s.sh kill-node DIR NAME}
	alive "$DIR" "agent-$name" || die "no node $name runs in $DIR"
	halt "$DIR" "agent-$name" kill
	;;
*) die "usage: k8s.sh build|bin|kwok-bin|start DIR [--nodes N] [--cpu C] [--memory M] [--kwok-nodes K]|stop DIR|node DIR NAME|kwok-node DIR NAME|kill-node DIR NAME" ;;
esac

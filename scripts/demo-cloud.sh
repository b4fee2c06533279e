#!/usr/bin/env bash
# The cloud demo (`make demo-cloud`): a local Kubernetes control plane with
# two small test nodes (scripts/k8s.sh), a ZooKeeper (scripts/zk.sh) and an
# `ejob cloud` scheduler whose launcher is KUBERNETES. It registers an app
# (a single script served over HTTP) and a TRANSIENT job of 3 items with
# curl, printing each command, triggers the job, shows which pod on which
# node ran which item, kills the node of one item and shows the scheduler
# re-running that item on the other node. Everything is stopped and removed
# on exit (also on Ctrl-C). About a minute and a half once the Kubernetes
# binaries are cached; without them k8s.sh builds them first (minutes).
# Environment: DEMO_ITEM_SECONDS (default 20) is how long each item runs.
set -euo pipefail
cd "$(dirname "$0")/.."
item_seconds=${DEMO_ITEM_SECONDS:-20}

dir=$(mktemp -d)
declare -a pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	bash scripts/k8s.sh stop "$dir/k8s" >/dev/null 2>&1 || true
	bash scripts/zk.sh stop "$dir/zk" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== building bin/ejob and the Kubernetes launcher plugin"
go build -o bin/ejob ./cmd/ejob
mkdir -p "$dir/plugins"
(cd plugins/launcher/kubernetes && go build -o "$dir/plugins/ejob-launcher-kubernetes" ./cmd/ejob-launcher-kubernetes)

if ! bash scripts/k8s.sh bin >/dev/null 2>&1; then
	echo "== no cached Kubernetes binaries: scripts/k8s.sh builds them first (minutes: about 6.5 on 2 idle cores)"
fi
echo "== starting Kubernetes: scripts/k8s.sh start DIR --nodes 2 --cpu 1 --memory 1Gi"
K8S_NODE_GRACE=8s bash scripts/k8s.sh start "$dir/k8s" --nodes 2 --cpu 1 --memory 1Gi
kubectl="$(bash scripts/k8s.sh bin)/kubectl --kubeconfig $dir/k8s/kubeconfig"

echo "== starting ZooKeeper (scripts/zk.sh)"
zk=$(bash scripts/zk.sh start "$dir/zk")
echo "   ZooKeeper on $zk"

# The app: one script, served over HTTP. Each run appends its item, node and
# task id to runs.txt (the nodes run pods as host processes), then works
# (a failover run for 5 s).
mkdir -p "$dir/app"
: >"$dir/runs.txt"
cat >"$dir/app/app.sh" <<APP
#!/bin/sh
echo "item \$EJOB_SHARDING_ITEM ran on \$EJOB_NODE_NAME, task \$EJOB_TASK_ID" >>"$dir/runs.txt"
case "\$EJOB_TASK_ID" in *@-@FAILOVER@-@*) exec sleep 5 ;; esac
exec sleep $item_seconds
APP
app_port=$(bash -c 'source scripts/ports.sh; pick_port')
python3 -m http.server "$app_port" --bind 127.0.0.1 --directory "$dir/app" >"$dir/app.log" 2>&1 &
pids+=($!)

password=demo-$RANDOM$RANDOM
hash=$(printf '%s\n' "$password" | bin/ejob hash-password)
api_port=$(bash -c 'source scripts/ports.sh; pick_port')
cat >"$dir/cloud.yaml" <<CONF
elasticjob:
  regCenter:
    serverLists: "$zk"
    namespace: ejob-demo-cloud
ejob:
  pluginsDir: $dir/plugins
  http:
    listen: 127.0.0.1:$api_port
    users: [{name: admin, passwordHash: '$hash', role: admin}]
  cloud:
    launcher: {type: KUBERNETES}
    kubernetes: {kubeconfig: $dir/k8s/kubeconfig, namespace: default}
    pollInterval: 500ms
CONF
echo "== starting the scheduler: bin/ejob cloud -c cloud.yaml"
sed 's/^/   | /' "$dir/cloud.yaml"
bin/ejob cloud -c "$dir/cloud.yaml" >"$dir/cloud.log" 2>&1 &
pids+=($!)
api=http://127.0.0.1:$api_port
for _ in $(seq 300); do curl -fs "$api/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "$api/healthz" >/dev/null || { echo "demo: the scheduler did not start:" >&2; cat "$dir/cloud.log" >&2; exit 1; }
echo "   REST API and console on $api  (user admin, password $password)"
echo

# call prints the curl command and runs it.
call() {
	local method=$1 path=$2 body=${3:-}
	echo "\$ curl -s -X $method $api$path -H \"Access-Token: \$TOKEN\" -H 'Content-Type: application/json'${body:+ -d '$body'}"
	curl -s -X "$method" "$api$path" -H "Access-Token: ${token:-}" -H 'Content-Type: application/json' ${body:+-d "$body"} | sed 's/^/   /'
	echo
}
# placed waits (up to 10 s) until the scheduler has seen every running
# item on its node: its next poll of the launcher after the pods start.
placed() {
	for _ in $(seq 50); do
		curl -s "$api/api/job/tasks/running" -H "Access-Token: $token" |
			jq -e '(.model | length > 0) and all(.model[]; .slaveId != "unassigned-slave" and .state == "running")' >/dev/null && return
		sleep 0.2
	done
}
echo "== logging in"
echo "\$ TOKEN=\$(curl -s -X POST $api/api/login -d '{\"username\":\"admin\",\"password\":\"...\"}' | jq -r .model.accessToken)"
token=$(curl -s -X POST "$api/api/login" -H 'Content-Type: application/json' \
	-d "{\"username\":\"admin\",\"password\":\"$password\"}" | jq -r .model.accessToken)
echo "== registering the app and a TRANSIENT job of 3 items"
call POST /api/app "{\"appName\":\"demo-app\",\"appURL\":\"http://127.0.0.1:$app_port/app.sh\",\"bootstrapScript\":\"sh app.sh\",\"cpuCount\":0.1,\"memoryMB\":16}"
call POST /api/job/register '{"jobName":"demo","appName":"demo-app","jobExecutionType":"TRANSIENT","shardingTotalCount":3,"cpuCount":0.2,"memoryMB":32,"failover":true}'
echo "== triggering it"
call POST /api/job/trigger demo

for _ in $(seq 600); do [ "$(wc -l <"$dir/runs.txt")" -ge 3 ] && break; sleep 0.2; done
echo "== what the items report"
sed 's/^/   /' "$dir/runs.txt"
echo "== which pod runs which item"
$kubectl get pods -l ejob.io/job=demo -o wide | sed 's/^/   /'
placed
call GET /api/job/tasks/running

victim=$(sed -n 's/.* ran on \(node-[0-9]*\),.*/\1/p' "$dir/runs.txt" | head -1)
[ -n "$victim" ] || { echo "demo: no item ran on a node" >&2; exit 1; }
echo "== killing node $victim (its agent and the processes it runs): scripts/k8s.sh kill-node DIR $victim"
bash scripts/k8s.sh kill-node "$dir/k8s" "$victim"
echo "   Kubernetes marks the node not Ready, evicts its pods (30 s toleration), the scheduler sees"
echo "   their items lost and runs only those again, as a FAILOVER fire"
lost=$(grep -c "on $victim," "$dir/runs.txt")
# failover_queued: the scheduler lists failover tasks (before they run again).
failover_queued() {
	curl -s "$api/api/job/tasks/failover" -H "Access-Token: $token" | jq -e '.model | length > 0' >/dev/null
}
for _ in $(seq 900); do
	if failover_queued; then
		call GET /api/job/tasks/failover
		break
	fi
	grep -q '@-@FAILOVER@-@' "$dir/runs.txt" && break
	sleep 0.2
done
for _ in $(seq 900); do
	[ "$(grep -c '@-@FAILOVER@-@' "$dir/runs.txt")" -ge "$lost" ] && break
	sleep 0.2
done
grep -q '@-@FAILOVER@-@' "$dir/runs.txt" || { echo "demo: no failover within 3 minutes; scheduler log:" >&2; tail -40 "$dir/cloud.log" >&2; exit 1; }
echo "== the failover task runs (type FAILOVER)"
placed
call GET /api/job/tasks/running
echo "== what the items report now"
sed 's/^/   /' "$dir/runs.txt"
echo "== pods of the job"
$kubectl get pods -l ejob.io/job=demo -o wide | sed 's/^/   /'
$kubectl get nodes | sed 's/^/   /'
echo "== deregistering the job (what runs is deleted)"
call DELETE /api/job/demo/deregister
echo "== stopping everything"

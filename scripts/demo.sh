#!/usr/bin/env bash
# The main demo (`make demo`): builds ejob and runs one standalone host (no
# ZooKeeper: the registry is embedded) with the jobs of
# examples/demo/standalone.yaml for about 15 seconds:
#   - cityReport, a SCRIPT job, every 3 s, 3 sharding items: examples/demo/report.sh
#     prints each item it receives;
#   - pingBilling, an HTTP job, every 5 s, 2 items: POSTs to a tiny local endpoint
#     (examples/demo/httpecho) that prints the shardingContext header of each request.
# The host serves the web console on http://127.0.0.1:8088 (the demo prints the
# generated admin password) and records each run (examples/demo/ejob-tracing.db);
# while it runs the demo steers it with the CLI on the same file: ejob jobs,
# ejob trigger cityReport, ejob history. Then it stops the host with SIGTERM: no
# new fires, running items drain, clean exit.
#
#   scripts/demo.sh            the job demo above
#   scripts/demo.sh plugins    the plugin runtime: builds bin/ejob and the example plugin
#                              ejob-sharding-rendezvous only; lists the types, previews
#                              each sharding strategy (explaining each row), checks the
#                              plugin (ejob plugins check) and pins it
# Environment: DEMO_SECONDS (default 15) is how long the host runs (DEMO_SECONDS=600
# leaves time to explore the console); EJOB_DEMO_CONSOLE (default 127.0.0.1:8088)
# is the console's address.
set -euo pipefail
cd "$(dirname "$0")/.."

plugins_demo() {
	# Only what the demo shows: the host and one third-party plugin.
	echo "== building bin/ejob and the example plugin ejob-sharding-rendezvous"
	go build -o bin/ejob ./cmd/ejob
	dir=$(mktemp -d) # global: the EXIT trap runs after this function returns
	trap 'rm -rf "$dir"' EXIT
	chmod 755 "$dir" # the host refuses a group/world-writable plugins directory
	go build -o "$dir/ejob-sharding-rendezvous" ./examples/sharding-rendezvous/ejob-sharding-rendezvous
	chmod 755 "$dir/ejob-sharding-rendezvous"
	local instances=192.168.1.2@-@200,192.168.1.1@-@100,192.168.1.10@-@50
	echo
	echo "== ejob plugins list --plugins-dir $dir"
	echo "   Rows marked (built-in) are the types the ejob binary serves itself, all from one"
	echo "   process: hence the same binary and checksum on each. RENDEZVOUS is served by the"
	echo "   plugin just copied into the directory; nothing was recompiled."
	bin/ejob plugins list --plugins-dir "$dir"
	echo
	echo "== ejob sharding preview: 10 items of a job on 3 instances ($instances),"
	echo "   given in the runtime's order (descending ids); each line maps an instance to its items."
	preview() { # strategy job explanation
		echo
		echo "-- $1, job $2: $3"
		bin/ejob sharding preview --plugins-dir "$dir" --strategy "$1" --job "$2" --total 10 --instances "${4:-$instances}"
	}
	preview AVG_ALLOCATION javaSimpleJob "consecutive blocks of 10/3 items in instance order; the 1 left over goes to the first instance"
	preview ODEVITY javaSimpleJob "the job name's Java hash is odd: the list is kept, so the same as AVG_ALLOCATION"
	preview ODEVITY report "the hash of \"report\" is even: the list is reversed first, so the first instance is now .10"
	preview ROUND_ROBIN javaSimpleJob "the list is rotated left by |hash| % 3 = 2 first, so the extra item goes to .10"
	preview RENDEZVOUS javaSimpleJob "the plugin: each item goes to the instance with the highest hash of (job, item, instance)"
	preview RENDEZVOUS javaSimpleJob "192.168.1.10@-@50 gone: only its items move; the others keep theirs" 192.168.1.2@-@200,192.168.1.1@-@100
	preview AVG_ALLOCATION javaSimpleJob "192.168.1.10@-@50 gone: items of the surviving instances move too (3, 4 and 9)" 192.168.1.2@-@200,192.168.1.1@-@100
	echo
	echo "== ejob plugins check $dir: the conformance suite, run against the binary through the real transport"
	bin/ejob plugins check "$dir"
	echo
	echo "== ejob plugins lock: pin each binary's SHA-256; then list again, which verifies them"
	bin/ejob plugins lock --plugins-dir "$dir"
	bin/ejob plugins list --plugins-dir "$dir" >/dev/null && echo "pinned binaries verified"
}

if [ "${1:-}" = plugins ]; then
	plugins_demo
	exit 0
fi
[ $# -eq 0 ] || { echo "usage: $0 [plugins]" >&2; exit 2; }

seconds=${DEMO_SECONDS:-15}
echo "== building ejob and the demo's HTTP endpoint"
go build -o bin/ejob ./cmd/ejob
go build -o bin/demo/httpecho ./examples/demo/httpecho

dir=$(mktemp -d)
echo_pid="" host_pid="" tail_pid=""
cleanup() {
	local p
	for p in $host_pid $echo_pid $tail_pid; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The HTTP job's endpoint, on a free port.
bin/demo/httpecho -addr 127.0.0.1:0 -port-file "$dir/port" &
echo_pid=$!
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
[ -s "$dir/port" ] || { echo "demo: httpecho did not start" >&2; exit 1; }
port=$(cat "$dir/port")

# What the SCRIPT job's items print.
: >"$dir/script.out"
tail -n +1 -f "$dir/script.out" &
tail_pid=$!

echo "== ejob run -c examples/demo/standalone.yaml   (standalone, for ${seconds}s; endpoint on port $port)"
sed -n '/^elasticjob:/,$p' examples/demo/standalone.yaml | sed 's/^/   | /'
echo
config=examples/demo/standalone.yaml
EJOB_DEMO_HTTP_PORT=$port EJOB_DEMO_OUT="$dir/script.out" EJOB_DEMO_CONSOLE=${EJOB_DEMO_CONSOLE:-127.0.0.1:8088} \
	bin/ejob run -c $config >"$dir/ejob.log" 2>&1 &
host_pid=$!
for _ in $(seq 200); do grep -q 'host started' "$dir/ejob.log" && break; kill -0 "$host_pid" 2>/dev/null || break; sleep 0.05; done
grep -q 'host started' "$dir/ejob.log" || { echo "demo: ejob did not start; its log:" >&2; cat "$dir/ejob.log" >&2; exit 1; }
console=$(grep -o 'operations HTTP server listening: .*addr=[^ ]*' "$dir/ejob.log" | sed 's/.*addr=//' | head -1)
password=$(grep -o 'password=[^ ]*' "$dir/ejob.log" | sed 's/password=//' | head -1)
echo "== the web console: http://$console/   user: admin   password: $password"
echo "   (generated for this run: the file has no ejob.http.users; see docs/console.md)"
echo

# cli runs an operator command against the running host, as a user would.
cli() {
	echo "== bin/ejob $* -c $config"
	bin/ejob "$@" -c $config | sed 's/^/   /'
}

# Show the host's own lifecycle lines next to the jobs' output.
show_host_log() {
	grep -E 'host started|resharding committed|shutting down|shut down|ERROR|WARN' "$dir/ejob.log" |
		sed -E 's/^[^ ]+ +\[([A-Z]+)\] +/[ejob] \1 /' >"$dir/host.view" || true
	if [ -s "$dir/host.view" ]; then
		tail -n +"$((shown + 1))" "$dir/host.view"
		shown=$(wc -l <"$dir/host.view")
	fi
}
shown=0
start=$SECONDS
end=$((start + seconds))
step=0
while [ $SECONDS -lt $end ]; do
	if ! kill -0 "$host_pid" 2>/dev/null; then
		echo "demo: ejob exited early; its log:" >&2
		cat "$dir/ejob.log" >&2
		exit 1
	fi
	show_host_log
	# The CLI steers the running host through its control socket.
	if [ $step -eq 0 ] && [ $SECONDS -ge $((start + 4)) ]; then
		step=1
		cli jobs
		cli trigger cityReport
	elif [ $step -eq 1 ] && [ $SECONDS -ge $((end - 3)) ]; then
		step=2
		cli history --job cityReport --limit 6
	fi
	sleep 0.2
done

echo
echo "== SIGTERM: no new fires, running items drain (ejob.drainTimeout), then a clean exit"
kill -TERM "$host_pid"
status=0
wait "$host_pid" || status=$?
host_pid=""
show_host_log
sleep 0.3 # let tail print the last items
echo "== ejob exited with status $status"
[ "$status" -eq 0 ] || { cat "$dir/ejob.log" >&2; exit 1; }
echo
echo "Explore it longer: DEMO_SECONDS=600 make demo, open the console, and in another"
echo "terminal: bin/ejob jobs -c $config (README: Quickstart)."
echo "More: make demo-cluster (three hosts on a local ZooKeeper, kill -9, failover),"
echo "      make demo-plugins (plugin discovery, sharding previews, plugins check)."

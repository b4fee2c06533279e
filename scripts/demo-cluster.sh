#!/usr/bin/env bash
# The cluster demo (`make demo-cluster`): a local ZooKeeper (scripts/zk.sh,
# which installs Debian's zookeeper package if missing), three `ejob run`
# hosts sharing examples/demo/cluster.yaml (a SCRIPT job, every second, 6
# sharding items). It prints, second by second, which host ran which items,
# kills one host with kill -9, and shows its items moving to the two
# survivors once its ZooKeeper session expires. Everything is stopped and
# removed on exit (also on Ctrl-C). About a minute.
# Environment: DEMO_KILL_AFTER (default 15) and DEMO_AFTER_KILL (default 15)
# are the seconds before and after the kill.
set -euo pipefail
cd "$(dirname "$0")/.."
kill_after=${DEMO_KILL_AFTER:-15}
after_kill=${DEMO_AFTER_KILL:-15}
config=examples/demo/cluster.yaml

echo "== building ejob"
go build -o bin/ejob ./cmd/ejob

dir=$(mktemp -d)
declare -a pid=()
cleanup() {
	local i
	for i in 1 2 3; do
		if [ -n "${pid[$i]:-}" ]; then kill -TERM "${pid[$i]}" 2>/dev/null || true; fi
	done
	wait 2>/dev/null || true
	bash scripts/zk.sh stop "$dir/zk" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== starting ZooKeeper (scripts/zk.sh, tickTime 200 ms)"
zk=$(bash scripts/zk.sh start "$dir/zk" --tick 200)
echo "   ZooKeeper on $zk"
export EJOB_DEMO_ZK=$zk EJOB_DEMO_NAMESPACE=ejob-demo-$$ EJOB_DEMO_OUT=$dir/runs.txt
: >"$EJOB_DEMO_OUT"

echo "== starting host-1, host-2, host-3: bin/ejob run -c $config"
for i in 1 2 3; do
	EJOB_DEMO_HOST=host-$i bin/ejob run -c "$config" >"$dir/host-$i.log" 2>&1 &
	pid[$i]=$!
done
for i in 1 2 3; do
	for _ in $(seq 300); do grep -q 'host started' "$dir/host-$i.log" && break; sleep 0.1; done
	grep -q 'host started' "$dir/host-$i.log" || { echo "demo: host-$i did not start:" >&2; cat "$dir/host-$i.log" >&2; exit 1; }
	echo "   host-$i is pid ${pid[$i]}"
done
console=$(grep -o 'operations HTTP server listening: .*addr=[^ ]*' "$dir/host-1.log" | sed 's/.*addr=//' | head -1)
password=$(grep -o 'password=[^ ]*' "$dir/host-1.log" | sed 's/password=//' | head -1)
echo "   console of host-1 (the whole cluster): http://$console/  user admin, password $password"
echo

# show_seconds prints each fire second up to two seconds ago that is not
# printed yet: which host ran which items, and the items nobody ran.
printed=0
show_seconds() {
	local upto=$(($(date +%s) - 2)) line sec rest
	sort -k1,1n -k2,2 -k3,3n "$EJOB_DEMO_OUT" |
		awk -v from="$printed" -v to="$upto" '
			$1 > from && $1 <= to {
				if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
				k = $1 SUBSEP $2; items[k] = items[k] (items[k] == "" ? "" : ",") $3; ran[$1, $3] = 1
			}
			END {
				for (i = 1; i <= n; i++) {
					s = order[i]; out = s
					for (h = 1; h <= 3; h++) {
						v = items[s, "host-" h]; out = out sprintf("  host-%d: %-8s", h, v == "" ? "-" : v)
					}
					miss = ""
					for (it = 0; it < 6; it++) if (!((s, it) in ran)) miss = miss (miss == "" ? "" : ",") it
					if (miss != "") out = out "  not run: " miss
					print out
				}
			}' >"$dir/seconds"
	while read -r sec rest; do
		printf '%s  %s\n' "$(date -d "@$sec" +%H:%M:%S)" "$rest"
		printed=$sec
	done <"$dir/seconds"
}

# show_events prints the hosts' resharding and failover log lines not
# printed yet.
declare -a seen_lines=(0 0 0 0)
show_events() {
	local i n
	for i in 1 2 3; do
		grep -E 'resharding committed|crashed|claimed failover|became leader' "$dir/host-$i.log" 2>/dev/null |
			sed -E "s/^[^ ]+ +\[[A-Z]+\] +ejob(\.coord)?: /      [host-$i] /; s/ instance=[^ ]+//" >"$dir/events-$i" || true
		n=$(wc -l <"$dir/events-$i")
		if [ "$n" -gt "${seen_lines[$i]}" ]; then
			tail -n +"$((seen_lines[$i] + 1))" "$dir/events-$i"
			seen_lines[$i]=$n
		fi
	done
}

watch_for() { # watch_for SECONDS
	local end=$((SECONDS + $1))
	while [ $SECONDS -lt $end ]; do
		show_events
		show_seconds
		sleep 0.5
	done
}

echo "== which host runs which of the 6 items, each second (AVG_ALLOCATION)"
watch_for "$kill_after"
echo
echo "== bin/ejob jobs -c $config"
bin/ejob jobs -c "$config" | sed 's/^/   /'
echo
echo "== $(date +%H:%M:%S) kill -9 host-2 (pid ${pid[2]}): its items are not run until its session expires"
echo "   (sessionTimeoutMilliseconds: 3000), then the leader reshards over host-1 and host-3"
kill -9 "${pid[2]}"
wait "${pid[2]}" 2>/dev/null || true
pid[2]=""
watch_for "$after_kill"
show_seconds
echo
echo "== bin/ejob jobs -c $config"
bin/ejob jobs -c "$config" | sed 's/^/   /'
echo
echo "== stopping host-1 and host-3 (SIGTERM: drain, leave the registry) and ZooKeeper"

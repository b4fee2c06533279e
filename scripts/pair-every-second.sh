#!/usr/bin/env bash
# Runs core/kernel's and bench/gocron's BenchmarkEverySecond100Jobs in
# adjacent pairs (each about 25 s), alternating which goes first, and prints
# each pair's CPU ratio (ejob / gocron), both start delays and the load
# average, then the median ratio. The machine may be loaded by other work:
# the two runs of a pair share their minute, so their ratio is fair even
# when the absolute figures move.
#
#   scripts/pair-every-second.sh [PAIRS]      (default 8)
set -euo pipefail
pairs=${1:-8}
root=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$root" && "$go" test -c -o "$tmp/kernel.test" ./core/kernel/)
(cd "$root/bench/gocron" && "$go" test -c -o "$tmp/gocron.test" .)

# run BIN: one benchmark run; prints "cpu p50 p99 goroutines".
run() {
	"$1" -test.run '^$' -test.bench '^BenchmarkEverySecond100Jobs$' -test.benchtime 1x |
		awk '/^BenchmarkEverySecond100Jobs/ {
			for (i = 3; i < NF; i++) m[$(i+1)] = $i
			print m["cpu-s/20s"], m["fire-to-run-p50-ms"], m["fire-to-run-p99-ms"], m["goroutines"]
			found = 1
		}
		END { if (!found) exit 1 }'
}

printf '%-4s %-9s %-9s %-6s %-13s %-13s %-7s %s\n' pair ejob-cpu gocron-cpu ratio 'ejob p50/p99' 'gocron p50/p99' gor. load
ratios=()
for ((i = 1; i <= pairs; i++)); do
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	if ((i % 2)); then
		e=$(run "$tmp/kernel.test"); g=$(run "$tmp/gocron.test")
	else
		g=$(run "$tmp/gocron.test"); e=$(run "$tmp/kernel.test")
	fi
	read -r ec ep50 ep99 egr <<<"$e"
	read -r gc gp50 gp99 ggr <<<"$g"
	r=$(awk -v a="$ec" -v b="$gc" 'BEGIN { printf "%.2f", a / b }')
	ratios+=("$r")
	printf '%-4d %-9s %-10s %-6s %-13s %-14s %-7s %s\n' "$i" "$ec" "$gc" "$r" "$ep50/$ep99" "$gp50/$gp99" "$egr/$ggr" "$load"
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{ r[NR] = $1 } END {
	m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
	printf "median CPU ratio (ejob / gocron) of %d pairs: %.2f (range %s-%s)\n", NR, m, r[1], r[NR]
}'
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

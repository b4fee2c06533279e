#!/bin/sh
# The SCRIPT job of `make demo` (examples/demo/standalone.yaml). ejob runs
# it once per sharding item, without a shell in between, and appends the
# item's ShardingContext JSON as the last argument:
#   {"jobName":"cityReport","taskId":"cityReport@-@0,1,2@-@READY@-@10.0.0.5@-@4242",
#    "shardingTotalCount":3,"jobParameter":"daily","shardingItem":1,"shardingParameter":"Shanghai"}
# It prints one line per item to $EJOB_DEMO_OUT (default: stderr, which the
# host logs), and one to stdout: the run's output, which `ejob history
# --output` and the console show.
json=$1
field() { printf '%s' "$json" | sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p"; }
out=${EJOB_DEMO_OUT:-/dev/stderr}
printf '[SCRIPT %s] %s item %s/%s (%s)  jobParameter=%s  pid %s\n' \
	"$(field jobName)" "$(date +%H:%M:%S)" "$(field shardingItem)" "$(field shardingTotalCount)" \
	"$(field shardingParameter)" "$(field jobParameter)" "$$" >>"$out"
printf 'report for %s written (item %s)\n' "$(field shardingParameter)" "$(field shardingItem)"

#!/bin/sh
# The SCRIPT job of `make demo-cluster` (examples/demo/cluster.yaml): appends
# "EPOCH-SECOND HOST ITEM PARAMETER" to $EJOB_DEMO_OUT for each item it runs;
# scripts/demo-cluster.sh groups these lines by second. $EJOB_DEMO_HOST names
# the host (each `ejob run` passes its environment to its scripts). The
# item's ShardingContext JSON is the last argument.
json=$1
item=$(printf '%s' "$json" | sed -n 's/.*"shardingItem":\([0-9]*\).*/\1/p')
param=$(printf '%s' "$json" | sed -n 's/.*"shardingParameter":"\([^"]*\)".*/\1/p')
printf '%s %s %s %s\n' "$(date +%s)" "${EJOB_DEMO_HOST:-?}" "$item" "$param" >>"${EJOB_DEMO_OUT:-/dev/stderr}"

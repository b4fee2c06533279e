#!/usr/bin/env bash
# The main demo: builds ejob and its plugins, installs the example plugin into
# a fresh plugins directory, lists what the host discovers, and previews how
# built-in and third-party strategies shard a job across three instances.
set -euo pipefail
cd "$(dirname "$0")/.."
make build
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp bin/plugins/ejob-sharding-rendezvous "$dir/"
instances=192.168.1.2@-@200,192.168.1.1@-@100,192.168.1.10@-@50
echo
echo "== ejob plugins list --plugins-dir $dir"
bin/ejob plugins list --plugins-dir "$dir"
for s in AVG_ALLOCATION ODEVITY ROUND_ROBIN RENDEZVOUS; do
  echo
  echo "== ejob sharding preview --strategy $s --job javaSimpleJob --total 10"
  bin/ejob sharding preview --plugins-dir "$dir" --strategy "$s" --job javaSimpleJob --total 10 --instances "$instances"
done
echo
echo "== ejob plugins lock, then list again (pinned)"
bin/ejob plugins lock --plugins-dir "$dir"
bin/ejob plugins list --plugins-dir "$dir" >/dev/null && echo "pinned binaries verified"

#!/usr/bin/env bash
# vendor-web.sh: fetches the web console's front-end libraries from the npm
# registry at pinned versions (npm pack, no install, no build step) and copies
# the files the console loads, with each package's LICENSE, into
# host/console/web/vendor/<name>-<version>/. Run it after changing a version
# below, then update the import map in host/console/web/*.html and commit the
# result: the console is served from the embedded copy, never from a CDN.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=host/console/web/vendor

# name version files... (paths inside the package tarball, under package/)
packages=(
	"preact 11.2.0 LICENSE dist/preact.mjs hooks/dist/hooks.mjs"
	"htm 3.1.1 LICENSE dist/htm.module.js"
	"tabulator-tables 6.5.3 LICENSE dist/js/tabulator_esm.min.mjs dist/css/tabulator.min.css"
	"uplot 1.6.32 LICENSE dist/uPlot.esm.js dist/uPlot.min.css"
)

command -v npm >/dev/null || { echo "vendor-web.sh: npm is needed (apt-get install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$dest"
mkdir -p "$dest"
for p in "${packages[@]}"; do
	read -r name version files <<<"$p"
	echo "vendor-web.sh: $name@$version" >&2
	(cd "$tmp" && npm pack --silent "$name@$version" >/dev/null 2>&1)
	tgz="$tmp/$name-$version.tgz"
	[ -f "$tgz" ] || { echo "vendor-web.sh: npm pack $name@$version gave no $tgz" >&2; exit 1; }
	mkdir -p "$tmp/$name" && tar -xzf "$tgz" -C "$tmp/$name"
	out="$dest/$name-$version"
	for f in $files; do
		mkdir -p "$out/$(dirname "$f")"
		cp "$tmp/$name/package/$f" "$out/$f"
	done
	# What was fetched, for a reviewer: the tarball's SHA-512 as the registry states it.
	integrity=$(cd "$tmp" && npm view "$name@$version" dist.integrity 2>/dev/null)
	printf '%s@%s\nintegrity %s\nfrom https://registry.npmjs.org/%s\n' "$name" "$version" "$integrity" "$name" >"$out/VENDORED"
done
echo "vendor-web.sh: done; sizes:" >&2
du -sh "$dest"/* >&2

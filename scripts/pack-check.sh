#!/usr/bin/env bash
# The CLI installs without cloning: pack the package as npm would publish it,
# install the tarball globally into a temporary prefix (only its runtime
# dependencies, as a laptop would get them), then run the installed `weir`.
# Fails when a file the CLI needs is left out of package.json "files", when a
# runtime import sits in devDependencies, or when npm warns that a dependency
# needs another Node than "engines" promises. .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d "${TMPDIR:-/tmp}/weir-pack-XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "== npm pack"
tarball="$(npm pack --silent --pack-destination "$work" | tail -n 1)"
tar -tzf "$work/$tarball" | sed 's|^package/||' | sort >"$work/files.txt"
# prepack ships the lockfile as npm-shrinkwrap.json: a global install gets
# the tested tree, package.json "overrides" included (npm applies overrides
# only to the root project, so without it the Node 22-only versions return).
for must in npm-shrinkwrap.json bin/weir.mjs src/cli.ts src/db/migrations/0001_foundation.sql src/dashboard/public/index.html README.md package.json; do
  grep -qx "$must" "$work/files.txt" || { echo "pack-check: $must is missing from the tarball (package.json \"files\")" >&2; exit 1; }
done
for mustnot in test/ bench/ .ci/ node_modules/ data/; do
  if grep -q "^$mustnot" "$work/files.txt"; then echo "pack-check: the tarball holds $mustnot" >&2; exit 1; fi
done
echo "   $(wc -l <"$work/files.txt") files in $tarball"

echo "== npm install -g $tarball (prefix $work/prefix)"
npm install -g --prefix "$work/prefix" --no-audit --no-fund --prefer-offline "$work/$tarball" >"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; exit 1; }
if grep -q EBADENGINE "$work/install.log"; then
  grep EBADENGINE "$work/install.log" >&2
  echo "pack-check: a dependency needs another Node than package.json \"engines\" says" >&2
  exit 1
fi

weir="$work/prefix/bin/weir"
# Run from elsewhere, with nothing of the checkout on the path.
cd "$work"
echo "== weir --help"
"$weir" --help >"$work/help.txt"
grep -q "listen" "$work/help.txt" || { cat "$work/help.txt" >&2; echo "pack-check: weir --help does not list listen" >&2; exit 1; }
echo "== weir listen --help"
"$weir" listen --help >"$work/listen-help.txt"
grep -q "port" "$work/listen-help.txt" || { cat "$work/listen-help.txt" >&2; echo "pack-check: weir listen --help says nothing of the port" >&2; exit 1; }
echo "pack-check: ok"

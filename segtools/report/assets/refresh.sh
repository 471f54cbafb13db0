#!/usr/bin/env bash
# Refresh the vendored uPlot (the report's chart library) from the npm registry, and pin it.
#
#   bash segtools/report/assets/refresh.sh            # the version pinned in uplot.json
#   bash segtools/report/assets/refresh.sh 1.6.32     # another version (then review the diff)
#
# `npm pack` fetches the package tarball and checks it against the registry's integrity hash;
# the minified build, its stylesheet and its licence are copied here, and uplot.json records
# the version, the tarball's integrity and the sha256 of each copied file. segtools checks
# those sha256 sums before it inlines the files into a report (segtools/report/assets.py).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
VERSION="${1:-$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$HERE/uplot.json")}"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
(cd "$WORK" && npm pack --silent "uplot@$VERSION" > pack.txt)
TARBALL="$WORK/$(tail -n1 "$WORK/pack.txt")"
tar -xzf "$TARBALL" -C "$WORK"
cp "$WORK/package/dist/uPlot.iife.min.js" "$HERE/uPlot.iife.min.js"
cp "$WORK/package/dist/uPlot.min.css" "$HERE/uPlot.min.css"
cp "$WORK/package/LICENSE" "$HERE/uPlot.LICENSE"
INTEGRITY="$(cd "$WORK" && npm view --silent "uplot@$VERSION" dist.integrity)"

"$PYTHON" - "$HERE" "$VERSION" "$INTEGRITY" <<'PY'
import hashlib, json, sys
from pathlib import Path
here, version, integrity = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
files = {name: hashlib.sha256((here / name).read_bytes()).hexdigest()
         for name in ("uPlot.iife.min.js", "uPlot.min.css", "uPlot.LICENSE")}
pin = {"package": "uplot", "version": version, "license": "MIT",
       "source": f"npm registry, uplot@{version} (dist/uPlot.iife.min.js, dist/uPlot.min.css, LICENSE)",
       "integrity": integrity, "sha256": files}
(here / "uplot.json").write_text(json.dumps(pin, indent=2) + "\n")
print(f"uPlot {version}: " + ", ".join(f"{n} {h[:12]}" for n, h in files.items()))
PY

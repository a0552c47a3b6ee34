#!/usr/bin/env bash
# Checks the layers of docs/ARCHITECTURE.md: every `crate::` path in runtime/src may
# name a module of its own layer or of a lower one, never a higher one. Run by
# scripts/test.sh; prints each import that points up and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - <<'PY'
import pathlib, re, sys

# The table of docs/ARCHITECTURE.md, "Layers".
LAYERS = [
    ["math", "profiling", "codec"],
    ["jobs"],
    ["frame", "runtime"],
    ["spatial", "raytrace"],
    ["terrain", "shapes"],
    ["collide"],
    ["character", "query", "physics", "gi", "gpu"],
    ["integrated"],
]
layer = {m: i for i, ms in enumerate(LAYERS) for m in ms}
# Modules of one layer import each other only where listed here.
SIDEWAYS = {("runtime", "frame"), ("gpu", "gi"), ("physics", "character"), ("codec", "math")}
# Imports that still break the table, to be removed by re-laying the GPU seam
# (docs/ARCHITECTURE.md), with the files that make them. Nothing may join them.
KNOWN = {
}

root = pathlib.Path("runtime/src")
bad, seen = [], set()
for path in sorted(root.rglob("*.rs")):
    rel = path.relative_to(root)
    top = rel.parts[0].removesuffix(".rs")
    if top == "lib":
        continue
    if top not in layer:
        bad.append(f"{rel}: module `{top}` is in no layer of docs/ARCHITECTURE.md")
        continue
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith("//"):
            continue
        for target in re.findall(r"crate::([a-z_]+)", line):
            if target == top or target not in layer:
                continue
            up = layer[target] > layer[top]
            sideways = layer[target] == layer[top] and (top, target) not in SIDEWAYS
            if not (up or sideways):
                continue
            if str(rel) in KNOWN.get((top, target), ()):
                seen.add((top, target, str(rel)))
                continue
            bad.append(f"{rel}:{n}: `{top}` (layer {layer[top]}) imports `{target}` (layer {layer[target]})")
for (a, b), files in sorted(KNOWN.items()):
    for f in sorted(files):
        if (a, b, f) not in seen:
            bad.append(f"the known exception {f}: {a} -> {b} no longer occurs: remove it from scripts/layers.sh")
if bad:
    print("imports against the layers of docs/ARCHITECTURE.md:", *bad, sep="\n  ", file=sys.stderr)
    sys.exit(1)
known = sum(len(f) for f in KNOWN.values())
print(f"layers: every crate:: import of {root} follows docs/ARCHITECTURE.md ({known} files with known exceptions)")
PY

#!/usr/bin/env bash
# The performance report: runs the criterion benches (all, or the ones named) and
# writes a markdown table of every ratio they report against their peer (rayon,
# rapier3d, parry3d, the naive and sequential references), with the machine it ran
# on, to build/report/figures.md. With --docs it also replaces the generated table
# in docs/BENCHMARKS.md (between the "report:begin" and "report:end" markers).
#
#   bash scripts/report.sh [--quick] [--docs] [BENCH ...]
#
# --quick measures for 3 s after 1 s of warm-up per benchmark (criterion's defaults
# are 5 s and 3 s); the full run of every bench took 28 minutes on 2 cores.
# BENCH names a file of benches/benches/ (jobs, frame_graph, broadphase_tree,
# voxel_masks, kdtree, octree_pick, gpu_trace, narrowphase, world, world_queries, ddgi,
# integrated, water).
# A ratio below 1 means Kiln took less time than the peer (for sizes: less memory).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

quick=() docs=0 benches=()
for arg in "$@"; do
    case $arg in
    --quick) quick=(--warm-up-time 1 --measurement-time 3) ;;
    --docs) docs=1 ;;
    -*) echo "unknown option $arg" >&2; exit 2 ;;
    *) benches+=("$arg") ;;
    esac
done
if [ ${#benches[@]} -eq 0 ]; then
    mapfile -t benches < <(sed -n 's/^name = "\(.*\)"$/\1/p' benches/Cargo.toml | grep -v '^kiln-benches$')
fi

out=build/report
mkdir -p "$out"
: >"$out/bench.log"
for bench in "${benches[@]}"; do
    echo "== cargo bench -p kiln-benches --bench $bench ${quick[*]}" | tee -a "$out/bench.log"
    cargo bench -p kiln-benches --locked --bench "$bench" -- "${quick[@]}" 2>&1 | tee -a "$out/bench.log" |
        grep -E '^(ratio |parity |[a-z_]+: device )' || true
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
gpu=$(sed -nE 's/^[a-z_]+: device (.*)$/\1/p' "$out/bench.log" | head -1)
{
    echo "Measured $(date -u +%Y-%m-%d) on ${cpu:-an unknown CPU} ($(nproc) cores), $(uname -sr), $(rustc --version | cut -d' ' -f1-2)${gpu:+; GPU benches on $gpu}."
    echo "Command: \`bash scripts/report.sh${*:+ $*}\` (benches: ${benches[*]})."
    echo
    echo "| bench group | Kiln | peer | ratio (Kiln / peer) | Kiln | peer |"
    echo "|---|---|---|---|---|---|"
    # "ratio GROUP: OURS / PEER = X  (A vs B)", as kiln_benches::report_ratios prints it.
    sed -nE 's/^ratio ([^:]+): (.+) \/ (.+) = ([0-9.]+)  \((.+) vs (.+)\)$/| \1 | \2 | \3 | **\4** | \5 | \6 |/p' "$out/bench.log"
    sed -nE 's/^ratio ([^:]+): (.+) \/ (.+) = n\/a.*$/| \1 | \2 | \3 | not measured | | |/p' "$out/bench.log"
} >"$out/figures.md"
echo
cat "$out/figures.md"

if [ "$docs" = 1 ]; then
    python3 - "$out/figures.md" <<'EOF'
import sys
table = open(sys.argv[1]).read().strip()
page = open("docs/BENCHMARKS.md").read()
begin, end = "<!-- report:begin -->", "<!-- report:end -->"
a, b = page.index(begin) + len(begin), page.index(end)
open("docs/BENCHMARKS.md", "w").write(page[:a] + "\n" + table + "\n" + page[b:])
EOF
    echo "docs/BENCHMARKS.md: the generated table is updated"
fi

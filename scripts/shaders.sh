#!/usr/bin/env bash
# Compiles vulkan-shaders/*.comp to vulkan-shaders/spv/*.spv with glslc and validates
# each module with spirv-val. The SPIR-V is committed, so `cargo build` never needs
# glslc. With --check, compiles into a temporary folder and fails when a committed
# module differs (CI runs this).
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[[ "${1:-}" == "--check" ]] && check=1
for tool in glslc spirv-val; do
    command -v "$tool" >/dev/null || { echo "shaders.sh: $tool not found (apt-get install glslc spirv-tools)" >&2; exit 1; }
done
out=vulkan-shaders/spv
if (( check )); then
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi
status=0
for src in vulkan-shaders/*.comp; do
    name=$(basename "$src" .comp)
    glslc --target-env=vulkan1.2 -O -Werror -I vulkan-shaders/include -o "$out/$name.spv" "$src"
    spirv-val --target-env vulkan1.2 "$out/$name.spv"
    if (( check )) && ! cmp -s "$out/$name.spv" "vulkan-shaders/spv/$name.spv"; then
        echo "shaders.sh: vulkan-shaders/spv/$name.spv is stale: run scripts/shaders.sh" >&2
        status=1
    fi
done
if (( check )); then
    for spv in vulkan-shaders/spv/*.spv; do
        [[ -f "vulkan-shaders/$(basename "$spv" .spv).comp" ]] || { echo "shaders.sh: $spv has no source" >&2; status=1; }
    done
fi
(( status == 0 )) && echo "shaders.sh: all modules compiled and valid"
exit $status

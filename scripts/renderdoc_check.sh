#!/usr/bin/env bash
# Checks that Kiln's VK_EXT_debug_utils labels appear in a RenderDoc capture: runs the
# demo under `renderdoccmd capture` with KILN_RENDERDOC_FRAME=30 (the demo then wraps
# that frame in RenderDoc's StartFrameCapture / EndFrameCapture, since Kiln never
# presents), converts the capture to XML with `renderdoccmd convert`, and checks that
# every GPU pass the demo's timing table names is a label in it.
#
#   bash scripts/renderdoc_check.sh [DEMO] [OUTDIR]   (defaults build/demo/demo, build/renderdoc)
#
# Needs renderdoccmd (Debian and Ubuntu: apt-get install renderdoccmd) and a GPU whose
# driver has bufferDeviceAddressCaptureReplay: RenderDoc hides bufferDeviceAddress from
# drivers without it, Mesa 22.3's lavapipe among them, and Kiln's kernels reach every
# buffer by device address. Build the demo first (bash scripts/demo.sh). Open
# OUTDIR/kiln_capture.rdc in qrenderdoc to browse the labelled passes.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=${1:-build/demo/demo}
out=${2:-build/renderdoc}
command -v renderdoccmd >/dev/null || { echo "renderdoccmd not found (apt-get install renderdoccmd)" >&2; exit 2; }
[ -x "$demo" ] || { echo "$demo not found: build it with bash scripts/demo.sh" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out"

KILN_RENDERDOC_FRAME=30 KILN_REQUIRE_GPU=1 renderdoccmd capture -w -c "$out/kiln" "$demo" 40 "$out" 300 | tee "$out/demo.log"
capture=$(find "$out" -name 'kiln*.rdc' | head -1)
[ -n "$capture" ] || { echo "RenderDoc wrote no capture (see $out/demo.log)" >&2; exit 1; }
renderdoccmd convert -f "$capture" -o "$out/capture.xml" -c xml

# The labels, in recording order, and the passes the demo timed on the GPU.
grep -A6 'name="vkCmdBeginDebugUtilsLabelEXT"' "$out/capture.xml" |
    sed -n 's/.*name="pLabelName"[^>]*>\([^<]*\)<.*/\1/p' >"$out/labels.txt"
sed -n '/^  GPU pass/,/^  frame, CPU/p' "$out/demo.log" | sed -n 's/^  \(.*[^ ]\)  *[0-9.][0-9.]*$/\1/p' >"$out/passes.txt"
echo "labels in $capture:"
sed 's/^/  /' "$out/labels.txt"
[ -s "$out/passes.txt" ] || { echo "the demo printed no GPU passes (see $out/demo.log)" >&2; exit 1; }
missing=0
while IFS= read -r pass; do
    grep -qxF "$pass" "$out/labels.txt" || { echo "GPU pass without a label in the capture: $pass" >&2; missing=1; }
done <"$out/passes.txt"
[ "$missing" = 0 ] && echo "every GPU pass of the demo's frame ($(wc -l <"$out/passes.txt") passes) is a label in the capture"
exit "$missing"

#!/usr/bin/env bash
# The main demo (the README's first command): builds libkiln, installs it under
# build/prefix, builds the C samples against it and runs samples-c/demo.c: boxes,
# balls and capsules raining on voxel hills with a character walking among them,
# every frame one integrated frame graph (the physics step on the runtime's workers
# while the GPU rebuilds the TLAS from the last step's poses and updates DDGI
# probes), a per-stage CPU/GPU timing table, and four frames rendered with the
# probes' light to build/demo/demo_{0,1,2,3}.png.
# The GPU passes run on the best Vulkan device, Mesa's lavapipe when there is no GPU;
# the demo says which. Arguments go to the demo: [FRAMES] [OUTDIR] [BODIES]
# (defaults 600, build/demo, 300). The other samples are built into build/demo too
# (falling_bodies, trace, gi_render, character, ...); each says what it does in its
# first comment.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
prefix=$PWD/build/prefix
bash scripts/install.sh "$prefix"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig make -C samples-c OUT="$PWD/build/demo" >/dev/null
"$PWD/build/demo/demo" "${1:-600}" "${2:-$PWD/build/demo}" "${3:-300}"

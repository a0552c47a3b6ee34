#!/usr/bin/env bash
# The main demo (the README's first command): builds libkiln, installs it under
# build/prefix, builds the C samples against it and runs the demo:
#   samples-c/hello.c           the runtime and its frame graph
#   samples-c/falling_bodies.c  rigid bodies dropped on voxel terrain, on the runtime's
#                               workers, mirrored as GPU instances (TLAS rebuilt on the
#                               GPU once a second) and rendered by GPU ray tracing to
#                               build/demo/falling_bodies.png
#   samples-c/trace.c           GPU ray tracing of an instanced, skinned scene to
#                               build/demo/trace_{shaded,normals,depth}.png
#   samples-c/gi_render.c       DDGI probes (bake, compression, budgeted updates) lighting
#                               a room, to build/demo/gi_{visibility,no_visibility}.png
# The GPU passes run on the best Vulkan device, Mesa's lavapipe when there is no GPU.
# Arguments go to falling_bodies: [BODIES] [FRAMES].
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
prefix=$PWD/build/prefix
bash scripts/install.sh "$prefix"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig make -C samples-c OUT="$PWD/build/demo" \
    "$PWD/build/demo/hello" "$PWD/build/demo/falling_bodies" "$PWD/build/demo/trace" "$PWD/build/demo/gi_render" >/dev/null
"$PWD/build/demo/hello" 120
echo
"$PWD/build/demo/falling_bodies" "${1:-1000}" "${2:-1200}" "$PWD/build/demo/falling_bodies.png"
echo
"$PWD/build/demo/trace" 320 200 "$PWD/build/demo"
echo
"$PWD/build/demo/gi_render" 320 200 "$PWD/build/demo"

#!/usr/bin/env bash
# The main demo (the README's first command): builds libkiln, installs it under
# build/prefix, builds the C samples against it and runs the demo. Today the demo is
# samples-c/falling_bodies.c (rigid bodies dropped on voxel terrain, on the runtime's
# workers) after samples-c/hello.c (the runtime and its frame graph); the GPU passes
# join it with issue 8. Arguments go to falling_bodies: [BODIES] [FRAMES].
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
prefix=$PWD/build/prefix
bash scripts/install.sh "$prefix"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig make -C samples-c OUT="$PWD/build/demo" \
    "$PWD/build/demo/hello" "$PWD/build/demo/falling_bodies" >/dev/null
"$PWD/build/demo/hello" 120
echo
"$PWD/build/demo/falling_bodies" "$@"

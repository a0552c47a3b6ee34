#!/usr/bin/env bash
# The main demo (the README's first command): builds libkiln, installs it under
# build/prefix, builds the C samples against it and runs the demo. Today the demo is
# samples-c/hello.c; it grows as physics and GPU passes land.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
prefix=$PWD/build/prefix
bash scripts/install.sh "$prefix"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig make -C samples-c OUT="$PWD/build/demo" "$PWD/build/demo/hello" >/dev/null
"$PWD/build/demo/hello" "$@"

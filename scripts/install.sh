#!/usr/bin/env bash
# Builds libkiln (release) and installs lib, header, pkg-config and CMake files:
#   scripts/install.sh PREFIX
#   PREFIX/include/kiln.h
#   PREFIX/lib/libkiln.a, libkiln.so.<ABI>, libkiln.so -> libkiln.so.<ABI>
#   PREFIX/lib/pkgconfig/kiln.pc
#   PREFIX/lib/cmake/kiln/kilnConfig.cmake, kilnConfigVersion.cmake
#   PREFIX/share/kiln/glsl/kiln_trace.glsl, kiln_ddgi.glsl (+ the two files they include)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:?usage: scripts/install.sh PREFIX}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)

abi=$(sed -n 's/^pub const KILN_ABI_VERSION: u32 = \([0-9]*\);/\1/p' ffi/src/abi.rs)
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
cargo build --release -p kiln-ffi --locked
target=${CARGO_TARGET_DIR:-target}/release

install -d "$prefix/include" "$prefix/lib/pkgconfig" "$prefix/lib/cmake/kiln" "$prefix/share/kiln/glsl"
install -m 644 include/kiln.h "$prefix/include/kiln.h"
install -m 644 vulkan-shaders/include/kiln_layout.glsl vulkan-shaders/include/kiln_buffers.glsl \
    vulkan-shaders/include/kiln_trace.glsl vulkan-shaders/include/kiln_ddgi.glsl "$prefix/share/kiln/glsl/"
install -m 644 "$target/libkiln.a" "$prefix/lib/libkiln.a"
install -m 755 "$target/libkiln.so" "$prefix/lib/libkiln.so.$abi"
ln -sfn "libkiln.so.$abi" "$prefix/lib/libkiln.so"
subst() { sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" -e "s|@ABI@|$abi|g" "$1" > "$2"; }
subst packaging/kiln.pc.in "$prefix/lib/pkgconfig/kiln.pc"
subst packaging/kilnConfig.cmake.in "$prefix/lib/cmake/kiln/kilnConfig.cmake"
subst packaging/kilnConfigVersion.cmake.in "$prefix/lib/cmake/kiln/kilnConfigVersion.cmake"
echo "installed kiln $version (ABI $abi) to $prefix"

#!/usr/bin/env bash
# The whole test suite (the README's second command; CI runs it through .ci/run):
# formatting, shader freshness, clippy (also with the tracy feature), Rust tests
# (header freshness included; GPU tests on whatever Vulkan device is present,
# lavapipe without a GPU, validation and synchronisation validation on), the
# exported-symbol list and SONAME, the install step, the README's C programs, the C
# samples built with make (pkg-config, ASan+UBSan) and with CMake (find_package)
# against the installed package, long runs with their memory checked; then the
# library itself under AddressSanitizer and ThreadSanitizer (scripts/sanitize.sh,
# nightly toolchain) and a short run of every fuzz target over its seed corpus
# (scripts/fuzz.sh, cargo fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

step() { printf '\n=== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "SPIR-V of vulkan-shaders/ is fresh and valid (glslc, spirv-val)"
bash scripts/shaders.sh --check

step "module layers (docs/ARCHITECTURE.md)"
bash scripts/layers.sh

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo clippy with the tracy feature (Tracy zones for passes and job batches)"
cargo clippy -p kiln-ffi --features tracy --locked -- -D warnings

step "cargo test --workspace (unit, integration, C ABI, header freshness)"
# Synchronisation validation on wherever validation is, here and in the CMake run
# (not under the sanitizers: the layer keeps state LeakSanitizer reports).
KILN_GPU_SYNC_VALIDATION=1 cargo test --workspace --locked

step "exported symbols and SONAME of libkiln.so"
cargo build --release -p kiln-ffi --locked
lib=${CARGO_TARGET_DIR:-target}/release/libkiln.so
nm -D --defined-only "$lib" | awk '{print $3}' | grep '^kiln_' | sort | diff -u ffi/symbols.txt - \
    || { echo "exported symbols differ from ffi/symbols.txt (update it if the change is intended)" >&2; exit 1; }
abi=$(sed -n 's/^pub const KILN_ABI_VERSION: u32 = \([0-9]*\);/\1/p' ffi/src/abi.rs)
readelf -d "$lib" | grep -q "SONAME.*libkiln.so.$abi" || { echo "SONAME is not libkiln.so.$abi" >&2; exit 1; }
echo "symbols match ffi/symbols.txt; SONAME libkiln.so.$abi"

step "install into a fresh prefix"
prefix=$PWD/build/test-prefix
rm -rf "$prefix" build/test-make build/test-cmake
bash scripts/install.sh "$prefix"

step "the complete C programs of README.md, against the installed package (ASan + UBSan)"
bash scripts/readme_programs.sh "$prefix"

step "C samples and C tests: make + pkg-config, AddressSanitizer + UndefinedBehaviorSanitizer"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig make -C samples-c SANITIZE=1 OUT="$PWD/build/test-make" check

step "C samples and C tests: CMake find_package(kiln) against the installed package"
cmake -S samples-c -B build/test-cmake -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/test-cmake -j 2 >/dev/null
KILN_GPU_SYNC_VALIDATION=1 ctest --test-dir build/test-cmake --output-on-failure

step "long runs: 10,000 rain steps with sleep on, 1,000 integrated frames (memory flat within 1%)"
cargo run --release --locked -q -p kiln --example long_runs
mkdir -p build/long-runs
build/test-cmake/demo 1000 "$PWD/build/long-runs" 200 | grep -E "resident set|passed|failed|GPU passes"

step "the library under AddressSanitizer and ThreadSanitizer (scripts/sanitize.sh)"
bash scripts/sanitize.sh

step "every fuzz target for 20 s over its seed corpus (scripts/fuzz.sh)"
bash scripts/fuzz.sh 20

printf '\nkiln test suite: all steps passed\n'

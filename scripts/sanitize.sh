#!/usr/bin/env bash
# The library itself under the sanitizers (scripts/test.sh runs it; it can run alone):
#   1. AddressSanitizer over the Rust test suites of `runtime` and `ffi` (unit,
#      integration, C ABI; GPU tests on the present Vulkan device);
#   2. an ASan libkiln that every C sample and C test runs against (the C side under
#      ASan + UBSan as in scripts/test.sh);
#   3. ThreadSanitizer (with the standard library rebuilt under it) over the job pool,
#      the frame graph, the host scheduler, the physics determinism and batch query
#      tests, and the C thread-contract test (samples-c/tests/threads.c) against a
#      TSan libkiln.
# Needs the nightly toolchain (`-Zsanitizer`) and its rust-src (installed when
# missing); without them the script fails and says so.
#   scripts/sanitize.sh [asan|tsan]...   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "sanitize.sh: the nightly Rust toolchain is missing (rustup toolchain install nightly);" \
        "the sanitizer runs need -Zsanitizer" >&2
    exit 1
fi
triple=x86_64-unknown-linux-gnu
[ "$(uname -m)" = x86_64 ] || { echo "sanitize.sh: only x86_64 Linux is set up" >&2; exit 1; }
abi=$(sed -n 's/^pub const KILN_ABI_VERSION: u32 = \([0-9]*\);/\1/p' ffi/src/abi.rs)
steps=${*:-asan tsan}

timed() {
    local name=$1 start=$SECONDS
    shift
    printf '\n=== sanitize: %s\n' "$name"
    "$@"
    printf '=== sanitize: %s took %d s\n' "$name" $((SECONDS - start))
}

# A prefix holding the release package with its shared library swapped for the
# sanitized one: the C programs find it through pkg-config as they find the real one.
# The static library stays the release one (hello_static links it without a
# sanitizer, as a static user would).
sanitized_prefix() {
    local dir=$1 prefix=$2
    bash scripts/install.sh "$prefix" >/dev/null
    install -m 755 "$dir/libkiln.so" "$prefix/lib/libkiln.so.$abi"
}

asan() {
    export RUSTFLAGS="-Zsanitizer=address" RUSTDOCFLAGS="-Zsanitizer=address"
    mkdir -p build
    # Leak checking stays on. Mesa's lavapipe (the GPU tests' device without a GPU)
    # keeps two allocations of its own past vkDestroyInstance and is unloaded with
    # them; kept mapped (samples-c/tests/keep_lavapipe.c, preloaded), they are
    # attributed to it and suppressed by its name. Kiln's own Vulkan objects are
    # checked by the validation layer, which reports any left at vkDestroyDevice.
    cc -shared -fPIC -O1 samples-c/tests/keep_lavapipe.c -o build/keep_lavapipe.so -ldl
    printf 'leak:libvulkan_lvp.so\n' > build/asan.supp
    local run_env=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions=$PWD/build/asan.supp
        LD_PRELOAD=$PWD/build/keep_lavapipe.so)
    # The demo scaffolding builds the integrated frame of the zero-allocation check.
    local cargo_args=(-p kiln -p kiln-ffi --features kiln/demo --target $triple --target-dir target/asan --locked)
    timed "ASan: build the Rust test suites" cargo +nightly test "${cargo_args[@]}" --no-run
    # Every test but the long-horizon stability runs (20 s and more of big stacks:
    # the plain suite runs them; under ASan they alone would take ten minutes).
    timed "ASan: cargo test -p kiln -p kiln-ffi" \
        env "${run_env[@]}" cargo +nightly test "${cargo_args[@]}" -- --skip physics::stability_tests
    timed "ASan: libkiln" cargo +nightly build "${cargo_args[@]}"
    unset RUSTFLAGS RUSTDOCFLAGS
    local prefix=$PWD/build/asan-prefix
    rm -rf "$prefix" build/asan-make
    sanitized_prefix target/asan/$triple/debug "$prefix"
    timed "ASan: every C sample and C test against the ASan libkiln" \
        env PKG_CONFIG_PATH="$prefix/lib/pkgconfig" make -C samples-c SANITIZE=1 OUT="$PWD/build/asan-make" check
}

tsan() {
    # The standard library is rebuilt with TSan (-Zbuild-std, from the nightly
    # toolchain's rust-src), so its locks, once-cells and thread joins are seen.
    # rust-src is installed when missing.
    if [ ! -d "$(rustc +nightly --print sysroot)/lib/rustlib/src/rust/library" ]; then
        rustup component add rust-src --toolchain nightly || {
            echo "sanitize.sh: ThreadSanitizer needs the nightly rust-src component" \
                "(rustup component add rust-src --toolchain nightly)" >&2
            exit 1
        }
    fi
    export RUSTFLAGS="-Zsanitizer=thread" RUSTDOCFLAGS="-Zsanitizer=thread"
    # Two known false positives of crossbeam's lock-free code are suppressed, each
    # with its reason in scripts/tsan.supp; nothing of Kiln's own.
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp"
    local cargo_args=(-Zbuild-std --target $triple --target-dir target/tsan --locked)
    local filters=(jobs:: frame:: host
        the_step_is_bit_identical_for_any_worker_count_and_scheduler
        joints_are_bit_identical_for_any_worker_count_and_scheduler
        integration_is_bit_identical_for_any_worker_count
        a_ray_batch_equals_single_casts_for_any_worker_count
        callback_ray_order_is_the_same_for_any_worker_count
        sensor_events_are_the_same_for_any_worker_count
        a_restored_world_steps_the_same_bits_for_any_worker_count)
    timed "TSan: build" cargo +nightly test -p kiln --lib --test determinism "${cargo_args[@]}" --no-run
    timed "TSan: pool, frame graph, host scheduler, determinism, batch queries" \
        cargo +nightly test -p kiln --lib "${cargo_args[@]}" -- "${filters[@]}"
    timed "TSan: determinism of the frame graph" cargo +nightly test -p kiln --test determinism "${cargo_args[@]}"
    timed "TSan: libkiln" cargo +nightly build -p kiln-ffi "${cargo_args[@]}"
    unset RUSTFLAGS RUSTDOCFLAGS
    # The C test links the Rust toolchain's TSan runtime (the one libkiln was
    # instrumented for; GCC's libtsan lacks some of its entry points), and GCC
    # instruments the C side for it.
    local lib=$PWD/target/tsan/$triple/debug
    local runtime
    runtime=$(rustc +nightly --print sysroot)/lib/rustlib/$triple/lib/librustc-nightly_rt.tsan.a
    mkdir -p build/tsan
    ln -sfn libkiln.so "$lib/libkiln.so.$abi"
    cc -std=c11 -O1 -g -fsanitize=thread -Iinclude -c samples-c/tests/threads.c -o build/tsan/threads.o
    cc build/tsan/threads.o -o build/tsan/threads -Wl,--whole-archive "$runtime" -Wl,--no-whole-archive \
        -L"$lib" -lkiln -Wl,-rpath,"$lib" -lpthread -lm -ldl -lrt -lstdc++
    timed "TSan: the C thread contract (samples-c/tests/threads.c)" build/tsan/threads
    unset TSAN_OPTIONS
}

for step in $steps; do
    case $step in
        asan) asan ;;
        tsan) tsan ;;
        *) echo "sanitize.sh: unknown step $step (asan or tsan)" >&2; exit 2 ;;
    esac
done
echo "sanitize.sh: $steps passed"

#!/usr/bin/env bash
# Coverage-guided fuzzing with cargo fuzz (libFuzzer, AddressSanitizer, nightly):
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# runs each target (default: all of fuzz/fuzz_targets) for SECONDS (default 60) over
# its committed seed corpus (fuzz/seeds/TARGET, read only) and a working corpus
# (build/fuzz/corpus/TARGET, kept between runs). A crash stops the script; its input
# is in fuzz/artifacts/TARGET/ and belongs in a regression test. cargo-fuzz is
# installed from crates.io when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz.sh: the nightly Rust toolchain is missing (rustup toolchain install nightly)" >&2
    exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz"
    cargo install cargo-fuzz --locked --quiet
fi
targets=("$@")
if ((${#targets[@]} == 0)); then
    for f in fuzz/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi

cd fuzz
cargo +nightly fuzz build --release
for target in "${targets[@]}"; do
    corpus=../build/fuzz/corpus/$target
    mkdir -p "$corpus" "seeds/$target"
    start=$SECONDS
    printf '\n=== fuzz %s for %d s\n' "$target" "$seconds"
    cargo +nightly fuzz run --release "$target" "$corpus" "seeds/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 2>&1 |
        grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|INFO: seed corpus|==[0-9]+==|SUMMARY|thread|Failing input)' || true
    # cargo fuzz run exits non-zero on a crash; the pipeline above hides it.
    if compgen -G "artifacts/$target/crash-*" >/dev/null || compgen -G "artifacts/$target/oom-*" >/dev/null; then
        echo "fuzz.sh: $target found an input that fails: fuzz/artifacts/$target/" >&2
        exit 1
    fi
    printf '=== fuzz %s: %d s\n' "$target" $((SECONDS - start))
done
echo "fuzz.sh: ${targets[*]} ran ${seconds} s each without a failure"

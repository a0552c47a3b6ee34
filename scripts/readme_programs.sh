#!/usr/bin/env bash
# Compiles and runs every fenced C block of README.md marked as a complete program
# (opened with "```c program") against an installed Kiln package, under
# AddressSanitizer and UndefinedBehaviorSanitizer. Run by scripts/test.sh.
#
#   bash scripts/readme_programs.sh PREFIX
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:?usage: readme_programs.sh PREFIX (an installed Kiln package)}
out=build/readme-programs
rm -rf "$out" && mkdir -p "$out"
# One file per block: program_1.c, program_2.c, ...
awk -v out="$out" '
    /^```c program[[:space:]]*$/ { n++; file = sprintf("%s/program_%d.c", out, n); inside = 1; next }
    inside && /^```[[:space:]]*$/ { inside = 0; close(file); next }
    inside { print > file }
' README.md
shopt -s nullglob
programs=("$out"/program_*.c)
if [ ${#programs[@]} -eq 0 ]; then
    echo "README.md has no block marked \`\`\`c program" >&2
    exit 1
fi
flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs kiln)
san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
for src in "${programs[@]}"; do
    exe=${src%.c}
    # shellcheck disable=SC2086 # pkg-config's flags are words
    cc -std=c11 -Wall -Wextra -Werror -g "${san[@]}" "$src" -o "$exe" $flags -lm
    echo "== $exe"
    LD_LIBRARY_PATH=$prefix/lib "$exe"
done
echo "README.md: ${#programs[@]} program(s) compiled and ran"

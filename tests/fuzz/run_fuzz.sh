#!/bin/sh
# Builds the prefix table's differential fuzz target with Debian's clang (libFuzzer, ASan, UBSan)
# and runs it: every implementation this CPU runs against the naive reference.
#
# Usage: tests/fuzz/run_fuzz.sh [SECONDS [LIBFUZZER_ARGS...]]   (default: 120 seconds)
# Builds in $PYUST_FUZZ_DIR (default: build-fuzz at the top of the checkout) and keeps the corpus
# there, so later runs start from what earlier ones found. Exits non-zero on a disagreement, a
# sanitizer report or a crash; the reproducer is written to that directory.
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${PYUST_FUZZ_DIR:-$root/build-fuzz}
seconds=${1:-120}
[ $# -gt 0 ] && shift
cxx=${CXX:-clang++}

if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "Cannot build the fuzz target: $cxx is missing; apt-get install clang" >&2
    exit 1
fi

mkdir -p "$out/obj" "$out/corpus"
flags="-std=c++17 -O1 -g -Wall -Wextra -Wpedantic -Werror -I$root/src"
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
objects="$out/obj/prefix_table.o"
case $(uname -m) in
x86_64 | i?86)
    flags="$flags -DPYUST_PREFIX_HAVE_AVX2=1"
    "$cxx" $flags $sanitize -fsanitize=fuzzer-no-link -mavx2 -mbmi -mbmi2 \
        -c "$root/src/prefix/prefix_table_avx2.cpp" -o "$out/obj/prefix_table_avx2.o"
    objects="$objects $out/obj/prefix_table_avx2.o"
    ;;
esac
"$cxx" $flags $sanitize -fsanitize=fuzzer-no-link \
    -c "$root/src/prefix/prefix_table.cpp" -o "$out/obj/prefix_table.o"
if ! "$cxx" $flags $sanitize -fsanitize=fuzzer "$root/tests/fuzz/fuzz_prefix_table.cpp" \
    $objects -o "$out/fuzz_prefix_table"; then
    echo "Cannot link the fuzz target: is libclang-rt-14-dev installed? (apt-get install it)" >&2
    exit 1
fi

cd "$out"
exec ./fuzz_prefix_table -max_total_time="$seconds" -max_len=8192 -print_final_stats=1 \
    -artifact_prefix="$out/" "$@" corpus

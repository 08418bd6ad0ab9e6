#!/bin/sh
# Proves that no AVX2 instruction leaks into the scalar prefix table. Builds the prefix table's
# unit tests with -Dsimd=scalar in a build directory of their own and runs them on an emulated
# Nehalem (SSE4.2, no AVX), where every AVX instruction is illegal; then runs the default
# (-Dsimd=auto) build's tests there too: its run-time dispatch must choose scalar, and forcing
# PYUST_SIMD=avx2 must fail with a message, not crash. First it checks that the emulator really
# traps AVX2 on that CPU model, without which the rest would prove nothing.
#
# Usage: tests/unit/run_under_qemu.sh [SCALAR_BUILD_DIR [AUTO_BUILD_DIR]]
#   defaults: build-prefix-scalar and build-prefix at the top of the checkout (made if missing)
# Needs qemu-user (apt-get install qemu-user). Exits non-zero on any failure.
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
scalar_dir=${1:-$root/build-prefix-scalar}
auto_dir=${2:-$root/build-prefix}
cpu=Nehalem
test_exe=tests/unit/test_prefix_table
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

command -v qemu-x86_64 >/dev/null 2>&1 ||
    fail "qemu-x86_64 is missing: apt-get install qemu-user"
[ "$(uname -m)" = x86_64 ] || fail "this check needs an x86_64 host, this one is $(uname -m)"

# 1. The canary: one AVX2 instruction must die with SIGILL (status 132) on the emulated CPU.
printf 'int main() { __asm__ volatile("vpaddd %%%%ymm0, %%%%ymm0, %%%%ymm0" ::: "xmm0"); }\n' \
    >"$work/canary.c"
cc -O0 -o "$work/canary" "$work/canary.c"
status=0
qemu-x86_64 -cpu $cpu "$work/canary" 2>/dev/null || status=$?
[ "$status" -eq 132 ] ||
    fail "qemu-x86_64 -cpu $cpu ran an AVX2 instruction (status $status): the check is void"
echo "ok: qemu-x86_64 -cpu $cpu traps AVX2 (SIGILL)"

configure() { # DIR SIMD
    if [ -f "$1/build.ninja" ]; then
        meson configure "$1" -Dsimd="$2" >/dev/null
    else
        meson setup "$1" "$root" -Dsimd="$2" >/dev/null
    fi
    ninja -C "$1" "$test_exe" >/dev/null
}

# 2. The scalar build: no AVX2 kernel linked in, no YMM register used anywhere in the binary.
configure "$scalar_dir" scalar
scalar_exe=$scalar_dir/$test_exe
if nm -C "$scalar_exe" | grep -q 'pyust::prefix::avx2::'; then
    fail "$scalar_exe links the AVX2 kernel although built with -Dsimd=scalar"
fi
if objdump -d --no-show-raw-insn "$scalar_exe" | grep -q '%ymm'; then
    fail "$scalar_exe uses YMM registers although built with -Dsimd=scalar"
fi
echo "ok: $scalar_exe holds no AVX2 kernel and no YMM instruction"

# 3. The scalar build's suite on the emulated CPU, by default and with scalar forced.
env -u PYUST_SIMD qemu-x86_64 -cpu $cpu "$scalar_exe" ||
    fail "the -Dsimd=scalar suite failed on $cpu"
PYUST_SIMD=scalar qemu-x86_64 -cpu $cpu "$scalar_exe" ||
    fail "the -Dsimd=scalar suite failed on $cpu with PYUST_SIMD=scalar"
echo "ok: the -Dsimd=scalar suite passes on $cpu"

# 4. The default build: dispatch picks scalar on the emulated CPU; forcing AVX2 fails cleanly.
configure "$auto_dir" auto
auto_exe=$auto_dir/$test_exe
# The AVX2 object must define its kernel and nothing the linker could pick for other code.
weak=$(nm -C "$auto_dir/src/prefix/libpyust_prefix.a" |
    awk '/prefix_table_avx2.*:$/ { inside = 1; next } /:$/ { inside = 0 } inside && / [TWi] /')
[ "$(printf '%s\n' "$weak" | grep -c .)" -eq 1 ] && printf '%s\n' "$weak" | grep -q 'avx2::find' ||
    fail "the AVX2 object defines more code than its kernel, which could leak: $weak"
echo "ok: the AVX2 object defines its kernel alone"
env -u PYUST_SIMD qemu-x86_64 -cpu $cpu "$auto_exe" ||
    fail "the -Dsimd=auto suite failed on $cpu: its dispatch must fall back to scalar"
echo "ok: the -Dsimd=auto suite passes on $cpu (dispatch chose scalar)"
status=0
PYUST_SIMD=avx2 qemu-x86_64 -cpu $cpu "$auto_exe" >"$work/forced.log" 2>&1 || status=$?
[ "$status" -eq 1 ] ||
    fail "PYUST_SIMD=avx2 on $cpu must fail the suite with status 1, not $status (a crash?)"
grep -q 'lacks AVX2' "$work/forced.log" ||
    fail "PYUST_SIMD=avx2 on $cpu did not say why it failed"
echo "ok: PYUST_SIMD=avx2 on $cpu fails with: $(grep -m1 -o 'Cannot use the AVX2[^;]*' "$work/forced.log")"

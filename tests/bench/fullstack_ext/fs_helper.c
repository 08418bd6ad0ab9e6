/* The C side of the full-stack benchmark's extension: a little arithmetic in
 * two nested functions on every call, and a write(2) when asked. Built with
 * pyust's cflags, each function here is a native frame under run --native. */
#include "fs_helper.h"

#include <unistd.h>

/* Out of line on purpose: one more native frame per call, as real helpers have. */
__attribute__((noinline)) static uint64_t fs_round(uint64_t x)
{
    x ^= x >> 31;
    x *= UINT64_C(0x7fb5d329728ea185);
    return x ^ (x >> 27);
}

uint64_t fs_mix(uint64_t state, int64_t value)
{
    return fs_round(state + (uint64_t)value * UINT64_C(0x9e3779b97f4a7c15));
}

int fs_emit(int fd, uint64_t state)
{
    static const char digits[] = "0123456789abcdef";
    char line[17];
    for (int i = 15; i >= 0; --i) {
        line[i] = digits[state & 0xf];
        state >>= 4;
    }
    line[16] = '\n';
    return (int)write(fd, line, sizeof line);
}

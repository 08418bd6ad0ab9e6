/* The C helpers of fullstack_ext.pyx, the extension of tests/bench/fullstack.py. */
#ifndef PYUST_BENCH_FS_HELPER_H
#define PYUST_BENCH_FS_HELPER_H

#include <stdint.h>

/* Folds value into state (two rounds of a 64-bit mix). Never fails. */
uint64_t fs_mix(uint64_t state, int64_t value);

/* Writes state as 16 hexadecimal digits and a newline to fd with one write(2).
 * Returns the bytes written, or -1 with errno set when the write fails. */
int fs_emit(int fd, uint64_t state);

#endif

/* helper_c: appends one line to a file; a C function called from foo2.pyx. */
#ifndef PYUST_EXAMPLE_HELPER_H
#define PYUST_EXAMPLE_HELPER_H

/* Appends "value\n" to the file at path. Returns value + 1, or -1 when the file cannot be
 * written. */
int helper_c(const char* path, int value);

#endif

/* The C function of the Cython example (foo2.pyx): a real write(2) below it. */
#include "helper.h"

#include <stdio.h>

int helper_c(const char* path, int value)
{
    FILE* file = fopen(path, "a");
    if (!file)
        return -1;
    const int ok = fprintf(file, "%d\n", value) > 0;
    return fclose(file) == 0 && ok ? value + 1 : -1;
}

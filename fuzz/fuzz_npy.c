/*
 * fuzz_npy.c - libFuzzer driver for the .npy reader: any bytes go to
 * et_npy_read_mem(). Invariants: a refusal leaves no data and a terminated
 * message; an accepted array has a sane rank, dims >= 1, and exactly as
 * many data bytes as the input holds after its header (checked by touching
 * every byte under ASan).
 */
#include "einsum/npy.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    et_array a;
    et_diag d;
    memset(&d, 0, sizeof d);
    et_status st = et_npy_read_mem(data, size, &a, &d);
    if (st != ET_OK) {
        if (a.data || !memchr(d.msg, 0, sizeof d.msg))
            abort();
        return 0;
    }
    if (a.rank < 0 || a.rank > ET_MAX_RANK ||
        (unsigned)a.dtype >= ET_DTYPE_COUNT || !a.data)
        abort();
    for (int r = 0; r < a.rank; r++)
        if (a.dim[r] < 1)
            abort();
    int64_t n = et_array_elems(&a);
    size_t bytes = (size_t)n * et_dtype_size(a.dtype);
    if (n < 1 || bytes > size)
        abort();
    volatile unsigned char sink = 0;
    for (size_t i = 0; i < bytes; i++)
        sink ^= ((unsigned char *)a.data)[i];
    (void)sink;
    et_array_free(&a);
    return 0;
}

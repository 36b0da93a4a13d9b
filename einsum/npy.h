/*
 * npy.h - reading and writing NumPy .npy files (format 1.0, 2.0, 3.0).
 *
 * Supported dtypes: '<f2' '<f4' '<f8' (and '|'/'=' byte orders on this
 * little-endian host); big-endian data is byte-swapped on read. C order;
 * Fortran-ordered arrays are transposed to C order on read. Anything else,
 * truncated or malformed, is ET_ERR_INPUT with a message, never a crash.
 */
#ifndef ET_NPY_H
#define ET_NPY_H

#include "einsum.h"

typedef struct et_array {
    et_dtype dtype;
    int rank;
    int64_t dim[ET_MAX_RANK];
    void *data;              /* dense, C order; owned, free with et_array_free */
} et_array;

et_status et_npy_read(const char *path, et_array *a, et_diag *d);
et_status et_npy_read_mem(const void *buf, size_t len, et_array *a,
                          et_diag *d);
et_status et_npy_write(const char *path, const et_array *a, et_diag *d);
void et_array_free(et_array *a);
int64_t et_array_elems(const et_array *a);

#endif

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

/*
 * Reads the .npy file at `path` into *a (data allocated here, owned by the
 * caller, released with et_array_free). Every dimension must be >= 1 and
 * the data length must match the shape exactly. Errors: ET_ERR_INPUT for a
 * file that is not a supported .npy array, ET_ERR_IO when it cannot be
 * opened or read, ET_ERR_NOMEM; d->msg then names the file and the problem
 * (d->pos = -1) and a->data is NULL. Regular files are mapped, not copied;
 * pipes are read to their end.
 */
et_status et_npy_read(const char *path, et_array *a, et_diag *d);

/* As et_npy_read, from an in-memory image of len bytes (never read past
 * it); messages name the file "<memory>". */
et_status et_npy_read_mem(const void *buf, size_t len, et_array *a,
                          et_diag *d);

/*
 * Writes *a to `path` as NumPy 1.24's np.save would (format 1.0, '<' byte
 * order, C order). The file appears atomically: it is written to a
 * temporary file in the same directory and renamed over `path`, so a
 * failure leaves no partial output. Errors: ET_ERR_INPUT (invalid array),
 * ET_ERR_IO (with the system's reason in d->msg).
 */
et_status et_npy_write(const char *path, const et_array *a, et_diag *d);

/* Frees a->data and sets it to NULL; a may be NULL. */
void et_array_free(et_array *a);

/* Number of elements (1 for rank 0), or -1 for an invalid rank, a negative
 * dimension or a product that overflows. */
int64_t et_array_elems(const et_array *a);

#endif

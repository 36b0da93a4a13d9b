/*
 * eintune.h - public API of eintune, an einsum-driven autotuner.
 *
 * Ownership rule (stated once, as cJSON does): every object returned by an
 * et_*_init / et_*_parse / et_*_open function belongs to the caller and is
 * released with the matching et_*_free / et_*_close. Strings returned by
 * et_*_name / et_*_str functions are static and must not be freed.
 * Functions that can fail return et_status; input errors additionally fill
 * an et_diag with a position and a message.
 */
#ifndef EINTUNE_H
#define EINTUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ET_VERSION "0.1.0"

/* Status of any call that can fail. */
typedef enum et_status {
    ET_OK = 0,
    ET_ERR_INPUT,       /* bad user input (einsum, shape, opts, file) */
    ET_ERR_REFUSED,     /* an opt refused by a validity rule */
    ET_ERR_UNSUPPORTED, /* valid input the device or build cannot do */
    ET_ERR_NOMEM,       /* host allocation failed */
    ET_ERR_IO,          /* file system error */
    ET_ERR_DEVICE,      /* device unavailable or a device call failed */
    ET_ERR_BUILD,       /* kernel compilation failed */
    ET_ERR_LAUNCH,      /* kernel launch failed */
    ET_ERR_INTERNAL,    /* broken invariant reported instead of aborting */
    ET_ERR_TIMEOUT,     /* device call exceeded its time limit (worker killed) */
    ET_ERR_CRASH,       /* the device worker process died during a call */
    ET_STATUS_COUNT
} et_status;

/* Static string naming a status, e.g. "bad input". */
const char *et_status_str(et_status s);

/* Element types. f16 is a storage type: computed in f32. */
typedef enum et_dtype {
    ET_F16 = 0,
    ET_F32,
    ET_F64,
    ET_DTYPE_COUNT
} et_dtype;

/* "f16", "f32", "f64". */
const char *et_dtype_name(et_dtype t);
/* Size of one element in bytes. */
size_t et_dtype_size(et_dtype t);
/* Parses "f16"/"f32"/"f64" (also "float32", "float64", "float16", "half",
 * "float", "double"); returns 0 on success, -1 if unknown. */
int et_dtype_parse(const char *s, et_dtype *out);

/*
 * Diagnostic for input errors: where (1-based line and column, 0 when not
 * applicable; pos is the 0-based byte offset into the einsum text or -1)
 * and what. The CLI echoes the input with a caret under pos.
 */
typedef struct et_diag {
    int line;
    int col;
    int pos;
    char msg[512];
} et_diag;

#ifdef __cplusplus
}
#endif
#endif /* EINTUNE_H */

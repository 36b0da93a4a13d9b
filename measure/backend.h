/*
 * backend.h - the device layer: one interface, two backends (OpenCL, CUDA).
 *
 * A backend is a table of functions plus a context pointer (ggml-backend
 * style). Every device operation goes through et_device_* below, so the
 * callers do not change when the work moves into a worker process.
 *
 * Files: registry.c parses specs and opens and lists the devices of every
 * backend; device.c holds the wrappers over the function table; each
 * backend (opencl/, cuda/) declares its open and list functions in its own
 * header for the registry and shares helpers through backend_impl.h.
 * Errors are base/error.h's et_error.
 *
 * Errors: every function that can fail returns et_status and writes a
 * human-readable reason into an et_error (the failing API call's text and
 * the vendor's error name, or the build log's first error). No global
 * error state.
 *
 * Ownership: et_device_open returns a device the caller closes with
 * et_device_close; buffers and programs belong to the device that made
 * them and are released with et_buffer_free / et_program_free before the
 * device is closed.
 *
 * Kernel arguments: the kernels that transforms/ renders take their
 * buffers in the order (output, input 0, input 1, ...), each a pointer to
 * the first element of a dense C-ordered array, then the launch's 64-bit
 * integer scalars (et_launch.scalar: an open axis' size).
 */
#ifndef ET_BACKEND_H
#define ET_BACKEND_H

#include "base/error.h"
#include "eintune.h"
#include "transforms/target.h"

#include <stdbool.h>
#include <stddef.h>

/* Data caches the roofline measures a bandwidth for (docs/roofline.md).
 * level 1..3; bytes 0 where the level is absent or unknown. */
#define ET_CACHE_LEVELS 3
typedef struct et_cache_level {
    int64_t bytes;   /* size of one cache of this level */
    bool shared;     /* one cache for all compute units (else one each) */
} et_cache_level;

typedef struct et_device_info {
    char name[256];
    char vendor[256];
    char driver_version[128];
    char device_version[128];  /* "OpenCL 3.0 PoCL ...", "CUDA 9.0" */
    char spec[64];             /* how to ask for it: "opencl:0:0", "cuda:0" */
    et_target target;          /* limits used by transforms/ */
    bool is_cpu;               /* CL_DEVICE_TYPE_CPU: work-items of a
                                * group run one after another on a core */
    /* cache[l - 1] is level l. A CPU device: the host CPU's data caches
     * (sysfs cpu0, else CL_DEVICE_GLOBAL_MEM_CACHE_SIZE as the last
     * level); a GPU: its global memory cache (OpenCL) or L2 (CUDA) as a
     * shared level 2; per-SM L1 caches are not reported, so not used. */
    et_cache_level cache[ET_CACHE_LEVELS];
} et_device_info;

typedef struct et_buffer et_buffer;   /* opaque, backend-defined */
typedef struct et_program et_program; /* opaque, backend-defined */

/* The function table. Each slot's contract in one line. */
typedef struct et_backend_ops {
    const char *name; /* "opencl" or "cuda" */
    /* Allocates `bytes` of device memory. */
    et_status (*buffer_alloc)(void *ctx, size_t bytes, et_buffer **out,
                              et_error *err);
    /* Copies n bytes host->device at byte offset off (blocking). */
    et_status (*buffer_write)(void *ctx, et_buffer *b, size_t off,
                              const void *src, size_t n, et_error *err);
    /* Copies n bytes device->host from byte offset off (blocking). */
    et_status (*buffer_read)(void *ctx, et_buffer *b, size_t off, void *dst,
                             size_t n, et_error *err);
    /* Fills n bytes at byte offset off with the psize-byte pattern,
     * repeated (blocking); off and n are multiples of psize, psize one of
     * 1, 2, 4, 8, 16. May be NULL: et_buffer_fill then writes the pattern
     * from the host. */
    et_status (*buffer_fill)(void *ctx, et_buffer *b, size_t off,
                             const void *pattern, size_t psize, size_t n,
                             et_error *err);
    void (*buffer_free)(void *ctx, et_buffer *b);
    /* Compiles source and finds kernel `name`; ET_ERR_BUILD with the
     * build log's first error in err. On ET_OK err->msg holds what the
     * compiler said (warnings; "" when nothing), which never reaches the
     * process's stderr. */
    et_status (*program_build)(void *ctx, const char *source,
                               const char *name, et_program **out,
                               et_error *err);
    void (*program_free)(void *ctx, et_program *p);
    /* Launches once with args[i] at byte offset offsets[i] (offsets may be
     * NULL = all 0; an offset keeps the device's base alignment), waits for
     * completion; if seconds is non-NULL stores the device-timer duration. */
    et_status (*launch)(void *ctx, et_program *p, const et_launch *geom,
                        et_buffer *const *args, const size_t *offsets,
                        int nargs, double *seconds, et_error *err);
    /* Releases the context. */
    void (*close)(void *ctx);
} et_backend_ops;

typedef struct et_device {
    const et_backend_ops *ops;
    void *ctx;
    et_device_info info;
} et_device;

/*
 * Opens a device by spec: NULL or "" (the first OpenCL device),
 * "opencl:N" (N-th over all platforms), "opencl:P:D", "opencl:NAME"
 * (substring of the device name), "cuda:N". ET_ERR_INPUT for a malformed
 * spec and for one that names none of the devices there are (an index
 * past the end, a name no device has: the spec is bad input);
 * ET_ERR_DEVICE when the backend has no device at all or cannot be used
 * (err says why, e.g. "no CUDA driver (libcuda.so.1 not found)").
 */
et_status et_device_open(const char *spec, et_device **out, et_error *err);
void et_device_close(et_device *dev);

/*
 * A parsed device spec. Grammar (backend names are lower case):
 *
 *   spec    := "" | "opencl" | "cuda" | "opencl:" ocl_sel | "cuda:" N
 *   ocl_sel := N | P ":" D | NAME
 *
 * N, P, D are decimal integers >= 0; NAME is any text that does not start
 * with a digit or a sign, matched as a case-insensitive substring of the
 * device name (the first match over all platforms wins).
 */
typedef enum et_spec_kind {
    ET_SPEC_DEFAULT = 0,      /* first device of the backend */
    ET_SPEC_INDEX,            /* N-th device of the backend */
    ET_SPEC_PLATFORM_DEVICE,  /* OpenCL platform P, device D */
    ET_SPEC_NAME,             /* substring of the device name */
    ET_SPEC_KIND_COUNT
} et_spec_kind;

typedef struct et_device_spec {
    et_backend_kind backend;
    et_spec_kind kind;
    int index;      /* ET_SPEC_INDEX */
    int platform;   /* ET_SPEC_PLATFORM_DEVICE */
    int device;     /* ET_SPEC_PLATFORM_DEVICE */
    char name[256]; /* ET_SPEC_NAME */
} et_device_spec;

/* Parses spec (NULL = ""); ET_ERR_INPUT with the reason in err (may be
 * NULL) when it is malformed. Does not touch any driver. */
et_status et_device_spec_parse(const char *spec, et_device_spec *out,
                               et_error *err);

/* Lists every device of every backend; *n gets the count (up to cap).
 * Backends that are absent are skipped, with a note in `notes` (may be
 * NULL) such as "cuda: no driver". */
et_status et_device_list(et_device_info *out, int cap, int *n,
                         char *notes, size_t notes_cap);

/* Thin wrappers over the table. */
et_status et_buffer_alloc(et_device *d, size_t bytes, et_buffer **out,
                          et_error *err);
et_status et_buffer_write(et_device *d, et_buffer *b, size_t off,
                          const void *src, size_t n, et_error *err);
et_status et_buffer_read(et_device *d, et_buffer *b, size_t off, void *dst,
                         size_t n, et_error *err);
/* Fills n bytes at off with the psize-byte pattern repeated, on the device
 * where the backend can (nothing as large as n crosses from the host);
 * ET_ERR_INPUT when off or n is not a multiple of psize or psize is not
 * 1, 2, 4, 8 or 16. */
et_status et_buffer_fill(et_device *d, et_buffer *b, size_t off,
                         const void *pattern, size_t psize, size_t n,
                         et_error *err);
void et_buffer_free(et_device *d, et_buffer *b);
et_status et_program_build(et_device *d, const char *source,
                           const char *name, et_program **out,
                           et_error *err);
void et_program_free(et_device *d, et_program *p);
et_status et_launch_kernel(et_device *d, et_program *p,
                           const et_launch *geom, et_buffer *const *args,
                           const size_t *offsets, int nargs, double *seconds,
                           et_error *err);

#endif

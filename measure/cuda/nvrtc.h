/*
 * nvrtc.h - CUDA C to PTX (or CUBIN) with NVRTC, loaded at run time.
 *
 * Needs no GPU and no CUDA driver, only libnvrtc: tests and `codegen`
 * checks compile generated CUDA C with it where there is no device. The
 * library is looked up once per process: $ET_LIBNVRTC if set, else
 * libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so. Thread-safe.
 *
 * Options are "--gpu-architecture=ARCH" alone: never --use_fast_math (it
 * would break the error bound verification relies on).
 */
#ifndef ET_CUDA_NVRTC_H
#define ET_CUDA_NVRTC_H

#include "measure/backend.h"

#include <stdbool.h>
#include <stddef.h>

/* True when libnvrtc could be loaded; otherwise false with the reason in
 * err (may be NULL). */
bool et_cuda_have_nvrtc(et_error *err);

/*
 * Compiles `source` for `arch`: "compute_XY" gives PTX text, "sm_XY" a
 * CUBIN (both what cuModuleLoadData accepts). On success *ptx_out is a
 * malloc'ed image the caller frees with free(), NUL-terminated, and
 * *ptx_len its length in bytes without that NUL. Errors: ET_ERR_INPUT for
 * a malformed arch, ET_ERR_UNSUPPORTED when libnvrtc is absent,
 * ET_ERR_BUILD with the log's first error line and the log in err.
 * Kernels that are launched by name must be declared extern "C".
 */
et_status et_cuda_compile_ptx(const char *source, const char *arch,
                              char **ptx_out, size_t *ptx_len,
                              et_error *err);

#endif

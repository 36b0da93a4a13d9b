/*
 * kernel_check.h - test helper: render a kernel, build and run it on a
 * device, compare every output element with a high-precision reference
 * within the rigorous bound of docs/measurement.md ("Verification"):
 *   |err| <= gamma_n * sum|terms| + u_out * |ref|,  n = K + m - 2,
 *   gamma_n = n*u / (1 - n*u), u the unit roundoff of the accumulator.
 * The output is pre-filled with NaN, so an element never written fails.
 * Shared by the transform tests; free of main() and cheap to link.
 */
#ifndef ET_TESTS_KERNEL_CHECK_H
#define ET_TESTS_KERNEL_CHECK_H

#include "measure/backend.h"
#include "transforms/kernel.h"

#include <stddef.h>

/* The suite's device (tests/suite_device.h: the first OpenCL device
 * unless `make test DEVICE=..`), opened once; NULL (with the reason
 * printed once) when there is none, so tests can skip. */
et_device *kc_device(void);

/*
 * Renders k for dev's backend, builds and runs it on dev with inputs
 * drawn from a generator seeded by `seed` (uniform in [-1, 1], in each
 * operand's dtype), and compares. Returns ET_OK, or a failure status with msg
 * saying what (build log, launch error, first failing element).
 */
et_status kc_check_kernel(et_device *dev, const et_kernel *k, unsigned seed,
                          char *msg, size_t cap);

/* As kc_check_kernel for a rendering r of k the caller made (its
 * arguments as r says: a test may change them to see the check fail). */
et_status kc_check_rendered(et_device *dev, const et_kernel *k,
                            const et_rendered *r, unsigned seed, char *msg,
                            size_t cap);

/*
 * Parses einsum/shape/dtype and opts, applies the opts and checks as
 * above. A refused opt returns ET_ERR_REFUSED with the reason in msg.
 */
et_status kc_check(et_device *dev, const char *einsum, const char *shape,
                   const char *dtype, const char *opts, char *msg,
                   size_t cap);

/* Compiles k's CUDA rendering to PTX (compute_90) with NVRTC
 * (et_cuda_compile_ptx) when available. ET_ERR_UNSUPPORTED when libnvrtc
 * is absent (skip). */
et_status kc_cuda_compile(const et_kernel *k, char *msg, size_t cap);

#endif

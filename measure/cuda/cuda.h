/*
 * cuda.h - the CUDA backend's entry points, for the device registry
 * (measure/registry.c). Internal to measure/.
 *
 * et_cuda_open fills an et_device the registry allocated (ops, ctx, info)
 * and returns ET_OK, or returns an error with the device untouched (no
 * driver: ET_ERR_DEVICE saying so). et_cuda_list appends the devices it
 * sees to out (up to cap, *n counting) and writes a note when CUDA is
 * absent; it never fails.
 */
#ifndef ET_CUDA_H
#define ET_CUDA_H

#include "measure/backend.h"

et_status et_cuda_open(const et_device_spec *spec, et_device *dev,
                       et_error *err);
void et_cuda_list(et_device_info *out, int cap, int *n, char *notes,
                  size_t notes_cap);

#endif

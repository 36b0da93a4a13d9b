/*
 * opencl.h - the OpenCL backend's entry points, for the device registry
 * (measure/registry.c). Internal to measure/.
 *
 * et_opencl_open fills an et_device the registry allocated (ops, ctx,
 * info) and returns ET_OK, or returns an error with the device untouched.
 * et_opencl_list appends the devices it sees to out (up to cap, *n
 * counting) and writes a note when OpenCL is absent; it never fails.
 */
#ifndef ET_OPENCL_H
#define ET_OPENCL_H

#include "measure/backend.h"

et_status et_opencl_open(const et_device_spec *spec, et_device *dev,
                         et_error *err);
void et_opencl_list(et_device_info *out, int cap, int *n, char *notes,
                    size_t notes_cap);

#endif

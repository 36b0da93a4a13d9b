/* cuda.c - the CUDA backend (placeholder until the Driver API lands). */
#include "measure/device_impl.h"

et_status et_cuda_open(const et_device_spec *spec, et_device *dev,
                       et_error *err)
{
    (void)spec;
    (void)dev;
    return et_error_set(err, ET_ERR_DEVICE,
                        "no CUDA device: the CUDA backend is not built yet");
}

void et_cuda_list(et_device_info *out, int cap, int *n, char *notes,
                  size_t notes_cap)
{
    (void)out;
    (void)cap;
    (void)n;
    et_notes_add(notes, notes_cap, "cuda: backend not built yet");
}

/*
 * launch_args.c - the argument array of a CUDA launch (cuda_impl.h's
 * cu_args): the one place that lays out what cuLaunchKernel's
 * kernelParams points at, for the backend's launches (cuda.c) and for
 * kernels launched in the caller's own context (user_kernel.c).
 *
 * The layout is the kernels' signature: the buffers in order, each a
 * device pointer, then the launch's 64-bit scalars (the size of an open
 * axis, see transforms/target.h) as long long. cuLaunchKernel reads each
 * argument through its pointer when it is called, so params[] points into
 * the cu_args itself: it must stay where it was packed until the launch.
 */
#include "measure/cuda/cuda_impl.h"

bool et_cuda_args_pack(cu_args *a, int nptrs, const et_launch *geom)
{
    if (nptrs < 0 || nptrs > ET_MAX_KERNEL_ARGS || geom->n_scalars < 0 ||
        geom->n_scalars > ET_LAUNCH_MAX_SCALARS ||
        nptrs + geom->n_scalars > ET_MAX_KERNEL_ARGS)
        return false;
    for (int i = 0; i < nptrs; i++)
        a->params[i] = &a->ptr[i];
    for (int i = 0; i < geom->n_scalars; i++) {
        a->scalar[i] = (long long)geom->scalar[i];
        a->params[nptrs + i] = &a->scalar[i];
    }
    return true;
}

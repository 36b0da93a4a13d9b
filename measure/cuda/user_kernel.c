/*
 * user_kernel.c - CUDA kernels loaded into the caller's current context
 * and launched on the caller's stream (see measure/user_kernel.h), through
 * the same dlopen'ed Driver API table as the CUDA backend (cuda_impl.h).
 *
 * Geometry as cuda.c: et_launch is OpenCL style (global = total threads),
 * the grid is global / block; without a local size (NOLOCALS) the block is
 * the largest divisor of global[0] up to 256. Limits are checked against
 * the device's before the launch so that the error names the dimension.
 */
#include "measure/cuda/cuda_impl.h"
#include "measure/cuda/nvrtc.h"
#include "measure/backend_impl.h"
#include "measure/user_kernel.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct et_cu_user_kernel {
    cu_api api;
    int ordinal;
    CUdevice device;
    cu_limits lim;
    CUmodule module;
    CUfunction function;
    CUcontext context;  /* the module's (the caller's; not retained) */
};

et_status et_cu_user_open(int ordinal, et_cu_user_kernel **out,
                          et_device_info *info, et_error *err)
{
    int count = 0;
    *out = NULL;
    et_cu_user_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    et_status st = et_cuda_api_load(&k->api, err);
    if (st != ET_OK) {
        free(k);
        return st;
    }
    if (CU_FAILED(&k->api, err, k->api.DeviceGetCount(&count))) {
        st = ET_ERR_DEVICE;
        goto fail;
    }
    if (ordinal < 0 || ordinal >= count) {
        st = et_errorf(err, ET_ERR_DEVICE,
                       "no CUDA device %d: the driver sees %d", ordinal,
                       count);
        goto fail;
    }
    st = et_cuda_query(&k->api, ordinal, &k->device, info, &k->lim, err);
    if (st != ET_OK)
        goto fail;
    k->ordinal = ordinal;
    *out = k;
    return ET_OK;
fail:
    et_cuda_api_unload(&k->api);
    free(k);
    return st;
}

et_status et_cu_user_build(et_cu_user_kernel *k, const char *source,
                           const char *name, et_error *err)
{
    cu_api *api = &k->api;
    CUcontext cur = NULL;
    CUdevice on = 0;
    char *ptx = NULL;
    size_t ptx_len = 0;
    et_status st = ET_OK;

    if (CU_FAILED(api, err, api->CtxGetCurrent(&cur)))
        return ET_ERR_DEVICE;
    if (!cur)
        return et_errorf(err, ET_ERR_DEVICE,
                         "no current CUDA context in this thread: make "
                         "one current on device %d first "
                         "(cuDevicePrimaryCtxRetain + cuCtxSetCurrent)",
                         k->ordinal);
    if (CU_FAILED(api, err, api->CtxGetDevice(&on)))
        return ET_ERR_DEVICE;
    if (on != k->device)
        return et_errorf(err, ET_ERR_DEVICE,
                         "the current CUDA context is on device %d, not "
                         "on device %d",
                         (int)on, k->ordinal);
    char arch[32];
    snprintf(arch, sizeof arch, "compute_%d%d", k->lim.cc_major,
             k->lim.cc_minor);
    st = et_cuda_compile_ptx(source, arch, &ptx, &ptx_len, err);
    if (st != ET_OK)
        return st == ET_ERR_INPUT ? ET_ERR_BUILD : st;
    k->context = cur;
    st = et_cuda_module_load(api, ptx, &k->module, err);
    if (st != ET_OK) {
        free(ptx);
        return st;
    }
    free(ptx);
    CUresult rc;
    if (CU_FAILED(api, err,
                  rc = api->ModuleGetFunction(&k->function, k->module,
                                              name))) {
        if (rc == CUDA_ERROR_NOT_FOUND)
            et_errorf(err, ET_ERR_BUILD,
                      "no kernel named '%s' in the module", name);
        CU_FAILED(api, NULL, api->ModuleUnload(k->module));
        k->module = NULL;
        return ET_ERR_BUILD;
    }
    return ET_OK;
}

et_status et_cu_user_check(et_cu_user_kernel *k,
                           const unsigned long long *args, int nargs,
                           uint64_t *have, et_error *err)
{
    cu_api *api = &k->api;
    CUcontext cur = NULL;
    if (!k->function)
        return et_errorf(err, ET_ERR_INTERNAL, "the kernel is not built");
    if (CU_FAILED(api, err, api->CtxGetCurrent(&cur)))
        return ET_ERR_DEVICE;
    if (cur != k->context)
        return et_errorf(err, ET_ERR_INPUT,
                         "%s: make the context the kernel was loaded into "
                         "current in this thread (cuCtxSetCurrent) before "
                         "launching it",
                         cur ? "the current CUDA context is another one than "
                               "the kernel's"
                             : "no current CUDA context in this thread");
    for (int i = 0; i < nargs; i++) {
        char what[64];
        CUdeviceptr base = 0;
        size_t size = 0;
        et_user_arg_name(i, what, sizeof what);
        if (!args[i])
            return et_errorf(err, ET_ERR_INPUT,
                             "%s is a null device pointer", what);
        CUresult rc =
            api->MemGetAddressRange(&base, &size, (CUdeviceptr)args[i]);
        if (rc != CUDA_SUCCESS || base > args[i] ||
            args[i] - base > size) {
            const char *name = NULL;
            if (rc == CUDA_SUCCESS || !api->GetErrorName ||
                api->GetErrorName(rc, &name) != CUDA_SUCCESS || !name)
                name = rc == CUDA_SUCCESS ? "an inconsistent range"
                                          : "unknown CUDA error";
            return et_errorf(err, ET_ERR_INPUT,
                             "%s (0x%llx) is not device memory of the "
                             "current context (cuMemGetAddressRange: %s): "
                             "pass pointers from cuMemAlloc in this context",
                             what, args[i], name);
        }
        have[i] = (uint64_t)(base + size - (CUdeviceptr)args[i]);
    }
    return ET_OK;
}

/* The largest divisor of n that is <= cap. */
static int64_t divisor_up_to(int64_t n, int64_t cap)
{
    for (int64_t b = cap < n ? cap : n; b > 1; b--)
        if (n % b == 0)
            return b;
    return 1;
}

et_status et_cu_user_launch(et_cu_user_kernel *k, CUstream stream,
                            const et_launch *geom,
                            const unsigned long long *args, int nargs,
                            et_error *err)
{
    cu_api *api = &k->api;
    cu_args a;
    int64_t block[3] = {1, 1, 1}, grid[3] = {1, 1, 1}, threads = 1;
    const cu_limits *l = &k->lim;

    if (!k->function)
        return et_errorf(err, ET_ERR_INTERNAL, "the kernel is not built");
    if (nargs > ET_MAX_KERNEL_ARGS)
        return et_errorf(err, ET_ERR_INPUT, "%d buffers: at most %d",
                         nargs, ET_MAX_KERNEL_ARGS);
    for (int d = 0; d < geom->ndim; d++)
        block[d] = geom->has_local ? geom->local[d] : 1;
    if (!geom->has_local)
        block[0] = divisor_up_to(geom->global[0],
                                 l->max_threads < CU_DEFAULT_BLOCK
                                     ? l->max_threads
                                     : CU_DEFAULT_BLOCK);
    for (int d = 0; d < geom->ndim; d++) {
        if (geom->global[d] % block[d] != 0)
            return et_errorf(err, ET_ERR_LAUNCH,
                             "dimension %d: global size %lld is not a "
                             "multiple of the block size %lld",
                             d, (long long)geom->global[d],
                             (long long)block[d]);
        grid[d] = geom->global[d] / block[d];
        if (block[d] > l->block[d] || grid[d] > l->grid[d])
            return et_errorf(err, ET_ERR_LAUNCH,
                             "dimension %d: block %lld x grid %lld "
                             "exceeds the device's limits (%d, %d)",
                             d, (long long)block[d], (long long)grid[d],
                             l->block[d], l->grid[d]);
        threads *= block[d];
    }
    if (threads > l->max_threads)
        return et_errorf(err, ET_ERR_LAUNCH,
                         "%lld threads per block exceed the device's %d",
                         (long long)threads, l->max_threads);
    for (int i = 0; i < nargs; i++) {
        if (!args[i])
            return et_errorf(err, ET_ERR_INPUT,
                             "buffer %d is a null device pointer", i);
        a.ptr[i] = (CUdeviceptr)args[i];
    }
    if (!et_cuda_args_pack(&a, nargs, geom))
        return et_errorf(err, ET_ERR_INPUT, "%d scalar arguments",
                         geom->n_scalars);
    /* SPLIT kernels add into the output: it starts at zero, on the same
     * stream so that the launch sees it */
    if (geom->zero_bytes > 0 &&
        CU_FAILED(api, err,
                  api->MemsetD8Async(a.ptr[0], 0, (size_t)geom->zero_bytes,
                                     stream)))
        return ET_ERR_LAUNCH;
    if (CU_FAILED(api, err,
                  api->LaunchKernel(k->function, (unsigned)grid[0],
                                    (unsigned)grid[1], (unsigned)grid[2],
                                    (unsigned)block[0], (unsigned)block[1],
                                    (unsigned)block[2], 0, stream,
                                    a.params, NULL)))
        return ET_ERR_LAUNCH;
    return ET_OK;
}

void et_cu_user_free(et_cu_user_kernel *k)
{
    if (!k)
        return;
    if (k->module)
        CU_FAILED(&k->api, NULL, k->api.ModuleUnload(k->module));
    et_cuda_api_unload(&k->api);
    free(k);
}

et_status et_cu_user_run_host(et_cu_user_kernel *k, const et_launch *geom,
                              const et_user_host_arg *host, int n_args,
                              et_error *err)
{
    cu_api *api = &k->api;
    unsigned long long args[ET_MAX_KERNEL_ARGS] = {0};
    et_status st = ET_OK;
    if (n_args > ET_MAX_KERNEL_ARGS)
        return et_errorf(err, ET_ERR_INPUT, "%d arguments: at most %d",
                         n_args, ET_MAX_KERNEL_ARGS);
    for (int i = 0; i < n_args && st == ET_OK; i++) {
        size_t n = host[i].bytes;
        CUdeviceptr p = 0;
        if (CU_FAILED(api, err, api->MemAlloc(&p, n ? n : 1))) {
            st = ET_ERR_DEVICE;
            break;
        }
        args[i] = (unsigned long long)p;
        if (n && CU_FAILED(api, err, api->MemcpyHtoD(p, host[i].data, n)))
            st = ET_ERR_DEVICE;
    }
    if (st == ET_OK)
        st = et_cu_user_launch(k, NULL, geom, args, n_args, err);
    if (st == ET_OK && CU_FAILED(api, err, api->CtxSynchronize()))
        st = ET_ERR_LAUNCH;
    for (int i = 0; i < n_args && st == ET_OK; i++)
        if (host[i].output && host[i].bytes &&
            CU_FAILED(api, err,
                      api->MemcpyDtoH(host[i].data, (CUdeviceptr)args[i],
                                      host[i].bytes)))
            st = ET_ERR_DEVICE;
    for (int i = 0; i < n_args; i++)
        if (args[i])
            api->MemFree((CUdeviceptr)args[i]);
    return st;
}

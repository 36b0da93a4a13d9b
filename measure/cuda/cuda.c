/*
 * cuda.c - the CUDA backend: the Driver API opened at run time (dlopen),
 * kernels compiled with NVRTC (nvrtc.c) to PTX for the device's compute
 * capability and loaded with cuModuleLoadDataEx.
 *
 * libcuda is $ET_LIBCUDA if set (the tests load a fake that way), else
 * libcuda.so.1. Each open device holds its own handle on the library and
 * the device's primary context (cuDevicePrimaryCtxRetain, made current on
 * every call, so any one thread at a time may use the device). Symbols are
 * resolved by their versioned names (cuMemAlloc_v2, ...), falling back to
 * the unversioned ones.
 *
 * Geometry: et_launch is OpenCL style (global = total threads); CUDA's grid
 * is global / local. Without a local size (NOLOCALS) the block is the
 * largest divisor of global[0] up to 256 along dimension 0. Grid
 * dimensions beyond the device's limits (65535 for y and z) are refused
 * with the reason: transforms/ flattens such launches.
 *
 * Offsets are added to the device pointers; they must keep the 256-byte
 * base alignment of cuMemAlloc (et_target.mem_base_addr_align).
 *
 * Every cu* call goes through CU_FAILED, which records the call's text and
 * cuGetErrorName's name for the result.
 */
#include "measure/cuda/cuda.h"
#include "measure/backend_impl.h"
#include "measure/cuda/cuda_impl.h"
#include "measure/cuda/nvrtc.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each slot with the names to try, newest first. */
static const struct {
    size_t off;
    const char *names[3];
} cu_symbols[] = {
    {offsetof(cu_api, GetErrorName), {"cuGetErrorName"}},
    {offsetof(cu_api, Init), {"cuInit"}},
    {offsetof(cu_api, DriverGetVersion), {"cuDriverGetVersion"}},
    {offsetof(cu_api, DeviceGetCount), {"cuDeviceGetCount"}},
    {offsetof(cu_api, DeviceGet), {"cuDeviceGet"}},
    {offsetof(cu_api, DeviceGetName), {"cuDeviceGetName"}},
    {offsetof(cu_api, DeviceGetAttribute), {"cuDeviceGetAttribute"}},
    {offsetof(cu_api, DeviceTotalMem),
     {"cuDeviceTotalMem_v2", "cuDeviceTotalMem"}},
    {offsetof(cu_api, DevicePrimaryCtxRetain), {"cuDevicePrimaryCtxRetain"}},
    {offsetof(cu_api, DevicePrimaryCtxRelease),
     {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}},
    {offsetof(cu_api, CtxSetCurrent), {"cuCtxSetCurrent"}},
    {offsetof(cu_api, CtxSynchronize), {"cuCtxSynchronize"}},
    {offsetof(cu_api, CtxGetCurrent), {"cuCtxGetCurrent"}},
    {offsetof(cu_api, CtxGetDevice), {"cuCtxGetDevice"}},
    {offsetof(cu_api, MemAlloc), {"cuMemAlloc_v2"}},
    {offsetof(cu_api, MemFree), {"cuMemFree_v2"}},
    {offsetof(cu_api, MemcpyHtoD), {"cuMemcpyHtoD_v2"}},
    {offsetof(cu_api, MemcpyDtoH), {"cuMemcpyDtoH_v2"}},
    {offsetof(cu_api, ModuleLoadDataEx), {"cuModuleLoadDataEx"}},
    {offsetof(cu_api, ModuleGetFunction), {"cuModuleGetFunction"}},
    {offsetof(cu_api, ModuleUnload), {"cuModuleUnload"}},
    {offsetof(cu_api, LaunchKernel), {"cuLaunchKernel"}},
    {offsetof(cu_api, MemsetD8Async), {"cuMemsetD8Async"}},
    {offsetof(cu_api, EventCreate), {"cuEventCreate"}},
    {offsetof(cu_api, EventRecord), {"cuEventRecord"}},
    {offsetof(cu_api, EventSynchronize), {"cuEventSynchronize"}},
    {offsetof(cu_api, EventElapsedTime),
     {"cuEventElapsedTime_v2", "cuEventElapsedTime"}},
    {offsetof(cu_api, EventDestroy), {"cuEventDestroy_v2", "cuEventDestroy"}},
    {offsetof(cu_api, MemGetAddressRange), {"cuMemGetAddressRange_v2"}},
};

/* The body of CU_FAILED (cuda_impl.h). */
bool et_cuda_failed(const cu_api *api, et_error *err, const char *text,
                    CUresult rc)
{
    if (rc == CUDA_SUCCESS)
        return false;
    if (err) {
        const char *name = NULL;
        if (!api->GetErrorName || api->GetErrorName(rc, &name) != 0 || !name)
            name = "unknown CUDA error";
        /* "api->MemAlloc(...)" reads better as "cuMemAlloc(...)" */
        const char *call = strstr(text, "api->");
        if (call)
            call += 5;
        else if ((call = strstr(text, "api.")) != NULL)
            call += 4;
        et_errorf(err, ET_ERR_DEVICE, "%s%s failed: %s (%d)",
                  call ? "cu" : "", call ? call : text, name, (int)rc);
    }
    return true;
}

/* CU_FAILED in a function with `et_status st`, `err`, `api` and `cleanup`. */
#define CU_TRY(status, call)                                                \
    do {                                                                    \
        if (et_cuda_failed(api, err, #call, (call))) {                      \
            st = (status);                                                  \
            goto cleanup;                                                   \
        }                                                                   \
    } while (0)

/* Opens libcuda and resolves the table; ET_ERR_DEVICE with the reason. */
et_status et_cuda_api_load(cu_api *api, et_error *err)
{
    memset(api, 0, sizeof *api);
    const char *env = getenv("ET_LIBCUDA");
    const char *path = env && *env ? env : "libcuda.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        if (env && *env)
            return et_errorf(err, ET_ERR_DEVICE,
                             "no CUDA device: the CUDA driver named by "
                             "ET_LIBCUDA (%s) cannot be loaded: %s",
                             path, dlerror());
        return et_errorf(err, ET_ERR_DEVICE,
                         "no CUDA device: the CUDA driver (libcuda.so.1) "
                         "is not installed");
    }
    for (size_t i = 0; i < sizeof cu_symbols / sizeof cu_symbols[0]; i++) {
        void *sym = NULL;
        for (int k = 0; k < 3 && cu_symbols[i].names[k] && !sym; k++)
            sym = dlsym(lib, cu_symbols[i].names[k]);
        if (!sym) {
            dlclose(lib);
            return et_errorf(err, ET_ERR_DEVICE,
                             "no CUDA device: %s lacks %s (driver too "
                             "old?)",
                             path, cu_symbols[i].names[0]);
        }
        memcpy((char *)api + cu_symbols[i].off, &sym, sizeof sym);
    }
    api->lib = lib;
    if (CU_FAILED(api, err, api->Init(0))) {
        et_error tmp = *err;
        et_errorf(err, ET_ERR_DEVICE, "no CUDA device: %s", tmp.msg);
        dlclose(lib);
        memset(api, 0, sizeof *api);
        return ET_ERR_DEVICE;
    }
    return ET_OK;
}

void et_cuda_api_unload(cu_api *api)
{
    if (api->lib)
        dlclose(api->lib);
    memset(api, 0, sizeof *api);
}

/* ---- backend objects --------------------------------------------------- */

typedef struct cu_ctx {
    cu_api api;
    CUdevice device;
    CUcontext context; /* the retained primary context */
    CUevent start, stop;
    int cc_major, cc_minor;
    int max_threads;
    int max_block[3];
    int max_grid[3];
} cu_ctx;

typedef struct cu_buffer {
    CUdeviceptr ptr;
    size_t bytes;
} cu_buffer;

typedef struct cu_program {
    CUmodule module;
    CUfunction function;
} cu_program;

/* Makes the device's context current for this thread. */
static et_status cu_enter(cu_ctx *c, et_error *err)
{
    if (CU_FAILED(&c->api, err, c->api.CtxSetCurrent(c->context)))
        return ET_ERR_DEVICE;
    return ET_OK;
}

/* ---- device info ------------------------------------------------------- */

et_status et_cuda_query(const cu_api *api, int ordinal, CUdevice *devp,
                        et_device_info *info, cu_limits *lim, et_error *err)
{
    et_status st = ET_OK;
    CUdevice dev = 0;
    size_t total = 0;
    int version = 0;
    static const struct {
        CUdevice_attribute attr;
        size_t off;
    } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
         offsetof(cu_limits, cc_major)},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
         offsetof(cu_limits, cc_minor)},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
         offsetof(cu_limits, max_threads)},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(cu_limits, sms)},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
         offsetof(cu_limits, shared)},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, offsetof(cu_limits, block[0])},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, offsetof(cu_limits, block[1])},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, offsetof(cu_limits, block[2])},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, offsetof(cu_limits, grid[0])},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, offsetof(cu_limits, grid[1])},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, offsetof(cu_limits, grid[2])},
    };

    memset(info, 0, sizeof *info);
    memset(lim, 0, sizeof *lim);
    CU_TRY(ET_ERR_DEVICE, api->DeviceGet(&dev, ordinal));
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = 0;
        CU_TRY(ET_ERR_DEVICE, api->DeviceGetAttribute(&v, attrs[i].attr, dev));
        memcpy((char *)lim + attrs[i].off, &v, sizeof v);
    }
    CU_TRY(ET_ERR_DEVICE, api->DeviceGetName(info->name,
                                             (int)sizeof info->name - 1, dev));
    CU_TRY(ET_ERR_DEVICE, api->DeviceTotalMem(&total, dev));
    CU_TRY(ET_ERR_DEVICE, api->DriverGetVersion(&version));

    snprintf(info->spec, sizeof info->spec, "cuda:%d", ordinal);
    snprintf(info->vendor, sizeof info->vendor, "NVIDIA Corporation");
    snprintf(info->driver_version, sizeof info->driver_version, "CUDA %d.%d",
             version / 1000, (version % 1000) / 10);
    snprintf(info->device_version, sizeof info->device_version,
             "CUDA %d.%d", lim->cc_major, lim->cc_minor);
    et_target *t = &info->target;
    t->backend = ET_BACKEND_CUDA;
    t->max_work_group_size = lim->max_threads;
    for (int i = 0; i < 3; i++)
        t->max_work_item_sizes[i] = lim->block[i];
    t->local_mem_bytes = lim->shared;
    t->has_fp64 = true; /* every device NVRTC still targets */
    t->has_fp16 = lim->cc_major * 10 + lim->cc_minor >= 53;
    /* atomicAdd on double needs compute capability 6.0 */
    t->has_atomic64 = lim->cc_major >= 6;
    t->mem_base_addr_align = CU_BASE_ALIGN;
    t->compute_units = lim->sms;
    t->global_mem_bytes = (int64_t)total;
    for (int k = 0; k < ET_DTYPE_COUNT; k++)
        t->preferred_vector_width[k] = 1;
    if (t->has_fp16)
        t->preferred_vector_width[ET_F16] = 2; /* half2 */
    /* The L2, shared by every SM, for the roofline's cache level; a driver
     * that does not answer leaves it unknown. */
    int l2 = 0;
    if (api->DeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                                dev) == CUDA_SUCCESS &&
        l2 > 0) {
        info->cache[1].bytes = l2;
        info->cache[1].shared = true;
    }
    *devp = dev;
cleanup:
    return st;
}

/* ---- buffers ----------------------------------------------------------- */

static et_status cu_buffer_alloc(void *vctx, size_t bytes, et_buffer **out,
                                 et_error *err)
{
    cu_ctx *c = vctx;
    cu_api *api = &c->api;
    et_status st = cu_enter(c, err);
    if (st != ET_OK)
        return st;
    cu_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    CU_TRY(ET_ERR_DEVICE, api->MemAlloc(&b->ptr, bytes));
    b->bytes = bytes;
    *out = (et_buffer *)b;
    b = NULL;
cleanup:
    free(b);
    return st;
}

static et_status cu_buffer_write(void *vctx, et_buffer *vb, size_t off,
                                 const void *src, size_t n, et_error *err)
{
    cu_ctx *c = vctx;
    cu_buffer *b = (cu_buffer *)vb;
    if (!et_range_ok(b->bytes, off, n))
        return et_errorf(err, ET_ERR_INPUT,
                         "write of %zu bytes at offset %zu outside a "
                         "buffer of %zu bytes",
                         n, off, b->bytes);
    if (n == 0)
        return ET_OK;
    et_status st = cu_enter(c, err);
    if (st == ET_OK &&
        CU_FAILED(&c->api, err, c->api.MemcpyHtoD(b->ptr + off, src, n)))
        st = ET_ERR_DEVICE;
    return st;
}

static et_status cu_buffer_read(void *vctx, et_buffer *vb, size_t off,
                                void *dst, size_t n, et_error *err)
{
    cu_ctx *c = vctx;
    cu_buffer *b = (cu_buffer *)vb;
    if (!et_range_ok(b->bytes, off, n))
        return et_errorf(err, ET_ERR_INPUT,
                         "read of %zu bytes at offset %zu outside a "
                         "buffer of %zu bytes",
                         n, off, b->bytes);
    if (n == 0)
        return ET_OK;
    et_status st = cu_enter(c, err);
    if (st == ET_OK &&
        CU_FAILED(&c->api, err, c->api.MemcpyDtoH(dst, b->ptr + off, n)))
        st = ET_ERR_DEVICE;
    return st;
}

static void cu_buffer_free(void *vctx, et_buffer *vb)
{
    cu_ctx *c = vctx;
    cu_buffer *b = (cu_buffer *)vb;
    if (cu_enter(c, NULL) == ET_OK)
        CU_FAILED(&c->api, NULL, c->api.MemFree(b->ptr));
    free(b);
}

/* ---- programs ---------------------------------------------------------- */

et_status et_cuda_module_load(const cu_api *api, const char *ptx,
                              CUmodule *out, et_error *err)
{
    char jit_log[4096] = "";
    CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {jit_log, (void *)(uintptr_t)(sizeof jit_log - 1)};
    if (CU_FAILED(api, err, api->ModuleLoadDataEx(out, ptx, 2, opts, vals))) {
        *out = NULL;
        jit_log[sizeof jit_log - 1] = '\0';
        et_error_append(err, "\nPTX JIT log:\n%s",
                        jit_log[0] ? jit_log : "(empty)");
        return ET_ERR_BUILD;
    }
    return ET_OK;
}

static et_status cu_program_build(void *vctx, const char *source,
                                  const char *name, et_program **out,
                                  et_error *err)
{
    cu_ctx *c = vctx;
    cu_api *api = &c->api;
    et_status st = ET_OK;
    char *ptx = NULL;
    size_t ptx_len = 0;
    cu_program *p = calloc(1, sizeof *p);
    if (!p)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");

    char arch[32];
    snprintf(arch, sizeof arch, "compute_%d%d", c->cc_major, c->cc_minor);
    st = et_cuda_compile_ptx(source, arch, &ptx, &ptx_len, err);
    if (st != ET_OK) {
        if (st == ET_ERR_INPUT) /* an arch NVRTC cannot name */
            st = ET_ERR_BUILD;
        goto cleanup;
    }
    st = cu_enter(c, err);
    if (st != ET_OK)
        goto cleanup;

    st = et_cuda_module_load(api, ptx, &p->module, err);
    if (st != ET_OK)
        goto cleanup;
    CUresult rc;
    if (CU_FAILED(api, err,
                  rc = api->ModuleGetFunction(&p->function, p->module,
                                              name))) {
        if (rc == CUDA_ERROR_NOT_FOUND)
            et_errorf(err, ET_ERR_BUILD,
                      "no kernel named '%s' in the module (is it "
                      "declared extern \"C\"?)",
                      name);
        st = ET_ERR_BUILD;
        goto cleanup;
    }
    *out = (et_program *)p;
    p = NULL;
cleanup:
    if (p) {
        if (p->module)
            CU_FAILED(api, NULL, api->ModuleUnload(p->module));
        free(p);
    }
    free(ptx);
    return st;
}

static void cu_program_free(void *vctx, et_program *vp)
{
    cu_ctx *c = vctx;
    cu_program *p = (cu_program *)vp;
    if (cu_enter(c, NULL) == ET_OK)
        CU_FAILED(&c->api, NULL, c->api.ModuleUnload(p->module));
    free(p);
}

/* ---- launch ------------------------------------------------------------ */

/* The largest divisor of n that is <= cap. */
static int64_t divisor_up_to(int64_t n, int64_t cap)
{
    for (int64_t b = cap < n ? cap : n; b > 1; b--)
        if (n % b == 0)
            return b;
    return 1;
}

static et_status cu_launch(void *vctx, et_program *vp, const et_launch *geom,
                           et_buffer *const *args, const size_t *offsets,
                           int nargs, double *seconds, et_error *err)
{
    cu_ctx *c = vctx;
    cu_api *api = &c->api;
    cu_program *p = (cu_program *)vp;
    et_status st = ET_OK;
    cu_args a;
    int64_t block[3] = {1, 1, 1}, grid[3] = {1, 1, 1};

    for (int d = 0; d < geom->ndim; d++)
        block[d] = geom->has_local ? geom->local[d] : 1;
    if (!geom->has_local)
        block[0] = divisor_up_to(geom->global[0],
                                 c->max_threads < CU_DEFAULT_BLOCK
                                     ? c->max_threads
                                     : CU_DEFAULT_BLOCK);
    int64_t threads = 1;
    for (int d = 0; d < geom->ndim; d++) {
        if (geom->global[d] % block[d] != 0)
            return et_errorf(err, ET_ERR_LAUNCH,
                             "dimension %d: global size %lld is not a "
                             "multiple of the block size %lld",
                             d, (long long)geom->global[d],
                             (long long)block[d]);
        grid[d] = geom->global[d] / block[d];
        if (block[d] > c->max_block[d])
            return et_errorf(err, ET_ERR_LAUNCH,
                             "dimension %d: block size %lld exceeds the "
                             "device's %d",
                             d, (long long)block[d], c->max_block[d]);
        if (grid[d] > c->max_grid[d])
            return et_errorf(err, ET_ERR_LAUNCH,
                             "dimension %d: grid of %lld blocks exceeds "
                             "the device's limit of %d (flatten the "
                             "launch into dimension 0)",
                             d, (long long)grid[d], c->max_grid[d]);
        threads *= block[d];
    }
    if (threads > c->max_threads)
        return et_errorf(err, ET_ERR_LAUNCH,
                         "%lld threads per block exceed the device's %d",
                         (long long)threads, c->max_threads);
    for (int i = 0; i < nargs; i++) {
        const cu_buffer *b = (const cu_buffer *)args[i];
        size_t off = offsets ? offsets[i] : 0;
        if (off != 0 && off >= b->bytes)
            return et_errorf(err, ET_ERR_LAUNCH,
                             "argument %d: offset %zu is outside its "
                             "buffer of %zu bytes",
                             i, off, b->bytes);
        if (off % CU_BASE_ALIGN != 0)
            return et_errorf(err, ET_ERR_LAUNCH,
                             "argument %d: offset %zu is not a multiple "
                             "of the base address alignment (%d bytes)",
                             i, off, CU_BASE_ALIGN);
        a.ptr[i] = b->ptr + off;
    }
    if (!et_cuda_args_pack(&a, nargs, geom))
        return et_errorf(err, ET_ERR_LAUNCH, "launch: %d scalar arguments",
                         geom->n_scalars);

    st = cu_enter(c, err);
    if (st != ET_OK)
        return st;
    if (geom->zero_bytes > 0 &&
        (nargs < 1 || (uint64_t)geom->zero_bytes >
                          ((const cu_buffer *)args[0])->bytes -
                              (offsets ? offsets[0] : 0)))
        return et_errorf(err, ET_ERR_LAUNCH,
                         "the output to zero (%lld bytes) is larger than "
                         "argument 0",
                         (long long)geom->zero_bytes);
    CU_TRY(ET_ERR_DEVICE, api->EventRecord(c->start, NULL));
    /* SPLIT kernels add into the output: it starts at zero, timed */
    if (geom->zero_bytes > 0)
        CU_TRY(ET_ERR_LAUNCH,
               api->MemsetD8Async(a.ptr[0], 0, (size_t)geom->zero_bytes,
                                  NULL));
    CU_TRY(ET_ERR_LAUNCH,
           api->LaunchKernel(p->function, (unsigned)grid[0],
                             (unsigned)grid[1], (unsigned)grid[2],
                             (unsigned)block[0], (unsigned)block[1],
                             (unsigned)block[2], 0, NULL, a.params, NULL));
    CU_TRY(ET_ERR_DEVICE, api->EventRecord(c->stop, NULL));
    /* errors of the kernel itself (illegal address, ...) surface here */
    CU_TRY(ET_ERR_LAUNCH, api->EventSynchronize(c->stop));
    if (seconds) {
        float ms = 0;
        CU_TRY(ET_ERR_DEVICE, api->EventElapsedTime(&ms, c->start, c->stop));
        *seconds = (double)ms * 1e-3;
    }
cleanup:
    return st;
}

/* ---- open, close, list ------------------------------------------------- */

static void cu_close(void *vctx)
{
    cu_ctx *c = vctx;
    if (!c)
        return;
    cu_api *api = &c->api;
    if (c->context && cu_enter(c, NULL) == ET_OK) {
        if (c->start)
            CU_FAILED(api, NULL, api->EventDestroy(c->start));
        if (c->stop)
            CU_FAILED(api, NULL, api->EventDestroy(c->stop));
        CU_FAILED(api, NULL, api->CtxSetCurrent(NULL));
    }
    if (c->context)
        CU_FAILED(api, NULL, api->DevicePrimaryCtxRelease(c->device));
    et_cuda_api_unload(api);
    free(c);
}

static const et_backend_ops cu_ops = {
    .name = "cuda",
    .buffer_alloc = cu_buffer_alloc,
    .buffer_write = cu_buffer_write,
    .buffer_read = cu_buffer_read,
    .buffer_free = cu_buffer_free,
    .program_build = cu_program_build,
    .program_free = cu_program_free,
    .launch = cu_launch,
    .close = cu_close,
};

et_status et_cuda_open(const et_device_spec *spec, et_device *dev,
                       et_error *err)
{
    et_status st = ET_OK;
    int count = 0, ordinal = spec->kind == ET_SPEC_INDEX ? spec->index : 0;
    cu_limits lim;
    cu_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    cu_api *api = &c->api;

    st = et_cuda_api_load(api, err);
    if (st != ET_OK)
        goto cleanup;
    CU_TRY(ET_ERR_DEVICE, api->DeviceGetCount(&count));
    if (ordinal >= count) {
        st = et_errorf(err, ET_ERR_INPUT,
                       "no CUDA device %d: the driver sees %d", ordinal,
                       count);
        goto cleanup;
    }
    st = et_cuda_query(api, ordinal, &c->device, &dev->info, &lim, err);
    if (st != ET_OK)
        goto cleanup;
    c->cc_major = lim.cc_major;
    c->cc_minor = lim.cc_minor;
    c->max_threads = lim.max_threads;
    for (int i = 0; i < 3; i++) {
        c->max_block[i] = lim.block[i];
        c->max_grid[i] = lim.grid[i];
    }
    CU_TRY(ET_ERR_DEVICE, api->DevicePrimaryCtxRetain(&c->context,
                                                      c->device));
    CU_TRY(ET_ERR_DEVICE, api->CtxSetCurrent(c->context));
    CU_TRY(ET_ERR_DEVICE, api->EventCreate(&c->start, 0));
    CU_TRY(ET_ERR_DEVICE, api->EventCreate(&c->stop, 0));
    dev->ops = &cu_ops;
    dev->ctx = c;
    c = NULL;
cleanup:
    cu_close(c);
    return st;
}

void et_cuda_list(et_device_info *out, int cap, int *n, char *notes,
                  size_t notes_cap)
{
    cu_api api;
    et_error err;
    int count = 0;
    if (et_cuda_api_load(&api, &err) != ET_OK) {
        et_notes_add(notes, notes_cap, "cuda: %s", err.msg);
        return;
    }
    if (CU_FAILED(&api, &err, api.DeviceGetCount(&count))) {
        et_notes_add(notes, notes_cap, "cuda: %s", err.msg);
        count = 0;
    } else if (count == 0) {
        et_notes_add(notes, notes_cap, "cuda: the driver sees no device");
    }
    for (int i = 0; i < count && *n < cap; i++) {
        CUdevice dev;
        cu_limits lim;
        if (et_cuda_query(&api, i, &dev, &out[*n], &lim, &err) != ET_OK) {
            et_notes_add(notes, notes_cap, "cuda:%d: %s", i, err.msg);
            continue;
        }
        (*n)++;
    }
    et_cuda_api_unload(&api);
}

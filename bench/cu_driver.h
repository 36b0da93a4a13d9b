/*
 * cu_driver.h - the few CUDA Driver API functions the CUDA-side programs
 * of the benchmark and tools need (bench/peer_cublas.c,
 * tools/cu_context_check.c), opened at run time with dlopen, so that they
 * build and start on a machine without a GPU and say so: no link-time
 * dependency on libcuda, no cuda.h. The types are the Driver API's own
 * (CUdevice an int, CUdeviceptr an unsigned long long, the handles
 * opaque pointers); the functions are resolved by their versioned names
 * where CUDA has several (cuMemAlloc_v2, cuEventElapsedTime_v2 ...),
 * falling back to the unversioned ones, as measure/cuda/cuda.c does.
 *
 * The context is the device's primary context (cuDevicePrimaryCtxRetain,
 * made current): the one the CUDA runtime, and so cuBLAS, uses too.
 * The driver is libcuda.so.1, or $ET_LIBCUDA when set. Header-only.
 */
#ifndef ET_BENCH_CU_DRIVER_H
#define ET_BENCH_CU_DRIVER_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult; /* CUDA_SUCCESS = 0 */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define CU_NAME_LEN 256

typedef struct cu_driver {
    void *lib;
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUdevice device;
    CUcontext ctx;
    char name[CU_NAME_LEN];
    int version; /* cuDriverGetVersion: 13000 for CUDA 13.0 */
} cu_driver;

/* The text of a Driver API result. */
static inline const char *cu_error_text(const cu_driver *d, CUresult r)
{
    const char *s = NULL;
    if (d->GetErrorString && d->GetErrorString(r, &s) == 0 && s)
        return s;
    return "unknown CUDA error";
}

/*
 * Loads the driver, initializes it and makes device `ordinal`'s primary
 * context current. 0 on success; else a negative value with the reason
 * in why: -1 when there is no driver or no such device (nothing to run
 * on: the caller's "not run"), -2 when a call failed on a device that is
 * there.
 */
static inline int cu_driver_open(cu_driver *d, int ordinal, char *why,
                                 size_t cap)
{
    memset(d, 0, sizeof *d);
    const char *env = getenv("ET_LIBCUDA");
    const char *path = env && *env ? env : "libcuda.so.1";
    d->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!d->lib) {
        snprintf(why, cap, "no GPU: the CUDA driver (%s) is not installed",
                 path);
        return -1;
    }
    static const struct {
        size_t off;
        const char *names[2];
    } syms[] = {
        {offsetof(cu_driver, Init), {"cuInit"}},
        {offsetof(cu_driver, DriverGetVersion), {"cuDriverGetVersion"}},
        {offsetof(cu_driver, DeviceGetCount), {"cuDeviceGetCount"}},
        {offsetof(cu_driver, DeviceGet), {"cuDeviceGet"}},
        {offsetof(cu_driver, DeviceGetName), {"cuDeviceGetName"}},
        {offsetof(cu_driver, DevicePrimaryCtxRetain),
         {"cuDevicePrimaryCtxRetain"}},
        {offsetof(cu_driver, DevicePrimaryCtxRelease),
         {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}},
        {offsetof(cu_driver, CtxSetCurrent), {"cuCtxSetCurrent"}},
        {offsetof(cu_driver, CtxSynchronize), {"cuCtxSynchronize"}},
        {offsetof(cu_driver, MemAlloc), {"cuMemAlloc_v2"}},
        {offsetof(cu_driver, MemFree), {"cuMemFree_v2"}},
        {offsetof(cu_driver, MemcpyHtoD), {"cuMemcpyHtoD_v2"}},
        {offsetof(cu_driver, MemcpyDtoH), {"cuMemcpyDtoH_v2"}},
        {offsetof(cu_driver, StreamCreate), {"cuStreamCreate"}},
        {offsetof(cu_driver, StreamDestroy),
         {"cuStreamDestroy_v2", "cuStreamDestroy"}},
        {offsetof(cu_driver, StreamSynchronize), {"cuStreamSynchronize"}},
        {offsetof(cu_driver, EventCreate), {"cuEventCreate"}},
        {offsetof(cu_driver, EventDestroy),
         {"cuEventDestroy_v2", "cuEventDestroy"}},
        {offsetof(cu_driver, EventRecord), {"cuEventRecord"}},
        {offsetof(cu_driver, EventSynchronize), {"cuEventSynchronize"}},
        {offsetof(cu_driver, EventElapsedTime),
         {"cuEventElapsedTime_v2", "cuEventElapsedTime"}},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = NULL;
        for (int k = 0; k < 2 && syms[i].names[k] && !p; k++)
            p = dlsym(d->lib, syms[i].names[k]);
        if (!p) {
            snprintf(why, cap, "no GPU: %s lacks %s (driver too old?)", path,
                     syms[i].names[0]);
            return -1;
        }
        memcpy((char *)d + syms[i].off, &p, sizeof p);
    }
    /* only for messages: cuGetErrorString, else cuGetErrorName */
    void *es = dlsym(d->lib, "cuGetErrorString");
    if (!es)
        es = dlsym(d->lib, "cuGetErrorName");
    memcpy(&d->GetErrorString, &es, sizeof es);
    CUresult r = d->Init(0);
    int n = 0;
    if (r != 0) {
        snprintf(why, cap, "no GPU: cuInit: %s", cu_error_text(d, r));
        return -1;
    }
    if ((r = d->DeviceGetCount(&n)) != 0 || ordinal < 0 || ordinal >= n) {
        snprintf(why, cap, "no GPU: no CUDA device %d (the driver sees %d)",
                 ordinal, n);
        return -1;
    }
    d->DriverGetVersion(&d->version);
    if ((r = d->DeviceGet(&d->device, ordinal)) != 0 ||
        (r = d->DeviceGetName(d->name, CU_NAME_LEN, d->device)) != 0 ||
        (r = d->DevicePrimaryCtxRetain(&d->ctx, d->device)) != 0 ||
        (r = d->CtxSetCurrent(d->ctx)) != 0) {
        snprintf(why, cap, "CUDA device %d: %s", ordinal,
                 cu_error_text(d, r));
        return -2;
    }
    return 0;
}

/* Releases the primary context (the library stays loaded: others may
 * hold symbols of it). */
static inline void cu_driver_close(cu_driver *d)
{
    if (d->ctx) {
        d->CtxSetCurrent(NULL);
        d->DevicePrimaryCtxRelease(d->device);
        d->ctx = NULL;
    }
}

#endif

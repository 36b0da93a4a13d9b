/*
 * cuda_impl.h - internal to measure/cuda/: the Driver API table that
 * cuda.c opens with dlopen (see cuda.c's header comment), its checking
 * macro, the device query and the packing of a launch's arguments
 * (launch_args.c), shared by the backend (cuda.c) and the kernels built
 * in the caller's own context (user_kernel.c). Not part of the API.
 *
 * A cu_api is a plain value: each user loads its own (et_cuda_api_load,
 * dlopen is reference counted) and unloads it when done, so nothing here
 * is global. Thread-safe as the driver is.
 */
#ifndef ET_CUDA_IMPL_H
#define ET_CUDA_IMPL_H

#include "measure/backend.h"
#include "measure/backend_impl.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef ET_HAVE_CUDA_H
#include <cuda.h>
#else
/* The few Driver API types and constants this file uses (ABI-stable). */
typedef int CUresult;
typedef int CUdevice;
typedef int CUdevice_attribute;
typedef int CUjit_option;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_FOUND 500
#define CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1
#define CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X 2
#define CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y 3
#define CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z 4
#define CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X 5
#define CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y 6
#define CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z 7
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK 8
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#endif

/* cuMemAlloc returns pointers aligned to at least this. */
enum { CU_BASE_ALIGN = 256, CU_DEFAULT_BLOCK = 256 };

/* ---- the Driver API table ---------------------------------------------- */

typedef struct cu_api {
    void *lib;
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxGetDevice)(CUdevice *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned,
                                 CUjit_option *, void **);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
    CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*EventDestroy)(CUevent);
    /* the allocation holding a pointer: user_kernel.c sizes the caller's
     * buffers with it */
    CUresult (*MemGetAddressRange)(CUdeviceptr *, size_t *, CUdeviceptr);
} cu_api;

/* The device's limits that the backend checks launches against. */
typedef struct cu_limits {
    int cc_major, cc_minor, max_threads, sms, shared;
    int block[3], grid[3];
} cu_limits;

/* Opens libcuda ($ET_LIBCUDA, else libcuda.so.1), resolves the table and
 * calls cuInit; ET_ERR_DEVICE with the reason ("no CUDA device: ..."). */
et_status et_cuda_api_load(cu_api *api, et_error *err);
void et_cuda_api_unload(cu_api *api);

/* The body of CU_FAILED: true on failure, err (may be NULL) filled. */
bool et_cuda_failed(const cu_api *api, et_error *err, const char *text,
                    CUresult rc);

/*
 * The one checking macro: `call` is a call through the table, e.g.
 * CU_FAILED(api, err, api->MemAlloc(&p, n)). True on failure; err (may be
 * NULL) then holds "cuMemAlloc(&p, n) failed: CUDA_ERROR_NAME (code)".
 */
#define CU_FAILED(api, err, call) et_cuda_failed((api), (err), #call, (call))

/* Loads PTX into a module of the current context; ET_ERR_BUILD with the
 * JIT's error log appended to err when the driver refuses it. */
et_status et_cuda_module_load(const cu_api *api, const char *ptx,
                              CUmodule *out, et_error *err);

/* Device ordinal's handle, et_device_info (name, driver version, the
 * et_target limits transforms/ renders for) and limits. */
et_status et_cuda_query(const cu_api *api, int ordinal, CUdevice *devp,
                        et_device_info *info, cu_limits *lim,
                        et_error *err);

/* ---- kernel arguments (launch_args.c) ----------------------------------- */

/*
 * The arguments of one cuLaunchKernel: the caller puts the buffers'
 * device pointers in ptr[], et_cuda_args_pack adds the launch's scalars
 * and points params[] (the kernelParams) at them all. params[] points
 * into the struct: pack it where it stays until the launch.
 */
typedef struct cu_args {
    CUdeviceptr ptr[ET_MAX_KERNEL_ARGS];
    long long scalar[ET_LAUNCH_MAX_SCALARS];
    void *params[ET_MAX_KERNEL_ARGS];
} cu_args;

/* Points params at ptr[0 .. nptrs-1], then at geom's scalars. False when
 * they do not fit (a negative count, more than ET_LAUNCH_MAX_SCALARS
 * scalars, more than ET_MAX_KERNEL_ARGS arguments in all): the caller
 * says so in its own terms. */
bool et_cuda_args_pack(cu_args *a, int nptrs, const et_launch *geom);

#endif /* ET_CUDA_IMPL_H */

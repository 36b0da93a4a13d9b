/*
 * user_kernel.h - the device side of kernels built in the caller's own
 * OpenCL context or CUDA context (include/eintune.h, "kernels in the
 * caller's own context"). Internal to eintune; api/kernel.c is the glue.
 *
 * The caller owns the context, the queue or stream and every buffer: these
 * functions never create, retain or release any of them, never copy data
 * and never wait. They own only what they build: the cl_program and
 * cl_kernel, or the CUmodule and the driver table (a dlopen reference).
 *
 * Device key: et_opencl_device_info and et_cu_user_open fill the same
 * et_device_info as et_device_open does for that device (name, driver
 * version, and the et_target limits transforms/ renders for), so the
 * database's trials of that device are found and rendered as they were
 * tuned.
 *
 * Buffers: args[0] is the kernel's output, args[1..] its inputs in
 * operand order; messages name them as et_user_arg_name does ("the output
 * (out)", "input 1 (in[1])"), after the public launchers' arguments. The
 * checks of a launch in the caller's context (the queue's and buffers'
 * context, each buffer's bytes) come before anything is enqueued: a
 * refused launch writes nothing.
 *
 * Threads: not thread-safe per object (clSetKernelArg changes the
 * cl_kernel): the caller serializes launches of one object (api/kernel.c
 * holds a mutex). Distinct objects are independent.
 */
#ifndef ET_USER_KERNEL_H
#define ET_USER_KERNEL_H

#include "measure/backend.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct _cl_context;
struct _cl_device_id;
struct _cl_command_queue;
struct _cl_mem;
struct _cl_event;
struct _cl_program;
struct CUstream_st;

/* "the output (out)" for i = 0, "input N (in[N])" for argument i = N + 1
 * (backend_util.c); returns buf. */
const char *et_user_arg_name(int i, char *buf, size_t cap);

/* ---- OpenCL (measure/opencl/) ------------------------------------------ */

/* "CL_INVALID_VALUE" ... for an OpenCL error code (opencl.c). */
const char *et_opencl_error_name(int code);

/* The et_device_info of the caller's device, as et_device_open fills it
 * (spec: "opencl:P:D", or "opencl" when the ICD loader does not list it). */
et_status et_opencl_device_info(struct _cl_device_id *dev,
                                et_device_info *info, et_error *err);

/*
 * clBuildProgram(program, 1, &dev, options, NULL, NULL) with what the
 * compiler prints on the process's stderr (PoCL's clang: "1 warning
 * generated.") captured into out (cap bytes, "" when nothing) instead of
 * reaching the user's terminal; the build log holds the messages
 * themselves. fd 2 is redirected for the build's duration under a
 * process-wide lock, so concurrent builds do not mix their output; a
 * line another thread writes to stderr meanwhile lands in out. Returns
 * clBuildProgram's code.
 */
int et_cl_build_captured(struct _cl_program *program,
                         struct _cl_device_id *dev, const char *options,
                         char *out, size_t cap);

/*
 * The build log of program for dev (malloc'ed, "" when empty), NULL when
 * it cannot be had.
 */
char *et_cl_build_log(struct _cl_program *program, struct _cl_device_id *dev);

typedef struct et_cl_user_kernel et_cl_user_kernel;

/*
 * Builds source ("-cl-std=CL1.2") for dev in the caller's ctx and creates
 * kernel `name`, which must take nargs arguments. ET_ERR_BUILD with the
 * build log in err; ET_ERR_DEVICE when a call fails. *out is freed with
 * et_cl_user_free.
 */
et_status et_cl_user_build(struct _cl_context *ctx, struct _cl_device_id *dev,
                           const char *source, const char *name, int nargs,
                           et_cl_user_kernel **out, et_error *err);

/*
 * What a launch on q with args[0..nargs-1] may touch, checked before
 * anything is enqueued: q must be a command queue of the context the
 * kernel was built in and on its device, each argument a buffer of that
 * context; have[i] gets argument i's size in bytes (CL_MEM_SIZE).
 * ET_ERR_INPUT with words saying which and why ("the command queue q
 * belongs to another OpenCL context ..."), never a bare driver code.
 */
et_status et_cl_user_check(et_cl_user_kernel *k, struct _cl_command_queue *q,
                           struct _cl_mem *const *args, int nargs,
                           uint64_t *have, et_error *err);

/*
 * Enqueues the kernel on q with args[0..nargs-1] (the output first) and
 * geometry geom; when geom->zero_bytes > 0, a clEnqueueFillBuffer of that
 * many zero bytes at the start of args[0] goes first on q and the launch
 * waits for it. Returns without waiting; *event (may be NULL) gets the
 * launch's event, which the caller releases. ET_ERR_LAUNCH when a call
 * fails.
 */
et_status et_cl_user_launch(et_cl_user_kernel *k, struct _cl_command_queue *q,
                            const et_launch *geom, struct _cl_mem *const *args,
                            int nargs, struct _cl_event **event,
                            et_error *err);
void et_cl_user_free(et_cl_user_kernel *k);

/* One buffer argument of a run on host data: its bytes, copied in, and
 * copied back out when it is an output. */
typedef struct et_user_host_arg {
    void *data;
    size_t bytes;
    bool output;
} et_user_host_arg;

/*
 * Runs the kernel once on host data, for checking it before it is handed
 * out: a queue and buffers of its own in ctx (released before it
 * returns), one per argument args[0..n_args-1], each made from its data
 * (fill outputs with NaN first to see elements the kernel never writes),
 * the launch with geom, and every output read back into its data.
 * Blocking. ET_ERR_DEVICE or ET_ERR_LAUNCH with err.
 */
et_status et_cl_user_run_host(et_cl_user_kernel *k, struct _cl_context *ctx,
                              struct _cl_device_id *dev,
                              const et_launch *geom,
                              const et_user_host_arg *args, int n_args,
                              et_error *err);

/* ---- CUDA (measure/cuda/) ---------------------------------------------- */

typedef struct et_cu_user_kernel et_cu_user_kernel;

/*
 * Loads the Driver API (as the CUDA backend does: $ET_LIBCUDA or
 * libcuda.so.1) and describes device `ordinal` in info. Needs no context.
 * ET_ERR_DEVICE with the reason (no driver, no such device).
 */
et_status et_cu_user_open(int ordinal, et_cu_user_kernel **out,
                          et_device_info *info, et_error *err);

/*
 * Compiles source with NVRTC for the device's compute capability and
 * loads the module into the calling thread's current context, which must
 * be on the device (ET_ERR_DEVICE otherwise); finds kernel `name`.
 * ET_ERR_BUILD with NVRTC's or the JIT's log.
 */
et_status et_cu_user_build(et_cu_user_kernel *k, const char *source,
                           const char *name, et_error *err);

/*
 * What a launch with the device pointers args[0..nargs-1] may touch,
 * checked before anything is queued: the calling thread's current context
 * must be the one the module was loaded into; have[i] gets the bytes from
 * args[i] to the end of its allocation (cuMemGetAddressRange_v2). A
 * pointer the current context did not allocate is ET_ERR_INPUT naming the
 * argument.
 */
et_status et_cu_user_check(et_cu_user_kernel *k,
                           const unsigned long long *args, int nargs,
                           uint64_t *have, et_error *err);

/*
 * Launches on stream (NULL: the default stream) with the device pointers
 * args[0..nargs-1]; geom->zero_bytes > 0 puts a cuMemsetD8Async of the
 * output on the same stream first. Does not wait. ET_ERR_LAUNCH.
 */
et_status et_cu_user_launch(et_cu_user_kernel *k, struct CUstream_st *stream,
                            const et_launch *geom,
                            const unsigned long long *args, int nargs,
                            et_error *err);

/*
 * Runs the kernel once on host data in the calling thread's current
 * context, for checking it before it is handed out: device buffers of its
 * own (freed before it returns), one per argument, each copied in (fill
 * outputs with NaN first), the launch on the default stream, a
 * synchronize, and every output copied back into its data. Blocking.
 */
et_status et_cu_user_run_host(et_cu_user_kernel *k, const et_launch *geom,
                              const et_user_host_arg *args, int n_args,
                              et_error *err);

/* Unloads the module (in the calling thread's current context) and drops
 * the driver table. NULL is allowed. */
void et_cu_user_free(et_cu_user_kernel *k);

#endif /* ET_USER_KERNEL_H */

/*
 * user_kernel.c - OpenCL kernels built in the caller's own context and
 * enqueued on the caller's queue (see measure/user_kernel.h). Every cl*
 * call goes through UCL_TRY, which records the call's text and the
 * error's name.
 */
#include "measure/backend_impl.h"
#include "measure/user_kernel.h"

#include <CL/cl.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct et_cl_user_kernel {
    cl_program program;
    cl_kernel kernel;
    cl_uint nargs;
    cl_device_id dev;   /* built for (the caller's; not retained) */
};

/* fd 2 is the process's: one build redirects it at a time. */
static pthread_mutex_t stderr_lock = PTHREAD_MUTEX_INITIALIZER;

int et_cl_build_captured(cl_program program, cl_device_id dev,
                         const char *options, char *out, size_t cap)
{
    if (cap)
        out[0] = '\0';
    pthread_mutex_lock(&stderr_lock);
    fflush(stderr);
    int saved = dup(2);
    int sink = memfd_create("eintune-build", MFD_CLOEXEC);
    int redirected = saved >= 0 && sink >= 0 && dup2(sink, 2) == 2;
    cl_int rc = clBuildProgram(program, 1, &dev, options, NULL, NULL);
    if (redirected) {
        fflush(stderr);
        dup2(saved, 2);
        if (cap > 1 && lseek(sink, 0, SEEK_SET) == 0) {
            ssize_t n = read(sink, out, cap - 1);
            n = n < 0 ? 0 : n;
            while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
                n--;
            out[n] = '\0';
        }
    }
    if (saved >= 0)
        close(saved);
    if (sink >= 0)
        close(sink);
    pthread_mutex_unlock(&stderr_lock);
    return rc;
}

char *et_cl_build_log(cl_program program, cl_device_id dev)
{
    size_t len = 0;
    if (clGetProgramBuildInfo(program, dev, CL_PROGRAM_BUILD_LOG, 0, NULL,
                              &len) != CL_SUCCESS)
        return NULL;
    char *log = calloc(len + 1, 1);
    if (log && clGetProgramBuildInfo(program, dev, CL_PROGRAM_BUILD_LOG, len,
                                     log, NULL) != CL_SUCCESS) {
        free(log);
        return NULL;
    }
    return log;
}

/* On failure of `call` (a cl_int expression): err gets "text failed:
 * NAME (code)", st = status, jump to cleanup. */
#define UCL_TRY(status, call)                                               \
    do {                                                                    \
        cl_int ucl_rc_ = (call);                                            \
        if (ucl_rc_ != CL_SUCCESS) {                                        \
            et_errorf(err, (status), "%s failed: %s (%d)", #call,        \
                         et_opencl_error_name(ucl_rc_), (int)ucl_rc_);      \
            st = (status);                                                  \
            goto cleanup;                                                   \
        }                                                                   \
    } while (0)

et_status et_cl_user_build(cl_context ctx, cl_device_id dev,
                           const char *source, const char *name, int nargs,
                           et_cl_user_kernel **out, et_error *err)
{
    et_status st = ET_OK;
    cl_int rc = CL_SUCCESS;
    char *log = NULL;
    *out = NULL;
    if (!ctx || !dev)
        return et_errorf(err, ET_ERR_INPUT,
                         "an OpenCL context and device are needed");
    et_cl_user_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    k->dev = dev;
    UCL_TRY(ET_ERR_DEVICE,
            (k->program = clCreateProgramWithSource(ctx, 1, &source, NULL,
                                                    &rc),
             rc));
    char said[1024];
    rc = et_cl_build_captured(k->program, dev, "-cl-std=CL1.2", said,
                              sizeof said);
    if (rc != CL_SUCCESS) {
        st = ET_ERR_BUILD;
        log = et_cl_build_log(k->program, dev);
        if (log) {
            char first[512];
            et_log_first_error(log, first, sizeof first);
            et_errorf(err, ET_ERR_BUILD,
                      "OpenCL build of '%s' failed: %s\n"
                      "[clBuildProgram: %s (%d)]\nbuild log:\n%s%s%s",
                      name, first[0] ? first : et_opencl_error_name(rc),
                      et_opencl_error_name(rc), (int)rc, log,
                      said[0] ? "\ncompiler output:\n" : "", said);
        } else {
            et_errorf(err, ET_ERR_BUILD,
                      "OpenCL build of '%s' failed: clBuildProgram: %s "
                      "(%d) (no build log)%s%s",
                      name, et_opencl_error_name(rc), (int)rc,
                      said[0] ? "\ncompiler output:\n" : "", said);
        }
        goto cleanup;
    }
    k->kernel = clCreateKernel(k->program, name, &rc);
    if (rc != CL_SUCCESS) {
        k->kernel = NULL;
        st = et_errorf(err, ET_ERR_BUILD,
                       "clCreateKernel(\"%s\") failed: %s (%d)", name,
                       et_opencl_error_name(rc), (int)rc);
        goto cleanup;
    }
    UCL_TRY(ET_ERR_DEVICE,
            clGetKernelInfo(k->kernel, CL_KERNEL_NUM_ARGS, sizeof k->nargs,
                            &k->nargs, NULL));
    if ((int)k->nargs != nargs) {
        st = et_errorf(err, ET_ERR_INTERNAL,
                       "kernel '%s' takes %u arguments, %d expected",
                       name, (unsigned)k->nargs, nargs);
        goto cleanup;
    }
    *out = k;
    k = NULL;
cleanup:
    free(log);
    et_cl_user_free(k);
    return st;
}

/* The name of device dev ("another device" when it cannot be had). */
static void device_name(cl_device_id dev, char *buf, size_t cap)
{
    if (clGetDeviceInfo(dev, CL_DEVICE_NAME, cap, buf, NULL) != CL_SUCCESS)
        snprintf(buf, cap, "another device");
}

et_status et_cl_user_check(et_cl_user_kernel *k, cl_command_queue q,
                           cl_mem const *args, int nargs, uint64_t *have,
                           et_error *err)
{
    cl_context kctx = NULL, qctx = NULL;
    cl_device_id qdev = NULL;
    cl_int rc = clGetProgramInfo(k->program, CL_PROGRAM_CONTEXT, sizeof kctx,
                                 &kctx, NULL);
    if (rc != CL_SUCCESS)
        return et_errorf(err, ET_ERR_INTERNAL,
                         "clGetProgramInfo(CL_PROGRAM_CONTEXT) failed: %s "
                         "(%d)",
                         et_opencl_error_name(rc), (int)rc);
    if (!q)
        return et_errorf(err, ET_ERR_INPUT, "no command queue given (q)");
    rc = clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
    if (rc == CL_SUCCESS)
        rc = clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof qdev, &qdev,
                                   NULL);
    if (rc != CL_SUCCESS)
        return et_errorf(err, ET_ERR_INPUT,
                         "q is not an OpenCL command queue "
                         "(clGetCommandQueueInfo: %s)",
                         et_opencl_error_name(rc));
    if (qctx != kctx)
        return et_errorf(err, ET_ERR_INPUT,
                         "the command queue q belongs to another OpenCL "
                         "context than the one the kernel was loaded into: "
                         "launch it on a queue of the context given to "
                         "et_cl_kernel_load (or load the kernel into the "
                         "queue's context)");
    if (qdev != k->dev) {
        char qname[256], kname[256];
        device_name(qdev, qname, sizeof qname);
        device_name(k->dev, kname, sizeof kname);
        return et_errorf(err, ET_ERR_INPUT,
                         "the command queue q is on device '%s', but the "
                         "kernel was built for device '%s': launch it on a "
                         "queue of that device",
                         qname, kname);
    }
    for (int i = 0; i < nargs; i++) {
        char what[64];
        cl_mem_object_type type = 0;
        cl_context mctx = NULL;
        size_t bytes = 0;
        et_user_arg_name(i, what, sizeof what);
        if (!args[i])
            return et_errorf(err, ET_ERR_INPUT, "%s is NULL", what);
        rc = clGetMemObjectInfo(args[i], CL_MEM_TYPE, sizeof type, &type,
                                NULL);
        if (rc == CL_SUCCESS)
            rc = clGetMemObjectInfo(args[i], CL_MEM_CONTEXT, sizeof mctx,
                                    &mctx, NULL);
        if (rc == CL_SUCCESS)
            rc = clGetMemObjectInfo(args[i], CL_MEM_SIZE, sizeof bytes,
                                    &bytes, NULL);
        if (rc != CL_SUCCESS)
            return et_errorf(err, ET_ERR_INPUT,
                             "%s is not an OpenCL memory object "
                             "(clGetMemObjectInfo: %s)",
                             what, et_opencl_error_name(rc));
        if (type != CL_MEM_OBJECT_BUFFER)
            return et_errorf(err, ET_ERR_INPUT,
                             "%s is an OpenCL image or pipe, not a buffer",
                             what);
        if (mctx != kctx)
            return et_errorf(err, ET_ERR_INPUT,
                             "%s belongs to another OpenCL context than the "
                             "one the kernel was loaded into",
                             what);
        have[i] = bytes;
    }
    return ET_OK;
}

et_status et_cl_user_launch(et_cl_user_kernel *k, cl_command_queue q,
                            const et_launch *geom, cl_mem const *args,
                            int nargs, cl_event *event, et_error *err)
{
    et_status st = ET_OK;
    cl_event zev = NULL, ev = NULL;
    if (event)
        *event = NULL;
    if (!q)
        return et_errorf(err, ET_ERR_INPUT, "no command queue given");
    if (geom->n_scalars < 0 || geom->n_scalars > ET_LAUNCH_MAX_SCALARS ||
        (cl_uint)(nargs + geom->n_scalars) != k->nargs)
        return et_errorf(err, ET_ERR_INPUT,
                         "the kernel takes %u arguments, %d were given",
                         (unsigned)k->nargs, nargs + geom->n_scalars);
    for (int i = 0; i < nargs; i++) {
        if (!args[i])
            return et_errorf(err, ET_ERR_INPUT, "buffer %d is NULL", i);
        UCL_TRY(ET_ERR_LAUNCH, clSetKernelArg(k->kernel, (cl_uint)i,
                                              sizeof args[i], &args[i]));
    }
    for (int i = 0; i < geom->n_scalars; i++) {
        cl_long v = (cl_long)geom->scalar[i];
        UCL_TRY(ET_ERR_LAUNCH, clSetKernelArg(k->kernel, (cl_uint)(nargs + i),
                                              sizeof v, &v));
    }
    if (geom->zero_bytes > 0) {
        /* SPLIT kernels add into the output: it starts at zero */
        size_t have = 0;
        UCL_TRY(ET_ERR_LAUNCH, clGetMemObjectInfo(args[0], CL_MEM_SIZE,
                                                  sizeof have, &have, NULL));
        if ((uint64_t)geom->zero_bytes > have) {
            st = et_errorf(err, ET_ERR_INPUT,
                           "the output buffer has %zu bytes, the kernel "
                           "writes %lld",
                           have, (long long)geom->zero_bytes);
            goto cleanup;
        }
        const cl_uchar zero = 0;
        UCL_TRY(ET_ERR_LAUNCH,
                clEnqueueFillBuffer(q, args[0], &zero, sizeof zero, 0,
                                    (size_t)geom->zero_bytes, 0, NULL, &zev));
    }
    size_t global[3] = {1, 1, 1}, local[3] = {1, 1, 1};
    for (int d = 0; d < geom->ndim; d++) {
        global[d] = (size_t)geom->global[d];
        local[d] = (size_t)geom->local[d];
    }
    /* the fill is a dependency even on an out-of-order queue */
    UCL_TRY(ET_ERR_LAUNCH,
            clEnqueueNDRangeKernel(q, k->kernel, (cl_uint)geom->ndim, NULL,
                                   global, geom->has_local ? local : NULL,
                                   zev ? 1 : 0, zev ? &zev : NULL, &ev));
    if (event) {
        *event = ev;
        ev = NULL;
    }
cleanup:
    if (zev)
        clReleaseEvent(zev);
    if (ev)
        clReleaseEvent(ev);
    return st;
}

void et_cl_user_free(et_cl_user_kernel *k)
{
    if (!k)
        return;
    if (k->kernel)
        clReleaseKernel(k->kernel);
    if (k->program)
        clReleaseProgram(k->program);
    free(k);
}

et_status et_cl_user_run_host(et_cl_user_kernel *k, cl_context ctx,
                              cl_device_id dev, const et_launch *geom,
                              const et_user_host_arg *host, int n_args,
                              et_error *err)
{
    et_status st = ET_OK;
    cl_int rc = CL_SUCCESS;
    cl_command_queue q = NULL;
    cl_mem args[ET_MAX_KERNEL_ARGS] = {0};
    if (n_args > ET_MAX_KERNEL_ARGS)
        return et_errorf(err, ET_ERR_INPUT, "%d arguments: at most %d",
                         n_args, ET_MAX_KERNEL_ARGS);
    q = clCreateCommandQueue(ctx, dev, 0, &rc);
    UCL_TRY(ET_ERR_DEVICE, rc);
    /* an output starts as it comes (NaN where the caller filled it), so
     * an element the kernel never writes is seen */
    for (int i = 0; i < n_args; i++) {
        args[i] = clCreateBuffer(
            ctx,
            (host[i].output ? CL_MEM_READ_WRITE : CL_MEM_READ_ONLY) |
                CL_MEM_COPY_HOST_PTR,
            host[i].bytes ? host[i].bytes : 1, host[i].data, &rc);
        UCL_TRY(ET_ERR_DEVICE, rc);
    }
    st = et_cl_user_launch(k, q, geom, args, n_args, NULL, err);
    if (st != ET_OK)
        goto cleanup;
    for (int i = 0; i < n_args; i++)
        if (host[i].output)
            UCL_TRY(ET_ERR_LAUNCH,
                    clEnqueueReadBuffer(q, args[i], CL_TRUE, 0, host[i].bytes,
                                        host[i].data, 0, NULL, NULL));
cleanup:
    if (q)
        clFinish(q);
    for (int i = 0; i < n_args; i++)
        if (args[i])
            clReleaseMemObject(args[i]);
    if (q)
        clReleaseCommandQueue(q);
    return st;
}

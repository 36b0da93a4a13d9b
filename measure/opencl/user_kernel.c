/*
 * user_kernel.c - OpenCL kernels built in the caller's own context and
 * enqueued on the caller's queue (see measure/user_kernel.h). Every cl*
 * call goes through UCL_TRY, which records the call's text and the
 * error's name.
 */
#include "measure/backend_impl.h"
#include "measure/user_kernel.h"

#include <CL/cl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct et_cl_user_kernel {
    cl_program program;
    cl_kernel kernel;
    cl_uint nargs;
};

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
    UCL_TRY(ET_ERR_DEVICE,
            (k->program = clCreateProgramWithSource(ctx, 1, &source, NULL,
                                                    &rc),
             rc));
    rc = clBuildProgram(k->program, 1, &dev, "-cl-std=CL1.2", NULL, NULL);
    if (rc != CL_SUCCESS) {
        size_t len = 0;
        st = ET_ERR_BUILD;
        if (clGetProgramBuildInfo(k->program, dev, CL_PROGRAM_BUILD_LOG, 0,
                                  NULL, &len) == CL_SUCCESS &&
            (log = calloc(len + 1, 1)) != NULL &&
            clGetProgramBuildInfo(k->program, dev, CL_PROGRAM_BUILD_LOG, len,
                                  log, NULL) == CL_SUCCESS) {
            char first[512];
            et_log_first_error(log, first, sizeof first);
            et_errorf(err, ET_ERR_BUILD,
                      "OpenCL build of '%s' failed: %s\n"
                      "[clBuildProgram: %s (%d)]\nbuild log:\n%s",
                      name, first[0] ? first : et_opencl_error_name(rc),
                      et_opencl_error_name(rc), (int)rc, log);
        } else {
            et_errorf(err, ET_ERR_BUILD,
                      "OpenCL build of '%s' failed: clBuildProgram: %s "
                      "(%d) (no build log)",
                      name, et_opencl_error_name(rc), (int)rc);
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
    if ((cl_uint)nargs != k->nargs)
        return et_errorf(err, ET_ERR_INPUT,
                         "the kernel takes %u buffers, %d were given",
                         (unsigned)k->nargs, nargs);
    for (int i = 0; i < nargs; i++) {
        if (!args[i])
            return et_errorf(err, ET_ERR_INPUT, "buffer %d is NULL", i);
        UCL_TRY(ET_ERR_LAUNCH, clSetKernelArg(k->kernel, (cl_uint)i,
                                              sizeof args[i], &args[i]));
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

/*
 * kernel.c - kernels in the caller's own context (include/eintune.h): the
 * caller's device is described as the tuner saw it (measure/user_kernel.h),
 * the best kernel known for it is looked up (api_best_find: the stored
 * opts mapped onto the caller's einsum) or the caller's opts taken, the
 * kernel rendered for the device's own limits (transforms/) and built in
 * the caller's context. Launches set the arguments and enqueue under the
 * object's mutex.
 */
#include "api/api_impl.h"

#include "measure/user_kernel.h"
#include "transforms/kernel.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct et_loaded_kernel {
    et_backend_kind backend;
    char opts[ET_DB_OPTS_LEN];
    char name[160];
    et_launch launch;
    int n_inputs;
    int n_idx;                     /* the problem's indices, to check sizes */
    char idx_name[ET_MAX_INDICES][ET_NAME_LEN];
    int64_t idx_size[ET_MAX_INDICES];
    int open_axis;                 /* the axis taken at launch, -1 */
    et_kernel *kern;               /* with an open axis: the kernel, for
                                    * the geometry at other sizes (under
                                    * lock) */
    pthread_mutex_t lock;          /* clSetKernelArg + enqueue */
    et_cl_user_kernel *cl;         /* OpenCL: the program and kernel */
    et_cu_user_kernel *cu;         /* CUDA: the module and the driver table */
};

static et_loaded_kernel *loaded_new(const et_problem *p, et_backend_kind b)
{
    et_loaded_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    if (pthread_mutex_init(&k->lock, NULL) != 0) {
        free(k);
        return NULL;
    }
    k->backend = b;
    k->open_axis = -1;
    k->n_inputs = p->e.n_ops;
    k->n_idx = p->e.n_idx;
    for (int i = 0; i < p->e.n_idx; i++) {
        snprintf(k->idx_name[i], sizeof k->idx_name[i], "%s",
                 p->e.idx[i].name);
        k->idx_size[i] = p->e.idx[i].size;
    }
    return k;
}

/*
 * The opts for p on the device info describes (o->opts, or the database's
 * best mapped onto p), applied to p's kernel for the device's target and
 * rendered for its backend into *r; k gets the opts' text, the name and
 * the launch geometry.
 */
static et_status loaded_render(const et_problem *p, const et_device_info *info,
                               const et_load_options *o, et_loaded_kernel *k,
                               et_rendered *r, et_diag *diag)
{
    et_status st = ET_OK;
    et_opt *list = NULL;
    et_best *best = NULL;
    et_kernel *kern = NULL;
    int n = 0;

    if (p->e.acc_dtype == ET_F64 && !info->target.has_fp64)
        return api_fail(diag, ET_ERR_UNSUPPORTED, ET_INPUT_NONE,
                        "device %s has no fp64 support", info->name);
    if (o->opts) {
        list = calloc(ET_MAX_OPTS, sizeof *list);
        if (!list)
            return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE,
                            "out of memory");
        if (*o->opts) {
            st = et_opts_parse(o->opts, list, ET_MAX_OPTS, &n, diag);
            if (st != ET_OK) {
                diag->input = ET_INPUT_OPTS;
                diag->status = st;
                goto cleanup;
            }
        }
    } else {
        best = calloc(1, sizeof *best);
        if (!best)
            return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE,
                            "out of memory");
        bool found = false;
        char db_used[1024] = "";
        st = api_best_find(&p->e, info, o->db, o->exact != 0, best, &found,
                           db_used, sizeof db_used, diag);
        if (st != ET_OK)
            goto cleanup;
        if (!found) {
            st = api_fail(diag, ET_ERR_IO, ET_INPUT_DEVICE,
                          "no verified kernel known for %s on %s device "
                          "'%s' (driver %s) in %s: tune it on this device "
                          "first, or give opts",
                          p->e.text, et_backend_name(info->target.backend),
                          info->name, info->driver_version, db_used);
            goto cleanup;
        }
        list = best->opt;
        n = best->n_opts;
    }

    /* an answer with an open axis runs the einsum with that axis open */
    st = et_kernel_init(best ? &best->e : &p->e, &info->target, &kern);
    if (st != ET_OK) {
        api_fail(diag, st, ET_INPUT_NONE, "cannot build the kernel: %s",
                 et_status_str(st));
        goto cleanup;
    }
    char reason[512] = "";
    st = et_kernel_apply_opts(kern, list, n, reason, sizeof reason);
    if (st != ET_OK) {
        api_fail(diag, st, ET_INPUT_OPTS, "%s", reason);
        goto cleanup;
    }
    et_opts_format(list, n, k->opts, sizeof k->opts);
    st = et_kernel_render(kern, info->target.backend, NULL, r);
    if (st != ET_OK) {
        api_fail(diag, st, ET_INPUT_NONE, "cannot render the kernel for %s: "
                 "%s", info->name, et_status_str(st));
        goto cleanup;
    }
    snprintf(k->name, sizeof k->name, "%s", r->name);
    k->launch = r->launch;
    k->open_axis = et_einsum_open_axis(&kern->e);
    if (k->open_axis >= 0) {
        k->kern = kern;
        kern = NULL;
    }
cleanup:
    et_kernel_free(kern);
    if (best)
        free(best);
    else
        free(list);
    return st;
}

et_status et_cl_kernel_load(const et_problem *p, struct _cl_context *ctx,
                            struct _cl_device_id *dev,
                            const et_load_options *o, et_loaded_kernel **out,
                            et_diag *diag)
{
    const et_load_options defaults = {0};
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    *out = NULL;
    if (!o)
        o = &defaults;
    if (!p || !ctx || !dev)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "a problem, an OpenCL context and a device are "
                        "needed");
    et_device_info *info = calloc(1, sizeof *info);
    et_loaded_kernel *k = loaded_new(p, ET_BACKEND_OPENCL);
    et_rendered r = {0};
    et_error err = {{0}};
    et_status st = ET_OK;
    if (!info || !k) {
        st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        goto cleanup;
    }
    st = et_opencl_device_info(dev, info, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_DEVICE, &err);
        goto cleanup;
    }
    st = loaded_render(p, info, o, k, &r, diag);
    if (st != ET_OK)
        goto cleanup;
    st = et_cl_user_build(ctx, dev, r.source, r.name,
                          r.n_args + r.launch.n_scalars, &k->cl, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_NONE, &err);
        goto cleanup;
    }
    *out = k;
    k = NULL;
cleanup:
    et_rendered_free(&r);
    et_loaded_kernel_free(k);
    free(info);
    return st;
}

et_status et_cu_kernel_load(const et_problem *p, int device,
                            const et_load_options *o, et_loaded_kernel **out,
                            et_diag *diag)
{
    const et_load_options defaults = {0};
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    *out = NULL;
    if (!o)
        o = &defaults;
    if (!p)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "a problem is needed");
    et_device_info *info = calloc(1, sizeof *info);
    et_loaded_kernel *k = loaded_new(p, ET_BACKEND_CUDA);
    et_rendered r = {0};
    et_error err = {{0}};
    et_status st = ET_OK;
    if (!info || !k) {
        st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        goto cleanup;
    }
    st = et_cu_user_open(device, &k->cu, info, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_DEVICE, &err);
        goto cleanup;
    }
    st = loaded_render(p, info, o, k, &r, diag);
    if (st != ET_OK)
        goto cleanup;
    st = et_cu_user_build(k->cu, r.source, r.name, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_NONE, &err);
        goto cleanup;
    }
    *out = k;
    k = NULL;
cleanup:
    et_rendered_free(&r);
    et_loaded_kernel_free(k);
    free(info);
    return st;
}

/* The checks both launchers make: the backend, the buffer count, sizes. */
static et_status launch_check(const et_loaded_kernel *k, et_backend_kind b,
                              int n_inputs, const int64_t *sizes,
                              et_diag *diag)
{
    if (!k || k->backend != b)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "not a kernel loaded for %s", et_backend_name(b));
    if (n_inputs != k->n_inputs)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "the kernel takes %d input buffers, %d were given",
                        k->n_inputs, n_inputs);
    if (sizes)
        for (int i = 0; i < k->n_idx; i++) {
            if (i == k->open_axis) {
                if (sizes[i] < 1)
                    return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                                    "sizes[%d] (open axis '%s') is %lld: "
                                    "sizes are at least 1",
                                    i, k->idx_name[i], (long long)sizes[i]);
                continue;
            }
            if (sizes[i] != k->idx_size[i])
                return api_fail(diag, ET_ERR_UNSUPPORTED, ET_INPUT_OPTION,
                                "sizes[%d] (index '%s') is %lld but the "
                                "kernel was built for %lld: kernels have "
                                "their sizes compiled in but for an open "
                                "axis (load one for these sizes)",
                                i, k->idx_name[i], (long long)sizes[i],
                                (long long)k->idx_size[i]);
        }
    return ET_OK;
}

/* The launch geometry for sizes (NULL: the loaded sizes), under k->lock. */
static et_status launch_geom(et_loaded_kernel *k, const int64_t *sizes,
                             et_launch *geom, et_diag *diag)
{
    *geom = k->launch;
    if (!sizes || k->open_axis < 0 ||
        sizes[k->open_axis] == k->idx_size[k->open_axis])
        return ET_OK;
    et_status st = et_kernel_set_open_size(k->kern, sizes[k->open_axis],
                                           diag);
    if (st == ET_OK)
        st = et_kernel_launch(k->kern, k->backend, geom);
    if (st != ET_OK)
        return api_fail(diag, st == ET_ERR_UNSUPPORTED ? st : ET_ERR_INPUT,
                        ET_INPUT_OPTION,
                        "no launch of %s for %s = %lld: %s", k->name,
                        k->idx_name[k->open_axis],
                        (long long)sizes[k->open_axis],
                        diag && diag->msg[0] ? diag->msg
                                             : et_status_str(st));
    return ET_OK;
}

et_status et_cl_kernel_launch(et_loaded_kernel *k, struct _cl_command_queue *q,
                              struct _cl_mem *out, struct _cl_mem *const *in,
                              int n_inputs, const int64_t *sizes,
                              struct _cl_event **event, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    if (event)
        *event = NULL;
    et_status st = launch_check(k, ET_BACKEND_OPENCL, n_inputs, sizes, diag);
    if (st != ET_OK)
        return st;
    struct _cl_mem *args[ET_MAX_OPERANDS + 1];
    args[0] = out;
    for (int i = 0; i < n_inputs; i++)
        args[1 + i] = in[i];
    et_error err = {{0}};
    et_launch geom;
    pthread_mutex_lock(&k->lock);
    st = launch_geom(k, sizes, &geom, diag);
    if (st == ET_OK)
        st = et_cl_user_launch(k->cl, q, &geom, args, n_inputs + 1, event,
                               &err);
    pthread_mutex_unlock(&k->lock);
    if (st != ET_OK && !err.msg[0])
        return st;
    if (st != ET_OK)
        return api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_OPTION
                                                         : ET_INPUT_NONE,
                            &err);
    return ET_OK;
}

et_status et_cu_kernel_launch(et_loaded_kernel *k, struct CUstream_st *stream,
                              unsigned long long out,
                              const unsigned long long *in, int n_inputs,
                              const int64_t *sizes, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    et_status st = launch_check(k, ET_BACKEND_CUDA, n_inputs, sizes, diag);
    if (st != ET_OK)
        return st;
    unsigned long long args[ET_MAX_OPERANDS + 1];
    args[0] = out;
    for (int i = 0; i < n_inputs; i++)
        args[1 + i] = in[i];
    et_error err = {{0}};
    et_launch geom;
    pthread_mutex_lock(&k->lock);
    st = launch_geom(k, sizes, &geom, diag);
    if (st == ET_OK)
        st = et_cu_user_launch(k->cu, stream, &geom, args, n_inputs + 1,
                               &err);
    pthread_mutex_unlock(&k->lock);
    if (st != ET_OK && !err.msg[0])
        return st;
    if (st != ET_OK)
        return api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_OPTION
                                                         : ET_INPUT_NONE,
                            &err);
    return ET_OK;
}

const char *et_loaded_kernel_opts(const et_loaded_kernel *k)
{
    return k->opts;
}

const char *et_loaded_kernel_name(const et_loaded_kernel *k)
{
    return k->name;
}

size_t et_loaded_kernel_zero_bytes(const et_loaded_kernel *k)
{
    return k->launch.zero_bytes > 0 ? (size_t)k->launch.zero_bytes : 0;
}

void et_loaded_kernel_free(et_loaded_kernel *k)
{
    if (!k)
        return;
    et_cl_user_free(k->cl);
    et_cu_user_free(k->cu);
    et_kernel_free(k->kern);
    pthread_mutex_destroy(&k->lock);
    free(k);
}

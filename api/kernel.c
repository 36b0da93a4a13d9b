/*
 * kernel.c - kernels in the caller's own context (include/eintune.h): the
 * caller's device is described as the tuner saw it (measure/user_kernel.h),
 * the best kernel known for it is looked up (api_best_find: the stored
 * opts mapped onto the caller's einsum) or the caller's opts taken, the
 * kernel rendered for the device's own limits and checked before it is
 * handed out (tune/load.h), and built in the caller's context. Launches
 * set the arguments and enqueue under the object's mutex, after checking
 * what they would touch: each buffer must hold the bytes its operand
 * spans at the launch's sizes (the driver's size of the caller's buffer,
 * measure/user_kernel.h), so a short buffer is refused before anything is
 * enqueued.
 */
#include "api/api_impl.h"

#include "measure/user_kernel.h"
#include "transforms/kernel.h"
#include "tune/load.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct et_loaded_kernel {
    et_backend_kind backend;
    et_load_kernel lk;             /* the opts, the name, the launch, the
                                    * open axis and its kernel (under
                                    * lock) */
    int n_inputs;
    int n_idx;                     /* the problem's indices, to check sizes */
    char idx_name[ET_MAX_INDICES][ET_NAME_LEN];
    int64_t idx_size[ET_MAX_INDICES];
    int n_rows;                    /* a batched problem's rows, else 0 */
    int n_args;                    /* buffers: the output, then the inputs,
                                    * a batched einsum's rows each one */
    int arg_op[ET_MAX_ARGS];       /* each buffer's operand (-1 output) */
    int arg_row[ET_MAX_ARGS];      /* and row (-1: not a row) */
    et_operand opnd[ET_MAX_ARGS];  /* what each buffer must hold (a row's
                                    * array without the row axis) */
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
    k->lk.open_axis = -1;
    k->n_inputs = p->e.n_ops;
    k->n_idx = p->e.n_idx;
    k->n_rows = p->e.n_rows;
    if (!et_kernel_args(&p->e, &k->n_args, k->arg_op, k->arg_row)) {
        pthread_mutex_destroy(&k->lock);
        free(k);
        return NULL;
    }
    for (int a = 0; a < k->n_args; a++)
        et_einsum_row_operand(&p->e, k->arg_op[a], &k->opnd[a]);
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
static et_status loaded_render(et_session *s, const et_problem *p,
                               const et_device_info *info,
                               const et_load_options *o, et_loaded_kernel *k,
                               et_rendered *r, et_diag *diag)
{
    et_status st = ET_OK;
    et_opt *list = NULL;
    et_best *best = NULL;
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
        st = api_best_find(s, &p->e, info, o->db, o->exact != 0, best,
                           &found, db_used, sizeof db_used, diag);
        if (st != ET_OK)
            goto cleanup;
        if (!found) {
            st = api_no_kernel(diag, &p->e, info, db_used, o->exact != 0);
            goto cleanup;
        }
        list = best->opt;
        n = best->n_opts;
    }

    bool refused = false;
    et_error err = {{0}};
    st = et_load_render(&p->e, info, best, list, n, &k->lk, r, &refused,
                        &err);
    if (st != ET_OK && refused)
        api_fail(diag, st, ET_INPUT_OPTS, "%s", err.msg);
    else if (st != ET_OK)
        api_fail_err(diag, st, ET_INPUT_NONE, &err);
cleanup:
    if (best)
        free(best);
    else
        free(list);
    return st;
}

/* The kernel's run on host data in the caller's OpenCL context. */
typedef struct cl_host_arg {
    et_loaded_kernel *k;
    struct _cl_context *ctx;
    struct _cl_device_id *dev;
} cl_host_arg;

/* The kernel's buffers over host arrays: the output (out) and the inputs
 * whole, a batched einsum's rows one after another in them, so a row's
 * buffer is its part. */
static void host_args(const et_loaded_kernel *k, const void *const *in,
                      const size_t *in_bytes, void *out, size_t out_bytes,
                      et_user_host_arg *h)
{
    for (int a = 0; a < k->n_args; a++) {
        int op = k->arg_op[a];
        size_t whole = op < 0 ? out_bytes : in_bytes[op];
        size_t part = k->arg_row[a] < 0 ? whole : whole / (size_t)k->n_rows;
        char *base = op < 0 ? out : (char *)(uintptr_t)in[op];
        h[a].data = base + (k->arg_row[a] < 0 ? 0 : (size_t)k->arg_row[a] *
                                                        part);
        h[a].bytes = part;
        h[a].output = op < 0;
    }
}

static et_status cl_host_run(void *arg, const et_launch *g,
                             const void *const *in, const size_t *in_bytes,
                             int n_in, void *out, size_t out_bytes,
                             et_error *err)
{
    const cl_host_arg *a = arg;
    et_user_host_arg h[ET_MAX_ARGS];
    (void)n_in;
    host_args(a->k, in, in_bytes, out, out_bytes, h);
    return et_cl_user_run_host(a->k->cl, a->ctx, a->dev, g, h, a->k->n_args,
                               err);
}

/* The kernel's (arg) run on host data in the caller's CUDA context. */
static et_status cu_host_run(void *arg, const et_launch *g,
                             const void *const *in, const size_t *in_bytes,
                             int n_in, void *out, size_t out_bytes,
                             et_error *err)
{
    const et_loaded_kernel *k = arg;
    et_user_host_arg h[ET_MAX_ARGS];
    (void)n_in;
    host_args(k, in, in_bytes, out, out_bytes, h);
    return et_cu_user_run_host(k->cu, g, h, k->n_args, err);
}

et_status et_cl_kernel_load(const et_problem *p, struct _cl_context *ctx,
                            struct _cl_device_id *dev,
                            const et_load_options *o, et_loaded_kernel **out,
                            et_diag *diag)
{
    return api_cl_kernel_load(NULL, p, ctx, dev, o, out, diag);
}

et_status api_cl_kernel_load(et_session *s, const et_problem *p,
                             struct _cl_context *ctx,
                             struct _cl_device_id *dev,
                             const et_load_options *o,
                             et_loaded_kernel **out, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_OPTIONS(et_load_options, o, diag);
    API_NEED(diag, p, "p");
    API_NEED(diag, ctx, "ctx");
    API_NEED(diag, dev, "dev");
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
    st = loaded_render(s, p, info, o, k, &r, diag);
    if (st != ET_OK)
        goto cleanup;
    st = et_cl_user_build(ctx, dev, r.source, r.name,
                          r.n_args + r.launch.n_scalars, &k->cl, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_NONE, &err);
        goto cleanup;
    }
    if (!k->lk.reproduced && !o->no_verify) {
        cl_host_arg ha = {k, ctx, dev};
        st = et_load_verify(&k->lk, &p->e, k->backend, info->name,
                            cl_host_run, &ha, &err);
        if (st != ET_OK) {
            api_fail_err(diag, st, ET_INPUT_NONE, &err);
            goto cleanup;
        }
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
    return api_cu_kernel_load(NULL, p, device, o, out, diag);
}

et_status api_cu_kernel_load(et_session *s, const et_problem *p, int device,
                             const et_load_options *o,
                             et_loaded_kernel **out, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_OPTIONS(et_load_options, o, diag);
    API_NEED(diag, p, "p");
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
    st = loaded_render(s, p, info, o, k, &r, diag);
    if (st != ET_OK)
        goto cleanup;
    st = et_cu_user_build(k->cu, r.source, r.name, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_NONE, &err);
        goto cleanup;
    }
    if (!k->lk.reproduced && !o->no_verify) {
        st = et_load_verify(&k->lk, &p->e, k->backend, info->name,
                            cu_host_run, k, &err);
        if (st != ET_OK) {
            api_fail_err(diag, st, ET_INPUT_NONE, &err);
            goto cleanup;
        }
    }
    *out = k;
    k = NULL;
cleanup:
    et_rendered_free(&r);
    et_loaded_kernel_free(k);
    free(info);
    return st;
}

/* The checks every launcher makes: the backend, the buffer count (the
 * inputs, or with args every buffer), sizes. */
static et_status launch_check(const et_loaded_kernel *k, et_backend_kind b,
                              int n_given, bool args, const int64_t *sizes,
                              et_diag *diag)
{
    if (k->backend != b)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "not a kernel loaded for %s", et_backend_name(b));
    if (!args && k->n_rows)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "a batched einsum's kernel takes %d buffers, one per "
                        "row of the output and of each rowed operand: "
                        "launch it with et_%s_kernel_launch_args",
                        k->n_args, b == ET_BACKEND_CUDA ? "cu" : "cl");
    if (!args && n_given != k->n_inputs)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "the kernel takes %d input buffers, %d were given",
                        k->n_inputs, n_given);
    if (args && n_given != k->n_args)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "the kernel takes %d buffers, %d were given",
                        k->n_args, n_given);
    if (sizes)
        for (int i = 0; i < k->n_idx; i++) {
            if (i == k->lk.open_axis) {
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

/* Buffer a's name in messages: "the output (out)", "input 1 (in[1])",
 * or for a batched einsum "args[4] (row 1 of input 1)". */
static void arg_name(const et_loaded_kernel *k, int a, char *buf, size_t cap)
{
    if (!k->n_rows) {
        et_user_arg_name(a, buf, cap);
        return;
    }
    int op = k->arg_op[a], r = k->arg_row[a];
    char what[48];
    if (op < 0)
        snprintf(what, sizeof what, "the output");
    else
        snprintf(what, sizeof what, "input %d", op);
    if (r >= 0)
        snprintf(buf, cap, "args[%d] (row %d of %s)", a, r, what);
    else
        snprintf(buf, cap, "args[%d] (%s)", a, what);
}

/*
 * The bytes buffer a (0: the output, 1 + k: input k; a batched einsum's
 * buffers as et_kernel_args lists them) spans at the launch's sizes
 * (NULL: the loaded ones): its dims, the open axis at the size given (where the operand has it and does not broadcast it, as
 * et_einsum_set_size counts). *elems gets its elements; UINT64_MAX when
 * the count overflows.
 */
static uint64_t operand_bytes(const et_loaded_kernel *k, int a,
                              const int64_t *sizes, uint64_t *elems)
{
    const et_operand *o = &k->opnd[a];
    uint64_t n = 1, bytes = 0;
    for (int r = 0; r < o->rank; r++) {
        int64_t d = o->dim[r];
        if (sizes && k->lk.open_axis >= 0 && o->idx[r] == k->lk.open_axis &&
            d == k->idx_size[k->lk.open_axis])
            d = sizes[k->lk.open_axis];
        if (__builtin_mul_overflow(n, (uint64_t)d, &n)) {
            *elems = UINT64_MAX;
            return UINT64_MAX;
        }
    }
    *elems = n;
    if (__builtin_mul_overflow(n, (uint64_t)et_dtype_size(o->dtype), &bytes))
        return UINT64_MAX;
    return bytes;
}

/*
 * Refuses a launch whose buffers are short: have[a] is what the driver
 * says argument a holds (the output first); each must hold its operand at
 * the launch's sizes, and the output also the bytes SPLIT zeroes
 * (geom->zero_bytes). ET_ERR_INPUT naming the operand, its size in bytes
 * and the size needed.
 */
static et_status check_bytes(const et_loaded_kernel *k, const int64_t *sizes,
                             const et_launch *geom, const uint64_t *have,
                             et_diag *diag)
{
    for (int a = 0; a < k->n_args; a++) {
        uint64_t elems = 0;
        uint64_t need = operand_bytes(k, a, sizes, &elems);
        if (a == 0 && geom->zero_bytes > 0 &&
            (uint64_t)geom->zero_bytes > need)
            need = (uint64_t)geom->zero_bytes;
        if (have[a] >= need)
            continue;
        char what[96];
        arg_name(k, a, what, sizeof what);
        if (need == UINT64_MAX)
            return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                            "%s has %llu bytes; the kernel %s more than "
                            "2^64 at these sizes",
                            what, (unsigned long long)have[a],
                            k->arg_op[a] < 0 ? "writes" : "reads");
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "%s has %llu bytes but the kernel %s %llu (%llu %s "
                        "elements at these sizes): nothing was launched",
                        what, (unsigned long long)have[a],
                        k->arg_op[a] < 0 ? "writes" : "reads",
                        (unsigned long long)need, (unsigned long long)elems,
                        et_dtype_name(k->opnd[a].dtype));
    }
    return ET_OK;
}

/* The launch geometry for sizes (NULL: the loaded sizes), under k->lock. */
static et_status launch_geom(et_loaded_kernel *k, const int64_t *sizes,
                             et_launch *geom, et_diag *diag)
{
    *geom = k->lk.launch;
    if (!sizes || k->lk.open_axis < 0 ||
        sizes[k->lk.open_axis] == k->idx_size[k->lk.open_axis])
        return ET_OK;
    et_status st = et_kernel_set_open_size(k->lk.kern, sizes[k->lk.open_axis],
                                           diag);
    if (st == ET_OK)
        st = et_kernel_launch(k->lk.kern, k->backend, geom);
    if (st != ET_OK)
        return api_fail(diag, st == ET_ERR_UNSUPPORTED ? st : ET_ERR_INPUT,
                        ET_INPUT_OPTION,
                        "no launch of %s for %s = %lld: %s", k->lk.name,
                        k->idx_name[k->lk.open_axis],
                        (long long)sizes[k->lk.open_axis],
                        diag && diag->msg[0] ? diag->msg
                                             : et_status_str(st));
    return ET_OK;
}

/* A launch's status: a driver's error (err) into diag, a check's (diag
 * filled already) as it is. */
static et_status launch_status(et_status st, const et_error *err,
                               et_diag *diag)
{
    if (st == ET_OK || !err->msg[0])
        return st;
    return api_fail_err(diag, st,
                        st == ET_ERR_INPUT ? ET_INPUT_OPTION : ET_INPUT_NONE,
                        err);
}

/* An OpenCL launch of the buffers args[0..k->n_args-1], checked. */
static et_status cl_launch(et_loaded_kernel *k, struct _cl_command_queue *q,
                           struct _cl_mem *const *args, const int64_t *sizes,
                           struct _cl_event **event, et_diag *diag)
{
    et_error err = {{0}};
    et_launch geom;
    uint64_t have[ET_MAX_ARGS];
    pthread_mutex_lock(&k->lock);
    et_status st = launch_geom(k, sizes, &geom, diag);
    if (st == ET_OK)
        st = et_cl_user_check(k->cl, q, args, k->n_args, have, &err);
    if (st == ET_OK)
        st = check_bytes(k, sizes, &geom, have, diag);
    if (st == ET_OK)
        st = et_cl_user_launch(k->cl, q, &geom, args, k->n_args, event,
                               &err);
    pthread_mutex_unlock(&k->lock);
    return launch_status(st, &err, diag);
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
    API_NEED(diag, k, "k");
    et_status st = launch_check(k, ET_BACKEND_OPENCL, n_inputs, false, sizes,
                                diag);
    if (st != ET_OK)
        return st;
    API_NEED(diag, q, "q");
    API_NEED(diag, out, "out");
    API_NEED(diag, in, "in");
    struct _cl_mem *args[ET_MAX_ARGS];
    args[0] = out;
    for (int i = 0; i < n_inputs; i++) {
        if (!in[i])
            return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                            "et_cl_kernel_launch: in[%d] (input %d) is NULL",
                            i, i);
        args[1 + i] = in[i];
    }
    return cl_launch(k, q, args, sizes, event, diag);
}

et_status et_cl_kernel_launch_args(et_loaded_kernel *k,
                                   struct _cl_command_queue *q,
                                   struct _cl_mem *const *args, int n_args,
                                   const int64_t *sizes,
                                   struct _cl_event **event, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    if (event)
        *event = NULL;
    API_NEED(diag, k, "k");
    et_status st = launch_check(k, ET_BACKEND_OPENCL, n_args, true, sizes,
                                diag);
    if (st != ET_OK)
        return st;
    API_NEED(diag, q, "q");
    API_NEED(diag, args, "args");
    for (int a = 0; a < n_args; a++)
        if (!args[a])
            return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                            "et_cl_kernel_launch_args: args[%d] is NULL", a);
    return cl_launch(k, q, args, sizes, event, diag);
}

/* A CUDA launch of the buffers args[0..k->n_args-1], checked. */
static et_status cu_launch(et_loaded_kernel *k, struct CUstream_st *stream,
                           const unsigned long long *args,
                           const int64_t *sizes, et_diag *diag)
{
    et_error err = {{0}};
    et_launch geom;
    uint64_t have[ET_MAX_ARGS];
    pthread_mutex_lock(&k->lock);
    et_status st = launch_geom(k, sizes, &geom, diag);
    if (st == ET_OK)
        st = et_cu_user_check(k->cu, args, k->n_args, have, &err);
    if (st == ET_OK)
        st = check_bytes(k, sizes, &geom, have, diag);
    if (st == ET_OK)
        st = et_cu_user_launch(k->cu, stream, &geom, args, k->n_args, &err);
    pthread_mutex_unlock(&k->lock);
    return launch_status(st, &err, diag);
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
    API_NEED(diag, k, "k");
    et_status st = launch_check(k, ET_BACKEND_CUDA, n_inputs, false, sizes,
                                diag);
    if (st != ET_OK)
        return st;
    if (!out)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "et_cu_kernel_launch: argument 'out' is a null "
                        "device pointer");
    API_NEED(diag, in, "in");
    unsigned long long args[ET_MAX_ARGS];
    args[0] = out;
    for (int i = 0; i < n_inputs; i++) {
        if (!in[i])
            return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                            "et_cu_kernel_launch: in[%d] (input %d) is a "
                            "null device pointer",
                            i, i);
        args[1 + i] = in[i];
    }
    return cu_launch(k, stream, args, sizes, diag);
}

et_status et_cu_kernel_launch_args(et_loaded_kernel *k,
                                   struct CUstream_st *stream,
                                   const unsigned long long *args, int n_args,
                                   const int64_t *sizes, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, k, "k");
    et_status st = launch_check(k, ET_BACKEND_CUDA, n_args, true, sizes,
                                diag);
    if (st != ET_OK)
        return st;
    API_NEED(diag, args, "args");
    for (int a = 0; a < n_args; a++)
        if (!args[a])
            return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                            "et_cu_kernel_launch_args: args[%d] is a null "
                            "device pointer", a);
    return cu_launch(k, stream, args, sizes, diag);
}

int et_loaded_kernel_n_args(const et_loaded_kernel *k)
{
    return k ? k->n_args : 0;
}

int et_loaded_kernel_arg(const et_loaded_kernel *k, int a, int *operand,
                         int *row)
{
    if (!k || a < 0 || a >= k->n_args)
        return -1;
    if (operand)
        *operand = k->arg_op[a];
    if (row)
        *row = k->arg_row[a];
    return 0;
}

const char *et_loaded_kernel_opts(const et_loaded_kernel *k)
{
    return k ? k->lk.opts : "";
}

const char *et_loaded_kernel_name(const et_loaded_kernel *k)
{
    return k ? k->lk.name : "";
}

size_t et_loaded_kernel_zero_bytes(const et_loaded_kernel *k)
{
    return k && k->lk.launch.zero_bytes > 0 ? (size_t)k->lk.launch.zero_bytes
                                            : 0;
}

void et_loaded_kernel_free(et_loaded_kernel *k)
{
    if (!k)
        return;
    et_cl_user_free(k->cl);
    et_cu_user_free(k->cu);
    et_kernel_free(k->lk.kern);
    pthread_mutex_destroy(&k->lock);
    free(k);
}

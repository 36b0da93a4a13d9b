/*
 * api.c - the public API of include/eintune.h: problems, code generation
 * and spaces, as thin wrappers over the layers (einsum/, transforms/,
 * spaces/); tuning is in tune.c, devices, peaks and check in devices.c,
 * peaks.c and check.c.
 */
#include "api/api_impl.h"

#include "einsum/einsum.h"
#include "spaces/space.h"
#include "transforms/kernel.h"
#include "tune/tune.h"

#include <cjson/cJSON.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

et_status et_problem_init(const char *einsum, const char *shape,
                          const char *dtypes, et_problem **out,
                          et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, einsum, "einsum");
    API_NEED(diag, shape, "shape");
    /* "" would read as the einsum "->" of one scalar operand */
    if (!einsum[strspn(einsum, " \t\n")]) {
        et_status st = api_fail(diag, ET_ERR_INPUT, ET_INPUT_EINSUM,
                                "the einsum is empty (\"ij,jk->ik\")");
        diag->pos = 0;
        return st;
    }
    et_problem *p = calloc(1, sizeof *p);
    if (!p)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    et_status st = et_einsum_from_strings(einsum, shape, dtypes, &p->e, diag);
    if (st != ET_OK) {
        free(p);
        diag->status = st;
        return st;
    }
    *out = p;
    return ET_OK;
}

void et_problem_free(et_problem *p)
{
    free(p);
}

const char *et_problem_einsum(const et_problem *p)
{
    return p ? p->e.text : "";
}

int64_t et_problem_ops(const et_problem *p, et_dtype t)
{
    int64_t ops[ET_DTYPE_COUNT];
    if (!p || (unsigned)t >= ET_DTYPE_COUNT)
        return 0;
    et_einsum_ops(&p->e, ops);
    return ops[t];
}

int64_t et_problem_bytes(const et_problem *p)
{
    return p ? et_einsum_bytes(&p->e) : 0;
}

et_status et_problem_init_arrays(const char *einsum, int n_operands,
                                 const int *ndim,
                                 const int64_t *const *dims,
                                 const et_dtype *dtypes, et_problem **out,
                                 et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, einsum, "einsum");
    API_NEED(diag, ndim, "ndim");
    API_NEED(diag, dims, "dims");
    if (!einsum[strspn(einsum, " \t\n")]) {
        et_status st = api_fail(diag, ET_ERR_INPUT, ET_INPUT_EINSUM,
                                "the einsum is empty (\"ij,jk->ik\")");
        diag->pos = 0;
        return st;
    }
    et_subscripts sub;
    et_status st = et_subscripts_parse(einsum, &sub, diag);
    if (st != ET_OK) {
        diag->input = ET_INPUT_EINSUM;
        return st;
    }
    if (n_operands != sub.n_ops) {
        diag->input = ET_INPUT_EINSUM;
        return et_diag_fail(diag, -1, "the einsum has %d operands, %d arrays "
                            "were given", sub.n_ops, n_operands);
    }
    et_operand_shapes shapes;
    memset(&shapes, 0, sizeof shapes);
    shapes.n_ops = n_operands;
    et_dtype dt[ET_MAX_OPERANDS];
    for (int k = 0; k < n_operands; k++) {
        if (ndim[k] < 0 || ndim[k] > ET_MAX_RANK) {
            diag->input = ET_INPUT_OPTION;
            return et_diag_fail(diag, -1, "operand %d: %d dimensions (at "
                                "most %d)", k, ndim[k], ET_MAX_RANK);
        }
        if (ndim[k] > 0 && !dims[k])
            return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                            "et_problem_init_arrays: dims[%d] (operand %d's "
                            "%d dimensions) is NULL", k, k, ndim[k]);
        shapes.rank[k] = ndim[k];
        for (int a = 0; a < ndim[k]; a++)
            shapes.dim[k][a] = dims[k][a];
        dt[k] = dtypes ? dtypes[k] : ET_F64;
        if ((unsigned)dt[k] >= ET_DTYPE_COUNT) {
            diag->input = ET_INPUT_DTYPE;
            return et_diag_fail(diag, -1, "operand %d: unknown dtype %d", k,
                                (int)dt[k]);
        }
    }
    et_problem *p = calloc(1, sizeof *p);
    if (!p)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    st = et_einsum_resolve(&sub, NULL, &shapes, dt, &p->e, diag);
    if (st != ET_OK) {
        diag->input = ET_INPUT_EINSUM;
        diag->status = st;
        free(p);
        return st;
    }
    *out = p;
    return ET_OK;
}

int et_problem_n_operands(const et_problem *p)
{
    return p ? p->e.n_ops : 0;
}

static const et_operand *problem_operand(const et_problem *p, int k)
{
    if (!p)
        return NULL;
    if (k == -1)
        return &p->e.out;
    if (k < 0 || k >= p->e.n_ops)
        return NULL;
    return &p->e.op[k];
}

et_dtype et_problem_dtype(const et_problem *p, int k)
{
    const et_operand *o = problem_operand(p, k);
    return o ? o->dtype : (et_dtype)0;
}

int64_t et_problem_elems(const et_problem *p, int k)
{
    return problem_operand(p, k) ? et_einsum_operand_elems(&p->e, k) : 0;
}

size_t et_problem_operand_bytes(const et_problem *p, int k)
{
    const et_operand *o = problem_operand(p, k);
    if (!o)
        return 0;
    return (size_t)et_einsum_operand_elems(&p->e, k) * et_dtype_size(o->dtype);
}

int et_problem_n_indices(const et_problem *p)
{
    return p ? p->e.n_idx : 0;
}

const char *et_problem_index_name(const et_problem *p, int i)
{
    return p && i >= 0 && i < p->e.n_idx ? p->e.idx[i].name : "";
}

int64_t et_problem_index_size(const et_problem *p, int i)
{
    return p && i >= 0 && i < p->e.n_idx ? p->e.idx[i].size : 0;
}

int et_problem_index_open(const et_problem *p, int i)
{
    return p && i >= 0 && i < p->e.n_idx && p->e.idx[i].open;
}

et_status et_problem_set_tune_at(et_problem *p, const char *spec,
                                 et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, p, "p");
    API_NEED(diag, spec, "spec");
    et_einsum *e = malloc(sizeof *e);
    if (!e)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    *e = p->e;
    et_status st = api_input_status(diag, et_einsum_tune_at(e, spec, diag),
                                    ET_INPUT_SHAPE);
    if (st == ET_OK)
        p->e = *e;
    free(e);
    return st;
}

et_status et_problem_set_batch(et_problem *p, const char *rows,
                               et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, p, "p");
    API_NEED(diag, rows, "rows");
    et_rows *r = malloc(sizeof *r);
    et_einsum *e = malloc(sizeof *e);
    et_status st = ET_OK;
    if (!r || !e) {
        st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        goto done;
    }
    st = et_einsum_batch_spec(&p->e, rows, r, e, diag);
    if (st != ET_OK)
        goto done;
    p->e = *e;
    p->rows = *r;
done:
    free(r);
    free(e);
    return st;
}

int et_problem_n_rows(const et_problem *p)
{
    return p ? p->e.n_rows : 0;
}

int et_problem_n_outputs(const et_problem *p)
{
    if (!p)
        return 0;
    return et_einsum_op_rowed(&p->e, -1) ? p->e.n_rows : 1;
}

const char *et_problem_row_name(const et_problem *p, int r, int k)
{
    if (!p || r < 0 || r >= p->rows.n_rows || k < 0 || k >= p->rows.n_ops)
        return "";
    return p->rows.name[r][k];
}

et_status et_shape_expand(const char *spec, char **out, int *n,
                          et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, n, "n");
    *n = 0;
    API_NEED(diag, spec, "spec");
    et_status st = et_shape_spec_expand(spec, out, n, diag);
    if (st != ET_OK) {
        diag->input = ET_INPUT_SHAPE;
        diag->status = st;
    }
    return st;
}

void et_free(void *ptr)
{
    free(ptr);
}

et_status et_space_builtin(et_space **out, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    return et_space_load_text(et_builtin_space_yaml,
                              strlen(et_builtin_space_yaml),
                              "<built-in space>", out, diag);
}

const char *et_space_name(const et_space *s)
{
    return s ? s->name : "";
}

/* Applies an opt list given as text to a fresh kernel of e. */
static et_status kernel_with_opts(const et_einsum *e, const et_target *t,
                                  const char *opts, et_kernel **out,
                                  et_diag *diag)
{
    et_opt list[ET_MAX_OPTS];
    int n = 0;
    *out = NULL;
    if (opts && *opts) {
        et_status st = et_opts_parse(opts, list, ET_MAX_OPTS, &n, diag);
        if (st != ET_OK) {
            diag->input = ET_INPUT_OPTS;
            diag->status = st;
            return st;
        }
    }
    et_kernel *k = NULL;
    et_status st = et_kernel_init(e, t, &k);
    if (st != ET_OK)
        return api_fail(diag, st, ET_INPUT_NONE, "cannot build the kernel: "
                        "%s", et_status_str(st));
    char reason[512] = "";
    st = et_kernel_apply_opts(k, list, n, reason, sizeof reason);
    if (st != ET_OK) {
        et_kernel_free(k);
        diag->pos = -1;
        diag->line = diag->col = 0;
        return api_fail(diag, st, ET_INPUT_OPTS, "%s", reason);
    }
    *out = k;
    return ET_OK;
}

et_status et_codegen(const et_problem *p, const char *opts,
                     et_backend_kind b, et_kernel_source **out,
                     et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, p, "p");
    if ((unsigned)b >= ET_BACKEND_COUNT)
        return et_diag_fail(diag, -1, "unknown backend %d", (int)b);
    et_target t = et_target_generic(b);
    et_kernel *k = NULL;
    et_status st = kernel_with_opts(&p->e, &t, opts, &k, diag);
    if (st != ET_OK)
        return st;
    et_rendered r = {0};
    st = et_kernel_render(k, b, NULL, &r);
    et_kernel_free(k);
    if (st != ET_OK)
        return api_fail(diag, st, ET_INPUT_NONE, "cannot render: %s",
                        et_status_str(st));
    et_kernel_source *ks = calloc(1, sizeof *ks);
    if (!ks) {
        et_rendered_free(&r);
        return ET_ERR_NOMEM;
    }
    ks->source = r.source; /* ownership moves to ks */
    r.source = NULL;
    snprintf(ks->name, sizeof ks->name, "%s", r.name);
    ks->ndim = r.launch.ndim;
    for (int d = 0; d < 3; d++) {
        ks->global[d] = r.launch.global[d];
        ks->local[d] = r.launch.local[d];
    }
    ks->has_local = r.launch.has_local;
    et_rendered_free(&r);
    *out = ks;
    return ET_OK;
}

void et_kernel_source_free(et_kernel_source *k)
{
    if (!k)
        return;
    free(k->source);
    free(k);
}

et_status api_null(et_diag *d, const char *fn, const char *arg)
{
    return api_fail(d, ET_ERR_INPUT, ET_INPUT_OPTION,
                    "%s: argument '%s' is NULL", fn, arg);
}

void api_diag_clear(et_diag *d)
{
    if (!d)
        return;
    memset(d, 0, sizeof *d);
    d->pos = -1;
}

et_status api_options_copy(void *local, size_t cur, const void *given,
                           size_t n, size_t base, const char *fn,
                           et_diag *d)
{
    memset(local, 0, cur);
    if (!given)
        return ET_OK;
    if (n == 0)
        n = base;
    if (n > cur) {
        /* fields of a newer header: harmless while they hold their
         * defaults (zero), refused once set, as they would be ignored */
        const unsigned char *extra = (const unsigned char *)given + cur;
        for (size_t i = 0; i < n - cur; i++)
            if (extra[i])
                return api_fail(d, ET_ERR_UNSUPPORTED, ET_INPUT_OPTION,
                                "%s: the options set a field that this "
                                "library (%s) does not know (their size "
                                "is %zu bytes, its is %zu)",
                                fn, ET_VERSION, n, cur);
        n = cur;
    }
    memcpy(local, given, n);
    return ET_OK;
}

et_status api_input_status(et_diag *d, et_status st, et_input in)
{
    if (st != ET_OK && d) {
        d->status = st;
        d->input = in;
    }
    return st;
}

et_status api_fail(et_diag *d, et_status st, et_input in, const char *fmt,
                   ...)
{
    if (!d)
        return st;
    d->status = st;
    d->input = in;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
    return st;
}

void api_logf(et_log_fn log, void *arg, et_log_level lvl, const char *fmt,
              ...)
{
    if (!log)
        return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log(arg, lvl, buf);
}

et_status api_fail_err(et_diag *d, et_status st, et_input in,
                       const et_error *err)
{
    return api_fail(d, st, in, "%s", err->msg[0] ? err->msg
                                                  : et_status_str(st));
}

void api_problem_title(const et_einsum *e, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "%s  ", e->text);
    for (int a = 0; a < e->n_idx && len < cap; a++)
        if (e->idx[a].open)
            len += (size_t)snprintf(buf + len, cap - len,
                                    " %s=* (at %lld)", e->idx[a].name,
                                    (long long)e->idx[a].size);
        else
            len += (size_t)snprintf(buf + len, cap - len, " %s=%lld",
                                    e->idx[a].name,
                                    (long long)e->idx[a].size);
    if (len < cap)
        len += (size_t)snprintf(buf + len, cap - len, "   ");
    for (int k = 0; k < e->n_ops && len < cap; k++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", k ? "," : "",
                                et_dtype_name(e->op[k].dtype));
    if (len < cap)
        snprintf(buf + len, cap - len, " -> %s", et_dtype_name(e->out.dtype));
}

unsigned api_roof_dtypes(const et_einsum *e)
{
    int64_t ops[ET_DTYPE_COUNT];
    et_einsum_ops(e, ops);
    unsigned mask = 0;
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (ops[t] > 0)
            mask |= 1u << t;
    return mask ? mask : 1u << e->out.dtype;
}

void api_json_problem(void *doc, const et_einsum *e)
{
    /* an open axis is "*" (the size it is worked at is the caller's to
     * say: tune's tune_at, best's tuned_at) */
    cJSON *js = cJSON_AddObjectToObject(doc, "sizes");
    for (int a = 0; js && a < e->n_idx; a++)
        if (e->idx[a].open)
            cJSON_AddStringToObject(js, e->idx[a].name, "*");
        else
            cJSON_AddNumberToObject(js, e->idx[a].name,
                                    (double)e->idx[a].size);

    cJSON *jt = cJSON_AddObjectToObject(doc, "dtypes");
    cJSON *ji = jt ? cJSON_AddArrayToObject(jt, "inputs") : NULL;
    for (int k = 0; ji && k < e->n_ops; k++)
        cJSON_AddItemToArray(ji,
                             cJSON_CreateString(et_dtype_name(e->op[k].dtype)));
    if (jt)
        cJSON_AddStringToObject(jt, "output", et_dtype_name(e->out.dtype));
}

/*
 * npy.c - arrays in host memory for the public API: .npy files read and
 * written through einsum/npy.h, output arrays shaped after a problem, and
 * the checks a front end makes before it reads any file (an einsum's
 * operand count, an opt list's syntax).
 */
#include "api/api_impl.h"

#include "einsum/npy.h"
#include "transforms/kernel.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static_assert(ET_ARRAY_MAX_DIMS >= ET_MAX_RANK,
              "et_host_array must hold every rank einsum/ accepts");

et_status et_npy_load(const char *path, et_host_array *out, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    memset(out, 0, sizeof *out);
    API_NEED(diag, path, "path");
    et_array a;
    memset(&a, 0, sizeof a);
    et_status st = et_npy_read(path, &a, diag);
    if (st != ET_OK) {
        diag->status = st;
        diag->input = ET_INPUT_FILE;
        snprintf(diag->file, sizeof diag->file, "%s", path);
        return st;
    }
    out->dtype = a.dtype;
    out->ndim = a.rank;
    for (int r = 0; r < a.rank; r++)
        out->dims[r] = a.dim[r];
    out->data = a.data; /* malloc'd by et_npy_read: ownership moves */
    return ET_OK;
}

et_status et_npy_save(const char *path, const et_host_array *a,
                      et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, path, "path");
    API_NEED(diag, a, "a");
    if (a->ndim < 0 || a->ndim > ET_MAX_RANK)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "%d dimensions (at most %d)", a->ndim, ET_MAX_RANK);
    if (!a->data && et_host_array_elems(a) != 0)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "et_npy_save: the array's data (a->data) is NULL");
    et_array ia;
    memset(&ia, 0, sizeof ia);
    ia.dtype = a->dtype;
    ia.rank = a->ndim;
    for (int r = 0; r < a->ndim; r++)
        ia.dim[r] = a->dims[r];
    ia.data = a->data;
    et_status st = et_npy_write(path, &ia, diag);
    if (st != ET_OK) {
        diag->status = st;
        diag->input = ET_INPUT_FILE;
        snprintf(diag->file, sizeof diag->file, "%s", path);
    }
    return st;
}

et_status et_host_array_init(const et_problem *p, int k, et_host_array *out)
{
    if (!out)
        return ET_ERR_INPUT;
    memset(out, 0, sizeof *out);
    if (!p || k < -1 || k >= p->e.n_ops)
        return ET_ERR_INPUT;
    const et_operand *o = k < 0 ? &p->e.out : &p->e.op[k];
    size_t bytes = (size_t)et_einsum_operand_elems(&p->e, k) *
                   et_dtype_size(o->dtype);
    out->data = calloc(1, bytes ? bytes : 1);
    if (!out->data)
        return ET_ERR_NOMEM;
    out->dtype = o->dtype;
    out->ndim = o->rank;
    for (int r = 0; r < o->rank; r++)
        out->dims[r] = o->dim[r];
    return ET_OK;
}

int64_t et_host_array_elems(const et_host_array *a)
{
    if (!a)
        return 0;
    int64_t n = 1;
    for (int r = 0; r < a->ndim; r++)
        n *= a->dims[r];
    return n;
}

void et_host_array_free(et_host_array *a)
{
    if (!a)
        return;
    free(a->data);
    a->data = NULL;
}

et_status et_einsum_count_operands(const char *einsum, int *n,
                                   et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, n, "n");
    *n = 0;
    API_NEED(diag, einsum, "einsum");
    et_subscripts *sub = malloc(sizeof *sub);
    if (!sub)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    et_status st = api_input_status(diag, et_subscripts_parse(einsum, sub,
                                                              diag),
                                    ET_INPUT_EINSUM);
    if (st == ET_OK)
        *n = sub->n_ops;
    free(sub);
    return st;
}

et_status et_opts_validate(const char *opts, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    if (!opts || !*opts)
        return ET_OK;
    et_opt *list = calloc(ET_MAX_OPTS, sizeof *list);
    if (!list)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    int n = 0;
    et_status st = et_opts_parse(opts, list, ET_MAX_OPTS, &n, diag);
    if (st != ET_OK) {
        diag->status = st;
        diag->input = ET_INPUT_OPTS;
    }
    free(list);
    return st;
}

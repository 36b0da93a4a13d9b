/*
 * kernel.c - the loop-nest IR, the driver that applies an opt through its
 * descriptor (the opts themselves are opts.c's), the limits every opt is
 * checked against, and the launch geometry. See kernel.h for the model.
 */
#include "transforms/opts_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT_INT31 ((int64_t)0x7fffffff)
#define MAX_UNROLLED 256

/* ---- kernel lifetime ---------------------------------------------------- */

static bool is_global_axis(const et_kernel *k, int a) { return a < k->e.n_out; }

et_status et_kernel_init(const et_einsum *e, const et_target *t,
                         et_kernel **out)
{
    *out = NULL;
    if (e->n_ops < 1 || e->n_ops > ET_MAX_OPERANDS || e->n_idx < 0 ||
        e->n_idx > ET_MAX_INDICES || e->n_out > e->n_idx)
        return ET_ERR_INPUT;
    et_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return ET_ERR_NOMEM;
    k->e = *e;
    k->target = t ? *t : et_target_generic(ET_BACKEND_OPENCL);
    for (int a = 0; a < e->n_idx; a++) {
        et_part *p = &k->part[a];
        snprintf(p->name, sizeof p->name, "%s", e->idx[a].name);
        p->axis = a;
        p->kind = is_global_axis(k, a) ? ET_PART_GLOBAL : ET_PART_REDUCE;
        p->size = e->idx[a].size;
        p->stride = 1;
        k->outer[a] = a;
        k->padded[a] = e->idx[a].size;
    }
    k->n_parts = e->n_idx;
    /* launch order: the innermost output axis first (dimension 0), the
     * outermost last; a batched einsum's row axis (index 0) second, so
     * that the work-groups of one block of the other axes, one per row,
     * run one after another and share what they read alike */
    for (int j = 0; j < e->n_out; j++)
        k->order[j] = e->n_out - 1 - j;
    if (e->n_rows >= 2 && e->n_out >= 3 && !et_einsum_rows_summed(e)) {
        k->order[1] = 0;
        for (int j = 2; j < e->n_out; j++)
            k->order[j] = e->n_out - j;
    }
    k->group_part = -1;
    k->prefetch_axis = -1;
    k->prefetch_part = -1;
    *out = k;
    return ET_OK;
}

void et_kernel_free(et_kernel *k) { free(k); }

et_kernel *et_kernel_clone(const et_kernel *k)
{
    et_kernel *c = malloc(sizeof *c);
    if (c)
        memcpy(c, k, sizeof *c);
    return c;
}

int et_kernel_axis_find(const et_kernel *k, const et_axis_ref *ref)
{
    if (ref->pos >= 0)
        return ref->pos < k->e.n_idx ? ref->pos : -1;
    for (int a = 0; a < k->e.n_idx; a++)
        if (strcmp(k->e.idx[a].name, ref->name) == 0)
            return a;
    return -1;
}

int et_kernel_part_find(const et_kernel *k, const char *name)
{
    for (int i = 0; i < k->n_parts; i++)
        if (strcmp(k->part[i].name, name) == 0)
            return i;
    return -1;
}

/* ---- measures of a kernel ------------------------------------------------ */

/* Saturating product (the limits compared against are far below). */
static int64_t mul_sat(int64_t a, int64_t b)
{
    if (a == 0 || b == 0)
        return 0;
    if (a > INT64_MAX / b)
        return INT64_MAX;
    return a * b;
}

/* Launch dimension of global axis a. */
int et_kernel_axis_dim(const et_kernel *k, int a)
{
    for (int j = 0; j < k->e.n_out; j++)
        if (k->order[j] == a)
            return j < 2 ? j : 2;
    return 0;
}

/* Launch dimension that holds the SPLIT parts: the last one. */
int et_kernel_split_dim(const et_kernel *k)
{
    int ndim = k->e.n_out < 1 ? 1 : (k->e.n_out > 3 ? 3 : k->e.n_out);
    return ndim - 1;
}

int et_kernel_factor_axis(const et_kernel *k)
{
    if (k->prefetch_axis >= 0)
        return k->prefetch_axis;
    return k->e.n_idx > k->e.n_out ? k->e.n_idx - 1 : -1;
}

bool et_kernel_has_split(const et_kernel *k)
{
    for (int i = 0; i < k->n_parts; i++)
        if (k->part[i].kind == ET_PART_SPLIT)
            return true;
    return false;
}

static int64_t group_lanes(const et_kernel *k)
{
    return k->group_part >= 0 ? k->part[k->group_part].size : 1;
}

/* Work-group size along each dimension (lanes folded into dim 0). */
void et_kernel_local_dims(const et_kernel *k, int64_t L[3])
{
    L[0] = L[1] = L[2] = 1;
    for (int i = 0; i < k->n_parts; i++) {
        const et_part *p = &k->part[i];
        if (p->kind == ET_PART_LOCAL) {
            int d = et_kernel_axis_dim(k, p->axis);
            L[d] = mul_sat(L[d], p->size);
        }
    }
    L[0] = mul_sat(L[0], group_lanes(k));
}

int64_t et_kernel_group_size(const et_kernel *k)
{
    int64_t L[3];
    et_kernel_local_dims(k, L);
    return mul_sat(mul_sat(L[0], L[1]), L[2]);
}

static int64_t acc_size(const et_kernel *k)
{
    return (int64_t)et_dtype_size(k->e.acc_dtype);
}

static int64_t upcast_count(const et_kernel *k)
{
    int64_t u = 1;
    for (int i = 0; i < k->n_parts; i++)
        if (k->part[i].kind == ET_PART_UPCAST)
            u = mul_sat(u, k->part[i].size);
    return u;
}

static bool op_uses(const et_einsum *e, int op, int a)
{
    const et_operand *o = op < 0 ? &e->out : &e->op[op];
    for (int d = 0; d < o->rank; d++)
        if (o->idx[d] == a)
            return true;
    return false;
}

bool et_kernel_op_uses(const et_kernel *k, int op, int a)
{
    return op_uses(&k->e, op, a);
}

bool et_kernel_staged(const et_kernel *k, int op)
{
    if (!k->stage || (k->prefetch_axis >= 0 && k->prefetch_op[op]))
        return false;
    for (int p = 0; p < k->n_parts; p++)
        if ((k->part[p].kind == ET_PART_LOCAL ||
             k->part[p].kind == ET_PART_GROUP ||
             k->part[p].kind == ET_PART_LOOP) &&
            op_uses(&k->e, op, k->part[p].axis))
            return false;
    return true;
}

bool et_kernel_op_local(const et_kernel *k, int op)
{
    return (k->prefetch_axis >= 0 && k->prefetch_op[op]) ||
           et_kernel_staged(k, op);
}

/* Is part p a dimension of the PREFETCH or STAGE tile of operand op? */
bool et_kernel_tile_part(const et_kernel *k, int op, int p)
{
    const et_part *pt = &k->part[p];
    if (!op_uses(&k->e, op, pt->axis))
        return false;
    if (et_kernel_staged(k, op))
        return pt->kind == ET_PART_UPCAST || pt->kind == ET_PART_UNROLL ||
               pt->kind == ET_PART_REDUCE || pt->kind == ET_PART_PREFETCH;
    switch (pt->kind) {
    case ET_PART_LOCAL:
    case ET_PART_UPCAST:
    case ET_PART_UNROLL:
    case ET_PART_GROUP:
    case ET_PART_PREFETCH:
        return true;
    default:
        return false;
    }
}

int64_t et_kernel_tile_elems(const et_kernel *k, int op)
{
    int64_t t = 1;
    for (int p = 0; p < k->n_parts; p++)
        if (et_kernel_tile_part(k, op, p))
            t = mul_sat(t, k->part[p].size);
    return t;
}

int64_t et_kernel_local_bytes(const et_kernel *k)
{
    int64_t b = 0;
    for (int op = 0; op < k->e.n_ops; op++)
        if (et_kernel_op_local(k, op))
            b += mul_sat(et_kernel_tile_elems(k, op), acc_size(k));
    if (k->group_part >= 0)
        b += mul_sat(mul_sat(et_kernel_group_size(k), upcast_count(k)),
                     acc_size(k));
    return b;
}

/* ---- applying opts ------------------------------------------------------- */

/* Checks the limits that every opt can affect; ET_OK if fine. */
static et_status check_limits(const et_kernel *k, const et_opt_call *c)
{
    int64_t L[3];
    et_kernel_local_dims(k, L);
    int64_t wg = et_kernel_group_size(k);
    if (wg > k->target.max_work_group_size)
        return et_opt_refuse(c,
                             "work-group size %lld exceeds the device limit "
                             "%lld",
                             (long long)wg,
                             (long long)k->target.max_work_group_size);
    for (int d = 0; d < 3; d++)
        if (k->target.max_work_item_sizes[d] > 0 &&
            L[d] > k->target.max_work_item_sizes[d])
            return et_opt_refuse(c,
                                 "work-group size %lld along dimension %d "
                                 "exceeds the device limit %lld",
                                 (long long)L[d], d,
                                 (long long)k->target.max_work_item_sizes[d]);
    int64_t unrolled = 1;
    for (int i = 0; i < k->n_parts; i++)
        if (k->part[i].kind == ET_PART_UPCAST ||
            k->part[i].kind == ET_PART_UNROLL)
            unrolled = mul_sat(unrolled, k->part[i].size);
    if (unrolled > MAX_UNROLLED)
        return et_opt_refuse(c,
                             "the product of UPCAST and UNROLL amounts "
                             "(%lld) exceeds %d",
                             (long long)unrolled, MAX_UNROLLED);
    if (k->factor) {
        /* the innermost loop moves with PREFETCH: checked after each opt */
        int fa = et_kernel_factor_axis(k);
        bool outside = false;
        for (int op = 0; op < k->e.n_ops; op++)
            outside = outside || !op_uses(&k->e, op, fa);
        if (!outside)
            return et_opt_refuse(c,
                                 "FACTOR: every operand uses %s, the index "
                                 "of the innermost reduce loop, so none can "
                                 "be factored out of its sum",
                                 k->e.idx[fa].name);
    }
    if (k->stage) {
        /* LOCAL, GROUP and PREFETCH change which inputs are staged */
        bool any = false;
        for (int op = 0; op < k->e.n_ops; op++)
            any = any || et_kernel_staged(k, op);
        if (!any)
            return et_opt_refuse(c,
                                 "STAGE: no input is read alike by every "
                                 "work-item of a work-group (each one's "
                                 "indices use a LOCAL part or a GROUP lane, "
                                 "or it is prefetched)");
    }
    int64_t lb = et_kernel_local_bytes(k);
    if (lb > k->target.local_mem_bytes)
        return et_opt_refuse(c,
                             "local memory %lld bytes exceeds the device "
                             "limit %lld",
                             (long long)lb,
                             (long long)k->target.local_mem_bytes);
    return ET_OK;
}

int et_kernel_split(et_kernel *k, int a, int64_t n, et_part_kind kind,
                    const char *suffix, bool top)
{
    et_part *outer = &k->part[k->outer[a]];
    int count = 1;
    char base[16];
    snprintf(base, sizeof base, "%.8s_%s", k->e.idx[a].name, suffix);
    for (int i = 0; i < k->n_parts; i++)
        if (k->part[i].axis == a && k->part[i].kind == kind)
            count++;
    et_part *inner = &k->part[k->n_parts];
    memset(inner, 0, sizeof *inner);
    if (count == 1)
        snprintf(inner->name, sizeof inner->name, "%s", base);
    else
        snprintf(inner->name, sizeof inner->name, "%s%d", base,
                 count % 1000);
    inner->axis = a;
    inner->kind = kind;
    inner->size = n;
    int64_t S = outer->size;
    if (top) {
        inner->stride = outer->stride * (S / n);
    } else {
        inner->stride = outer->stride;
        outer->stride *= n;
    }
    outer->size = S / n;
    return k->n_parts++;
}

/* Product of the sizes of the inner parts of axis a (all but its outer
 * part): the launch covers a in steps of this many. */
static int64_t inner_product(const et_kernel *k, int a)
{
    int64_t t = 1;
    for (int i = 0; i < k->n_parts; i++)
        if (k->part[i].axis == a && i != k->outer[a])
            t = mul_sat(t, k->part[i].size);
    return t;
}

void et_kernel_open_resize(et_kernel *k, int a)
{
    int64_t T = inner_product(k, a);
    int64_t n = k->e.idx[a].size;
    int64_t outer = (n + T - 1) / T;
    k->part[k->outer[a]].size = outer;
    k->padded[a] = mul_sat(outer, T);
}

int64_t et_kernel_open_step(const et_kernel *k)
{
    int a = et_einsum_open_axis(&k->e);
    return a < 0 ? 1 : inner_product(k, a);
}

et_status et_kernel_set_open_size(et_kernel *k, int64_t n, et_diag *d)
{
    int a = et_einsum_open_axis(&k->e);
    if (a < 0)
        return et_diag_fail(d, -1, "the kernel has no open axis");
    et_status st = et_einsum_set_size(&k->e, a, n, d);
    if (st != ET_OK)
        return st;
    et_kernel_open_resize(k, a);
    return ET_OK;
}

static const char *axis_name(const et_kernel *k, int a)
{
    return k->e.idx[a].name;
}

/* Resolves an axis argument of c's opt into *a and records it by its
 * letter in *rec. */
static et_status resolve_axis(const et_kernel *k, const et_opt_call *c,
                              const et_axis_ref *ref, int *a,
                              et_axis_ref *rec)
{
    *a = et_kernel_axis_find(k, ref);
    if (*a < 0) {
        char an[32];
        et_opt_format_axis(an, sizeof an, ref);
        return et_opt_refuse(c, "no axis %s%s in this kernel",
                             ref->pos >= 0 ? "at position " : "named ", an);
    }
    rec->pos = -1;
    snprintf(rec->name, sizeof rec->name, "%s", axis_name(k, *a));
    return ET_OK;
}

/* The rules every opt is checked against before its own, from what its
 * descriptor says; their order is the order refusals are reported in. */
static et_status common_rules(const et_kernel *k, et_opt_call *c)
{
    const et_opt_desc *d = c->d;
    if (k->n_opts >= ET_MAX_OPTS)
        return et_opt_refuse(c, "too many opts (at most %d)", ET_MAX_OPTS);
    if (d->needs_group && k->nolocals)
        return et_opt_refuse(c,
                             "%s needs an explicit work-group; NOLOCALS was "
                             "applied",
                             d->name);
    bool amount = false;
    for (int i = 0; i < d->n_args; i++) {
        et_status st = ET_OK;
        if (d->arg[i] == ET_OPT_ARG_AXIS)
            st = resolve_axis(k, c, &c->o->axis, &c->a, &c->rec.axis);
        else if (d->arg[i] == ET_OPT_ARG_AXIS2)
            st = resolve_axis(k, c, &c->o->axis2, &c->b, &c->rec.axis2);
        else if (d->arg[i] == ET_OPT_ARG_AMOUNT)
            amount = true;
        if (st != ET_OK)
            return st;
    }
    if (amount && c->o->amt < 0)
        return et_opt_refuse(c, "the amount must be >= 0");
    if (d->axes == ET_OPT_AXES_GLOBAL && !is_global_axis(k, c->a))
        return et_opt_refuse(c,
                             "%s applies to global axes only; %s is a reduce "
                             "axis",
                             d->name, axis_name(k, c->a));
    if (d->axes == ET_OPT_AXES_REDUCE && is_global_axis(k, c->a))
        return et_opt_refuse(c,
                             "%s applies to reduce axes only; %s is a global "
                             "axis",
                             d->name, axis_name(k, c->a));
    return ET_OK;
}

/* Applies o to k in place (k is a scratch copy); refusal leaves garbage.
 * What an opt is and does comes from its descriptor (opts.c). */
/*
 * A batched kernel's rows (kernel.h): a row is a pointer of its own, so
 * the row axis is either global (each work-group one row) or UPCAST whole
 * (each work-item every row: a shared operand's value loaded once for
 * all; a rowed operand's PREFETCH or STAGE tile then holds every row,
 * each element copied through its row's pointer); SPLIT would zero every
 * row's output and is not offered. Rows summed into one output: the row
 * axis is a reduce axis, a loop (each iteration's pointers chosen at its
 * top) or UNROLLed whole (every row's pointers named in the source); no
 * other opt names it, and SPLIT of another reduce axis applies (one
 * output to zero).
 */
static et_status row_rules(const et_kernel *k, et_opt_call *c)
{
    if (!k->e.n_rows)
        return ET_OK;
    const char *R = k->e.idx[k->e.row_axis].name;
    et_opt_kind kind = c->o->kind;
    if (et_einsum_rows_summed(&k->e)) {
        if (c->a != k->e.row_axis)
            return ET_OK;
        if (kind != ET_OPT_UNROLL)
            return et_opt_refuse(c, "the row axis %s of rows summed into "
                                    "one output is a loop or UNROLLed "
                                    "whole (each row's arrays are "
                                    "pointers of their own)", R);
        if (k->part[k->outer[k->e.row_axis]].size != k->e.n_rows ||
            (c->o->amt != 0 && c->o->amt != k->e.n_rows))
            return et_opt_refuse(c, "UNROLL of the row axis %s takes all "
                                    "its %d rows (amount 0 or %d)", R,
                                 k->e.n_rows, k->e.n_rows);
        return ET_OK;
    }
    if (kind == ET_OPT_SPLIT)
        return et_opt_refuse(c, "SPLIT does not apply to a batched einsum "
                                "(its rows' outputs would all need zeroing)");
    if (c->a != 0 || kind == ET_OPT_SWAP)
        return ET_OK;
    if (kind != ET_OPT_UPCAST)
        return et_opt_refuse(c, "the row axis %s is global or UPCAST whole "
                                "(each row's arrays are pointers of their "
                                "own)", R);
    if (k->part[k->outer[0]].size != k->e.n_rows ||
        (c->o->amt != 0 && c->o->amt != k->e.n_rows))
        return et_opt_refuse(c, "UPCAST of the row axis %s takes all its %d "
                                "rows (amount 0 or %d)", R, k->e.n_rows,
                             k->e.n_rows);
    return ET_OK;
}

static et_status apply(et_kernel *k, const et_opt *o, char *reason,
                       size_t cap)
{
    et_opt_call c = {
        .o = o, .reason = reason, .cap = cap,
        .d = et_opt_desc_get(o->kind),
        .a = -1, .b = -1,
        .rec = *o, /* recorded with its axes resolved to their letters */
    };
    if (!c.d)
        return et_opt_refuse(&c, "unknown opt");
    et_status st = common_rules(k, &c);
    if (st == ET_OK)
        st = row_rules(k, &c);
    if (st == ET_OK)
        st = c.d->rules(k, &c);
    if (st != ET_OK)
        return st;
    c.d->apply(k, &c);
    k->opts[k->n_opts++] = c.rec;
    return c.d->limits ? check_limits(k, &c) : ET_OK;
}

et_status et_kernel_apply_opt(et_kernel *k, const et_opt *opt, char *reason,
                              size_t cap)
{
    if (reason && cap)
        reason[0] = '\0';
    et_kernel *tmp = et_kernel_clone(k);
    if (!tmp)
        return ET_ERR_NOMEM;
    et_status st = apply(tmp, opt, reason, cap);
    if (st == ET_OK)
        memcpy(k, tmp, sizeof *k);
    free(tmp);
    return st;
}

et_status et_kernel_apply_opts(et_kernel *k, const et_opt *opts, int n,
                               char *reason, size_t cap)
{
    for (int i = 0; i < n; i++) {
        et_status st = et_kernel_apply_opt(k, &opts[i], reason, cap);
        if (st != ET_OK)
            return st;
    }
    return ET_OK;
}

/* ---- launch geometry ----------------------------------------------------- */

/* Number of groups along each dimension. */
void et_kernel_group_counts(const et_kernel *k, int64_t N[3])
{
    N[0] = N[1] = N[2] = 1;
    for (int i = 0; i < k->n_parts; i++) {
        const et_part *p = &k->part[i];
        if (p->kind == ET_PART_GLOBAL) {
            int d = et_kernel_axis_dim(k, p->axis);
            N[d] = mul_sat(N[d], p->size);
        } else if (p->kind == ET_PART_SPLIT) {
            int d = et_kernel_split_dim(k);
            N[d] = mul_sat(N[d], p->size);
        }
    }
}

bool et_kernel_flat_groups(const et_kernel *k, et_backend_kind b)
{
    if (b != ET_BACKEND_CUDA)
        return false;
    /* the number of groups along an open axis is known at launch only:
     * CUDA kernels with one decode every group from blockIdx.x */
    if (et_einsum_open_axis(&k->e) >= 0)
        return true;
    int64_t N[3];
    et_kernel_group_counts(k, N);
    return N[1] > 65535 || N[2] > 65535;
}

et_status et_kernel_launch(const et_kernel *k, et_backend_kind b,
                           et_launch *out)
{
    memset(out, 0, sizeof *out);
    int64_t L[3], N[3];
    et_kernel_local_dims(k, L);
    et_kernel_group_counts(k, N);
    int ndim = k->e.n_out < 1 ? 1 : (k->e.n_out > 3 ? 3 : k->e.n_out);
    out->ndim = ndim;
    out->has_local = !k->nolocals;
    if (et_kernel_has_split(k)) {
        int64_t elems = 1;
        for (int j = 0; j < k->e.n_out; j++)
            elems = mul_sat(elems, k->e.idx[j].size);
        out->zero_bytes =
            mul_sat(elems, (int64_t)et_dtype_size(k->e.out.dtype));
    }
    int oa = et_einsum_open_axis(&k->e);
    if (oa >= 0) {
        out->n_scalars = 1;
        out->scalar[0] = k->e.idx[oa].size;
    }
    if (et_kernel_flat_groups(k, b)) {
        int64_t tot = mul_sat(mul_sat(N[0], N[1]), N[2]);
        if (tot > LIMIT_INT31)
            return ET_ERR_UNSUPPORTED;
        N[0] = tot;
        N[1] = N[2] = 1;
    }
    if (b == ET_BACKEND_CUDA && N[0] > LIMIT_INT31)
        return ET_ERR_UNSUPPORTED;
    for (int d = 0; d < 3; d++) {
        if (d >= ndim) {
            out->global[d] = 1;
            out->local[d] = 1;
            continue;
        }
        out->global[d] = mul_sat(N[d], L[d]);
        out->local[d] = L[d];
    }
    if (out->global[0] == INT64_MAX || out->global[1] == INT64_MAX ||
        out->global[2] == INT64_MAX)
        return ET_ERR_UNSUPPORTED;
    return ET_OK;
}

/*
 * kernel.c - the loop-nest IR, the opts, their validity rules and the
 * launch geometry. See kernel.h for the model.
 */
#include "transforms/kernel_impl.h"

#include <assert.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const opt_names[] = {
    "LOCAL", "UPCAST", "UNROLL", "GROUP", "GROUPTOP",
    "PADTO", "SWAP",   "NOLOCALS", "PREFETCH", "SPLIT", "HOIST",
    "FACTOR", "STAGE", "LOOP",
};
static_assert(sizeof(opt_names) / sizeof(opt_names[0]) == ET_OPT_COUNT,
              "opt_names must match et_opt_kind");

/* "LOCAL, UPCAST, ..." from opt_names, so that an error's list of the
 * opts can never leave one out. */
static void opt_name_list(char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int k = 0; k < ET_OPT_COUNT && n < cap; k++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", k ? ", " : "",
                              opt_names[k]);
}

/* name suffix of the inner part each split kind makes */
static const char *const part_suffix[] = {"", "", "l", "u", "r", "g", "p",
                                          "s", "o"};
static_assert(sizeof(part_suffix) / sizeof(part_suffix[0]) == ET_PART_COUNT,
              "part_suffix must match et_part_kind");

#define LIMIT_INT31 ((int64_t)0x7fffffff)
#define MAX_UNROLLED 256

const char *et_opt_kind_name(et_opt_kind k)
{
    if ((unsigned)k >= ET_OPT_COUNT)
        return "?";
    return opt_names[k];
}

et_opt et_opt_make(et_opt_kind kind, const char *axis, int64_t amt)
{
    et_opt o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.axis.pos = -1;
    o.axis2.pos = -1;
    if (axis)
        snprintf(o.axis.name, sizeof o.axis.name, "%s", axis);
    o.amt = amt;
    return o;
}

/* ---- text form ---------------------------------------------------------- */

static int fmt_axis(char *buf, size_t cap, const et_axis_ref *a)
{
    if (a->pos >= 0)
        return snprintf(buf, cap, "%d", a->pos);
    return snprintf(buf, cap, "%s", a->name);
}

/* One opt into buf; returns the length needed. */
static size_t fmt_opt(const et_opt *o, char *buf, size_t cap)
{
    char a1[32], a2[32];
    fmt_axis(a1, sizeof a1, &o->axis);
    fmt_axis(a2, sizeof a2, &o->axis2);
    const char *nm = et_opt_kind_name(o->kind);
    int n;
    switch (o->kind) {
    case ET_OPT_NOLOCALS:
    case ET_OPT_HOIST:
    case ET_OPT_FACTOR:
    case ET_OPT_STAGE:
        n = snprintf(buf, cap, "%s", nm);
        break;
    case ET_OPT_SWAP:
        n = snprintf(buf, cap, "%s(%s,%s)", nm, a1, a2);
        break;
    case ET_OPT_PREFETCH:
        n = snprintf(buf, cap, "%s(%d,%s,%lld)", nm, o->operand, a1,
                     (long long)o->amt);
        break;
    default:
        n = snprintf(buf, cap, "%s(%s,%lld)", nm, a1, (long long)o->amt);
        break;
    }
    return n < 0 ? 0 : (size_t)n;
}

size_t et_opts_format(const et_opt *opts, int n, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap > 0)
        buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        char one[128];
        fmt_opt(&opts[i], one, sizeof one);
        size_t l = strlen(one) + (i > 0);
        if (len + l < cap) {
            if (i > 0)
                buf[len] = ' ';
            memcpy(buf + len + (i > 0), one, strlen(one) + 1);
        } else if (cap > 0) {
            buf[cap - 1] = '\0';
        }
        len += l;
    }
    return len;
}

static et_status parse_error(et_diag *d, int pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static et_status parse_error(et_diag *d, int pos, const char *fmt, ...)
{
    if (d) {
        d->line = 1;
        d->col = pos + 1;
        d->pos = pos;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->msg, sizeof d->msg, fmt, ap);
        va_end(ap);
    }
    return ET_ERR_INPUT;
}

typedef enum { ARG_AXIS, ARG_INT } arg_type;

/* Parses one argument at *p; fills either *num or name. */
static et_status parse_arg(const char *text, const char **p, arg_type want,
                           int64_t *num, et_axis_ref *ax, const char *opt,
                           int argno, et_diag *d)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    int pos = (int)(s - text);
    if (isdigit((unsigned char)*s) || *s == '-' || *s == '+') {
        const char *q = s;
        if (*q == '-' || *q == '+')
            q++;
        if (!isdigit((unsigned char)*q))
            return parse_error(d, pos, "%s: argument %d: expected %s", opt,
                               argno, want == ARG_INT ? "an integer"
                                                      : "an axis");
        int64_t v = 0;
        while (isdigit((unsigned char)*q)) {
            if (v > (INT64_MAX - 9) / 10)
                return parse_error(d, pos, "%s: argument %d: integer too large",
                                   opt, argno);
            v = v * 10 + (*q - '0');
            q++;
        }
        if (*s == '-')
            v = -v;
        if (want == ARG_INT) {
            *num = v;
        } else {
            if (v < 0 || v >= ET_MAX_INDICES)
                return parse_error(d, pos,
                                   "%s: argument %d: axis position %lld out of "
                                   "range",
                                   opt, argno, (long long)v);
            ax->pos = (int)v;
            ax->name[0] = '\0';
        }
        s = q;
    } else if (isalpha((unsigned char)*s) || *s == '_') {
        if (want == ARG_INT)
            return parse_error(d, pos, "%s: argument %d: expected an integer",
                               opt, argno);
        const char *q = s;
        while (isalnum((unsigned char)*q) || *q == '_')
            q++;
        if ((size_t)(q - s) >= ET_AXIS_NAME_LEN)
            return parse_error(d, pos, "%s: argument %d: axis name too long",
                               opt, argno);
        ax->pos = -1;
        memcpy(ax->name, s, (size_t)(q - s));
        ax->name[q - s] = '\0';
        s = q;
    } else {
        return parse_error(d, pos, "%s: argument %d: expected %s", opt, argno,
                           want == ARG_INT ? "an integer" : "an axis");
    }
    while (*s == ' ' || *s == '\t')
        s++;
    *p = s;
    return ET_OK;
}

et_status et_opts_parse(const char *text, et_opt *out, int cap, int *n,
                        et_diag *d)
{
    *n = 0;
    if (d) {
        memset(d, 0, sizeof *d);
        d->pos = -1;
    }
    if (!text)
        return ET_OK;
    const char *p = text;
    int count = 0;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        const char *name = p;
        int pos = (int)(p - text);
        while (isalpha((unsigned char)*p))
            p++;
        size_t len = (size_t)(p - name);
        char names[256];
        opt_name_list(names, sizeof names);
        if (len == 0)
            return parse_error(d, pos, "expected an opt name (%s)", names);
        int kind = -1;
        for (int k = 0; k < ET_OPT_COUNT; k++)
            if (strlen(opt_names[k]) == len &&
                strncmp(opt_names[k], name, len) == 0)
                kind = k;
        if (kind < 0)
            return parse_error(d, pos, "unknown opt '%.*s' (expected %s)",
                               (int)len, name, names);
        if (count >= cap)
            return parse_error(d, pos, "too many opts (at most %d)", cap);
        et_opt o = et_opt_make((et_opt_kind)kind, NULL, 0);
        const char *nm = opt_names[kind];
        arg_type types[3];
        int nargs;
        switch (kind) {
        case ET_OPT_NOLOCALS:
        case ET_OPT_HOIST:
        case ET_OPT_FACTOR:
        case ET_OPT_STAGE: nargs = 0; break;
        case ET_OPT_SWAP:
            nargs = 2; types[0] = ARG_AXIS; types[1] = ARG_AXIS;
            break;
        case ET_OPT_PREFETCH:
            nargs = 3; types[0] = ARG_INT; types[1] = ARG_AXIS;
            types[2] = ARG_INT;
            break;
        default:
            nargs = 2; types[0] = ARG_AXIS; types[1] = ARG_INT;
            break;
        }
        const char *q = p;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q != '(') {
            if (nargs == 0 && (*q == '\0' || isspace((unsigned char)*q) ||
                               *p == '\0' || isspace((unsigned char)*p))) {
                out[count++] = o;
                continue;
            }
            return parse_error(d, (int)(q - text), "%s: expected '('", nm);
        }
        p = q + 1;
        int got = 0;
        if (nargs == 0) {
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p != ')')
                return parse_error(d, (int)(p - text),
                                   "%s takes no arguments", nm);
            p++;
        } else {
            for (;;) {
                if (got >= nargs)
                    return parse_error(d, (int)(p - text),
                                       "%s takes %d arguments", nm, nargs);
                int64_t num = 0;
                et_axis_ref ax = {-1, ""};
                et_status st = parse_arg(text, &p, types[got], &num, &ax, nm,
                                         got + 1, d);
                if (st != ET_OK)
                    return st;
                if (kind == ET_OPT_PREFETCH) {
                    if (got == 0) {
                        if (num < 0 || num >= ET_MAX_OPERANDS)
                            return parse_error(d, (int)(p - text) - 1,
                                               "PREFETCH: operand %lld out of "
                                               "range",
                                               (long long)num);
                        o.operand = (int)num;
                    } else if (got == 1) {
                        o.axis = ax;
                    } else {
                        o.amt = num;
                    }
                } else if (kind == ET_OPT_SWAP) {
                    if (got == 0)
                        o.axis = ax;
                    else
                        o.axis2 = ax;
                } else {
                    if (got == 0)
                        o.axis = ax;
                    else
                        o.amt = num;
                }
                got++;
                if (*p == ',') {
                    p++;
                    continue;
                }
                if (*p == ')') {
                    p++;
                    break;
                }
                return parse_error(d, (int)(p - text),
                                   "%s: expected ',' or ')'", nm);
            }
            if (got != nargs)
                return parse_error(d, (int)(p - text) - 1,
                                   "%s takes %d arguments, got %d", nm, nargs,
                                   got);
        }
        if (*p && !isspace((unsigned char)*p))
            return parse_error(d, (int)(p - text),
                               "expected a space between opts");
        out[count++] = o;
    }
    *n = count;
    return ET_OK;
}

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
    for (int j = 0; j < e->n_out; j++)
        k->order[j] = e->n_out - 1 - j;
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

static et_status refuse(char *reason, size_t cap, const et_opt *o,
                        const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static et_status refuse(char *reason, size_t cap, const et_opt *o,
                        const char *fmt, ...)
{
    if (reason && cap > 0) {
        char head[128];
        fmt_opt(o, head, sizeof head);
        int n = snprintf(reason, cap, "%s: ", head);
        if (n >= 0 && (size_t)n < cap) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(reason + n, cap - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return ET_ERR_REFUSED;
}

static bool has_kind(const et_kernel *k, et_part_kind kind)
{
    for (int i = 0; i < k->n_parts; i++)
        if (k->part[i].kind == kind)
            return true;
    return false;
}

/* Checks the limits that every opt can affect; 0 if fine. */
static et_status check_limits(const et_kernel *k, const et_opt *o,
                              char *reason, size_t cap)
{
    int64_t L[3];
    et_kernel_local_dims(k, L);
    int64_t wg = et_kernel_group_size(k);
    if (wg > k->target.max_work_group_size)
        return refuse(reason, cap, o,
                      "work-group size %lld exceeds the device limit %lld",
                      (long long)wg, (long long)k->target.max_work_group_size);
    for (int d = 0; d < 3; d++)
        if (k->target.max_work_item_sizes[d] > 0 &&
            L[d] > k->target.max_work_item_sizes[d])
            return refuse(reason, cap, o,
                          "work-group size %lld along dimension %d exceeds "
                          "the device limit %lld",
                          (long long)L[d], d,
                          (long long)k->target.max_work_item_sizes[d]);
    int64_t unrolled = 1;
    for (int i = 0; i < k->n_parts; i++)
        if (k->part[i].kind == ET_PART_UPCAST ||
            k->part[i].kind == ET_PART_UNROLL)
            unrolled = mul_sat(unrolled, k->part[i].size);
    if (unrolled > MAX_UNROLLED)
        return refuse(reason, cap, o,
                      "the product of UPCAST and UNROLL amounts (%lld) "
                      "exceeds %d",
                      (long long)unrolled, MAX_UNROLLED);
    if (k->factor) {
        /* the innermost loop moves with PREFETCH: checked after each opt */
        int fa = et_kernel_factor_axis(k);
        bool outside = false;
        for (int op = 0; op < k->e.n_ops; op++)
            outside = outside || !op_uses(&k->e, op, fa);
        if (!outside)
            return refuse(reason, cap, o,
                          "FACTOR: every operand uses %s, the index of the "
                          "innermost reduce loop, so none can be factored "
                          "out of its sum",
                          k->e.idx[fa].name);
    }
    if (k->stage) {
        /* LOCAL, GROUP and PREFETCH change which inputs are staged */
        bool any = false;
        for (int op = 0; op < k->e.n_ops; op++)
            any = any || et_kernel_staged(k, op);
        if (!any)
            return refuse(reason, cap, o,
                          "STAGE: no input is read alike by every work-item "
                          "of a work-group (each one's indices use a LOCAL "
                          "part or a GROUP lane, or it is prefetched)");
    }
    int64_t lb = et_kernel_local_bytes(k);
    if (lb > k->target.local_mem_bytes)
        return refuse(reason, cap, o,
                      "local memory %lld bytes exceeds the device limit %lld",
                      (long long)lb, (long long)k->target.local_mem_bytes);
    return ET_OK;
}

/* Splits the outer part of axis a by n into a new inner part of kind
 * `kind`; top = GROUPTOP ordering. Returns the new part's index. */
static int split(et_kernel *k, int a, int64_t n, et_part_kind kind, bool top)
{
    et_part *outer = &k->part[k->outer[a]];
    int count = 1;
    char base[16];
    snprintf(base, sizeof base, "%.8s_%s", k->e.idx[a].name,
             part_suffix[kind]);
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

/* Open axis a: its outer part covers the size rounded up to whole steps. */
static void open_resize(et_kernel *k, int a)
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
    open_resize(k, a);
    return ET_OK;
}

static const char *axis_name(const et_kernel *k, int a)
{
    return k->e.idx[a].name;
}

/* Applies o to k in place (k is a scratch copy); refusal leaves garbage. */
static et_status apply(et_kernel *k, const et_opt *o, char *reason,
                       size_t cap)
{
    if ((unsigned)o->kind >= ET_OPT_COUNT)
        return refuse(reason, cap, o, "unknown opt");
    if (k->n_opts >= ET_MAX_OPTS)
        return refuse(reason, cap, o, "too many opts (at most %d)",
                      ET_MAX_OPTS);
    const char *nm = opt_names[o->kind];
    bool needs_group = o->kind == ET_OPT_LOCAL || o->kind == ET_OPT_GROUP ||
                       o->kind == ET_OPT_GROUPTOP ||
                       o->kind == ET_OPT_PREFETCH || o->kind == ET_OPT_STAGE;
    if (needs_group && k->nolocals)
        return refuse(reason, cap, o,
                      "%s needs an explicit work-group; NOLOCALS was applied",
                      nm);
    et_opt rec = *o; /* recorded with the axis resolved to its letter */

    if (o->kind == ET_OPT_NOLOCALS) {
        if (has_kind(k, ET_PART_LOCAL) || k->group_part >= 0 ||
            k->prefetch_axis >= 0 || k->stage)
            return refuse(reason, cap, o,
                          "NOLOCALS is refused with LOCAL, GROUP, GROUPTOP, "
                          "PREFETCH or STAGE (they need an explicit "
                          "work-group)");
        if (k->nolocals)
            return refuse(reason, cap, o, "NOLOCALS already applied");
        k->nolocals = true;
        k->opts[k->n_opts++] = rec;
        return ET_OK;
    }

    if (o->kind == ET_OPT_HOIST) {
        if (k->e.n_ops < 3)
            return refuse(reason, cap, o,
                          "HOIST needs three or more operands (with %d "
                          "there is no partial product to form once)",
                          k->e.n_ops);
        if (k->hoist)
            return refuse(reason, cap, o, "HOIST already applied");
        if (k->factor)
            return refuse(reason, cap, o,
                          "HOIST and FACTOR are refused together (each "
                          "forms a product once; use one)");
        k->hoist = true;
        k->opts[k->n_opts++] = rec;
        return ET_OK;
    }

    if (o->kind == ET_OPT_STAGE) {
        if (k->stage)
            return refuse(reason, cap, o, "STAGE already applied");
        k->stage = true;
        k->opts[k->n_opts++] = rec;
        return check_limits(k, o, reason, cap);
    }

    if (o->kind == ET_OPT_FACTOR) {
        if (k->e.n_ops < 2)
            return refuse(reason, cap, o,
                          "FACTOR needs two or more operands (with %d there "
                          "is no product to factor)",
                          k->e.n_ops);
        if (k->factor)
            return refuse(reason, cap, o, "FACTOR already applied");
        if (k->hoist)
            return refuse(reason, cap, o,
                          "HOIST and FACTOR are refused together (each "
                          "forms a product once; use one)");
        if (et_kernel_factor_axis(k) < 0)
            return refuse(reason, cap, o,
                          "FACTOR needs a summed index (this kernel has no "
                          "reduce loop)");
        k->factor = true;
        k->opts[k->n_opts++] = rec;
        return check_limits(k, o, reason, cap);
    }

    int a = et_kernel_axis_find(k, &o->axis);
    if (a < 0) {
        char an[32];
        fmt_axis(an, sizeof an, &o->axis);
        return refuse(reason, cap, o, "no axis %s%s in this kernel",
                      o->axis.pos >= 0 ? "at position " : "named ", an);
    }
    rec.axis.pos = -1;
    snprintf(rec.axis.name, sizeof rec.axis.name, "%s", axis_name(k, a));
    const char *an = axis_name(k, a);
    bool global = is_global_axis(k, a);

    if (o->kind == ET_OPT_SWAP) {
        int b = et_kernel_axis_find(k, &o->axis2);
        if (b < 0) {
            char bn[32];
            fmt_axis(bn, sizeof bn, &o->axis2);
            return refuse(reason, cap, o, "no axis %s%s in this kernel",
                          o->axis2.pos >= 0 ? "at position " : "named ", bn);
        }
        if (!global || !is_global_axis(k, b))
            return refuse(reason, cap, o,
                          "SWAP applies to two global axes only; %s is a "
                          "reduce axis",
                          global ? axis_name(k, b) : an);
        if (a == b)
            return refuse(reason, cap, o,
                          "SWAP needs two different axes");
        rec.axis2.pos = -1;
        snprintf(rec.axis2.name, sizeof rec.axis2.name, "%s",
                 axis_name(k, b));
        int ja = -1, jb = -1;
        for (int j = 0; j < k->e.n_out; j++) {
            if (k->order[j] == a)
                ja = j;
            if (k->order[j] == b)
                jb = j;
        }
        k->order[ja] = b;
        k->order[jb] = a;
        k->opts[k->n_opts++] = rec;
        return check_limits(k, o, reason, cap);
    }

    if (o->amt < 0)
        return refuse(reason, cap, o, "the amount must be >= 0");

    if (o->kind == ET_OPT_PADTO && k->e.idx[a].open)
        return refuse(reason, cap, o,
                      "%s is an open axis: its size is given at launch, and "
                      "LOCAL and UPCAST round it up themselves",
                      an);

    if (o->kind == ET_OPT_PADTO) {
        int n_axis_parts = 0;
        for (int i = 0; i < k->n_parts; i++)
            if (k->part[i].axis == a)
                n_axis_parts++;
        if (n_axis_parts != 1)
            return refuse(reason, cap, o,
                          "PADTO applies to an axis not yet split; %s is "
                          "split",
                          an);
        if (o->amt < 1)
            return refuse(reason, cap, o,
                          "PADTO needs a multiple >= 1");
        int64_t P = k->padded[a];
        int64_t m = o->amt;
        if (P > INT64_MAX - m)
            return refuse(reason, cap, o, "padded size overflows");
        int64_t np = (P + m - 1) / m * m;
        if (np > LIMIT_INT31)
            return refuse(reason, cap, o,
                          "padded size %lld exceeds 2^31-1", (long long)np);
        k->padded[a] = np;
        k->part[k->outer[a]].size = np;
        k->opts[k->n_opts++] = rec;
        return check_limits(k, o, reason, cap);
    }

    et_part_kind kind;
    switch (o->kind) {
    case ET_OPT_LOCAL: kind = ET_PART_LOCAL; break;
    case ET_OPT_UPCAST: kind = ET_PART_UPCAST; break;
    case ET_OPT_UNROLL: kind = ET_PART_UNROLL; break;
    case ET_OPT_GROUP:
    case ET_OPT_GROUPTOP: kind = ET_PART_GROUP; break;
    case ET_OPT_PREFETCH: kind = ET_PART_PREFETCH; break;
    case ET_OPT_SPLIT: kind = ET_PART_SPLIT; break;
    case ET_OPT_LOOP: kind = ET_PART_LOOP; break;
    default: return refuse(reason, cap, o, "unknown opt");
    }
    if ((kind == ET_PART_LOCAL || kind == ET_PART_UPCAST ||
         kind == ET_PART_LOOP) &&
        !global)
        return refuse(reason, cap, o,
                      "%s applies to global axes only; %s is a reduce axis",
                      nm, an);
    if ((kind == ET_PART_UNROLL || kind == ET_PART_GROUP ||
         kind == ET_PART_PREFETCH || kind == ET_PART_SPLIT) &&
        global)
        return refuse(reason, cap, o,
                      "%s applies to reduce axes only; %s is a global axis",
                      nm, an);
    if (kind == ET_PART_GROUP && k->group_part >= 0)
        return refuse(reason, cap, o,
                      "at most one GROUP or GROUPTOP per kernel; %s already "
                      "has one",
                      k->part[k->group_part].name);
    if (kind == ET_PART_PREFETCH) {
        if (o->operand < 0 || o->operand >= k->e.n_ops)
            return refuse(reason, cap, o,
                          "PREFETCH operand %d does not exist (operands count "
                          "from 0; this einsum has %d)",
                          o->operand, k->e.n_ops);
        if (!op_uses(&k->e, o->operand, a))
            return refuse(reason, cap, o,
                          "PREFETCH: operand %d does not use axis %s",
                          o->operand, an);
        if (k->prefetch_axis >= 0 && k->prefetch_axis != a)
            return refuse(reason, cap, o,
                          "PREFETCH: only one reduce axis per kernel can be "
                          "prefetched; %s already is",
                          axis_name(k, k->prefetch_axis));
        if (k->prefetch_axis == a) {
            int64_t have = k->part[k->prefetch_part].size;
            if (o->amt != have && o->amt != 0)
                return refuse(reason, cap, o,
                              "PREFETCH on %s already chunks by %lld; a "
                              "second operand must use the same amount",
                              an, (long long)have);
            if (k->prefetch_op[o->operand])
                return refuse(reason, cap, o,
                              "PREFETCH: operand %d is already prefetched",
                              o->operand);
            k->prefetch_op[o->operand] = true;
            rec.amt = have;
            k->opts[k->n_opts++] = rec;
            return check_limits(k, o, reason, cap);
        }
    }
    if (kind == ET_PART_SPLIT) {
        et_dtype od = k->e.out.dtype;
        if (od == ET_F16)
            return refuse(reason, cap, o,
                          "SPLIT adds partial sums into the output with an "
                          "atomic add, which f16 outputs do not have");
        if (od == ET_F64 && !k->target.has_atomic64)
            return refuse(reason, cap, o,
                          "SPLIT of an f64 output needs 64-bit atomics "
                          "(cl_khr_int64_base_atomics), which this device "
                          "lacks");
    }
    int64_t S = k->part[k->outer[a]].size;
    int64_t n = o->amt == 0 ? S : o->amt;
    if (kind == ET_PART_LOOP && k->e.idx[a].open)
        return refuse(reason, cap, o,
                      "%s is an open axis: a loop over it inside a "
                      "work-item would run past its size (use LOCAL or "
                      "UPCAST)",
                      an);
    if (k->e.idx[a].open) {
        /* the launch covers the size rounded up; stores are masked */
        if (o->amt == 0)
            return refuse(reason, cap, o,
                          "%s is an open axis: the whole of it has no fixed "
                          "size (give an amount)",
                          an);
        if (k->n_parts >= ET_MAX_PARTS)
            return refuse(reason, cap, o, "too many parts");
        int inner = split(k, a, n, kind, false);
        (void)inner;
        open_resize(k, a);
        k->opts[k->n_opts++] = rec;
        return check_limits(k, o, reason, cap);
    }
    if (S % n != 0)
        return refuse(reason, cap, o,
                      "the amount must divide the size of the part it splits "
                      "(%s has %lld; PADTO first to make it divide)",
                      an, (long long)S);
    if (k->n_parts >= ET_MAX_PARTS)
        return refuse(reason, cap, o, "too many parts");
    /* SPLIT chunks are contiguous, like GROUPTOP lanes */
    int np = split(k, a, n, kind,
                   o->kind == ET_OPT_GROUPTOP || o->kind == ET_OPT_SPLIT);
    if (kind == ET_PART_GROUP)
        k->group_part = np;
    if (kind == ET_PART_PREFETCH) {
        k->prefetch_axis = a;
        k->prefetch_part = np;
        k->prefetch_op[o->operand] = true;
    }
    k->opts[k->n_opts++] = rec;
    return check_limits(k, o, reason, cap);
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

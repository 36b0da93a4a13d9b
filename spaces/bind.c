/*
 * bind.c - binding a loaded space to a user's einsum, and points -> opts.
 *
 * Per mapping the binding keeps the slot values of the expressions (the
 * sizes the mapping gives the pattern letters, the device limits) and the
 * evaluated domain of every parameter, so a point costs only the
 * evaluation of its constraints, amounts and conditions.
 */
#include "spaces/space.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct et_binding {
    const et_space *s;
    et_einsum user;
    et_target target;
    et_kernel *base;
    int n_maps;
    et_match map[ET_SPACE_MAX_MAPS];
    int64_t slots[ET_SPACE_MAX_MAPS][ET_SPACE_N_SLOTS];
    int64_t *dom[ET_SPACE_MAX_MAPS][ET_SPACE_MAX_PARAMS];
    int n_dom[ET_SPACE_MAX_MAPS][ET_SPACE_MAX_PARAMS];
    int order[ET_SPACE_MAX_PARAMS];
    int n_act;
    et_opt *act;
};

static const char *const point_status_names[] = {"ok", "invalid", "refused"};
_Static_assert(sizeof(point_status_names) / sizeof(point_status_names[0]) ==
                   ET_POINT_STATUS_COUNT,
               "point_status_names must match et_point_status");

const char *et_point_status_name(et_point_status s)
{
    return (unsigned)s < ET_POINT_STATUS_COUNT ? point_status_names[s] : "?";
}

static et_status bfail(et_diag *d, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static et_status bfail(et_diag *d, int line, int col, const char *fmt, ...)
{
    if (d) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
        va_end(ap);
        d->line = line;
        d->col = col;
        d->pos = -1;
    }
    return ET_ERR_INPUT;
}

/* Evaluates the domain of parameter k under mapping m. */
static et_status eval_domain(et_binding *b, int m, int k, et_diag *d)
{
    const et_space *s = b->s;
    const et_space_param *pa = &s->param[k];
    const int64_t *sl = b->slots[m];
    char err[256];
    int64_t lo = 0, hi = 0, step = 1;
    int n = 0;
    int64_t *v = NULL;
#define EV(e, out)                                                            \
    do {                                                                      \
        if (et_expr_eval((e), sl, (out), err, sizeof(err)) != ET_OK)          \
            return bfail(d, pa->dom_pos.line, pa->dom_pos.col,                \
                         "%s:%d:%d: domain of parameter '%s': %s", s->file,   \
                         pa->dom_pos.line, pa->dom_pos.col, pa->name, err);   \
    } while (0)
    if (pa->kind == ET_PARAM_VALUES) {
        v = malloc(sizeof(int64_t) * (size_t)pa->n_values);
        if (!v)
            return ET_ERR_NOMEM;
        for (int i = 0; i < pa->n_values; i++) {
            int64_t x;
            if (et_expr_eval(pa->values[i], sl, &x, err, sizeof(err)) != ET_OK) {
                free(v);
                return bfail(d, pa->dom_pos.line, pa->dom_pos.col,
                             "%s:%d:%d: value of parameter '%s': %s", s->file,
                             pa->dom_pos.line, pa->dom_pos.col, pa->name, err);
            }
            bool dup = false;
            for (int j = 0; j < n; j++)
                dup = dup || v[j] == x;
            if (!dup)
                v[n++] = x;
        }
    } else {
        EV(pa->lo, &lo);
        EV(pa->hi, &hi);
        if (pa->step)
            EV(pa->step, &step);
        if (step <= 0)
            return bfail(d, pa->dom_pos.line, pa->dom_pos.col,
                         "%s:%d:%d: step of parameter '%s' must be positive, "
                         "is %lld",
                         s->file, pa->dom_pos.line, pa->dom_pos.col, pa->name,
                         (long long)step);
        int64_t count;
        if (pa->kind == ET_PARAM_RANGE) {
            int64_t span;
            if (lo > hi)
                count = 0;
            else if (__builtin_sub_overflow(hi, lo, &span))
                count = ET_SPACE_MAX_POINTS + 1; /* more than 2^63 values */
            else
                count = span / step + 1;
        } else {
            count = 0;
            for (int64_t p = 1; p > 0 && p <= hi; p = p > INT64_MAX / 2 ? -1 : p * 2)
                count += p >= lo;
        }
        if (count <= 0)
            return bfail(d, pa->dom_pos.line, pa->dom_pos.col,
                         "%s:%d:%d: empty %s [%lld, %lld] for parameter '%s' "
                         "with these sizes",
                         s->file, pa->dom_pos.line, pa->dom_pos.col,
                         pa->kind == ET_PARAM_RANGE ? "range" : "pow2 range",
                         (long long)lo, (long long)hi, pa->name);
        if (count > ET_SPACE_MAX_POINTS)
            return bfail(d, pa->dom_pos.line, pa->dom_pos.col,
                         "%s:%d:%d: parameter '%s' has more than %d points",
                         s->file, pa->dom_pos.line, pa->dom_pos.col, pa->name,
                         ET_SPACE_MAX_POINTS);
        v = malloc(sizeof(int64_t) * (size_t)count);
        if (!v)
            return ET_ERR_NOMEM;
        if (pa->kind == ET_PARAM_RANGE) {
            for (int64_t i = 0; i < count; i++)
                v[n++] = lo + i * step;
        } else {
            for (int64_t p = 1; p > 0 && p <= hi; p = p > INT64_MAX / 2 ? -1 : p * 2)
                if (p >= lo)
                    v[n++] = p;
        }
    }
#undef EV
    b->dom[m][k] = v;
    b->n_dom[m][k] = n;
    return ET_OK;
}

static bool step_uses(const et_space_step *t, int k)
{
    return et_expr_uses(t->amt, k) || et_expr_uses(t->when, k);
}

static void decide_order(et_binding *b)
{
    const et_space *s = b->s;
    bool placed[ET_SPACE_MAX_PARAMS] = {false};
    int n = 0;
    for (int i = 0; i < s->n_steps; i++)
        for (int k = 0; k < s->n_params; k++)
            if (!placed[k] && step_uses(&s->step[i], k)) {
                placed[k] = true;
                b->order[n++] = k;
            }
    for (int k = 0; k < s->n_params; k++)
        if (!placed[k])
            b->order[n++] = k;
}

static bool opt_equal(const et_opt *a, const et_opt *c)
{
    return a->kind == c->kind && a->amt == c->amt && a->operand == c->operand &&
           strcmp(a->axis.name, c->axis.name) == 0 &&
           strcmp(a->axis2.name, c->axis2.name) == 0;
}

static et_axis_ref user_axis(const et_binding *b, int map, int p)
{
    et_axis_ref r;
    memset(&r, 0, sizeof(r));
    r.pos = -1;
    if (p >= 0)
        snprintf(r.name, sizeof(r.name), "%s",
                 b->user.idx[b->map[map].idx_map[p]].name);
    return r;
}

/* Expands the action pool over axes, amounts and mappings. */
static et_status resolve_actions(et_binding *b)
{
    const et_space *s = b->s;
    if (s->n_actions == 0)
        return ET_OK;
    size_t cap = 0;
    for (int i = 0; i < s->n_actions; i++)
        cap += (size_t)s->action[i].n_amt * (size_t)(b->user.n_idx + 1) *
               (size_t)b->n_maps;
    b->act = calloc(cap ? cap : 1, sizeof(et_opt));
    if (!b->act)
        return ET_ERR_NOMEM;
    const et_einsum *u = &b->user;
    for (int i = 0; i < s->n_actions; i++) {
        const et_space_action *a = &s->action[i];
        for (int m = 0; m < b->n_maps; m++) {
            for (int x = 0; x < u->n_idx || (x == 0 && et_opt_kind_is_global(a->op));
                 x++) {
                int ux = -1; /* user index number */
                if (et_opt_kind_is_global(a->op)) {
                    ux = -1;
                } else if (a->axis >= 0) {
                    if (x > 0)
                        break;
                    ux = b->map[m].idx_map[a->axis];
                } else {
                    bool glob = x < u->n_out;
                    if ((a->axis == ET_ACTION_ANY_GLOBAL && !glob) ||
                        (a->axis == ET_ACTION_ANY_REDUCE && glob))
                        continue;
                    ux = x;
                }
                for (int j = 0; j < a->n_amt; j++) {
                    et_opt o;
                    memset(&o, 0, sizeof(o));
                    o.kind = a->op;
                    o.axis.pos = -1;
                    o.axis2.pos = -1;
                    if (ux >= 0)
                        snprintf(o.axis.name, sizeof(o.axis.name), "%s",
                                 u->idx[ux].name);
                    o.amt = a->amt[j];
                    bool dup = false;
                    for (int q = 0; q < b->n_act && !dup; q++)
                        dup = opt_equal(&b->act[q], &o);
                    if (!dup)
                        b->act[b->n_act++] = o;
                }
                if (et_opt_kind_is_global(a->op))
                    break;
            }
        }
    }
    return ET_OK;
}

/* Points the constraint check visits at most: it stops at the first
 * point whose constraints all hold (in a usual space the first one), so
 * only a space with few or no valid points costs this many evaluations. */
#define CHECK_MAX_POINTS 200000

/*
 * A space whose constraints hold at no point is an error in the space, not
 * a search that finds nothing: visits the points of every mapping (as
 * many as CHECK_MAX_POINTS) until one satisfies every constraint. When a
 * constraint cannot be evaluated at any point (`i / (a - a) > 1`), names
 * it; when they evaluate but some constraint is false everywhere, says
 * the space has no valid point and names the constraint false at the most
 * points. Spaces without parameters or constraints pass.
 */
static et_status check_constraints(const et_binding *b, et_diag *d)
{
    const et_space *s = b->s;
    if (s->n_constraints == 0)
        return ET_OK;
    int n_false[ET_SPACE_MAX_CONSTRAINTS] = {0};
    long n_points = 0, n_err = 0;
    int first_err = -1;
    char err_msg[256] = "";
    for (int m = 0; m < b->n_maps; m++) {
        int idx[ET_SPACE_MAX_PARAMS] = {0};
        bool empty = false;
        for (int k = 0; k < s->n_params; k++)
            empty = empty || b->n_dom[m][k] == 0;
        if (empty)
            continue;
        for (;;) {
            int64_t sl[ET_SPACE_N_SLOTS];
            memcpy(sl, b->slots[m], sizeof(sl));
            for (int k = 0; k < s->n_params; k++)
                sl[k] = b->dom[m][k][idx[k]];
            if (++n_points > CHECK_MAX_POINTS)
                return ET_OK; /* undecided: the search will tell */
            bool ok = true, errored = false;
            for (int i = 0; i < s->n_constraints && ok; i++) {
                int64_t v;
                char e[256];
                if (et_expr_eval(s->constraint[i], sl, &v, e, sizeof(e)) !=
                    ET_OK) {
                    if (first_err < 0) {
                        first_err = i;
                        snprintf(err_msg, sizeof(err_msg), "%s", e);
                    }
                    errored = true;
                    ok = false;
                    n_false[i]++;
                } else if (!v) {
                    ok = false;
                    n_false[i]++;
                }
            }
            if (ok)
                return ET_OK;
            n_err += errored;
            /* next point: the last parameter varies fastest */
            int k = s->n_params - 1;
            while (k >= 0 && ++idx[k] == b->n_dom[m][k])
                idx[k--] = 0;
            if (k < 0)
                break;
        }
    }
    if (n_points == 0)
        return ET_OK; /* an empty domain: said elsewhere */
    if (d) {
        d->input = ET_INPUT_SPACE;
        snprintf(d->file, sizeof(d->file), "%s", s->file);
    }
    if (n_err == n_points) {
        return bfail(d, s->cpos[first_err].line, s->cpos[first_err].col,
                     "%s:%d:%d: constraint '%s' cannot be evaluated at any "
                     "point of space '%s' (%ld point%s): %s",
                     s->file, s->cpos[first_err].line,
                     s->cpos[first_err].col,
                     et_expr_text(s->constraint[first_err]), s->name,
                     n_points, n_points == 1 ? "" : "s", err_msg);
    }
    int worst = 0;
    for (int i = 1; i < s->n_constraints; i++)
        if (n_false[i] > n_false[worst])
            worst = i;
    return bfail(d, s->cpos[worst].line, s->cpos[worst].col,
                 "%s:%d:%d: space '%s' has no valid point: none of its %ld "
                 "point%s satisfies every constraint (constraint '%s' fails "
                 "at %d of them)",
                 s->file, s->cpos[worst].line, s->cpos[worst].col, s->name,
                 n_points, n_points == 1 ? "" : "s",
                 et_expr_text(s->constraint[worst]), n_false[worst]);
}

/* A batched einsum (einsum.h) matches a pattern written for one of its
 * rows: the pattern's indices map onto the row's, shifted past the row
 * axis, which the space leaves to the search's other opts. */
static et_status match_one_row(const et_space *s, const et_einsum *user,
                               et_binding *b, int *n)
{
    et_einsum *base = malloc(sizeof *base);
    if (!base)
        return ET_ERR_NOMEM;
    et_einsum_unbatch(user, base);
    et_diag md;
    memset(&md, 0, sizeof md);
    et_status st = et_einsum_match(&s->pat, base, b->map, ET_SPACE_MAX_MAPS,
                                   n, &md);
    free(base);
    if (st != ET_OK)
        return st;
    int m = *n < ET_SPACE_MAX_MAPS ? *n : ET_SPACE_MAX_MAPS;
    for (int i = 0; i < m; i++)
        for (int p = 0; p < s->pate.n_idx; p++)
            if (b->map[i].idx_map[p] >= user->row_axis)
                b->map[i].idx_map[p] += 1;
    return ET_OK;
}

et_status et_space_bind(const et_space *s, const et_einsum *user,
                        const et_target *t, et_binding **out, et_diag *d)
{
    *out = NULL;
    if (d)
        memset(d, 0, sizeof(*d));
    et_binding *b = calloc(1, sizeof(*b));
    if (!b)
        return ET_ERR_NOMEM;
    b->s = s;
    b->user = *user;
    b->target = t ? *t : et_target_generic(ET_BACKEND_OPENCL);
    et_status st;
    et_diag md;
    memset(&md, 0, sizeof(md));
    int n = 0;
    if (s->any_einsum) {
        n = 1;
        for (int i = 0; i < ET_MAX_INDICES; i++)
            b->map[0].idx_map[i] = i < user->n_idx ? i : 0;
        for (int i = 0; i < ET_MAX_OPERANDS; i++)
            b->map[0].op_map[i] = i < user->n_ops ? i : 0;
        st = ET_OK;
    } else {
        st = et_einsum_match(&s->pat, user, b->map, ET_SPACE_MAX_MAPS, &n, &md);
        if (st != ET_OK && user->n_rows)
            st = match_one_row(s, user, b, &n);
    }
    if (st != ET_OK) {
        st = bfail(d, 0, 0,
                   "space '%s' (%s): pattern '%s' does not match einsum '%s': %s",
                   s->name, s->file, s->pate.text, user->text, md.msg);
        goto fail;
    }
    b->n_maps = n < ET_SPACE_MAX_MAPS ? n : ET_SPACE_MAX_MAPS;
    if (s->has_dtypes)
        for (int k = 0; k < user->n_ops; k++)
            if (!s->dtype_ok[user->op[k].dtype]) {
                char list[64] = "";
                size_t len = 0;
                for (int q = 0; q < ET_DTYPE_COUNT; q++)
                    if (s->dtype_ok[q])
                        len += (size_t)snprintf(list + len, sizeof(list) - len,
                                                "%s%s", len ? ", " : "",
                                                et_dtype_name((et_dtype)q));
                st = bfail(d, 0, 0,
                           "space '%s' (%s) allows dtypes %s; operand %d of "
                           "'%s' is %s",
                           s->name, s->file, list, k, user->text,
                           et_dtype_name(user->op[k].dtype));
                goto fail;
            }
    for (int m = 0; m < b->n_maps; m++) {
        int64_t *sl = b->slots[m];
        for (int p = 0; p < s->pate.n_idx && !s->any_einsum; p++)
            sl[ET_SPACE_SLOT_IDX + p] = user->idx[b->map[m].idx_map[p]].size;
        sl[ET_SPACE_SLOT_LIM + ET_LIMIT_MAX_WORK_GROUP_SIZE] =
            b->target.max_work_group_size;
        sl[ET_SPACE_SLOT_LIM + ET_LIMIT_LOCAL_MEM_BYTES] = b->target.local_mem_bytes;
        sl[ET_SPACE_SLOT_LIM + ET_LIMIT_COMPUTE_UNITS] = b->target.compute_units;
        sl[ET_SPACE_SLOT_LIM + ET_LIMIT_GLOBAL_MEM_BYTES] =
            b->target.global_mem_bytes;
        int w = b->target.preferred_vector_width[user->acc_dtype];
        sl[ET_SPACE_SLOT_LIM + ET_LIMIT_PREFERRED_VECTOR_WIDTH] = w > 0 ? w : 1;
        for (int k = 0; k < s->n_params; k++)
            if ((st = eval_domain(b, m, k, d)) != ET_OK)
                goto fail;
    }
    decide_order(b);
    if ((st = check_constraints(b, d)) != ET_OK)
        goto fail;
    if ((st = et_kernel_init(user, &b->target, &b->base)) != ET_OK) {
        bfail(d, 0, 0, "cannot build the kernel of '%s': %s", user->text,
              et_status_str(st));
        goto fail;
    }
    if ((st = resolve_actions(b)) != ET_OK)
        goto fail;
    *out = b;
    return ET_OK;
fail:
    et_binding_free(b);
    return st;
}

void et_binding_free(et_binding *b)
{
    if (!b)
        return;
    for (int m = 0; m < ET_SPACE_MAX_MAPS; m++)
        for (int k = 0; k < ET_SPACE_MAX_PARAMS; k++)
            free(b->dom[m][k]);
    et_kernel_free(b->base);
    free(b->act);
    free(b);
}

const et_space *et_binding_space(const et_binding *b) { return b->s; }
const et_einsum *et_binding_einsum(const et_binding *b) { return &b->user; }
const et_kernel *et_binding_base(const et_binding *b) { return b->base; }
int et_binding_n_maps(const et_binding *b) { return b->n_maps; }
const int *et_binding_order(const et_binding *b) { return b->order; }

const et_match *et_binding_map(const et_binding *b, int map)
{
    return map >= 0 && map < b->n_maps ? &b->map[map] : NULL;
}

int et_binding_domain(const et_binding *b, int map, int k, const int64_t **vals)
{
    *vals = b->dom[map][k];
    return b->n_dom[map][k];
}

int et_binding_actions(const et_binding *b, const et_opt **opts)
{
    *opts = b->act;
    return b->n_act;
}

/* True when e reads a parameter that pt leaves undecided. */
static bool waits(const et_expr *e, const et_point *pt)
{
    const int *sl;
    int n = et_expr_slots(e, &sl);
    for (int i = 0; i < n; i++)
        if (sl[i] < ET_SPACE_MAX_PARAMS && !(pt->decided >> sl[i] & 1))
            return true;
    return false;
}

et_point_status et_binding_point_opts(const et_binding *b, const et_point *pt,
                                      et_opt *opts, int cap, int *n,
                                      char *reason, size_t rcap)
{
    const et_space *s = b->s;
    *n = 0;
    if (reason && rcap)
        reason[0] = '\0';
    if (pt->map < 0 || pt->map >= b->n_maps) {
        if (reason)
            snprintf(reason, rcap, "no mapping %d", pt->map);
        return ET_POINT_INVALID;
    }
    int64_t sl[ET_SPACE_N_SLOTS];
    memcpy(sl, b->slots[pt->map], sizeof(sl));
    for (int k = 0; k < s->n_params; k++)
        sl[k] = pt->v[k];
    char err[256];
    for (int i = 0; i < s->n_constraints; i++) {
        const et_expr *c = s->constraint[i];
        if (waits(c, pt))
            continue;
        int64_t v;
        if (et_expr_eval(c, sl, &v, err, sizeof(err)) != ET_OK) {
            if (reason)
                snprintf(reason, rcap, "constraint at %s:%d:%d: %s", s->file,
                         s->cpos[i].line, s->cpos[i].col, err);
            return ET_POINT_REFUSED;
        }
        if (!v) {
            if (reason)
                snprintf(reason, rcap, "constraint '%s' (%s:%d:%d) is false",
                         et_expr_text(c), s->file, s->cpos[i].line,
                         s->cpos[i].col);
            return ET_POINT_INVALID;
        }
    }
    for (int i = 0; i < s->n_steps; i++) {
        const et_space_step *t = &s->step[i];
        if (waits(t->amt, pt) || waits(t->when, pt))
            continue;
        int64_t w = 1, amt = 0;
        if (t->when && et_expr_eval(t->when, sl, &w, err, sizeof(err)) != ET_OK)
            goto expr_fail;
        if (!w)
            continue;
        if (t->amt && et_expr_eval(t->amt, sl, &amt, err, sizeof(err)) != ET_OK)
            goto expr_fail;
        if (*n >= cap) {
            if (reason)
                snprintf(reason, rcap, "more than %d opts", cap);
            return ET_POINT_REFUSED;
        }
        et_opt *o = &opts[(*n)++];
        memset(o, 0, sizeof(*o));
        o->kind = t->op;
        o->axis = user_axis(b, pt->map, t->axis);
        o->axis2 = user_axis(b, pt->map, t->axis2);
        o->operand = t->operand >= 0 ? b->map[pt->map].op_map[t->operand] : 0;
        o->amt = amt;
        continue;
    expr_fail:
        if (reason)
            snprintf(reason, rcap, "transform %s at %s:%d:%d: %s",
                     et_opt_kind_name(t->op), s->file, t->pos.line, t->pos.col,
                     err);
        return ET_POINT_REFUSED;
    }
    return ET_POINT_OK;
}

et_point_status et_binding_point_kernel(const et_binding *b,
                                        const et_point *pt, et_opt *opts,
                                        int cap, int *n, et_kernel **k,
                                        char *reason, size_t rcap)
{
    if (k)
        *k = NULL;
    et_point_status ps = et_binding_point_opts(b, pt, opts, cap, n, reason, rcap);
    if (ps != ET_POINT_OK)
        return ps;
    et_kernel *kk = et_kernel_clone(b->base);
    if (!kk) {
        if (reason)
            snprintf(reason, rcap, "out of memory");
        return ET_POINT_REFUSED;
    }
    if (et_kernel_apply_opts(kk, opts, *n, reason, rcap) != ET_OK) {
        et_kernel_free(kk);
        return ET_POINT_REFUSED;
    }
    if (k)
        *k = kk;
    else
        et_kernel_free(kk);
    return ET_POINT_OK;
}

size_t et_point_format(const et_binding *b, const et_point *pt, char *buf,
                       size_t cap)
{
    const et_space *s = b->s;
    size_t len = 0;
#define PUT(...)                                                              \
    len += (size_t)snprintf(len < cap ? buf + len : NULL,                     \
                            len < cap ? cap - len : 0, __VA_ARGS__)
    PUT("{");
    bool first = true;
    for (int k = 0; k < s->n_params; k++) {
        if (!(pt->decided >> k & 1))
            continue;
        PUT("%s'%s': ", first ? "" : ", ", s->param[k].name);
        if (s->param[k].is_bool)
            PUT("%s", pt->v[k] ? "true" : "false");
        else
            PUT("%lld", (long long)pt->v[k]);
        first = false;
    }
    if (b->n_maps > 1)
        PUT("%s'mapping': %d", first ? "" : ", ", pt->map);
    PUT("}");
#undef PUT
    return len;
}

/*
 * opts.c - the opt table: one descriptor per opt (opts_impl.h), and each
 * opt's rules and apply hooks. What every opt shares (resolving its axes,
 * the amount's sign, the kind of axis, the device limits) is the driver's,
 * in kernel.c; the text form is opts_text.c's, read from the table's
 * argument kinds.
 *
 * Adding an opt: its value in et_opt_kind (kernel.h), its hooks here, its
 * entry in the table at the end of this file.
 */
#include "transforms/opts_impl.h"

#include <assert.h>
#include <stdio.h>

#define LIMIT_INT31 ((int64_t)0x7fffffff)

static bool is_global_axis(const et_kernel *k, int a) { return a < k->e.n_out; }

static const char *axis_name(const et_kernel *k, int a)
{
    return k->e.idx[a].name;
}

/* ---- splits: LOCAL, UPCAST, UNROLL, GROUP, GROUPTOP, PREFETCH, SPLIT, LOOP */

/*
 * The rules of every split, after the opt's own: the amount divides the
 * part it splits (n = 0: the whole part). An open axis is split without
 * dividing (the launch covers its size rounded up and the loads and stores
 * past it are masked), but the whole of it has no fixed size.
 */
static et_status split_rules(const et_kernel *k, et_opt_call *c)
{
    int64_t S = k->part[k->outer[c->a]].size;
    c->n = c->o->amt == 0 ? S : c->o->amt;
    if (k->e.idx[c->a].open) {
        if (c->o->amt == 0)
            return et_opt_refuse(c,
                                 "%s is an open axis: the whole of it has no "
                                 "fixed size (give an amount)",
                                 axis_name(k, c->a));
    } else if (S % c->n != 0) {
        return et_opt_refuse(c,
                             "the amount must divide the size of the part it "
                             "splits (%s has %lld; PADTO first to make it "
                             "divide)",
                             axis_name(k, c->a), (long long)S);
    }
    if (k->n_parts >= ET_MAX_PARTS)
        return et_opt_refuse(c, "too many parts");
    return ET_OK;
}

/* Splits c's axis as its descriptor says; returns the new part's index. */
static int split_part(et_kernel *k, const et_opt_call *c)
{
    int p = et_kernel_split(k, c->a, c->n, c->d->part, c->d->suffix,
                            c->d->top);
    if (k->e.idx[c->a].open)
        et_kernel_open_resize(k, c->a);
    return p;
}

/* LOCAL, UPCAST, UNROLL: a split and nothing else. */
static void apply_split(et_kernel *k, et_opt_call *c) { split_part(k, c); }

/* GROUP, GROUPTOP: the lanes combine their partial sums through one local
 * buffer, so a kernel has one set of lanes. */
static et_status group_rules(const et_kernel *k, et_opt_call *c)
{
    if (k->group_part >= 0)
        return et_opt_refuse(c,
                             "at most one GROUP or GROUPTOP per kernel; %s "
                             "already has one",
                             k->part[k->group_part].name);
    return split_rules(k, c);
}

static void group_apply(et_kernel *k, et_opt_call *c)
{
    k->group_part = split_part(k, c);
}

/* PREFETCH: one chunk loop per kernel, which the operands prefetched on
 * its axis share (a second one joins it instead of splitting again). */
static et_status prefetch_rules(const et_kernel *k, et_opt_call *c)
{
    int op = c->o->operand, a = c->a;
    if (op < 0 || op >= k->e.n_ops)
        return et_opt_refuse(c,
                             "PREFETCH operand %d does not exist (operands "
                             "count from 0; this einsum has %d)",
                             op, k->e.n_ops);
    if (!et_kernel_op_uses(k, op, a))
        return et_opt_refuse(c, "PREFETCH: operand %d does not use axis %s",
                             op, axis_name(k, a));
    if (k->prefetch_axis >= 0 && k->prefetch_axis != a)
        return et_opt_refuse(c,
                             "PREFETCH: only one reduce axis per kernel can "
                             "be prefetched; %s already is",
                             axis_name(k, k->prefetch_axis));
    if (k->prefetch_axis != a)
        return split_rules(k, c);
    int64_t have = k->part[k->prefetch_part].size;
    if (c->o->amt != have && c->o->amt != 0)
        return et_opt_refuse(c,
                             "PREFETCH on %s already chunks by %lld; a second "
                             "operand must use the same amount",
                             axis_name(k, a), (long long)have);
    if (k->prefetch_op[op])
        return et_opt_refuse(c, "PREFETCH: operand %d is already prefetched",
                             op);
    c->shared = true;
    c->n = have;
    return ET_OK;
}

static void prefetch_apply(et_kernel *k, et_opt_call *c)
{
    if (c->shared) {
        c->rec.amt = c->n; /* recorded with the chunk it shares */
    } else {
        k->prefetch_axis = c->a;
        k->prefetch_part = split_part(k, c);
    }
    k->prefetch_op[c->o->operand] = true;
}

/* SPLIT: work-groups add their partial sums into the output atomically,
 * which the output's dtype must allow on the target. */
static et_status split_opt_rules(const et_kernel *k, et_opt_call *c)
{
    et_dtype od = k->e.out.dtype;
    if (od == ET_F16)
        return et_opt_refuse(c,
                             "SPLIT adds partial sums into the output with an "
                             "atomic add, which f16 outputs do not have");
    if (k->ntstore)
        return et_opt_refuse(c,
                             "SPLIT and NTSTORE are refused together (SPLIT "
                             "adds into the output with atomics, which are "
                             "never non-temporal)");
    if (od == ET_F64 && !k->target.has_atomic64)
        return et_opt_refuse(c,
                             "SPLIT of an f64 output needs 64-bit atomics "
                             "(cl_khr_int64_base_atomics), which this device "
                             "lacks");
    return split_rules(k, c);
}

/* LOOP: a loop inside the work-item has a fixed trip count, which an open
 * axis (its size given at launch) has not. */
static et_status loop_rules(const et_kernel *k, et_opt_call *c)
{
    if (k->e.idx[c->a].open)
        return et_opt_refuse(c,
                             "%s is an open axis: a loop over it inside a "
                             "work-item would run past its size (use LOCAL "
                             "or UPCAST)",
                             axis_name(k, c->a));
    return split_rules(k, c);
}

/* ---- PADTO ------------------------------------------------------------- */

static et_status padto_rules(const et_kernel *k, et_opt_call *c)
{
    int a = c->a;
    if (k->e.idx[a].open)
        return et_opt_refuse(c,
                             "%s is an open axis: its size is given at "
                             "launch, and LOCAL and UPCAST round it up "
                             "themselves",
                             axis_name(k, a));
    int n_axis_parts = 0;
    for (int i = 0; i < k->n_parts; i++)
        if (k->part[i].axis == a)
            n_axis_parts++;
    if (n_axis_parts != 1)
        return et_opt_refuse(c,
                             "PADTO applies to an axis not yet split; %s is "
                             "split",
                             axis_name(k, a));
    if (c->o->amt < 1)
        return et_opt_refuse(c, "PADTO needs a multiple >= 1");
    int64_t P = k->padded[a];
    int64_t m = c->o->amt;
    if (P > INT64_MAX - m)
        return et_opt_refuse(c, "padded size overflows");
    int64_t np = (P + m - 1) / m * m;
    if (np > LIMIT_INT31)
        return et_opt_refuse(c, "padded size %lld exceeds 2^31-1",
                             (long long)np);
    c->n = np;
    return ET_OK;
}

static void padto_apply(et_kernel *k, et_opt_call *c)
{
    k->padded[c->a] = c->n;
    k->part[k->outer[c->a]].size = c->n;
}

/* ---- SWAP -------------------------------------------------------------- */

static et_status swap_rules(const et_kernel *k, et_opt_call *c)
{
    bool global = is_global_axis(k, c->a);
    if (!global || !is_global_axis(k, c->b))
        return et_opt_refuse(c,
                             "SWAP applies to two global axes only; %s is a "
                             "reduce axis",
                             axis_name(k, global ? c->b : c->a));
    if (c->a == c->b)
        return et_opt_refuse(c, "SWAP needs two different axes");
    return ET_OK;
}

static void swap_apply(et_kernel *k, et_opt_call *c)
{
    int ja = -1, jb = -1;
    for (int j = 0; j < k->e.n_out; j++) {
        if (k->order[j] == c->a)
            ja = j;
        if (k->order[j] == c->b)
            jb = j;
    }
    k->order[ja] = c->b;
    k->order[jb] = c->a;
}

/* ---- kernel-wide: NOLOCALS, HOIST, FACTOR, STAGE, NTSTORE ---------------- */

/* "LOCAL, GROUP, GROUPTOP, PREFETCH or STAGE": the opts that need an
 * explicit work-group, from the table. */
static void needs_group_names(char *out, size_t cap)
{
    int count = 0, seen = 0;
    for (int kd = 0; kd < ET_OPT_COUNT; kd++)
        count += et_opt_desc_get((et_opt_kind)kd)->needs_group;
    size_t n = 0;
    out[0] = '\0';
    for (int kd = 0; kd < ET_OPT_COUNT && n < cap; kd++) {
        const et_opt_desc *d = et_opt_desc_get((et_opt_kind)kd);
        if (!d->needs_group)
            continue;
        seen++;
        n += (size_t)snprintf(out + n, cap - n, "%s%s",
                              seen == 1       ? ""
                              : seen == count ? " or "
                                              : ", ",
                              d->name);
    }
}

/* NOLOCALS leaves the work-group to the runtime, so it is refused after
 * any opt that needs one (needs_group in the table). */
static et_status nolocals_rules(const et_kernel *k, et_opt_call *c)
{
    for (int i = 0; i < k->n_opts; i++)
        if (et_opt_desc_get(k->opts[i].kind)->needs_group) {
            char names[128];
            needs_group_names(names, sizeof names);
            return et_opt_refuse(c,
                                 "NOLOCALS is refused with %s (they need an "
                                 "explicit work-group)",
                                 names);
        }
    if (k->nolocals)
        return et_opt_refuse(c, "NOLOCALS already applied");
    return ET_OK;
}

static void nolocals_apply(et_kernel *k, et_opt_call *c) { k->nolocals = true; }

static et_status hoist_rules(const et_kernel *k, et_opt_call *c)
{
    if (k->e.n_ops < 3)
        return et_opt_refuse(c,
                             "HOIST needs three or more operands (with %d "
                             "there is no partial product to form once)",
                             k->e.n_ops);
    if (k->hoist)
        return et_opt_refuse(c, "HOIST already applied");
    if (k->factor)
        return et_opt_refuse(c,
                             "HOIST and FACTOR are refused together (each "
                             "forms a product once; use one)");
    return ET_OK;
}

static void hoist_apply(et_kernel *k, et_opt_call *c) { k->hoist = true; }

/* FACTOR's other rule, that some operand does not use the innermost reduce
 * loop's index, is check_limits' (a later PREFETCH moves that loop). */
static et_status factor_rules(const et_kernel *k, et_opt_call *c)
{
    if (k->e.n_ops < 2)
        return et_opt_refuse(c,
                             "FACTOR needs two or more operands (with %d "
                             "there is no product to factor)",
                             k->e.n_ops);
    if (k->factor)
        return et_opt_refuse(c, "FACTOR already applied");
    if (k->hoist)
        return et_opt_refuse(c,
                             "HOIST and FACTOR are refused together (each "
                             "forms a product once; use one)");
    if (et_kernel_factor_axis(k) < 0)
        return et_opt_refuse(c,
                             "FACTOR needs a summed index (this kernel has no "
                             "reduce loop)");
    return ET_OK;
}

static void factor_apply(et_kernel *k, et_opt_call *c) { k->factor = true; }

/* STAGE's other rule, that some input is staged, is check_limits' (LOCAL,
 * GROUP and PREFETCH after it change which inputs are). */
static et_status stage_rules(const et_kernel *k, et_opt_call *c)
{
    if (k->stage)
        return et_opt_refuse(c, "STAGE already applied");
    return ET_OK;
}

static void stage_apply(et_kernel *k, et_opt_call *c) { k->stage = true; }

/* NTSTORE: the stores of the outputs bypass the caches (non-temporal), so
 * a written line is not read from memory first (write-allocate). */
static et_status ntstore_rules(const et_kernel *k, et_opt_call *c)
{
    if (k->ntstore)
        return et_opt_refuse(c, "NTSTORE already applied");
    if (k->e.out.dtype == ET_F16)
        return et_opt_refuse(c,
                             "NTSTORE needs an f32 or f64 output (an f16 "
                             "output is stored through a conversion)");
    if (et_kernel_has_split(k))
        return et_opt_refuse(c,
                             "SPLIT and NTSTORE are refused together (SPLIT "
                             "adds into the output with atomics, which are "
                             "never non-temporal)");
    return ET_OK;
}

static void ntstore_apply(et_kernel *k, et_opt_call *c) { k->ntstore = true; }

/* ---- the table --------------------------------------------------------- */

/* The entries are in et_opt_kind's order; the checks the driver makes for
 * every opt are in kernel.c (et_kernel_apply_opt). */
#define AXIS_AMOUNT .n_args = 2, .arg = {ET_OPT_ARG_AXIS, ET_OPT_ARG_AMOUNT}

static const et_opt_desc opt_table[] = {
    [ET_OPT_LOCAL] = {
        .name = "LOCAL", AXIS_AMOUNT, .axes = ET_OPT_AXES_GLOBAL,
        .part = ET_PART_LOCAL, .suffix = "l",
        .needs_group = true, .limits = true,
        .rules = split_rules, .apply = apply_split,
    },
    [ET_OPT_UPCAST] = {
        .name = "UPCAST", AXIS_AMOUNT, .axes = ET_OPT_AXES_GLOBAL,
        .part = ET_PART_UPCAST, .suffix = "u",
        .limits = true,
        .rules = split_rules, .apply = apply_split,
    },
    [ET_OPT_UNROLL] = {
        .name = "UNROLL", AXIS_AMOUNT, .axes = ET_OPT_AXES_REDUCE,
        .part = ET_PART_UNROLL, .suffix = "r",
        .limits = true,
        .rules = split_rules, .apply = apply_split,
    },
    [ET_OPT_GROUP] = {
        .name = "GROUP", AXIS_AMOUNT, .axes = ET_OPT_AXES_REDUCE,
        .part = ET_PART_GROUP, .suffix = "g",
        .needs_group = true, .limits = true,
        .rules = group_rules, .apply = group_apply,
    },
    [ET_OPT_GROUPTOP] = {
        .name = "GROUPTOP", AXIS_AMOUNT, .axes = ET_OPT_AXES_REDUCE,
        .part = ET_PART_GROUP, .suffix = "g", .top = true,
        .needs_group = true, .limits = true,
        .rules = group_rules, .apply = group_apply,
    },
    [ET_OPT_PADTO] = {
        .name = "PADTO", AXIS_AMOUNT, .axes = ET_OPT_AXES_ANY,
        .part = ET_PART_COUNT,
        .limits = true,
        .rules = padto_rules, .apply = padto_apply,
    },
    [ET_OPT_SWAP] = {
        .name = "SWAP", .n_args = 2,
        .arg = {ET_OPT_ARG_AXIS, ET_OPT_ARG_AXIS2},
        .axes = ET_OPT_AXES_TWO_GLOBAL,
        .part = ET_PART_COUNT,
        .limits = true,
        .rules = swap_rules, .apply = swap_apply,
    },
    /* changes nothing the device limits measure */
    [ET_OPT_NOLOCALS] = {
        .name = "NOLOCALS", .axes = ET_OPT_AXES_NONE,
        .part = ET_PART_COUNT,
        .rules = nolocals_rules, .apply = nolocals_apply,
    },
    [ET_OPT_PREFETCH] = {
        .name = "PREFETCH", .n_args = 3,
        .arg = {ET_OPT_ARG_OPERAND, ET_OPT_ARG_AXIS, ET_OPT_ARG_AMOUNT},
        .axes = ET_OPT_AXES_REDUCE,
        .part = ET_PART_PREFETCH, .suffix = "p",
        .needs_group = true, .limits = true,
        .rules = prefetch_rules, .apply = prefetch_apply,
    },
    /* SPLIT's chunks are contiguous, like GROUPTOP's lanes */
    [ET_OPT_SPLIT] = {
        .name = "SPLIT", AXIS_AMOUNT, .axes = ET_OPT_AXES_REDUCE,
        .part = ET_PART_SPLIT, .suffix = "s", .top = true,
        .limits = true,
        .rules = split_opt_rules, .apply = apply_split,
    },
    /* changes nothing the device limits measure */
    [ET_OPT_HOIST] = {
        .name = "HOIST", .axes = ET_OPT_AXES_NONE,
        .part = ET_PART_COUNT,
        .rules = hoist_rules, .apply = hoist_apply,
    },
    [ET_OPT_FACTOR] = {
        .name = "FACTOR", .axes = ET_OPT_AXES_NONE,
        .part = ET_PART_COUNT,
        .limits = true,
        .rules = factor_rules, .apply = factor_apply,
    },
    [ET_OPT_STAGE] = {
        .name = "STAGE", .axes = ET_OPT_AXES_NONE,
        .part = ET_PART_COUNT,
        .needs_group = true, .limits = true,
        .rules = stage_rules, .apply = stage_apply,
    },
    [ET_OPT_LOOP] = {
        .name = "LOOP", AXIS_AMOUNT, .axes = ET_OPT_AXES_GLOBAL,
        .part = ET_PART_LOOP, .suffix = "o",
        .limits = true,
        .rules = loop_rules, .apply = apply_split,
    },
    /* changes nothing the device limits measure */
    [ET_OPT_NTSTORE] = {
        .name = "NTSTORE", .axes = ET_OPT_AXES_NONE,
        .part = ET_PART_COUNT,
        .rules = ntstore_rules, .apply = ntstore_apply,
    },
};
static_assert(sizeof(opt_table) / sizeof(opt_table[0]) == ET_OPT_COUNT,
              "opt_table must have one entry per et_opt_kind");

const et_opt_desc *et_opt_desc_get(et_opt_kind k)
{
    if ((unsigned)k >= ET_OPT_COUNT)
        return NULL;
    return &opt_table[k];
}

const char *et_opt_kind_name(et_opt_kind k)
{
    const et_opt_desc *d = et_opt_desc_get(k);
    return d ? d->name : "?";
}

bool et_opt_kind_is_global(et_opt_kind k)
{
    const et_opt_desc *d = et_opt_desc_get(k);
    return d && d->axes == ET_OPT_AXES_NONE;
}

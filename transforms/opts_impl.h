/*
 * opts_impl.h - the opt descriptor: everything eintune knows about one opt
 * in one table entry (internal to transforms/; other layers use kernel.h).
 *
 * The table (opts.c) holds one et_opt_desc per et_opt_kind: its name, its
 * arguments in text order (what opts_text.c reads and writes), the axes it
 * may name, the loop part its split makes, and two hooks: rules, which
 * refuses an opt that breaks one of its own rules and leaves the kernel
 * alone, and apply, which changes the kernel and cannot fail.
 *
 * The driver (et_kernel_apply_opt, kernel.c) does what is common to every
 * opt, in this order, then calls the hooks: an unknown kind and the cap on
 * opts; NOLOCALS against an opt that needs a work-group; each axis
 * argument resolved (it is recorded by its letter); a negative amount; a
 * global-only or reduce-only axis. After apply it records the opt and,
 * unless the descriptor says the opt cannot change them, checks the
 * device limits (check_limits). The order of the checks is the order in
 * which a refusal is reported: keep it when adding an opt.
 */
#ifndef ET_OPTS_IMPL_H
#define ET_OPTS_IMPL_H

#include "transforms/kernel_impl.h"

/* One argument of an opt's text form, and the et_opt field it fills. */
typedef enum et_opt_arg {
    ET_OPT_ARG_AXIS,    /* an axis, letter or position: et_opt.axis */
    ET_OPT_ARG_AXIS2,   /* a second axis: et_opt.axis2 */
    ET_OPT_ARG_OPERAND, /* an input operand, from 0: et_opt.operand */
    ET_OPT_ARG_AMOUNT,  /* an integer, split amount or multiple: et_opt.amt */
} et_opt_arg;

#define ET_OPT_MAX_ARGS 3

/* Which axes an opt may name; the driver checks GLOBAL and REDUCE. */
typedef enum et_opt_axes {
    ET_OPT_AXES_NONE,       /* kernel-wide: names no axis */
    ET_OPT_AXES_GLOBAL,     /* one global (output) axis */
    ET_OPT_AXES_REDUCE,     /* one reduce (summed) axis */
    ET_OPT_AXES_ANY,        /* one axis of either kind */
    ET_OPT_AXES_TWO_GLOBAL, /* two global axes (SWAP; its rules check) */
} et_opt_axes;

/*
 * One call of the driver: the opt as given, where a refusal's message
 * goes, and what the driver and the rules hook worked out for the apply
 * hook.
 */
typedef struct et_opt_call {
    const et_opt *o;    /* as given: a refusal's message starts with it */
    char *reason;       /* cap bytes, may be NULL */
    size_t cap;
    const struct et_opt_desc *d;
    int a, b;           /* the axes named (einsum index numbers), -1: none */
    et_opt rec;         /* as recorded in k->opts: its axes by letter */
    int64_t n;          /* a split's amount, 0 resolved to the whole part;
                         * PADTO's padded size */
    bool shared;        /* PREFETCH: joins the chunk loop already on a */
} et_opt_call;

/* The opt's own rules: ET_OK, or a refusal through et_opt_refuse. Never
 * changes k; may fill c's fields for apply. */
typedef et_status (*et_opt_rules_fn)(const et_kernel *k, et_opt_call *c);
/* Applies an opt that passed its rules. */
typedef void (*et_opt_apply_fn)(et_kernel *k, et_opt_call *c);

typedef struct et_opt_desc {
    const char *name;        /* the text form's name; stored in databases,
                              * so never renamed */
    int n_args;
    et_opt_arg arg[ET_OPT_MAX_ARGS];
    et_opt_axes axes;
    /* a split: the kind of the inner part and its name's suffix
     * (<letter>_<suffix>); top: index = inner*(S/n) + outer, contiguous
     * chunks, instead of outer*n + inner. part ET_PART_COUNT: no split */
    et_part_kind part;
    const char *suffix;
    bool top;
    bool needs_group;        /* needs an explicit work-group: refused after
                              * NOLOCALS, and NOLOCALS after it */
    bool limits;             /* the device limits are checked after it
                              * (false: it changes nothing they measure) */
    et_opt_rules_fn rules;
    et_opt_apply_fn apply;
} et_opt_desc;

/* The descriptor of kind k; NULL for a value outside et_opt_kind. */
const et_opt_desc *et_opt_desc_get(et_opt_kind k);

/* Refuses c's opt: "<opt as text>: <message>" into c->reason. Returns
 * ET_ERR_REFUSED. */
et_status et_opt_refuse(const et_opt_call *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The text form of one opt into buf (cap bytes); returns the length it
 * needed, as snprintf. An unknown kind is written "?(axis,amount)". */
size_t et_opt_format(const et_opt *o, char *buf, size_t cap);

/* The text of an axis reference: its letter or its position. */
int et_opt_format_axis(char *buf, size_t cap, const et_axis_ref *a);

#endif

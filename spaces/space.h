/*
 * space.h - transform spaces: the YAML loader, binding a space to a user's
 * einsum, and turning a point of a bound space into an opt list.
 *
 * A space (docs/spaces.md) is loaded once with
 * et_space_load(); every error names file:line:column (1-based) and what
 * was expected, in d->msg, with d->line and d->col set as well. A loaded
 * space is read-only and can be bound to many einsums.
 *
 * Binding (et_space_bind) maps the space's pattern onto the user's einsum
 * with the einsum matcher. The pattern's letters and operand numbers stay
 * the space's; every opt the binding produces names the user's letters and
 * operands. Where the matcher finds several mappings, the mapping is one
 * more (hidden) dimension of the space: et_point.map. Parameter domains
 * are evaluated per mapping (a bound such as `i` is the size the mapping
 * gives the pattern letter i) and the device limits come from the target.
 *
 * Expression slots (see expr.h): parameter k is slot k, pattern index
 * number p is slot ET_SPACE_SLOT_IDX + p, device limit l is slot
 * ET_SPACE_SLOT_LIM + l (et_space_limit order).
 *
 * A point gives every decided parameter a value. For a point,
 * et_binding_point_opts() evaluates the constraints that mention only
 * decided parameters, then walks the transforms in order, skipping those
 * whose `when` is false and those that read an undecided parameter, and
 * translates each to an et_opt of the user's einsum. et_binding_point_kernel
 * also applies the opts to a clone of the unoptimized kernel, which tells
 * without any device whether the point is valid.
 *
 * Ownership: et_space_load* returns a space freed with et_space_free;
 * et_space_bind returns a binding freed with et_binding_free; a binding
 * points at its space, which must outlive it. Kernels returned by
 * et_binding_point_kernel are freed with et_kernel_free.
 */
#ifndef ET_SPACES_SPACE_H
#define ET_SPACES_SPACE_H

#include "eintune.h"
#include "einsum/einsum.h"
#include "spaces/expr.h"
#include "transforms/kernel.h"
#include "transforms/target.h"

#include <stdbool.h>
#include <stdint.h>

#define ET_SPACE_MAX_FILE (1 << 20)     /* bytes of YAML accepted */
#define ET_SPACE_MAX_NESTING 16         /* lists/mappings inside each other */
#define ET_SPACE_MAX_PARAMS 32
#define ET_SPACE_MAX_CONSTRAINTS 64
#define ET_SPACE_MAX_STEPS 48           /* transforms; < ET_MAX_OPTS */
#define ET_SPACE_MAX_ACTIONS 64         /* entries of the action pool */
#define ET_SPACE_MAX_AMTS 64            /* amounts per action entry */
#define ET_SPACE_MAX_VALUES 1024        /* items of a `values` list */
#define ET_SPACE_MAX_POINTS 1000000     /* points per parameter */
#define ET_SPACE_MAX_MAPS 16            /* mappings kept per binding */
#define ET_SPACE_MAX_DEPTH 32           /* largest max_depth */
#define ET_SPACE_NAME_LEN 64

/* Device limits usable in expressions. */
typedef enum et_space_limit {
    ET_LIMIT_MAX_WORK_GROUP_SIZE = 0,
    ET_LIMIT_LOCAL_MEM_BYTES,
    ET_LIMIT_COMPUTE_UNITS,
    ET_LIMIT_GLOBAL_MEM_BYTES,
    ET_LIMIT_PREFERRED_VECTOR_WIDTH,
    ET_LIMIT_COUNT
} et_space_limit;

/* "max_work_group_size", ... */
const char *et_space_limit_name(et_space_limit l);

#define ET_SPACE_SLOT_IDX ET_SPACE_MAX_PARAMS
#define ET_SPACE_SLOT_LIM (ET_SPACE_SLOT_IDX + ET_MAX_INDICES)
#define ET_SPACE_N_SLOTS (ET_SPACE_SLOT_LIM + ET_LIMIT_COUNT)

/* A place in the space file, 1-based. */
typedef struct et_srcpos {
    int line;
    int col;
} et_srcpos;

typedef enum et_param_kind {
    ET_PARAM_RANGE = 0, /* lo..hi by step (inclusive) */
    ET_PARAM_POW2,      /* powers of two in [lo, hi] */
    ET_PARAM_VALUES,    /* an explicit list (ints or booleans) */
    ET_PARAM_KIND_COUNT
} et_param_kind;

typedef struct et_space_param {
    char name[ET_SPACE_NAME_LEN];
    et_param_kind kind;
    et_expr *lo, *hi, *step;  /* RANGE (step NULL = 1), POW2 (lo, hi) */
    int n_values;
    et_expr **values;         /* VALUES */
    bool is_bool;             /* VALUES of true/false only */
    et_srcpos pos;            /* the parameter's name */
    et_srcpos dom_pos;        /* its domain */
} et_space_param;

/* One transform step. Axes are pattern index numbers. */
typedef struct et_space_step {
    et_opt_kind op;
    int axis;                 /* -1 for NOLOCALS */
    int axis2;                /* SWAP only, else -1 */
    int operand;              /* PREFETCH only (pattern operand), else -1 */
    et_expr *amt;             /* NULL: 0 */
    et_expr *when;            /* NULL: always */
    et_srcpos pos;
} et_space_step;

#define ET_ACTION_ANY_GLOBAL (-1)
#define ET_ACTION_ANY_REDUCE (-2)
#define ET_ACTION_ANY (-3)

/* One entry of an action pool: op x axes x amounts. */
typedef struct et_space_action {
    et_opt_kind op;
    int axis;                 /* pattern index number or ET_ACTION_ANY_* */
    int n_amt;
    int64_t amt[ET_SPACE_MAX_AMTS];
    et_srcpos pos;
} et_space_action;

typedef struct et_space {
    char file[256];           /* as given to the loader, for messages */
    char name[ET_SPACE_NAME_LEN];
    bool any_einsum;          /* `einsum: any`: binds to every einsum
                                 (action pools with any_global/any_reduce
                                 axes only; no params, no transforms) */
    et_subscripts pat;        /* the pattern as parsed */
    et_einsum pate;           /* its structure (et_einsum_pattern) */
    bool has_dtypes;
    bool dtype_ok[ET_DTYPE_COUNT];
    int n_params;
    et_space_param param[ET_SPACE_MAX_PARAMS];
    int n_constraints;
    et_expr *constraint[ET_SPACE_MAX_CONSTRAINTS];
    et_srcpos cpos[ET_SPACE_MAX_CONSTRAINTS];
    int n_steps;
    et_space_step step[ET_SPACE_MAX_STEPS];
    int n_actions;            /* 0: no action pool */
    et_space_action action[ET_SPACE_MAX_ACTIONS];
    int max_depth;            /* action pools: longest sequence */
    uint64_t hash;            /* FNV-1a of the file's bytes */
} et_space;

/*
 * Loads a space from a YAML file. On error returns ET_ERR_INPUT (or
 * ET_ERR_IO when the file cannot be read) with d->msg
 * "FILE:LINE:COL: what was expected" and d->line/d->col (1-based).
 */
et_status et_space_load(const char *path, et_space **out, et_diag *d);
/* The same from text in memory; `file` names it in messages. */
et_status et_space_load_text(const char *text, size_t len, const char *file,
                             et_space **out, et_diag *d);
void et_space_free(et_space *s);

/* Index of the parameter called name, -1 if none. */
int et_space_param_find(const et_space *s, const char *name);

/* ---- binding ------------------------------------------------------------ */

typedef struct et_binding et_binding;

/*
 * Binds s to the user's einsum for device limits t (NULL: the generic
 * OpenCL profile). Fails with ET_ERR_INPUT and a message saying why: the
 * matcher's reason when the pattern does not match, a dtype outside the
 * space's `dtypes`, or a parameter whose domain is empty for these sizes
 * (with the parameter's file:line:col).
 */
et_status et_space_bind(const et_space *s, const et_einsum *user,
                        const et_target *t, et_binding **out, et_diag *d);
void et_binding_free(et_binding *b);

const et_space *et_binding_space(const et_binding *b);
const et_einsum *et_binding_einsum(const et_binding *b);
/* The unoptimized kernel of the user's einsum (owned by the binding). */
const et_kernel *et_binding_base(const et_binding *b);
/* Number of mappings (hidden dimension), >= 1. */
int et_binding_n_maps(const et_binding *b);
const et_match *et_binding_map(const et_binding *b, int map);
/* Domain of parameter k under mapping map: *vals owned by the binding. */
int et_binding_domain(const et_binding *b, int map, int k,
                      const int64_t **vals);
/* Parameters in decision order (first use by a transform, then the
 * unused ones in declaration order). */
const int *et_binding_order(const et_binding *b);

/*
 * The action pool resolved to opts of the user's einsum: every entry
 * expanded over its axes (any_global / any_reduce / a letter under every
 * mapping) and amounts, duplicates removed, in file order.
 */
int et_binding_actions(const et_binding *b, const et_opt **opts);

/* ---- points ------------------------------------------------------------- */

typedef struct et_point {
    int map;                         /* mapping, 0..n_maps-1 */
    uint64_t decided;                /* bit k: parameter k has a value */
    int64_t v[ET_SPACE_MAX_PARAMS];  /* values of the decided parameters */
} et_point;

typedef enum et_point_status {
    ET_POINT_OK = 0,
    ET_POINT_INVALID,   /* a constraint is false: not part of the space */
    ET_POINT_REFUSED,   /* an opt refused, or an expression failed */
    ET_POINT_STATUS_COUNT
} et_point_status;

/* "ok", "invalid", "refused". */
const char *et_point_status_name(et_point_status s);

/*
 * The opt list of point pt (at most cap opts written to opts, the count to
 * *n). INVALID or REFUSED leave a reason in reason (cap bytes).
 */
et_point_status et_binding_point_opts(const et_binding *b, const et_point *pt,
                                      et_opt *opts, int cap, int *n,
                                      char *reason, size_t rcap);

/*
 * As et_binding_point_opts, then applies the opts to a clone of the base
 * kernel. On ET_POINT_OK *k (if k is non-NULL) gets the kernel; the caller
 * frees it with et_kernel_free.
 */
et_point_status et_binding_point_kernel(const et_binding *b,
                                        const et_point *pt, et_opt *opts,
                                        int cap, int *n, et_kernel **k,
                                        char *reason, size_t rcap);

/* Writes the decided parameters as "{'a': 1, 'b': true}" (Python style,
 * as the logs show them); "{}" if none. Returns the length needed. */
size_t et_point_format(const et_binding *b, const et_point *pt, char *buf,
                       size_t cap);

#endif

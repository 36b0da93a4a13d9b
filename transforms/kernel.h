/*
 * kernel.h - the loop-nest kernel IR, the opt vocabulary and the renderers
 * (internal to eintune; the layers below transforms/ use it).
 *
 * The IR. Every einsum index becomes one axis: output indices are global
 * (parallel) axes, summed indices are reduce axes. An axis is a list of
 * parts; each part has a kind, a size and a stride, and the axis' original
 * index is the sum over its parts of value * stride. A fresh axis has one
 * part (kind GLOBAL or REDUCE, stride 1) named by the index letter. An opt
 * splits the axis' outer part (the one that still carries the letter) by n:
 * the outer part keeps the letter and its size becomes S/n, the new inner
 * part is named letter + "_l" / "_u" / "_r" / "_g" / "_p" / "_s" / "_o"
 * (LOCAL, UPCAST, UNROLL, GROUP or GROUPTOP, PREFETCH chunk loop, SPLIT,
 * LOOP: the suffix is in the opt's table entry, transforms/opts.c), with a
 * counter from the second split of a kind on one letter ("i_u2"). Ordinary
 * splits give index = outer*n + inner; GROUPTOP gives inner*(S/n) + outer.
 *
 * PADTO(axis, m) rounds the size of a not yet split axis up to a multiple
 * of m; loads past the true size read 0, stores past it are skipped.
 *
 * LOOP(axis, n) splits a global axis' outer part by n into a part `<axis>_o`
 * that each work-item iterates in a loop around all its work (n times
 * fewer work-groups): what it computes before the loop (STAGE copies) is
 * shared by the n iterations.
 *
 * STAGE copies, once per work-group before the reduce loops, the inputs
 * that all its work-items read alike into local memory (et_kernel_staged),
 * laid out so that the vector part's lanes are contiguous.
 *
 * PREFETCH(operand, axis, n) splits the reduce axis' outer part by n: the
 * outer part becomes the chunk loop, the inner part `<axis>_p` a loop
 * inside the chunk. Before each chunk the work-group copies every element
 * of the operand that the chunk needs (all values of the parts that vary
 * inside a work-group: local parts, group lanes, UPCAST/UNROLL parts and
 * the chunk loop) into local memory. Later PREFETCHes of other operands on
 * the same axis with the same n share the chunk loop; only one reduce axis
 * per kernel can be prefetched.
 *
 * SPLIT(axis, n) spreads a reduce axis over n times more work-groups: the
 * axis' outer part (size S) becomes chunks of S/n, and the new part
 * `<axis>_s` (size n, index = s*(S/n) + outer, contiguous chunks) takes its
 * value from the group id. Each work-group reduces its chunk and adds its
 * partial sums to the output with an atomic add, so the launch zeroes the
 * output first (et_launch.zero_bytes). The output dtype must have an atomic
 * add on the target (f32; f64 where 64-bit atomics exist; never f16). The
 * SPLIT parts are the slowest factor of the last launch dimension (of
 * dimension 0 for a rank-0 output).
 *
 * Launch geometry (et_kernel_launch): global axes, innermost (last in the
 * output) first, go to launch dimensions 0, 1, 2; axes past the third are
 * flattened into dimension 2 (SWAP exchanges two axes in this order). The
 * LOCAL parts of the axes of a dimension make its work-group size; the
 * GROUP/GROUPTOP lanes are folded in as the innermost (fastest) factor of
 * dimension 0's work-group size. For CUDA, when the number of groups along
 * dimension 1 or 2 exceeds 65535, all groups are flattened into dimension 0
 * (the kernel decodes them from blockIdx.x). A rank-0 output runs as one
 * work-item (one work-group of the GROUP lanes).
 *
 * Ownership: et_kernel_init and et_kernel_clone return a kernel the caller
 * frees with et_kernel_free. et_kernel_render fills an et_rendered whose
 * source the caller releases with et_rendered_free. A kernel is a plain
 * value: copies share nothing. Functions never keep pointers to their
 * arguments. Not thread-safe per kernel; distinct kernels are independent.
 */
#ifndef ET_KERNEL_H
#define ET_KERNEL_H

#include "eintune.h"
#include "einsum/einsum.h"
#include "transforms/target.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- opts --------------------------------------------------------------- */

typedef enum et_opt_kind {
    ET_OPT_LOCAL = 0,
    ET_OPT_UPCAST,
    ET_OPT_UNROLL,
    ET_OPT_GROUP,
    ET_OPT_GROUPTOP,
    ET_OPT_PADTO,
    ET_OPT_SWAP,
    ET_OPT_NOLOCALS,
    ET_OPT_PREFETCH,
    ET_OPT_SPLIT,
    ET_OPT_HOIST,
    ET_OPT_FACTOR,
    ET_OPT_STAGE,
    ET_OPT_LOOP,
    ET_OPT_NTSTORE,
    ET_OPT_COUNT
} et_opt_kind;

/*
 * Each opt is described once, in the opt table (transforms/opts.c, the
 * descriptor in opts_impl.h): its name, its arguments, the axes it may
 * name, the loop part it makes, its rules and how it changes the kernel.
 * The functions below read it.
 */

/* "LOCAL", "UPCAST", ...; "?" for a value outside et_opt_kind. */
const char *et_opt_kind_name(et_opt_kind k);

/* The kernel-wide opts, which name no axis and take no amount: NOLOCALS,
 * HOIST, FACTOR, STAGE, NTSTORE. False for a value outside et_opt_kind. */
bool et_opt_kind_is_global(et_opt_kind k);

#define ET_AXIS_NAME_LEN 16

/* An axis named by its index letter (pos = -1, name set) or by position
 * (pos >= 0: global axes in output order, then reduce axes). */
typedef struct et_axis_ref {
    int pos;
    char name[ET_AXIS_NAME_LEN];
} et_axis_ref;

/* One opt. Fields that a kind does not use are ignored. */
typedef struct et_opt {
    et_opt_kind kind;
    et_axis_ref axis;  /* every kind but the kernel-wide ones */
    et_axis_ref axis2; /* SWAP's second axis */
    int operand;       /* PREFETCH: input operand, from 0 */
    int64_t amt;       /* split amount, 0 = the whole part; PADTO multiple */
} et_opt;

/* Convenience constructor: an opt on an axis named by letter. */
et_opt et_opt_make(et_opt_kind kind, const char *axis, int64_t amt);

#define ET_MAX_OPTS 64

/*
 * Parses the text form, e.g. "LOCAL(i,8) UPCAST(j,4) PREFETCH(1,k,8)
 * SWAP(i,j) NOLOCALS PADTO(i,32)". Grammar:
 *   list := ws* [opt (ws+ opt)*] ws*
 *   opt  := NAME [ "(" [arg ("," arg)*] ")" ]
 *   arg  := ws* (integer | axis-name) ws*
 * Arity (the opt table's argument kinds): LOCAL UPCAST UNROLL GROUP
 * GROUPTOP PADTO SPLIT LOOP (axis, int), SWAP (axis, axis), PREFETCH (int,
 * axis, int), NOLOCALS, HOIST, FACTOR, STAGE and NTSTORE none.
 * Writes at most cap opts to out and their number to *n. Returns ET_OK or
 * ET_ERR_INPUT with d->pos (0-based byte offset), d->col and d->msg.
 */
et_status et_opts_parse(const char *text, et_opt *out, int cap, int *n,
                        et_diag *d);

/* Canonical text of opts (the form et_opts_parse reads), NUL-terminated,
 * truncated to cap bytes. Returns the length it needed (as snprintf). */
size_t et_opts_format(const et_opt *opts, int n, char *buf, size_t cap);

/* ---- the IR ------------------------------------------------------------- */

typedef enum et_part_kind {
    ET_PART_GLOBAL = 0, /* outer part of a global axis: from the group id */
    ET_PART_REDUCE,     /* outer part of a reduce axis: a loop */
    ET_PART_LOCAL,      /* from the local id */
    ET_PART_UPCAST,     /* unrolled, one accumulator per value */
    ET_PART_UNROLL,     /* unrolled inside the reduce loop body */
    ET_PART_GROUP,      /* work-group lanes splitting a reduce */
    ET_PART_PREFETCH,   /* loop inside a PREFETCH chunk */
    ET_PART_SPLIT,      /* reduce chunks spread over work-groups (SPLIT) */
    ET_PART_LOOP,       /* a loop of a global axis inside a work-item */
    ET_PART_COUNT
} et_part_kind;

#define ET_PART_NAME_LEN 32

typedef struct et_part {
    char name[ET_PART_NAME_LEN];
    int axis;           /* einsum index number */
    et_part_kind kind;
    int64_t size;
    int64_t stride;     /* contribution to the axis index: value * stride */
} et_part;

#define ET_MAX_PARTS (ET_MAX_INDICES + ET_MAX_OPTS)

/* The kernel: read its fields freely, change it only through the API. */
typedef struct et_kernel {
    et_einsum e;
    et_target target;
    int64_t padded[ET_MAX_INDICES]; /* size after PADTO (= size if none) */
    int n_parts;
    et_part part[ET_MAX_PARTS];
    int outer[ET_MAX_INDICES];      /* part holding each axis' letter */
    int order[ET_MAX_INDICES];      /* global axes, launch order (SWAP) */
    bool nolocals;
    bool hoist;                     /* HOIST: the other operands' product
                                     * formed once (render_expr.c) */
    bool factor;                    /* FACTOR: the operands that do not
                                     * use the innermost reduce loop are
                                     * multiplied after it (render_loops.c) */
    bool stage;                     /* STAGE: inputs all work-items of a
                                     * group read alike copied to local
                                     * memory once (et_kernel_staged) */
    bool ntstore;                   /* NTSTORE: the outputs' stores are
                                     * non-temporal (render_store.c) */
    int group_part;                 /* -1 if no GROUP/GROUPTOP */
    int prefetch_axis;              /* -1 if no PREFETCH */
    int prefetch_part;              /* the _p loop part */
    bool prefetch_op[ET_MAX_OPERANDS];
    int n_opts;
    et_opt opts[ET_MAX_OPTS];       /* applied opts, resolved to letters */
} et_kernel;

/*
 * Builds the unoptimized kernel of einsum e for target t (NULL: the
 * generic profile of OpenCL). *out gets a kernel the caller frees with
 * et_kernel_free. ET_ERR_NOMEM, or ET_ERR_INPUT for an einsum the IR
 * cannot hold (no operands).
 */
et_status et_kernel_init(const et_einsum *e, const et_target *t,
                         et_kernel **out);
void et_kernel_free(et_kernel *k);
/* A deep copy (caller frees), NULL when out of memory. */
et_kernel *et_kernel_clone(const et_kernel *k);

/*
 * Applies one opt. On refusal returns ET_ERR_REFUSED, leaves k unchanged
 * and writes into reason (cap bytes, may be NULL) the opt and the rule,
 * e.g. "UPCAST(k,4): UPCAST applies to global axes only; k is a reduce
 * axis".
 */
et_status et_kernel_apply_opt(et_kernel *k, const et_opt *opt, char *reason,
                              size_t cap);
/* Applies opts in order; stops at the first refusal (k keeps the opts
 * applied before it) and returns its status. */
et_status et_kernel_apply_opts(et_kernel *k, const et_opt *opts, int n,
                               char *reason, size_t cap);

/* Resolves an axis reference to an einsum index number; -1 if none. */
int et_kernel_axis_find(const et_kernel *k, const et_axis_ref *ref);

/* Index of the part named `name`, -1 if none. */
int et_kernel_part_find(const et_kernel *k, const char *name);

/*
 * Open axis (einsum.h): the kernel takes its size as its last argument
 * (64-bit) and is correct for every size >= 1. LOCAL and UPCAST on it split
 * without dividing: its outer part covers the size rounded up to a
 * multiple of the inner parts' product (et_kernel_open_step), loads past
 * the size read 0 and stores past it are skipped, as PADTO's are. PADTO on
 * it is refused, and so is an amount of 0 (the whole axis).
 *
 * Sets the open axis' size to n (the launch geometry and the zeroed bytes
 * follow); the rendered source does not change. ET_ERR_INPUT (d) when k
 * has no open axis or a size overflows.
 */
et_status et_kernel_set_open_size(et_kernel *k, int64_t n, et_diag *d);
/* The product of the inner parts of the open axis (1 without one): the
 * launch covers the open axis in steps of this many. */
int64_t et_kernel_open_step(const et_kernel *k);

/*
 * FACTOR: the reduce axis of the innermost reduce loop (the PREFETCH axis
 * when there is one, else the last reduce axis), whose sum the operands
 * that do not use it are factored out of; -1 for a kernel without reduce
 * axes.
 */
int et_kernel_factor_axis(const et_kernel *k);

/*
 * STAGE: is input op copied into local memory once per work-group, before
 * the reduce loops? Those are the inputs, not prefetched, whose indices
 * use no LOCAL part and no GROUP lane (every work-item of the group reads
 * the same elements of them) nor a LOOP part (staged before the LOOP
 * loops); the copy holds every value of their UPCAST,
 * UNROLL, reduce-loop and PREFETCH parts.
 */
bool et_kernel_staged(const et_kernel *k, int op);

/* Does k have a SPLIT part (work-groups add into a zeroed output)? */
bool et_kernel_has_split(const et_kernel *k);

/* Work-group size (all local parts and group lanes). */
int64_t et_kernel_group_size(const et_kernel *k);
/* Local memory bytes used (prefetch tiles and the GROUP reduction). */
int64_t et_kernel_local_bytes(const et_kernel *k);

/*
 * Launch geometry for backend b (see the header comment). ET_ERR_UNSUPPORTED
 * when the launch cannot be expressed (CUDA grid over 2^31-1 groups).
 */
et_status et_kernel_launch(const et_kernel *k, et_backend_kind b,
                           et_launch *out);

/* ---- rendering ---------------------------------------------------------- */

/*
 * Test-only hook: a planted bug in the rendered kernel, so tests can show
 * that verification catches it. ET_PLANT_NONE renders the correct kernel;
 * a new kind of planted bug gets its own value before ET_PLANT_COUNT.
 */
typedef enum et_plant {
    ET_PLANT_NONE = 0,
    ET_PLANT_COUNT
} et_plant;

/* Render options; the zero value means defaults. */
typedef struct et_render_opts {
    et_plant plant;
    /* the kernel's function name instead of et_kernel_name's (an exported
     * kernel is named after its problem); NULL or "": the default. The
     * caller checks that it is an identifier of fewer than 160 bytes. */
    const char *name;
} et_render_opts;

/*
 * A kernel's buffer arguments: the output, then the operands in order.
 * A batched kernel (einsum.h) takes one argument per row for the output
 * and for each rowed operand (out_0, out_1, ..., in1_0, in1_1, ...): row
 * r's array, the rows' elements r*E/R .. (r+1)*E/R-1 of the einsum's
 * stacked operand of E elements. At most ET_MAX_ARGS.
 */
#define ET_MAX_ARGS ET_MAX_BATCH_ARGS

typedef struct et_rendered {
    char *source;            /* malloc'd; release with et_rendered_free */
    char name[160];          /* kernel name, a valid identifier */
    et_launch launch;
    int64_t local_bytes;     /* local / shared memory the kernel declares */
    int n_args;              /* buffer arguments */
    int arg_operand[ET_MAX_ARGS]; /* -1 = output, else operand k */
    int arg_row[ET_MAX_ARGS];     /* the row of a rowed array, else -1 */
} et_rendered;

/* The buffer arguments of e's kernels, as et_rendered gives them: *n
 * entries of operand[] and row[] (arrays of ET_MAX_ARGS). False when
 * there would be more than ET_MAX_ARGS. */
bool et_kernel_args(const et_einsum *e, int *n, int *operand, int *row);

/*
 * The default kernel name: "r" (a reduction) or "E" (none), then the size
 * of every loop part in a fixed order of kinds, e.g. r_4_12_4_8. Two
 * problems with the same loop sizes share it (their dtypes are not in it).
 */
void et_kernel_name(const et_kernel *k, char *buf, size_t cap);

/*
 * Renders k to OpenCL C 1.2 or CUDA C (ro may be NULL). The source starts
 * with comments giving the einsum, the opts and the launch geometry, and
 * compiles as is. ET_ERR_NOMEM, ET_ERR_UNSUPPORTED (launch not
 * expressible).
 */
et_status et_kernel_render(const et_kernel *k, et_backend_kind b,
                           const et_render_opts *ro, et_rendered *out);
void et_rendered_free(et_rendered *r);

/*
 * The untransformed kernel of e's structure with every size an argument:
 * the buffer arguments as et_kernel_args lists them (out, in0..; a
 * batched einsum's rows each one), then one 64-bit integer per index in
 * index order
 * (n_<name>), a 1-D launch of ceil(output elements / 64) groups of 64;
 * out->launch is for e's sizes (its scalars are them). Correct for any
 * sizes of the structure (broadcast dimensions stay broadcast). For a
 * dispatch table's sizes that have no tuned kernel. ET_ERR_UNSUPPORTED
 * for more than ET_LAUNCH_MAX_SCALARS indices.
 */
et_status et_kernel_render_generic(const et_einsum *e, et_backend_kind b,
                                   et_rendered *out);

/*
 * Several rendered sources of backend b as one file: the definitions a
 * kernel carries (the f64 pragma, SPLIT's atomic add, the f16 helper) kept
 * once. The kernels' names must differ. Returns malloc'ed text (free),
 * NULL when out of memory.
 */
char *et_kernel_sources_join(const char *const *sources, int n,
                             et_backend_kind b);

#endif

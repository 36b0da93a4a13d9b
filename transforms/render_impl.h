/*
 * render_impl.h - internal to transforms/render*.c: the render context, the
 * dialect table's type, lists of parts, and the functions one render file
 * calls in another (prefixed rd_). Not part of the API.
 *
 * Files, by what they emit:
 *   render.c          driver: context, header comments, signature, locals
 *   render_expr.c     pieces of lines: sums, combinations, loads, masks
 *   render_loops.c    positions, base indices, reduce loops, scalar FMAs
 *   render_vector.c   vector accumulators (OpenCL)
 *   render_prefetch.c PREFETCH and STAGE tiles and their cooperative copy
 *   render_store.c    GROUP combine and stores (SPLIT: atomic adds)
 *   render_dialect.c  the dialect table: all that differs by backend
 */
#ifndef ET_RENDER_IMPL_H
#define ET_RENDER_IMPL_H

#include "base/sbuf.h"
#include "transforms/kernel_impl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAXP ET_MAX_PARTS

/* The source being written: a growing et_sbuf and the indentation of the
 * next rd_line. */
typedef struct rd_out {
    et_sbuf b;
    int indent;
} rd_out;

/*
 * What differs between OpenCL C and CUDA C, one entry per backend. Text
 * slots that are NULL are left out of the kernel; function slots write a
 * construct whose shape differs (argument order, casts).
 */
typedef struct dialect {
    const char *kernel_kw;
    const char *out_ptr;     /* printf: type, name */
    const char *in_ptr;
    const char *group_id[3];
    const char *local_id[3];
    const char *global_id[3];
    const char *local_kw;
    const char *barrier;
    const char *long_type;
    const char *half_type;   /* storage type of f16 */
    const char *comp[16];    /* vector component names */
    int max_vec_f32;
    int max_vec_f64;
    /* header comment on how the launch geometry maps to the API's */
    const char *launch_note;
    /* enables f64 when any operand, the output or the sum is f64 */
    const char *fp64_pragma;
    /* SPLIT: the atomic add the stores call, and the definitions it needs
     * for an f64 and an f32 (or f16) output */
    const char *atomic_add;
    const char *atomic_add_f64;
    const char *atomic_add_f32;
    /* definitions an f16 operand's loads need */
    const char *half_helper;
    /* fused multiply-add of the f32 sum (f64 is always "fma") */
    const char *fma_f32;
    /* NOLOCALS launches round the grid up to whole blocks: the surplus
     * work-items of each dimension return at once */
    bool rounded_grid;
    /* vector accumulators (see rd_choose_vector) */
    bool vector_accumulators;
    /* vector loads and stores at any element's address (vloadN, vstoreN):
     * PREFETCH and STAGE copy their tiles a vector at a time */
    bool unaligned_vectors;
    /* a kernel with barriers gives its innermost loop a bound that the
     * compiler cannot prove equal in every work-item (rd_emit_loops) */
    bool varying_inner_bound;
    /* into buf: the f16 element ptr[addr] converted, after `cast` */
    void (*half_load)(char *buf, size_t cap, const char *cast,
                      const char *ptr, const char *addr);
    /* declares `<acc>n name` loaded from ptr + addr */
    void (*vector_load)(rd_out *s, const char *acc, int64_t n,
                        const char *name, const char *ptr, const char *addr);
    /* stores the n values `list` (comma-separated) at ptr + addr */
    void (*vector_store)(rd_out *s, const char *type, int64_t n,
                         const char *list, const char *ptr,
                         const char *addr);
    /* NTSTORE: definitions its stores need (NULL: none), and into buf the
     * statement that stores `value` at ptr + addr past the caches; n > 1
     * stores a vector of n `type`s (`value` the vector or its comma-separated
     * values), only where ptr + addr is aligned to it */
    const char *nt_helper;
    void (*nt_store)(char *buf, size_t cap, const char *type, int64_t n,
                     const char *value, const char *ptr, const char *addr);
} dialect;

/* Indexed by et_backend_kind. */
extern const dialect rd_dialects[ET_BACKEND_COUNT];

typedef struct ctx {
    const et_kernel *k;
    const dialect *D;
    et_backend_kind b;
    rd_out s;
    const char *itype;       /* index type: "int" or the dialect's long */
    const char *acc;         /* "float" / "double" */
    const char *zero;        /* "0.0f" / "0.0" */
    const char *fma;
    int n_ops;
    /* address coefficient of each axis per operand; row n_ops = output */
    int64_t coef[ET_MAX_OPERANDS + 1][ET_MAX_INDICES];
    int64_t L[3];            /* work-group size per dim (lanes in dim 0) */
    int64_t wg;
    bool flat;
    et_launch launch;
    /* vector accumulators (OpenCL): 0 scalar, 1 along an UPCAST part
     * contiguous in the output, 2 along an UNROLL part (lanes summed after
     * the reduce loops); vpart is that part, vn its size */
    int vmode;
    int vpart;
    int64_t vn;
    /* mode 1: an UPCAST part (-1: none) whose values share the narrow
     * chunks of the vector part (fewer lanes than a vector holds), e.g.
     * the 4-lane tails of 20 = 16 + 4 lanes for its four values in one
     * 16-lane vector (see rd_choose_vector) */
    int pack_part;
    /* the open axis (-1: none): its size is the argument n_<axis>, its
     * outer part's count the variable <axis>_groups (see rd_part_size) */
    int open_axis;
    /* FACTOR (-1: none): the index of the innermost reduce loop. The
     * multiply-adds are emitted in phases: 0 every operand into the
     * accumulators (no FACTOR); 1 in the inner loop, the operands that
     * use factor_axis into the partial sums t_ / tv_; 2 after it, the
     * other operands times the partial sums into the accumulators */
    int factor_axis;
    int phase;
    /* a batched kernel's rows (kernel.h): 0 not batched; 1 the row axis
     * global, each work-item's pointers chosen once by its row; 2 the row
     * axis UPCAST whole, or, rows summed, UNROLLed whole (row_part), a
     * row's pointers named per combination: in<k>_<row>, out_<row>; 3
     * rows summed, the row axis a loop, each iteration's pointers chosen
     * at its top (rd_emit_row_pointers from the loop's opening) */
    int row_mode;
    int row_part;
    /* the innermost loop's bound adds lid_zero (rd_emit_loops) */
    bool varying_bound;
} ctx;

/* Which parts rd_sum_terms keeps. */
typedef bool (*part_pred)(const ctx *c, int p, const void *arg);

typedef struct plist {
    int n;
    int p[MAXP];
} plist;

#define MAX_CHUNKS 64

/* ---- render_expr.c ----------------------------------------------- */

/* Appends text; rd_line: one line at the current indentation. */
void rd_put(rd_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void rd_line(rd_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *rd_acc_type(et_dtype t);
const char *rd_store_type(const ctx *c, et_dtype t);
const int64_t *rd_coefs(const ctx *c, int op);
bool rd_op_uses(const ctx *c, int op, int a);
bool rd_padded(const ctx *c, int a);
/* Is part p the outer part of the open axis (a size known at launch)? */
bool rd_open_part(const ctx *c, int p);
/* A part that is always 0 (size 1 and not the open axis' outer part). */
bool rd_part_one(const ctx *c, int p);
/* Part p's size as C text: the number, or "<axis>_groups". */
void rd_part_size(const ctx *c, int p, char *buf, size_t cap);
/* Index a's true size as C text: the number, or "n_<axis>". */
void rd_axis_size(const ctx *c, int a, char *buf, size_t cap);
/* "name*stride" terms of a sum into buf; parts filtered by keep(). */
void rd_sum_terms(const ctx *c, char *buf, size_t cap, int axis,
                  part_pred keep, const void *arg, const char *suffix);
bool rd_is_runtime(et_part_kind kd);
bool rd_keep_runtime(const ctx *c, int p, const void *arg);
int64_t rd_plist_count(const ctx *c, const plist *l);
void rd_combo_fill(const ctx *c, const plist *l, int64_t idx,
                   int64_t *vals);
void rd_combo_name(const ctx *c, char *buf, size_t cap, const char *base,
                   const plist *l, const int64_t *vals);
void rd_plist_kind(const ctx *c, plist *l, et_part_kind kind, int op);
void rd_const_parts(const ctx *c, plist *l, int op);
/* The pointer operand op (-1: the output) is read or written through for
 * the combination vals of l: "in<op>", "out", or a row's pointer. */
void rd_ptr_name(const ctx *c, int op, const plist *l, const int64_t *vals,
                 char *buf, size_t cap);
void rd_load_expr(const ctx *c, int op, const char *ptr, const char *addr,
                  char *buf, size_t cap);
/* Buffer argument a's name in r: "out", "in1", a row's "out_2", "in1_2". */
void rd_arg_name(const et_rendered *r, int a, char *buf, size_t cap);
/* Appends to b the pointer of row `row` (a C expression) among base_0 ..
 * base_<n_rows-1>: "row == 0 ? base_0 : ... : base_<n_rows-1>". */
void rd_row_select(et_sbuf *b, const char *row, const char *base,
                   int n_rows);
/* Declares the row's pointers in<k> (and out for rows with outputs of
 * their own) of every rowed array, chosen by the variable row. */
void rd_emit_row_pointers(ctx *c, const char *row);
int rd_vector_part(const ctx *c, int op, const plist *consts);
int64_t rd_out_align(const ctx *c, int vp, int64_t off, int64_t n);
void rd_addr_base(const ctx *c, int op, char *buf, size_t cap);
bool rd_mask_expr(const ctx *c, int op, const plist *consts,
                  const int64_t *vals, char *buf, size_t cap);
int64_t rd_addr_off(const ctx *c, int op, const plist *consts,
                    const int64_t *vals);
void rd_addr_str(char *buf, size_t cap, const char *base, int64_t off);
void rd_plist_without(const plist *l, int p, plist *out);
int rd_hoist_plan(const ctx *c, int prefer, plist *pp);
void rd_emit_hoisted(ctx *c, int last, const plist *pp);

/* ---- render_loops.c ----------------------------------------------- */

/* Does operand op take part in the current phase's multiply-adds? */
bool rd_phase_op(const ctx *c, int op);
/* FACTOR: the parts that index the partial sums: the UPCAST parts, then
 * the UNROLL parts of other axes than factor_axis that an operand outside
 * the inner loop uses (the others are summed inside them). */
void rd_factor_tparts(const ctx *c, plist *t);

void rd_emit_ids(ctx *c);
void rd_emit_axis_bases(ctx *c, bool global);
void rd_emit_fmas_scalar(ctx *c);
void rd_emit_stage(ctx *c);
void rd_emit_loops(ctx *c);

/* ---- render_vector.c ----------------------------------------------- */

void rd_choose_vector(ctx *c);
void rd_emit_vacc_decls(ctx *c);
void rd_emit_vfactor_decls(ctx *c);
bool rd_direct_vec(const ctx *c, int op);
void rd_emit_direct_vec_loads(ctx *c, int op);
void rd_emit_vacc_unpack(ctx *c);
bool rd_vstores_direct_ok(const ctx *c);
bool rd_emit_vstores_direct(ctx *c);
void rd_emit_fmas(ctx *c);

/* ---- render_prefetch.c ----------------------------------------------- */

int64_t rd_tile_strides(const ctx *c, int op, int64_t *ts);
void rd_emit_tile_pos(ctx *c, int op, const int64_t *ts);
void rd_emit_prefetch_copy(ctx *c, int op);

/* ---- render_store.c ----------------------------------------------- */

void rd_emit_stores(ctx *c);
void rd_emit_group_combine(ctx *c);

#endif

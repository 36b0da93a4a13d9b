/*
 * einsum.h - the einsum front end (internal).
 *
 * An einsum goes through two steps:
 *   1. et_subscripts_parse(): the text alone -> et_subscripts (letters,
 *      ellipsis markers, positions in the text for diagnostics).
 *   2. et_einsum_resolve(): subscripts + sizes (a --shape spec or operand
 *      shapes) + dtypes -> et_einsum, the fully resolved contraction that
 *      every later layer works from.
 *
 * et_einsum layout (the contract with transforms/, measure/, roofline/):
 *   - idx[0 .. n_out-1] are the output indices in output order;
 *     idx[n_out .. n_idx-1] are the summed indices in order of first
 *     appearance in the operands. So "axis position" of docs/opts.md is simply
 *     the index number.
 *   - Ellipsis dimensions become ordinary indices named "_0", "_1", ...
 *     (leftmost first); they appear in the output where NumPy puts them.
 *   - op[k].idx[d] is the index of dimension d of operand k; a letter
 *     repeated in one operand (diagonal) repeats the index.
 *   - op[k].dim[d] is the operand's own extent along d: equal to the index
 *     size, or 1 where the operand broadcasts (NumPy semantics), in which
 *     case that dimension has stride 0. A dimension broadcasts exactly when
 *     its extent differs from the index's size: an index of size 1
 *     broadcasts nowhere, so an extent of 1 alone says nothing (test
 *     dim != idx.size, never dim == 1, wherever a size may change).
 *   - Operands and the output are dense, C-ordered arrays of their dims.
 *   - out.idx lists the output indices (0..n_out-1 in order), out.dim their
 *     sizes; out.dtype is the output dtype.
 * All structures are plain values: copy them freely, nothing to free.
 */
#ifndef ET_EINSUM_H
#define ET_EINSUM_H

#include "eintune.h"

#include <stdbool.h>
#include <stdint.h>

#define ET_MAX_OPERANDS 32  /* as NumPy's NPY_MAXARGS (1.x) */
#define ET_MAX_RANK 32      /* as NumPy's NPY_MAXDIMS */
#define ET_MAX_INDICES 84   /* 52 letters + ET_MAX_RANK ellipsis dims */
#define ET_MAX_TEXT 1024    /* longest einsum text accepted */
#define ET_NAME_LEN 8

typedef enum et_role {
    ET_ROLE_FREE = 0, /* in the output, not in every operand */
    ET_ROLE_SUMMED,   /* not in the output */
    ET_ROLE_BATCH,    /* in the output and in every operand */
    ET_ROLE_COUNT
} et_role;

const char *et_role_name(et_role r); /* "free", "summed", "batch" */

/* Fills d (if non-NULL) with byte position pos (-1: none), no line or
 * column, and a printf-formatted message; returns ET_ERR_INPUT. */
et_status et_diag_fail(et_diag *d, int pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- step 1: subscripts ------------------------------------------------ */

typedef struct et_term {
    int n;                   /* number of letters */
    char letter[ET_MAX_RANK + 1];
    int pos[ET_MAX_RANK];    /* byte offset of each letter in the text */
    int ell_at;              /* letters before the ellipsis, -1 if none */
    int ell_pos;             /* byte offset of "...", -1 if none */
    int start;               /* byte offset of the term's first character */
} et_term;

typedef struct et_subscripts {
    char text[ET_MAX_TEXT];  /* the text as given */
    int n_ops;
    et_term op[ET_MAX_OPERANDS];
    bool explicit_out;       /* "->" present */
    int arrow_pos;           /* byte offset of "->", -1 if none */
    et_term out;             /* explicit output (n may be 0) */
} et_subscripts;

/* Parses einsum text. Returns ET_OK or ET_ERR_INPUT with d->pos set. */
et_status et_subscripts_parse(const char *text, et_subscripts *s, et_diag *d);

/* ---- sizes and dtypes --------------------------------------------------- */

/* A parsed --shape spec: "x=4096,i=35,...=3x2"; "x=*" or "x=inf" makes x
 * an open axis (size 0 here, open true). */
typedef struct et_shape_spec {
    int n;
    char name[ET_MAX_INDICES][ET_NAME_LEN];
    int64_t size[ET_MAX_INDICES];
    bool open[ET_MAX_INDICES];
    int n_ell;               /* -1 if "..." not given */
    int64_t ell[ET_MAX_RANK];
} et_shape_spec;

/* Parses a --shape spec. Errors point into the spec text (d->pos). */
et_status et_shape_spec_parse(const char *spec, et_shape_spec *sp,
                              et_diag *d);

/*
 * Several problems in one spec (tune's --shape): an index's size may be a
 * list "8/16/24", a range "8:64:8" (stop included; step 1 when left out)
 * or another index's letter ("k=i": tied, the same size in every
 * problem); see the grammar in parse.c. *out gets the concrete specs, one
 * a line, the last varying entry fastest; *n their number (at most
 * ET_SHAPE_EXPAND_MAX). *out is malloc'ed (free). Errors point into spec.
 */
#define ET_SHAPE_EXPAND_MAX 4096
et_status et_shape_spec_expand(const char *spec, char **out, int *n,
                               et_diag *d);

/* Operand shapes as NumPy gives them (e.g. from .npy files). */
typedef struct et_operand_shapes {
    int n_ops;
    int rank[ET_MAX_OPERANDS];
    int64_t dim[ET_MAX_OPERANDS][ET_MAX_RANK];
} et_operand_shapes;

/* Parses a --dtype spec: one dtype for all operands or one per operand.
 * n_ops is the einsum's operand count. */
et_status et_dtype_spec_parse(const char *spec, int n_ops,
                              et_dtype dtypes[ET_MAX_OPERANDS], et_diag *d);

/* ---- step 2: the resolved einsum --------------------------------------- */

/*
 * Open axes. An output index given as "x=*" is open: kernels take its
 * size as an argument and are correct for every size >= 1. The einsum is
 * still worked at one concrete size (idx.size: the tune-at size, or
 * ET_OPEN_DEFAULT_SIZE), so that counts, inputs and the reference have a
 * size to work with; the canonical form writes "*" for it. Rules, checked
 * by et_einsum_resolve: at most one open axis; it is an output index (a
 * summed axis cannot be open); it is the first (outermost) dimension of
 * the output and of every operand that has it, once, so that no address
 * coefficient depends on its size.
 */
#define ET_OPEN_DEFAULT_SIZE 1024

typedef struct et_index {
    char name[ET_NAME_LEN];  /* "i", or "_0" for an ellipsis dimension */
    int64_t size;            /* the working size of an open axis */
    et_role role;
    bool open;               /* an open axis (see above) */
} et_index;

typedef struct et_operand {
    int rank;
    int idx[ET_MAX_RANK];
    int64_t dim[ET_MAX_RANK];
    et_dtype dtype;
} et_operand;

typedef struct et_einsum {
    int n_ops;
    et_operand op[ET_MAX_OPERANDS];
    et_operand out;
    int n_idx;
    int n_out;               /* output indices come first in idx[] */
    et_index idx[ET_MAX_INDICES];
    et_dtype acc_dtype;      /* widest operand dtype, f32 at least */
    char text[ET_MAX_TEXT];  /* normalized explicit form, e.g. "ik,kj->ij" */
    int n_rows;              /* a batched einsum's rows (>= 2), else 0:
                              * see "batched einsums" below */
    int row_axis;            /* a batched einsum's row axis: 0 (rows with
                              * outputs of their own) or a summed index
                              * (rows summed into one output) */
} et_einsum;

/*
 * Resolves subscripts with sizes. Exactly one of `spec` and `shapes` is
 * non-NULL. `dtypes` gives one dtype per operand (NULL: all f64).
 * Errors: ET_ERR_INPUT with d->pos pointing into s->text where it can
 * (the offending letter), else -1.
 */
et_status et_einsum_resolve(const et_subscripts *s, const et_shape_spec *spec,
                            const et_operand_shapes *shapes,
                            const et_dtype *dtypes, et_einsum *e, et_diag *d);

/*
 * Structure only, for patterns: index numbering, operand index lists,
 * roles and normalized text as et_einsum_resolve() gives them, with every
 * size and dim 0 and every dtype f16 (0). The pattern index number p of
 * et_match.idx_map is e->idx[p]. Patterns with '...' are refused
 * (ET_ERR_INPUT, d->pos at the ellipsis).
 */
et_status et_einsum_pattern(const et_subscripts *s, et_einsum *e, et_diag *d);

/* Index number of the index called `name` ("i", "_0"), or -1. */
int et_einsum_index_find(const et_einsum *e, const char *name);

/* The open axis' index number, -1 when every size is fixed. */
int et_einsum_open_axis(const et_einsum *e);

/*
 * Sets the size of index a to n (>= 1), with the dims of every operand and
 * the output that have it and do not broadcast (extent equal to a's size
 * before), keeping a's open flag. ET_ERR_INPUT (d->msg)
 * when a product of sizes would overflow 64 bits; e is then unchanged.
 */
et_status et_einsum_set_size(et_einsum *e, int a, int64_t n, et_diag *d);

/*
 * Applies a tune-at spec ("x=4096": sizes for open axes only) to e.
 * ET_ERR_INPUT with d->pos into spec for a malformed spec, a letter that
 * is not an open axis of e, or a size that overflows.
 */
et_status et_einsum_tune_at(et_einsum *e, const char *spec, et_diag *d);

/* "x=4096,i=35" (d->pos never set): every size, in index order; with
 * open_star, open axes written "x=*". */
void et_einsum_sizes_str(const et_einsum *e, bool open_star, char *buf,
                         size_t cap);

/* Convenience: parse text + spec strings (dtype_spec may be NULL).
 * A parse error in shape_spec or dtype_spec sets d->pos into that string. */
et_status et_einsum_from_strings(const char *text, const char *shape_spec,
                                 const char *dtype_spec, et_einsum *e,
                                 et_diag *d);

/* Number of elements of operand k (k = -1: the output); never overflows
 * because resolve refuses einsums whose products overflow. */
int64_t et_einsum_operand_elems(const et_einsum *e, int k);

/* Product of all index sizes (the iteration space). */
int64_t et_einsum_iter_size(const et_einsum *e);

/* Ops per dtype (docs/roofline.md), booked to the accumulation dtype:
 * the smaller of et_einsum_ops_direct and et_einsum_ops_path (path.c). */
void et_einsum_ops(const et_einsum *e, int64_t ops[ET_DTYPE_COUNT]);
/* The loop nest's count, |I|*((m-1)+s): every operand multiplied at every
 * point of the iteration space, plus an add when an index is summed. */
int64_t et_einsum_ops_direct(const et_einsum *e);
/* The count of the cheapest order of pairwise contractions (as NumPy's
 * einsum_path and opt_einsum count them); see einsum/path.c. */
int64_t et_einsum_ops_path(const et_einsum *e);

/* Compulsory bytes: every input read once, the output written once. */
int64_t et_einsum_bytes(const et_einsum *e);

/* ---- batched einsums (rows.c) ------------------------------------------ */

/*
 * A batched einsum computes several rows of one subscript, each with its
 * own operands, in one kernel. It is an et_einsum with n_rows >= 2 and a
 * row axis of size n_rows (e->row_axis), the first dimension of every
 * rowed operand (an operand whose array differs between rows); shared
 * operands do not have it. Either every row writes its own output: the
 * row axis is index 0, an output index, the output's first dimension; or
 * the rows are summed into one output (a spec with '+' between rows): the
 * row axis is a summed index and the output has no row dimension. Host
 * arrays of a rowed operand (and of a rowed output) hold the rows one
 * after another (the row axis outermost), so the reference and the
 * counts treat the einsum as any other; a kernel takes one pointer per
 * row (transforms/kernel.h). e->text names the row axis by a capital
 * letter ("xj,Rij->Rxi"; summed "Rxj,Rij->xi").
 */
#define ET_MAX_ROWS 16
#define ET_ROW_NAME_LEN 32
/* A kernel's buffer arguments at most (transforms/kernel.h's
 * ET_MAX_ARGS): rows x (the output and each rowed operand) + shared
 * operands. */
#define ET_MAX_BATCH_ARGS 64

/* A parsed batch spec "u,Dr; u,Ds; u,Dt": per row the operands' array
 * names, and their byte positions in the spec for diagnostics. */
typedef struct et_rows {
    int n_rows;
    int n_ops;
    bool summed;             /* rows separated by '+': one output */
    char name[ET_MAX_ROWS][ET_MAX_OPERANDS][ET_ROW_NAME_LEN];
    int pos[ET_MAX_ROWS][ET_MAX_OPERANDS];
} et_rows;

/* Parses a batch spec for an einsum of n_ops operands: at least 2 rows,
 * each naming n_ops arrays, separated by ';' (each row its own output) or
 * by '+' (the rows summed into one output), not both; a name stands at
 * one operand position; some position differs between rows. ET_ERR_INPUT
 * with d->pos into spec. */
et_status et_rows_parse(const char *spec, int n_ops, et_rows *r, et_diag *d);
/* Is operand position k rowed (its name differs between rows)? */
bool et_rows_rowed(const et_rows *r, int k);

/*
 * The batched einsum of base (resolved, no open axis, letters only) with
 * n_rows rows and the positions rowed[k] rowed; summed: the rows summed
 * into base's output. ET_ERR_INPUT (d->msg).
 */
et_status et_einsum_batch(const et_einsum *base, int n_rows,
                          const bool *rowed, bool summed, et_einsum *e,
                          et_diag *d);
/*
 * The two steps above in one: spec parsed for base's operands (into *rows
 * when rows is non-NULL) and base batched with it into *e. On an error
 * d->input says which text it is about: ET_INPUT_BATCH (d->pos into
 * spec) or ET_INPUT_EINSUM (an einsum that cannot be batched).
 * ET_ERR_NOMEM when out of memory.
 */
et_status et_einsum_batch_spec(const et_einsum *base, const char *spec,
                               et_rows *rows, et_einsum *e, et_diag *d);
/* Operand k's (-1: the output's) array of one row: without the row axis
 * when k is rowed, else as it is. */
void et_einsum_row_operand(const et_einsum *e, int k, et_operand *out);
/* The einsum of one row: e without its row axis (e itself when it is not
 * batched); index i of base is index i of e below the row axis, i + 1
 * from it on. */
void et_einsum_unbatch(const et_einsum *e, et_einsum *base);
/* Are a batched einsum's rows summed into one output? */
bool et_einsum_rows_summed(const et_einsum *e);
/* Is operand k (-1: the output) rowed? False for an unbatched einsum and
 * for the output of rows summed. */
bool et_einsum_op_rowed(const et_einsum *e, int k);
/* Elements of one row's array of operand k (-1: the output): all of them
 * for a shared operand. */
int64_t et_einsum_row_elems(const et_einsum *e, int k);

/* ---- canonical form and matcher ---------------------------------------- */

/* Canonical text: equal for einsums that differ only by index names and
 * operand order (sizes and dtypes included; an open axis is "*", whatever
 * size it is worked at). buf gets at most cap bytes. */
void et_einsum_canonical(const et_einsum *e, char *buf, size_t cap);

/* The structure form: as the canonical text without the sizes, equal for
 * einsums that differ by names, operand order and sizes (dtypes and
 * broadcasting kept). */
void et_einsum_structure(const et_einsum *e, char *buf, size_t cap);

/* Rebuilds an einsum from its canonical text (index names a, b, ...,
 * broadcast dimensions, open axes at ET_OPEN_DEFAULT_SIZE, dtypes), so
 * that a stored canonical form can be worked with. ET_ERR_INPUT (d->msg)
 * for text that is not a canonical form. */
et_status et_einsum_from_canonical(const char *canon, et_einsum *e,
                                   et_diag *d);

/* One way to see the user's einsum as the pattern. */
typedef struct et_match {
    /* pattern index p (by pattern's idx number) -> user index number */
    int idx_map[ET_MAX_INDICES];
    /* pattern operand j -> user operand number */
    int op_map[ET_MAX_OPERANDS];
} et_match;

/*
 * Finds every renaming/operand permutation under which `user` equals
 * `pattern` (subscript structure only: sizes and dtypes are not compared).
 * Writes up to cap matches to out and returns their total count in *n.
 * Returns ET_OK if at least one exists, else ET_ERR_INPUT with d->msg
 * saying which operand or index fails.
 */
et_status et_einsum_match(const et_subscripts *pattern, const et_einsum *user,
                          et_match *out, int cap, int *n, et_diag *d);

/* et_einsum_match() stops counting at this many matches (highly symmetric
 * einsums such as "i,i,i,i,i,i,i,i->i" have factorially many). */
#define ET_MATCH_COUNT_MAX 100000

/* ---- reference evaluator ------------------------------------------------ */

/*
 * Computes the einsum on the host in extended precision.
 * inputs[k] points at operand k's dense C-ordered data in its dtype (f16 as
 * IEEE binary16 bits in uint16_t). ref gets the output (out elems), abs_terms
 * (may be NULL) gets per element the sum of |term| over its terms.
 */
et_status et_reference_eval(const et_einsum *e, const void *const *inputs,
                            long double *ref, long double *abs_terms);

/* binary16 <-> float conversions (round to nearest even). */
float et_half_to_float(uint16_t h);
uint16_t et_float_to_half(float f);

#endif /* ET_EINSUM_H */

/*
 * expr.h - the expression language of transform spaces (bounds,
 * constraints, `amt`, `when`).
 *
 * 64-bit signed integer arithmetic; booleans are 0 and 1 (true, false,
 * comparisons, and/or/not). Names are resolved once, at parse time, to slot
 * numbers by a caller-supplied lookup; evaluation reads the slots from an
 * array, so an expression parsed once is evaluated many times without
 * allocation. The grammar (EBNF) is at the top of expr.c.
 *
 * Evaluation never crashes: division or modulo by zero and any overflow
 * (checked with __builtin_*_overflow) are reported as ET_ERR_INPUT with a
 * message naming the operator and its column in the text. `and`/`or`
 * short-circuit, so `n != 0 and i % n == 0` is safe.
 *
 * Ownership: et_expr_parse returns an expression the caller frees with
 * et_expr_free. An expression is immutable after parsing and may be
 * evaluated from several threads at once.
 */
#ifndef ET_SPACES_EXPR_H
#define ET_SPACES_EXPR_H

#include "eintune.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ET_EXPR_MAX_TEXT 1024  /* longest expression text accepted */
#define ET_EXPR_MAX_DEPTH 64   /* nesting of parentheses/operators */
#define ET_EXPR_MAX_NODES 512

typedef struct et_expr et_expr;

/* Maps a name (name[0..len-1], not NUL-terminated) to a slot number >= 0,
 * or returns -1 when the name is unknown. */
typedef int (*et_expr_lookup_fn)(void *ctx, const char *name, size_t len);

/*
 * Parses text. Unknown names (lookup returns -1), syntax errors and texts
 * that are too long or too deeply nested give ET_ERR_INPUT with d->pos the
 * 0-based byte offset of the offending token in text, d->col = pos + 1 and
 * d->msg saying what was expected. ET_ERR_NOMEM when out of memory.
 */
et_status et_expr_parse(const char *text, et_expr_lookup_fn lookup, void *ctx,
                        et_expr **out, et_diag *d);
void et_expr_free(et_expr *e);

/* Evaluates e with slot values vals[]. On error returns ET_ERR_INPUT and
 * writes a message into err (cap bytes, may be NULL). */
et_status et_expr_eval(const et_expr *e, const int64_t *vals, int64_t *out,
                       char *err, size_t cap);

/* The expression's text as given. */
const char *et_expr_text(const et_expr *e);
/* True when e reads slot s. */
bool et_expr_uses(const et_expr *e, int s);
/* Number of distinct slots e reads and the list (sorted ascending). */
int et_expr_slots(const et_expr *e, const int **slots);

#endif

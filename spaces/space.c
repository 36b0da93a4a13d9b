/*
 * space.c - the YAML loader of transform spaces (libyaml document API).
 *
 * The file is read whole (at most ET_SPACE_MAX_FILE bytes, which also
 * bounds nesting and alias expansion), loaded as one YAML document, then
 * walked in a fixed order whatever the key order in the file: einsum,
 * name, dtypes, params, constraints, transforms, actions, max_depth, so
 * that expressions can resolve parameters and pattern letters.
 *
 * libyaml marks are 0-based; every position stored or reported here is
 * 1-based. An error inside an expression points at the offending token:
 * the scalar's column plus the token's offset (plus one for a quote) when
 * the scalar is on one line.
 */
#include "spaces/space.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

static const char *const limit_names[] = {
    "max_work_group_size", "local_mem_bytes", "compute_units",
    "global_mem_bytes",    "preferred_vector_width",
};
_Static_assert(sizeof(limit_names) / sizeof(limit_names[0]) == ET_LIMIT_COUNT,
               "limit_names must match et_space_limit");

const char *et_space_limit_name(et_space_limit l)
{
    return (unsigned)l < ET_LIMIT_COUNT ? limit_names[l] : "?";
}

typedef struct loader {
    const char *file;
    yaml_document_t doc;
    et_space *s;
    et_diag *d;
    bool failed;
    bool allow_params;  /* expressions may read parameters */
} loader;

static et_status verr(loader *L, int line, int col, const char *fmt,
                      va_list ap)
{
    if (L->failed)
        return ET_ERR_INPUT;
    L->failed = true;
    if (L->d) {
        char what[400];
        vsnprintf(what, sizeof(what), fmt, ap);
        L->d->line = line;
        L->d->col = col;
        L->d->pos = -1;
        snprintf(L->d->msg, sizeof(L->d->msg), "%s:%d:%d: %s", L->file, line,
                 col, what);
    }
    return ET_ERR_INPUT;
}

static et_status err_at(loader *L, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static et_status err_at(loader *L, const yaml_node_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    et_status st = verr(L, n ? (int)n->start_mark.line + 1 : 1,
                        n ? (int)n->start_mark.column + 1 : 1, fmt, ap);
    va_end(ap);
    return st;
}

static et_status err_lc(loader *L, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static et_status err_lc(loader *L, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    et_status st = verr(L, line, col, fmt, ap);
    va_end(ap);
    return st;
}

static et_srcpos pos_of(const yaml_node_t *n)
{
    et_srcpos p = {(int)n->start_mark.line + 1, (int)n->start_mark.column + 1};
    return p;
}

static yaml_node_t *node(loader *L, int id)
{
    return yaml_document_get_node(&L->doc, id);
}

static const char *type_name(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

static et_status expect_type(loader *L, const yaml_node_t *n,
                             yaml_node_type_t t, const char *what)
{
    if (n->type == t)
        return ET_OK;
    const char *exp = t == YAML_SCALAR_NODE ? "a scalar"
                      : t == YAML_SEQUENCE_NODE ? "a list" : "a mapping";
    return err_at(L, n, "expected %s for %s, found %s", exp, what,
                  type_name(n));
}

/* A scalar's text, NUL-terminated (libyaml keeps a NUL after the value). */
static const char *sval(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

static int n_items(const yaml_node_t *n)
{
    return (int)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static int n_pairs(const yaml_node_t *n)
{
    return (int)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

/* Looks up key in mapping m, checking every key against the allowed list.
 * Fills val[i] with the value node of allowed[i] (NULL if absent). */
static et_status get_keys(loader *L, const yaml_node_t *m,
                          const char *const *allowed, int n_allowed,
                          yaml_node_t **val, const char *what)
{
    for (int i = 0; i < n_allowed; i++)
        val[i] = NULL;
    for (int p = 0; p < n_pairs(m); p++) {
        yaml_node_pair_t *pr = &m->data.mapping.pairs.start[p];
        yaml_node_t *k = node(L, pr->key);
        if (k->type != YAML_SCALAR_NODE)
            return err_at(L, k, "expected a key name in %s, found %s", what,
                          type_name(k));
        int hit = -1;
        for (int i = 0; i < n_allowed; i++)
            if (strcmp(sval(k), allowed[i]) == 0)
                hit = i;
        if (hit < 0) {
            char list[256] = "";
            size_t len = 0;
            for (int i = 0; i < n_allowed && len < sizeof(list); i++)
                len += (size_t)snprintf(list + len, sizeof(list) - len,
                                        "%s%s", i ? ", " : "", allowed[i]);
            return err_at(L, k, "unknown key '%.64s' in %s (expected one of: %s)",
                          sval(k), what, list);
        }
        if (val[hit])
            return err_at(L, k, "duplicate key '%s' in %s", allowed[hit],
                          what);
        val[hit] = node(L, pr->value);
    }
    return ET_OK;
}

/* ---- expressions ---------------------------------------------------------- */

static int lookup(void *ctx, const char *name, size_t len)
{
    loader *L = ctx;
    const et_space *s = L->s;
    if (L->allow_params)
        for (int k = 0; k < s->n_params; k++)
            if (strlen(s->param[k].name) == len &&
                memcmp(s->param[k].name, name, len) == 0)
                return k;
    if (len == 1) {
        char nm[2] = {name[0], '\0'};
        int p = et_einsum_index_find(&s->pate, nm);
        if (p >= 0)
            return ET_SPACE_SLOT_IDX + p;
    }
    for (int l = 0; l < ET_LIMIT_COUNT; l++)
        if (strlen(limit_names[l]) == len && memcmp(limit_names[l], name, len) == 0)
            return ET_SPACE_SLOT_LIM + l;
    return -1;
}

static et_status compile(loader *L, const yaml_node_t *n, const char *what,
                         et_expr **out)
{
    *out = NULL;
    if (n->type != YAML_SCALAR_NODE)
        return err_at(L, n, "expected an expression for %s, found %s", what,
                      type_name(n));
    et_diag ed;
    memset(&ed, 0, sizeof(ed));
    et_status st = et_expr_parse(sval(n), lookup, L, out, &ed);
    if (st == ET_OK)
        return ET_OK;
    if (st != ET_ERR_INPUT)
        return st;
    int line = (int)n->start_mark.line + 1;
    int col = (int)n->start_mark.column + 1;
    yaml_scalar_style_t sty = n->data.scalar.style;
    bool one_line = n->start_mark.line == n->end_mark.line;
    if (one_line && (sty == YAML_PLAIN_SCALAR_STYLE ||
                     sty == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                     sty == YAML_DOUBLE_QUOTED_SCALAR_STYLE) &&
        ed.pos >= 0) {
        col += ed.pos + (sty == YAML_PLAIN_SCALAR_STYLE ? 0 : 1);
    }
    return err_lc(L, line, col, "in %s '%.80s': %s", what, sval(n), ed.msg);
}

/* Evaluates a constant expression (no slots) at load time. */
static bool const_value(const et_expr *e, int64_t *v)
{
    const int *sl;
    if (et_expr_slots(e, &sl) != 0)
        return false;
    int64_t zero[ET_SPACE_N_SLOTS] = {0};
    return et_expr_eval(e, zero, v, NULL, 0) == ET_OK;
}

/* ---- sections --------------------------------------------------------------- */

static bool reserved(const char *nm)
{
    static const char *const words[] = {"true", "false", "min", "max",
                                        "and",  "or",    "not"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcmp(nm, words[i]) == 0)
            return true;
    for (int l = 0; l < ET_LIMIT_COUNT; l++)
        if (strcmp(nm, limit_names[l]) == 0)
            return true;
    return false;
}

static bool valid_name(const char *nm)
{
    if (!(isalpha((unsigned char)nm[0]) || nm[0] == '_'))
        return false;
    for (const char *c = nm; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_'))
            return false;
    return true;
}

static et_status load_domain(loader *L, et_space_param *pa, yaml_node_t *v)
{
    static const char *const keys[] = {"range", "pow2", "values"};
    yaml_node_t *val[3];
    et_status st;
    if (v->type != YAML_MAPPING_NODE)
        return err_at(L, v,
                      "expected a mapping {range: [lo, hi]}, {pow2: [lo, hi]} "
                      "or {values: [...]} for parameter '%s', found %s",
                      pa->name, type_name(v));
    if ((st = get_keys(L, v, keys, 3, val, "a parameter")) != ET_OK)
        return st;
    int which = -1, count = 0;
    for (int i = 0; i < 3; i++)
        if (val[i]) {
            which = i;
            count++;
        }
    if (count != 1)
        return err_at(L, v,
                      "expected exactly one of range, pow2, values for "
                      "parameter '%s'",
                      pa->name);
    yaml_node_t *lst = val[which];
    pa->dom_pos = pos_of(lst);
    pa->kind = which == 0 ? ET_PARAM_RANGE
               : which == 1 ? ET_PARAM_POW2 : ET_PARAM_VALUES;
    if ((st = expect_type(L, lst, YAML_SEQUENCE_NODE, keys[which])) != ET_OK)
        return st;
    int n = n_items(lst);
    if (pa->kind == ET_PARAM_VALUES) {
        if (n == 0)
            return err_at(L, lst, "empty list of values for parameter '%s'",
                          pa->name);
        if (n > ET_SPACE_MAX_VALUES)
            return err_at(L, lst, "more than %d values for parameter '%s'",
                          ET_SPACE_MAX_VALUES, pa->name);
        pa->values = calloc((size_t)n, sizeof(et_expr *));
        if (!pa->values)
            return ET_ERR_NOMEM;
        pa->is_bool = true;
        for (int i = 0; i < n; i++) {
            yaml_node_t *it = node(L, lst->data.sequence.items.start[i]);
            if ((st = compile(L, it, "a value", &pa->values[pa->n_values])) != ET_OK)
                return st;
            pa->n_values++;
            if (it->type != YAML_SCALAR_NODE ||
                (strcmp(sval(it), "true") != 0 && strcmp(sval(it), "false") != 0))
                pa->is_bool = false;
        }
        return ET_OK;
    }
    bool is_range = pa->kind == ET_PARAM_RANGE;
    if (n < 2 || n > (is_range ? 3 : 2))
        return err_at(L, lst, "expected %s for parameter '%s', found %d items",
                      is_range ? "[lo, hi] or [lo, hi, step]" : "[lo, hi]",
                      pa->name, n);
    et_expr **slot[3] = {&pa->lo, &pa->hi, &pa->step};
    static const char *const what[3] = {"a lower bound", "an upper bound",
                                        "a step"};
    for (int i = 0; i < n; i++) {
        yaml_node_t *it = node(L, lst->data.sequence.items.start[i]);
        if ((st = compile(L, it, what[i], slot[i])) != ET_OK)
            return st;
    }
    /* constant bounds are checked now, the others at binding */
    int64_t lo, hi, step = 1;
    bool c = const_value(pa->lo, &lo) && const_value(pa->hi, &hi) &&
             (!pa->step || const_value(pa->step, &step));
    if (!c)
        return ET_OK;
    if (step <= 0)
        return err_at(L, lst, "step of parameter '%s' must be positive, is %lld",
                      pa->name, (long long)step);
    if (lo > hi || (!is_range && hi < 1))
        return err_at(L, lst, "empty range [%lld, %lld] for parameter '%s'",
                      (long long)lo, (long long)hi, pa->name);
    int64_t span;
    if (is_range && (__builtin_sub_overflow(hi, lo, &span) ||
                     span / step >= ET_SPACE_MAX_POINTS))
        return err_at(L, lst,
                      "range of parameter '%s' has more than %d points",
                      pa->name, ET_SPACE_MAX_POINTS);
    return ET_OK;
}

static et_status load_params(loader *L, yaml_node_t *m)
{
    et_status st;
    if ((st = expect_type(L, m, YAML_MAPPING_NODE, "'params'")) != ET_OK)
        return st;
    et_space *s = L->s;
    for (int p = 0; p < n_pairs(m); p++) {
        yaml_node_pair_t *pr = &m->data.mapping.pairs.start[p];
        yaml_node_t *k = node(L, pr->key);
        if (k->type != YAML_SCALAR_NODE)
            return err_at(L, k, "expected a parameter name, found %s",
                          type_name(k));
        const char *nm = sval(k);
        if (s->n_params >= ET_SPACE_MAX_PARAMS)
            return err_at(L, k, "more than %d parameters", ET_SPACE_MAX_PARAMS);
        if (!valid_name(nm) || strlen(nm) >= ET_SPACE_NAME_LEN)
            return err_at(L, k,
                          "expected a parameter name (letters, digits, '_', at "
                          "most %d characters), found '%.64s'",
                          ET_SPACE_NAME_LEN - 1, nm);
        if (reserved(nm))
            return err_at(L, k, "'%s' is a reserved word or device limit, not a "
                          "parameter name", nm);
        if (strlen(nm) == 1 && et_einsum_index_find(&s->pate, nm) >= 0)
            return err_at(L, k, "parameter name '%s' is an index letter of the "
                          "pattern", nm);
        if (et_space_param_find(s, nm) >= 0)
            return err_at(L, k, "duplicate parameter '%s'", nm);
        et_space_param *pa = &s->param[s->n_params++];
        snprintf(pa->name, sizeof(pa->name), "%s", nm);
        pa->pos = pos_of(k);
        if ((st = load_domain(L, pa, node(L, pr->value))) != ET_OK)
            return st;
    }
    return ET_OK;
}

static et_status load_constraints(loader *L, yaml_node_t *q)
{
    et_status st;
    if ((st = expect_type(L, q, YAML_SEQUENCE_NODE, "'constraints'")) != ET_OK)
        return st;
    et_space *s = L->s;
    for (int i = 0; i < n_items(q); i++) {
        yaml_node_t *it = node(L, q->data.sequence.items.start[i]);
        if (s->n_constraints >= ET_SPACE_MAX_CONSTRAINTS)
            return err_at(L, it, "more than %d constraints",
                          ET_SPACE_MAX_CONSTRAINTS);
        s->cpos[s->n_constraints] = pos_of(it);
        if ((st = compile(L, it, "a constraint",
                          &s->constraint[s->n_constraints])) != ET_OK)
            return st;
        s->n_constraints++;
    }
    return ET_OK;
}

static et_status parse_op(loader *L, yaml_node_t *n, et_opt_kind *k)
{
    et_status st;
    if ((st = expect_type(L, n, YAML_SCALAR_NODE, "'op'")) != ET_OK)
        return st;
    for (int i = 0; i < ET_OPT_COUNT; i++)
        if (strcasecmp(sval(n), et_opt_kind_name((et_opt_kind)i)) == 0) {
            *k = (et_opt_kind)i;
            return ET_OK;
        }
    char names[256];
    size_t len = 0;
    names[0] = '\0';
    for (int i = 0; i < ET_OPT_COUNT && len < sizeof names; i++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
                                i == 0                ? ""
                                : i == ET_OPT_COUNT - 1 ? " or "
                                                        : ", ",
                                et_opt_kind_name((et_opt_kind)i));
    return err_at(L, n, "unknown op '%.32s' (expected %s)", sval(n), names);
}

/* A pattern letter; checks the axis kind the op needs. */
static et_status parse_axis(loader *L, yaml_node_t *n, et_opt_kind op, int *p)
{
    et_status st;
    if ((st = expect_type(L, n, YAML_SCALAR_NODE, "'axis'")) != ET_OK)
        return st;
    const et_einsum *pe = &L->s->pate;
    const char *nm = sval(n);
    if (L->s->any_einsum)
        return err_at(L, n, "axis '%.32s': a space with 'einsum: any' names "
                      "axes by any_global, any_reduce or any only", nm);
    *p = strlen(nm) == 1 ? et_einsum_index_find(pe, nm) : -1;
    if (*p < 0)
        return err_at(L, n, "axis '%.32s' is not an index of the pattern '%s'",
                      nm, pe->text);
    bool global = *p < pe->n_out;
    bool need_global = op == ET_OPT_LOCAL || op == ET_OPT_UPCAST ||
                       op == ET_OPT_LOOP || op == ET_OPT_SWAP;
    bool need_reduce = op == ET_OPT_UNROLL || op == ET_OPT_GROUP ||
                       op == ET_OPT_GROUPTOP || op == ET_OPT_PREFETCH ||
                       op == ET_OPT_SPLIT;
    if (need_global && !global)
        return err_at(L, n, "%s applies to global axes; '%s' is a reduce axis "
                      "of the pattern '%s'",
                      et_opt_kind_name(op), nm, pe->text);
    if (need_reduce && global)
        return err_at(L, n, "%s applies to reduce axes; '%s' is a global axis "
                      "of the pattern '%s'",
                      et_opt_kind_name(op), nm, pe->text);
    return ET_OK;
}

/*
 * The head of an entry of the transforms or the actions: a mapping, room
 * for one more (n of at most max, named plural in the error), and only
 * the allowed keys, whose values go into val.
 */
static et_status entry_keys(loader *L, yaml_node_t *m, const char *what,
                            int n, int max, const char *plural,
                            const char *const *allowed, int n_allowed,
                            yaml_node_t **val)
{
    et_status st;
    if ((st = expect_type(L, m, YAML_MAPPING_NODE, what)) != ET_OK)
        return st;
    if (n >= max)
        return err_at(L, m, "more than %d %s", max, plural);
    return get_keys(L, m, allowed, n_allowed, val, what);
}

static et_status load_step(loader *L, yaml_node_t *m)
{
    static const char *const keys[] = {"op", "axis", "axes", "operand", "amt",
                                       "when"};
    enum { K_OP, K_AXIS, K_AXES, K_OPERAND, K_AMT, K_WHEN };
    yaml_node_t *v[6];
    et_status st;
    et_space *s = L->s;
    if ((st = entry_keys(L, m, "a transform", s->n_steps, ET_SPACE_MAX_STEPS,
                         "transforms", keys, 6, v)) != ET_OK)
        return st;
    et_space_step *t = &s->step[s->n_steps];
    memset(t, 0, sizeof(*t));
    t->axis = t->axis2 = t->operand = -1;
    t->pos = pos_of(m);
    if (!v[K_OP])
        return err_at(L, m, "missing key 'op' in a transform");
    if ((st = parse_op(L, v[K_OP], &t->op)) != ET_OK)
        return st;
    s->n_steps++; /* owned from here on: freed with the space */
    const char *opn = et_opt_kind_name(t->op);
    bool is_swap = t->op == ET_OPT_SWAP, is_nol = et_opt_kind_is_global(t->op);
    bool is_pf = t->op == ET_OPT_PREFETCH;
    if (is_swap) {
        if (v[K_AXIS])
            return err_at(L, v[K_AXIS], "SWAP takes 'axes: [a, b]', not 'axis'");
        if (!v[K_AXES])
            return err_at(L, m, "missing key 'axes' in a SWAP transform");
        yaml_node_t *a = v[K_AXES];
        if ((st = expect_type(L, a, YAML_SEQUENCE_NODE, "'axes'")) != ET_OK)
            return st;
        if (n_items(a) != 2)
            return err_at(L, a, "expected two axes [a, b] for SWAP, found %d",
                          n_items(a));
        if ((st = parse_axis(L, node(L, a->data.sequence.items.start[0]),
                             t->op, &t->axis)) != ET_OK ||
            (st = parse_axis(L, node(L, a->data.sequence.items.start[1]),
                             t->op, &t->axis2)) != ET_OK)
            return st;
    } else if (v[K_AXES]) {
        return err_at(L, v[K_AXES], "'axes' belongs to SWAP only; %s takes %s",
                      opn, is_nol ? "no axis" : "'axis'");
    }
    if (is_nol && v[K_AXIS])
        return err_at(L, v[K_AXIS], "%s takes no axis", opn);
    if (!is_swap && !is_nol) {
        if (!v[K_AXIS])
            return err_at(L, m, "missing key 'axis' in a %s transform", opn);
        if ((st = parse_axis(L, v[K_AXIS], t->op, &t->axis)) != ET_OK)
            return st;
    }
    if (is_pf) {
        if (!v[K_OPERAND])
            return err_at(L, m, "missing key 'operand' in a PREFETCH transform");
        yaml_node_t *o = v[K_OPERAND];
        char *end = NULL;
        long k = -1;
        if (o->type == YAML_SCALAR_NODE) {
            errno = 0;
            k = strtol(sval(o), &end, 10);
            if (errno || end == sval(o) || *end)
                k = -1;
        }
        if (k < 0 || k >= s->pate.n_ops)
            return err_at(L, o,
                          "bad operand number '%.32s' (expected an input "
                          "operand of the pattern '%s', 0 to %d)",
                          o->type == YAML_SCALAR_NODE ? sval(o) : "?",
                          s->pate.text, s->pate.n_ops - 1);
        t->operand = (int)k;
    } else if (v[K_OPERAND]) {
        return err_at(L, v[K_OPERAND], "'operand' belongs to PREFETCH only");
    }
    bool takes_amt = !is_swap && !is_nol;
    if (takes_amt && !v[K_AMT])
        return err_at(L, m, "missing key 'amt' in a %s transform", opn);
    if (!takes_amt && v[K_AMT])
        return err_at(L, v[K_AMT], "%s takes no 'amt'", opn);
    if (v[K_AMT] && (st = compile(L, v[K_AMT], "'amt'", &t->amt)) != ET_OK)
        return st;
    if (v[K_WHEN] && (st = compile(L, v[K_WHEN], "'when'", &t->when)) != ET_OK)
        return st;
    return ET_OK;
}

static et_status load_action(loader *L, yaml_node_t *m)
{
    static const char *const keys[] = {"op", "axis", "amt"};
    yaml_node_t *v[3];
    et_status st;
    et_space *s = L->s;
    if ((st = entry_keys(L, m, "an action", s->n_actions,
                         ET_SPACE_MAX_ACTIONS, "actions", keys, 3, v)) != ET_OK)
        return st;
    et_space_action *a = &s->action[s->n_actions];
    memset(a, 0, sizeof(*a));
    a->pos = pos_of(m);
    if (!v[0])
        return err_at(L, m, "missing key 'op' in an action");
    if ((st = parse_op(L, v[0], &a->op)) != ET_OK)
        return st;
    if (a->op == ET_OPT_SWAP || a->op == ET_OPT_PREFETCH)
        return err_at(L, v[0], "%s cannot be an action (use it in 'transforms')",
                      et_opt_kind_name(a->op));
    if (et_opt_kind_is_global(a->op)) {
        if (v[1] || v[2])
            return err_at(L, v[1] ? v[1] : v[2], "%s takes no axis and no amt",
                          et_opt_kind_name(a->op));
        a->axis = ET_ACTION_ANY;
        a->n_amt = 1;
        s->n_actions++;
        return ET_OK;
    }
    if (!v[1])
        return err_at(L, m, "missing key 'axis' in an action");
    if (!v[2])
        return err_at(L, m, "missing key 'amt' in an action");
    yaml_node_t *ax = v[1];
    if ((st = expect_type(L, ax, YAML_SCALAR_NODE, "'axis'")) != ET_OK)
        return st;
    bool glob = a->op == ET_OPT_LOCAL || a->op == ET_OPT_UPCAST ||
                a->op == ET_OPT_LOOP;
    bool red = !glob && a->op != ET_OPT_PADTO;
    if (strcmp(sval(ax), "any_global") == 0) {
        if (red)
            return err_at(L, ax, "%s applies to reduce axes: expected "
                          "any_reduce or a reduce letter",
                          et_opt_kind_name(a->op));
        a->axis = ET_ACTION_ANY_GLOBAL;
    } else if (strcmp(sval(ax), "any_reduce") == 0) {
        if (glob)
            return err_at(L, ax, "%s applies to global axes: expected "
                          "any_global or a global letter",
                          et_opt_kind_name(a->op));
        a->axis = ET_ACTION_ANY_REDUCE;
    } else if (strcmp(sval(ax), "any") == 0) {
        a->axis = glob ? ET_ACTION_ANY_GLOBAL
                  : red ? ET_ACTION_ANY_REDUCE : ET_ACTION_ANY;
    } else if ((st = parse_axis(L, ax, a->op, &a->axis)) != ET_OK) {
        return st;
    }
    yaml_node_t *am = v[2];
    int n = am->type == YAML_SEQUENCE_NODE ? n_items(am) : 1;
    if (am->type == YAML_MAPPING_NODE)
        return err_at(L, am, "expected a list of integers for 'amt', found a "
                      "mapping");
    if (n == 0)
        return err_at(L, am, "empty list for 'amt'");
    if (n > ET_SPACE_MAX_AMTS)
        return err_at(L, am, "more than %d amounts", ET_SPACE_MAX_AMTS);
    for (int i = 0; i < n; i++) {
        yaml_node_t *it = am->type == YAML_SEQUENCE_NODE
                              ? node(L, am->data.sequence.items.start[i]) : am;
        et_expr *e = NULL;
        if ((st = compile(L, it, "an amount", &e)) != ET_OK)
            return st;
        int64_t val;
        bool c = const_value(e, &val);
        et_expr_free(e);
        if (!c || val < 0)
            return err_at(L, it, "expected a constant amount >= 0, found '%.32s'",
                          sval(it));
        a->amt[a->n_amt++] = val;
    }
    s->n_actions++;
    return ET_OK;
}

static et_status load_list(loader *L, yaml_node_t *q, const char *what,
                           et_status (*one)(loader *, yaml_node_t *))
{
    et_status st;
    if ((st = expect_type(L, q, YAML_SEQUENCE_NODE, what)) != ET_OK)
        return st;
    for (int i = 0; i < n_items(q); i++)
        if ((st = one(L, node(L, q->data.sequence.items.start[i]))) != ET_OK)
            return st;
    return ET_OK;
}

static et_status load_root(loader *L, yaml_node_t *root)
{
    static const char *const keys[] = {"name",        "einsum",     "dtypes",
                                       "params",      "constraints", "transforms",
                                       "actions",     "max_depth"};
    enum { K_NAME, K_EINSUM, K_DTYPES, K_PARAMS, K_CONS, K_TRANS, K_ACT, K_DEPTH };
    yaml_node_t *v[8];
    et_status st;
    et_space *s = L->s;
    if (!root)
        return err_at(L, NULL, "empty file: expected a mapping with 'name' and "
                      "'einsum'");
    if ((st = expect_type(L, root, YAML_MAPPING_NODE, "the space")) != ET_OK)
        return st;
    if ((st = get_keys(L, root, keys, 8, v, "the space")) != ET_OK)
        return st;
    if (!v[K_NAME])
        return err_at(L, root, "missing key 'name'");
    if ((st = expect_type(L, v[K_NAME], YAML_SCALAR_NODE, "'name'")) != ET_OK)
        return st;
    if (!valid_name(sval(v[K_NAME])) || strlen(sval(v[K_NAME])) >= ET_SPACE_NAME_LEN)
        return err_at(L, v[K_NAME], "expected an identifier for 'name' (letters, "
                      "digits, '_'), found '%.64s'", sval(v[K_NAME]));
    snprintf(s->name, sizeof(s->name), "%s", sval(v[K_NAME]));

    if (!v[K_EINSUM])
        return err_at(L, root, "missing key 'einsum'");
    yaml_node_t *en = v[K_EINSUM];
    if ((st = expect_type(L, en, YAML_SCALAR_NODE, "'einsum'")) != ET_OK)
        return st;
    et_diag ed;
    memset(&ed, 0, sizeof(ed));
    if (strcmp(sval(en), "any") == 0) {
        s->any_einsum = true;
        if (v[K_PARAMS] || v[K_CONS] || v[K_TRANS])
            return err_at(L, v[K_PARAMS] ? v[K_PARAMS] : v[K_CONS] ? v[K_CONS]
                                                                  : v[K_TRANS],
                          "a space with 'einsum: any' holds only 'actions' "
                          "(no params, constraints or transforms)");
    } else if (strlen(sval(en)) >= ET_MAX_TEXT ||
        et_subscripts_parse(sval(en), &s->pat, &ed) != ET_OK ||
        et_einsum_pattern(&s->pat, &s->pate, &ed) != ET_OK) {
        int col = (int)en->start_mark.column + 1;
        if (ed.pos >= 0 && en->start_mark.line == en->end_mark.line)
            col += ed.pos + (en->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? 0 : 1);
        return err_lc(L, (int)en->start_mark.line + 1, col,
                      "bad einsum pattern: %s",
                      ed.msg[0] ? ed.msg : "too long");
    }

    if (v[K_DTYPES]) {
        yaml_node_t *q = v[K_DTYPES];
        if ((st = expect_type(L, q, YAML_SEQUENCE_NODE, "'dtypes'")) != ET_OK)
            return st;
        if (n_items(q) == 0)
            return err_at(L, q, "empty list for 'dtypes'");
        s->has_dtypes = true;
        for (int i = 0; i < n_items(q); i++) {
            yaml_node_t *it = node(L, q->data.sequence.items.start[i]);
            et_dtype dt;
            if (it->type != YAML_SCALAR_NODE || et_dtype_parse(sval(it), &dt) != 0)
                return err_at(L, it, "expected a dtype (f16, f32, f64), found "
                              "'%.32s'",
                              it->type == YAML_SCALAR_NODE ? sval(it) : type_name(it));
            s->dtype_ok[dt] = true;
        }
    }
    L->allow_params = false;
    if (v[K_PARAMS] && (st = load_params(L, v[K_PARAMS])) != ET_OK)
        return st;
    L->allow_params = true;
    if (v[K_CONS] && (st = load_constraints(L, v[K_CONS])) != ET_OK)
        return st;
    if (v[K_TRANS] &&
        (st = load_list(L, v[K_TRANS], "'transforms'", load_step)) != ET_OK)
        return st;
    if (v[K_ACT] &&
        (st = load_list(L, v[K_ACT], "'actions'", load_action)) != ET_OK)
        return st;
    if (!v[K_TRANS] && !v[K_ACT])
        return err_at(L, root, "missing key 'transforms' or 'actions' (a space "
                      "needs at least one)");
    if (v[K_ACT] && s->n_actions == 0)
        return err_at(L, v[K_ACT], "empty list for 'actions'");
    s->max_depth = 0;
    if (v[K_DEPTH]) {
        if (!v[K_ACT])
            return err_at(L, v[K_DEPTH], "'max_depth' needs 'actions'");
        yaml_node_t *dn = v[K_DEPTH];
        char *end = NULL;
        long dv = -1;
        if (dn->type == YAML_SCALAR_NODE) {
            errno = 0;
            dv = strtol(sval(dn), &end, 10);
            if (errno || end == sval(dn) || *end)
                dv = -1;
        }
        if (dv < 1 || dv > ET_SPACE_MAX_DEPTH)
            return err_at(L, dn, "expected an integer from 1 to %d for "
                          "'max_depth'", ET_SPACE_MAX_DEPTH);
        s->max_depth = (int)dv;
    } else if (v[K_ACT]) {
        s->max_depth = 8;
    }
    /* params that nothing reads are a mistake worth reporting */
    for (int k = 0; k < s->n_params; k++) {
        bool used = false;
        for (int i = 0; i < s->n_constraints && !used; i++)
            used = et_expr_uses(s->constraint[i], k);
        for (int i = 0; i < s->n_steps && !used; i++)
            used = et_expr_uses(s->step[i].amt, k) ||
                   et_expr_uses(s->step[i].when, k);
        if (!used) {
            return err_lc(L, s->param[k].pos.line, s->param[k].pos.col,
                          "parameter '%s' is used by no transform "
                          "and no constraint", s->param[k].name);
        }
    }
    return ET_OK;
}

int et_space_param_find(const et_space *s, const char *name)
{
    for (int k = 0; k < s->n_params; k++)
        if (strcmp(s->param[k].name, name) == 0)
            return k;
    return -1;
}

void et_space_free(et_space *s)
{
    if (!s)
        return;
    for (int k = 0; k < s->n_params; k++) {
        et_space_param *p = &s->param[k];
        et_expr_free(p->lo);
        et_expr_free(p->hi);
        et_expr_free(p->step);
        for (int i = 0; i < p->n_values; i++)
            et_expr_free(p->values[i]);
        free(p->values);
    }
    for (int i = 0; i < s->n_constraints; i++)
        et_expr_free(s->constraint[i]);
    for (int i = 0; i < s->n_steps; i++) {
        et_expr_free(s->step[i].amt);
        et_expr_free(s->step[i].when);
    }
    free(s);
}

/*
 * Refuses lists and mappings nested deeper than ET_SPACE_MAX_NESTING
 * before the document is built: libyaml takes time quadratic in the depth
 * (a megabyte of '[' would take minutes), and a space needs four or five
 * levels. The event parser stops at the first level too deep. Syntax errors
 * are left to the loader, which reports them with their context.
 */
static et_status check_nesting(loader *L, const char *text, size_t len)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return ET_ERR_NOMEM;
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    et_status st = ET_OK;
    int depth = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev))
            break;
        yaml_event_type_t t = ev.type;
        if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
            if (++depth > ET_SPACE_MAX_NESTING)
                st = err_lc(L, (int)ev.start_mark.line + 1,
                            (int)ev.start_mark.column + 1,
                            "lists and mappings nested more than %d deep",
                            ET_SPACE_MAX_NESTING);
        } else if (t == YAML_SEQUENCE_END_EVENT ||
                   t == YAML_MAPPING_END_EVENT) {
            depth--;
        }
        yaml_event_delete(&ev);
        if (st != ET_OK || t == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&p);
    return st;
}

/* The public entry points clear d on entry (pos -1: no position). */
static void diag_clear(et_diag *d)
{
    if (d) {
        memset(d, 0, sizeof(*d));
        d->pos = -1;
    }
}

/* A NULL argument of a public entry point: ET_ERR_INPUT naming it, as
 * api/ names them. */
static et_status null_arg(et_diag *d, const char *fn, const char *arg)
{
    if (d) {
        d->status = ET_ERR_INPUT;
        d->input = ET_INPUT_OPTION;
        snprintf(d->msg, sizeof(d->msg), "%s: argument '%s' is NULL", fn,
                 arg);
    }
    return ET_ERR_INPUT;
}

/* What et_space_load_text and et_space_load promise about d on failure
 * (include/eintune.h): the status, and for a malformed space the input
 * ET_INPUT_SPACE with its file (the name given to the text) beside the
 * 1-based line and column verr set. */
static et_status space_fail(et_diag *d, et_status st, const char *file)
{
    if (!d || st == ET_OK)
        return st;
    d->status = st;
    if (st == ET_ERR_INPUT || st == ET_ERR_IO) {
        d->input = ET_INPUT_SPACE;
        snprintf(d->file, sizeof(d->file), "%s", file);
    }
    if (st == ET_ERR_NOMEM && !d->msg[0])
        snprintf(d->msg, sizeof(d->msg), "out of memory");
    return st;
}

static et_status load_text(const char *text, size_t len, const char *file,
                           et_space **out, et_diag *d);

et_status et_space_load_text(const char *text, size_t len, const char *file,
                             et_space **out, et_diag *d)
{
    diag_clear(d);
    if (!out)
        return null_arg(d, "et_space_load_text", "out");
    *out = NULL;
    if (!text)
        return null_arg(d, "et_space_load_text", "text");
    if (!file)
        file = "<space>";
    return space_fail(d, load_text(text, len, file, out, d), file);
}

static et_status load_text(const char *text, size_t len, const char *file,
                           et_space **out, et_diag *d)
{
    loader L;
    memset(&L, 0, sizeof(L));
    L.file = file;
    L.d = d;
    if (len > ET_SPACE_MAX_FILE)
        return err_at(&L, NULL, "file larger than %d bytes", ET_SPACE_MAX_FILE);
    et_space *s = calloc(1, sizeof(*s));
    if (!s)
        return ET_ERR_NOMEM;
    snprintf(s->file, sizeof(s->file), "%s", L.file);
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)text[i]) * 1099511628211ULL;
    s->hash = h;
    L.s = s;

    et_status st = check_nesting(&L, text, len);
    if (st != ET_OK) {
        free(s);
        return st;
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        free(s);
        return ET_ERR_NOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &L.doc)) {
        if (parser.error == YAML_MEMORY_ERROR)
            st = ET_ERR_NOMEM;
        else
        {
            char ctx[160] = "";
            if (parser.context)
                snprintf(ctx, sizeof(ctx), " %s started at %d:%d",
                         parser.context, (int)parser.context_mark.line + 1,
                         (int)parser.context_mark.column + 1);
            st = err_lc(&L, (int)parser.problem_mark.line + 1,
                        (int)parser.problem_mark.column + 1,
                        "YAML syntax error: %s%s",
                        parser.problem ? parser.problem : "unknown problem",
                        ctx);
        }
        yaml_parser_delete(&parser);
        et_space_free(s);
        return st;
    }
    st = load_root(&L, yaml_document_get_root_node(&L.doc));
    yaml_document_delete(&L.doc);
    yaml_parser_delete(&parser);
    if (st != ET_OK) {
        et_space_free(s);
        return st;
    }
    *out = s;
    return ET_OK;
}

et_status et_space_load(const char *path, et_space **out, et_diag *d)
{
    diag_clear(d);
    if (!out)
        return null_arg(d, "et_space_load", "out");
    *out = NULL;
    if (!path)
        return null_arg(d, "et_space_load", "path");
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (d)
            snprintf(d->msg, sizeof(d->msg), "%s: cannot open: %s", path,
                     strerror(errno));
        return space_fail(d, ET_ERR_IO, path);
    }
    char *buf = malloc(ET_SPACE_MAX_FILE + 1);
    if (!buf) {
        fclose(f);
        return space_fail(d, ET_ERR_NOMEM, path);
    }
    size_t n = fread(buf, 1, ET_SPACE_MAX_FILE + 1, f);
    bool bad = ferror(f);
    fclose(f);
    et_status st;
    if (bad) {
        if (d)
            snprintf(d->msg, sizeof(d->msg), "%s: read error", path);
        st = space_fail(d, ET_ERR_IO, path);
    } else {
        st = space_fail(d, load_text(buf, n, path, out, d), path);
    }
    free(buf);
    return st;
}

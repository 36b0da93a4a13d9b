/*
 * expr.c - parser and evaluator of space expressions.
 *
 * Grammar (EBNF; whitespace is spaces and tabs between tokens):
 *
 *   expr    = or_e ;
 *   or_e    = and_e { "or" and_e } ;
 *   and_e   = not_e { "and" not_e } ;
 *   not_e   = "not" not_e | cmp_e ;
 *   cmp_e   = sum [ ( "<" | "<=" | ">" | ">=" | "==" | "!=" ) sum ] ;
 *   sum     = term { ( "+" | "-" ) term } ;
 *   term    = unary { ( "*" | "/" | "%" ) unary } ;
 *   unary   = "-" unary | primary ;
 *   primary = integer | "true" | "false"
 *           | ( "min" | "max" ) "(" expr { "," expr } ")"
 *           | name | "(" expr ")" ;
 *   integer = digit { digit } ;
 *   name    = ( letter | "_" ) { letter | digit | "_" } ;
 *
 * Comparisons do not chain (`a < b < c` is a syntax error: it rarely means
 * what it says). `/` and `%` truncate toward zero, as C does.
 *
 * The compact form is an array of nodes (an AST whose children are array
 * indices); evaluation walks it recursively. Its depth is bounded by the
 * node count (ET_EXPR_MAX_NODES), the parser's recursion by
 * ET_EXPR_MAX_DEPTH.
 */
#include "spaces/expr.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum nkind {
    N_CONST, N_VAR, N_NEG, N_NOT,
    N_ADD, N_SUB, N_MUL, N_DIV, N_MOD,
    N_LT, N_LE, N_GT, N_GE, N_EQ, N_NE,
    N_AND, N_OR, N_MIN, N_MAX
} nkind;

typedef struct node {
    nkind kind;
    int a, b;     /* children (node indices), -1 if none */
    int64_t v;    /* N_CONST value, N_VAR slot */
    int pos;      /* byte offset of the operator / operand in the text */
} node;

struct et_expr {
    char *text;
    int n_nodes;
    int root;
    node *nodes;
    int n_slots;
    int *slots;
};

typedef struct parser {
    const char *s;
    int p;
    int depth;
    et_expr_lookup_fn lookup;
    void *ctx;
    node nodes[ET_EXPR_MAX_NODES];
    int n;
    et_diag *d;
    bool failed;
} parser;

static int fail(parser *ps, int pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(parser *ps, int pos, const char *fmt, ...)
{
    if (ps->failed)
        return -1;
    ps->failed = true;
    if (ps->d) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->d->msg, sizeof(ps->d->msg), fmt, ap);
        va_end(ap);
        ps->d->pos = pos;
        ps->d->col = pos + 1;
        ps->d->line = 0;
    }
    return -1;
}

static void skip_ws(parser *ps)
{
    while (ps->s[ps->p] == ' ' || ps->s[ps->p] == '\t' ||
           ps->s[ps->p] == '\n' || ps->s[ps->p] == '\r')
        ps->p++;
}

static int add_node(parser *ps, nkind k, int a, int b, int64_t v, int pos)
{
    if (ps->failed)
        return -1;
    if (ps->n >= ET_EXPR_MAX_NODES)
        return fail(ps, pos, "expression too long (more than %d terms)",
                    ET_EXPR_MAX_NODES);
    node *nd = &ps->nodes[ps->n];
    nd->kind = k;
    nd->a = a;
    nd->b = b;
    nd->v = v;
    nd->pos = pos;
    return ps->n++;
}

static bool is_name_start(char c)
{
    return isalpha((unsigned char)c) || c == '_';
}

static bool is_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* The word at the cursor equals kw (and is not a prefix of a longer name). */
static bool at_word(parser *ps, const char *kw)
{
    size_t n = strlen(kw);
    return strncmp(ps->s + ps->p, kw, n) == 0 && !is_name_char(ps->s[ps->p + n]);
}

static int parse_or(parser *ps);
static int enter(parser *ps);

static int describe_here(parser *ps, const char *expected)
{
    char c = ps->s[ps->p];
    if (c == '\0')
        return fail(ps, ps->p, "expected %s, found the end of the expression",
                    expected);
    return fail(ps, ps->p, "expected %s, found '%c'", expected, c);
}

static int parse_primary(parser *ps)
{
    skip_ws(ps);
    int pos = ps->p;
    char c = ps->s[pos];
    if (isdigit((unsigned char)c)) {
        int64_t v = 0;
        while (isdigit((unsigned char)ps->s[ps->p])) {
            if (__builtin_mul_overflow(v, 10, &v) ||
                __builtin_add_overflow(v, ps->s[ps->p] - '0', &v))
                return fail(ps, pos, "integer too large for 64 bits");
            ps->p++;
        }
        if (is_name_char(ps->s[ps->p]))
            return fail(ps, ps->p, "expected an operator after the number");
        return add_node(ps, N_CONST, -1, -1, v, pos);
    }
    if (c == '(') {
        if (enter(ps) < 0)
            return -1;
        ps->p++;
        int r = parse_or(ps);
        ps->depth--;
        if (r < 0)
            return -1;
        skip_ws(ps);
        if (ps->s[ps->p] != ')')
            return describe_here(ps, "')'");
        ps->p++;
        return r;
    }
    if (is_name_start(c)) {
        int end = pos;
        while (is_name_char(ps->s[end]))
            end++;
        size_t len = (size_t)(end - pos);
        if (at_word(ps, "true") || at_word(ps, "false")) {
            ps->p = end;
            return add_node(ps, N_CONST, -1, -1, c == 't', pos);
        }
        if (at_word(ps, "min") || at_word(ps, "max")) {
            nkind k = ps->s[pos + 1] == 'i' ? N_MIN : N_MAX;
            ps->p = end;
            skip_ws(ps);
            if (ps->s[ps->p] != '(')
                return describe_here(ps, "'(' after min/max");
            if (enter(ps) < 0) /* arguments nest like parentheses */
                return -1;
            ps->p++;
            int acc = parse_or(ps);
            if (acc < 0)
                return -1;
            skip_ws(ps);
            while (ps->s[ps->p] == ',') {
                ps->p++;
                int r = parse_or(ps);
                if (r < 0)
                    return -1;
                acc = add_node(ps, k, acc, r, 0, pos);
                if (acc < 0)
                    return -1;
                skip_ws(ps);
            }
            ps->depth--;
            if (ps->s[ps->p] != ')')
                return describe_here(ps, "',' or ')'");
            ps->p++;
            return acc;
        }
        if (at_word(ps, "and") || at_word(ps, "or") || at_word(ps, "not"))
            return fail(ps, pos, "expected an operand, found '%.*s'",
                        (int)len, ps->s + pos);
        int slot = ps->lookup ? ps->lookup(ps->ctx, ps->s + pos, len) : -1;
        if (slot < 0)
            return fail(ps, pos,
                        "unknown name '%.*s' (expected a parameter, an index "
                        "letter of the pattern or a device limit)",
                        (int)len, ps->s + pos);
        ps->p = end;
        return add_node(ps, N_VAR, -1, -1, slot, pos);
    }
    return describe_here(ps, "a number, a name or '('");
}

static int enter(parser *ps)
{
    if (++ps->depth > ET_EXPR_MAX_DEPTH)
        return fail(ps, ps->p, "expression nested too deeply (more than %d)",
                    ET_EXPR_MAX_DEPTH);
    return 0;
}

static int parse_unary(parser *ps)
{
    skip_ws(ps);
    if (ps->s[ps->p] != '-')
        return parse_primary(ps);
    if (enter(ps) < 0)
        return -1;
    int pos = ps->p++;
    int a = parse_unary(ps);
    ps->depth--;
    return a < 0 ? -1 : add_node(ps, N_NEG, a, -1, 0, pos);
}

static int parse_term(parser *ps)
{
    int a = parse_unary(ps);
    while (a >= 0) {
        skip_ws(ps);
        char c = ps->s[ps->p];
        nkind k = c == '*' ? N_MUL : c == '/' ? N_DIV : c == '%' ? N_MOD : N_CONST;
        if (k == N_CONST)
            break;
        int pos = ps->p++;
        int b = parse_unary(ps);
        if (b < 0)
            return -1;
        a = add_node(ps, k, a, b, 0, pos);
    }
    return a;
}

static int parse_sum(parser *ps)
{
    int a = parse_term(ps);
    while (a >= 0) {
        skip_ws(ps);
        char c = ps->s[ps->p];
        if (c != '+' && c != '-')
            break;
        int pos = ps->p++;
        int b = parse_term(ps);
        if (b < 0)
            return -1;
        a = add_node(ps, c == '+' ? N_ADD : N_SUB, a, b, 0, pos);
    }
    return a;
}

/* Length of the comparison operator at the cursor (0 if none). */
static int cmp_at(parser *ps, nkind *k)
{
    const char *s = ps->s + ps->p;
    if (s[0] == '<' && s[1] == '=') { *k = N_LE; return 2; }
    if (s[0] == '>' && s[1] == '=') { *k = N_GE; return 2; }
    if (s[0] == '=' && s[1] == '=') { *k = N_EQ; return 2; }
    if (s[0] == '!' && s[1] == '=') { *k = N_NE; return 2; }
    if (s[0] == '<') { *k = N_LT; return 1; }
    if (s[0] == '>') { *k = N_GT; return 1; }
    return 0;
}

static int parse_cmp(parser *ps)
{
    int a = parse_sum(ps);
    if (a < 0)
        return -1;
    skip_ws(ps);
    nkind k;
    int len = cmp_at(ps, &k);
    if (len == 0) {
        if (ps->s[ps->p] == '=')
            return fail(ps, ps->p, "expected '==' for equality, found '='");
        return a;
    }
    int pos = ps->p;
    ps->p += len;
    int b = parse_sum(ps);
    if (b < 0)
        return -1;
    skip_ws(ps);
    nkind k2;
    if (cmp_at(ps, &k2))
        return fail(ps, ps->p,
                    "comparisons do not chain: write 'a < b and b < c'");
    return add_node(ps, k, a, b, 0, pos);
}

static int parse_not(parser *ps)
{
    skip_ws(ps);
    if (!at_word(ps, "not"))
        return parse_cmp(ps);
    if (enter(ps) < 0)
        return -1;
    int pos = ps->p;
    ps->p += 3;
    int a = parse_not(ps);
    ps->depth--;
    return a < 0 ? -1 : add_node(ps, N_NOT, a, -1, 0, pos);
}

static int parse_and(parser *ps)
{
    int a = parse_not(ps);
    while (a >= 0) {
        skip_ws(ps);
        if (!at_word(ps, "and"))
            break;
        int pos = ps->p;
        ps->p += 3;
        int b = parse_not(ps);
        if (b < 0)
            return -1;
        a = add_node(ps, N_AND, a, b, 0, pos);
    }
    return a;
}

static int parse_or(parser *ps)
{
    int a = parse_and(ps);
    while (a >= 0) {
        skip_ws(ps);
        if (!at_word(ps, "or"))
            break;
        int pos = ps->p;
        ps->p += 2;
        int b = parse_and(ps);
        if (b < 0) {
            a = -1;
            break;
        }
        a = add_node(ps, N_OR, a, b, 0, pos);
    }
    return a;
}

static int cmp_int(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

et_status et_expr_parse(const char *text, et_expr_lookup_fn lookup, void *ctx,
                        et_expr **out, et_diag *d)
{
    *out = NULL;
    size_t len = strlen(text);
    parser *ps = calloc(1, sizeof(*ps));
    if (!ps)
        return ET_ERR_NOMEM;
    ps->s = text;
    ps->lookup = lookup;
    ps->ctx = ctx;
    ps->d = d;
    et_status st = ET_ERR_INPUT;
    if (len > ET_EXPR_MAX_TEXT) {
        fail(ps, 0, "expression longer than %d characters", ET_EXPR_MAX_TEXT);
        goto done;
    }
    skip_ws(ps);
    if (ps->s[ps->p] == '\0') {
        fail(ps, ps->p, "expected an expression, found nothing");
        goto done;
    }
    int root = parse_or(ps);
    if (root < 0)
        goto done;
    skip_ws(ps);
    if (ps->s[ps->p] != '\0') {
        fail(ps, ps->p, "expected an operator or the end, found '%c'",
             ps->s[ps->p]);
        goto done;
    }
    st = ET_ERR_NOMEM;
    et_expr *e = calloc(1, sizeof(*e));
    if (!e)
        goto done;
    e->text = strdup(text);
    e->nodes = malloc(sizeof(node) * (size_t)ps->n);
    e->slots = malloc(sizeof(int) * (size_t)ps->n);
    if (!e->text || !e->nodes || !e->slots) {
        et_expr_free(e);
        goto done;
    }
    memcpy(e->nodes, ps->nodes, sizeof(node) * (size_t)ps->n);
    e->n_nodes = ps->n;
    e->root = root;
    for (int i = 0; i < ps->n; i++)
        if (ps->nodes[i].kind == N_VAR)
            e->slots[e->n_slots++] = (int)ps->nodes[i].v;
    qsort(e->slots, (size_t)e->n_slots, sizeof(int), cmp_int);
    int w = 0;
    for (int i = 0; i < e->n_slots; i++)
        if (w == 0 || e->slots[w - 1] != e->slots[i])
            e->slots[w++] = e->slots[i];
    e->n_slots = w;
    *out = e;
    st = ET_OK;
done:
    free(ps);
    return st;
}

void et_expr_free(et_expr *e)
{
    if (!e)
        return;
    free(e->text);
    free(e->nodes);
    free(e->slots);
    free(e);
}

const char *et_expr_text(const et_expr *e)
{
    return e ? e->text : "";
}

bool et_expr_uses(const et_expr *e, int s)
{
    for (int i = 0; e && i < e->n_slots; i++)
        if (e->slots[i] == s)
            return true;
    return false;
}

int et_expr_slots(const et_expr *e, const int **slots)
{
    *slots = e ? e->slots : NULL;
    return e ? e->n_slots : 0;
}

typedef struct evaluator {
    const et_expr *e;
    const int64_t *vals;
    char *err;
    size_t cap;
} evaluator;

static et_status eval_err(evaluator *ev, const node *n, const char *what)
{
    if (ev->err && ev->cap)
        snprintf(ev->err, ev->cap, "%s at column %d of '%s'", what,
                 n->pos + 1, ev->e->text);
    return ET_ERR_INPUT;
}

static et_status eval_node(evaluator *ev, int i, int64_t *out)
{
    const node *n = &ev->e->nodes[i];
    int64_t a = 0, b = 0;
    et_status st;
    switch (n->kind) {
    case N_CONST:
        *out = n->v;
        return ET_OK;
    case N_VAR:
        *out = ev->vals[n->v];
        return ET_OK;
    case N_AND:
    case N_OR:
        if ((st = eval_node(ev, n->a, &a)) != ET_OK)
            return st;
        if ((n->kind == N_AND) == (a == 0)) {
            *out = a != 0;
            return ET_OK;
        }
        if ((st = eval_node(ev, n->b, &b)) != ET_OK)
            return st;
        *out = b != 0;
        return ET_OK;
    default:
        break;
    }
    if ((st = eval_node(ev, n->a, &a)) != ET_OK)
        return st;
    if (n->b >= 0 && (st = eval_node(ev, n->b, &b)) != ET_OK)
        return st;
    switch (n->kind) {
    case N_NEG:
        if (__builtin_sub_overflow((int64_t)0, a, out))
            return eval_err(ev, n, "overflow in '-'");
        return ET_OK;
    case N_NOT: *out = a == 0; return ET_OK;
    case N_ADD:
        if (__builtin_add_overflow(a, b, out))
            return eval_err(ev, n, "overflow in '+'");
        return ET_OK;
    case N_SUB:
        if (__builtin_sub_overflow(a, b, out))
            return eval_err(ev, n, "overflow in '-'");
        return ET_OK;
    case N_MUL:
        if (__builtin_mul_overflow(a, b, out))
            return eval_err(ev, n, "overflow in '*'");
        return ET_OK;
    case N_DIV:
    case N_MOD:
        if (b == 0)
            return eval_err(ev, n, n->kind == N_DIV ? "division by zero"
                                                    : "modulo by zero");
        if (a == INT64_MIN && b == -1)
            return eval_err(ev, n, "overflow in division");
        *out = n->kind == N_DIV ? a / b : a % b;
        return ET_OK;
    case N_LT: *out = a < b; return ET_OK;
    case N_LE: *out = a <= b; return ET_OK;
    case N_GT: *out = a > b; return ET_OK;
    case N_GE: *out = a >= b; return ET_OK;
    case N_EQ: *out = a == b; return ET_OK;
    case N_NE: *out = a != b; return ET_OK;
    case N_MIN: *out = a < b ? a : b; return ET_OK;
    case N_MAX: *out = a > b ? a : b; return ET_OK;
    default:
        return eval_err(ev, n, "internal error: bad node");
    }
}

et_status et_expr_eval(const et_expr *e, const int64_t *vals, int64_t *out,
                       char *err, size_t cap)
{
    evaluator ev = {e, vals, err, cap};
    int64_t v = 0;
    et_status st = eval_node(&ev, e->root, &v);
    if (st == ET_OK)
        *out = v;
    return st;
}

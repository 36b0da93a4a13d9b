/*
 * campaign_file.c - the campaign file (campaign.h): a YAML list of
 * problems loaded and checked (libyaml document API; marks are 0-based,
 * every position reported here is 1-based):
 *
 *   campaign := '[' problem* ']'            (a block or flow sequence)
 *   problem  := '{' key ':' value (',' key ':' value)* '}'
 *   key      := einsum | shape | tune_at | dtype | batch | space | budget
 *             | search | time-limit | seed | race
 *   einsum, shape: required; shape a "x=4,i=8" text or a mapping {x: 4};
 *   an open axis as on the command line ("x=*,i=8", or {x: "*"}: a bare
 *   * is YAML's alias); tune_at: "x=4096", the open axis' tune-at size
 *   (as --tune-at; refused without an open axis);
 *   dtype: "f32" or "f32,f64" (default f64); batch: a batched einsum's
 *   rows, "u,Dr; u,Ds" (as --batch); space: a space file, relative
 *   to the campaign file's directory (default the built-in action pool);
 *   budget: 1..1000000 (default 100); search: beam, random or grid;
 *   time-limit: seconds > 0; seed: >= 0; race: 0..8 (0: no final race).
 *
 * Every problem (einsum, sizes, dtypes) and space is checked when the
 * file is loaded, so that a campaign never stops half way on a typo.
 */
#include "tune/campaign.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#define MAX_FILE (1 << 20)

typedef struct loader {
    const char *file;
    yaml_document_t doc;
    et_diag *d;
} loader;

static et_status err_lc(loader *L, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static et_status err_lc(loader *L, int line, int col, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    et_diag *d = L->d;
    d->status = ET_ERR_INPUT;
    d->input = ET_INPUT_FILE;
    d->line = line;
    d->col = col;
    d->pos = -1;
    snprintf(d->file, sizeof d->file, "%s", L->file);
    snprintf(d->msg, sizeof d->msg, "%.200s:%d:%d: %s", L->file, line, col,
             what);
    return ET_ERR_INPUT;
}

#define ERR_AT(L, n, ...)                                                   \
    err_lc(L, (int)(n)->start_mark.line + 1, (int)(n)->start_mark.column + 1, \
           __VA_ARGS__)

static yaml_node_t *node(loader *L, int i)
{
    return yaml_document_get_node(&L->doc, i);
}

/* d gets status st, input in and msg; returns st. */
static et_status fail(et_diag *d, et_status st, et_input in, const char *msg)
{
    d->status = st;
    d->input = in;
    snprintf(d->msg, sizeof d->msg, "%s", msg);
    return st;
}

/* A diagnostic for a new check: status ET_OK, pos -1. */
static void diag_clear(et_diag *d)
{
    memset(d, 0, sizeof *d);
    d->pos = -1;
}

/* The scalar text of n, or an error naming what. */
static et_status scalar(loader *L, yaml_node_t *n, const char *what,
                        const char **out)
{
    *out = "";
    if (n->type != YAML_SCALAR_NODE)
        return ERR_AT(L, n, "%s must be a plain value", what);
    *out = (const char *)n->data.scalar.value;
    return ET_OK;
}

/* A whole number in [lo, hi]. */
static et_status integer(loader *L, yaml_node_t *n, const char *what,
                         long long lo, long long hi, long long *out)
{
    const char *t;
    et_status st = scalar(L, n, what, &t);
    if (st != ET_OK)
        return st;
    char *end;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    if (errno || !*t || *end || v < lo || v > hi)
        return ERR_AT(L, n, "%s must be an integer in [%lld, %lld], not "
                      "'%.60s'", what, lo, hi, t);
    *out = v;
    return ET_OK;
}

/* shape: a text, or a mapping of index names to sizes. */
static et_status shape_of(loader *L, yaml_node_t *n, char *out, size_t cap)
{
    if (n->type == YAML_SCALAR_NODE) {
        snprintf(out, cap, "%s", (const char *)n->data.scalar.value);
        return ET_OK;
    }
    if (n->type != YAML_MAPPING_NODE)
        return ERR_AT(L, n, "shape must be a text (\"x=4,i=8\") or a mapping "
                      "({x: 4, i: 8})");
    size_t len = 0;
    out[0] = '\0';
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(L, p->key), *v = node(L, p->value);
        const char *ks, *vs;
        et_status st = scalar(L, k, "a shape's index", &ks);
        if (st == ET_OK)
            st = scalar(L, v, "a shape's size", &vs);
        if (st != ET_OK)
            return st;
        int m = snprintf(out + len, cap - len, "%s%s=%s", len ? "," : "", ks,
                         vs);
        if (m < 0 || (size_t)m >= cap - len)
            return ERR_AT(L, n, "shape too long");
        len += (size_t)m;
    }
    return ET_OK;
}

/* The directory part of path ("." when none) joined with rel, unless rel
 * is absolute. */
static void relative_to(const char *path, const char *rel, char *out,
                        size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (rel[0] == '/' || !slash)
        snprintf(out, cap, "%s", rel);
    else
        snprintf(out, cap, "%.*s/%s", (int)(slash - path), path, rel);
}

static const char *const keys[] = {"einsum", "shape",      "dtype",
                                   "space",  "budget",     "search",
                                   "time-limit", "seed", "race", "tune_at",
                                   "batch"};
enum { K_EINSUM, K_SHAPE, K_DTYPE, K_SPACE, K_BUDGET, K_SEARCH, K_TIME,
       K_SEED, K_RACE, K_TUNE_AT, K_BATCH, K_COUNT };
_Static_assert(sizeof keys / sizeof keys[0] == K_COUNT, "one name per key");

/* The values of problem index's mapping n by key (NULL: not given). */
static et_status values_of(loader *L, yaml_node_t *n, int index,
                           yaml_node_t *val[K_COUNT])
{
    if (n->type != YAML_MAPPING_NODE)
        return ERR_AT(L, n, "problem %d must be a mapping (einsum: ..., "
                      "shape: ...)", index + 1);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(L, p->key);
        const char *ks;
        et_status st = scalar(L, k, "a key", &ks);
        if (st != ET_OK)
            return st;
        int which = -1;
        for (int i = 0; i < K_COUNT; i++)
            if (strcmp(ks, keys[i]) == 0)
                which = i;
        if (which < 0)
            return ERR_AT(L, k, "unknown key '%.60s' (einsum, shape, "
                          "tune_at, dtype, batch, space, budget, search, "
                          "time-limit, seed, race)", ks);
        if (val[which])
            return ERR_AT(L, k, "'%s' given twice", ks);
        val[which] = node(L, p->value);
    }
    if (!val[K_EINSUM])
        return ERR_AT(L, n, "problem %d has no einsum", index + 1);
    if (!val[K_SHAPE])
        return ERR_AT(L, n, "problem %d has no shape", index + 1);
    return ET_OK;
}

/* The texts and numbers of cp from val: einsum, shape, dtype, budget,
 * search, time-limit, seed, race. */
static et_status fields_of(loader *L, yaml_node_t *const val[K_COUNT],
                           campaign_problem *cp)
{
    const char *t;
    et_status st = scalar(L, val[K_EINSUM], "einsum", &t);
    if (st != ET_OK)
        return st;
    snprintf(cp->einsum, sizeof cp->einsum, "%s", t);
    if ((st = shape_of(L, val[K_SHAPE], cp->shape, sizeof cp->shape)) !=
        ET_OK)
        return st;
    if (val[K_DTYPE]) {
        if ((st = scalar(L, val[K_DTYPE], "dtype", &t)) != ET_OK)
            return st;
        snprintf(cp->dtype, sizeof cp->dtype, "%s", t);
    }
    long long v;
    if (val[K_BUDGET]) {
        if ((st = integer(L, val[K_BUDGET], "budget", 1, 1000000, &v)) !=
            ET_OK)
            return st;
        cp->budget = (int)v;
    }
    if (val[K_SEARCH]) {
        if ((st = scalar(L, val[K_SEARCH], "search", &t)) != ET_OK)
            return st;
        if (strcmp(t, "beam") && strcmp(t, "random") && strcmp(t, "grid"))
            return ERR_AT(L, val[K_SEARCH], "search must be beam, random or "
                          "grid, not '%.40s'", t);
        snprintf(cp->search, sizeof cp->search, "%s", t);
    }
    if (val[K_TIME]) {
        if ((st = scalar(L, val[K_TIME], "time-limit", &t)) != ET_OK)
            return st;
        char *end;
        errno = 0;
        cp->time_limit_s = strtod(t, &end);
        if (errno || !*t || *end || !(cp->time_limit_s > 0) ||
            !isfinite(cp->time_limit_s))
            return ERR_AT(L, val[K_TIME], "time-limit must be a positive "
                          "number of seconds, not '%.40s'", t);
    }
    if (val[K_SEED]) {
        if ((st = integer(L, val[K_SEED], "seed", 0, LLONG_MAX, &v)) != ET_OK)
            return st;
        cp->seed = (uint64_t)v;
    }
    cp->race = 3;
    if (val[K_RACE]) {
        if ((st = integer(L, val[K_RACE], "race", 0, 8, &v)) != ET_OK)
            return st;
        cp->race = (int)v;
    }
    return ET_OK;
}

/* cp's einsum from its einsum, shape and dtype texts (cp->e allocated
 * even when they are refused); pd says why not. */
/* batch: the rows of a batched einsum (einsum.h), applied to cp->e. */
static et_status batch_of(loader *L, yaml_node_t *v, campaign_problem *cp)
{
    const char *t;
    et_status st = scalar(L, v, "batch", &t);
    if (st != ET_OK)
        return st;
    snprintf(cp->batch, sizeof cp->batch, "%s", t);
    et_diag pd;
    diag_clear(&pd);
    et_einsum *e = malloc(sizeof *e);
    if (!e)
        return ERR_AT(L, v, "out of memory");
    st = et_einsum_batch_spec(cp->e, t, NULL, e, &pd);
    if (st == ET_OK)
        *cp->e = *e;
    free(e);
    if (st == ET_ERR_NOMEM)
        return ERR_AT(L, v, "out of memory");
    return st == ET_OK ? ET_OK : ERR_AT(L, v, "batch: %s", pd.msg);
}

static et_status einsum_of(campaign_problem *cp, et_diag *pd)
{
    diag_clear(pd);
    /* "" would read as the einsum "->" of one scalar operand */
    if (!cp->einsum[strspn(cp->einsum, " \t\n")]) {
        pd->pos = 0;
        return fail(pd, ET_ERR_INPUT, ET_INPUT_EINSUM,
                    "the einsum is empty (\"ij,jk->ik\")");
    }
    cp->e = calloc(1, sizeof *cp->e);
    if (!cp->e) {
        return fail(pd, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    }
    return et_einsum_from_strings(cp->einsum, cp->shape,
                                  cp->dtype[0] ? cp->dtype : NULL, cp->e, pd);
}

/* cp's space: the file val names (relative to the campaign's), else the
 * built-in one. */
static et_status space_of(loader *L, yaml_node_t *val, campaign_problem *cp)
{
    const char *t;
    et_status st;
    if (!val) {
        diag_clear(L->d);
        return et_space_load_text(et_builtin_space_yaml,
                                  strlen(et_builtin_space_yaml),
                                  "<built-in space>", &cp->space, L->d);
    }
    if ((st = scalar(L, val, "space", &t)) != ET_OK)
        return st;
    snprintf(cp->space_given, sizeof cp->space_given, "%s", t);
    relative_to(L->file, t, cp->space_path, sizeof cp->space_path);
    et_diag sd;
    memset(&sd, 0, sizeof sd);
    st = et_space_load(cp->space_path, &cp->space, &sd);
    if (st == ET_OK)
        return ET_OK;
    if (st == ET_ERR_IO)
        return ERR_AT(L, val, "space %.400s: %s", cp->space_path, sd.msg);
    *L->d = sd;
    L->d->status = st;
    L->d->input = ET_INPUT_SPACE;
    if (!L->d->file[0])
        snprintf(L->d->file, sizeof L->d->file, "%.511s", cp->space_path);
    return st;
}

/* One problem from its mapping n. */
static et_status load_problem(loader *L, yaml_node_t *n, int index,
                              campaign_problem *cp)
{
    memset(cp, 0, sizeof *cp);
    cp->line = (int)n->start_mark.line + 1;
    cp->col = (int)n->start_mark.column + 1;
    cp->budget = 100;
    snprintf(cp->search, sizeof cp->search, "beam");
    yaml_node_t *val[K_COUNT] = {NULL};
    et_status st = values_of(L, n, index, val);
    if (st == ET_OK)
        st = fields_of(L, val, cp);
    if (st != ET_OK)
        return st;
    /* the problem itself, checked now */
    et_diag pd;
    if (einsum_of(cp, &pd) != ET_OK) {
        yaml_node_t *at = pd.input == ET_INPUT_SHAPE   ? val[K_SHAPE]
                          : pd.input == ET_INPUT_DTYPE ? val[K_DTYPE]
                                                       : val[K_EINSUM];
        if (!at)
            at = n;
        return ERR_AT(L, at, "%s", pd.msg);
    }
    if (val[K_TUNE_AT]) {
        const char *t;
        if ((st = scalar(L, val[K_TUNE_AT], "tune_at", &t)) != ET_OK)
            return st;
        snprintf(cp->tune_at, sizeof cp->tune_at, "%s", t);
        diag_clear(&pd);
        if (et_einsum_tune_at(cp->e, t, &pd) != ET_OK)
            return ERR_AT(L, val[K_TUNE_AT], "tune_at: %s", pd.msg);
    }
    if (val[K_BATCH] && (st = batch_of(L, val[K_BATCH], cp)) != ET_OK)
        return st;
    if (!cp->dtype[0])
        snprintf(cp->dtype, sizeof cp->dtype, "f64");
    if ((st = space_of(L, val[K_SPACE], cp)) != ET_OK)
        return st;
    /* what the search would refuse, said here with the file's position */
    if (!strcmp(cp->search, "grid") && cp->space->n_actions > 0 &&
        cp->space->max_depth > 2)
        return ERR_AT(L, val[K_SEARCH], "grid search over an action pool "
                      "needs max_depth <= 2 (space '%s' has %d); use beam "
                      "or random", cp->space->name, cp->space->max_depth);
    return ET_OK;
}

void campaign_free(et_campaign *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++) {
        free(c->p[i].e);
        et_space_free(c->p[i].space);
    }
    free(c->p);
    free(c);
}

/* The problems of the document L holds into c. */
static et_status load_problems(loader *L, et_campaign *c)
{
    yaml_node_t *root = yaml_document_get_root_node(&L->doc);
    if (!root)
        return err_lc(L, 1, 1, "no problems: the file is empty (a list of "
                      "problems, each with einsum and shape)");
    if (root->type != YAML_SEQUENCE_NODE)
        return ERR_AT(L, root, "a campaign is a list of problems (- einsum: "
                      "..., shape: ...)");
    int n = (int)(root->data.sequence.items.top -
                  root->data.sequence.items.start);
    et_status st = ET_OK;
    if (n == 0)
        st = ERR_AT(L, root, "no problems in the list");
    c->p = n > 0 ? calloc((size_t)n, sizeof *c->p) : NULL;
    if (n > 0 && !c->p)
        st = fail(L->d, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    for (int i = 0; i < n && st == ET_OK; i++) {
        st = load_problem(L, node(L, root->data.sequence.items.start[i]), i,
                          &c->p[i]);
        c->n = i + 1; /* freed with the campaign, even half made */
    }
    return st;
}

/* The YAML document of text (len bytes) into L->doc, then c's problems. */
static et_status parse(loader *L, const char *text, size_t len,
                       et_campaign *c)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return fail(L->d, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    et_status st = ET_OK;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &L->doc)) {
        if (parser.error == YAML_MEMORY_ERROR) {
            st = fail(L->d, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        } else {
            char ctx[160] = "";
            if (parser.context)
                snprintf(ctx, sizeof ctx, " (%s started at %d:%d)",
                         parser.context, (int)parser.context_mark.line + 1,
                         (int)parser.context_mark.column + 1);
            st = err_lc(L, (int)parser.problem_mark.line + 1,
                        (int)parser.problem_mark.column + 1,
                        "YAML syntax error: %s%s",
                        parser.problem ? parser.problem : "unknown problem",
                        ctx);
        }
        yaml_parser_delete(&parser);
        return st;
    }
    st = load_problems(L, c);
    yaml_document_delete(&L->doc);
    yaml_parser_delete(&parser);
    return st;
}

et_status campaign_load(const char *path, et_campaign **out, et_diag *d)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        char why[sizeof d->msg];
        snprintf(why, sizeof why, "cannot read campaign %s: %s", path,
                 strerror(errno));
        snprintf(d->file, sizeof d->file, "%s", path);
        return fail(d, ET_ERR_IO, ET_INPUT_FILE, why);
    }
    char *text = malloc(MAX_FILE + 1);
    size_t len = text ? fread(text, 1, MAX_FILE + 1, f) : 0;
    fclose(f);
    if (!text)
        return fail(d, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    loader L;
    memset(&L, 0, sizeof L);
    L.file = path;
    L.d = d;
    if (len > MAX_FILE) {
        free(text);
        return err_lc(&L, 1, 1, "larger than %d bytes", MAX_FILE);
    }
    et_campaign *c = calloc(1, sizeof *c);
    if (!c) {
        free(text);
        return fail(d, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    }
    snprintf(c->path, sizeof c->path, "%s", path);
    et_status st = parse(&L, text, len, c);
    free(text);
    if (st != ET_OK) {
        campaign_free(c);
        return st;
    }
    *out = c;
    return ET_OK;
}

/*
 * campaign.c - et_campaign_*: a list of problems tuned in one go
 * (`eintune campaign FILE`, docs/scale-out.md).
 *
 * The file, a YAML list (libyaml document API; marks are 0-based, every
 * position reported here is 1-based):
 *
 *   campaign := '[' problem* ']'            (a block or flow sequence)
 *   problem  := '{' key ':' value (',' key ':' value)* '}'
 *   key      := einsum | shape | tune_at | dtype | space | budget
 *             | search | time-limit | seed | race
 *   einsum, shape: required; shape a "x=4,i=8" text or a mapping {x: 4};
 *   an open axis as on the command line ("x=*,i=8", or {x: "*"}: a bare
 *   * is YAML's alias); tune_at: "x=4096", the open axis' tune-at size
 *   (as --tune-at; refused without an open axis);
 *   dtype: "f32" or "f32,f64" (default f64); space: a space file, relative
 *   to the campaign file's directory (default the built-in action pool);
 *   budget: 1..1000000 (default 100); search: beam, random or grid;
 *   time-limit: seconds > 0; seed: >= 0; race: 0..8 (0: no final race).
 *
 * Every problem (einsum, sizes, dtypes) and space is checked when the
 * file is loaded, so that a campaign never stops half way on a typo.
 *
 * Resuming: a problem tuned to its end is recorded in the database
 * (campaign_results: its result under the einsum, the device and the
 * problem's key, the rest of what defines it); a campaign run again
 * answers those from the database and times nothing for them, and tunes
 * the others, whose trials the database answers as far as they got.
 *
 * Under MPI (more than one rank; campaign_mpi.c) rank 0 owns the database
 * and hands problems out one at a time to whichever rank asks; each other
 * rank tunes its problem on its own device (campaign_mpi.c says why).
 */
#include "api/api_impl.h"
#include "api/campaign_impl.h"

#include "base/clock.h"
#include "measure/remote.h"
#include "spaces/space.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaml.h>

#define MAX_FILE (1 << 20)

/* ---- loading ------------------------------------------------------------ */

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
                                   "time-limit", "seed", "race", "tune_at"};
enum { K_EINSUM, K_SHAPE, K_DTYPE, K_SPACE, K_BUDGET, K_SEARCH, K_TIME,
       K_SEED, K_RACE, K_TUNE_AT, K_COUNT };
_Static_assert(sizeof keys / sizeof keys[0] == K_COUNT, "one name per key");

/* One problem from its mapping n. */
static et_status load_problem(loader *L, yaml_node_t *n, int index,
                              campaign_problem *cp)
{
    memset(cp, 0, sizeof *cp);
    cp->line = (int)n->start_mark.line + 1;
    cp->col = (int)n->start_mark.column + 1;
    cp->budget = 100;
    snprintf(cp->search, sizeof cp->search, "beam");
    if (n->type != YAML_MAPPING_NODE)
        return ERR_AT(L, n, "problem %d must be a mapping (einsum: ..., "
                      "shape: ...)", index + 1);
    yaml_node_t *val[K_COUNT] = {NULL};
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
                          "tune_at, dtype, space, budget, search, "
                          "time-limit, seed, race)", ks);
        if (val[which])
            return ERR_AT(L, k, "'%s' given twice", ks);
        val[which] = node(L, p->value);
    }
    if (!val[K_EINSUM])
        return ERR_AT(L, n, "problem %d has no einsum", index + 1);
    if (!val[K_SHAPE])
        return ERR_AT(L, n, "problem %d has no shape", index + 1);
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
    /* the problem itself, checked now */
    et_diag pd;
    memset(&pd, 0, sizeof pd);
    if (et_problem_init(cp->einsum, cp->shape, cp->dtype[0] ? cp->dtype : NULL,
                        &cp->p, &pd) != ET_OK) {
        yaml_node_t *at = pd.input == ET_INPUT_SHAPE   ? val[K_SHAPE]
                          : pd.input == ET_INPUT_DTYPE ? val[K_DTYPE]
                                                       : val[K_EINSUM];
        if (!at)
            at = n;
        return ERR_AT(L, at, "%s", pd.msg);
    }
    if (val[K_TUNE_AT]) {
        if ((st = scalar(L, val[K_TUNE_AT], "tune_at", &t)) != ET_OK)
            return st;
        snprintf(cp->tune_at, sizeof cp->tune_at, "%s", t);
        if (et_problem_set_tune_at(cp->p, t, &pd) != ET_OK)
            return ERR_AT(L, val[K_TUNE_AT], "tune_at: %s", pd.msg);
    }
    if (!cp->dtype[0])
        snprintf(cp->dtype, sizeof cp->dtype, "f64");
    if (val[K_SPACE]) {
        if ((st = scalar(L, val[K_SPACE], "space", &t)) != ET_OK)
            return st;
        snprintf(cp->space_given, sizeof cp->space_given, "%s", t);
        relative_to(L->file, t, cp->space_path, sizeof cp->space_path);
        et_diag sd;
        memset(&sd, 0, sizeof sd);
        st = et_space_load(cp->space_path, &cp->space, &sd);
        if (st != ET_OK) {
            if (st == ET_ERR_IO)
                return ERR_AT(L, val[K_SPACE], "space %.400s: %s",
                              cp->space_path, sd.msg);
            *L->d = sd;
            L->d->status = st;
            L->d->input = ET_INPUT_SPACE;
            if (!L->d->file[0])
                snprintf(L->d->file, sizeof L->d->file, "%.511s",
                         cp->space_path);
            return st;
        }
    } else if ((st = et_space_builtin(&cp->space, L->d)) != ET_OK) {
        return st;
    }
    /* what the search would refuse, said here with the file's position */
    if (!strcmp(cp->search, "grid") && cp->space->n_actions > 0 &&
        cp->space->max_depth > 2)
        return ERR_AT(L, val[K_SEARCH], "grid search over an action pool "
                      "needs max_depth <= 2 (space '%s' has %d); use beam "
                      "or random", et_space_name(cp->space),
                      cp->space->max_depth);
    return ET_OK;
}

void et_campaign_free(et_campaign *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++) {
        et_problem_free(c->p[i].p);
        et_space_free(c->p[i].space);
    }
    free(c->p);
    free(c);
}

et_status et_campaign_load(const char *path, et_campaign **out,
                           et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, path, "path");
    FILE *f = fopen(path, "rb");
    if (!f) {
        et_status st = api_fail(diag, ET_ERR_IO, ET_INPUT_FILE,
                                "cannot read campaign %s: %s", path,
                                strerror(errno));
        snprintf(diag->file, sizeof diag->file, "%s", path);
        return st;
    }
    char *text = malloc(MAX_FILE + 1);
    size_t len = text ? fread(text, 1, MAX_FILE + 1, f) : 0;
    fclose(f);
    if (!text)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    loader L;
    memset(&L, 0, sizeof L);
    L.file = path;
    L.d = diag;
    if (len > MAX_FILE) {
        free(text);
        return err_lc(&L, 1, 1, "larger than %d bytes", MAX_FILE);
    }
    et_campaign *c = calloc(1, sizeof *c);
    yaml_parser_t parser;
    if (!c || !yaml_parser_initialize(&parser)) {
        free(text);
        free(c);
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    }
    snprintf(c->path, sizeof c->path, "%s", path);
    et_status st = ET_OK;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &L.doc)) {
        if (parser.error == YAML_MEMORY_ERROR) {
            st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        } else {
            char ctx[160] = "";
            if (parser.context)
                snprintf(ctx, sizeof ctx, " (%s started at %d:%d)",
                         parser.context, (int)parser.context_mark.line + 1,
                         (int)parser.context_mark.column + 1);
            st = err_lc(&L, (int)parser.problem_mark.line + 1,
                        (int)parser.problem_mark.column + 1,
                        "YAML syntax error: %s%s",
                        parser.problem ? parser.problem : "unknown problem",
                        ctx);
        }
        yaml_parser_delete(&parser);
        free(text);
        et_campaign_free(c);
        return st;
    }
    yaml_node_t *root = yaml_document_get_root_node(&L.doc);
    if (!root) {
        st = err_lc(&L, 1, 1, "no problems: the file is empty (a list of "
                    "problems, each with einsum and shape)");
    } else if (root->type != YAML_SEQUENCE_NODE) {
        st = ERR_AT(&L, root, "a campaign is a list of problems (- einsum: "
                    "..., shape: ...)");
    } else {
        int n = (int)(root->data.sequence.items.top -
                      root->data.sequence.items.start);
        if (n == 0)
            st = ERR_AT(&L, root, "no problems in the list");
        c->p = n > 0 ? calloc((size_t)n, sizeof *c->p) : NULL;
        if (n > 0 && !c->p)
            st = api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
        for (int i = 0; i < n && st == ET_OK; i++) {
            st = load_problem(&L, node(&L, root->data.sequence.items.start[i]),
                              i, &c->p[i]);
            c->n = i + 1; /* freed with the campaign, even half made */
        }
    }
    yaml_document_delete(&L.doc);
    yaml_parser_delete(&parser);
    free(text);
    if (st != ET_OK) {
        et_campaign_free(c);
        return st;
    }
    *out = c;
    return ET_OK;
}

int et_campaign_n_problems(const et_campaign *c)
{
    return c ? c->n : 0;
}

/* ---- results ------------------------------------------------------------ */

void campaign_problem_key(const campaign_problem *cp, char *out, size_t cap)
{
    snprintf(out, cap,
             "einsum=%s shape=%s dtype=%s space=%s:%016llx search=%s "
             "budget=%d time_limit=%.17g seed=%llu race=%d%s%s",
             cp->einsum, cp->shape, cp->dtype, et_space_name(cp->space),
             (unsigned long long)cp->space->hash, cp->search, cp->budget,
             cp->time_limit_s, (unsigned long long)cp->seed, cp->race,
             cp->tune_at[0] ? " tune_at=" : "", cp->tune_at);
}

void campaign_tune_options(const campaign_problem *cp,
                           const et_campaign_options *o,
                           et_tune_options *to)
{
    memset(to, 0, sizeof *to);
    to->device = o->device;
    to->db = o->db;
    to->space_obj = cp->space;
    to->search = cp->search;
    to->budget = cp->budget;
    to->time_limit_s = cp->time_limit_s;
    to->seed = cp->seed;
    to->retime = o->retime;
    to->race = cp->race > 0 ? cp->race : -1;
    to->log = o->log;
    to->log_arg = o->log_arg;
    to->cancel = o->cancel;
    /* no seeds: a campaign's problems give the same trials with and
     * without MPI (where the database is rank 0's alone) */
    to->no_seeding = 1;
}

static cJSON *pair(double a, double b)
{
    cJSON *j = cJSON_CreateArray();
    cJSON_AddItemToArray(j, cJSON_CreateNumber(isfinite(a) ? a : 0));
    cJSON_AddItemToArray(j, cJSON_CreateNumber(isfinite(b) ? b : 0));
    return j;
}

/* A tuning run's summary as the JSON object kept in the database. */
static cJSON *summary_json(const et_tune_summary *s)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "found", s->found);
    if (s->found) {
        cJSON *b = cJSON_AddObjectToObject(j, "best");
        cJSON_AddStringToObject(b, "opts", s->opts);
        cJSON_AddStringToObject(b, "kernel", s->kernel);
        cJSON_AddNumberToObject(b, "time_s", s->time_s);
        cJSON_AddItemToObject(b, "ci95_s", pair(s->ci95_s[0], s->ci95_s[1]));
        cJSON_AddNumberToObject(b, "gops", s->gops);
        cJSON_AddNumberToObject(b, "speedup", s->speedup);
        cJSON_AddItemToObject(b, "speedup_ci95",
                              pair(s->speedup_ci95[0], s->speedup_ci95[1]));
        cJSON_AddBoolToObject(b, "raced", s->raced);
        cJSON_AddStringToObject(b, "time_source", s->time_source);
        cJSON_AddNumberToObject(b, "search_time_s", s->search_time_s);
        cJSON_AddItemToObject(b, "search_ci95_s",
                              pair(s->search_ci95_s[0], s->search_ci95_s[1]));
    } else {
        cJSON_AddNullToObject(j, "best");
    }
    cJSON_AddNumberToObject(j, "baseline_s", s->baseline_s);
    cJSON_AddNumberToObject(j, "evaluations", s->evaluations);
    cJSON_AddNumberToObject(j, "cached", s->cached);
    cJSON_AddNumberToObject(j, "duplicates", s->duplicates);
    cJSON_AddNumberToObject(j, "failures", s->failures);
    cJSON_AddNumberToObject(j, "cut_at_bound", s->cut_at_bound);
    cJSON_AddStringToObject(j, "stop_reason", s->stop_reason);
    cJSON_AddNumberToObject(j, "elapsed_s", s->elapsed_s);
    return j;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void str(const cJSON *o, const char *k, char *out, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    snprintf(out, cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static double num_at(const cJSON *a, int i)
{
    const cJSON *v = cJSON_GetArrayItem(a, i);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void pair_of(const cJSON *o, const char *k, double out[2])
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    out[0] = cJSON_IsArray(v) ? num_at(v, 0) : 0;
    out[1] = cJSON_IsArray(v) ? num_at(v, 1) : 0;
}

char *campaign_summary_text(const et_tune_summary *s)
{
    cJSON *j = summary_json(s);
    char *t = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return t;
}

bool campaign_summary_parse(const char *text, et_tune_summary *s)
{
    memset(s, 0, sizeof *s);
    cJSON *j = cJSON_Parse(text);
    if (!j)
        return false;
    s->found = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "found"));
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "best");
    if (s->found && cJSON_IsObject(b)) {
        str(b, "opts", s->opts, sizeof s->opts);
        str(b, "kernel", s->kernel, sizeof s->kernel);
        s->time_s = num(b, "time_s");
        pair_of(b, "ci95_s", s->ci95_s);
        s->gops = num(b, "gops");
        s->speedup = num(b, "speedup");
        pair_of(b, "speedup_ci95", s->speedup_ci95);
        s->raced = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "raced"));
        str(b, "time_source", s->time_source, sizeof s->time_source);
        s->search_time_s = num(b, "search_time_s");
        pair_of(b, "search_ci95_s", s->search_ci95_s);
    }
    s->baseline_s = num(j, "baseline_s");
    s->evaluations = (int)num(j, "evaluations");
    s->cached = (int)num(j, "cached");
    s->duplicates = (int)num(j, "duplicates");
    s->failures = (int)num(j, "failures");
    s->cut_at_bound = (int)num(j, "cut_at_bound");
    str(j, "stop_reason", s->stop_reason, sizeof s->stop_reason);
    s->elapsed_s = num(j, "elapsed_s");
    cJSON_Delete(j);
    return true;
}

/* ---- the report --------------------------------------------------------- */

et_campaign_report *campaign_report_new(const et_campaign *c)
{
    et_campaign_report *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->e = calloc((size_t)c->n, sizeof *r->e);
    if (!r->e) {
        free(r);
        return NULL;
    }
    r->n = c->n;
    r->n_ranks = 1;
    snprintf(r->path, sizeof r->path, "%s", c->path);
    for (int i = 0; i < c->n; i++) {
        const campaign_problem *cp = &c->p[i];
        et_campaign_entry *e = &r->e[i];
        e->index = i;
        e->line = cp->line;
        snprintf(e->einsum, sizeof e->einsum, "%s", cp->einsum);
        snprintf(e->shape, sizeof e->shape, "%s", cp->shape);
        snprintf(e->dtype, sizeof e->dtype, "%s", cp->dtype);
        snprintf(e->space, sizeof e->space, "%s",
                 cp->space_given[0] ? cp->space_given : "builtin");
        snprintf(e->search, sizeof e->search, "%s", cp->search);
        e->budget = cp->budget;
        e->state = ET_CAMPAIGN_NOT_RUN;
    }
    return r;
}

void et_campaign_report_free(et_campaign_report *r)
{
    if (!r)
        return;
    free(r->e);
    free(r);
}

int et_campaign_report_rank(const et_campaign_report *r)
{
    return r ? r->rank : 0;
}

int et_campaign_report_n(const et_campaign_report *r)
{
    return r ? r->n : 0;
}

int et_campaign_report_entry(const et_campaign_report *r, int i,
                             et_campaign_entry *out)
{
    if (!out)
        return -1;
    if (!r || i < 0 || i >= r->n) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    *out = r->e[i];
    return 0;
}

const char *et_campaign_state_name(et_campaign_state s)
{
    static const char *const names[] = {"not run", "tuned", "database",
                                        "failed"};
    _Static_assert(sizeof names / sizeof names[0] == ET_CAMPAIGN_STATE_COUNT,
                   "one name per state");
    return (unsigned)s < ET_CAMPAIGN_STATE_COUNT ? names[s] : "?";
}

/* The counts of each state. */
static void counts(const et_campaign_report *r, int n[ET_CAMPAIGN_STATE_COUNT])
{
    memset(n, 0, sizeof(int) * ET_CAMPAIGN_STATE_COUNT);
    for (int i = 0; i < r->n; i++)
        n[r->e[i].state]++;
}

/* "2024-05-01 14:03" (local time). */
static void date_text(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !localtime_r(&tt, &tm) ||
        !strftime(buf, cap, "%Y-%m-%d %H:%M", &tm))
        snprintf(buf, cap, "an unknown date");
}

void et_campaign_report_print(const et_campaign_report *r, FILE *f)
{
    if (!r || !f)
        return;
    int n[ET_CAMPAIGN_STATE_COUNT];
    counts(r, n);
    fprintf(f, "campaign    %s: %d problem%s on %s%s; %d tuned in this run, "
               "%d from the database, %d failed, %d not run\n",
            r->path, r->n, r->n == 1 ? "" : "s", r->device,
            r->n_ranks > 1 ? " (one problem per rank)" : "",
            n[ET_CAMPAIGN_TUNED], n[ET_CAMPAIGN_FROM_DB],
            n[ET_CAMPAIGN_FAILED], n[ET_CAMPAIGN_NOT_RUN]);
    fprintf(f, "database    %s\n\n", r->db);
    fprintf(f, "%-3s %-18s %-22s %-8s %-9s%s %-28s %-30s %s\n", "#", "einsum",
            "shape", "dtype", "state", r->n_ranks > 1 ? " rank" : "",
            "best", "time ms [95 % interval]", "speed-up");
    for (int i = 0; i < r->n; i++) {
        const et_campaign_entry *e = &r->e[i];
        const et_tune_summary *s = &e->summary;
        char rank[16] = "";
        if (r->n_ranks > 1)
            snprintf(rank, sizeof rank, " %-4d", e->rank);
        char best[64], time[64] = "", sp[48] = "";
        if (e->state == ET_CAMPAIGN_FAILED || e->state == ET_CAMPAIGN_NOT_RUN)
            snprintf(best, sizeof best, "-");
        else if (!s->found)
            snprintf(best, sizeof best, "none passed");
        else
            snprintf(best, sizeof best, "%.28s",
                     s->opts[0] ? s->opts : "untransformed");
        if (s->found && e->state != ET_CAMPAIGN_FAILED) {
            snprintf(time, sizeof time, "%.4g [%.4g, %.4g]", s->time_s * 1e3,
                     s->ci95_s[0] * 1e3, s->ci95_s[1] * 1e3);
            if (s->speedup > 0)
                snprintf(sp, sizeof sp, "%.3gx%s", s->speedup,
                         s->raced ? " (race)" : "");
        }
        fprintf(f, "%-3d %-18.18s %-22.22s %-8.8s %-9s%s %-28s %-30s %s\n",
                i + 1, e->einsum, e->shape, e->dtype,
                et_campaign_state_name(e->state), rank, best, time, sp);
    }
    for (int i = 0; i < r->n; i++) {
        const et_campaign_entry *e = &r->e[i];
        if (e->state == ET_CAMPAIGN_FAILED)
            fprintf(f, "problem %d (%s:%d): %s\n", i + 1, r->path, e->line,
                    e->message);
        else if (e->state == ET_CAMPAIGN_FROM_DB) {
            char d[64];
            date_text(e->finished_at, d, sizeof d);
            fprintf(f, "problem %d: finished %s, answered from the database "
                       "(nothing timed)\n", i + 1, d);
        }
    }
}

char *et_campaign_report_json(const et_campaign_report *r)
{
    if (!r)
        return NULL;
    cJSON *doc = cJSON_CreateObject();
    if (!doc)
        return NULL;
    int n[ET_CAMPAIGN_STATE_COUNT];
    counts(r, n);
    cJSON_AddStringToObject(doc, "campaign", r->path);
    cJSON_AddStringToObject(doc, "database", r->db);
    cJSON *jd = cJSON_AddObjectToObject(doc, "device");
    cJSON_AddStringToObject(jd, "name", r->device);
    cJSON_AddStringToObject(jd, "backend", r->backend);
    cJSON_AddStringToObject(jd, "driver", r->driver);
    cJSON_AddNumberToObject(doc, "ranks", r->n_ranks);
    cJSON *jt = cJSON_AddObjectToObject(doc, "totals");
    cJSON_AddNumberToObject(jt, "problems", r->n);
    cJSON_AddNumberToObject(jt, "tuned", n[ET_CAMPAIGN_TUNED]);
    cJSON_AddNumberToObject(jt, "from_database", n[ET_CAMPAIGN_FROM_DB]);
    cJSON_AddNumberToObject(jt, "failed", n[ET_CAMPAIGN_FAILED]);
    cJSON_AddNumberToObject(jt, "not_run", n[ET_CAMPAIGN_NOT_RUN]);
    cJSON_AddNumberToObject(doc, "elapsed_s", r->elapsed_s);
    cJSON *jp = cJSON_AddArrayToObject(doc, "problems");
    for (int i = 0; i < r->n; i++) {
        const et_campaign_entry *e = &r->e[i];
        cJSON *o = (e->state == ET_CAMPAIGN_TUNED ||
                    e->state == ET_CAMPAIGN_FROM_DB)
                       ? summary_json(&e->summary)
                       : cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "index", i);
        cJSON_AddNumberToObject(o, "line", e->line);
        cJSON_AddStringToObject(o, "einsum", e->einsum);
        cJSON_AddStringToObject(o, "shape", e->shape);
        cJSON_AddStringToObject(o, "dtype", e->dtype);
        cJSON_AddStringToObject(o, "space", e->space);
        cJSON_AddStringToObject(o, "search", e->search);
        cJSON_AddNumberToObject(o, "budget", e->budget);
        cJSON_AddStringToObject(o, "state", et_campaign_state_name(e->state));
        if (r->n_ranks > 1)
            cJSON_AddNumberToObject(o, "rank", e->rank);
        if (e->finished_at > 0)
            cJSON_AddNumberToObject(o, "finished_at", (double)e->finished_at);
        if (e->state == ET_CAMPAIGN_FAILED)
            cJSON_AddStringToObject(o, "message", e->message);
        cJSON_AddItemToArray(jp, o);
    }
    char *t = cJSON_Print(doc);
    cJSON_Delete(doc);
    return t;
}

/* ---- running, one problem after another --------------------------------- */

et_status campaign_finished(et_db *db, const campaign_problem *cp,
                            int64_t device_id, et_campaign_entry *e,
                            bool *found, et_error *err)
{
    int64_t eid = 0;
    char key[2048];
    *found = false;
    campaign_problem_key(cp, key, sizeof key);
    et_status st = et_db_einsum_id(db, &cp->p->e, &eid, err);
    char *json = NULL;
    int64_t at = 0;
    if (st == ET_OK)
        st = et_db_campaign_lookup(db, eid, device_id, key, &json, &at,
                                   found, err);
    if (st == ET_OK && *found) {
        *found = campaign_summary_parse(json, &e->summary);
        e->finished_at = at;
        e->state = ET_CAMPAIGN_FROM_DB;
    }
    free(json);
    return st;
}

et_status campaign_record(et_db *db, const campaign_problem *cp,
                          int64_t device_id, et_campaign_entry *e,
                          et_error *err)
{
    int64_t eid = 0;
    char key[2048];
    campaign_problem_key(cp, key, sizeof key);
    char *json = campaign_summary_text(&e->summary);
    if (!json)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    et_status st = et_db_einsum_id(db, &cp->p->e, &eid, err);
    if (st == ET_OK)
        st = et_db_campaign_record(db, eid, device_id, key, json, err);
    free(json);
    e->finished_at = (int64_t)time(NULL);
    return st;
}

void campaign_entry_from_run(et_campaign_entry *e, et_status st,
                             const et_diag *d, const et_tune_report *rep)
{
    if (st != ET_OK) {
        e->state = ET_CAMPAIGN_FAILED;
        e->status = st;
        snprintf(e->message, sizeof e->message, "%s", d->msg);
        return;
    }
    et_tune_report_summary(rep, &e->summary);
    e->state = e->summary.cancelled ? ET_CAMPAIGN_NOT_RUN
                                    : ET_CAMPAIGN_TUNED;
}

static void describe_device(et_campaign_report *r, const et_device_info *i)
{
    snprintf(r->device, sizeof r->device, "%s", i->name);
    snprintf(r->backend, sizeof r->backend, "%s",
             et_backend_name(i->target.backend));
    snprintf(r->driver, sizeof r->driver, "%s", i->driver_version);
}

void campaign_describe_device(et_campaign_report *r, const et_device_info *i)
{
    describe_device(r, i);
}

/* The campaign in this process, one problem after another. */
static et_status run_here(const et_campaign *c, const et_campaign_options *o,
                          et_campaign_report *r, et_diag *diag)
{
    et_device *dev = NULL;
    et_db *db = NULL;
    et_error err = {{0}};
    et_status st = et_device_open_isolated(o->device, NULL, &dev, &err);
    if (st != ET_OK)
        return api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                         : ET_INPUT_NONE,
                            &err);
    describe_device(r, &dev->info);
    int64_t did = 0;
    st = et_db_open(o->db, &db, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_FILE, &err);
        if (o->db)
            snprintf(diag->file, sizeof diag->file, "%s", o->db);
        goto out;
    }
    snprintf(r->db, sizeof r->db, "%s", et_db_path(db));
    if ((st = et_db_device_id(db, &dev->info, &did, &err)) != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_NONE, &err);
        goto out;
    }
    for (int i = 0; i < c->n; i++) {
        if (o->cancel && *o->cancel)
            break;
        const campaign_problem *cp = &c->p[i];
        et_campaign_entry *e = &r->e[i];
        bool found = false;
        if (!o->retime &&
            (st = campaign_finished(db, cp, did, e, &found, &err)) != ET_OK) {
            api_fail_err(diag, st, ET_INPUT_NONE, &err);
            goto out;
        }
        if (found) {
            api_logf(o->log, o->log_arg, ET_LOG_INFO,
                     "problem %d/%d (line %d): %s %s %s: finished before, "
                     "answered from the database", i + 1, c->n, cp->line,
                     cp->einsum, cp->shape, cp->dtype);
            if (o->done)
                o->done(o->done_arg, e);
            continue;
        }
        api_logf(o->log, o->log_arg, ET_LOG_INFO,
                 "problem %d/%d (line %d): %s %s %s, space %s, %s search, "
                 "budget %d", i + 1, c->n, cp->line, cp->einsum, cp->shape,
                 cp->dtype, et_space_name(cp->space), cp->search,
                 cp->budget);
        et_tune_options to;
        campaign_tune_options(cp, o, &to);
        api_tune_env env = {false, true, dev, NULL};
        et_tune_report *rep = NULL;
        et_diag d;
        memset(&d, 0, sizeof d);
        et_status rs = api_tune_run(cp->p, &to, &env, &rep, &d);
        campaign_entry_from_run(e, rs, &d, rep);
        et_tune_report_free(rep);
        if (e->state == ET_CAMPAIGN_TUNED &&
            (st = campaign_record(db, cp, did, e, &err)) != ET_OK) {
            api_fail_err(diag, st, ET_INPUT_NONE, &err);
            goto out;
        }
        if (e->state == ET_CAMPAIGN_FAILED)
            api_logf(o->log, o->log_arg, ET_LOG_WARN, "problem %d failed: %s",
                     i + 1, e->message);
        if (o->done)
            o->done(o->done_arg, e);
    }
    st = ET_OK;
out:
    et_db_close(db);
    et_device_close(dev);
    return st;
}

et_status et_campaign_run(const et_campaign *c, const et_campaign_options *o,
                          et_campaign_report **out, et_diag *diag)
{
    const et_campaign_options defaults = {0};
    et_diag local;
    if (!diag)
        diag = &local;
    if (!o)
        o = &defaults;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, c, "c");
    et_campaign_report *r = campaign_report_new(c);
    if (!r)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    double t0 = et_now_s();
    bool scaled = false;
    et_status st = campaign_mpi_maybe(c, o, r, &scaled, diag);
    if (st == ET_OK && !scaled)
        st = run_here(c, o, r, diag);
    r->elapsed_s = et_now_s() - t0;
    if (st != ET_OK) {
        et_campaign_report_free(r);
        return st;
    }
    *out = r;
    return ET_OK;
}

/*
 * search.c - random, grid and beam searches over a bound space.
 *
 * Every proposal goes through propose(): de-duplication (a kernel seen
 * before is not evaluated again; its known time is reused where the
 * parametric beam needs it), the callback, the statistics, the best so far
 * and the stop conditions (budget, time limit, callback). With a
 * predictor (et_search_opts.predict), a beam round or a random pool is
 * built first and choose() decides which of its new kernels are proposed
 * at all; without one, the loops propose as they build. The PRNG is
 * xoshiro256** seeded by splitmix64, so a seed gives the same sequence on
 * every machine.
 */
#include "spaces/search.h"

#include "base/clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const search_names[] = {"beam", "random", "grid"};
_Static_assert(sizeof(search_names) / sizeof(search_names[0]) == ET_SEARCH_COUNT,
               "search_names must match et_search_kind");

const char *et_search_name(et_search_kind k)
{
    return (unsigned)k < ET_SEARCH_COUNT ? search_names[k] : "?";
}

int et_search_parse(const char *name, et_search_kind *out)
{
    for (int i = 0; i < ET_SEARCH_COUNT; i++)
        if (strcmp(name, search_names[i]) == 0) {
            *out = (et_search_kind)i;
            return 0;
        }
    return -1;
}

/* ---- PRNG --------------------------------------------------------------- */

typedef struct rng {
    uint64_t s[4];
} rng;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s;
    uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return res;
}

/* Uniform in [0, n), n > 0, without modulo bias. */
static uint64_t rng_below(rng *r, uint64_t n)
{
    uint64_t lim = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = rng_next(r);
    while (x >= lim);
    return x % n;
}

/* ---- hash map: key -> time ------------------------------------------------ */

typedef struct kmap {
    size_t cap, n;
    uint64_t *key;
    double *val;
    bool *used;
} kmap;

static bool kmap_find(const kmap *m, uint64_t k, double *v)
{
    if (!m->cap)
        return false;
    for (size_t i = k & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->used[i])
            return false;
        if (m->key[i] == k) {
            if (v)
                *v = m->val[i];
            return true;
        }
    }
}

static bool kmap_put(kmap *m, uint64_t k, double v)
{
    if (2 * (m->n + 1) > m->cap) {
        kmap g = {m->cap ? m->cap * 2 : 256, 0, NULL, NULL, NULL};
        g.key = malloc(g.cap * sizeof(uint64_t));
        g.val = malloc(g.cap * sizeof(double));
        g.used = calloc(g.cap, sizeof(bool));
        if (!g.key || !g.val || !g.used) {
            free(g.key);
            free(g.val);
            free(g.used);
            return false;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->used[i])
                kmap_put(&g, m->key[i], m->val[i]);
        free(m->key);
        free(m->val);
        free(m->used);
        *m = g;
    }
    size_t i = k & (m->cap - 1);
    while (m->used[i] && m->key[i] != k)
        i = (i + 1) & (m->cap - 1);
    if (!m->used[i])
        m->n++;
    m->used[i] = true;
    m->key[i] = k;
    m->val[i] = v;
    return true;
}

static void kmap_free(kmap *m)
{
    free(m->key);
    free(m->val);
    free(m->used);
    memset(m, 0, sizeof(*m));
}

/* ---- de-duplication key ----------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ULL;
    return h;
}

/* Names a kernel source uses that are not its own: the languages'
 * keywords, qualifiers and types, and the builtins that are not called
 * (those that are, like vload4 or fma, are kept by the '(' rule). */
static const char *const kept_names[] = {
    "auto", "break", "case", "char", "const", "constant", "continue",
    "default", "do", "double", "else", "enum", "extern", "float", "for",
    "global", "goto", "half", "if", "inline", "int", "kernel", "local",
    "long", "private", "register", "restrict", "return", "short", "signed",
    "size_t", "ptrdiff_t", "sizeof", "static", "struct", "switch",
    "typedef", "uchar", "uint", "ulong", "union", "unsigned", "ushort",
    "void", "volatile", "while", "bool", "true", "false", "__kernel",
    "__global", "__local", "__constant", "__private", "__attribute__",
    "__restrict__", "__global__", "__shared__", "__device__", "__half",
    "__forceinline__", "threadIdx", "blockIdx", "blockDim", "gridDim",
};

/* A vector type name: a scalar type followed by 2, 3, 4, 8 or 16. */
static bool vector_type(const char *t, size_t n)
{
    static const char *const scalars[] = {
        "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
        "float", "double", "half"};
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        size_t m = strlen(scalars[i]);
        if (n > m && !strncmp(t, scalars[i], m)) {
            const char *w = t + m;
            size_t wn = n - m;
            if ((wn == 1 && strchr("2348", w[0])) ||
                (wn == 2 && w[0] == '1' && w[1] == '6'))
                return true;
        }
    }
    return false;
}

static bool kept_name(const char *t, size_t n)
{
    bool upper = true; /* macros and constants: CLK_LOCAL_MEM_FENCE */
    for (size_t i = 0; i < n; i++)
        if (t[i] >= 'a' && t[i] <= 'z')
            upper = false;
    if (upper)
        return true;
    for (size_t i = 0; i < sizeof kept_names / sizeof kept_names[0]; i++)
        if (strlen(kept_names[i]) == n && !strncmp(kept_names[i], t, n))
            return true;
    return vector_type(t, n);
}

static bool ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident_char(char c)
{
    return ident_start(c) || (c >= '0' && c <= '9');
}

/*
 * FNV of a source up to the names it gives: comments and white space are
 * dropped, the kernel's own name becomes "$K", and every other name the
 * source introduces becomes "$N" in order of first use, so two sources
 * that differ only by consistent renaming (accv_c0 here, accv_0_c0 there)
 * hash alike. Kept as they are: keywords, types, upper-case macros,
 * member names (after '.'), and any name followed by '(' (builtins and
 * functions), so a different builtin or type is a different kernel.
 */
static uint64_t source_hash_up_to_names(uint64_t h, const char *src,
                                        const char *kname)
{
    const char **names = NULL;
    size_t *lens = NULL;
    size_t n_names = 0, cap = 0;
    size_t klen = kname ? strlen(kname) : 0;
    char prev = 0; /* the last character hashed */
    for (const char *s = src; *s;) {
        if (s[0] == '/' && s[1] == '/') {
            while (*s && *s != '\n')
                s++;
            continue;
        }
        if (s[0] == '/' && s[1] == '*') {
            const char *e = strstr(s + 2, "*/");
            s = e ? e + 2 : s + strlen(s);
            continue;
        }
        if (*s == ' ' || *s == '\t' || *s == '\r') {
            s++;
            continue;
        }
        if (*s == '\n') { /* line ends matter for preprocessor lines */
            if (prev != '\n')
                h = fnv(h, "\n", 1);
            prev = '\n';
            s++;
            continue;
        }
        if (*s == '"') {
            const char *e = s + 1;
            while (*e && *e != '"')
                e += e[0] == '\\' && e[1] ? 2 : 1;
            if (*e)
                e++;
            h = fnv(h, s, (size_t)(e - s));
            prev = '"';
            s = e;
            continue;
        }
        if (s[0] >= '0' && s[0] <= '9') { /* a number, as it is */
            const char *e = s;
            while (ident_char(*e) || *e == '.')
                e++;
            h = fnv(h, s, (size_t)(e - s));
            h = fnv(h, " ", 1);
            prev = '0';
            s = e;
            continue;
        }
        if (!ident_start(*s)) {
            h = fnv(h, s, 1);
            prev = *s++;
            continue;
        }
        const char *e = s;
        while (ident_char(*e))
            e++;
        size_t n = (size_t)(e - s);
        const char *after = e;
        while (*after == ' ' || *after == '\t')
            after++;
        char tok[32];
        if (klen && n == klen && !strncmp(s, kname, n)) {
            h = fnv(h, "$K ", 3);
        } else if (prev == '.' || *after == '(' || kept_name(s, n)) {
            h = fnv(h, s, n);
            h = fnv(h, " ", 1);
        } else {
            size_t k = 0;
            while (k < n_names && !(lens[k] == n && !strncmp(names[k], s, n)))
                k++;
            if (k == n_names) {
                if (n_names == cap) {
                    size_t nc = cap ? 2 * cap : 64;
                    const char **nn = realloc(names, nc * sizeof *nn);
                    if (nn)
                        names = nn;
                    size_t *nl = nn ? realloc(lens, nc * sizeof *nl) : NULL;
                    if (nl)
                        lens = nl;
                    if (!nn || !nl) { /* no memory: hash the name itself */
                        h = fnv(h, s, n);
                        prev = 'a';
                        s = e;
                        continue;
                    }
                    cap = nc;
                }
                names[n_names] = s;
                lens[n_names++] = n;
            }
            int m = snprintf(tok, sizeof tok, "$%zu ", k);
            h = fnv(h, tok, (size_t)m);
        }
        prev = 'a';
        s = e;
    }
    free(names);
    free(lens);
    return h;
}

uint64_t et_kernel_dedupe_key(const et_kernel *k, et_backend_kind backend)
{
    uint64_t h = 1469598103934665603ULL;
    et_rendered r;
    memset(&r, 0, sizeof(r));
    if (et_kernel_render(k, backend, NULL, &r) != ET_OK) {
        /* not renderable: the canonical opt list stands in for the source */
        char buf[2048];
        size_t n = et_opts_format(k->opts, k->n_opts, buf, sizeof(buf));
        h = fnv(h, "norender", 8);
        return fnv(h, buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
    }
    h = source_hash_up_to_names(h, r.source, r.name);
    int64_t geo[8] = {r.launch.ndim, r.launch.has_local};
    for (int i = 0; i < 3; i++) {
        geo[2 + i] = r.launch.global[i];
        geo[5 + i] = r.launch.has_local ? r.launch.local[i] : 0;
    }
    h = fnv(h, geo, sizeof(geo));
    et_rendered_free(&r);
    if (et_einsum_open_axis(&k->e) >= 0) {
        /* an open axis: the geometry above is the one at the size it is
         * tuned at; the step its size is rounded up to (the launch's
         * groups at every other size) goes in too, so that two kernels
         * meet only when they launch alike at every size */
        int64_t step = et_kernel_open_step(k);
        h = fnv(h, "open", 4);
        h = fnv(h, &step, sizeof step);
    }
    return h;
}

/* ---- the search state ----------------------------------------------------- */

typedef struct srch {
    const et_binding *b;
    const et_space *s;
    et_search_opts o;
    et_eval_fn fn;
    void *user;
    et_search_stats *st;
    rng r;
    kmap seen;
    kmap seen_seq;       /* key -> seq of the candidate that was answered */
    kmap said;           /* opts and params texts already reported */
    double t0; /* et_now_s() at the start */
    bool stop;
    long seq;
    int budget;          /* budget of the current phase (absolute count) */
    et_kernel *start;    /* base kernel + start opts */
    bool nomem;
    /* batched (et_search_run_many): candidates proposed and not yet
     * answered, handed to the callback together by flush() */
    et_eval_many_fn many;
    struct pend *pend;
    int n_pend, cap_pend;
    int n_pend_eval;     /* of which not refused (they count as answered
                            for the budget until the flush) */
    int last_slot;       /* the pending slot propose() used, -1 if none */
    bool flushed;        /* the batch was answered; batch_clear next */
    /* duplicates of a kernel waiting in the batch, told to on_duplicate
     * once it is answered (flush) */
    struct dup_later *later;
    int n_later, cap_later;
    /* seeds: their kernels (NULL: dropped), the one propose() is
     * proposing (1 + index, 0: none), whether they were proposed */
    et_kernel *seed_k[ET_SEARCH_MAX_SEEDS];
    int cur_seed;
    bool seeds_done;
    /* the fastest point answered (the actions search starts there) */
    bool has_bp;
    et_point bp;
    double bp_t;
} srch;

/* A candidate waiting in the batch; its et_candidate's pointers are set
 * at the flush (the array may move while it grows). */
typedef struct pend {
    et_candidate c;
    et_kernel *k;                /* a clone, owned; NULL when refused */
    bool has_point;
    et_point pt;
    int n_opts;
    et_opt opts[ET_MAX_OPTS];
    char opts_text[4096], params_text[1024], reason[512];
    et_eval_result r;
    double t;                    /* after the flush: its time (INFINITY
                                    for a failure or no answer) */
} pend;

/* A proposal of a kernel that waits in the batch, for on_duplicate. */
typedef struct dup_later {
    int slot;                    /* the first proposal's pending slot */
    long seq;
    uint64_t key;
    bool has_point;
    et_point pt;
    int n_opts, n_actions;
    int seed;
    et_opt opts[ET_MAX_OPTS];
    char opts_text[4096], params_text[1024];
} dup_later;

static et_backend_kind backend_of(const srch *S)
{
    return S->b ? et_binding_base(S->b)->target.backend : ET_BACKEND_OPENCL;
}

static double elapsed(const srch *S)
{
    return et_now_s() - S->t0;
}

static void set_stop(srch *S, const char *why)
{
    if (!S->stop)
        snprintf(S->st->stop_reason, sizeof(S->st->stop_reason), "%s", why);
    S->stop = true;
}

/* True when the search must stop before the next proposal. */
static bool must_stop(srch *S)
{
    if (S->stop)
        return true;
    if (S->st->answered + S->n_pend_eval >= S->budget)
        set_stop(S, "budget");
    else if (S->o.time_limit_s > 0 && elapsed(S) >= S->o.time_limit_s)
        set_stop(S, "time limit");
    return S->stop;
}

enum { P_STOP = -1, P_ANSWERED = 0, P_DUPLICATE = 1, P_REFUSED = 2,
       P_PENDING = 3 };

/* Books an answer: the de-duplication map, the counts, the best so far. */
static void record_answer(srch *S, uint64_t key, const et_point *pt,
                          const et_opt *opts, int n_opts,
                          const et_eval_result *r, double *t)
{
    double time = r->status == ET_EVAL_OK ? r->time_s : INFINITY;
    if (isnan(time))
        time = INFINITY;
    if (!kmap_put(&S->seen, key, time))
        S->nomem = true;
    S->st->answered++;
    if (r->cached)
        S->st->cached++;
    if (r->status != ET_EVAL_OK)
        S->st->failed++;
    if (r->status == ET_EVAL_OK && pt && (!S->has_bp || time < S->bp_t)) {
        S->has_bp = true;
        S->bp = *pt;
        S->bp_t = time;
    }
    if (r->status == ET_EVAL_OK &&
        (!S->st->has_best || time < S->st->best_time_s)) {
        S->st->has_best = true;
        S->st->best_time_s = time;
        S->st->best_has_point = pt != NULL;
        if (pt)
            S->st->best_point = *pt;
        S->st->best_n_opts = n_opts < ET_MAX_OPTS ? n_opts : ET_MAX_OPTS;
        memcpy(S->st->best_opts, opts,
               sizeof(et_opt) * (size_t)S->st->best_n_opts);
    }
    *t = time;
}

/* Batched mode: appends a candidate to the batch (P_PENDING, or
 * P_REFUSED for a refused one, which the callback records in its place
 * in the order). S->last_slot names its slot. */
static int enqueue(srch *S, const et_point *pt, const et_kernel *k,
                   const et_opt *opts, int n_opts, int n_actions,
                   const char *reason, const char *opts_text,
                   const char *params_text, uint64_t key, double bound)
{
    if (S->n_pend == S->cap_pend) {
        int cap = S->cap_pend ? 2 * S->cap_pend : 16;
        pend *np = realloc(S->pend, (size_t)cap * sizeof *np);
        if (!np) {
            S->nomem = true;
            set_stop(S, "out of memory");
            return P_STOP;
        }
        S->pend = np;
        S->cap_pend = cap;
    }
    pend *e = &S->pend[S->n_pend];
    memset(e, 0, sizeof *e);
    if (k && !(e->k = et_kernel_clone(k))) {
        S->nomem = true;
        set_stop(S, "out of memory");
        return P_STOP;
    }
    e->has_point = pt != NULL;
    if (pt)
        e->pt = *pt;
    e->n_opts = n_opts < ET_MAX_OPTS ? n_opts : ET_MAX_OPTS;
    if (e->n_opts > 0)
        memcpy(e->opts, opts, sizeof(et_opt) * (size_t)e->n_opts);
    snprintf(e->opts_text, sizeof e->opts_text, "%s", opts_text);
    snprintf(e->params_text, sizeof e->params_text, "%s", params_text);
    snprintf(e->reason, sizeof e->reason, "%s", reason ? reason : "");
    e->c.seq = S->seq++;
    e->c.seed = S->cur_seed;
    e->c.n_actions = n_actions;
    e->c.key = key;
    e->c.bound_s = bound;
    e->c.refused = k == NULL;
    e->t = INFINITY;
    S->last_slot = S->n_pend++;
    if (k) {
        S->n_pend_eval++;
        return P_PENDING;
    }
    S->st->refused++;
    return P_REFUSED;
}

/* Slot holding a pending candidate of this key, -1 if none. */
static int pending_slot(const srch *S, uint64_t key)
{
    for (int i = 0; i < S->n_pend; i++)
        if (!S->pend[i].c.refused && S->pend[i].c.key == key)
            return i;
    return -1;
}

/* Batched mode: keeps a duplicate of the kernel in pending slot `slot`
 * for on_duplicate, which is told once that kernel is answered. */
static void defer_duplicate(srch *S, int slot, const et_candidate *c)
{
    if (S->n_later == S->cap_later) {
        int cap = S->cap_later ? 2 * S->cap_later : 8;
        dup_later *nl = realloc(S->later, (size_t)cap * sizeof *nl);
        if (!nl) {
            S->nomem = true;
            return;
        }
        S->later = nl;
        S->cap_later = cap;
    }
    dup_later *l = &S->later[S->n_later++];
    memset(l, 0, sizeof *l);
    l->slot = slot;
    l->seq = c->seq;
    l->key = c->key;
    l->has_point = c->has_point;
    l->pt = c->point;
    l->n_opts = c->n_opts < ET_MAX_OPTS ? c->n_opts : ET_MAX_OPTS;
    if (l->n_opts > 0)
        memcpy(l->opts, c->opts, sizeof(et_opt) * (size_t)l->n_opts);
    l->n_actions = c->n_actions;
    l->seed = c->seed;
    snprintf(l->opts_text, sizeof l->opts_text, "%s", c->opts_text);
    snprintf(l->params_text, sizeof l->params_text, "%s", c->params_text);
}

/* Tells on_duplicate of the deferred duplicates whose first proposal was
 * answered in the flushed batch (the others were not answered either). */
static void tell_deferred(srch *S)
{
    for (int i = 0; i < S->n_later; i++) {
        const dup_later *l = &S->later[i];
        const pend *e = &S->pend[l->slot];
        if (e->c.refused || !e->r.answered)
            continue;
        et_candidate c;
        memset(&c, 0, sizeof c);
        c.seq = l->seq;
        c.binding = S->b;
        c.has_point = l->has_point;
        c.point = l->pt;
        c.n_actions = l->n_actions;
        c.seed = l->seed;
        c.n_opts = l->n_opts;
        c.opts = l->opts;
        c.opts_text = l->opts_text;
        c.params_text = l->params_text;
        c.key = l->key;
        c.bound_s = INFINITY;
        c.reason = "";
        S->o.on_duplicate(S->user, &c, e->c.seq);
    }
    S->n_later = 0;
}

/*
 * Batched mode: hands the batch to the callback and books the answers.
 * Slots keep their times (pend[i].t) until batch_clear. A candidate the
 * callback did not get to (it stopped, or the time limit came) is not
 * answered: it is left out of the counts and the map, and the search
 * stops.
 */
static void flush(srch *S)
{
    if (!S->many || S->n_pend == 0 || S->flushed)
        return;
    S->flushed = true;
    et_candidate *cs = calloc((size_t)S->n_pend, sizeof *cs);
    et_eval_result *rs = calloc((size_t)S->n_pend, sizeof *rs);
    if (!cs || !rs) {
        free(cs);
        free(rs);
        S->nomem = true;
        set_stop(S, "out of memory");
        S->n_pend_eval = 0;
        return;
    }
    for (int i = 0; i < S->n_pend; i++) {
        pend *e = &S->pend[i];
        cs[i] = e->c;
        cs[i].binding = S->b;
        cs[i].has_point = e->has_point;
        cs[i].point = e->pt;
        cs[i].n_opts = e->n_opts;
        cs[i].opts = e->opts;
        cs[i].opts_text = e->opts_text;
        cs[i].params_text = e->params_text;
        cs[i].kernel = e->k;
        cs[i].reason = e->c.refused ? e->reason : "";
        rs[i].time_s = INFINITY;
    }
    double deadline = S->o.time_limit_s > 0 ? S->t0 + S->o.time_limit_s
                                            : INFINITY;
    et_eval_batch batch = {cs, rs, S->n_pend, S->o.cut_factor, deadline};
    int stop = S->many(S->user, &batch);
    bool missed = false;
    for (int i = 0; i < S->n_pend; i++) {
        pend *e = &S->pend[i];
        e->r = rs[i];
        if (e->c.refused)
            continue;
        if (!rs[i].answered) {
            missed = true;
            continue;
        }
        record_answer(S, e->c.key, e->has_point ? &e->pt : NULL, e->opts,
                      e->n_opts, &rs[i], &e->t);
    }
    S->n_pend_eval = 0;
    free(cs);
    free(rs);
    tell_deferred(S);
    if (stop != 0)
        set_stop(S, "stopped by the caller");
    if (missed)
        set_stop(S, "time limit");
    if (S->nomem)
        set_stop(S, "out of memory");
}

/* Forgets the flushed batch. */
static void batch_clear(srch *S)
{
    for (int i = 0; i < S->n_pend; i++)
        et_kernel_free(S->pend[i].k);
    S->n_pend = 0;
    S->n_pend_eval = 0;
    S->n_later = 0;
    S->flushed = false;
}

/* Random and grid searches in batched mode: flush once the batch is
 * full (their proposals do not depend on the answers). */
static void maybe_flush(srch *S)
{
    if (S->many && S->n_pend_eval >= S->o.batch) {
        flush(S);
        batch_clear(S);
    }
}

/* A kernel's de-duplication key for the binding's backend. */
static uint64_t key_of(const srch *S, const et_kernel *k)
{
    return et_kernel_dedupe_key(k, S->b ? et_binding_base(S->b)->target.backend
                                        : ET_BACKEND_OPENCL);
}

/*
 * Proposes one candidate. k is the kernel (NULL when refused, with
 * reason). On P_ANSWERED and P_DUPLICATE *t gets its time (INFINITY for a
 * failure or an unknown duplicate).
 */
static int propose_key(srch *S, const et_point *pt, const et_kernel *k,
                       const et_opt *opts, int n_opts, int n_actions,
                       const char *reason, double *t, const uint64_t *key)
{
    if (t)
        *t = INFINITY;
    S->last_slot = -1;
    if (must_stop(S))
        return P_STOP;
    char opts_text[4096], params_text[1024] = "{}";
    if (k) {
        opts = k->opts;
        n_opts = k->n_opts;
    }
    et_opts_format(opts, n_opts, opts_text, sizeof(opts_text));
    if (pt)
        et_point_format(S->b, pt, params_text, sizeof(params_text));
    et_candidate c;
    memset(&c, 0, sizeof(c));
    c.binding = S->b;
    c.has_point = pt != NULL;
    if (pt)
        c.point = *pt;
    c.n_actions = n_actions;
    c.n_opts = n_opts;
    c.opts = opts;
    c.opts_text = opts_text;
    c.params_text = params_text;
    c.kernel = k;
    c.bound_s = INFINITY;
    c.reason = "";
    c.seed = S->cur_seed;
    if (S->cur_seed)
        S->st->seeds++;
    et_eval_result r;
    memset(&r, 0, sizeof(r));
    if (!k && S->many)
        return enqueue(S, pt, NULL, opts, n_opts, n_actions,
                       reason ? reason : "refused", opts_text, params_text,
                       0, INFINITY);
    if (!k) {
        c.seq = S->seq++;
        c.refused = true;
        c.reason = reason ? reason : "refused";
        S->st->refused++;
        if (S->fn(S->user, &c, &r) != 0)
            set_stop(S, "stopped by the caller");
        return P_REFUSED;
    }
    c.key = key ? *key : key_of(S, k);
    double known;
    uint64_t said = fnv(fnv(1469598103934665603ULL, opts_text,
                            strlen(opts_text)),
                        params_text, strlen(params_text));
    if (kmap_find(&S->seen, c.key, &known)) {
        S->st->duplicates++;
        if (t)
            *t = known;
        double first = -1;
        /* a seed is told even when its text was seen: it is a proposal
         * of its own (the untransformed kernel as a seed) */
        if (S->o.on_duplicate &&
            (S->cur_seed || !kmap_find(&S->said, said, NULL)) &&
            kmap_find(&S->seen_seq, c.key, &first)) {
            if (!kmap_put(&S->said, said, 0))
                S->nomem = true;
            c.seq = S->seq++;
            S->o.on_duplicate(S->user, &c, (long)first);
        }
        return P_DUPLICATE;
    }
    if (S->many) {
        /* a kernel already waiting in the batch: a duplicate whose time
         * the caller reads from that slot after the flush, and which
         * on_duplicate is told of once that kernel is answered */
        int slot = pending_slot(S, c.key);
        if (slot >= 0) {
            S->st->duplicates++;
            S->last_slot = slot;
            if (S->o.on_duplicate &&
                (S->cur_seed || !kmap_find(&S->said, said, NULL))) {
                if (!kmap_put(&S->said, said, 0))
                    S->nomem = true;
                c.seq = S->seq++;
                defer_duplicate(S, slot, &c);
            }
            return P_DUPLICATE;
        }
        int res = enqueue(S, pt, k, opts, n_opts, n_actions, NULL,
                          opts_text, params_text, c.key,
                          S->st->has_best
                              ? S->o.cut_factor * S->st->best_time_s
                              : INFINITY);
        if (res == P_PENDING &&
            (!kmap_put(&S->said, said, 0) ||
             !kmap_put(&S->seen_seq, c.key,
                       (double)S->pend[S->last_slot].c.seq)))
            S->nomem = true;
        return res;
    }
    c.seq = S->seq++;
    if (!kmap_put(&S->said, said, 0) ||
        !kmap_put(&S->seen_seq, c.key, (double)c.seq))
        S->nomem = true;
    if (S->st->has_best)
        c.bound_s = S->o.cut_factor * S->st->best_time_s;
    r.time_s = INFINITY;
    int stop = S->fn(S->user, &c, &r);
    double time;
    record_answer(S, c.key, pt, opts, n_opts, &r, &time);
    if (stop != 0)
        set_stop(S, "stopped by the caller");
    if (S->nomem)
        set_stop(S, "out of memory");
    if (t)
        *t = time;
    return P_ANSWERED;
}

static int propose(srch *S, const et_point *pt, const et_kernel *k,
                   const et_opt *opts, int n_opts, int n_actions,
                   const char *reason, double *t)
{
    return propose_key(S, pt, k, opts, n_opts, n_actions, reason, t, NULL);
}

/* Builds the kernel of a point on top of the start kernel. */
static et_point_status point_kernel(srch *S, const et_point *pt, et_kernel **k,
                                    et_opt *opts, int *n, char *reason,
                                    size_t rcap)
{
    *k = NULL;
    int ns = S->o.n_start;
    if (ns > 0)
        memcpy(opts, S->o.start, sizeof(et_opt) * (size_t)ns);
    int np = 0;
    et_point_status ps = et_binding_point_opts(S->b, pt, opts + ns,
                                               ET_MAX_OPTS - ns, &np, reason,
                                               rcap);
    *n = ns + np;
    if (ps != ET_POINT_OK)
        return ps;
    et_kernel *kk = et_kernel_clone(S->start);
    if (!kk) {
        S->nomem = true;
        snprintf(reason, rcap, "out of memory");
        return ET_POINT_REFUSED;
    }
    if (et_kernel_apply_opts(kk, opts + ns, np, reason, rcap) != ET_OK) {
        et_kernel_free(kk);
        return ET_POINT_REFUSED;
    }
    *k = kk;
    return ET_POINT_OK;
}

/* Evaluates a point: P_* or -2 for an invalid point (not a candidate). */
static int try_point(srch *S, const et_point *pt, double *t, et_kernel **keep)
{
    et_opt opts[ET_MAX_OPTS];
    char reason[512] = "";
    int n = 0;
    et_kernel *k = NULL;
    if (keep)
        *keep = NULL;
    if (t)
        *t = INFINITY;
    if (must_stop(S))
        return P_STOP;
    et_point_status ps = point_kernel(S, pt, &k, opts, &n, reason, sizeof(reason));
    if (ps == ET_POINT_INVALID) {
        S->st->invalid++;
        return -2;
    }
    int res = propose(S, pt, k, opts, n, 0, reason, t);
    if (keep && k && (res == P_ANSWERED || res == P_DUPLICATE))
        *keep = k;
    else
        et_kernel_free(k);
    return res;
}

/* ---- seeds ------------------------------------------------------------------ */

typedef struct member {
    et_point pt;
    et_kernel *k;    /* action beam only */
    double t;
    long order;      /* tie-break: proposal order */
    int slot;        /* batched: the pending slot its time comes from,
                        -1 when known */
    int depth;       /* action beam: steps from the first one */
    bool expanded;   /* action beam's archive: its actions were tried */
} member;

/*
 * The seeds' kernels: each seed's opts applied to the untransformed
 * kernel, kept when the kernel accepts them and they begin with the start
 * opts as S->start resolved them (the search builds on those); the others
 * are told to on_seed_dropped.
 */
static void seeds_build(srch *S)
{
    char start_text[4096], head[4096], reason[512];
    et_opts_format(S->start->opts, S->start->n_opts, start_text,
                   sizeof start_text);
    for (int i = 0; i < S->o.n_seeds; i++) {
        const et_search_seed *sd = &S->o.seeds[i];
        et_kernel *k = et_kernel_clone(et_binding_base(S->b));
        if (!k) {
            S->nomem = true;
            return;
        }
        reason[0] = '\0';
        if (et_kernel_apply_opts(k, sd->opts, sd->n_opts, reason,
                                 sizeof reason) != ET_OK) {
            et_kernel_free(k);
            k = NULL;
        } else if (S->start->n_opts > 0) {
            head[0] = '\0';
            if (k->n_opts >= S->start->n_opts)
                et_opts_format(k->opts, S->start->n_opts, head, sizeof head);
            if (strcmp(head, start_text) != 0) {
                snprintf(reason, sizeof reason,
                         "it does not begin with the start opts %.400s",
                         start_text);
                et_kernel_free(k);
                k = NULL;
            }
        }
        S->seed_k[i] = k;
        if (!k) {
            S->st->seeds_dropped++;
            if (S->o.on_seed_dropped)
                S->o.on_seed_dropped(S->user, i, reason);
        }
    }
}

/*
 * Proposes the seeds, once in a run, as candidates of no point. With out
 * (the beam's first step), each seed answered or waiting in the batch
 * becomes a member with a clone of its kernel, and after the first time
 * the seeds already answered come back with their known times (a
 * parametric phase proposed them; those of key skip_key, the start
 * kernel, or of a member already taken are left out). Returns false when
 * the search must stop.
 */
static bool seeds_propose(srch *S, member *out, int *n_out, long *order,
                          uint64_t skip_key)
{
    bool again = S->seeds_done;
    S->seeds_done = true;
    uint64_t taken[ET_SEARCH_MAX_SEEDS];
    int n_taken = 0;
    for (int i = 0; i < S->o.n_seeds; i++) {
        et_kernel *k = S->seed_k[i];
        if (!k)
            continue;
        double t = INFINITY;
        int res;
        if (again) {
            if (!out)
                continue;
            uint64_t key = key_of(S, k);
            bool dup = key == skip_key;
            for (int j = 0; j < n_taken; j++)
                dup = dup || taken[j] == key;
            if (dup || !kmap_find(&S->seen, key, &t))
                continue;
            taken[n_taken++] = key;
            S->last_slot = -1;
            res = P_ANSWERED;
        } else {
            S->cur_seed = i + 1;
            res = propose(S, NULL, k, NULL, 0, k->n_opts - S->start->n_opts,
                          NULL, &t);
            S->cur_seed = 0;
            if (res == P_STOP)
                return false;
        }
        if (out && (res == P_ANSWERED || res == P_PENDING)) {
            member *m = &out[(*n_out)++];
            memset(m, 0, sizeof *m);
            m->k = et_kernel_clone(k);
            if (!m->k) {
                S->nomem = true;
                (*n_out)--;
                return false;
            }
            m->t = t;
            m->slot = S->last_slot;
            m->order = (*order)++;
        } else if (!out) {
            maybe_flush(S);
        }
    }
    return !S->stop;
}

/* ---- ranking by a cost model (et_search_opts.predict) ------------------------ */

/* A proposal of a step held back to be ranked before it is proposed. */
typedef struct held {
    et_kernel *k;        /* owned until proposed */
    bool has_pt;
    et_point pt;
    int n_actions;
    int src;             /* the caller's (the beam member it came from) */
    uint64_t key;        /* et_kernel_dedupe_key; 0: not yet known */
    double pred;         /* predicted cost (new kernels) */
    int first;           /* an earlier held proposal of the same kernel,
                            -1: none */
} held;

static bool ranking_on(const srch *S)
{
    return S->o.predict != NULL;
}

/* Is this kernel new: never answered, not waiting in the batch? */
static bool is_new(const srch *S, uint64_t key)
{
    return !kmap_find(&S->seen, key, NULL) &&
           !(S->many && pending_slot(S, key) >= 0);
}

/* How many of n new kernels a step keeps. */
static int keep_count(const srch *S, int n)
{
    int k = (int)ceil(S->o.keep_frac * n);
    return k > S->o.keep_min ? k : S->o.keep_min;
}

/* A new kernel's place in the ranking. */
typedef struct ranked {
    double pred;
    int i;               /* its held index */
} ranked;

static int ranked_cmp(const void *x, const void *y)
{
    const ranked *a = x, *b = y;
    if (a->pred < b->pred)
        return -1;
    if (a->pred > b->pred)
        return 1;
    return (a->i > b->i) - (a->i < b->i);
}

/*
 * The model's choice among a step's n held proposals: writes into order
 * the indices to propose and returns their number. Kernels already known
 * (answered, waiting) come first in their order; when the new ones are
 * more than keep_count, the kept ones follow best predicted first, then
 * the explored ones; a later proposal of a kept kernel in the step right
 * after it. The others are counted as skipped. Without a ranking (too
 * few new kernels, a NaN prediction) every proposal in its own order.
 */
static int choose(srch *S, held *h, int n, int *order)
{
    int n_new = 0, no = 0;
    ranked *fresh = malloc(sizeof(ranked) * (size_t)(n ? n : 1));
    bool *sent = calloc((size_t)(n ? n : 1), sizeof(bool));
    if (!fresh || !sent) {
        S->nomem = true;
        goto all;
    }
    for (int i = 0; i < n; i++) {
        if (!h[i].key)
            h[i].key = et_kernel_dedupe_key(h[i].k, backend_of(S));
        h[i].first = -1;
        for (int j = 0; j < i && h[i].first < 0; j++)
            if (h[j].key == h[i].key)
                h[i].first = h[j].first >= 0 ? h[j].first : j;
        if (h[i].first < 0 && is_new(S, h[i].key))
            fresh[n_new++].i = i;
    }
    if (n_new <= keep_count(S, n_new))
        goto all;
    int n_free = 0;
    for (int f = 0; f < n_new; f++) {
        fresh[f].pred = S->o.predict(S->user, h[fresh[f].i].k);
        if (isnan(fresh[f].pred))
            goto all;
        n_free += fresh[f].pred == -INFINITY;
    }
    /* the free ones (-INFINITY) sort first and are always kept */
    qsort(fresh, (size_t)n_new, sizeof(ranked), ranked_cmp);
    int keep = n_free + keep_count(S, n_new - n_free);
    if (keep >= n_new)
        goto all;
    int rest = n_new - keep;
    int explore = S->o.explore_frac < 0
                      ? 0
                      : (int)ceil(S->o.explore_frac * rest);
    if (explore > rest)
        explore = rest;
    /* exploration: a partial shuffle of the rest with the search's PRNG */
    for (int e = 0; e < explore; e++) {
        int j = keep + e + (int)rng_below(&S->r, (uint64_t)(rest - e));
        ranked tmp = fresh[keep + e];
        fresh[keep + e] = fresh[j];
        fresh[j] = tmp;
    }
    int n_send = keep + explore;
    for (int f = 0; f < n_send; f++)
        sent[fresh[f].i] = true;
    S->st->model_ranked += n_new - n_free;
    /* the known kernels first, then the kept and explored ones; each
     * followed by its later proposals in the step */
    for (int i = 0; i < n; i++)
        if (h[i].first < 0 && !is_new(S, h[i].key))
            sent[i] = true;
    for (int pass = 0; pass < 2; pass++)
        for (int f = 0; f < (pass ? n_send : n); f++) {
            int r = pass ? fresh[f].i : f;
            if (!pass && !(h[r].first < 0 && sent[r] && !is_new(S, h[r].key)))
                continue;
            order[no++] = r;
            for (int i = r + 1; i < n; i++)
                if (h[i].first == r)
                    order[no++] = i;
        }
    for (int i = 0; i < n; i++)
        if (!sent[h[i].first >= 0 ? h[i].first : i])
            S->st->model_skipped++;
    free(fresh);
    free(sent);
    return no;
all:
    free(fresh);
    free(sent);
    for (int i = 0; i < n; i++)
        order[i] = i;
    return n;
}

/* Frees the held kernels left (those not proposed or not kept). */
static void held_free(held *h, int n)
{
    for (int i = 0; i < n; i++) {
        et_kernel_free(h[i].k);
        h[i].k = NULL;
    }
}

/* ---- the parametric space as an index set ----------------------------------- */

#define HUGE_COUNT ((uint64_t)1 << 62)

static uint64_t map_count(const srch *S, int m)
{
    uint64_t c = 1;
    for (int k = 0; k < S->s->n_params; k++) {
        const int64_t *v;
        uint64_t n = (uint64_t)et_binding_domain(S->b, m, k, &v);
        if (__builtin_mul_overflow(c, n, &c) || c > HUGE_COUNT)
            return HUGE_COUNT;
    }
    return c;
}

static uint64_t total_count(const srch *S)
{
    uint64_t c = 0;
    for (int m = 0; m < et_binding_n_maps(S->b); m++) {
        c += map_count(S, m);
        if (c > HUGE_COUNT)
            return HUGE_COUNT;
    }
    return c;
}

/* Point number idx: mapping blocks, then mixed radix with the first
 * declared parameter outermost. */
static void point_at(const srch *S, uint64_t idx, et_point *pt)
{
    memset(pt, 0, sizeof(*pt));
    int m = 0;
    while (m + 1 < et_binding_n_maps(S->b) && idx >= map_count(S, m))
        idx -= map_count(S, m++);
    pt->map = m;
    for (int k = S->s->n_params - 1; k >= 0; k--) {
        const int64_t *v;
        uint64_t n = (uint64_t)et_binding_domain(S->b, m, k, &v);
        pt->v[k] = v[idx % n];
        idx /= n;
        pt->decided |= (uint64_t)1 << k;
    }
}

static void point_random(srch *S, et_point *pt)
{
    memset(pt, 0, sizeof(*pt));
    pt->map = (int)rng_below(&S->r, (uint64_t)et_binding_n_maps(S->b));
    for (int k = 0; k < S->s->n_params; k++) {
        const int64_t *v;
        int n = et_binding_domain(S->b, pt->map, k, &v);
        pt->v[k] = v[rng_below(&S->r, (uint64_t)n)];
        pt->decided |= (uint64_t)1 << k;
    }
}

/* A random point of the space: by its index among total points when they
 * can be counted, else drawn parameter by parameter; returns its identity
 * (the index, or a hash of the point) for the set of points drawn. */
static uint64_t point_draw(srch *S, uint64_t total, et_point *pt)
{
    if (total < HUGE_COUNT) {
        uint64_t id = rng_below(&S->r, total);
        point_at(S, id, pt);
        return id;
    }
    point_random(S, pt);
    return fnv(1469598103934665603ULL, pt, sizeof(*pt));
}

/* A random search's pool: room for this many held proposals, of which
 * pool_new() new kernels. */
static int pool_new(const srch *S)
{
    return (int)ceil(S->o.keep_min / S->o.keep_frac);
}

/* Is key among h[0..n-1]? */
static bool held_has(const held *h, int n, uint64_t key)
{
    for (int i = 0; i < n; i++)
        if (h[i].key == key)
            return true;
    return false;
}

/* Adds kernel k (owned from here; of point pt, or none) to a random
 * search's pool h of *nh, counting it in *n_new when it is new to the
 * run and the pool, else in *idle. */
static void held_add(const srch *S, held *h, int *nh, et_kernel *k,
                     const et_point *pt, int n_actions, int *n_new,
                     int *idle)
{
    held *e = &h[*nh];
    e->k = k;
    e->has_pt = pt != NULL;
    if (pt)
        e->pt = *pt;
    e->n_actions = n_actions;
    e->key = et_kernel_dedupe_key(k, backend_of(S));
    if (is_new(S, e->key) && !held_has(h, *nh, e->key))
        (*n_new)++;
    else
        (*idle)++;
    (*nh)++;
}

/*
 * Proposes what the model chooses of a random search's pool and frees
 * the pool. Returns 1 when a proposal was answered or is waiting (the
 * search is not idle).
 */
static int pool_propose(srch *S, held *h, int nh, int *ord)
{
    int ns = choose(S, h, nh, ord), fresh = 0;
    for (int s = 0; s < ns && !S->stop; s++) {
        held *e = &h[ord[s]];
        int res = propose_key(S, e->has_pt ? &e->pt : NULL, e->k, NULL, 0,
                              e->n_actions, NULL, NULL, &e->key);
        fresh |= res == P_ANSWERED || res == P_PENDING;
        maybe_flush(S);
        if (res == P_STOP)
            break;
    }
    held_free(h, nh);
    return fresh;
}

/* param_random through the model: pools of drawn points' kernels. */
static void param_random_ranked(srch *S)
{
    uint64_t total = total_count(S);
    kmap drawn = {0};
    int idle = 0, want = pool_new(S), cap = 4 * want;
    held *h = calloc((size_t)cap, sizeof *h);
    int *ord = malloc(sizeof(int) * (size_t)cap);
    if (!h || !ord) {
        S->nomem = true;
        goto done;
    }
    while (!must_stop(S)) {
        int nh = 0, n_new = 0;
        bool exhausted = false;
        while (n_new < want && nh < cap && !S->stop) {
            if ((total < HUGE_COUNT && drawn.n >= total) ||
                idle >= S->o.max_draws) {
                exhausted = true;
                break;
            }
            et_point pt;
            uint64_t id = point_draw(S, total, &pt);
            if (kmap_find(&drawn, id, NULL)) {
                idle++;
                continue;
            }
            if (!kmap_put(&drawn, id, 0))
                S->nomem = true;
            et_opt opts[ET_MAX_OPTS];
            char reason[512] = "";
            int n = 0;
            et_kernel *k = NULL;
            et_point_status ps = point_kernel(S, &pt, &k, opts, &n, reason,
                                              sizeof(reason));
            if (ps == ET_POINT_INVALID) {
                S->st->invalid++;
                idle++;
                continue;
            }
            if (!k) {
                propose(S, &pt, NULL, opts, n, 0, reason, NULL);
                maybe_flush(S);
                idle++;
                continue;
            }
            held_add(S, h, &nh, k, &pt, 0, &n_new, &idle);
        }
        if (pool_propose(S, h, nh, ord))
            idle = 0;
        if (exhausted) {
            set_stop(S, "exhausted");
            break;
        }
    }
done:
    free(h);
    free(ord);
    kmap_free(&drawn);
}

static void param_random(srch *S)
{
    if (ranking_on(S)) {
        param_random_ranked(S);
        return;
    }
    uint64_t total = total_count(S);
    kmap drawn = {0};
    int idle = 0;
    if (!seeds_propose(S, NULL, NULL, NULL, 0))
        return;
    while (!must_stop(S)) {
        if (total < HUGE_COUNT && drawn.n >= total) {
            set_stop(S, "exhausted");
            break;
        }
        if (idle >= S->o.max_draws) {
            set_stop(S, "exhausted");
            break;
        }
        et_point pt;
        uint64_t id = point_draw(S, total, &pt);
        if (kmap_find(&drawn, id, NULL)) {
            idle++;
            continue;
        }
        kmap_put(&drawn, id, 0);
        int res = try_point(S, &pt, NULL, NULL);
        idle = res == P_ANSWERED || res == P_PENDING ? 0 : idle + 1;
        maybe_flush(S);
    }
    kmap_free(&drawn);
}

static void param_grid(srch *S)
{
    uint64_t total = total_count(S);
    if (!seeds_propose(S, NULL, NULL, NULL, 0))
        return;
    for (uint64_t i = 0; i < total; i++) {
        et_point pt;
        point_at(S, i, &pt);
        if (try_point(S, &pt, NULL, NULL) == P_STOP)
            return;
        maybe_flush(S);
    }
    set_stop(S, "exhausted");
}

/*
 * Batched mode, after a step's candidates were proposed: flushes them and
 * gives every member waiting for a slot its time; members whose candidate
 * was not answered (the batch stopped early) are dropped (their kernels
 * freed). Returns the new count. Sequential mode: nothing to do.
 */
static int settle(srch *S, member *m, int n)
{
    if (!S->many)
        return n;
    flush(S);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (m[i].slot >= 0) {
            const pend *e = &S->pend[m[i].slot];
            if (!e->c.refused && !e->r.answered) {
                et_kernel_free(m[i].k);
                continue;
            }
            m[i].t = e->t;
            m[i].slot = -1;
        }
        m[k++] = m[i];
    }
    batch_clear(S);
    return k;
}

static int member_cmp(const void *x, const void *y)
{
    const member *a = x, *b = y;
    if (a->t < b->t)
        return -1;
    if (a->t > b->t)
        return 1;
    return (a->order > b->order) - (a->order < b->order);
}

/*
 * One step of the parametric beam through the model: the kernel of every
 * beam member with every value of parameter q is built first (refused
 * points are proposed at once, invalid ones counted), the model chooses
 * (choose), the chosen are proposed. Returns the members of the next
 * step in next (room for cap).
 */
static int param_step_ranked(srch *S, member *beam, int nb, int q,
                             size_t cap, member *next, long *order)
{
    held *h = calloc(cap ? cap : 1, sizeof *h);
    int *ord = malloc(sizeof(int) * (cap ? cap : 1));
    int nh = 0, nn = 0;
    if (!h || !ord) {
        S->nomem = true;
        goto done;
    }
    for (int i = 0; i < nb && !S->stop; i++) {
        const int64_t *v;
        int nv = et_binding_domain(S->b, beam[i].pt.map, q, &v);
        for (int j = 0; j < nv && !S->stop; j++) {
            et_point pt = beam[i].pt;
            pt.v[q] = v[j];
            pt.decided |= (uint64_t)1 << q;
            et_opt opts[ET_MAX_OPTS];
            char reason[512] = "";
            int n = 0;
            et_kernel *k = NULL;
            et_point_status ps = point_kernel(S, &pt, &k, opts, &n, reason,
                                              sizeof(reason));
            if (ps == ET_POINT_INVALID) {
                S->st->invalid++;
                continue;
            }
            if (!k) {
                /* refused: recorded, free of charge */
                if (propose(S, &pt, NULL, opts, n, 0, reason, NULL) == P_STOP)
                    goto done;
                continue;
            }
            h[nh].k = k;
            h[nh].has_pt = true;
            h[nh].pt = pt;
            h[nh].src = i;
            nh++;
        }
    }
    int ns = choose(S, h, nh, ord);
    for (int s = 0; s < ns; s++) {
        held *e = &h[ord[s]];
        double t;
        int res = propose_key(S, &e->pt, e->k, NULL, 0, 0, NULL, &t, &e->key);
        if (res == P_STOP)
            break;
        if (res == P_ANSWERED || res == P_DUPLICATE || res == P_PENDING) {
            next[nn].pt = e->pt;
            next[nn].t = t;
            next[nn].order = (*order)++;
            next[nn].slot = S->last_slot;
            nn++;
        }
    }
done:
    if (h)
        held_free(h, nh);
    free(h);
    free(ord);
    return nn;
}

static void param_beam(srch *S)
{
    const et_space *s = S->s;
    int K = S->o.beam_width;
    int n_maps = et_binding_n_maps(S->b);
    size_t cap = (size_t)(n_maps > K ? n_maps : K);
    member *beam = calloc(cap, sizeof(member));
    member *next = NULL;
    int nb = 0;
    long order = 0;
    int start_slot = -1;
    if (!beam) {
        S->nomem = true;
        return;
    }
    if (!seeds_propose(S, NULL, NULL, NULL, 0))
        goto done;
    /* round 0: every mapping with nothing decided */
    for (int m = 0; m < n_maps; m++) {
        et_point pt;
        memset(&pt, 0, sizeof(pt));
        pt.map = m;
        double t;
        int res = try_point(S, &pt, &t, NULL);
        if (res == P_STOP)
            goto done;
        if (m == 0 && res != -2)
            S->st->start_time_s = t;
        if (res == P_ANSWERED || res == P_DUPLICATE || res == P_REFUSED ||
            res == P_PENDING) {
            beam[nb].pt = pt;
            beam[nb].t = t;
            beam[nb].order = order++;
            beam[nb].slot = res == P_REFUSED ? -1 : S->last_slot;
            if (m == 0)
                start_slot = beam[nb].slot;
            nb++;
        }
    }
    if (S->many && start_slot >= 0) {
        flush(S);
        S->st->start_time_s = S->pend[start_slot].t;
    }
    nb = settle(S, beam, nb);
    qsort(beam, (size_t)nb, sizeof(member), member_cmp);
    if (nb > K)
        nb = K;
    const int *ord = et_binding_order(S->b);
    for (int r = 0; r < s->n_params && nb > 0; r++) {
        int q = ord[r];
        size_t ncap = 0;
        for (int i = 0; i < nb; i++) {
            const int64_t *v;
            ncap += (size_t)et_binding_domain(S->b, beam[i].pt.map, q, &v);
        }
        next = calloc(ncap ? ncap : 1, sizeof(member));
        if (!next) {
            S->nomem = true;
            goto done;
        }
        int nn = 0;
        if (ranking_on(S)) {
            nn = param_step_ranked(S, beam, nb, q, ncap, next, &order);
            goto step_done;
        }
        for (int i = 0; i < nb; i++) {
            const int64_t *v;
            int nv = et_binding_domain(S->b, beam[i].pt.map, q, &v);
            for (int j = 0; j < nv; j++) {
                et_point pt = beam[i].pt;
                pt.v[q] = v[j];
                pt.decided |= (uint64_t)1 << q;
                double t;
                int res = try_point(S, &pt, &t, NULL);
                if (res == P_STOP)
                    goto step_done;
                if (res == P_ANSWERED || res == P_DUPLICATE ||
                    res == P_PENDING) {
                    next[nn].pt = pt;
                    next[nn].t = t;
                    next[nn].order = order++;
                    next[nn].slot = S->last_slot;
                    nn++;
                }
            }
        }
    step_done:
        nn = settle(S, next, nn);
        if (S->stop)
            goto done;
        if (nn == 0) {
            snprintf(S->st->stop_reason, sizeof(S->st->stop_reason),
                     "no valid value for %.40s", s->param[q].name);
            S->stop = true;
            goto done;
        }
        qsort(next, (size_t)nn, sizeof(member), member_cmp);
        nb = nn < K ? nn : K;
        memcpy(beam, next, sizeof(member) * (size_t)nb);
        free(next);
        next = NULL;
    }
    set_stop(S, "all parameters decided");
done:
    free(next);
    free(beam);
}

/* ---- action pools ------------------------------------------------------------ */

/*
 * One step of the action beam through the model: every beam member with
 * every action is built first, the model chooses (choose), the chosen
 * are proposed. Returns the members of the next step in next.
 */
static int action_step_ranked(srch *S, member *beam, int nb,
                              const et_opt *acts, int na, int nstart,
                              const et_point *pt, member *next, long *order)
{
    held *h = calloc((size_t)nb * (size_t)(na ? na : 1), sizeof *h);
    int *ord = malloc(sizeof(int) * (size_t)nb * (size_t)(na ? na : 1));
    int nh = 0, nn = 0;
    if (!h || !ord) {
        S->nomem = true;
        goto done;
    }
    for (int i = 0; i < nb && !S->stop; i++)
        for (int a = 0; a < na && beam[i].depth < S->s->max_depth; a++) {
            et_kernel *k = et_kernel_clone(beam[i].k);
            if (!k) {
                S->nomem = true;
                goto done;
            }
            if (et_kernel_apply_opt(k, &acts[a], NULL, 0) != ET_OK) {
                S->st->actions_refused++;
                et_kernel_free(k);
                continue;
            }
            h[nh].k = k;
            h[nh].src = i;
            h[nh].n_actions = k->n_opts - nstart;
            nh++;
        }
    int ns = choose(S, h, nh, ord);
    for (int s = 0; s < ns; s++) {
        held *e = &h[ord[s]];
        double t;
        int res = propose_key(S, pt, e->k, NULL, 0, e->n_actions, NULL, &t,
                              &e->key);
        if (res == P_STOP)
            break;
        if (res == P_ANSWERED || res == P_PENDING) {
            next[nn].k = e->k;
            next[nn].t = t;
            next[nn].slot = S->last_slot;
            next[nn].order = (*order)++;
            next[nn].depth = beam[e->src].depth + 1;
            if (pt)
                next[nn].pt = *pt;
            nn++;
            e->k = NULL;
        }
    }
done:
    if (h)
        held_free(h, nh);
    free(h);
    free(ord);
    return nn;
}

/* The archive of the action beam: the fastest answered members of the
 * run (clones), for widening the beam once it has converged. */
#define ARCHIVE_MAX 256
/* how far a converged beam widens: up to this many times its width */
#define WIDEN_MAX_FACTOR 8

/* Keeps a clone of m in the archive (sorted fastest first) when it is
 * among the ARCHIVE_MAX fastest. */
static void archive_add(srch *S, member *arch, int *n, const member *m)
{
    if (!isfinite(m->t))
        return;
    if (*n == ARCHIVE_MAX && !(m->t < arch[*n - 1].t))
        return;
    member c = *m;
    c.k = et_kernel_clone(m->k);
    if (!c.k) {
        S->nomem = true;
        return;
    }
    if (*n == ARCHIVE_MAX)
        et_kernel_free(arch[--*n].k);
    int i = *n;
    while (i > 0 && member_cmp(&arch[i - 1], &c) > 0) {
        arch[i] = arch[i - 1];
        i--;
    }
    arch[i] = c;
    (*n)++;
}

/* Marks the archive's copies of the beam's members as expanded. */
static void archive_expanded(member *arch, int n, const member *beam, int nb)
{
    for (int i = 0; i < nb; i++)
        for (int j = 0; j < n; j++)
            if (arch[j].order == beam[i].order)
                arch[j].expanded = true;
}

/*
 * Widening (a time limit given, the beam converged): the beam becomes the
 * k fastest members of the archive not yet expanded that can still take
 * an action (clones; the old beam's kernels are freed). Returns the new
 * beam's size.
 */
static int widen(srch *S, member *beam, int nb, const member *arch,
                 int n_arch, int k)
{
    for (int i = 0; i < nb; i++)
        et_kernel_free(beam[i].k);
    int n = 0;
    for (int i = 0; i < n_arch && n < k; i++) {
        if (arch[i].expanded || arch[i].depth >= S->s->max_depth)
            continue;
        beam[n] = arch[i];
        beam[n].k = et_kernel_clone(arch[i].k);
        if (!beam[n].k) {
            S->nomem = true;
            break;
        }
        n++;
    }
    S->st->widenings++;
    return n;
}

static int action_beam(srch *S, et_kernel *start, const et_point *pt)
{
    const et_opt *acts;
    int na = et_binding_actions(S->b, &acts);
    int K = S->o.beam_width;
    /* with a time limit, a converged beam widens (x2) up to K_max */
    bool widening = S->o.time_limit_s > 0;
    int K_max = widening ? WIDEN_MAX_FACTOR * K : K;
    int nstart = start->n_opts;
    member *beam = calloc((size_t)K_max, sizeof(member));
    member *next = calloc((size_t)K_max * (size_t)(na ? na : 1),
                          sizeof(member));
    member *first = calloc((size_t)S->o.n_seeds + 1, sizeof(member));
    member *arch = widening ? calloc(ARCHIVE_MAX, sizeof(member)) : NULL;
    int nb = 0, nf = 0, n_arch = 0;
    long order = 0;
    if (!beam || !next || !first || (widening && !arch)) {
        S->nomem = true;
        goto done;
    }
    /* the first step: the starting kernel and the seeds (one batch) */
    double t;
    int res = propose(S, pt, start, NULL, 0, 0, NULL, &t);
    if (res == P_STOP)
        goto done;
    first[0].k = et_kernel_clone(start);
    if (!first[0].k) {
        S->nomem = true;
        goto done;
    }
    first[0].t = t;
    first[0].slot = S->last_slot;
    first[0].order = order++;
    nf = 1;
    seeds_propose(S, first, &nf, &order, key_of(S, start));
    nf = settle(S, first, nf);
    if (nf == 0 || first[0].order != 0)
        goto done; /* the starting kernel was not answered */
    if (!pt)
        S->st->start_time_s = first[0].t;
    /* the beam: the fastest of them; a seed that failed is no member */
    int keep = 1;
    for (int i = 1; i < nf; i++) {
        if (isfinite(first[i].t))
            first[keep++] = first[i];
        else
            et_kernel_free(first[i].k);
    }
    nf = keep;
    qsort(first, (size_t)nf, sizeof(member), member_cmp);
    nb = nf < K ? nf : K;
    for (int i = 0; i < nf; i++) {
        if (pt)
            first[i].pt = *pt;
        if (arch)
            archive_add(S, arch, &n_arch, &first[i]);
        if (i < nb)
            beam[i] = first[i];
        else
            et_kernel_free(first[i].k);
    }
    nf = 0;
    while (nb > 0 && !S->stop) {
        int nn = 0;
        et_kernel *scratch = NULL;
        /* the best time before this step: the beam's, or after a
         * widening the archive's */
        double before = arch && n_arch ? arch[0].t : beam[0].t;
        if (ranking_on(S)) {
            nn = action_step_ranked(S, beam, nb, acts, na, nstart, pt, next,
                                    &order);
            goto step_settle;
        }
        for (int i = 0; i < nb && !S->stop; i++) {
            for (int a = 0; a < na && beam[i].depth < S->s->max_depth; a++) {
                if (!scratch && !(scratch = et_kernel_clone(beam[i].k))) {
                    S->nomem = true;
                    break;
                }
                if (et_kernel_apply_opt(scratch, &acts[a], NULL, 0) != ET_OK) {
                    S->st->actions_refused++;
                    continue; /* left unchanged: reuse it */
                }
                res = propose(S, pt, scratch, NULL, 0,
                              scratch->n_opts - nstart, NULL, &t);
                if (res == P_STOP)
                    break;
                if (res == P_ANSWERED || res == P_PENDING) {
                    next[nn].k = scratch;
                    next[nn].t = t;
                    next[nn].slot = S->last_slot;
                    next[nn].order = order++;
                    next[nn].depth = beam[i].depth + 1;
                    if (pt)
                        next[nn].pt = *pt;
                    nn++;
                    scratch = NULL;
                } else {
                    et_kernel_free(scratch);
                    scratch = NULL;
                }
            }
        }
        et_kernel_free(scratch);
    step_settle:
        if (arch)
            archive_expanded(arch, n_arch, beam, nb);
        nn = settle(S, next, nn);
        for (int i = 0; arch && i < nn; i++)
            archive_add(S, arch, &n_arch, &next[i]);
        bool converged = true, deep = true;
        if (nn > 0) {
            qsort(next, (size_t)nn, sizeof(member), member_cmp);
            converged = !(next[0].t < before * (1.0 - S->o.min_progress));
            for (int i = 0; i < nb; i++)
                et_kernel_free(beam[i].k);
            nb = nn < K ? nn : K;
            memcpy(beam, next, sizeof(member) * (size_t)nb);
            for (int i = nb; i < nn; i++)
                et_kernel_free(next[i].k);
            for (int i = 0; i < nb && deep; i++)
                deep = beam[i].depth >= S->s->max_depth;
        }
        if (S->stop)
            break;
        if (!converged && !deep)
            continue;
        if (widening && K < K_max && !S->nomem) {
            K *= 2;
            nb = widen(S, beam, nb, arch, n_arch, K);
            if (nb > 0)
                continue;
        }
        set_stop(S, nn == 0 ? "no new kernels"
                    : converged ? "converged" : "max_depth");
        break;
    }
done:
    for (int i = 0; beam && i < nb; i++)
        et_kernel_free(beam[i].k);
    for (int i = 0; first && i < nf; i++)
        et_kernel_free(first[i].k);
    for (int i = 0; arch && i < n_arch; i++)
        et_kernel_free(arch[i].k);
    free(arch);
    free(first);
    free(beam);
    free(next);
    return 0;
}

/* One random sequence of up to max_depth valid actions on a clone of
 * start (NULL when out of memory). */
static et_kernel *random_sequence(srch *S, const et_kernel *start,
                                  const et_opt *acts, int na, int *perm)
{
    et_kernel *k = et_kernel_clone(start);
    if (!k) {
        S->nomem = true;
        return NULL;
    }
    int depth = 1 + (int)rng_below(&S->r, (uint64_t)S->s->max_depth);
    for (int d = 0; d < depth; d++) {
        for (int i = 0; i < na; i++)
            perm[i] = i;
        bool applied = false;
        for (int i = 0; i < na && !applied; i++) {
            int j = i + (int)rng_below(&S->r, (uint64_t)(na - i));
            int tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
            applied = et_kernel_apply_opt(k, &acts[perm[i]], NULL, 0) == ET_OK;
            if (!applied)
                S->st->actions_refused++;
        }
        if (!applied)
            break;
    }
    return k;
}

/* action_random through the model: pools of random sequences. */
static void action_random_ranked(srch *S, et_kernel *start, const et_point *pt)
{
    const et_opt *acts;
    int na = et_binding_actions(S->b, &acts);
    int nstart = start->n_opts;
    int idle = 0, want = pool_new(S), cap = 4 * want;
    int *perm = malloc(sizeof(int) * (size_t)(na ? na : 1));
    held *h = calloc((size_t)cap, sizeof *h);
    int *ord = malloc(sizeof(int) * (size_t)cap);
    if (!perm || !h || !ord) {
        S->nomem = true;
        goto done;
    }
    while (!must_stop(S)) {
        int nh = 0, n_new = 0;
        bool exhausted = false;
        while (n_new < want && nh < cap && !S->nomem) {
            if (idle >= S->o.max_draws) {
                exhausted = true;
                break;
            }
            et_kernel *k = random_sequence(S, start, acts, na, perm);
            if (!k)
                break;
            held_add(S, h, &nh, k, pt, k->n_opts - nstart, &n_new, &idle);
        }
        if (pool_propose(S, h, nh, ord))
            idle = 0;
        if (exhausted) {
            set_stop(S, "exhausted");
            break;
        }
        if (S->nomem)
            break;
    }
done:
    free(perm);
    free(h);
    free(ord);
}

/* Random sequences of up to max_depth valid actions. */
static void action_random(srch *S, et_kernel *start, const et_point *pt)
{
    if (ranking_on(S)) {
        action_random_ranked(S, start, pt);
        return;
    }
    const et_opt *acts;
    int na = et_binding_actions(S->b, &acts);
    int *perm = malloc(sizeof(int) * (size_t)(na ? na : 1));
    int idle = 0;
    int nstart = start->n_opts;
    if (!perm) {
        S->nomem = true;
        return;
    }
    if (!seeds_propose(S, NULL, NULL, NULL, 0)) {
        free(perm);
        return;
    }
    while (!must_stop(S)) {
        if (idle >= S->o.max_draws) {
            set_stop(S, "exhausted");
            break;
        }
        et_kernel *k = random_sequence(S, start, acts, na, perm);
        if (!k)
            break;
        int res = propose(S, pt, k, NULL, 0, k->n_opts - nstart, NULL, NULL);
        idle = res == P_ANSWERED || res == P_PENDING ? 0 : idle + 1;
        et_kernel_free(k);
        maybe_flush(S);
    }
    free(perm);
}

/* Sequences of 0, 1 and 2 actions, in pool order. */
static void action_grid(srch *S, et_kernel *start, const et_point *pt)
{
    const et_opt *acts;
    int na = et_binding_actions(S->b, &acts);
    int nstart = start->n_opts;
    if (propose(S, pt, start, NULL, 0, 0, NULL, NULL) == P_STOP)
        return;
    if (!seeds_propose(S, NULL, NULL, NULL, 0))
        return;
    for (int a = 0; a < na; a++) {
        et_kernel *k1 = et_kernel_clone(start);
        if (!k1) {
            S->nomem = true;
            return;
        }
        if (et_kernel_apply_opt(k1, &acts[a], NULL, 0) != ET_OK) {
            S->st->actions_refused++;
            et_kernel_free(k1);
            continue;
        }
        int res = propose(S, pt, k1, NULL, 0, 1, NULL, NULL);
        maybe_flush(S);
        for (int c = 0; S->s->max_depth >= 2 && c < na && res != P_STOP; c++) {
            et_kernel *k2 = et_kernel_clone(k1);
            if (!k2) {
                S->nomem = true;
                break;
            }
            if (et_kernel_apply_opt(k2, &acts[c], NULL, 0) != ET_OK)
                S->st->actions_refused++;
            else
                res = propose(S, pt, k2, NULL, 0, k2->n_opts - nstart, NULL, NULL);
            et_kernel_free(k2);
            maybe_flush(S);
        }
        et_kernel_free(k1);
        if (res == P_STOP || S->stop)
            return;
    }
    set_stop(S, "exhausted");
}

/* ---- entry point ----------------------------------------------------------- */

static et_status run(const et_binding *b, const et_search_opts *o,
                     et_eval_fn fn, et_eval_many_fn many, void *user,
                     et_search_stats *stats, et_diag *d)
{
    srch S;
    memset(&S, 0, sizeof(S));
    memset(stats, 0, sizeof(*stats));
    if (d)
        memset(d, 0, sizeof(*d));
    stats->start_time_s = INFINITY;
    stats->best_time_s = INFINITY;
    S.b = b;
    S.s = et_binding_space(b);
    if (o)
        S.o = *o;
    if (S.o.budget <= 0)
        S.o.budget = 100;
    if (S.o.beam_width <= 0)
        S.o.beam_width = 4;
    if (S.o.min_progress <= 0)
        S.o.min_progress = 0.01;
    if (S.o.cut_factor <= 0)
        S.o.cut_factor = 3.0;
    if (S.o.max_draws <= 0)
        S.o.max_draws = 100000;
    if (S.o.batch <= 0)
        S.o.batch = 8;
    if (!(S.o.keep_frac > 0 && S.o.keep_frac <= 1))
        S.o.keep_frac = 0.3;
    if (S.o.keep_min <= 0)
        S.o.keep_min = 2 * S.o.beam_width;
    if (S.o.explore_frac == 0)
        S.o.explore_frac = 0.1;
    S.many = many;
    S.last_slot = -1;
    if (S.o.n_start < 0 || S.o.n_start > ET_MAX_OPTS / 2 ||
        (S.o.n_start > 0 && !S.o.start)) {
        if (d)
            snprintf(d->msg, sizeof(d->msg), "at most %d start opts",
                     ET_MAX_OPTS / 2);
        return ET_ERR_INPUT;
    }
    if (S.o.n_seeds < 0 || S.o.n_seeds > ET_SEARCH_MAX_SEEDS ||
        (S.o.n_seeds > 0 && !S.o.seeds)) {
        if (d)
            snprintf(d->msg, sizeof(d->msg), "at most %d seeds",
                     ET_SEARCH_MAX_SEEDS);
        return ET_ERR_INPUT;
    }
    S.fn = fn;
    S.user = user;
    S.st = stats;
    rng_seed(&S.r, S.o.seed);
    S.t0 = et_now_s();
    bool has_param = S.s->n_steps > 0;
    bool has_act = S.s->n_actions > 0;
    if (has_act && S.o.kind == ET_SEARCH_GRID && S.s->max_depth > 2) {
        if (d)
            snprintf(d->msg, sizeof(d->msg),
                     "grid search over an action pool needs max_depth <= 2 "
                     "(space '%s' has %d); use beam or random",
                     S.s->name, S.s->max_depth);
        return ET_ERR_INPUT;
    }
    S.start = et_kernel_clone(et_binding_base(b));
    if (!S.start)
        return ET_ERR_NOMEM;
    char reason[512];
    if (et_kernel_apply_opts(S.start, S.o.start, S.o.n_start, reason,
                             sizeof(reason)) != ET_OK) {
        if (d)
            snprintf(d->msg, sizeof(d->msg), "start opts refused: %.480s", reason);
        et_kernel_free(S.start);
        return ET_ERR_INPUT;
    }
    et_status st = ET_OK;
    seeds_build(&S);
    S.budget = has_param && has_act ? (S.o.budget + 1) / 2 : S.o.budget;
    if (has_param) {
        if (S.o.kind == ET_SEARCH_RANDOM)
            param_random(&S);
        else if (S.o.kind == ET_SEARCH_GRID)
            param_grid(&S);
        else
            param_beam(&S);
        flush(&S);
        batch_clear(&S);
    }
    if (has_act && !S.nomem &&
        !(S.stop && strcmp(stats->stop_reason, "time limit") == 0) &&
        !(S.stop && strcmp(stats->stop_reason, "stopped by the caller") == 0)) {
        /* the actions search on top of the best point */
        S.stop = false;
        S.budget = S.o.budget;
        et_kernel *from = S.start;
        et_kernel *best = NULL;
        et_point bp;
        const et_point *ppt = NULL;
        if (has_param && S.has_bp) {
            /* the fastest point (a seed may be faster still: the beam's
             * first step has the seeds too) */
            bp = S.bp;
            ppt = &bp;
            et_opt opts[ET_MAX_OPTS];
            int n;
            if (point_kernel(&S, &bp, &best, opts, &n, reason, sizeof(reason)) ==
                ET_POINT_OK)
                from = best;
        }
        if (S.o.kind == ET_SEARCH_RANDOM)
            action_random(&S, from, ppt);
        else if (S.o.kind == ET_SEARCH_GRID)
            action_grid(&S, from, ppt);
        else
            action_beam(&S, from, ppt);
        flush(&S);
        batch_clear(&S);
        et_kernel_free(best);
    }
    if (S.nomem) {
        st = ET_ERR_NOMEM;
        set_stop(&S, "out of memory");
    }
    if (!stats->stop_reason[0])
        snprintf(stats->stop_reason, sizeof(stats->stop_reason), "done");
    stats->elapsed_s = elapsed(&S);
    kmap_free(&S.seen);
    kmap_free(&S.seen_seq);
    kmap_free(&S.said);
    for (int i = 0; i < S.o.n_seeds; i++)
        et_kernel_free(S.seed_k[i]);
    et_kernel_free(S.start);
    free(S.later);
    free(S.pend);
    return st;
}

et_status et_search_run(const et_binding *b, const et_search_opts *o,
                        et_eval_fn fn, void *user, et_search_stats *stats,
                        et_diag *d)
{
    return run(b, o, fn, NULL, user, stats, d);
}

et_status et_search_run_many(const et_binding *b, const et_search_opts *o,
                             et_eval_many_fn many, void *user,
                             et_search_stats *stats, et_diag *d)
{
    return run(b, o, NULL, many, user, stats, d);
}

/*
 * best.c - the best known kernel for an einsum, its opts carried over to
 * the asker's names (see best.h).
 */
#include "tune/best.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEST_MAX_MATCHES 64

/* The trial's einsum under match m: its subscripts with the asker's
 * operand shapes and dtypes pulled back through m.op_map. */
static et_status pulled_back(const et_subscripts *sub, const et_einsum *e,
                             const et_match *m, et_einsum *out)
{
    et_operand_shapes shapes;
    et_dtype dt[ET_MAX_OPERANDS];
    memset(&shapes, 0, sizeof shapes);
    shapes.n_ops = e->n_ops;
    for (int j = 0; j < e->n_ops; j++) {
        const et_operand *u = &e->op[m->op_map[j]];
        shapes.rank[j] = u->rank;
        for (int r = 0; r < u->rank; r++)
            shapes.dim[j][r] = u->dim[r];
        dt[j] = u->dtype;
    }
    et_diag d;
    memset(&d, 0, sizeof d);
    et_status st = et_einsum_resolve(sub, NULL, &shapes, dt, out, &d);
    if (st != ET_OK)
        return st;
    /* an open axis stays open under the mapping */
    for (int p = 0; p < out->n_idx; p++)
        out->idx[p].open = e->idx[m->idx_map[p]].open;
    /* and a batched einsum's row axis (the output's first index, or a
     * summed index for rows summed) stays its row axis */
    for (int p = 0; e->n_rows && p < out->n_idx; p++)
        if (m->idx_map[p] == e->row_axis &&
            (p < out->n_out) == (e->row_axis < e->n_out) &&
            (p == 0 || p >= out->n_out)) {
            out->n_rows = e->n_rows;
            out->row_axis = p;
        }
    return ET_OK;
}

/* The size in a tuned_at text ("x=4096"), 0 when none. */
static int64_t tuned_at_size(const char *tuned_at)
{
    const char *eq = strchr(tuned_at, '=');
    return eq ? strtoll(eq + 1, NULL, 10) : 0;
}

/* Hash of the kernel of einsum te with opts applied, rendered for t;
 * false when the opts do not apply there or rendering fails. */
static bool source_hash_of(const et_einsum *te, const et_target *t,
                           const et_opt *opts, int n, char *hash)
{
    et_kernel *k = NULL;
    et_rendered r;
    memset(&r, 0, sizeof r);
    bool ok = false;
    if (et_kernel_init(te, t, &k) != ET_OK)
        return false;
    if (et_kernel_apply_opts(k, opts, n, NULL, 0) == ET_OK &&
        et_kernel_render(k, t->backend, NULL, &r) == ET_OK) {
        et_db_source_hash(r.source, &r.launch, hash);
        ok = true;
    }
    et_rendered_free(&r);
    et_kernel_free(k);
    return ok;
}

/*
 * Rewrites opts (in te's names) into e's names under m; applies them to
 * e's kernel for t. Returns ET_OK (out->opt, n_opts, opts set from the
 * kernel's resolved opts), ET_ERR_REFUSED with reason, or ET_ERR_NOMEM.
 */
static et_status rewrite(const et_einsum *te, const et_einsum *e,
                         const et_target *t, const et_match *m,
                         const et_opt *opts, int n, et_best *out,
                         char *reason, size_t cap)
{
    et_kernel *tk = NULL, *uk = NULL;
    et_opt mapped[ET_MAX_OPTS];
    et_status st = et_kernel_init(te, t, &tk);
    if (st != ET_OK)
        return st;
    for (int i = 0; i < n; i++) {
        mapped[i] = opts[i];
        et_axis_ref *refs[2] = {&mapped[i].axis, &mapped[i].axis2};
        int n_refs = opts[i].kind == ET_OPT_SWAP       ? 2
                     : et_opt_kind_is_global(opts[i].kind) ? 0
                                                       : 1;
        for (int a = 0; a < n_refs; a++) {
            int p = et_kernel_axis_find(tk, refs[a]);
            if (p < 0 || p >= te->n_idx) {
                snprintf(reason, cap, "opt %d names no axis of %.200s", i + 1,
                         te->text);
                st = ET_ERR_REFUSED;
                goto done;
            }
            refs[a]->pos = -1;
            snprintf(refs[a]->name, sizeof refs[a]->name, "%s",
                     e->idx[m->idx_map[p]].name);
        }
        if (opts[i].kind == ET_OPT_PREFETCH) {
            if (opts[i].operand < 0 || opts[i].operand >= te->n_ops) {
                snprintf(reason, cap, "PREFETCH of operand %d: %.200s has %d",
                         opts[i].operand, te->text, te->n_ops);
                st = ET_ERR_REFUSED;
                goto done;
            }
            mapped[i].operand = m->op_map[opts[i].operand];
        }
    }
    st = et_kernel_init(e, t, &uk);
    if (st != ET_OK)
        goto done;
    st = et_kernel_apply_opts(uk, mapped, n, reason, cap);
    if (st != ET_OK)
        goto done;
    memcpy(out->opt, uk->opts, (size_t)uk->n_opts * sizeof uk->opts[0]);
    out->n_opts = uk->n_opts;
    et_opts_format(uk->opts, uk->n_opts, out->opts, sizeof out->opts);
done:
    et_kernel_free(tk);
    et_kernel_free(uk);
    return st;
}

et_status et_best_map_opts(const et_db_trial *trial, const et_einsum *e,
                           const et_target *t, et_best *out, et_error *err)
{
    et_subscripts sub;
    et_einsum te;
    et_opt opts[ET_MAX_OPTS];
    int n = 0;
    et_diag d;
    memset(&d, 0, sizeof d);
    if (et_subscripts_parse(trial->einsum_text, &sub, &d) != ET_OK)
        return et_errorf(err, ET_ERR_INPUT, "stored einsum '%s': %s",
                         trial->einsum_text, d.msg);
    if (et_opts_parse(trial->opts, opts, ET_MAX_OPTS, &n, &d) != ET_OK)
        return et_errorf(err, ET_ERR_INPUT, "stored opts '%s': %s", trial->opts,
                         d.msg);

    /* candidate mappings: the identity first when the texts agree */
    et_match *cand = calloc(BEST_MAX_MATCHES + 1, sizeof *cand);
    if (!cand)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    int n_cand = 0;
    bool same = strcmp(trial->einsum_text, e->text) == 0;
    if (same) {
        for (int p = 0; p < ET_MAX_INDICES; p++)
            cand[0].idx_map[p] = p;
        for (int j = 0; j < ET_MAX_OPERANDS; j++)
            cand[0].op_map[j] = j;
        n_cand = 1;
    }
    int n_match = 0;
    et_diag md;
    memset(&md, 0, sizeof md);
    if (et_einsum_match(&sub, e, cand + n_cand, BEST_MAX_MATCHES, &n_match,
                        &md) == ET_OK)
        n_cand += n_match < BEST_MAX_MATCHES ? n_match : BEST_MAX_MATCHES;
    if (n_cand == 0) {
        free(cand);
        return et_errorf(err, ET_ERR_INPUT,
                         "'%s' is not a renaming of '%s': %s", e->text,
                         trial->einsum_text, md.msg);
    }

    int fallback = -1;
    et_best fb;
    char reason[1024] = "", why[1024] = "";
    et_status st = ET_ERR_REFUSED;
    for (int c = 0; c < n_cand; c++) {
        if (pulled_back(&sub, e, &cand[c], &te) != ET_OK)
            continue;
        et_best b;
        memset(&b, 0, sizeof b);
        et_status rs = rewrite(&te, e, t, &cand[c], opts, n, &b, why,
                               sizeof why);
        if (rs == ET_ERR_NOMEM) {
            st = rs;
            break;
        }
        if (rs != ET_OK) {
            if (!reason[0])
                snprintf(reason, sizeof reason, "%s", why);
            continue;
        }
        char hash[ET_DB_HASH_LEN] = "";
        /* an open einsum's trial was measured (and hashed) at its tune-at
         * size */
        int oa = et_einsum_open_axis(&te);
        int64_t at = tuned_at_size(trial->tuned_at);
        if (oa >= 0 && at > 0)
            et_einsum_set_size(&te, oa, at, NULL);
        b.exact = trial->source_hash[0] &&
                  source_hash_of(&te, t, opts, n, hash) &&
                  strcmp(hash, trial->source_hash) == 0;
        if (b.exact || fallback < 0) {
            fallback = c;
            fb = b;
        }
        if (b.exact)
            break;
    }
    free(cand);
    if (st == ET_ERR_NOMEM)
        return et_errorf(err, st, "out of memory");
    if (fallback < 0)
        return et_errorf(err, ET_ERR_REFUSED,
                         "the opts '%s' of '%s' do not apply to '%s': %s",
                         trial->opts, trial->einsum_text, e->text,
                         reason[0] ? reason : "no mapping fits");
    fb.trial = *trial;
    *out = fb;
    return ET_OK;
}

static const char *const source_names[] = {"exact", "open", "fallback"};
static_assert(sizeof(source_names) / sizeof(source_names[0]) ==
                  ET_BEST_SOURCE_COUNT,
              "source_names must match et_best_source");

const char *et_best_source_name(et_best_source s)
{
    return (unsigned)s < ET_BEST_SOURCE_COUNT ? source_names[s] : "?";
}

/* Could axis a of e be open: an output index that is the first dimension
 * of every array that has it (after a batched einsum's row axis), once,
 * and that no operand broadcasts along (einsum.h)? */
static bool openable(const et_einsum *e, int a)
{
    if (a >= e->n_out || (e->n_rows && a == e->row_axis))
        return false;
    for (int k = -1; k < e->n_ops; k++) {
        const et_operand *op = k < 0 ? &e->out : &e->op[k];
        int first = e->n_rows && op->rank > 0 &&
                    op->idx[0] == e->row_axis ? 1 : 0;
        for (int r = 0; r < op->rank; r++)
            if (op->idx[r] == a &&
                (r != first || op->dim[r] != e->idx[a].size))
                return false; /* not first, or broadcast along a */
    }
    return true;
}

/* "x=512,i=8" of the sizes in tsz (by e's index) that differ from e's,
 * and e's own for them; with open >= 0 that axis is always listed. */
static void size_texts(const et_einsum *e, const int64_t *tsz, int open,
                       char *tuned, char *asked, size_t cap)
{
    size_t nt = 0, na = 0;
    tuned[0] = asked[0] = '\0';
    for (int a = 0; a < e->n_idx; a++) {
        if (tsz[a] == e->idx[a].size && a != open)
            continue;
        if (nt < cap)
            nt += (size_t)snprintf(tuned + nt, cap - nt, "%s%s=%lld",
                                   nt ? "," : "", e->idx[a].name,
                                   (long long)tsz[a]);
        if (na < cap)
            na += (size_t)snprintf(asked + na, cap - na, "%s%s=%lld",
                                   na ? "," : "", e->idx[a].name,
                                   (long long)e->idx[a].size);
    }
}

/* One way to answer by re-applying another size's opts. */
typedef struct fb_cand {
    et_db_trial trial;
    double distance;
    int64_t tsz[ET_MAX_INDICES]; /* its sizes in the asker's indices */
} fb_cand;

typedef struct fb_list {
    et_db *db;
    const et_einsum *e;
    char canon[ET_DB_CANON_LEN];
    int64_t device_id;
    fb_cand *c;
    int n, cap;
    et_status st;
    et_error *err;
} fb_list;

/* Sizes of row einsum r seen through the match of r's text onto e nearest
 * to e's: the distance, and r's size per e index into tsz. */
static double nearest_match(const et_einsum *r, const et_einsum *e,
                            int64_t *tsz)
{
    et_subscripts sub;
    et_diag d;
    memset(&d, 0, sizeof d);
    if (et_subscripts_parse(r->text, &sub, &d) != ET_OK)
        return -1;
    et_match *m = calloc(BEST_MAX_MATCHES, sizeof *m);
    if (!m)
        return -1;
    int n = 0;
    double best = -1;
    if (et_einsum_match(&sub, e, m, BEST_MAX_MATCHES, &n, &d) == ET_OK) {
        if (n > BEST_MAX_MATCHES)
            n = BEST_MAX_MATCHES;
        for (int c = 0; c < n; c++) {
            double dist = 0;
            for (int p = 0; p < r->n_idx; p++) {
                int ua = m[c].idx_map[p];
                dist += fabs(log2((double)r->idx[p].size /
                                  (double)e->idx[ua].size));
            }
            if (best < 0 || dist < best) {
                best = dist;
                for (int p = 0; p < r->n_idx; p++)
                    tsz[m[c].idx_map[p]] = r->idx[p].size;
            }
        }
    }
    free(m);
    return best;
}

static int fb_row(void *arg, const et_db_einsum_row *row)
{
    fb_list *l = arg;
    if (strcmp(row->canonical, l->canon) == 0)
        return 0;
    et_einsum *r = malloc(sizeof *r);
    fb_cand *c = malloc(sizeof *c);
    if (!r || !c) {
        free(r);
        free(c);
        l->st = et_errorf(l->err, ET_ERR_NOMEM, "out of memory");
        return 1;
    }
    et_diag d;
    memset(&d, 0, sizeof d);
    bool found = false;
    if (et_einsum_from_canonical(row->canonical, r, &d) == ET_OK &&
        et_db_best_ids(l->db, row->id, l->device_id, &c->trial, &found,
                       l->err) == ET_OK &&
        found) {
        int oa = et_einsum_open_axis(r);
        int64_t at = tuned_at_size(c->trial.tuned_at);
        if (oa >= 0 && at > 0)
            et_einsum_set_size(r, oa, at, NULL);
        c->distance = nearest_match(r, l->e, c->tsz);
        if (c->distance >= 0) {
            if (l->n == l->cap) {
                int nc = l->cap ? 2 * l->cap : 8;
                fb_cand *g = realloc(l->c, (size_t)nc * sizeof *g);
                if (!g) {
                    l->st = et_errorf(l->err, ET_ERR_NOMEM, "out of memory");
                    free(r);
                    free(c);
                    return 1;
                }
                l->c = g;
                l->cap = nc;
            }
            l->c[l->n++] = *c;
        }
    }
    free(r);
    free(c);
    return 0;
}

static int fb_cmp(const void *a, const void *b)
{
    const fb_cand *x = a, *y = b;
    if (x->distance != y->distance)
        return x->distance < y->distance ? -1 : 1;
    if (x->trial.median_s != y->trial.median_s)
        return x->trial.median_s < y->trial.median_s ? -1 : 1;
    return x->trial.id < y->trial.id ? -1 : x->trial.id > y->trial.id;
}

/* The best trial of every other einsum of e's structure form on the
 * device, nearest first (l->c, l->n; free l->c). No device row: none. */
static et_status near_list(et_db *db, const et_einsum *e,
                           const et_device_info *info, fb_list *l,
                           et_error *err)
{
    memset(l, 0, sizeof *l);
    l->db = db;
    l->e = e;
    l->err = err;
    et_einsum_canonical(e, l->canon, sizeof l->canon);
    bool have_dev = false;
    et_status st = et_db_device_find(db, info, &l->device_id, &have_dev, err);
    if (st != ET_OK || !have_dev)
        return st;
    st = et_db_einsums_like(db, e, fb_row, l, err);
    if (st == ET_OK)
        st = l->st;
    if (st == ET_OK && l->n > 1)
        qsort(l->c, (size_t)l->n, sizeof *l->c, fb_cmp);
    return st;
}

/* Step 3 of et_best_find. */
static et_status find_fallback(et_db *db, const et_einsum *e,
                               const et_device_info *info, et_best *out,
                               bool *found, et_error *err)
{
    fb_list l;
    et_status st = near_list(db, e, info, &l, err);
    for (int i = 0; st == ET_OK && i < l.n; i++) {
        et_error e2 = {{0}};
        et_best b;
        memset(&b, 0, sizeof b);
        et_status ms = et_best_map_opts(&l.c[i].trial, e, &info->target, &b,
                                        &e2);
        if (ms == ET_ERR_NOMEM) {
            st = et_errorf(err, ms, "%s", e2.msg);
            break;
        }
        if (ms != ET_OK)
            continue; /* the rules refuse these opts at the asked sizes */
        b.exact = false;
        b.source = ET_BEST_FALLBACK;
        b.e = *e;
        b.open_axis = et_einsum_open_axis(e);
        b.distance = l.c[i].distance;
        size_texts(e, l.c[i].tsz, -1, b.tuned_at, b.applied_at,
                   sizeof b.tuned_at);
        *out = b;
        *found = true;
        break;
    }
    free(l.c);
    return st;
}

et_status et_best_find(et_db *db, const et_einsum *e,
                       const et_device_info *info, bool exact_only,
                       et_best *out, bool *found, et_error *err)
{
    et_db_trial *t = malloc(sizeof *t);
    et_einsum *eo = malloc(sizeof *eo);
    et_best *b = malloc(sizeof *b);
    *found = false;
    et_status st = ET_OK;
    if (!t || !eo || !b) {
        st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* 1. exact */
    st = et_db_best(db, e, info, t, found, err);
    if (st == ET_OK && *found) {
        memset(b, 0, sizeof *b);
        st = et_best_map_opts(t, e, &info->target, b, err);
        if (st != ET_OK) {
            *found = false;
            goto done;
        }
        b->source = ET_BEST_EXACT;
        b->e = *e;
        b->open_axis = et_einsum_open_axis(e);
        if (b->open_axis >= 0) {
            int64_t tsz[ET_MAX_INDICES];
            for (int a = 0; a < e->n_idx; a++)
                tsz[a] = e->idx[a].size;
            int64_t at = tuned_at_size(t->tuned_at);
            if (at > 0)
                tsz[b->open_axis] = at;
            size_texts(e, tsz, b->open_axis, b->tuned_at, b->applied_at,
                       sizeof b->tuned_at);
        }
        *out = *b;
        goto done;
    }
    if (st != ET_OK)
        goto done;
    /* 2. an open axis that covers the asked size */
    for (int a = 0; a < e->n_out && et_einsum_open_axis(e) < 0; a++) {
        if (!openable(e, a))
            continue;
        *eo = *e;
        eo->idx[a].open = true;
        bool hit = false;
        st = et_db_best(db, eo, info, t, &hit, err);
        if (st != ET_OK)
            goto done;
        if (!hit)
            continue;
        et_error e2 = {{0}};
        memset(b, 0, sizeof *b);
        if (et_best_map_opts(t, eo, &info->target, b, &e2) != ET_OK)
            continue;
        b->source = ET_BEST_OPEN;
        b->e = *eo;
        b->open_axis = a;
        int64_t tsz[ET_MAX_INDICES];
        for (int x = 0; x < e->n_idx; x++)
            tsz[x] = e->idx[x].size;
        int64_t at = tuned_at_size(t->tuned_at);
        if (at > 0)
            tsz[a] = at;
        size_texts(e, tsz, a, b->tuned_at, b->applied_at,
                   sizeof b->tuned_at);
        *out = *b;
        *found = true;
        goto done;
    }
    /* 3. another size's opts, re-applied */
    if (!exact_only)
        st = find_fallback(db, e, info, out, found, err);
done:
    free(t);
    free(eo);
    free(b);
    return st;
}

/* "x=512,i=16,k=16,j=16": every axis of e at the sizes tsz (by e's
 * index), in e's names. */
static void all_sizes_text(const et_einsum *e, const int64_t *tsz, char *out,
                           size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int a = 0; a < e->n_idx && n < cap; a++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s=%lld", a ? "," : "",
                              e->idx[a].name, (long long)tsz[a]);
}

/* Fills b's description of where trial tr comes from: its sizes tsz in
 * e's names, the distance. */
static void describe(et_best *b, const et_einsum *e, const et_db_trial *tr,
                     const int64_t *tsz, double distance)
{
    b->trial = *tr;
    b->distance = distance;
    size_texts(e, tsz, -1, b->tuned_at, b->applied_at, sizeof b->tuned_at);
    all_sizes_text(e, tsz, b->sizes, sizeof b->sizes);
}

/* Takes b into out[*n] unless its opts are there already. */
static void take_distinct(et_best *out, int *n, const et_best *b)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(out[i].opts, b->opts) == 0)
            return;
    out[(*n)++] = *b;
}

et_status et_best_nearest(et_db *db, const et_einsum *e,
                          const et_device_info *info, int max, et_best *out,
                          int *n_out, et_best_skip_fn skip, void *arg,
                          et_error *err)
{
    *n_out = 0;
    if (max <= 0)
        return ET_OK;
    et_best *b = malloc(sizeof *b);
    fb_list l;
    memset(&l, 0, sizeof l);
    et_status st = ET_OK;
    if (!b) {
        st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* the other tuned problems of its structure, nearest first (not e's
     * own trials: a run of e repeated, or resumed after it was killed,
     * takes the path it took before) */
    st = near_list(db, e, info, &l, err);
    for (int i = 0; st == ET_OK && i < l.n && *n_out < max; i++) {
        et_error e2 = {{0}};
        memset(b, 0, sizeof *b);
        et_status ms = et_best_map_opts(&l.c[i].trial, e, &info->target, b,
                                        &e2);
        if (ms == ET_ERR_NOMEM) {
            st = et_errorf(err, ms, "%s", e2.msg);
            break;
        }
        b->exact = false;
        b->source = ET_BEST_FALLBACK;
        b->e = *e;
        b->open_axis = et_einsum_open_axis(e);
        describe(b, e, &l.c[i].trial, l.c[i].tsz, l.c[i].distance);
        if (ms == ET_OK) {
            take_distinct(out, n_out, b);
        } else if (skip) {
            snprintf(b->opts, sizeof b->opts, "%s", l.c[i].trial.opts);
            skip(arg, b, e2.msg);
        }
    }
done:
    free(l.c);
    free(b);
    return st;
}

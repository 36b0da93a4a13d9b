/*
 * best.c - the best known kernel for an einsum, its opts carried over to
 * the asker's names (see best.h).
 */
#include "tune/best.h"

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
    return et_einsum_resolve(sub, NULL, &shapes, dt, out, &d);
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

et_status et_best_find(et_db *db, const et_einsum *e,
                       const et_device_info *info, et_best *out, bool *found,
                       et_error *err)
{
    et_db_trial *t = malloc(sizeof *t);
    if (!t)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    *found = false;
    et_status st = et_db_best(db, e, info, t, found, err);
    if (st == ET_OK && *found) {
        st = et_best_map_opts(t, e, &info->target, out, err);
        if (st != ET_OK)
            *found = false;
    }
    free(t);
    return st;
}

/*
 * test_model.c - the cost model (model/model.h) and its use: features of
 * kernels, the "not fitted" rule, ranking after training on planted
 * trials (fed directly, and through a scratch tuning database and the
 * tuning loop's learner, tune/learn.h), and a search ranked by it
 * (spaces/search.h's predict hook) against a synthetic cost: the fast
 * kernel reached after fewer evaluations, skipped candidates never
 * evaluated nor charged to the budget. No device.
 *
 * The planted rule: on a matmul, a kernel whose contiguous output axis j
 * is upcast by 4 or 8 (whole vectors of the target's width 4) takes 0.3
 * of the untransformed kernel's time; every other kernel 1.0 or a little
 * more (5 % per opt, a few % of deterministic noise).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>

#include <cmocka.h>

#include "db/db.h"
#include "model/model.h"
#include "spaces/search.h"
#include "transforms/kernel.h"
#include "tune/learn.h"

/* The target every kernel here is built for: vectors of 4 f32. */
static et_target target(void)
{
    et_target t = et_target_generic(ET_BACKEND_OPENCL);
    t.preferred_vector_width[ET_F32] = 4;
    t.compute_units = 2;
    return t;
}

static et_einsum matmul(int64_t n)
{
    char shape[128];
    snprintf(shape, sizeof shape, "i=%lld,k=%lld,j=%lld", (long long)n,
             (long long)n, (long long)n);
    et_einsum e;
    et_diag d;
    if (et_einsum_from_strings("ik,kj->ij", shape, "f32", &e, &d) != ET_OK)
        fail_msg("%s", d.msg);
    return e;
}

/* The kernel of e with opts text applied; NULL when refused. */
static et_kernel *kernel_of(const et_einsum *e, const char *opts)
{
    et_target t = target();
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(e, &t, &k), ET_OK);
    et_opt o[ET_MAX_OPTS];
    int n = 0;
    et_diag d;
    if (et_opts_parse(opts, o, ET_MAX_OPTS, &n, &d) != ET_OK)
        fail_msg("%s: %s", opts, d.msg);
    if (et_kernel_apply_opts(k, o, n, NULL, 0) != ET_OK) {
        et_kernel_free(k);
        return NULL;
    }
    return k;
}

/* The planted time of k relative to its untransformed kernel. */
static double planted(const et_kernel *k)
{
    int j = k->e.n_out - 1;
    int64_t up = 1;
    for (int i = 0; i < k->n_parts; i++)
        if (k->part[i].kind == ET_PART_UPCAST && k->part[i].axis == j)
            up *= k->part[i].size;
    double t = up == 4 || up == 8 ? 0.3 : 1.0;
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < k->n_opts; i++)
        h = (h ^ (uint64_t)(k->opts[i].kind * 131 + k->opts[i].amt)) *
            1099511628211ULL;
    return t * (1.0 + 0.05 * k->n_opts) * (1.0 + 0.04 * (double)(h % 7) / 7);
}

/* The training opts: single opts and pairs from this list. */
static const char *const pool[] = {
    "UPCAST(i,2)", "UPCAST(i,4)", "UPCAST(i,8)", "UPCAST(j,2)",
    "UPCAST(j,4)", "UPCAST(j,8)", "UNROLL(k,2)", "UNROLL(k,4)",
    "UNROLL(k,8)", "LOCAL(i,4)",  "LOCAL(i,16)", "LOCAL(j,4)",
};
#define N_POOL (int)(sizeof pool / sizeof pool[0])

/* Calls fn for "" and every single opt and pair of the pool. */
static void each_opts(void (*fn)(void *, const char *), void *arg)
{
    fn(arg, "");
    char text[128];
    for (int a = 0; a < N_POOL; a++) {
        fn(arg, pool[a]);
        for (int b = a + 1; b < N_POOL; b++) {
            snprintf(text, sizeof text, "%s %s", pool[a], pool[b]);
            fn(arg, text);
        }
    }
}

typedef struct feed {
    et_model *m;
    et_einsum e;
    int added;
} feed;

static void feed_one(void *arg, const char *opts)
{
    feed *f = arg;
    et_kernel *k = kernel_of(&f->e, opts);
    if (!k)
        return;
    et_model_problem p = {1e-3, 0};
    assert_int_equal(et_model_add(f->m, k, &p, 1e-3 * planted(k)), ET_OK);
    f->added++;
    et_kernel_free(k);
}

/* A model trained on the planted rule over matmuls of 64, 128, 256. */
static et_model *trained(void)
{
    feed f = {et_model_init(), {0}, 0};
    assert_non_null(f.m);
    for (int64_t n = 64; n <= 256; n *= 2) {
        f.e = matmul(n);
        each_opts(feed_one, &f);
    }
    et_error err = {{0}};
    assert_int_equal(et_model_fit(f.m, &err), ET_OK);
    assert_true(et_model_fitted(f.m));
    assert_int_equal(et_model_n_fitted(f.m), f.added);
    return f.m;
}

static const char *const fast[] = {"UPCAST(j,4)", "UPCAST(j,8)",
                                   "UPCAST(j,4) UNROLL(k,4)"};
static const char *const slow[] = {
    "", "UPCAST(i,4)", "UPCAST(i,8)", "UNROLL(k,4)", "LOCAL(i,16)",
    "UPCAST(j,2)", "UPCAST(i,2) UNROLL(k,4)", "UPCAST(i,4) UPCAST(j,2)",
};

/* Every fast kernel of a problem never trained on is predicted faster
 * than every slow one (so a random or inverted ranking fails). */
static void assert_ranks(double (*predict)(void *, const et_kernel *),
                         void *arg)
{
    et_einsum e = matmul(512);
    double worst_fast = -INFINITY, best_slow = INFINITY;
    for (size_t i = 0; i < sizeof fast / sizeof fast[0]; i++) {
        et_kernel *k = kernel_of(&e, fast[i]);
        assert_non_null(k);
        double p = predict(arg, k);
        assert_false(isnan(p));
        worst_fast = fmax(worst_fast, p);
        et_kernel_free(k);
    }
    for (size_t i = 0; i < sizeof slow / sizeof slow[0]; i++) {
        et_kernel *k = kernel_of(&e, slow[i]);
        assert_non_null(k);
        double p = predict(arg, k);
        assert_false(isnan(p));
        if (p <= worst_fast)
            fail_msg("slow '%s' predicted %g, a fast one %g", slow[i], p,
                     worst_fast);
        best_slow = fmin(best_slow, p);
        et_kernel_free(k);
    }
    /* and by a margin: ln(0.3) against ln(1) */
    assert_true(best_slow - worst_fast > 0.5);
}

static double model_predict(void *arg, const et_kernel *k)
{
    et_model_problem p = {1e-3, 0};
    return et_model_predict(arg, k, &p);
}

static void test_features(void **state)
{
    (void)state;
    et_einsum e = matmul(64);
    double x[ET_MODEL_N_FEATURES];
    et_kernel *k = kernel_of(&e, "UPCAST(j,4) UPCAST(i,2) UNROLL(k,8)");
    assert_non_null(k);
    et_model_features(k, NULL, x);
    assert_true(x[ET_MF_UPCAST_INNER] == 2);
    assert_true(x[ET_MF_UPCAST_OUTER] == 1);
    assert_true(x[ET_MF_TILE_SQ] == 9);
    assert_true(x[ET_MF_UNROLL] == 3);
    /* k is the last dimension of ik */
    assert_true(x[ET_MF_UNROLL_CONTIG] == 3);
    assert_true(x[ET_MF_VECTOR] == 1);
    /* 64/2 x 64/4 work-items, 64^3 iterations */
    assert_true(x[ET_MF_ITEMS] == 9);
    assert_true(x[ET_MF_WORK] == 9);
    assert_true(x[ET_MF_F64] == 0);
    et_kernel_free(k);
    k = kernel_of(&e, "UPCAST(j,2) LOCAL(i,16)");
    et_model_problem p = {4e-3, 1e-3};
    et_model_features(k, &p, x);
    assert_true(x[ET_MF_VECTOR] == 0);
    assert_true(x[ET_MF_LOCAL] == 4);
    assert_true(x[ET_MF_HEADROOM] == 2);
    /* 2048 work-items: 64 per compute unit x 2 units is 128: no starving */
    assert_true(x[ET_MF_STARVE] == 0);
    assert_true(x[ET_MF_LOOP] == 0 && x[ET_MF_STAGE] == 0);
    et_kernel_free(k);
    /* kj is read alike by the work-items along i: staged */
    k = kernel_of(&e, "LOCAL(i,16) STAGE");
    assert_non_null(k);
    et_model_features(k, NULL, x);
    assert_true(x[ET_MF_STAGE] == 1);
    assert_true(x[ET_MF_LOOP] == 0);
    et_kernel_free(k);
    /* 8 values of j iterated inside a work-item: 64 x 64/8 work-items */
    k = kernel_of(&e, "LOOP(j,8)");
    assert_non_null(k);
    et_model_features(k, NULL, x);
    assert_true(x[ET_MF_LOOP] == 3);
    assert_true(x[ET_MF_STAGE] == 0 && x[ET_MF_FACTOR] == 0);
    assert_true(x[ET_MF_ITEMS] == 9);
    et_kernel_free(k);
    for (int f = 0; f < ET_MF_COUNT; f++)
        assert_string_not_equal(et_model_feature_name((et_model_feature)f),
                                "?");
}

static void test_not_fitted(void **state)
{
    (void)state;
    et_model *m = et_model_init();
    et_einsum e = matmul(64);
    et_kernel *k = kernel_of(&e, "UPCAST(j,4)");
    et_model_problem p = {1.0, 0};
    for (int i = 0; i < ET_MODEL_MIN_SAMPLES - 1; i++)
        assert_int_equal(et_model_add(m, k, &p, 0.5 + 0.01 * i), ET_OK);
    /* bad times are refused */
    assert_int_equal(et_model_add(m, k, &p, NAN), ET_ERR_INPUT);
    assert_int_equal(et_model_add(m, k, &p, 0), ET_ERR_INPUT);
    assert_int_equal(et_model_n_samples(m), ET_MODEL_MIN_SAMPLES - 1);
    et_error err = {{0}};
    assert_int_equal(et_model_fit(m, &err), ET_OK);
    assert_false(et_model_fitted(m));
    assert_true(isnan(et_model_predict(m, k, &p)));
    assert_int_equal(et_model_add(m, k, &p, 0.5), ET_OK);
    assert_int_equal(et_model_fit(m, &err), ET_OK);
    assert_true(et_model_fitted(m));
    assert_false(isnan(et_model_predict(m, k, &p)));
    et_kernel_free(k);
    et_model_free(m);
}

static void test_planted_ranking(void **state)
{
    (void)state;
    et_model *m = trained();
    assert_ranks(model_predict, m);
    /* the coefficient of a whole-vector upcast is negative (faster) */
    assert_true(et_model_coef(m, ET_MF_VECTOR) < 0);
    et_model_free(m);
}

/* ---- through a scratch database and the tuning loop's learner ----------- */

typedef struct dbfeed {
    et_db *db;
    int64_t einsum_id, device_id;
    et_einsum e;
    double base_s;
    int recorded;
} dbfeed;

static void record(dbfeed *f, const char *opts, double time_s)
{
    et_db_trial tr;
    et_error err = {{0}};
    assert_int_equal(et_db_trial_init(&tr, f->einsum_id, &f->e, f->device_id,
                                      opts, NULL, NULL, &err), ET_OK);
    tr.outcome = ET_OUTCOME_OK;
    tr.median_s = tr.low_s = tr.high_s = time_s;
    tr.runs = 10;
    tr.verify_trials = 3;
    if (et_db_trial_record(f->db, &tr, NULL, &err) != ET_OK)
        fail_msg("%s", err.msg);
    f->recorded++;
}

static void db_one(void *arg, const char *opts)
{
    dbfeed *f = arg;
    et_kernel *k = kernel_of(&f->e, opts);
    if (!k)
        return;
    record(f, opts, f->base_s * planted(k));
    et_kernel_free(k);
}

static double learn_predict(void *arg, const et_kernel *k)
{
    return et_tune_learn_predict(arg, k);
}

static void test_planted_db(void **state)
{
    (void)state;
    char dir[] = "/tmp/et_model_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/tuning.db", dir);
    et_error err = {{0}};
    et_db *db = NULL;
    if (et_db_open(path, &db, &err) != ET_OK)
        fail_msg("%s", err.msg);
    et_device_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.name, sizeof info.name, "planted device");
    snprintf(info.driver_version, sizeof info.driver_version, "1");
    info.target = target();
    int64_t dev = 0;
    assert_int_equal(et_db_device_id(db, &info, &dev, &err), ET_OK);
    dbfeed f = {db, 0, dev, {0}, 0, 0};
    for (int64_t n = 64; n <= 256; n *= 2) {
        f.e = matmul(n);
        f.base_s = 1e-6 * (double)(n * n * n) / 1e3;
        assert_int_equal(et_db_einsum_id(db, &f.e, &f.einsum_id, &err),
                         ET_OK);
        each_opts(db_one, &f);
        /* an opt that no longer applies is dropped */
        record(&f, "UPCAST(j,3)", f.base_s * 0.2);
    }
    /* an einsum without an untransformed trial teaches nothing */
    f.e = matmul(32);
    assert_int_equal(et_db_einsum_id(db, &f.e, &f.einsum_id, &err), ET_OK);
    record(&f, "UPCAST(i,4)", 1e-9);

    et_einsum e = matmul(512);
    et_tune_learn L;
    et_tune_model_report rep;
    memset(&rep, 0, sizeof rep);
    et_target t = target();
    assert_int_equal(et_tune_learn_init(&L, db, dev, &e, &t, NULL, 0.1, &rep,
                                        &err), ET_OK);
    /* every recorded trial of the three problems but the three that no
     * longer apply (the 32 one has no baseline: not a sample) */
    assert_int_equal(rep.db_samples, f.recorded - 1 - 3);
    assert_int_equal(rep.db_dropped, 3);
    assert_true(rep.fitted_at_start);
    assert_int_equal(rep.fitted_on, rep.db_samples);
    assert_ranks(learn_predict, &L);
    /* online samples refit the model every ET_TUNE_LEARN_REFIT */
    et_kernel *k = kernel_of(&e, "UPCAST(j,4)");
    for (int i = 0; i < ET_TUNE_LEARN_REFIT; i++)
        et_tune_learn_add(&L, k, 0.1 * 0.3);
    assert_int_equal(rep.run_samples, ET_TUNE_LEARN_REFIT);
    assert_int_equal(rep.fitted_on, rep.db_samples + ET_TUNE_LEARN_REFIT);
    et_kernel_free(k);
    et_tune_learn_free(&L, 10, 4);
    assert_true(rep.used);
    assert_int_equal(rep.skipped, 4);

    /* a device with no trials: nothing learnt, not fitted */
    snprintf(info.name, sizeof info.name, "another device");
    assert_int_equal(et_db_device_id(db, &info, &dev, &err), ET_OK);
    memset(&rep, 0, sizeof rep);
    assert_int_equal(et_tune_learn_init(&L, db, dev, &e, &t, NULL, 0.1, &rep,
                                        &err), ET_OK);
    assert_int_equal(rep.db_samples, 0);
    assert_false(rep.fitted_at_start);
    assert_non_null(strstr(rep.note, "needed to fit"));
    k = kernel_of(&e, "UPCAST(j,4)");
    assert_true(isnan(et_tune_learn_predict(&L, k)));
    et_kernel_free(k);
    et_tune_learn_free(&L, 0, 0);
    assert_false(rep.used);

    et_db_close(db);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- a search ranked by the model ------------------------------------------ */

typedef struct srec {
    int n;                /* evaluated (callback calls, not refused) */
    int first_fast;       /* evaluation number of the first fast kernel */
    double best;
    uint64_t keys[4096];
    et_model *m;          /* the predictor's, or NULL */
    int predictions;
} srec;

static int search_cb(void *user, const et_candidate *c, et_eval_result *r)
{
    srec *R = user;
    if (c->refused)
        return 0;
    assert_true(R->n < 4096);
    R->keys[R->n++] = c->key;
    r->status = ET_EVAL_OK;
    r->time_s = planted(c->kernel);
    if (r->time_s < 0.5 && R->first_fast == 0)
        R->first_fast = R->n;
    if (r->time_s < R->best)
        R->best = r->time_s;
    return 0;
}

static double search_predict(void *user, const et_kernel *k)
{
    srec *R = user;
    R->predictions++;
    et_model_problem p = {1e-3, 0};
    return et_model_predict(R->m, k, &p);
}

/* UPCAST comes last in the pool: a search without the model meets the
 * fast kernels late in its first step. */
static const char space_yaml[] =
    "name: ranked\n"
    "einsum: any\n"
    "actions:\n"
    "  - {op: UNROLL, axis: any_reduce, amt: [2, 4, 8]}\n"
    "  - {op: LOCAL,  axis: any_global, amt: [2, 4, 8, 16]}\n"
    "  - {op: UPCAST, axis: any_global, amt: [2, 4, 8]}\n"
    "max_depth: 3\n";

static void run_search(et_search_kind kind, et_model *m, int budget,
                       srec *R, et_search_stats *st)
{
    et_space *s = NULL;
    et_diag d;
    if (et_space_load_text(space_yaml, strlen(space_yaml), "ranked", &s,
                           &d) != ET_OK)
        fail_msg("%s", d.msg);
    et_einsum e = matmul(512);
    et_target t = target();
    et_binding *b = NULL;
    if (et_space_bind(s, &e, &t, &b, &d) != ET_OK)
        fail_msg("%s", d.msg);
    memset(R, 0, sizeof *R);
    R->best = INFINITY;
    R->m = m;
    et_search_opts o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.budget = budget;
    o.seed = 7;
    o.predict = m ? search_predict : NULL;
    assert_int_equal(et_search_run(b, &o, search_cb, R, st, &d), ET_OK);
    et_binding_free(b);
    et_space_free(s);
}

static void test_search_ranked(void **state)
{
    (void)state;
    et_model *m = trained();
    srec *plain = calloc(1, sizeof *plain), *ranked = calloc(1, sizeof *ranked);
    et_search_stats sp, sr;
    run_search(ET_SEARCH_BEAM, NULL, 40, plain, &sp);
    run_search(ET_SEARCH_BEAM, m, 40, ranked, &sr);
    /* without the predictor: nothing ranked, the fast kernel late */
    assert_int_equal(sp.model_ranked, 0);
    assert_int_equal(sp.model_skipped, 0);
    assert_int_equal(plain->predictions, 0);
    assert_true(plain->first_fast > 5);
    /* with it: the fast kernel among the first evaluated, at the same
     * best or better */
    assert_true(ranked->first_fast > 0);
    assert_true(ranked->first_fast < plain->first_fast);
    assert_true(ranked->first_fast <= 3);
    assert_true(ranked->best < 0.5);
    /* skipped ones were never evaluated: the callback saw only answered
     * ones, each once */
    assert_true(sr.model_skipped > 0);
    assert_true(sr.model_ranked >= sr.model_skipped);
    assert_int_equal(sr.answered, ranked->n);
    assert_true(sr.answered <= 40);
    for (int i = 0; i < ranked->n; i++)
        for (int j = i + 1; j < ranked->n; j++)
            assert_true(ranked->keys[i] != ranked->keys[j]);
    /* nor charged to the budget: the first round alone answers 10 (the
     * start and 9 of 17) and skips 8; a budget of 12 still leaves room
     * for the second round */
    run_search(ET_SEARCH_BEAM, m, 12, ranked, &sr);
    assert_true(sr.model_skipped >= 8);
    assert_int_equal(sr.answered, 12);
    assert_int_equal(ranked->n, 12);
    assert_string_equal(sr.stop_reason, "budget");
    /* an untrained (not fitted) model ranks nothing: the search is the
     * plain one */
    et_model *empty = et_model_init();
    srec *same = calloc(1, sizeof *same);
    et_search_stats ss;
    run_search(ET_SEARCH_BEAM, empty, 40, same, &ss);
    assert_int_equal(ss.model_skipped, 0);
    assert_int_equal(same->n, plain->n);
    for (int i = 0; i < plain->n; i++)
        assert_true(same->keys[i] == plain->keys[i]);

    /* random search: pools ranked, the fast kernel sooner */
    run_search(ET_SEARCH_RANDOM, NULL, 30, plain, &sp);
    run_search(ET_SEARCH_RANDOM, m, 30, ranked, &sr);
    assert_true(sr.model_skipped > 0);
    assert_int_equal(sr.answered, ranked->n);
    assert_true(ranked->first_fast > 0);
    assert_true(plain->first_fast == 0 ||
                ranked->first_fast <= plain->first_fast);
    free(plain);
    free(ranked);
    free(same);
    et_model_free(empty);
    et_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_not_fitted),
        cmocka_unit_test(test_planted_ranking),
        cmocka_unit_test(test_planted_db),
        cmocka_unit_test(test_search_ranked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

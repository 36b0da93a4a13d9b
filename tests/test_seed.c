/*
 * test_seed.c - seeding a search from the best opts of the nearest tuned
 * problems. The search's part (spaces/search.h) with synthetic costs and
 * no device: seeds come first, the beam starts from the best of the start
 * kernel and the seeds, a seed that is a kernel seen before is a
 * duplicate, one that does not apply is dropped, and a seed at the
 * optimum reaches it in fewer evaluations than no seed. The tuning run's
 * part on the suite's device, through the API's run with a scratch database:
 * after one size is tuned, another size's run proposes that best first,
 * marked as a seed with where it came from; --no-seed proposes none; a
 * best whose UPCAST does not divide the new size is dropped and the run
 * goes on; the structure's suggestions (transforms/heuristic.h) are seeds
 * marked as such. Run from the repository root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "api/api_impl.h"
#include "measure/remote.h"
#include "spaces/search.h"
#include "tests/suite_device.h"
#include "transforms/kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the search, no device -------------------------------------------- */

#define MAX_REC 1024

typedef struct rec {
    int n;                      /* answered candidates */
    char text[MAX_REC][200];    /* their opts */
    long seq[MAX_REC];
    int seed[MAX_REC];          /* et_candidate.seed */
    double t[MAX_REC];
    int n_dup;                  /* on_duplicate */
    int dup_seed[MAX_REC];
    long dup_first[MAX_REC];
    int n_dropped;              /* on_seed_dropped */
    int dropped[MAX_REC];
    char dropped_why[MAX_REC][200];
} rec;

/* Synthetic cost of an opt list: LOCAL 4, UPCAST 2 and UNROLL 4 are good,
 * anything else a little; deeper lists are better, so the beam needs
 * several steps to reach its best. */
static double cost(const et_candidate *c)
{
    double t = 10.0;
    for (int i = 0; i < c->n_opts; i++) {
        const et_opt *o = &c->opts[i];
        double a = (double)o->amt;
        switch (o->kind) {
        case ET_OPT_LOCAL: t -= 1.0 - fabs(a - 4.0) / 8.0; break;
        case ET_OPT_UPCAST: t -= 0.8 - fabs(a - 2.0) / 8.0; break;
        case ET_OPT_UNROLL: t -= 0.5 - fabs(a - 4.0) / 16.0; break;
        default: t -= 0.1; break;
        }
    }
    return t;
}

static int eval_cb(void *user, const et_candidate *c, et_eval_result *r)
{
    rec *R = user;
    if (c->refused)
        return 0;
    assert_true(R->n < MAX_REC);
    snprintf(R->text[R->n], sizeof R->text[0], "%s", c->opts_text);
    R->seq[R->n] = c->seq;
    R->seed[R->n] = c->seed;
    r->status = ET_EVAL_OK;
    r->time_s = cost(c);
    R->t[R->n] = r->time_s;
    R->n++;
    return 0;
}

static int many_cb(void *user, et_eval_batch *B)
{
    for (int i = 0; i < B->n; i++) {
        if (B->c[i].refused)
            continue;
        eval_cb(user, &B->c[i], &B->r[i]);
        B->r[i].answered = true;
    }
    return 0;
}

static void dup_cb(void *user, const et_candidate *c, long first_seq)
{
    rec *R = user;
    R->dup_seed[R->n_dup] = c->seed;
    R->dup_first[R->n_dup++] = first_seq;
}

static void dropped_cb(void *user, int seed, const char *why)
{
    rec *R = user;
    snprintf(R->dropped_why[R->n_dropped], sizeof R->dropped_why[0], "%s",
             why);
    R->dropped[R->n_dropped++] = seed;
}

typedef struct fixture {
    et_space *s;
    et_binding *b;
} fixture;

static fixture bind_actions(void)
{
    fixture f = {NULL, NULL};
    et_diag d;
    et_einsum e;
    if (et_space_load("examples/actions.yaml", &f.s, &d) != ET_OK)
        fail_msg("space: %s", d.msg);
    if (et_einsum_from_strings("ik,kj->ij", "i=16,k=16,j=16", "f32", &e,
                               &d) != ET_OK)
        fail_msg("einsum: %s", d.msg);
    if (et_space_bind(f.s, &e, NULL, &f.b, &d) != ET_OK)
        fail_msg("bind: %s", d.msg);
    return f;
}

static void unbind(fixture *f)
{
    et_binding_free(f->b);
    et_space_free(f->s);
}

/* Seeds from opt texts; opts[i] holds seed i's list. */
static void seeds_parse(const char *const *texts, int n,
                        et_opt opts[][ET_MAX_OPTS], et_search_seed *seeds)
{
    et_diag d;
    for (int i = 0; i < n; i++) {
        if (et_opts_parse(texts[i], opts[i], ET_MAX_OPTS, &seeds[i].n_opts,
                          &d) != ET_OK)
            fail_msg("opts '%s': %s", texts[i], d.msg);
        seeds[i].opts = opts[i];
    }
}

/* Answers until the first whose time is at most t (1-based), n + 1 if
 * none. */
static int answers_to_reach(const rec *R, double t)
{
    for (int i = 0; i < R->n; i++)
        if (R->t[i] <= t)
            return i + 1;
    return R->n + 1;
}

static void test_search_seed_reaches_optimum_sooner(void **state)
{
    (void)state;
    fixture f = bind_actions();
    rec *A = calloc(1, sizeof *A), *B = calloc(1, sizeof *B);
    et_search_opts o = {.kind = ET_SEARCH_BEAM, .budget = 200};
    et_search_stats st;
    et_diag d;
    /* without seeds: where the beam ends, and when it got there */
    assert_int_equal(et_search_run(f.b, &o, eval_cb, A, &st, &d), ET_OK);
    assert_true(st.has_best);
    assert_int_equal(st.seeds, 0);
    double best = st.best_time_s;
    int plain = answers_to_reach(A, best);
    char best_text[4096];
    et_opts_format(st.best_opts, st.best_n_opts, best_text,
                   sizeof best_text);
    assert_true(st.best_n_opts >= 2); /* several beam steps deep */
    assert_true(plain > 2);

    /* seeded with that optimum: the start kernel, then the seed, which is
     * the optimum: reached at the second answer */
    /* (st is cleared when the next run starts: the opts are copied) */
    static et_opt best_opts[ET_MAX_OPTS];
    memcpy(best_opts, st.best_opts, sizeof best_opts);
    et_search_seed seed = {best_opts, st.best_n_opts};
    o.seeds = &seed;
    o.n_seeds = 1;
    assert_int_equal(et_search_run(f.b, &o, eval_cb, B, &st, &d), ET_OK);
    assert_string_equal(B->text[0], "");
    assert_int_equal(B->seed[0], 0);
    assert_string_equal(B->text[1], best_text);
    assert_int_equal(B->seed[1], 1);
    assert_int_equal(B->seq[1], 1);
    for (int i = 2; i < B->n; i++)
        assert_int_equal(B->seed[i], 0);
    assert_int_equal(st.seeds, 1);
    int seeded = answers_to_reach(B, best);
    assert_int_equal(seeded, 2);
    assert_true(seeded < plain);
    assert_true(st.best_time_s <= best);
    print_message("optimum reached after %d answers without a seed, %d "
                  "with\n", plain, seeded);
    free(A);
    free(B);
    unbind(&f);
}

/* The beam's first step keeps the best of the start kernel and the
 * seeds: with width 1 and a seed better than the start, every kernel of
 * the next step is built on the seed. */
static void test_search_beam_starts_from_best_seed(void **state)
{
    (void)state;
    fixture f = bind_actions();
    rec *R = calloc(1, sizeof *R);
    static et_opt opts[2][ET_MAX_OPTS];
    et_search_seed seeds[2];
    const char *const texts[] = {"UNROLL(k,4)", "LOCAL(i,4) UPCAST(j,2)"};
    seeds_parse(texts, 2, opts, seeds);
    et_search_opts o = {.kind = ET_SEARCH_BEAM, .budget = 30,
                        .beam_width = 1, .seeds = seeds, .n_seeds = 2};
    et_search_stats st;
    et_diag d;
    assert_int_equal(et_search_run(f.b, &o, eval_cb, R, &st, &d), ET_OK);
    assert_true(R->n > 4);
    assert_string_equal(R->text[1], "UNROLL(k,4)");
    assert_int_equal(R->seed[1], 1);
    assert_string_equal(R->text[2], "LOCAL(i,4) UPCAST(j,2)");
    assert_int_equal(R->seed[2], 2);
    for (int i = 3; i < R->n; i++)
        if (strncmp(R->text[i], "LOCAL(i,4) UPCAST(j,2) ", 23) != 0)
            fail_msg("candidate %d '%s' is not built on the best seed", i,
                     R->text[i]);
    free(R);
    unbind(&f);
}

/* A seed that is the start kernel or another seed again is a duplicate
 * (told, not charged); one whose opts do not apply is dropped, and the
 * search goes on. */
static void test_search_seed_duplicates_dropped(void **state)
{
    (void)state;
    fixture f = bind_actions();
    rec *R = calloc(1, sizeof *R);
    static et_opt opts[4][ET_MAX_OPTS];
    et_search_seed seeds[4];
    const char *const texts[] = {"", "UPCAST(j,4)", "UPCAST(i,3)",
                                 "UPCAST(j,4)"};
    seeds_parse(texts, 4, opts, seeds);
    et_search_opts o = {.kind = ET_SEARCH_BEAM, .budget = 6, .seeds = seeds,
                        .n_seeds = 4, .on_duplicate = dup_cb,
                        .on_seed_dropped = dropped_cb};
    et_search_stats st;
    et_diag d;
    assert_int_equal(et_search_run(f.b, &o, eval_cb, R, &st, &d), ET_OK);
    /* UPCAST(i,3): 3 does not divide 16 */
    assert_int_equal(st.seeds_dropped, 1);
    assert_int_equal(R->n_dropped, 1);
    assert_int_equal(R->dropped[0], 2);
    assert_true(R->dropped_why[0][0] != '\0');
    assert_int_equal(st.seeds, 3);
    /* answered: the start kernel, UPCAST(j,4) once, then the beam */
    assert_string_equal(R->text[0], "");
    assert_string_equal(R->text[1], "UPCAST(j,4)");
    assert_int_equal(R->seed[1], 2);
    assert_int_equal(R->seed[2], 0);
    assert_int_equal(st.answered, 6);
    assert_int_equal(R->n, 6);
    /* the empty seed is the start kernel, the last the second seed */
    assert_true(R->n_dup >= 2);
    assert_int_equal(R->dup_seed[0], 1);
    assert_int_equal(R->dup_first[0], R->seq[0]);
    assert_int_equal(R->dup_seed[1], 4);
    assert_int_equal(R->dup_first[1], R->seq[1]);
    free(R);
    unbind(&f);
}

/* Random search: the seeds before its draws, batched too; start opts
 * stay fixed: a seed that does not begin with them is dropped. */
static void test_search_random_seeds_first(void **state)
{
    (void)state;
    fixture f = bind_actions();
    static et_opt opts[2][ET_MAX_OPTS], start[ET_MAX_OPTS];
    et_search_seed seeds[2];
    const char *const texts[] = {"UPCAST(j,4)", "LOCAL(i,4) UNROLL(k,4)"};
    seeds_parse(texts, 2, opts, seeds);
    et_search_opts o = {.kind = ET_SEARCH_RANDOM, .budget = 5, .seed = 3,
                        .seeds = seeds, .n_seeds = 2,
                        .on_seed_dropped = dropped_cb, .batch = 3};
    et_search_stats st;
    et_diag d;
    for (int batched = 0; batched < 2; batched++) {
        rec *R = calloc(1, sizeof *R);
        if (batched)
            assert_int_equal(et_search_run_many(f.b, &o, many_cb, R, &st,
                                                &d),
                             ET_OK);
        else
            assert_int_equal(et_search_run(f.b, &o, eval_cb, R, &st, &d),
                             ET_OK);
        assert_int_equal(R->n, 5);
        assert_string_equal(R->text[0], "UPCAST(j,4)");
        assert_int_equal(R->seed[0], 1);
        assert_string_equal(R->text[1], "LOCAL(i,4) UNROLL(k,4)");
        assert_int_equal(R->seed[1], 2);
        for (int i = 2; i < R->n; i++)
            assert_int_equal(R->seed[i], 0);
        free(R);
    }
    /* with the start opts LOCAL(i,4): the first seed is dropped */
    assert_int_equal(et_opts_parse("LOCAL(i,4)", start, ET_MAX_OPTS,
                                   &o.n_start, &d),
                     ET_OK);
    o.start = start;
    rec *R = calloc(1, sizeof *R);
    assert_int_equal(et_search_run(f.b, &o, eval_cb, R, &st, &d), ET_OK);
    assert_int_equal(st.seeds_dropped, 1);
    assert_int_equal(R->n_dropped, 1);
    assert_int_equal(R->dropped[0], 0);
    assert_non_null(strstr(R->dropped_why[0], "start opts"));
    assert_string_equal(R->text[0], "LOCAL(i,4) UNROLL(k,4)");
    assert_int_equal(R->seed[0], 2);
    free(R);
    /* a bad seed count is bad input */
    o.n_seeds = ET_SEARCH_MAX_SEEDS + 1;
    rec *Q = calloc(1, sizeof *Q);
    assert_int_equal(et_search_run(f.b, &o, eval_cb, Q, &st, &d),
                     ET_ERR_INPUT);
    assert_int_equal(Q->n, 0);
    free(Q);
    unbind(&f);
}

/* ---- a tuning run on the PoCL device ------------------------------------- */

static et_device *g_dev;
static char g_dir[64], g_db[256];
static char g_first_best[1024]; /* the best opts of the first size */

typedef struct logs {
    char text[16384];
    int seed_lines, dropped_lines; /* from the database */
    int structural_lines;          /* the structure's suggestions */
} logs;

static void log_keep(void *arg, et_log_level lvl, const char *msg)
{
    (void)lvl;
    logs *L = arg;
    size_t n = strlen(L->text);
    snprintf(L->text + n, sizeof L->text - n, "%s\n", msg);
    if (strncmp(msg, "seed ", 5) == 0 &&
        !strstr(msg, "suggested by the einsum's structure"))
        L->seed_lines++;
    if (strncmp(msg, "seed ", 5) == 0 &&
        strstr(msg, "suggested by the einsum's structure"))
        L->structural_lines++;
    if (strncmp(msg, "seed dropped", 12) == 0)
        L->dropped_lines++;
}

/* Tunes einsum (f32) at shape with budget candidates, no final race, into
 * the scratch database; *out the report. */
static void tune(const char *einsum, const char *shape, int budget,
                 const char *start, int no_seeding, logs *L,
                 et_tune_report **out)
{
    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init(einsum, shape, "f32", &p, &d), ET_OK);
    et_tune_options o;
    memset(&o, 0, sizeof o);
    o.db = g_db;
    o.budget = budget;
    o.race = -1;
    o.start_opts = start;
    o.no_seeding = no_seeding;
    o.log = log_keep;
    o.log_arg = L;
    api_tune_env env = {.no_scale = true, .dev = g_dev};
    et_status st = api_tune_run(p, &o, &env, out, &d);
    if (st != ET_OK)
        fail_msg("tune %s: %s: %s", shape, et_status_str(st), d.msg);
    et_problem_free(p);
}

/* The first size, i=k=j=16, with UPCAST(j,4) fixed so that its best has
 * opts that do not divide j=6. */
static int setup_device(void **state)
{
    (void)state;
    et_error err;
    if (et_device_open_isolated(td_device(), NULL, &g_dev, &err) != ET_OK) {
        fprintf(stderr, "no device %s: %s\n", td_spec(), err.msg);
        return -1;
    }
    snprintf(g_dir, sizeof g_dir, "/tmp/et_seed_XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_db, sizeof g_db, "%s/t.db", g_dir);
    logs *L = calloc(1, sizeof *L);
    et_tune_report *r = NULL;
    tune("ik,kj->ij", "i=16,k=16,j=16", 3, "UPCAST(j,4)", 0, L, &r);
    /* an empty database: nothing to seed from */
    if (L->seed_lines != 0 || !strstr(L->text, "no seeds"))
        return -1;
    et_tune_summary sum;
    et_tune_report_summary(r, &sum);
    if (!sum.found || !strstr(sum.opts, "UPCAST(j,4)"))
        return -1;
    snprintf(g_first_best, sizeof g_first_best, "%s", sum.opts);
    et_tune_report_free(r);
    free(L);
    return 0;
}

static int teardown_device(void **state)
{
    (void)state;
    static const char *const tails[] = {"", "-wal", "-shm", "-journal"};
    char path[400];
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        snprintf(path, sizeof path, "%s%s", g_db, tails[i]);
        unlink(path);
    }
    rmdir(g_dir);
    et_device_close(g_dev);
    return 0;
}

/* Another size proposes the first size's best first, marked a seed with
 * its origin, in the report, the log and the JSON. */
static void test_tune_other_size_seeded(void **state)
{
    (void)state;
    logs *L = calloc(1, sizeof *L);
    et_tune_report *r = NULL;
    tune("ik,kj->ij", "i=32,k=16,j=16", 3, NULL, 0, L, &r);
    assert_true(et_tune_report_n_candidates(r) >= 2);
    et_tune_entry e;
    assert_int_equal(et_tune_report_candidate(r, 0, &e), 0);
    assert_string_equal(e.opts, "");
    assert_int_equal(e.seed, 0);
    assert_int_equal(et_tune_report_candidate(r, 1, &e), 0);
    assert_int_equal(e.seed, 1);
    assert_string_equal(e.opts, g_first_best);
    assert_string_equal(e.seed_einsum, "ik,kj->ij");
    assert_non_null(strstr(e.seed_sizes, "i=16"));
    assert_non_null(strstr(e.seed_sizes, "j=16"));
    assert_true(fabs(e.seed_distance - 1.0) < 1e-12);
    assert_int_equal(e.seed_structural, 0);
    /* after it, only the structure's suggestions are seeds */
    for (int i = 2; i < et_tune_report_n_candidates(r); i++) {
        assert_int_equal(et_tune_report_candidate(r, i, &e), 0);
        assert_true(e.seed == 0 || e.seed_structural == 1);
    }
    assert_int_equal(L->seed_lines, 1);
    char want[1200];
    snprintf(want, sizeof want, "seed 1: %s, the best of ik,kj->ij at ",
             g_first_best);
    assert_non_null(strstr(L->text, want));
    char *json = et_tune_report_json(r);
    assert_non_null(json);
    assert_non_null(strstr(json, "\"seeds\":"));
    assert_non_null(strstr(json, "\"distance\":\t1"));
    et_free(json);
    et_tune_report_free(r);
    free(L);
}

/* --no-seed: nothing from the database comes first. */
static void test_tune_no_seed(void **state)
{
    (void)state;
    logs *L = calloc(1, sizeof *L);
    et_tune_report *r = NULL;
    tune("ik,kj->ij", "i=64,k=16,j=16", 3, NULL, 1, L, &r);
    et_tune_entry e;
    for (int i = 0; i < et_tune_report_n_candidates(r); i++) {
        assert_int_equal(et_tune_report_candidate(r, i, &e), 0);
        assert_int_equal(e.seed, 0);
        assert_null(e.seed_einsum);
    }
    assert_int_equal(L->seed_lines, 0);
    assert_int_equal(L->structural_lines, 0);
    char *json = et_tune_report_json(r);
    assert_non_null(strstr(json, "\"seeds\":\t[]"));
    et_free(json);
    et_tune_report_free(r);
    free(L);
}

/* j=6: UPCAST(j,4) does not divide it, so the first size's best is
 * dropped, said so, and the run goes on to a verified kernel. */
static void test_tune_seed_dropped(void **state)
{
    (void)state;
    logs *L = calloc(1, sizeof *L);
    et_tune_report *r = NULL;
    tune("ik,kj->ij", "i=16,k=16,j=6", 3, NULL, 0, L, &r);
    et_tune_summary sum;
    et_tune_report_summary(r, &sum);
    assert_true(sum.found);
    assert_true(L->dropped_lines >= 1);
    char want[1200];
    snprintf(want, sizeof want, "seed dropped: %s, the best of ik,kj->ij "
             "at ", g_first_best);
    assert_non_null(strstr(L->text, want));
    et_tune_entry e;
    for (int i = 0; i < et_tune_report_n_candidates(r); i++) {
        assert_int_equal(et_tune_report_candidate(r, i, &e), 0);
        if (e.seed)
            assert_null(strstr(e.opts, "UPCAST(j,4)"));
    }
    char *json = et_tune_report_json(r);
    assert_non_null(strstr(json, "\"dropped\":\ttrue"));
    et_free(json);
    et_tune_report_free(r);
    free(L);
}

/* A structure with a batch axis: the rules' suggestions are seeds without
 * any database answer (another einsum), proposed right after the start
 * kernel in the order the log lists them, marked in the log, the entries
 * and the JSON. Which blocks the rules give depends on the device's
 * vector registers (test_transforms checks them for fixed widths); here
 * the first is j whole with rows of i (AVX-512: all 16 of i and no room
 * for x, then its loop over x, and that loop in work-groups; AVX2: 4 of
 * i). */
static void test_tune_structural_seeds(void **state)
{
    (void)state;
    logs *L = calloc(1, sizeof *L);
    et_tune_report *r = NULL;
    tune("xik,kj->xij", "x=256,i=16,k=16,j=16", 4, NULL, 0, L, &r);
    assert_int_equal(L->seed_lines, 0);
    assert_true(L->structural_lines >= 3);
    et_tune_entry e;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(et_tune_report_candidate(r, 1 + i, &e), 0);
        assert_int_equal(e.seed, 1);
        assert_int_equal(e.seed_structural, 1);
        assert_string_equal(e.seed_einsum, "xik,kj->xij");
        char line[1200];
        snprintf(line, sizeof line,
                 "seed %d: %s, suggested by the einsum's structure", i + 1,
                 e.opts);
        assert_non_null(strstr(L->text, line));
        if (i == 0)
            assert_non_null(strstr(e.opts, "UPCAST(j,0) UPCAST(i,"));
    }
    char *json = et_tune_report_json(r);
    assert_non_null(json);
    assert_non_null(strstr(json, "\"source\":\t\"structure\""));
    assert_null(strstr(json, "\"source\":\t\"database\""));
    et_free(json);
    et_tune_report_free(r);
    free(L);
}

int main(void)
{
    const struct CMUnitTest search[] = {
        cmocka_unit_test(test_search_seed_reaches_optimum_sooner),
        cmocka_unit_test(test_search_beam_starts_from_best_seed),
        cmocka_unit_test(test_search_seed_duplicates_dropped),
        cmocka_unit_test(test_search_random_seeds_first),
    };
    const struct CMUnitTest device[] = {
        cmocka_unit_test(test_tune_other_size_seeded),
        cmocka_unit_test(test_tune_no_seed),
        cmocka_unit_test(test_tune_seed_dropped),
        cmocka_unit_test(test_tune_structural_seeds),
    };
    int failed = cmocka_run_group_tests_name("seed_search", search, NULL,
                                             NULL);
    failed += cmocka_run_group_tests_name("seed_tune", device, setup_device,
                                          teardown_device);
    return failed;
}

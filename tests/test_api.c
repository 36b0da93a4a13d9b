/*
 * test_api.c - the public API of include/eintune.h, used as a library
 * user would: only that header.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eintune.h"
#include "tests/suite_device.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void test_problem(void **state)
{
    (void)state;
    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init("xik,kj->xij", "x=4096,i=35,k=35,j=35",
                                     "f64", &p, &d),
                     ET_OK);
    assert_string_equal(et_problem_einsum(p), "xik,kj->xij");
    assert_int_equal(et_problem_ops(p, ET_F64), 351232000);
    assert_int_equal(et_problem_ops(p, ET_F32), 0);
    assert_int_equal(et_problem_bytes(p), 80291400);
    et_problem_free(p);

    /* Implicit output, f32: ops booked to f32. */
    assert_int_equal(et_problem_init("ab,bc", "a=2,b=3,c=4", "f32", &p, &d),
                     ET_OK);
    assert_string_equal(et_problem_einsum(p), "ab,bc->ac");
    assert_int_equal(et_problem_ops(p, ET_F32), 2 * 2 * 3 * 4);
    et_problem_free(p);

    /* An unknown output index: the position of 'l'. */
    p = (et_problem *)&d; /* must be reset to NULL on failure */
    assert_int_equal(et_problem_init("ij,jk->il", "i=2,j=3,k=4", NULL, &p,
                                     &d),
                     ET_ERR_INPUT);
    assert_null(p);
    assert_int_equal(d.pos, 8);
    assert_non_null(strstr(d.msg, "'l'"));
    assert_int_equal(et_problem_init("ij->i", NULL, NULL, &p, &d),
                     ET_ERR_INPUT);
    assert_string_equal(et_status_str(ET_ERR_INPUT), "bad input");
}

static void test_codegen(void **state)
{
    (void)state;
    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init("xik,kj->xij", "x=64,i=32,k=32,j=32",
                                     "f32", &p, &d),
                     ET_OK);
    et_kernel_source *k = NULL;
    assert_int_equal(et_codegen(p, "LOCAL(i,8) UPCAST(j,4) UNROLL(k,4)",
                                ET_BACKEND_OPENCL, &k, &d),
                     ET_OK);
    assert_non_null(strstr(k->source, "__kernel void"));
    assert_non_null(strstr(k->source, k->name));
    assert_int_equal(k->ndim, 3);
    assert_true(k->has_local);
    /* j: 32/4 work-items (dim 0), i: 32 in groups of 8 (dim 1), x: 64. */
    assert_int_equal(k->global[0], 8);
    assert_int_equal(k->global[1], 32);
    assert_int_equal(k->local[1], 8);
    assert_int_equal(k->global[2], 64);
    et_kernel_source_free(k);

    assert_int_equal(et_codegen(p, NULL, ET_BACKEND_CUDA, &k, &d), ET_OK);
    assert_non_null(strstr(k->source, "__global__"));
    et_kernel_source_free(k);

    /* A refused opt names its rule; a malformed list is bad input. */
    assert_int_equal(et_codegen(p, "UPCAST(k,4)", ET_BACKEND_OPENCL, &k, &d),
                     ET_ERR_REFUSED);
    assert_null(k);
    assert_non_null(strstr(d.msg, "global axes only"));
    assert_int_equal(et_codegen(p, "UPCAST(j,", ET_BACKEND_OPENCL, &k, &d),
                     ET_ERR_INPUT);
    et_problem_free(p);
}

static void test_tune(void **state)
{
    (void)state;
    char dir[] = "/tmp/et_api_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256];
    snprintf(db, sizeof db, "%s/t.db", dir);

    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init("ij,jk->ik", "i=16,j=16,k=16", "f32",
                                     &p, &d),
                     ET_OK);
    et_tune_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = db;
    o.budget = 4;
    o.search = "random";
    o.seed = 7;
    o.race = -1; /* no final race: the answers are the database's */
    et_tune_summary s1, s2;
    et_status st = et_tune(p, &o, &s1, &d);
    if (st != ET_OK)
        fail_msg("et_tune: %s: %s", et_status_str(st), d.msg);
    assert_true(s1.found);
    assert_true(s1.time_s > 0);
    assert_true(s1.ci95_s[0] <= s1.time_s && s1.time_s <= s1.ci95_s[1]);
    assert_true(s1.evaluations + s1.cached >= 1);
    assert_int_equal(s1.cached, 0);

    /* The same run again is answered from the database. */
    assert_int_equal(et_tune(p, &o, &s2, &d), ET_OK);
    assert_int_equal(s2.evaluations, 0);
    assert_int_equal(s2.cached, s1.evaluations);
    assert_string_equal(s2.opts, s1.opts);
    /* no speed-up across runs: the best's time is the database's */
    assert_false(s1.raced || s2.raced);
    assert_true(s1.speedup > 0);
    assert_true(s2.speedup == 0);
    /* more than 8 racers is bad input */
    o.race = 9;
    assert_int_equal(et_tune(p, &o, &s2, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "race 9"));
    o.race = -1;

    /* Bad options are bad input. */
    o.search = "annealing";
    assert_int_equal(et_tune(p, &o, &s2, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "annealing"));
    et_problem_free(p);

    unlink(db);
    char side[300];
    snprintf(side, sizeof side, "%s-wal", db);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db);
    unlink(side);
    rmdir(dir);
}

/* A scratch directory with a database path in it, removed by
 * scratch_free. */
typedef struct scratch {
    char dir[64];
    char db[256];
} scratch;

static void scratch_init(scratch *s)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/et_api_XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->db, sizeof s->db, "%s/t.db", s->dir);
}

static void scratch_free(scratch *s)
{
    static const char *const tails[] = {"", "-wal", "-shm", "-journal"};
    char path[400];
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        snprintf(path, sizeof path, "%s%s", s->db, tails[i]);
        unlink(path);
    }
    static const char *const plots[] = {"plot.svg", "plot.png"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", s->dir, plots[i]);
        unlink(path);
    }
    rmdir(s->dir);
}

/* The bytes of a file (malloc'ed, NUL-terminated), NULL when missing. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = calloc(1, (size_t)n + 1);
    assert_non_null(buf);
    *len = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

/* What a FILE-writing report function wrote, as a string (malloc'ed). */
static char *file_text(FILE *f)
{
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    char *text = calloc(1, (size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return text;
}

static et_problem *small_problem(void)
{
    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init("xik,kj->xij", "x=64,i=16,k=16,j=16",
                                     "f32", &p, &d),
                     ET_OK);
    return p;
}

static void test_check_report(void **state)
{
    (void)state;
    et_problem *p = small_problem();
    et_check_report *r = NULL;
    et_diag d;

    /* Without the roofline: no device is opened. */
    assert_int_equal(et_problem_check(p, NULL, 0, &r, &d), ET_OK);
    assert_false(et_check_report_has_roofline(r));
    assert_true(et_check_report_roofline_s(r) == 0);
    FILE *f = tmpfile();
    assert_non_null(f);
    et_check_report_print(r, f);
    char *text = file_text(f);
    assert_non_null(strstr(text, "einsum     xik,kj->xij\n"));
    assert_non_null(strstr(text, "dtypes     f32,f32 -> f32"));
    assert_non_null(strstr(text, "k                        16  summed\n"));
    assert_non_null(strstr(text, "ops f32                  524288\n"));
    assert_null(strstr(text, "roofline"));
    free(text);
    char *json = et_check_report_json(r);
    assert_non_null(json);
    assert_non_null(strstr(json, "\"einsum\":\t\"xik,kj->xij\""));
    assert_non_null(strstr(json, "\"role\":\t\"summed\""));
    assert_non_null(strstr(json, "\"f32\":\t524288"));
    assert_null(strstr(json, "roofline"));
    et_free(json);
    et_check_report_free(r);

    /* A device that does not exist: no error, the report says why. */
    assert_int_equal(et_problem_check(p, td_missing(), 1, &r, &d), ET_OK);
    assert_false(et_check_report_has_roofline(r));
    f = tmpfile();
    et_check_report_print(r, f);
    text = file_text(f);
    assert_non_null(strstr(text, "roofline   n/a: "));
    free(text);
    et_check_report_free(r);

    /* The suite's device: the roofline from its peaks. */
    assert_int_equal(et_problem_check(p, td_device(), 1, &r, &d), ET_OK);
    assert_true(et_check_report_has_roofline(r));
    assert_true(et_check_report_roofline_s(r) > 0);
    json = et_check_report_json(r);
    assert_non_null(strstr(json, "\"roofline\":"));
    assert_non_null(strstr(json, "\"bound\":"));
    et_free(json);
    et_check_report_free(r);
    et_problem_free(p);
}

static void test_devices(void **state)
{
    (void)state;
    et_device_desc *devs = NULL;
    char *notes = NULL;
    int n = -1;
    et_diag d;
    assert_int_equal(et_device_desc_list(&devs, &n, &notes, &d), ET_OK);
    assert_true(n >= 1);
    assert_non_null(notes);
    int cl = -1;
    for (int i = 0; i < n; i++)
        if (devs[i].backend == td_backend() && cl < 0)
            cl = i; /* the first device of the suite's backend */
    assert_true(cl >= 0);
    assert_true(strncmp(devs[cl].spec, td_backend_name(),
                        strlen(td_backend_name())) == 0);
    assert_true(devs[cl].name[0] != '\0');
    assert_true(devs[cl].max_work_group_size >= 1);
    assert_true(devs[cl].local_mem_bytes > 0);
    assert_true(devs[cl].compute_units >= 1);
    FILE *f = tmpfile();
    et_device_desc_print(devs, n, f);
    char *text = file_text(f);
    assert_true(strncmp(text, "SPEC ", 5) == 0);
    assert_non_null(strstr(text, devs[cl].spec));
    free(text);
    char *json = et_device_desc_json(devs, n);
    assert_non_null(json);
    assert_true(json[0] == '[');
    assert_non_null(strstr(json, "\"max_work_item_sizes\":"));
    assert_non_null(strstr(json, devs[cl].name));
    et_free(json);
    et_free(notes);
    et_free(devs);

    /* notes may be NULL */
    assert_int_equal(et_device_desc_list(&devs, &n, NULL, &d), ET_OK);
    et_free(devs);
}

static void log_count(void *arg, et_log_level lvl, const char *msg)
{
    (void)lvl;
    (void)msg;
    (*(int *)arg)++;
}

static void test_peaks(void **state)
{
    (void)state;
    scratch s;
    scratch_init(&s);
    et_peaks_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    /* Measured now and never kept; under valgrind (the worker too, where
     * PoCL's compiles take seconds each) the kept figures instead. */
    int measure = getenv("ET_UNDER_VALGRIND") == NULL;
    o.quick = measure;
    o.runs = 1;
    o.db = s.db;
    int lines = 0;
    o.log = log_count;
    o.log_arg = &lines;
    et_peaks_report *r = NULL;
    et_diag d;
    et_status st = et_peaks_report_init(&o, &r, &d);
    if (st != ET_OK)
        fail_msg("et_peaks_report_init: %s: %s", et_status_str(st), d.msg);
    assert_true(lines >= 1);
    if (measure)
        assert_string_equal(et_peaks_report_source(r), "measured");
    assert_true(et_peaks_report_gflops(r, ET_F32) > 0);
    assert_true(et_peaks_report_bandwidth(r) > 0);
    assert_true(et_peaks_report_gflops(r, (et_dtype)99) == 0);
    FILE *f = tmpfile();
    et_peaks_report_print(r, f);
    char *text = file_text(f);
    assert_non_null(strstr(text, "f32 FMA"));
    free(text);
    char *json = et_peaks_report_json(r);
    assert_non_null(strstr(json, "\"source\":\t\""));
    assert_non_null(strstr(json, "\"bandwidth_gbs\":"));
    et_free(json);
    et_peaks_report_free(r);

    /* A device that does not exist is not measured. */
    o.device = td_missing();
    assert_int_not_equal(et_peaks_report_init(&o, &r, &d), ET_OK);
    assert_null(r);
    assert_non_null(strstr(d.msg, "99"));
    scratch_free(&s);
}

typedef struct tune_watch {
    int candidates;     /* progress calls */
    int new_bests;
    int tables;         /* new bests that came with a roofline table */
    int logs;
    int stop_after;     /* cancel from the callback after this many */
    volatile int seen;  /* for the canceller thread */
} tune_watch;

static int watch_progress(void *arg, const et_progress *p)
{
    tune_watch *w = arg;
    w->candidates++;
    assert_int_equal(p->candidate, w->candidates);
    if (p->new_best) {
        w->new_bests++;
        assert_true(p->have_best);
        assert_string_equal(p->best_opts, p->opts);
        if (p->best_roofline[0]) {
            assert_non_null(strstr(p->best_roofline, "% of roofline"));
            w->tables++;
        }
    } else {
        assert_string_equal(p->best_roofline, "");
    }
    __atomic_store_n(&w->seen, w->candidates, __ATOMIC_SEQ_CST);
    return w->stop_after && w->candidates >= w->stop_after;
}

static void watch_log(void *arg, et_log_level lvl, const char *msg)
{
    (void)lvl;
    tune_watch *w = arg;
    assert_non_null(msg);
    w->logs++;
}

static void test_tune_full(void **state)
{
    (void)state;
    scratch s;
    scratch_init(&s);
    et_problem *p = small_problem();
    tune_watch w;
    memset(&w, 0, sizeof w);
    et_tune_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    /* under valgrind fewer candidates (each compile takes seconds) */
    int budget = getenv("ET_UNDER_VALGRIND") ? 4 : 8;
    o.db = s.db;
    o.budget = budget;
    o.progress = watch_progress;
    o.progress_arg = &w;
    o.log = watch_log;
    o.log_arg = &w;
    et_tune_report *r = NULL;
    et_diag d;
    et_status st = et_tune_run_full(p, &o, &r, &d);
    if (st != ET_OK)
        fail_msg("et_tune_run_full: %s: %s", et_status_str(st), d.msg);
    et_problem_free(p); /* the report does not need it */

    et_tune_summary sum;
    et_tune_report_summary(r, &sum);
    assert_true(sum.found);
    assert_false(sum.cancelled);
    assert_string_equal(sum.stop_reason, "budget");
    assert_int_equal(sum.evaluations + sum.cached, budget);
    /* duplicates are listed but not charged to the budget */
    assert_int_equal(et_tune_report_n_candidates(r),
                     budget + sum.duplicates);
    /* the default final race gives the figures */
    assert_true(sum.raced);
    assert_true(sum.speedup_ci95[0] <= sum.speedup &&
                sum.speedup <= sum.speedup_ci95[1]);
    assert_true(sum.ci95_s[0] <= sum.time_s && sum.time_s <= sum.ci95_s[1]);
    assert_int_equal(w.candidates, budget);
    assert_true(w.new_bests >= 1);
    assert_true(w.logs >= 2);
    assert_true(et_tune_report_has_roofline(r));
    assert_int_equal(w.tables, w.new_bests);

    /* the best is among the candidates (its time there is the search's,
     * the summary's the race's); each was answered at a time in the run,
     * in order */
    int hit = 0, n_cand = et_tune_report_n_candidates(r);
    double prev = 0;
    for (int i = 0; i < n_cand; i++) {
        et_tune_entry e;
        assert_int_equal(et_tune_report_candidate(r, i, &e), 0);
        assert_non_null(e.opts);
        assert_non_null(e.params);
        assert_true(e.elapsed_s > 0);
        assert_true(e.elapsed_s >= prev);
        assert_true(e.elapsed_s <= sum.elapsed_s);
        prev = e.elapsed_s;
        if (e.outcome == ET_OUTCOME_OK) {
            assert_true(e.time_s > 0);
            assert_true(e.ci95_s[0] <= e.time_s && e.time_s <= e.ci95_s[1]);
            hit += !strcmp(e.opts, sum.opts) && e.duplicate_of < 0;
        }
    }
    assert_true(hit >= 1);
    et_tune_entry e;
    assert_int_equal(et_tune_report_candidate(r, n_cand, &e), -1);

    FILE *f = tmpfile();
    et_tune_report_print(r, f);
    char *text = file_text(f);
    assert_non_null(strstr(text, "einsum      xik,kj->xij\n"));
    assert_non_null(strstr(text, "budget after"));
    assert_non_null(strstr(text, "% of roofline"));
    assert_non_null(strstr(text, "\nrace        "));
    assert_non_null(strstr(text, "\nverdict     "));
    assert_non_null(strstr(text, "(race), "));
    free(text);
    char *json = et_tune_report_json(r);
    assert_non_null(json);
    assert_non_null(strstr(json, "\"stop_reason\":\t\"budget\""));
    assert_non_null(strstr(json, "\"roofline_gops\":"));
    assert_non_null(strstr(json, "\"candidates\":\t["));
    /* the race's details under their own key, its figures in best and
     * baseline */
    assert_non_null(strstr(json, "\"race\":\t{\n\t\t\"ran\":\ttrue"));
    assert_non_null(strstr(json, "\"verdict\":\t\""));
    assert_non_null(strstr(json, "\"times_s\":\t["));
    assert_non_null(strstr(json, "\"source\":\t\"race\""));
    assert_non_null(strstr(json, "\"speedup_ci95\":\t["));
    /* the problem's sizes (in the einsum's names) and dtypes */
    assert_non_null(strstr(json, "\"sizes\":\t{\n\t\t\"x\":\t64,\n\t\t\"i\":\t16,"));
    assert_non_null(strstr(json, "\"k\":\t16"));
    assert_non_null(strstr(json, "\"inputs\":\t[\"f32\", \"f32\"]"));
    assert_non_null(strstr(json, "\"output\":\t\"f32\""));
    assert_non_null(strstr(json, "\"elapsed_s\":\t"));
    et_free(json);

    /* the chart: the roofline and the search's convergence, as PNG and
     * SVG; the SVG names the problem and the panels' axes as text */
    char path[300];
    snprintf(path, sizeof path, "%s/plot.png", s.dir);
    assert_int_equal(et_tune_report_plot(r, path, &d), ET_OK);
    size_t len = 0;
    char *png = read_file(path, &len);
    assert_non_null(png);
    assert_true(len > 24);
    assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
    assert_memory_equal(png + 12, "IHDR", 4);
    /* two panels: wider than the roofline alone (960) */
    unsigned char *u = (unsigned char *)png;
    assert_int_equal((u[16] << 24) | (u[17] << 16) | (u[18] << 8) | u[19],
                     1680);
    free(png);
    snprintf(path, sizeof path, "%s/plot.svg", s.dir);
    assert_int_equal(et_tune_report_plot(r, path, &d), ET_OK);
    char *svg = read_file(path, &len);
    assert_non_null(svg);
    assert_int_equal(strncmp(svg, "<?xml", 5), 0);
    assert_non_null(strstr(svg, "<svg"));
    assert_non_null(strstr(svg, "</svg>"));
    if (!strstr(svg, "<title>xik,kj-&gt;xij   x=64 i=16 j=16 k=16   "
                     "f32,f32 -&gt; f32 \xe2\x80\x94 ") ||
        !strstr(svg, "elapsed time in the run (s)") ||
        !strstr(svg, "candidate time (median, log scale)") ||
        !strstr(svg, "roofs: f32 peak ") || strstr(svg, "f64 peak"))
        fail_msg("SVG title or description:\n%.2000s", svg);
    free(svg);
    snprintf(path, sizeof path, "%s/plot.txt", s.dir);
    assert_int_equal(et_tune_report_plot(r, path, &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_FILE);
    et_tune_report_free(r);

    /* A device that does not exist: bad input about the device, nothing
     * is run. */
    p = small_problem();
    o.device = td_missing();
    assert_int_equal(et_tune_run_full(p, &o, &r, &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_DEVICE);
    assert_null(r);
    assert_non_null(strstr(d.msg, "99"));
    /* Malformed start opts: bad input about the opts, with a position. */
    o.device = td_device();
    o.start_opts = "LOCAL(i,8";
    assert_int_equal(et_tune_run_full(p, &o, &r, &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_OPTS);
    assert_true(d.pos >= 0);
    /* A space file that is not there: about the space. */
    o.start_opts = NULL;
    o.space = "/nonexistent/space.yaml";
    assert_int_equal(et_tune_run_full(p, &o, &r, &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_SPACE);
    et_problem_free(p);
    scratch_free(&s);
}

/* A bound just over the best so far cuts most candidates: the summary
 * counts those cuts in cut_at_bound, not in failures (which are the
 * refused and failed ones alone), as the report's text and JSON do. The
 * summary says its time is the final race's (time_source "race") next to
 * the search's median of the same kernel; et_best_lookup and the best
 * report give the search's median as time_s and the race's apart (raced,
 * race_time_s). Without a race, the summary's time is the search's and
 * the lookup has no race time. */
static void test_tune_cuts_and_race_time(void **state)
{
    (void)state;
    scratch s;
    scratch_init(&s);
    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init("ab,bc->ac", "a=64,b=64,c=64", "f32",
                                     &p, &d),
                     ET_OK);
    et_tune_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = s.db;
    o.budget = getenv("ET_UNDER_VALGRIND") ? 6 : 12;
    o.bound = 1.0001;
    o.model = -1; /* every proposal timed: cuts are likely */
    et_tune_report *r = NULL;
    et_status st = et_tune_run_full(p, &o, &r, &d);
    if (st != ET_OK)
        fail_msg("et_tune_run_full: %s: %s", et_status_str(st), d.msg);
    et_tune_summary sum;
    et_tune_report_summary(r, &sum);
    int cut = 0, failed = 0, n = et_tune_report_n_candidates(r);
    for (int i = 0; i < n; i++) {
        et_tune_entry e;
        assert_int_equal(et_tune_report_candidate(r, i, &e), 0);
        if (e.duplicate_of >= 0)
            continue;
        if (e.outcome == ET_OUTCOME_SLOWER_THAN_BOUND)
            cut++;
        else if (e.outcome != ET_OUTCOME_OK)
            failed++;
    }
    assert_true(cut > 0);
    assert_int_equal(sum.cut_at_bound, cut);
    assert_int_equal(sum.failures, failed);
    FILE *f = tmpfile();
    et_tune_report_print(r, f);
    char *text = file_text(f);
    char want[160];
    snprintf(want, sizeof want, "; %d failed or refused, %d cut at the bound",
             failed, cut);
    if (!strstr(text, want))
        fail_msg("the report lacks '%s':\n%s", want, text);
    /* the race's time, then the search's of the same kernel */
    assert_true(sum.found && sum.raced);
    assert_string_equal(sum.time_source, "race");
    assert_true(sum.search_time_s > 0);
    assert_true(sum.search_ci95_s[0] <= sum.search_time_s &&
                sum.search_time_s <= sum.search_ci95_s[1]);
    assert_non_null(strstr(text, "(race), "));
    assert_non_null(strstr(text, "\nsearch time "));
    free(text);
    char *json = et_tune_report_json(r);
    assert_non_null(json);
    snprintf(want, sizeof want, "\"cut_at_bound\":\t%d", cut);
    assert_non_null(strstr(json, want));
    assert_null(strstr(json, "\"slower_than_bound\":"));
    assert_non_null(strstr(json, "\"search_time_s\":\t"));
    et_free(json);
    et_tune_report_free(r);

    /* the lookup: time_s the search's (the trial's), the race apart */
    et_best_info bi;
    int found = 0;
    assert_int_equal(
        et_best_lookup(p, td_device(), s.db, &bi, &found, &d), ET_OK);
    assert_true(found);
    assert_string_equal(bi.opts, sum.opts);
    assert_true(bi.raced);
    assert_true(bi.race_rounds > 0);
    assert_true(bi.race_time_s == sum.time_s);
    assert_true(bi.race_ci95_s[0] == sum.ci95_s[0] &&
                bi.race_ci95_s[1] == sum.ci95_s[1]);
    assert_true(bi.time_s == sum.search_time_s);
    et_best_options bo;
    memset(&bo, 0, sizeof bo);
    bo.device = td_device();
    bo.db = s.db;
    et_best_kernel *bk = NULL;
    assert_int_equal(et_best_kernel_find(p, &bo, &bk, &d), ET_OK);
    f = tmpfile();
    assert_int_equal(et_best_report_print(bk, f), 0);
    text = file_text(f);
    if (!strstr(text, "(search median, ") || !strstr(text, "\nrace time   ") ||
        !strstr(text, "the final race's median over "))
        fail_msg("best's report:\n%s", text);
    free(text);
    json = et_best_report_json(bk);
    assert_non_null(json);
    assert_non_null(strstr(json, "\"time_source\":\t\"search\""));
    assert_non_null(strstr(json, "\"race\":\t{"));
    et_free(json);
    et_best_kernel_free(bk);
    et_problem_free(p);

    /* no race: the search's time in the summary, none in the lookup */
    assert_int_equal(et_problem_init("ab,bc->ac", "a=32,b=32,c=32", "f32",
                                     &p, &d),
                     ET_OK);
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = s.db;
    o.budget = 3;
    o.race = -1;
    assert_int_equal(et_tune(p, &o, &sum, &d), ET_OK);
    assert_true(sum.found && !sum.raced);
    assert_string_equal(sum.time_source, "this run");
    assert_true(sum.time_s == sum.search_time_s);
    assert_int_equal(
        et_best_lookup(p, td_device(), s.db, &bi, &found, &d), ET_OK);
    assert_true(found);
    assert_false(bi.raced);
    assert_true(bi.race_time_s == 0 && bi.race_rounds == 0);
    assert_true(bi.time_s > 0);
    et_problem_free(p);
    scratch_free(&s);
}

static void test_tune_cancel_progress(void **state)
{
    (void)state;
    scratch s;
    scratch_init(&s);
    et_problem *p = small_problem();
    tune_watch w;
    memset(&w, 0, sizeof w);
    w.stop_after = 3;
    et_tune_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = s.db;
    o.budget = 8;
    o.progress = watch_progress;
    o.progress_arg = &w;
    et_tune_summary sum;
    et_diag d;
    assert_int_equal(et_tune(p, &o, &sum, &d), ET_OK);
    assert_true(sum.cancelled);
    assert_string_equal(sum.stop_reason, "cancelled");
    assert_int_equal(sum.evaluations + sum.cached, 3);
    assert_int_equal(w.candidates, 3);
    et_problem_free(p);
    scratch_free(&s);
}

typedef struct canceller {
    tune_watch *w;
    volatile sig_atomic_t *flag;
} canceller;

/* Sets the cancel flag once the run has answered its first candidate. */
static void *cancel_thread(void *arg)
{
    canceller *c = arg;
    struct timespec ts = {0, 5 * 1000 * 1000};
    for (int i = 0; i < 12000; i++) {
        if (__atomic_load_n(&c->w->seen, __ATOMIC_SEQ_CST) >= 1)
            break;
        nanosleep(&ts, NULL);
    }
    *c->flag = 1;
    return NULL;
}

static void test_tune_cancel_thread(void **state)
{
    (void)state;
    scratch s;
    scratch_init(&s);
    et_problem *p = small_problem();
    tune_watch w;
    memset(&w, 0, sizeof w);
    volatile sig_atomic_t flag = 0;
    et_tune_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = s.db;
    o.budget = 1000;
    o.progress = watch_progress;
    o.progress_arg = &w;
    o.cancel = &flag;
    canceller c = {&w, &flag};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_thread, &c), 0);
    et_tune_summary sum;
    et_diag d;
    et_status st = et_tune(p, &o, &sum, &d);
    assert_int_equal(pthread_join(th, NULL), 0);
    if (st != ET_OK)
        fail_msg("et_tune: %s: %s", et_status_str(st), d.msg);
    assert_true(flag);
    assert_true(sum.cancelled);
    assert_int_equal(sum.evaluations + sum.cached, w.candidates);
    assert_true(w.candidates >= 1 && w.candidates < 1000);
    et_problem_free(p);
    scratch_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_problem),
        cmocka_unit_test(test_codegen),
        cmocka_unit_test(test_tune),
        cmocka_unit_test(test_check_report),
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_peaks),
        cmocka_unit_test(test_tune_full),
        cmocka_unit_test(test_tune_cuts_and_race_time),
        cmocka_unit_test(test_tune_cancel_progress),
        cmocka_unit_test(test_tune_cancel_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

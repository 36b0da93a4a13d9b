/*
 * test_session.c - et_session_*: one device and one database for a tune,
 * a lookup, a run and a load in the caller's context, on the suite's
 * device (tests/suite_device.h: the OpenCL device, PoCL, unless `make
 * test DEVICE=..`; the load into an OpenCL context of its own on OpenCL
 * only). The session's answers are those of the path-taking calls over
 * the same database; the run's output is the product computed here; the
 * session's log gets the tune's lines when the options have no log; a
 * file that is not a database and a device that does not exist are
 * refused when the session opens, naming the input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "eintune.h"
#include "tests/suite_device.h"

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];
static char db[128];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/et_session_XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(db, sizeof db, "%s/tune.db", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void count_log(void *arg, et_log_level level, const char *msg)
{
    (void)level;
    (void)msg;
    (*(int *)arg)++;
}

static void test_round_trip(void **state)
{
    (void)state;
    int lines = 0;
    et_session_options so = {ET_SIZED(et_session_options), .db = db,
                             .device = td_device(), .log = count_log,
                             .log_arg = &lines};
    et_session *s = NULL;
    et_diag d;
    assert_int_equal(et_session_open(&so, &s, &d), ET_OK);
    assert_string_equal(et_session_db_path(s), db);
    assert_true(et_session_device_name(s)[0] != '\0');
    int after_open = lines;
    assert_true(after_open > 0);

    et_problem *p = NULL;
    assert_int_equal(et_problem_init("ik,kj->ij", "i=8,k=8,j=8", "f32", &p,
                                     &d),
                     ET_OK);
    et_tune_options to = {ET_SIZED(et_tune_options), .budget = 4,
                          .race = -1, .no_seeding = 1, .model = -1};
    et_tune_report *rep = NULL;
    assert_int_equal(et_session_tune(s, p, &to, &rep, &d), ET_OK);
    et_tune_summary sum;
    et_tune_report_summary(rep, &sum);
    assert_true(sum.found);
    et_tune_report_free(rep);
    assert_true(lines > after_open); /* the session's log, none given */

    /* the lookup through the session and through the path agree */
    et_best_info a, b;
    int fa = 0, fb = 0;
    assert_int_equal(et_session_best_lookup(s, p, &a, &fa, &d), ET_OK);
    assert_int_equal(fa, 1);
    assert_string_equal(a.opts, sum.opts);
    assert_int_equal(et_best_lookup(p, td_device(), db, &b, &fb, &d),
                     ET_OK);
    assert_int_equal(fb, 1);
    assert_string_equal(a.opts, b.opts);
    assert_true(a.trial_id == b.trial_id);

    /* a run of the best on the session's device: the product */
    float A[64], B[64], C[64], want[64];
    for (int i = 0; i < 64; i++) {
        A[i] = (float)((i * 7) % 11) - 5.0f;
        B[i] = (float)((i * 5) % 13) - 6.0f;
    }
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            float acc = 0;
            for (int k = 0; k < 8; k++)
                acc += A[i * 8 + k] * B[k * 8 + j];
            want[i * 8 + j] = acc;
        }
    const void *in[2] = {A, B};
    et_run_options ro = {ET_SIZED(et_run_options), .best = 1, .verify = 1};
    et_run_result res;
    assert_int_equal(et_session_run(s, p, &ro, C, in, &res, &d), ET_OK);
    assert_string_equal(res.opts, sum.opts);
    assert_int_equal(res.verify.output_ok, 1);
    for (int i = 0; i < 64; i++)
        assert_true(fabsf(C[i] - want[i]) <= 1e-4f * (1 + fabsf(want[i])));

    /* the best kernel loaded into a context of the caller's own */
    if (td_suite_opencl("the load into an OpenCL context of its own")) {
        cl_platform_id plat;
        cl_device_id dev;
        cl_int err = clGetPlatformIDs(1, &plat, NULL);
        assert_int_equal(err, CL_SUCCESS);
        assert_int_equal(
            clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL),
            CL_SUCCESS);
        cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
        assert_int_equal(err, CL_SUCCESS);
        et_loaded_kernel *k = NULL;
        assert_int_equal(
            et_session_cl_kernel_load(s, p, ctx, dev, NULL, &k, &d), ET_OK);
        assert_string_equal(et_loaded_kernel_opts(k), sum.opts);
        et_loaded_kernel_free(k);
        clReleaseContext(ctx);
    }

    /* a campaign of one problem through the session, then its answer */
    char file[160];
    snprintf(file, sizeof file, "%s/one.yaml", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("- {einsum: \"ij->i\", shape: \"i=16,j=8\", dtype: f32, "
          "budget: 3, search: random, seed: 1}\n", f);
    fclose(f);
    et_campaign *c = NULL;
    assert_int_equal(et_campaign_load(file, &c, &d), ET_OK);
    et_campaign_report *cr = NULL;
    assert_int_equal(et_session_campaign_run(s, c, NULL, &cr, &d), ET_OK);
    et_campaign_entry e;
    assert_int_equal(et_campaign_report_entry(cr, 0, &e), 0);
    assert_int_equal(e.state, ET_CAMPAIGN_TUNED);
    et_campaign_report_free(cr);
    et_campaign_free(c);
    et_problem *q = NULL;
    assert_int_equal(et_problem_init("ij->i", "i=16,j=8", "f32", &q, &d),
                     ET_OK);
    assert_int_equal(et_best_lookup(q, td_device(), db, &b, &fb, &d),
                     ET_OK);
    assert_int_equal(fb, 1);
    assert_string_equal(b.opts, e.summary.opts);
    et_problem_free(q);

    et_problem_free(p);
    et_session_close(s);
}

static void test_refused(void **state)
{
    (void)state;
    char junk[160];
    snprintf(junk, sizeof junk, "%s/not-a-db", dir);
    FILE *f = fopen(junk, "w");
    assert_non_null(f);
    fputs("hello, not SQLite\n", f);
    fclose(f);
    et_session_options so = {ET_SIZED(et_session_options), .db = junk};
    et_session *s = NULL;
    et_diag d;
    assert_int_equal(et_session_open(&so, &s, &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_FILE);
    assert_null(s);
    et_session_options bad = {ET_SIZED(et_session_options), .db = db,
                              .device = td_missing()};
    assert_int_equal(et_session_open(&bad, &s, &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_DEVICE);
    assert_null(s);
    /* a session is required by its calls */
    et_best_info bi;
    assert_int_equal(et_session_best_lookup(NULL, NULL, &bi, NULL, &d),
                     ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "'s'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests_name("session", tests, setup, teardown);
}

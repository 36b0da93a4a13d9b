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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    o.db = db;
    o.budget = 4;
    o.search = "random";
    o.seed = 7;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_problem),
        cmocka_unit_test(test_codegen),
        cmocka_unit_test(test_tune),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_api_best.c - the public API's best kernel, export, runs on host
 * arrays, .npy files and the tuning database, used as a library user
 * would (only eintune.h): a tiny problem is tuned into a temporary
 * database, then looked up (also under a renamed einsum), exported, run
 * against a host loop, and the database looked at and pruned.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eintune.h"
#include "tests/suite_device.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EINSUM "xik,kj->xij"
#define SHAPE "x=64,i=16,k=16,j=16"
#define X 64
#define N 16

static char g_dir[64];
static char g_db[128];
static et_tune_summary g_tuned;

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/et_api_best_XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_db, sizeof g_db, "%s/t.db", g_dir);
    et_problem *p = NULL;
    et_diag d;
    if (et_problem_init(EINSUM, SHAPE, "f32", &p, &d) != ET_OK)
        return -1;
    et_tune_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = g_db;
    o.budget = 4;
    et_status st = et_tune(p, &o, &g_tuned, &d);
    et_problem_free(p);
    if (st != ET_OK || !g_tuned.found) {
        fprintf(stderr, "et_tune: %s: %s\n", et_status_str(st), d.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The text f holds after rewinding. */
static char *slurp(FILE *f)
{
    long n = ftell(f);
    rewind(f);
    char *s = calloc(1, (size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    return s;
}

static void test_best(void **state)
{
    (void)state;
    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init(EINSUM, SHAPE, "f32", &p, &d), ET_OK);
    et_best_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = g_db;
    o.roofline = 1;
    et_best_kernel *bk = NULL;
    assert_int_equal(et_best_kernel_find(p, &o, &bk, &d), ET_OK);
    assert_non_null(bk);
    et_best_info info;
    et_best_kernel_info(bk, &info);
    assert_string_equal(info.opts, g_tuned.opts);
    assert_string_equal(info.tuned_einsum, EINSUM);
    assert_true(info.exact);
    assert_true(info.time_s > 0 && info.verify_trials > 0);

    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(et_best_report_print(bk, f), 0);
    char *text = slurp(f);
    fclose(f);
    assert_non_null(strstr(text, "einsum      " EINSUM "\n"));
    assert_non_null(strstr(text, "verified    "));
    assert_null(strstr(text, "tuned as"));
    free(text);
    char *json = et_best_report_json(bk);
    assert_non_null(json);
    cJSON *doc = cJSON_Parse(json);
    assert_non_null(doc);
    assert_string_equal(cJSON_GetObjectItem(doc, "opts")->valuestring,
                        g_tuned.opts);
    assert_non_null(cJSON_GetObjectItem(doc, "tuned_as"));
    assert_non_null(cJSON_GetObjectItem(doc, "roofline_gops"));
    cJSON *sz = cJSON_GetObjectItem(doc, "sizes");
    assert_int_equal(cJSON_GetObjectItem(sz, "x")->valueint, 64);
    assert_int_equal(cJSON_GetObjectItem(sz, "j")->valueint, 16);
    cJSON *dt = cJSON_GetObjectItem(doc, "dtypes");
    assert_string_equal(
        cJSON_GetArrayItem(cJSON_GetObjectItem(dt, "inputs"), 1)->valuestring,
        "f32");
    assert_string_equal(cJSON_GetObjectItem(dt, "output")->valuestring, "f32");
    cJSON_Delete(doc);
    et_free(json);
    et_best_kernel_free(bk);
    et_problem_free(p);

    /* A renamed einsum finds the same kernel, its opts in its names. */
    assert_int_equal(et_problem_init("aik,kj->aij", "a=64,i=16,k=16,j=16",
                                     "f32", &p, &d),
                     ET_OK);
    int found = 0;
    assert_int_equal(
        et_best_lookup(p, td_device(), g_db, &info, &found, &d), ET_OK);
    assert_true(found);
    assert_string_equal(info.tuned_einsum, EINSUM);
    assert_string_equal(info.tuned_opts, g_tuned.opts);
    char want[1024];
    snprintf(want, sizeof want, "%s", g_tuned.opts);
    for (char *c = want; *c; c++)
        if (*c == 'x' && c[1] == ',')
            *c = 'a';
    assert_string_equal(info.opts, want);
    assert_int_equal(et_best_kernel_find(p, &o, &bk, &d), ET_OK);
    f = tmpfile();
    assert_int_equal(et_best_report_print(bk, f), 0);
    text = slurp(f);
    fclose(f);
    assert_non_null(strstr(text, "tuned as    " EINSUM));
    free(text);
    et_best_kernel_free(bk);
    et_problem_free(p);

    /* Nothing known for f64: ET_ERR_NOT_FOUND, no object, the message
     * says so. */
    assert_int_equal(et_problem_init(EINSUM, SHAPE, "f64", &p, &d), ET_OK);
    bk = (et_best_kernel *)&d;
    assert_int_equal(et_best_kernel_find(p, &o, &bk, &d), ET_ERR_NOT_FOUND);
    assert_null(bk);
    assert_non_null(strstr(d.msg, "no verified kernel known"));
    /* A file that is not a database is bad input about that file. */
    char bogus[160];
    snprintf(bogus, sizeof bogus, "%s/bogus.db", g_dir);
    f = fopen(bogus, "w");
    fputs("not a database, not at all, no, not even close to one\n", f);
    fclose(f);
    o.db = bogus;
    assert_int_equal(et_best_kernel_find(p, &o, &bk, &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_FILE);
    et_problem_free(p);
}

static void test_export(void **state)
{
    (void)state;
    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init(EINSUM, SHAPE, "f32", &p, &d), ET_OK);
    et_best_options bo;
    memset(&bo, 0, sizeof bo);
    bo.device = td_device();
    bo.db = g_db;
    et_best_kernel *bk = NULL;
    assert_int_equal(et_best_kernel_find(p, &bo, &bk, &d), ET_OK);
    assert_non_null(bk);

    char dir[160];
    snprintf(dir, sizeof dir, "%s/export/nested", g_dir);
    et_export_options o;
    memset(&o, 0, sizeof o);
    o.dir = dir;
    et_export_result r;
    assert_int_equal(et_best_kernel_export(bk, &o, &r, &d), ET_OK);
    /* the device's backend by default, the other one asked for below */
    assert_int_equal(r.backend, td_backend());
    const char *other = td_is_opencl() ? "cuda" : "opencl";
    const char *other_ext = td_is_opencl() ? ".cu" : ".cl";
    struct stat sb;
    assert_int_equal(stat(r.source, &sb), 0);
    FILE *f = fopen(r.header, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    char *hdr = slurp(f);
    fclose(f);
    assert_non_null(strstr(hdr, "KERNEL_NAME \""));
    assert_non_null(strstr(hdr, r.kernel));
    free(hdr);
    /* the name holds the dtypes; the macros are prefixed with it */
    assert_non_null(strstr(r.kernel, "_f32"));
    assert_int_equal(strncmp(r.prefix, "R_", 2), 0);
    assert_non_null(strstr(r.prefix, "_F32_"));
    assert_int_equal(r.replaced, 0);
    char first_header[sizeof r.header];
    snprintf(first_header, sizeof first_header, "%s", r.header);
    /* the same kernel again: rewritten */
    assert_int_equal(et_best_kernel_export(bk, &o, &r, &d), ET_OK);
    assert_int_equal(r.replaced, 0);
    /* The other backend (CUDA gets a .cu, OpenCL a .cl); its header is
     * another kernel's file of the same name: refused, then replaced when
     * forced */
    o.backend = other;
    assert_int_equal(et_best_kernel_export(bk, &o, &r, &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_FILE);
    assert_string_equal(d.file, first_header);
    assert_non_null(strstr(d.msg, "holds another exported kernel"));
    o.force = 1;
    assert_int_equal(et_best_kernel_export(bk, &o, &r, &d), ET_OK);
    assert_non_null(strstr(r.source, other_ext));
    assert_int_equal(r.replaced, 1);
    o.force = 0;
    assert_int_equal(et_best_kernel_export(bk, &o, &r, &d), ET_OK);
    assert_int_equal(r.replaced, 0);
    /* a name of the caller's: function, files and macros */
    o.name = "my_matmul";
    assert_int_equal(et_best_kernel_export(bk, &o, &r, &d), ET_OK);
    assert_string_equal(r.kernel, "my_matmul");
    assert_string_equal(r.prefix, "MY_MATMUL_");
    char mine_src[32];
    snprintf(mine_src, sizeof mine_src, "/my_matmul%s", other_ext);
    assert_non_null(strstr(r.source, mine_src));
    f = fopen(r.source, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    char *src = slurp(f);
    fclose(f);
    assert_non_null(strstr(src, "void my_matmul("));
    free(src);
    char mine[sizeof r.header];
    snprintf(mine, sizeof mine, "%s", r.header);
    static const char *const bad[] = {"9x", "a-b", "", "__x", "int", "out"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        o.name = bad[i];
        assert_int_equal(et_best_kernel_export(bk, &o, &r, &d), ET_ERR_INPUT);
        assert_int_equal(d.input, ET_INPUT_OPTION);
    }
    assert_int_equal(et_export_name_validate("k_2", &d), ET_OK);
    assert_int_equal(et_export_name_validate("2k", &d), ET_ERR_INPUT);
    assert_int_equal(d.pos, 0);
    o.name = NULL;
    /* A foreign file in the way is never overwritten, even forced. */
    f = fopen(mine, "w");
    assert_non_null(f);
    fputs("mine\n", f);
    fclose(f);
    o.name = "my_matmul";
    o.force = 1;
    assert_int_equal(et_best_kernel_export(bk, &o, &r, &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_FILE);
    assert_non_null(strstr(d.msg, "not written by eintune"));
    o.name = NULL;
    o.force = 0;
    o.backend = "metal";
    assert_int_equal(et_best_kernel_export(bk, &o, &r, &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_OPTION);
    et_best_kernel_free(bk);
    et_problem_free(p);
}

/* out[x,i,j] = sum_k a[x,i,k] b[k,j] in double. */
static void host_loop(const float *a, const float *b, double *out)
{
    for (int x = 0; x < X; x++)
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int k = 0; k < N; k++)
                    s += (double)a[(x * N + i) * N + k] * b[k * N + j];
                out[(x * N + i) * N + j] = s;
            }
}

static void check_close(const float *got, const double *want, int n)
{
    for (int e = 0; e < n; e++)
        if (fabs(got[e] - want[e]) > 1e-4 * (1 + fabs(want[e])))
            fail_msg("element %d: %g, want %g", e, got[e], want[e]);
}

static void test_run(void **state)
{
    (void)state;
    et_diag d;
    int n = 0;
    assert_int_equal(et_einsum_count_operands(EINSUM, &n, &d), ET_OK);
    assert_int_equal(n, 2);
    assert_int_equal(et_einsum_count_operands("xi(k", &n, &d), ET_ERR_INPUT);
    assert_int_equal(d.pos, 2);
    assert_int_equal(et_opts_validate("LOCAL(i,8) UPCAST(j,4)", &d), ET_OK);
    assert_int_equal(et_opts_validate("UPCAST(j,", &d), ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_OPTS);

    et_problem *p = NULL;
    assert_int_equal(et_problem_init(EINSUM, SHAPE, "f32", &p, &d), ET_OK);
    et_host_array a, b, out;
    assert_int_equal(et_host_array_init(p, 0, &a), ET_OK);
    assert_int_equal(et_host_array_init(p, 1, &b), ET_OK);
    assert_int_equal(et_host_array_init(p, -1, &out), ET_OK);
    assert_int_equal(out.ndim, 3);
    assert_int_equal(et_host_array_elems(&out), X * N * N);
    srand(3);
    float *fa = a.data, *fb = b.data;
    for (int e = 0; e < X * N * N; e++)
        fa[e] = (float)((double)rand() / RAND_MAX - 0.5);
    for (int e = 0; e < N * N; e++)
        fb[e] = (float)((double)rand() / RAND_MAX - 0.5);
    double *want = malloc(sizeof(double) * X * N * N);
    host_loop(fa, fb, want);
    const void *in[2] = {a.data, b.data};

    /* Given opts, verified and timed. */
    et_run_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = g_db;
    o.opts = "LOCAL(i,8) UPCAST(j,4)";
    o.verify = 1;
    o.time = 1;
    et_run_result res;
    et_status st = et_run(p, &o, out.data, in, &res, &d);
    if (st != ET_OK)
        fail_msg("et_run: %s", d.msg);
    check_close(out.data, want, X * N * N);
    assert_string_equal(res.opts, "LOCAL(i,8) UPCAST(j,4)");
    assert_true(res.verify.output_checked && res.verify.output_ok);
    assert_true(res.verify.verified);
    assert_int_equal(res.verify.outcome, ET_OUTCOME_OK);
    assert_true(res.timed && res.timing.time_s > 0 && res.timing.gops > 0);

    /* The best known, step by step, with the JSON of what ran. */
    memset(out.data, 0, (size_t)X * N * N * sizeof(float));
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = g_db;
    o.best = 1;
    et_runner *r = NULL;
    assert_int_equal(et_runner_open(p, &o, &r, &d), ET_OK);
    et_best_info info;
    int found = 0;
    assert_int_equal(et_runner_find_best(r, &info, &found, &d), ET_OK);
    assert_true(found);
    assert_string_equal(info.opts, g_tuned.opts);
    assert_int_equal(et_runner_build(r, &d), ET_OK);
    assert_int_equal(et_runner_exec(r, out.data, in, &d), ET_OK);
    check_close(out.data, want, X * N * N);
    et_run_verification v;
    memset(&v, 0, sizeof v);
    assert_int_equal(et_runner_check_output(r, in, out.data, &v, &d), ET_OK);
    assert_true(v.output_ok);
    et_run_info ri;
    et_runner_info(r, &ri);
    assert_string_equal(ri.opts, g_tuned.opts);
    char *json = et_runner_json(r, "out.npy");
    cJSON *doc = cJSON_Parse(json);
    assert_non_null(doc);
    assert_string_equal(cJSON_GetObjectItem(doc, "kernel")->valuestring,
                        ri.kernel);
    assert_non_null(cJSON_GetObjectItem(doc, "verified"));
    assert_null(cJSON_GetObjectItem(doc, "time_s"));
    cJSON_Delete(doc);
    et_free(json);
    et_runner_free(r);

    /* A refused opt is about the opts. */
    o.best = 0;
    o.opts = "LOCAL(i,7)";
    assert_int_equal(et_run(p, &o, out.data, in, NULL, &d), ET_ERR_REFUSED);
    assert_int_equal(d.input, ET_INPUT_OPTS);

    /* .npy round trip, and a problem from the arrays' shapes. */
    char path[160];
    snprintf(path, sizeof path, "%s/a.npy", g_dir);
    assert_int_equal(et_npy_save(path, &a, &d), ET_OK);
    et_host_array back;
    assert_int_equal(et_npy_load(path, &back, &d), ET_OK);
    assert_int_equal(back.dtype, ET_F32);
    assert_int_equal(back.ndim, 3);
    assert_int_equal(back.dims[0], X);
    assert_memory_equal(back.data, a.data, sizeof(float) * X * N * N);
    et_host_array_free(&back);
    snprintf(path, sizeof path, "%s/missing.npy", g_dir);
    assert_int_equal(et_npy_load(path, &back, &d), ET_ERR_IO);
    assert_int_equal(d.input, ET_INPUT_FILE);

    free(want);
    et_host_array_free(&a);
    et_host_array_free(&b);
    et_host_array_free(&out);
    et_problem_free(p);
}

static int count_row(void *arg, const et_database_row *row)
{
    int *n = arg;
    assert_non_null(row->einsum);
    assert_string_equal(row->dtypes, "f32,f32->f32");
    (*n)++;
    return 0;
}

static void test_database(void **state)
{
    (void)state;
    et_database *db = NULL;
    et_diag d;
    assert_int_equal(et_database_open(g_db, &db, &d), ET_OK);
    assert_string_equal(et_database_path(db), g_db);
    et_database_stats s;
    assert_int_equal(et_database_stats_get(db, &s, &d), ET_OK);
    assert_true(s.trials >= 1);
    assert_true(s.by_outcome[ET_OUTCOME_OK] >= 1);
    assert_int_equal(s.einsums, 1);
    assert_true(s.integrity_ok);
    assert_string_equal(s.integrity, "ok");

    int all = 0;
    assert_int_equal(et_database_list(db, NULL, count_row, &all, &d), ET_OK);
    assert_int_equal(all, s.trials);
    /* A renamed einsum filters to the same trials; one that was never
     * tuned to none. */
    et_problem *p = NULL;
    assert_int_equal(et_problem_init("aik,kj->aij", "a=64,i=16,k=16,j=16",
                                     "f32", &p, &d),
                     ET_OK);
    et_database_filter flt;
    memset(&flt, 0, sizeof flt);
    flt.problem = p;
    int n = 0;
    assert_int_equal(et_database_list(db, &flt, count_row, &n, &d), ET_OK);
    assert_int_equal(n, all);
    et_problem_free(p);
    assert_int_equal(et_problem_init("ij,jk->ik", "i=2,j=3,k=4", "f32", &p,
                                     &d),
                     ET_OK);
    flt.problem = p;
    n = 0;
    assert_int_equal(et_database_list(db, &flt, count_row, &n, &d), ET_OK);
    assert_int_equal(n, 0);
    et_problem_free(p);
    flt.problem = NULL;
    flt.limit = 1;
    n = 0;
    assert_int_equal(et_database_list(db, &flt, count_row, &n, &d), ET_OK);
    assert_int_equal(n, 1);

    et_database_prune_options po;
    memset(&po, 0, sizeof po);
    int64_t deleted = -1;
    assert_int_equal(et_database_prune(db, &po, &deleted, &d), ET_ERR_INPUT);
    po.older_than_days = 1;
    assert_int_equal(et_database_prune(db, &po, &deleted, &d), ET_OK);
    assert_int_equal(deleted, 0);
    po.older_than_days = 0;
    po.failed = 1;
    po.dry_run = 1;
    assert_int_equal(et_database_prune(db, &po, &deleted, &d), ET_OK);
    assert_int_equal(deleted, s.trials - s.by_outcome[ET_OUTCOME_OK]);
    et_database_close(db);

    char bogus[160];
    snprintf(bogus, sizeof bogus, "%s/bogus.db", g_dir);
    FILE *f = fopen(bogus, "w");
    fputs("not a database, not at all, no, not even close to one\n", f);
    fclose(f);
    assert_int_equal(et_database_open(bogus, &db, &d), ET_ERR_INPUT);
    assert_null(db);
    assert_int_equal(d.input, ET_INPUT_FILE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_best),
        cmocka_unit_test(test_export),
        cmocka_unit_test(test_run),
        cmocka_unit_test(test_database),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

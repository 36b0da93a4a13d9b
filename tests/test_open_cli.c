/*
 * test_open_cli.c - open axes and sizes never tuned through the eintune
 * command on the suite's device (tests/suite_device.h; the exports run
 * with the OpenCL API: on OpenCL only): a tune with x=* (--tune-at),
 * `run --best` on .npy inputs at sizes never tuned (1, 7, a prime)
 * against a naive loop, `best` of a concrete size answered by the open
 * kernel, the exported open kernel compiled with cc
 * (examples/export_demo.c) and run at x=1000; after tuning one size
 * only, `best` of another answers with the fallback and says from where, `--exact` exits 1, `run --best` verifies
 * the fallback before use; a multi-size tune and `export --dispatch`, its
 * dispatch function called (examples/dispatch_demo.c) at every tuned size
 * and at sizes with no kernel, its files named and guarded as export's
 * (default name with the dtypes, --name, --force, foreign files kept),
 * its macros prefixed as export's (the name in upper case); --embed puts
 * the source into the header byte for byte, and the demo runs from it.
 *
 * Runs $ET_BUILD_DIR/eintune (default build/) as a subprocess, with --db
 * in a temporary directory and peaks from an override file; sizes and
 * budgets are small.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "einsum/npy.h"
#include "tests/suite_device.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char g_dir[256];
static char g_bin[512];

static const char *build_dir(void)
{
    const char *d = getenv("ET_BUILD_DIR");
    return d && *d ? d : "build";
}

static int spawn_wait(char *const *argv, const char *tag)
{
    char out_path[512], err_path[512];
    snprintf(out_path, sizeof out_path, "%s/%s.out", g_dir, tag);
    snprintf(err_path, sizeof err_path, "%s/%s.err", g_dir, tag);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    int ws;
    if (waitpid(pid, &ws, 0) < 0)
        return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

static char *tag_file(const char *tag, const char *ext)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%s", g_dir, tag, ext);
    FILE *f = fopen(path, "rb");
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

/* `eintune ARGS...` (NULL-terminated): the exit status; with doc, the
 * JSON on stdout. */
static int eintune(const char *tag, cJSON **doc, ...)
{
    char *argv[64];
    int n = 0;
    argv[n++] = g_bin;
    va_list ap;
    va_start(ap, doc);
    const char *s;
    while ((s = va_arg(ap, const char *)) != NULL && n < 60)
        argv[n++] = (char *)s;
    va_end(ap);
    td_cli_device(argv, &n);
    argv[n] = NULL;
    int rc = spawn_wait(argv, tag);
    if (doc) {
        char *out = tag_file(tag, "out");
        *doc = cJSON_Parse(out);
        if (!*doc) {
            char *err = tag_file(tag, "err");
            print_error("%s: exit %d, no JSON; stderr:\n%s\n", tag, rc, err);
            free(err);
        }
        free(out);
    }
    return rc;
}

/* Fails with the command's stderr unless it exited with want. */
#define EXPECT_EXIT(tag, rc, want)                                          \
    do {                                                                    \
        int rc_ = (rc);                                                     \
        if (rc_ != (want)) {                                                \
            char *e_ = tag_file(tag, "err");                                \
            fail_msg("%s: exit %d, not %d\n%s", tag, rc_, want, e_);        \
        }                                                                   \
    } while (0)

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static void path_in(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", g_dir, name);
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/et_open_cli_XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_bin, sizeof g_bin, "%s/eintune", build_dir());
    char path[512];
    path_in(path, sizeof path, "xdg");
    setenv("XDG_CACHE_HOME", path, 1);
    path_in(path, sizeof path, "peaks.json");
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs("{\"gflops\": {\"f32\": 100, \"f64\": 50, \"f16\": 100}, "
          "\"bandwidth_gbs\": 20}\n",
          f);
    fclose(f);
    setenv("ET_PEAKS_FILE", path, 1);
    if (!getenv("POCL_CACHE_DIR")) {
        path_in(path, sizeof path, "pocl");
        setenv("POCL_CACHE_DIR", path, 1);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char *argv[] = {"/bin/rm", "-rf", g_dir, NULL};
    spawn_wait(argv, "rm");
    return 0;
}

static void need_binary(void)
{
    if (access(g_bin, X_OK) != 0)
        skip();
}

/* ---- .npy inputs and the naive loop of xik,kj->xij --------------------- */

#define I 5
#define K 4
#define J 3

static void write_npy(const char *name, int ndim, const int64_t *dims,
                      const double *data)
{
    char path[512];
    path_in(path, sizeof path, name);
    et_array a;
    memset(&a, 0, sizeof a);
    a.dtype = ET_F64;
    a.rank = ndim;
    for (int d = 0; d < ndim; d++)
        a.dim[d] = dims[d];
    a.data = (void *)data;
    et_diag d;
    if (et_npy_write(path, &a, &d) != ET_OK)
        fail_msg("%s: %s", path, d.msg);
}

/* run --best at x on fresh inputs; the output against a naive loop */
static void run_best_at(const char *db, int64_t x, const char *tag)
{
    double *A = malloc((size_t)(x * I * K) * sizeof *A);
    double B[K * J];
    srand((unsigned)x);
    for (int64_t i = 0; i < x * I * K; i++)
        A[i] = 2.0 * rand() / RAND_MAX - 1.0;
    for (int i = 0; i < K * J; i++)
        B[i] = 2.0 * rand() / RAND_MAX - 1.0;
    int64_t da[3] = {x, I, K}, db_[2] = {K, J};
    char an[64], cn[64], ap[512], bp[512], cp[512];
    snprintf(an, sizeof an, "A%lld.npy", (long long)x);
    snprintf(cn, sizeof cn, "C%lld.npy", (long long)x);
    write_npy(an, 3, da, A);
    write_npy("B.npy", 2, db_, B);
    path_in(ap, sizeof ap, an);
    path_in(bp, sizeof bp, "B.npy");
    path_in(cp, sizeof cp, cn);
    EXPECT_EXIT(tag, eintune(tag, NULL, "run", "xik,kj->xij", "-i", ap, "-i",
                             bp, "-o", cp, "--best", "--db", db, NULL),
                0);
    et_array c;
    et_diag d;
    if (et_npy_read(cp, &c, &d) != ET_OK)
        fail_msg("%s: %s", cp, d.msg);
    assert_int_equal(c.rank, 3);
    assert_int_equal(c.dim[0], x);
    const double *C = c.data;
    for (int64_t n = 0; n < x; n++)
        for (int i = 0; i < I; i++)
            for (int j = 0; j < J; j++) {
                double ref = 0, mag = 0;
                for (int k = 0; k < K; k++) {
                    ref += A[(n * I + i) * K + k] * B[k * J + j];
                    mag += fabs(A[(n * I + i) * K + k] * B[k * J + j]);
                }
                double got = C[(n * I + i) * J + j];
                if (!(fabs(got - ref) <= 1e-13 * (mag + 1e-300)))
                    fail_msg("%s: x=%lld element (%lld,%d,%d): %.17g, "
                             "expected %.17g",
                             tag, (long long)x, (long long)n, i, j, got, ref);
            }
    et_array_free(&c);
    free(A);
}

/* ---- an open axis end to end -------------------------------------------- */

static void test_open_tune_run(void **state)
{
    (void)state;
    need_binary();
    char db[512];
    path_in(db, sizeof db, "open.db");
    cJSON *doc = NULL;
    EXPECT_EXIT("tune1", eintune("tune1", &doc, "tune", "xik,kj->xij",
                                 "--shape", "x=*,i=5,k=4,j=3", "--dtype",
                                 "f64", "--tune-at", "x=64", "--budget", "3",
                                 "--db", db, "--json", "-", NULL),
                0);
    char *err = tag_file("tune1", "err");
    /* verified at the awkward sizes too */
    assert_non_null(strstr(err, "also checked at x=1 and x=61"));
    free(err);
    /* the JSON says the axis is open and where it was tuned; the race
     * ran there, and its choice is the best */
    assert_non_null(doc);
    const cJSON *sz = cJSON_GetObjectItem(doc, "sizes");
    assert_string_equal(str(sz, "x"), "*");
    assert_int_equal((int)cJSON_GetObjectItem(sz, "i")->valuedouble, 5);
    const cJSON *ta = cJSON_GetObjectItem(doc, "tune_at");
    assert_int_equal((int)cJSON_GetObjectItem(ta, "x")->valuedouble, 64);
    const cJSON *race = cJSON_GetObjectItem(doc, "race");
    const cJSON *best = cJSON_GetObjectItem(doc, "best");
    char raced[256] = "";
    if (cJSON_IsTrue(cJSON_GetObjectItem(race, "ran"))) {
        assert_string_equal(str(best, "source"), "race");
        snprintf(raced, sizeof raced, "%s", str(best, "opts"));
    }
    cJSON_Delete(doc);
    /* the sizes never tuned run the open kernel */
    run_best_at(db, 1, "run1");
    run_best_at(db, 7, "run7");
    run_best_at(db, 64, "run64");
    run_best_at(db, 101, "run101");
    /* best of a concrete size: the open entry, saying so (the race's
     * choice when it ran) */
    EXPECT_EXIT("best1", eintune("best1", &doc, "best", "xik,kj->xij",
                                 "--shape", "x=200,i=5,k=4,j=3", "--db", db,
                                 "--json", "-", NULL),
                0);
    assert_non_null(doc);
    assert_string_equal(str(doc, "source"), "open");
    if (raced[0])
        assert_string_equal(str(doc, "opts"), raced);
    assert_string_equal(str(doc, "open_axis"), "x");
    assert_string_equal(str(doc, "tuned_at"), "x=64");
    assert_string_equal(str(doc, "applied_at"), "x=200");
    cJSON_Delete(doc);
    /* and of the open einsum itself */
    EXPECT_EXIT("best2", eintune("best2", &doc, "best", "xik,kj->xij",
                                 "--shape", "x=inf,i=5,k=4,j=3", "--db", db,
                                 "--json", "-", "--exact", NULL),
                0);
    assert_string_equal(str(doc, "source"), "exact");
    cJSON_Delete(doc);

    /* the export takes x at launch: cc and the OpenCL API alone */
    if (!td_suite_opencl("the export run by examples/export_demo.c"))
        return;
    char dir[512];
    path_in(dir, sizeof dir, "exp");
    EXPECT_EXIT("exp1", eintune("exp1", &doc, "export", "xik,kj->xij",
                                "--shape", "x=*,i=5,k=4,j=3", "--db", db,
                                "-o", dir, "--json", "-", NULL),
                0);
    char kernel[200], src[1000], def[300], inc[600], exe[600];
    snprintf(kernel, sizeof kernel, "%s", str(doc, "kernel"));
    cJSON_Delete(doc);
    assert_true(strncmp(kernel, "r_n_", 4) == 0);
    /* named with its dtypes, as every exported kernel */
    assert_true(strlen(kernel) > 4 &&
                strcmp(kernel + strlen(kernel) - 4, "_f64") == 0);
    snprintf(src, sizeof src, "%s/%s.cl", dir, kernel);
    snprintf(def, sizeof def, "-DET_EXPORT_HEADER=\"%s.h\"", kernel);
    snprintf(inc, sizeof inc, "-I%s", dir);
    path_in(exe, sizeof exe, "export_demo");
    char *cc[] = {"/usr/bin/cc", "-std=c11", "-O1", "-Wall", "-Wextra",
                  "-Werror", inc, def, "examples/export_demo.c", "-lOpenCL",
                  "-lm", "-o", exe, NULL};
    EXPECT_EXIT("cc1", spawn_wait(cc, "cc1"), 0);
    const char *ns[] = {"1000", "1", "13"};
    for (int i = 0; i < 3; i++) {
        char tag[32];
        snprintf(tag, sizeof tag, "demo%d", i);
        char *run[] = {exe, src, "5", (char *)ns[i], NULL};
        EXPECT_EXIT(tag, spawn_wait(run, tag), 0);
        char *out = tag_file(tag, "out");
        assert_non_null(strstr(out, ": ok"));
        if (i == 0)
            assert_non_null(strstr(out, " 15000 output elements"));
        free(out);
    }
}

/* ---- sizes never tuned --------------------------------------------------- */

static void test_fallback(void **state)
{
    (void)state;
    need_binary();
    char db[512];
    path_in(db, sizeof db, "fallback.db");
    EXPECT_EXIT("tune2", eintune("tune2", NULL, "tune", "xik,kj->xij",
                                 "--shape", "x=32,i=5,k=4,j=3", "--dtype",
                                 "f64", "--budget", "3", "--db", db, NULL),
                0);
    cJSON *doc = NULL;
    EXPECT_EXIT("fb1", eintune("fb1", &doc, "best", "xik,kj->xij", "--shape",
                               "x=64,i=5,k=4,j=3", "--db", db, "--json", "-",
                               NULL),
                0);
    assert_non_null(doc);
    assert_string_equal(str(doc, "source"), "fallback");
    assert_string_equal(str(doc, "tuned_at"), "x=32");
    assert_string_equal(str(doc, "applied_at"), "x=64");
    /* no timing from the other size */
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc,
                                                              "time_s")));
    cJSON_Delete(doc);
    EXPECT_EXIT("fb2", eintune("fb2", NULL, "best", "xik,kj->xij", "--shape",
                               "x=64,i=5,k=4,j=3", "--db", db, NULL),
                0);
    char *out = tag_file("fb2", "out");
    assert_non_null(strstr(out, "tuned at x=32, applied at x=64"));
    assert_null(strstr(out, " ms ["));
    free(out);
    EXPECT_EXIT("fb3", eintune("fb3", NULL, "best", "xik,kj->xij", "--shape",
                               "x=64,i=5,k=4,j=3", "--db", db, "--exact",
                               NULL),
                1);
    /* run --best verifies the re-applied opts at the asked size */
    run_best_at(db, 64, "fbrun");
    char *err = tag_file("fbrun", "err");
    assert_non_null(strstr(err, "tuned at x=32, applied at x=64: verified"));
    free(err);
    /* another structure: nothing, as before */
    EXPECT_EXIT("fb4", eintune("fb4", NULL, "best", "xik,kj->xij", "--shape",
                               "x=64,i=5,k=4,j=3", "--dtype", "f32", "--db",
                               db, NULL),
                1);
}

/* ---- several sizes and the dispatch table ------------------------------- */

/* The whole file at path (malloc'ed; "" when unreadable), its length in
 * *n (may be NULL). */
static char *file_text(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (n)
        *n = 0;
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    size_t got = fread(buf, 1, (size_t)len, f);
    buf[got] = '\0';
    fclose(f);
    if (n)
        *n = got;
    return buf;
}

/* dir/name.h's <prefix>SOURCE, printed by a program built with it, is
 * dir/name.cl byte for byte, and <prefix>SOURCE_BYTES its length. */
static void embedded_check(const char *dir, const char *name,
                           const char *prefix)
{
    char prog[700], exe[700], inc[600], def[300], src[700];
    snprintf(prog, sizeof prog, "%s/print_%s.c", g_dir, name);
    snprintf(exe, sizeof exe, "%s/print_%s", g_dir, name);
    snprintf(inc, sizeof inc, "-I%s", dir);
    snprintf(def, sizeof def, "-DHDR=\"%s.h\"", name);
    snprintf(src, sizeof src, "%s/%s.cl", dir, name);
    FILE *f = fopen(prog, "w");
    assert_non_null(f);
    fprintf(f, "#include <stdio.h>\n#include HDR\n"
               "static const char s[] = %sSOURCE;\n"
               "int main(void)\n{\n"
               "    fwrite(s, 1, sizeof s - 1, stdout);\n"
               "    return sizeof s - 1 != %sSOURCE_BYTES;\n}\n",
            prefix, prefix);
    fclose(f);
    char *cc[] = {"/usr/bin/cc", "-std=c11", "-Wall", "-Wextra", "-Werror",
                  inc, def, prog, "-o", exe, NULL};
    EXPECT_EXIT("embed-cc", spawn_wait(cc, "embed-cc"), 0);
    char *run[] = {exe, NULL};
    EXPECT_EXIT("embed-print", spawn_wait(run, "embed-print"), 0);
    char out[700];
    snprintf(out, sizeof out, "%s/embed-print.out", g_dir);
    size_t n_file = 0, n_str = 0;
    char *file = file_text(src, &n_file), *got = file_text(out, &n_str);
    assert_true(n_file > 100);
    if (n_str != n_file || memcmp(got, file, n_file) != 0)
        fail_msg("%sSOURCE differs from %s (%zu and %zu bytes)", prefix, src,
                 n_str, n_file);
    free(file);
    free(got);
}

/* The table's default name: the einsum's letters and the dtypes. */
#define TABLE_F64 "dispatch_xik_kj_to_xij_f64"

/* Builds examples/dispatch_demo.c against table name in dir (with
 * embed, from the header's string: -DET_DISPATCH_EMBED, and the .cl file
 * moved away while it runs) and runs it at sizes; line i must name
 * want[i]. The demo names the header's symbols through its ET_DISPATCH
 * and ET_DISPATCH_FN alone. */
static void dispatch_run(const char *dir, const char *name, const char *tag,
                         char **sizes, int n, const char **want, int embed)
{
    char src[600], away[700], inc[600], exe[600], def[200], ctag[64];
    snprintf(src, sizeof src, "%s/%s.cl", dir, name);
    snprintf(away, sizeof away, "%s.away", src);
    snprintf(inc, sizeof inc, "-I%s", dir);
    snprintf(def, sizeof def, "-DET_DISPATCH_HEADER=\"%s.h\"", name);
    snprintf(exe, sizeof exe, "%s/dispatch_demo", dir);
    snprintf(ctag, sizeof ctag, "%s-cc", tag);
    char *cc[] = {"/usr/bin/cc", "-std=c11", "-O1", "-Wall", "-Wextra",
                  "-Werror", inc, def,
                  embed ? "-DET_DISPATCH_EMBED" : "-DET_DISPATCH_FILE",
                  "examples/dispatch_demo.c", "-lOpenCL", "-lm", "-o", exe,
                  NULL};
    EXPECT_EXIT(ctag, spawn_wait(cc, ctag), 0);
    char *argv[32];
    int a = 0;
    argv[a++] = exe;
    argv[a++] = embed ? "-" : src;
    for (int i = 0; i < n; i++)
        argv[a++] = sizes[i];
    argv[a] = NULL;
    if (embed)
        assert_int_equal(rename(src, away), 0);
    int rc = spawn_wait(argv, tag);
    if (embed)
        assert_int_equal(rename(away, src), 0);
    EXPECT_EXIT(tag, rc, 0);
    char *out = tag_file(tag, "out");
    const char *p = out;
    for (int i = 0; i < n; i++) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(nl - p), p);
        if (!strstr(line, ": ok") || !strstr(line, want[i]))
            fail_msg("%s: '%s' (wanted '%s')", tag, line, want[i]);
        p = nl + 1;
    }
    free(out);
}

static void test_dispatch(void **state)
{
    (void)state;
    need_binary();
    if (!td_suite_opencl("the dispatch table run by "
                         "examples/dispatch_demo.c"))
        skip();
    char db[512];
    path_in(db, sizeof db, "multi.db");
    EXPECT_EXIT("tune3", eintune("tune3", NULL, "tune", "xik,kj->xij",
                                 "--shape", "x=16,i=4:16:4,k=i,j=i",
                                 "--dtype", "f64", "--budget", "2", "--db",
                                 db, NULL),
                0);
    char *out = tag_file("tune3", "out");
    const char *rows[] = {"x=16,i=4,k=4,j=4", "x=16,i=8,k=8,j=8",
                          "x=16,i=12,k=12,j=12", "x=16,i=16,k=16,j=16"};
    for (int i = 0; i < 4; i++)
        assert_non_null(strstr(out, rows[i]));
    assert_non_null(strstr(out, "speedup"));
    /* whose median each time is: the race's or the search's */
    assert_non_null(strstr(out, "time ms from "));
    free(out);
    char dir[512];
    path_in(dir, sizeof dir, "disp");
    cJSON *doc = NULL;
    EXPECT_EXIT("disp1", eintune("disp1", &doc, "export", "xik,kj->xij",
                                 "--shape", "x=16,i=4/8/12/16,k=i,j=i",
                                 "--dispatch", "--db", db, "-o", dir,
                                 "--json", "-", NULL),
                0);
    assert_int_equal((int)cJSON_GetObjectItem(doc, "tuned")->valuedouble, 4);
    assert_string_equal(str(doc, "name"), TABLE_F64);
    assert_string_equal(str(doc, "prefix"), "DISPATCH_XIK_KJ_TO_XIJ_F64_");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(doc, "replaced")));
    cJSON_Delete(doc);
    /* the same table again is rewritten */
    EXPECT_EXIT("disp1b", eintune("disp1b", &doc, "export", "xik,kj->xij",
                                  "--shape", "x=16,i=4/8/12/16,k=i,j=i",
                                  "--dispatch", "--db", db, "-o", dir,
                                  "--json", "-", NULL),
                0);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(doc, "replaced")));
    cJSON_Delete(doc);
    /* the same einsum in f32 has another default name: no collision */
    EXPECT_EXIT("disp1c", eintune("disp1c", &doc, "export", "xik,kj->xij",
                                  "--shape", "x=16,i=4/8,k=i,j=i", "--dtype",
                                  "f32", "--dispatch", "--db", db, "-o", dir,
                                  "--json", "-", NULL),
                0);
    assert_string_equal(str(doc, "name"), "dispatch_xik_kj_to_xij_f32");
    assert_int_equal((int)cJSON_GetObjectItem(doc, "tuned")->valuedouble, 0);
    cJSON_Delete(doc);
    /* another table under the same name is refused without --force */
    EXPECT_EXIT("disp1d", eintune("disp1d", NULL, "export", "xik,kj->xij",
                                  "--shape", "x=16,i=4/8,k=i,j=i",
                                  "--dispatch", "--db", db, "-o", dir, NULL),
                2);
    char *err = tag_file("disp1d", "err");
    if (!strstr(err, TABLE_F64 ".") || !strstr(err, "--force"))
        fail_msg("disp1d: %s", err);
    free(err);
    /* a bad --name is refused before anything is opened */
    EXPECT_EXIT("disp1e", eintune("disp1e", NULL, "export", "xik,kj->xij",
                                  "--shape", "x=16,i=4/8,k=i,j=i", "--name",
                                  "int", "--dispatch", "--db", db, "-o", dir,
                                  NULL),
                2);
    /* sizes in index order x, i, j, k */
    char *sizes[] = {"16,4,4,4", "16,8,8,8", "16,12,12,12", "16,16,16,16",
                     "16,20,20,20", "3,5,7,2"};
    const char *want[] = {"kernel 0 ", "kernel 1 ", "kernel 2 ", "kernel 3 ",
                          "generic", "generic"};
    dispatch_run(dir, TABLE_F64, "disprun1", sizes, 6, want, 0);
    /* the header's macros: the name in upper case and '_', as export's;
     * the function and type keep the name */
    char hpath[700];
    snprintf(hpath, sizeof hpath, "%s/" TABLE_F64 ".h", dir);
    char *h = file_text(hpath, NULL);
    assert_non_null(strstr(h, "#define DISPATCH_XIK_KJ_TO_XIJ_F64_N_INDICES 4\n"));
    assert_non_null(strstr(h, "#define DISPATCH_XIK_KJ_TO_XIJ_F64_EINSUM "));
    assert_non_null(strstr(h, "#ifndef ET_DISPATCH_DISPATCH_XIK_KJ_TO_XIJ_F64_H"));
    assert_non_null(strstr(h, "static inline int " TABLE_F64 "_dispatch("));
    assert_non_null(strstr(h, "} " TABLE_F64 "_launch;"));
    assert_null(strstr(h, "#define " TABLE_F64 "_"));
    assert_null(strstr(h, "SOURCE_BYTES"));
    free(h);

    /* --embed: the source in the header, byte for byte the .cl file's */
    EXPECT_EXIT("disp1f", eintune("disp1f", &doc, "export", "xik,kj->xij",
                                  "--shape", "x=16,i=4/8/12/16,k=i,j=i",
                                  "--dispatch", "--embed", "--name",
                                  "embed_table", "--db", db, "-o", dir,
                                  "--json", "-", NULL),
                0);
    assert_string_equal(str(doc, "prefix"), "EMBED_TABLE_");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(doc, "embedded")));
    cJSON_Delete(doc);
    embedded_check(dir, "embed_table", "EMBED_TABLE_");
    dispatch_run(dir, "embed_table", "disprun4", sizes, 6, want, 1);

    /* an open-axis kernel in a table covers every size of its axis */
    EXPECT_EXIT("tune4", eintune("tune4", NULL, "tune", "xik,kj->xij",
                                 "--shape", "x=*,i=6,k=6,j=6", "--dtype",
                                 "f64", "--tune-at", "x=20", "--budget", "2",
                                 "--db", db, NULL),
                0);
    /* into the first table's directory: --force replaces its files, --name
     * keeps them apart */
    EXPECT_EXIT("disp2f", eintune("disp2f", &doc, "export", "xik,kj->xij",
                                  "--shape", "x=*,i=6/8,k=i,j=i",
                                  "--dispatch", "--force", "--db", db, "-o",
                                  dir, "--json", "-", NULL),
                0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(doc, "replaced")));
    cJSON_Delete(doc);
    EXPECT_EXIT("disp2", eintune("disp2", &doc, "export", "xik,kj->xij",
                                 "--shape", "x=*,i=6/8,k=i,j=i", "--dispatch",
                                 "--name", "open_table", "--db", db, "-o",
                                 dir, "--json", "-", NULL),
                0);
    assert_int_equal((int)cJSON_GetObjectItem(doc, "open")->valuedouble, 1);
    assert_string_equal(str(doc, "name"), "open_table");
    cJSON_Delete(doc);
    char *sizes2[] = {"1,6,6,6", "53,6,6,6", "16,8,8,8", "5,7,7,7"};
    const char *want2[] = {"kernel 0 ", "kernel 0 ", "generic", "generic"};
    dispatch_run(dir, "open_table", "disprun2", sizes2, 4, want2, 0);
    dispatch_run(dir, TABLE_F64, "disprun3", sizes2, 4, want2, 0);
    /* a file eintune did not write is never replaced, forced or not */
    char foreign[700];
    snprintf(foreign, sizeof foreign, "%s/mine.h", dir);
    FILE *f = fopen(foreign, "w");
    assert_non_null(f);
    fputs("/* my own header */\n", f);
    fclose(f);
    EXPECT_EXIT("disp3", eintune("disp3", NULL, "export", "xik,kj->xij",
                                 "--shape", "x=*,i=6/8,k=i,j=i", "--dispatch",
                                 "--name", "mine", "--force", "--db", db,
                                 "-o", dir, NULL),
                2);
    f = fopen(foreign, "r");
    assert_non_null(f);
    char line[64] = "";
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_string_equal(line, "/* my own header */\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_tune_run),
        cmocka_unit_test(test_fallback),
        cmocka_unit_test(test_dispatch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

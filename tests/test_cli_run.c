/*
 * test_cli_run.c - `eintune run` against NumPy: tests/data/numpy_cases.py
 * (run with /usr/bin/python3, which has NumPy on Debian) writes inputs,
 * NumPy's output and the sum of |terms| for dozens of einsums (diagonals,
 * implicit outputs, ellipsis, scalars, broadcasting, 3-7 operands); each is
 * run untransformed and with valid opts through build/eintune, and every
 * output element must be within the rigorous rounding bound of NumPy's
 * extended-precision result. Also: the CLI's failure modes (refused opts,
 * wrong input count, missing file, no CUDA device) and --verify --time,
 * and the roofline as a ceiling (peaks planted far too low are measured
 * again when a kernel beats them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "einsum/einsum.h"
#include "einsum/npy.h"
#include "roofline/peaks.h"
#include "tests/suite_device.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char g_dir[256];

static const char *build_dir(void)
{
    const char *d = getenv("ET_BUILD_DIR");
    return d && *d ? d : "build";
}

/* Runs argv (NULL-terminated, argv[0] the program; eintune on the suite's
 * device unless argv names one); stdout and stderr go to files in g_dir;
 * returns the exit status or -1. */
static int spawn_wait(char *const *given, const char *tag)
{
    char *argv[64];
    int argc = 0;
    for (; argc < 61 && given[argc]; argc++)
        argv[argc] = given[argc];
    td_cli_device(argv, &argc);
    argv[argc] = NULL;
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

static char *slurp(const char *path)
{
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

static char *tag_file(const char *tag, const char *ext)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%s", g_dir, tag, ext);
    return slurp(path);
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/et_cli_run_XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    if (access("/usr/bin/python3", X_OK) != 0)
        return 0; /* the NumPy test skips */
    char *argv[] = {"/usr/bin/python3", "tests/data/numpy_cases.py", g_dir,
                    NULL};
    return spawn_wait(argv, "python") == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char *argv[] = {"/bin/rm", "-rf", g_dir, NULL};
    spawn_wait(argv, "rm");
    return 0;
}

static double unit_roundoff(et_dtype t)
{
    return t == ET_F64 ? ldexp(1.0, -53) : ldexp(1.0, -24);
}

static double elem(const et_array *a, int64_t i)
{
    switch (a->dtype) {
    case ET_F64: return ((const double *)a->data)[i];
    case ET_F32: return ((const float *)a->data)[i];
    default: return et_half_to_float(((const uint16_t *)a->data)[i]);
    }
}

/* One case line: runs eintune and compares with NumPy. */
static void run_case(int k, const char *expr, int n_in, const char *opts,
                     int *n_checked)
{
    char bin[512], out[512], tag[64], paths[8][512];
    char *argv[32];
    int argc = 0;
    snprintf(bin, sizeof bin, "%s/eintune", build_dir());
    snprintf(out, sizeof out, "%s/%d_out.npy", g_dir, k);
    snprintf(tag, sizeof tag, "case%d", k);
    argv[argc++] = bin;
    argv[argc++] = "run";
    argv[argc++] = (char *)expr;
    assert_true(n_in <= 8);
    for (int j = 0; j < n_in; j++) {
        snprintf(paths[j], sizeof paths[j], "%s/%d_%d.npy", g_dir, k, j);
        argv[argc++] = "-i";
        argv[argc++] = paths[j];
    }
    argv[argc++] = "-o";
    argv[argc++] = out;
    if (strcmp(opts, "-") != 0) {
        argv[argc++] = "--opts";
        argv[argc++] = (char *)opts;
    }
    argv[argc++] = "--quiet";
    argv[argc] = NULL;
    unlink(out);
    int rc = spawn_wait(argv, tag);
    if (rc != 0) {
        char *err = tag_file(tag, "err");
        fail_msg("eintune run '%s' --opts '%s' exited %d: %s", expr, opts,
                 rc, err);
    }

    /* The einsum as eintune sees it, for the bound. */
    et_array in[8], got, ref, absv;
    et_diag d;
    et_subscripts sub;
    et_operand_shapes shapes = {0};
    et_dtype dt[8];
    assert_int_equal(et_subscripts_parse(expr, &sub, &d), ET_OK);
    shapes.n_ops = n_in;
    for (int j = 0; j < n_in; j++) {
        assert_int_equal(et_npy_read(paths[j], &in[j], &d), ET_OK);
        shapes.rank[j] = in[j].rank;
        memcpy(shapes.dim[j], in[j].dim, sizeof in[j].dim);
        dt[j] = in[j].dtype;
    }
    et_einsum e;
    assert_int_equal(et_einsum_resolve(&sub, NULL, &shapes, dt, &e, &d),
                     ET_OK);
    char p[512];
    assert_int_equal(et_npy_read(out, &got, &d), ET_OK);
    snprintf(p, sizeof p, "%s/%d_ref.npy", g_dir, k);
    assert_int_equal(et_npy_read(p, &ref, &d), ET_OK);
    snprintf(p, sizeof p, "%s/%d_abs.npy", g_dir, k);
    assert_int_equal(et_npy_read(p, &absv, &d), ET_OK);

    /* Same shape as NumPy's output. */
    assert_int_equal(got.rank, ref.rank);
    for (int r = 0; r < got.rank; r++)
        assert_int_equal(got.dim[r], ref.dim[r]);
    assert_int_equal(got.dtype, e.out.dtype);

    int64_t terms = 1;
    for (int i = e.n_out; i < e.n_idx; i++)
        terms *= e.idx[i].size;
    double u = unit_roundoff(e.acc_dtype);
    double nn = (double)(terms + e.n_ops - 2);
    if (nn < 0)
        nn = 0;
    double gamma = nn * u / (1 - nn * u);
    int64_t n = et_array_elems(&got);
    for (int64_t i = 0; i < n; i++) {
        double g = elem(&got, i), r = elem(&ref, i), a = elem(&absv, i);
        /* NumPy's long double result was stored as f64: one more rounding
         * of the reference, hence the 2^-53 |r| term. */
        double bound = gamma * a + ldexp(fabs(r), -53) * 2;
        if (!(fabs(g - r) <= bound))
            fail_msg("%s --opts '%s': element %lld: got %.17g, NumPy %.17g, "
                     "bound %.3g",
                     expr, opts, (long long)i, g, r, bound);
    }
    (*n_checked)++;
    for (int j = 0; j < n_in; j++)
        et_array_free(&in[j]);
    et_array_free(&got);
    et_array_free(&ref);
    et_array_free(&absv);
}

static void test_numpy_cases(void **state)
{
    (void)state;
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    char path[512];
    snprintf(path, sizeof path, "%s/cases.txt", g_dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    int n_checked = 0, n_with_opts = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *save = NULL;
        char *sk = strtok_r(line, "\t", &save);
        char *expr = strtok_r(NULL, "\t", &save);
        char *sn = strtok_r(NULL, "\t", &save);
        char *opts = strtok_r(NULL, "\t", &save);
        assert_non_null(opts);
        run_case(atoi(sk), expr, atoi(sn), opts, &n_checked);
        if (strcmp(opts, "-") != 0)
            n_with_opts++;
    }
    fclose(f);
    print_message("checked %d runs against NumPy (%d with opts)\n",
                  n_checked, n_with_opts);
    assert_true(n_checked >= 60);
    assert_true(n_with_opts >= 25);
}

/* Writes a small f64 array for the failure tests. */
static void write_array(const char *name, int rank, const int64_t *dim,
                        char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", g_dir, name);
    et_array a = {0};
    a.dtype = ET_F64;
    a.rank = rank;
    int64_t n = 1;
    for (int r = 0; r < rank; r++) {
        a.dim[r] = dim[r];
        n *= dim[r];
    }
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)(i % 7) - 3;
    a.data = v;
    et_diag d;
    assert_int_equal(et_npy_write(path, &a, &d), ET_OK);
    free(v);
}

/* An f64 array of values (i * mul + add) % 11 - 5, written as name. */
static void write_seeded(const char *name, int rank, const int64_t *dim,
                         int mul, int add, double **keep, char *path,
                         size_t cap)
{
    snprintf(path, cap, "%s/%s", g_dir, name);
    et_array a = {0};
    a.dtype = ET_F64;
    a.rank = rank;
    int64_t n = 1;
    for (int r = 0; r < rank; r++) {
        a.dim[r] = dim[r];
        n *= dim[r];
    }
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)((i * mul + add) % 11) - 5;
    a.data = v;
    et_diag d;
    assert_int_equal(et_npy_write(path, &a, &d), ET_OK);
    *keep = v;
}

/* out (x by i) must be u (x by j) times D (i by j) transposed, exactly:
 * small integers are exact in f64. */
static void expect_gradient(const char *path, const double *u,
                            const double *D, int64_t X, int64_t I, int64_t J)
{
    et_array o;
    et_diag d;
    if (et_npy_read(path, &o, &d) != ET_OK)
        fail_msg("%s: %s", path, d.msg);
    assert_int_equal(o.rank, 2);
    assert_int_equal(o.dim[0], X);
    assert_int_equal(o.dim[1], I);
    const double *g = o.data;
    for (int64_t x = 0; x < X; x++)
        for (int64_t i = 0; i < I; i++) {
            double want = 0;
            for (int64_t j = 0; j < J; j++)
                want += u[x * J + j] * D[i * J + j];
            if (g[x * I + i] != want)
                fail_msg("%s[%lld,%lld] = %g, want %g", path, (long long)x,
                         (long long)i, g[x * I + i], want);
        }
    et_array_free(&o);
}

/* A batched einsum (--batch): named inputs, one output per row, each the
 * row's own product; tuned once, then run with --best from the same
 * database entry with the rows reordered and the arrays renamed; and
 * the command's refusals. */
static void test_batch_run(void **state)
{
    (void)state;
    char bin[512], db[512], pu[512], pr[512], ps[512], pt[512];
    char iu[600], ir[600], is[600], it[600], iv[600], o[3][512];
    snprintf(bin, sizeof bin, "%s/eintune", build_dir());
    snprintf(db, sizeof db, "%s/batch.db", g_dir);
    const int64_t X = 37, I = 6, J = 5;
    int64_t du[2] = {X, J}, dd[2] = {I, J};
    double *u, *Dr, *Ds, *Dt;
    write_seeded("u.npy", 2, du, 3, 1, &u, pu, sizeof pu);
    write_seeded("Dr.npy", 2, dd, 5, 2, &Dr, pr, sizeof pr);
    write_seeded("Ds.npy", 2, dd, 7, 3, &Ds, ps, sizeof ps);
    write_seeded("Dt.npy", 2, dd, 2, 9, &Dt, pt, sizeof pt);
    snprintf(iu, sizeof iu, "u=%s", pu);
    snprintf(iv, sizeof iv, "v=%s", pu);
    snprintf(ir, sizeof ir, "Dr=%s", pr);
    snprintf(is, sizeof is, "Ds=%s", ps);
    snprintf(it, sizeof it, "Dt=%s", pt);
    for (int r = 0; r < 3; r++)
        snprintf(o[r], sizeof o[r], "%s/g%d.npy", g_dir, r);

    /* opts given: every row's output */
    char *v1[] = {bin, "run", "xj,ij->xi", "--batch", "u,Dr; u,Ds; u,Dt",
                  "-i", iu, "-i", ir, "-i", is, "-i", it, "-o", o[0],
                  "-o", o[1], "-o", o[2], "--opts", "UPCAST(R,0) UPCAST(i,2)",
                  "--verify", NULL};
    assert_int_equal(spawn_wait(v1, "b1"), 0);
    expect_gradient(o[0], u, Dr, X, I, J);
    expect_gradient(o[1], u, Ds, X, I, J);
    expect_gradient(o[2], u, Dt, X, I, J);

    /* tuned, then answered from that entry with the rows reordered and
     * u renamed v */
    char *v2[] = {bin, "tune", "xj,ij->xi", "--batch", "u,Dr; u,Ds; u,Dt",
                  "--shape", "x=37,i=6,j=5", "--budget", "4", "--race", "0",
                  "--db", db, NULL};
    assert_int_equal(spawn_wait(v2, "b2"), 0);
    for (int r = 0; r < 3; r++)
        unlink(o[r]);
    char *v3[] = {bin, "run", "xj,ij->xi", "--batch", "v,Dt; v,Dr; v,Ds",
                  "-i", iv, "-i", ir, "-i", is, "-i", it, "-o", o[0],
                  "-o", o[1], "-o", o[2], "--best", "--exact", "--db", db,
                  NULL};
    assert_int_equal(spawn_wait(v3, "b3"), 0);
    char *err = tag_file("b3", "err");
    assert_non_null(strstr(err, "tuned as xj,Rij->Rxi"));
    free(err);
    expect_gradient(o[0], u, Dt, X, I, J);
    expect_gradient(o[1], u, Dr, X, I, J);
    expect_gradient(o[2], u, Ds, X, I, J);

    /* refusals, exit 2: one -o for three rows; an input not NAME=FILE;
     * a row's array of another shape; a malformed spec, with its caret */
    char *v4[] = {bin, "run", "xj,ij->xi", "--batch", "u,Dr; u,Ds; u,Dt",
                  "-i", iu, "-i", ir, "-i", is, "-i", it, "-o", o[0], NULL};
    assert_int_equal(spawn_wait(v4, "b4"), 2);
    err = tag_file("b4", "err");
    assert_non_null(strstr(err, "one -o per row"));
    free(err);
    char *v5[] = {bin, "run", "xj,ij->xi", "--batch", "u,Dr; u,Ds",
                  "-i", pu, "-i", ir, "-i", is, "-o", o[0], "-o", o[1], NULL};
    assert_int_equal(spawn_wait(v5, "b5"), 2);
    char ibad[600];
    snprintf(ibad, sizeof ibad, "Ds=%s", pu);
    char *v6[] = {bin, "run", "xj,ij->xi", "--batch", "u,Dr; u,Ds",
                  "-i", iu, "-i", ir, "-i", ibad, "-o", o[0], "-o", o[1],
                  NULL};
    assert_int_equal(spawn_wait(v6, "b6"), 2);
    err = tag_file("b6", "err");
    assert_non_null(strstr(err, "differs in shape or dtype"));
    free(err);
    char *v7[] = {bin, "run", "xj,ij->xi", "--batch", "u,Dr; u,Dr,Ds",
                  "-i", iu, "-i", ir, "-i", is, "-o", o[0], "-o", o[1], NULL};
    assert_int_equal(spawn_wait(v7, "b7"), 2);
    err = tag_file("b7", "err");
    assert_non_null(strstr(err, "--batch"));
    assert_non_null(strstr(err, "^"));
    free(err);
    free(u);
    free(Dr);
    free(Ds);
    free(Dt);
}

static void test_failures(void **state)
{
    (void)state;
    char bin[512], a[512], b[512], o[512];
    snprintf(bin, sizeof bin, "%s/eintune", build_dir());
    snprintf(o, sizeof o, "%s/fail_out.npy", g_dir);
    int64_t da[2] = {4, 6}, db[2] = {6, 8};
    write_array("fa.npy", 2, da, a, sizeof a);
    write_array("fb.npy", 2, db, b, sizeof b);

    /* A refused opt: exit 2, the rule named, no output written. */
    unlink(o);
    char *v1[] = {bin, "run", "ij,jk->ik", "-i", a, "-i", b, "-o", o,
                  "--opts", "UPCAST(j,2)", NULL};
    assert_int_equal(spawn_wait(v1, "f1"), 2);
    char *err = tag_file("f1", "err");
    assert_non_null(strstr(err, "global axes only"));
    free(err);
    assert_int_not_equal(access(o, F_OK), 0);

    /* Wrong number of inputs: exit 2. */
    char *v2[] = {bin, "run", "ij,jk->ik", "-i", a, "-o", o, NULL};
    assert_int_equal(spawn_wait(v2, "f2"), 2);
    err = tag_file("f2", "err");
    assert_non_null(strstr(err, "2 operands but 1 input"));
    free(err);

    /* Shapes that disagree with the einsum: exit 2. */
    char *v3[] = {bin, "run", "ij,jk->ik", "-i", a, "-i", a, "-o", o, NULL};
    assert_int_equal(spawn_wait(v3, "f3"), 2);

    /* A missing file: exit 2, named. */
    char *v4[] = {bin, "run", "ij,jk->ik", "-i", a, "-i", "/nonexistent.npy",
                  "-o", o, NULL};
    assert_int_equal(spawn_wait(v4, "f4"), 2);
    err = tag_file("f4", "err");
    assert_non_null(strstr(err, "/nonexistent.npy"));
    free(err);

    /* No CUDA device on this machine (ET_LIBCUDA pointing nowhere makes
     * the test independent of the machine): exit 1, said clearly. */
    setenv("ET_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    char *v5[] = {bin, "run", "ij,jk->ik", "-i", a, "-i", b, "-o", o,
                  "--device", "cuda:0", NULL};
    assert_int_equal(spawn_wait(v5, "f5"), 1);
    unsetenv("ET_LIBCUDA");
    err = tag_file("f5", "err");
    assert_non_null(strstr(err, "no CUDA device"));
    free(err);
    assert_int_not_equal(access(o, F_OK), 0);
}

static void test_verify_time(void **state)
{
    (void)state;
    char bin[512], a[512], b[512], o[512], js[512];
    snprintf(bin, sizeof bin, "%s/eintune", build_dir());
    snprintf(o, sizeof o, "%s/vt_out.npy", g_dir);
    snprintf(js, sizeof js, "%s/vt.json", g_dir);
    int64_t da[2] = {16, 12}, db[2] = {12, 8};
    write_array("va.npy", 2, da, a, sizeof a);
    write_array("vb.npy", 2, db, b, sizeof b);
    char *v[] = {bin, "run", "ij,jk->ik", "-i", a, "-i", b, "-o", o,
                 "--opts", "LOCAL(i,4) UPCAST(k,4) UNROLL(j,3)", "--verify",
                 "--time", "--json", js, NULL};
    int rc = spawn_wait(v, "vt");
    char *err = tag_file("vt", "err");
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    assert_non_null(strstr(err, "verified: 3 trials, max normalized error"));
    assert_non_null(strstr(err, "median"));
    free(err);
    char *out = tag_file("vt", "out");
    assert_non_null(strstr(out, "Measured GOps/s"));
    free(out);
    char *json = slurp(js);
    assert_non_null(strstr(json, "\"ci95_s\""));
    assert_non_null(strstr(json, "\"max_norm_err\""));
    /* the problem: sizes in the einsum's names, dtypes */
    cJSON *doc = cJSON_Parse(json);
    assert_non_null(doc);
    cJSON *sz = cJSON_GetObjectItem(doc, "sizes");
    assert_int_equal(cJSON_GetObjectItem(sz, "i")->valueint, 16);
    assert_int_equal(cJSON_GetObjectItem(sz, "j")->valueint, 12);
    assert_int_equal(cJSON_GetObjectItem(sz, "k")->valueint, 8);
    cJSON *dt = cJSON_GetObjectItem(doc, "dtypes");
    cJSON *in = cJSON_GetObjectItem(dt, "inputs");
    assert_int_equal(cJSON_GetArraySize(in), 2);
    assert_string_equal(cJSON_GetArrayItem(in, 0)->valuestring, "f64");
    assert_string_equal(cJSON_GetObjectItem(dt, "output")->valuestring,
                        "f64");
    cJSON_Delete(doc);
    free(json);
}

/* Every figure of a peaks document times f: FMA rates, bandwidths and
 * their spreads (runs, variants and byte counts stay). */
static void scale_peaks(cJSON *o, bool in_rate, double f)
{
    for (cJSON *c = o ? o->child : NULL; c; c = c->next) {
        const char *k = c->string ? c->string : "";
        bool rate = in_rate || !strcmp(k, "gflops");
        if (cJSON_IsNumber(c)) {
            if (rate || !strcmp(k, "gbs") || !strcmp(k, "bandwidth_gbs") ||
                !strcmp(k, "min") || !strcmp(k, "median") ||
                !strcmp(k, "max"))
                cJSON_SetNumberValue(c, c->valuedouble * f);
        } else {
            scale_peaks(c, rate, f);
        }
    }
}

/* The DRAM read-only figure of a peaks document (-1: none). */
static double dram_read_of(const char *text)
{
    cJSON *doc = cJSON_Parse(text ? text : "");
    cJSON *bw = cJSON_GetObjectItem(doc, "bandwidth");
    cJSON *g = cJSON_GetObjectItem(cJSON_GetObjectItem(bw, "read"), "gbs");
    double v = cJSON_IsNumber(g) ? g->valuedouble : -1;
    cJSON_Delete(doc);
    return v;
}

/* A roofline is a ceiling: with cached peaks a million times too low, a
 * timed kernel's whole interval lies above the roof, so `run --time`
 * measures the peaks again, says so (log and JSON), and the cache then
 * holds the new, faster figures. */
static void test_roof_ceiling(void **state)
{
    (void)state;
    char bin[512], a[512], b[512], o[512], js[512], pj[512];
    char xdg[300];
    snprintf(bin, sizeof bin, "%s/eintune", build_dir());
    snprintf(o, sizeof o, "%s/rc_out.npy", g_dir);
    snprintf(js, sizeof js, "%s/rc.json", g_dir);
    snprintf(pj, sizeof pj, "%s/rc_peaks.json", g_dir);
    snprintf(xdg, sizeof xdg, "%s/rc_xdg", g_dir);
    assert_int_equal(mkdir(xdg, 0700), 0);
    char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME"))
                                             : NULL;
    setenv("XDG_CACHE_HOME", xdg, 1);
    /* rough peaks, planted a million times lower in the per-device cache
     * (XDG_CACHE_HOME is the test's own: no database holds peaks) */
    char *pk[] = {bin, "peaks", "--quick", "--json", pj, NULL};
    int rc = spawn_wait(pk, "rc_peaks");
    if (rc != 0)
        fail_msg("peaks: exit %d", rc);
    char *text = slurp(pj);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    assert_non_null(doc);
    cJSON *dev = cJSON_GetObjectItem(doc, "device");
    et_device_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.name, sizeof info.name, "%s",
             cJSON_GetObjectItem(dev, "name")->valuestring);
    snprintf(info.driver_version, sizeof info.driver_version, "%s",
             cJSON_GetObjectItem(dev, "driver")->valuestring);
    info.target = et_target_generic(td_backend());
    double measured = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "bandwidth"), "read"),
        "gbs")->valuedouble;
    assert_true(measured > 0);
    scale_peaks(doc, false, 1e-6);
    char *low = cJSON_Print(doc);
    cJSON_Delete(doc);
    char cache[4096];
    et_error err0 = {{0}};
    assert_int_equal(et_peaks_cache_path(&info, cache, sizeof cache, &err0),
                     ET_OK);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/eintune", xdg);
    assert_int_equal(mkdir(dir, 0700), 0);
    FILE *f = fopen(cache, "w");
    assert_non_null(f);
    fputs(low, f);
    fclose(f);
    cJSON_free(low);

    int64_t da[2] = {64, 64}, dbm[2] = {64, 64};
    write_array("ra.npy", 2, da, a, sizeof a);
    write_array("rb.npy", 2, dbm, b, sizeof b);
    char *v[] = {bin, "run", "ij,jk->ik", "-i", a, "-i", b, "-o", o,
                 "--time", "--json", js, NULL};
    rc = spawn_wait(v, "rc");
    if (old_xdg) {
        setenv("XDG_CACHE_HOME", old_xdg, 1);
        free(old_xdg);
    } else {
        unsetenv("XDG_CACHE_HOME");
    }
    char *err = tag_file("rc", "err");
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    if (!strstr(err, "measuring the peaks again"))
        fail_msg("no re-measure announced: %s", err);
    free(err);
    char *json = slurp(js);
    doc = cJSON_Parse(json);
    free(json);
    assert_non_null(doc);
    cJSON *note = cJSON_GetObjectItem(doc, "roofline_note");
    assert_true(cJSON_IsString(note));
    assert_non_null(strstr(note->valuestring, "measured again: now"));
    cJSON_Delete(doc);
    /* the planted figures were replaced by faster, measured ones */
    char *cached = slurp(cache);
    double now = dram_read_of(cached);
    free(cached);
    if (!(now > measured * 1e-3))
        fail_msg("stored DRAM read %g GB/s after the re-measure (rough "
                 "figure %g)", now, measured);
}

/* The files a run writes are checked before it runs: a --plot that is
 * not .svg/.png, an -o or --json in a directory that does not exist are
 * bad input (exit 2) and nothing is written. */
static void test_output_checked_first(void **state)
{
    (void)state;
    char bin[512], a[512], b[512], o[512];
    snprintf(bin, sizeof bin, "%s/eintune", build_dir());
    snprintf(o, sizeof o, "%s/oc_out.npy", g_dir);
    int64_t da[2] = {4, 6}, db[2] = {6, 8};
    write_array("oa.npy", 2, da, a, sizeof a);
    write_array("ob.npy", 2, db, b, sizeof b);

    unlink(o);
    char *v1[] = {bin, "run", "ij,jk->ik", "-i", a, "-i", b, "-o", o,
                  "--time", "--plot", "run.jpg", NULL};
    assert_int_equal(spawn_wait(v1, "oc1"), 2);
    char *err = tag_file("oc1", "err");
    assert_non_null(strstr(err, "--plot run.jpg: must end in .svg or .png"));
    assert_null(strstr(err, "wrote")); /* refused before the run */
    free(err);
    assert_int_not_equal(access(o, F_OK), 0);

    char *v2[] = {bin, "run", "ij,jk->ik", "-i", a, "-i", b, "-o",
                  "/nonexistentdir_et/C.npy", NULL};
    assert_int_equal(spawn_wait(v2, "oc2"), 2);
    err = tag_file("oc2", "err");
    assert_non_null(strstr(err, "-o /nonexistentdir_et/C.npy: directory "
                                "/nonexistentdir_et: No such file"));
    free(err);

    char *v3[] = {bin, "run", "ij,jk->ik", "-i", a, "-i", b, "-o", o,
                  "--json", "/nonexistentdir_et/r.json", NULL};
    assert_int_equal(spawn_wait(v3, "oc3"), 2);
    err = tag_file("oc3", "err");
    assert_non_null(strstr(err, "--json /nonexistentdir_et/r.json"));
    free(err);
    assert_int_not_equal(access(o, F_OK), 0);

    /* -o naming a directory */
    char *v4[] = {bin, "run", "ij,jk->ik", "-i", a, "-i", b, "-o", g_dir,
                  NULL};
    assert_int_equal(spawn_wait(v4, "oc4"), 2);
    err = tag_file("oc4", "err");
    assert_non_null(strstr(err, "is a directory"));
    free(err);
}

/* The error object of --json -: stdout holds {"error": {...}} for a usage
 * error, an input error (with its input and position) and a failed run. */
static cJSON *error_of(const char *tag)
{
    char *out = tag_file(tag, "out");
    cJSON *doc = cJSON_Parse(out);
    if (!doc)
        fail_msg("%s: stdout is not JSON: '%s'", tag, out);
    free(out);
    cJSON *e = cJSON_GetObjectItem(doc, "error");
    assert_non_null(e);
    cJSON *copy = cJSON_Duplicate(e, 1);
    cJSON_Delete(doc);
    return copy;
}

static void test_json_error(void **state)
{
    (void)state;
    char bin[512], a[512], b[512], o[512];
    snprintf(bin, sizeof bin, "%s/eintune", build_dir());
    snprintf(o, sizeof o, "%s/je_out.npy", g_dir);
    int64_t da[2] = {4, 6}, db[2] = {6, 8};
    write_array("ja.npy", 2, da, a, sizeof a);
    write_array("jb.npy", 2, db, b, sizeof b);

    char *v1[] = {bin, "run", "ij,jk->ik", "-i", a, "-i", b, "--json", "-",
                  NULL};
    assert_int_equal(spawn_wait(v1, "je1"), 2);
    cJSON *e = error_of("je1");
    assert_string_equal(cJSON_GetObjectItem(e, "status")->valuestring,
                        "usage");
    assert_int_equal(cJSON_GetObjectItem(e, "exit")->valueint, 2);
    assert_non_null(strstr(cJSON_GetObjectItem(e, "message")->valuestring,
                           "missing output"));
    cJSON_Delete(e);

    char *v2[] = {bin, "run", "ij,jk->iz", "-i", a, "-i", b, "-o", o,
                  "--json", "-", NULL};
    assert_int_equal(spawn_wait(v2, "je2"), 2);
    e = error_of("je2");
    assert_string_equal(cJSON_GetObjectItem(e, "status")->valuestring,
                        "bad input");
    assert_string_equal(cJSON_GetObjectItem(e, "input")->valuestring,
                        "einsum");
    assert_int_equal(cJSON_GetObjectItem(e, "pos")->valueint, 8);
    cJSON_Delete(e);

    setenv("ET_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    char *v3[] = {bin, "run", "ij,jk->ik", "-i", a, "-i", b, "-o", o,
                  "--device", "cuda:0", "--json", "-", NULL};
    assert_int_equal(spawn_wait(v3, "je3"), 1);
    unsetenv("ET_LIBCUDA");
    e = error_of("je3");
    assert_string_equal(cJSON_GetObjectItem(e, "status")->valuestring,
                        "run failed");
    assert_int_equal(cJSON_GetObjectItem(e, "exit")->valueint, 1);
    assert_non_null(strstr(cJSON_GetObjectItem(e, "message")->valuestring,
                           "no CUDA device"));
    cJSON_Delete(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numpy_cases),
        cmocka_unit_test(test_failures),
        cmocka_unit_test(test_batch_run),
        cmocka_unit_test(test_verify_time),
        cmocka_unit_test(test_roof_ceiling),
        cmocka_unit_test(test_output_checked_first),
        cmocka_unit_test(test_json_error),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

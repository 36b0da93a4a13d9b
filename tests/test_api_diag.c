/*
 * test_api_diag.c - what include/eintune.h promises about et_diag:
 *
 * - a malformed space, from a file or from text, is ET_ERR_INPUT with
 *   input ET_INPUT_SPACE, the file (or the text's name), and the 1-based
 *   line and column of the problem; an unreadable file ET_ERR_IO naming it;
 * - "no verified kernel known for this problem on this device" is one
 *   status (ET_ERR_NOT_FOUND) with one message, word for word, from
 *   et_best_lookup, et_best_kernel_find, et_runner_find_best, et_run with
 *   best, et_cl_kernel_load and et_cu_kernel_load (the fake driver: its
 *   own device in the same words), and `eintune best` / `eintune run
 *   --best` print it and exit 1;
 * - an empty einsum is refused (et_problem_init("", "", ...)), and a call
 *   clears the diag on entry: a success after a failure leaves no message.
 *
 * The command runs first (posix_spawn), before this process makes any
 * OpenCL call of its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eintune.h"

#include "measure/cuda/nvrtc.h"
#include "tests/suite_device.h"

#include <CL/cl.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define EINSUM "ij,jk->ik"
#define SHAPE "i=2,j=3,k=4"
#define NOT_FOUND "no verified kernel known for "

static char g_dir[64];
static char g_db[128];  /* a database that knows nothing */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Runs build/eintune with args (NULL-terminated); its stderr into *err. */
static int eintune(char **err, ...)
{
    const char *bd = getenv("ET_BUILD_DIR");
    char bin[512], err_path[160];
    snprintf(bin, sizeof bin, "%s/eintune", bd && *bd ? bd : "build");
    snprintf(err_path, sizeof err_path, "%s/cli.err", g_dir);
    char *argv[32];
    int n = 0;
    argv[n++] = bin;
    va_list ap;
    va_start(ap, err);
    for (char *a; n < 29 && (a = va_arg(ap, char *)) != NULL;)
        argv[n++] = a;
    va_end(ap);
    td_cli_device(argv, &n);
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, err_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int rc = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    assert_int_equal(rc, 0);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    *err = slurp(err_path);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/et_apidiag_XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_db, sizeof g_db, "%s/empty.db", g_dir);
    char path[160];
    snprintf(path, sizeof path, "%s/xdg", g_dir);
    setenv("XDG_CACHE_HOME", path, 1);
    if (!getenv("ET_WORKER")) {
        const char *bd = getenv("ET_BUILD_DIR");
        snprintf(path, sizeof path, "%s/eintune-worker",
                 bd && *bd ? bd : "build");
        setenv("ET_WORKER", path, 1);
    }
    if (!getenv("POCL_CACHE_DIR")) {
        snprintf(path, sizeof path, "%s/pocl", g_dir);
        setenv("POCL_CACHE_DIR", path, 1);
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

/* ---- nothing known: one status, one message -------------------------- */

static char g_msg[1024]; /* et_best_lookup's, which the others must match */

static void assert_not_found_shape(const char *msg)
{
    if (strncmp(msg, NOT_FOUND EINSUM " at ", strlen(NOT_FOUND EINSUM " at ")))
        fail_msg("not the message of nothing known: %s", msg);
    assert_non_null(strstr(msg, "(f32,f32->f32) on "));
    assert_non_null(strstr(msg, g_db));
    const char *tail = ": tune it on this device first";
    size_t n = strlen(msg), t = strlen(tail);
    if (n < t || strcmp(msg + n - t, tail) != 0)
        fail_msg("not the message of nothing known: %s", msg);
}

static void test_not_found_lookup(void **state)
{
    (void)state;
    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init(EINSUM, SHAPE, "f32", &p, &d), ET_OK);
    et_best_info bi;
    int found = 1;
    assert_int_equal(et_best_lookup(p, td_device(), g_db, &bi, &found, &d),
                     ET_ERR_NOT_FOUND);
    assert_int_equal(found, 0);
    assert_int_equal(d.status, ET_ERR_NOT_FOUND);
    assert_int_equal(d.input, ET_INPUT_NONE);
    assert_not_found_shape(d.msg);
    snprintf(g_msg, sizeof g_msg, "%s", d.msg);
    assert_string_equal(et_status_str(ET_ERR_NOT_FOUND), "not found");

    /* found may be NULL: the status says it */
    assert_int_equal(et_best_lookup(p, td_device(), g_db, &bi, NULL, &d),
                     ET_ERR_NOT_FOUND);
    assert_string_equal(d.msg, g_msg);

    et_best_options o;
    memset(&o, 0, sizeof o);
    o.device = td_device();
    o.db = g_db;
    et_best_kernel *bk = (et_best_kernel *)&d;
    assert_int_equal(et_best_kernel_find(p, &o, &bk, &d), ET_ERR_NOT_FOUND);
    assert_null(bk);
    assert_string_equal(d.msg, g_msg);

    /* with exact, the same words and what exact means */
    o.exact = 1;
    assert_int_equal(et_best_kernel_find(p, &o, &bk, &d), ET_ERR_NOT_FOUND);
    assert_non_null(strstr(d.msg, "(exact: no fallback to other sizes)"));
    assert_true(strncmp(d.msg, g_msg, strlen(NOT_FOUND)) == 0);

    et_run_options ro;
    memset(&ro, 0, sizeof ro);
    ro.device = td_device();
    ro.db = g_db;
    ro.best = 1;
    et_runner *r = NULL;
    assert_int_equal(et_runner_open(p, &ro, &r, &d), ET_OK);
    found = 1;
    assert_int_equal(et_runner_find_best(r, NULL, &found, &d),
                     ET_ERR_NOT_FOUND);
    assert_int_equal(found, 0);
    assert_string_equal(d.msg, g_msg);
    et_runner_free(r);

    et_host_array a, b, c;
    assert_int_equal(et_host_array_init(p, 0, &a), ET_OK);
    assert_int_equal(et_host_array_init(p, 1, &b), ET_OK);
    assert_int_equal(et_host_array_init(p, -1, &c), ET_OK);
    const void *in[2] = {a.data, b.data};
    et_run_result res;
    assert_int_equal(et_run(p, &ro, c.data, in, &res, &d), ET_ERR_NOT_FOUND);
    assert_string_equal(d.msg, g_msg);
    et_host_array_free(&a);
    et_host_array_free(&b);
    et_host_array_free(&c);
    et_problem_free(p);
}

/* The command: the same words after "eintune CMD: ", exit 1. */
static void test_not_found_cli(void **state)
{
    (void)state;
    char *err = NULL;
    assert_int_equal(eintune(&err, "best", EINSUM, "--shape", SHAPE,
                             "--dtype", "f32", "--db", g_db, NULL),
                     1);
    char want[1200];
    snprintf(want, sizeof want, "eintune best: %s\n", g_msg);
    assert_string_equal(err, want);
    free(err);

    char a[160], b[160], c[160];
    snprintf(a, sizeof a, "%s/a.npy", g_dir);
    snprintf(b, sizeof b, "%s/b.npy", g_dir);
    snprintf(c, sizeof c, "%s/c.npy", g_dir);
    et_problem *p = NULL;
    et_diag d;
    et_host_array ha, hb;
    assert_int_equal(et_problem_init(EINSUM, SHAPE, "f32", &p, &d), ET_OK);
    assert_int_equal(et_host_array_init(p, 0, &ha), ET_OK);
    assert_int_equal(et_host_array_init(p, 1, &hb), ET_OK);
    assert_int_equal(et_npy_save(a, &ha, &d), ET_OK);
    assert_int_equal(et_npy_save(b, &hb, &d), ET_OK);
    et_host_array_free(&ha);
    et_host_array_free(&hb);
    et_problem_free(p);
    assert_int_equal(eintune(&err, "run", EINSUM, "-i", a, "-i", b, "-o", c,
                             "--best", "--db", g_db, "-q", NULL),
                     1);
    snprintf(want, sizeof want, "eintune run: %s\n", g_msg);
    assert_string_equal(err, want);
    free(err);
}

/* The loaders of kernels in the caller's context. */
static void test_not_found_loaders(void **state)
{
    (void)state;
    et_problem *p = NULL;
    et_diag d;
    assert_int_equal(et_problem_init(EINSUM, SHAPE, "f32", &p, &d), ET_OK);
    et_load_options o;
    memset(&o, 0, sizeof o);
    o.db = g_db;
    et_loaded_kernel *k = (et_loaded_kernel *)&d;
    /* the message names the device: word for word where it is the
     * suite's, else its shape */
    if (td_opencl_only("et_cl_kernel_load in a context of its own")) {
        cl_platform_id plat;
        cl_device_id dev;
        cl_int rc;
        assert_int_equal(clGetPlatformIDs(1, &plat, NULL), CL_SUCCESS);
        assert_int_equal(
            clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL),
            CL_SUCCESS);
        cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
        assert_int_equal(rc, CL_SUCCESS);
        assert_int_equal(et_cl_kernel_load(p, ctx, dev, &o, &k, &d),
                         ET_ERR_NOT_FOUND);
        assert_null(k);
        if (td_is_opencl())
            assert_string_equal(d.msg, g_msg);
        else
            assert_not_found_shape(d.msg);
        clReleaseContext(ctx);
    }

    /* CUDA through the fake driver: its device, the same words */
    et_error err;
    if (et_cuda_have_nvrtc(&err)) {
        const char *bd = getenv("ET_BUILD_DIR");
        char path[1024];
        snprintf(path, sizeof path, "%s/tests/fake_cuda.so",
                 bd && *bd ? bd : "build");
        void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        assert_non_null(lib);
        setenv("ET_LIBCUDA", path, 1);
        int (*init)(unsigned) = (int (*)(unsigned))dlsym(lib, "cuInit");
        int (*retain)(void **, int) =
            (int (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
        int (*set)(void *) = (int (*)(void *))dlsym(lib, "cuCtxSetCurrent");
        int (*release)(int) =
            (int (*)(int))dlsym(lib, "cuDevicePrimaryCtxRelease_v2");
        void *cctx = NULL;
        assert_int_equal(init(0), 0);
        assert_int_equal(retain(&cctx, 0), 0);
        assert_int_equal(set(cctx), 0);
        assert_int_equal(et_cu_kernel_load(p, 0, &o, &k, &d),
                         ET_ERR_NOT_FOUND);
        assert_null(k);
        assert_not_found_shape(d.msg);
        assert_non_null(strstr(d.msg, "Fake CUDA Device 0"));
        assert_non_null(strstr(d.msg, "(cuda, driver "));
        set(NULL);
        release(0);
        unsetenv("ET_LIBCUDA");
        dlclose(lib);
    }
    et_problem_free(p);
}

/* ---- spaces: which input, which file, where ---------------------------- */

static void test_space_diag(void **state)
{
    (void)state;
    char path[160];
    snprintf(path, sizeof path, "%s/bad.yaml", g_dir);
    /* line 3, column 5: a value of the wrong kind */
    write_file(path, "name: bad\n"
                     "einsum: any\n"
                     "max_depth: [1, 2]\n"
                     "actions:\n"
                     "  - {op: UPCAST, axis: any_global, amt: 2}\n");
    et_space *s = (et_space *)path;
    et_diag d;
    assert_int_equal(et_space_load(path, &s, &d), ET_ERR_INPUT);
    assert_null(s);
    assert_int_equal(d.status, ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_SPACE);
    assert_string_equal(d.file, path);
    assert_int_equal(d.line, 3);
    assert_true(d.col >= 1);
    int col = d.col;
    char where[200];
    snprintf(where, sizeof where, "%s:3:%d: ", path, col);
    assert_non_null(strstr(d.msg, where));

    /* the same text: the name given stands for the file */
    char *text = slurp(path);
    assert_int_equal(et_space_load_text(text, strlen(text), "mine.yaml", &s,
                                        &d),
                     ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_SPACE);
    assert_string_equal(d.file, "mine.yaml");
    assert_int_equal(d.line, 3);
    assert_int_equal(d.col, col);
    free(text);

    /* a YAML syntax error: its line and column, 1-based */
    static const char broken[] = "name: x\neinsum: any\nactions: [\n";
    assert_int_equal(et_space_load_text(broken, sizeof broken - 1, NULL, &s,
                                        &d),
                     ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_SPACE);
    assert_string_equal(d.file, "<space>");
    assert_true(d.line >= 3);
    assert_true(d.col >= 1);

    /* a file that is not there: ET_ERR_IO naming it */
    snprintf(path, sizeof path, "%s/missing.yaml", g_dir);
    assert_int_equal(et_space_load(path, &s, &d), ET_ERR_IO);
    assert_int_equal(d.status, ET_ERR_IO);
    assert_string_equal(d.file, path);
    assert_non_null(strstr(d.msg, path));

    /* a good one after all that: nothing left of the errors */
    static const char good[] = "name: good\neinsum: any\nactions:\n"
                               "  - {op: UPCAST, axis: any_global, amt: 2}\n";
    assert_int_equal(et_space_load_text(good, sizeof good - 1, "good", &s,
                                        &d),
                     ET_OK);
    assert_int_equal(d.status, ET_OK);
    assert_int_equal(d.input, ET_INPUT_NONE);
    assert_string_equal(d.msg, "");
    assert_string_equal(d.file, "");
    assert_int_equal(d.line, 0);
    et_space_free(s);
}

/* ---- empty input, and the diag cleared on entry ------------------------- */

static void test_empty_einsum_and_clearing(void **state)
{
    (void)state;
    et_problem *p = (et_problem *)g_dir;
    et_diag d;
    assert_int_equal(et_problem_init("", "", NULL, &p, &d), ET_ERR_INPUT);
    assert_null(p);
    assert_int_equal(d.status, ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_EINSUM);
    assert_int_equal(d.pos, 0);
    assert_non_null(strstr(d.msg, "empty"));
    assert_int_equal(et_problem_init("  ", "i=2", "f32", &p, &d),
                     ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_EINSUM);
    /* an empty shape for an einsum with indices: the missing size */
    assert_int_equal(et_problem_init(EINSUM, "", "f32", &p, &d),
                     ET_ERR_INPUT);
    assert_null(p);
    assert_non_null(strstr(d.msg, "missing size"));
    static const int ndim[1] = {0};
    static const int64_t *const dims[1] = {NULL};
    assert_int_equal(et_problem_init_arrays("", 1, ndim, dims, NULL, &p, &d),
                     ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_EINSUM);

    /* a success after a failure: no trace of it */
    assert_int_equal(et_problem_init(EINSUM, SHAPE, "f32", &p, &d), ET_OK);
    assert_int_equal(d.status, ET_OK);
    assert_int_equal(d.input, ET_INPUT_NONE);
    assert_string_equal(d.msg, "");
    assert_int_equal(d.pos, -1);
    assert_int_equal(et_opts_validate("UPCAST(k,", &d), ET_ERR_INPUT);
    assert_int_equal(et_opts_validate("UPCAST(k,2)", &d), ET_OK);
    assert_string_equal(d.msg, "");
    char *specs = NULL;
    int n = 0;
    assert_int_equal(et_shape_expand("i=2/", &specs, &n, &d), ET_ERR_INPUT);
    assert_int_equal(et_shape_expand("i=2/4", &specs, &n, &d), ET_OK);
    assert_string_equal(d.msg, "");
    assert_int_equal(n, 2);
    et_free(specs);

    /* a NULL argument: ET_ERR_INPUT naming it, as an argument */
    assert_int_equal(et_problem_init(EINSUM, SHAPE, "f32", NULL, &d),
                     ET_ERR_INPUT);
    assert_int_equal(d.input, ET_INPUT_OPTION);
    assert_string_equal(d.msg, "et_problem_init: argument 'out' is NULL");
    et_problem_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* the command before this process's own OpenCL calls */
        cmocka_unit_test(test_not_found_lookup),
        cmocka_unit_test(test_not_found_cli),
        cmocka_unit_test(test_not_found_loaders),
        cmocka_unit_test(test_space_diag),
        cmocka_unit_test(test_empty_einsum_and_clearing),
    };
    return cmocka_run_group_tests_name("api_diag", tests, setup, teardown);
}

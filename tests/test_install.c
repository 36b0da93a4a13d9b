/*
 * test_install.c - `make install` into a temporary PREFIX and what a user
 * of the installation does with it: a program built with nothing but
 * `pkg-config --cflags --libs eintune` (tests/consumer/consumer_cl.c)
 * tunes, cancels, looks up and runs the best kernel in its own OpenCL
 * context, with the worker found from the library's location (ET_WORKER
 * unset); the same built against the static library, which finds the
 * worker outside PREFIX through the installation directory `make install`
 * compiled into it, then through PATH; `pkg-config --cflags eintune` is
 * the header's directory alone; the CUDA loader in a
 * program's own context through the fake driver
 * (tests/consumer/consumer_cu.c); `man -l` on the installed page; and
 * `make uninstall`, which must leave no file behind.
 *
 * The installation uses what `make` already built (make test builds it
 * first). Skipped under sanitizers: the installed library would be the
 * sanitized one, which a plain program cannot load.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eintune.h"

#include "db/db.h"
#include "einsum/einsum.h"
#include "measure/user_kernel.h"
#include "tests/suite_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define ET_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ET_SANITIZED 1
#endif
#endif

typedef struct fixture {
    char root[1024];   /* the repository (the current directory) */
    char build[1024];  /* BUILD as make takes it */
    char prefix[64];   /* the temporary PREFIX */
    char work[64];     /* consumers and databases, outside PREFIX */
    char pc[256];      /* PKG_CONFIG_PATH=... */
} fixture;

/* Runs `sh -c cmd` with its output captured; returns the exit status and
 * the output (malloc'ed) in *out (may be NULL). Prints both on failure. */
static int run(char **out, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[8300];
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    FILE *f = popen(full, "r");
    if (!f)
        return -1;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n < 1024) {
            char *grown = realloc(buf, cap * 2);
            if (!grown)
                break;
            buf = grown;
            cap *= 2;
        }
    }
    if (buf)
        buf[n] = '\0';
    int st = pclose(f);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    if (rc != 0)
        print_message("$ %s\n%s[exit %d]\n", cmd, buf ? buf : "", rc);
    if (out)
        *out = buf;
    else
        free(buf);
    return rc;
}

static int group_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || !getcwd(f->root, sizeof f->root))
        return -1;
    /* make is given BUILD as run.sh got it: relative to the repository */
    const char *bd = getenv("ET_BUILD_DIR");
    size_t rl = strlen(f->root);
    if (bd && !strncmp(bd, f->root, rl) && bd[rl] == '/')
        snprintf(f->build, sizeof f->build, "%s", bd + rl + 1);
    else
        snprintf(f->build, sizeof f->build, "%s", bd ? bd : "build");
    snprintf(f->prefix, sizeof f->prefix, "/tmp/et_inst_XXXXXX");
    snprintf(f->work, sizeof f->work, "/tmp/et_instw_XXXXXX");
    if (!mkdtemp(f->prefix) || !mkdtemp(f->work))
        return -1;
    snprintf(f->pc, sizeof f->pc, "PKG_CONFIG_PATH=%s/lib/pkgconfig",
             f->prefix);
    *state = f;
    /* the parent make's flags and jobserver are not this make's */
    if (run(NULL, "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s "
                  "--no-print-directory BUILD='%s' install PREFIX='%s'",
            f->build, f->prefix) != 0)
        return -1;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;
    run(NULL, "rm -rf '%s' '%s'", f->prefix, f->work);
    free(f);
    return 0;
}

/* libeintune.so.N, N the header's major version */
#define STR_(x) #x
#define STR(x) STR_(x)
#define SONAME "libeintune.so." STR(ET_VERSION_MAJOR)

static void test_installed_files(void **state)
{
    fixture *f = *state;
    static const char *const files[] = {
        "bin/eintune", "include/eintune.h", ("lib/libeintune.so." ET_VERSION),
        "lib/" SONAME, "lib/libeintune.so", "lib/libeintune.a",
        "lib/pkgconfig/eintune.pc", "libexec/eintune/eintune-worker",
        "share/man/man1/eintune.1",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[1200];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", f->prefix, files[i]);
        if (stat(path, &sb) != 0)
            fail_msg("not installed: %s", path);
    }
    char *out = NULL;
    assert_int_equal(run(&out, "readelf -d '%s/lib/libeintune.so." ET_VERSION
                         "'", f->prefix),
                     0);
    assert_non_null(strstr(out, "Library soname: [" SONAME "]"));
    free(out);
    assert_int_equal(run(&out, "%s pkg-config --modversion eintune", f->pc),
                     0);
    assert_non_null(strstr(out, ET_VERSION));
    free(out);
    /* --cflags is the header's directory and nothing else: eintune.h
     * needs no package's headers (cairo, glib, MPI) */
    assert_int_equal(run(&out, "%s pkg-config --cflags eintune", f->pc), 0);
    char want[256];
    snprintf(want, sizeof want, "-I%s/include", f->prefix);
    out[strcspn(out, "\n")] = '\0';
    for (size_t n = strlen(out); n > 0 && out[n - 1] == ' '; n--)
        out[n - 1] = '\0';
    if (strcmp(out, want) != 0)
        fail_msg("pkg-config --cflags eintune: '%s', wanted '%s'", out,
                 want);
    free(out);
    /* ... while --static --libs still has what the archive needs */
    assert_int_equal(run(&out, "%s pkg-config --static --libs eintune",
                         f->pc),
                     0);
    static const char *const libs[] = {"-leintune", "-lyaml", "-lgsl",
                                       "-lOpenCL", "-lsqlite3", "-lcjson",
                                       "-lcairo", "-ldl", "-lm"};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
        if (!strstr(out, libs[i]))
            fail_msg("pkg-config --static --libs eintune lacks %s: %s",
                     libs[i], out);
    free(out);
    /* the installed CLI finds its worker too */
    assert_int_equal(run(&out, "env -u ET_WORKER '%s/bin/eintune' codegen "
                               "'ij->i' --shape i=4,j=4",
                         f->prefix),
                     0);
    free(out);
}

static void test_consumer_opencl(void **state)
{
    fixture *f = *state;
    char *out = NULL;
    assert_int_equal(run(NULL, "cc -std=c11 -Wall -Wextra -Werror "
                               "tests/consumer/consumer_cl.c -o "
                               "'%s/consumer_cl' $(%s pkg-config --cflags "
                               "--libs eintune OpenCL)",
                         f->work, f->pc),
                     0);
    /* it runs on the installed library, and nothing names the worker */
    assert_int_equal(run(&out, "LD_LIBRARY_PATH='%s/lib' ldd "
                               "'%s/consumer_cl'",
                         f->prefix, f->work),
                     0);
    char want[256];
    snprintf(want, sizeof want, "%s/lib/" SONAME, f->prefix);
    if (!strstr(out, want))
        fail_msg("consumer_cl does not use %s:\n%s", want, out);
    free(out);
    int rc = run(&out, "env -u ET_WORKER LD_LIBRARY_PATH='%s/lib' "
                       "'%s/consumer_cl' '%s/cl.db'",
                 f->prefix, f->work, f->work);
    print_message("%s", out ? out : "");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "consumer_cl: ok"));
    free(out);
    /* and the worker it ran is the installed one: without it, none */
    assert_int_equal(run(NULL, "mv '%s/libexec/eintune/eintune-worker' "
                               "'%s/worker.away'",
                         f->prefix, f->work),
                     0);
    /* (`!`: the failure is the expected outcome, so run stays quiet) */
    rc = run(&out, "! env -u ET_WORKER LD_LIBRARY_PATH='%s/lib' "
                   "'%s/consumer_cl' '%s/cl2.db'",
             f->prefix, f->work, f->work);
    assert_int_equal(run(NULL, "mv '%s/worker.away' "
                               "'%s/libexec/eintune/eintune-worker'",
                         f->work, f->prefix),
                     0);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "device worker not found"));
    free(out);
}

static void test_consumer_static(void **state)
{
    fixture *f = *state;
    char *out = NULL;
    /* Libs.private and Requires.private are enough to link the archive */
    assert_int_equal(run(NULL, "cc -std=c11 tests/consumer/consumer_cl.c -o "
                               "'%s/consumer_static' $(%s pkg-config "
                               "--cflags eintune OpenCL) $(%s pkg-config "
                               "--static --libs eintune OpenCL | sed "
                               "'s|-leintune|%s/lib/libeintune.a|')",
                         f->work, f->pc, f->pc, f->prefix),
                     0);
    assert_int_equal(run(&out, "ldd '%s/consumer_static'", f->work), 0);
    assert_null(strstr(out, "libeintune"));
    free(out);
    assert_int_equal(run(&out, "'%s/consumer_static' --codegen", f->work),
                     0);
    assert_non_null(strstr(out, "codegen: kernel"));
    free(out);
    /* outside PREFIX and with ET_WORKER unset, it finds the installed
     * worker through the directory `make install` compiled into the
     * archive it installed */
    int rc = run(&out, "env -u ET_WORKER '%s/consumer_static' "
                       "'%s/static.db'",
                 f->work, f->work);
    print_message("%s", out ? out : "");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "consumer_cl: ok"));
    free(out);
    /* without it there, through PATH: an eintune-worker on PATH ... */
    assert_int_equal(run(NULL, "mkdir -p '%s/path/bin' '%s/inst/bin' "
                               "'%s/inst/libexec/eintune' && mv "
                               "'%s/libexec/eintune/eintune-worker' "
                               "'%s/path/bin/'",
                         f->work, f->work, f->work, f->prefix, f->work),
                     0);
    rc = run(&out, "env -u ET_WORKER PATH='%s/path/bin:'\"$PATH\" "
                   "'%s/consumer_static' '%s/static2.db'",
             f->work, f->work, f->work);
    print_message("%s", out ? out : "");
    int found_on_path = rc == 0 && out && strstr(out, "consumer_cl: ok");
    free(out);
    /* ... or an installation whose bin/ is on PATH */
    assert_int_equal(run(NULL, "mv '%s/path/bin/eintune-worker' "
                               "'%s/inst/libexec/eintune/'",
                         f->work, f->work),
                     0);
    rc = run(&out, "env -u ET_WORKER PATH='%s/inst/bin:'\"$PATH\" "
                   "'%s/consumer_static' '%s/static3.db'",
             f->work, f->work, f->work);
    print_message("%s", out ? out : "");
    int found_by_prefix = rc == 0 && out && strstr(out, "consumer_cl: ok");
    free(out);
    /* nowhere: the error says where it looked */
    rc = run(&out, "! env -u ET_WORKER '%s/consumer_static' "
                   "'%s/static4.db'",
             f->work, f->work);
    assert_int_equal(run(NULL, "mv '%s/inst/libexec/eintune/eintune-worker' "
                               "'%s/libexec/eintune/'",
                         f->work, f->prefix),
                     0);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "device worker not found"));
    assert_non_null(strstr(out, "PATH"));
    free(out);
    assert_true(found_on_path);
    assert_true(found_by_prefix);
}

/* Records a verified SPLIT trial of the consumer's problem for the fake
 * device, as a tuning run on it would (the fake computes nothing, so a
 * real run cannot). */
static void record_fake_trial(const char *db_path)
{
    et_error err = {{0}};
    et_diag d;
    et_device_info info;
    et_cu_user_kernel *u = NULL;
    assert_int_equal(et_cu_user_open(0, &u, &info, &err), ET_OK);
    et_cu_user_free(u);
    et_db *db = NULL;
    et_einsum *e = calloc(1, sizeof *e);
    et_db_trial *t = calloc(1, sizeof *t);
    assert_non_null(e);
    assert_non_null(t);
    int64_t dev_id = 0, e_id = 0;
    assert_int_equal(et_db_open(db_path, &db, &err), ET_OK);
    assert_int_equal(et_db_device_id(db, &info, &dev_id, &err), ET_OK);
    assert_int_equal(et_einsum_from_strings("xik,kj->xij",
                                            "x=64,i=16,k=16,j=16", "f32", e,
                                            &d),
                     ET_OK);
    assert_int_equal(et_db_einsum_id(db, e, &e_id, &err), ET_OK);
    assert_int_equal(et_db_trial_init(t, e_id, e, dev_id, "SPLIT(k,4)",
                                      NULL, NULL, &err),
                     ET_OK);
    t->outcome = ET_OUTCOME_OK;
    t->median_s = t->low_s = t->high_s = 1e-5;
    t->runs = 5;
    t->verify_trials = 3;
    assert_int_equal(et_db_trial_record(db, t, NULL, &err), ET_OK);
    et_db_close(db);
    free(t);
    free(e);
}

static void test_consumer_cuda(void **state)
{
    fixture *f = *state;
    char fake[2200], db[128], *out = NULL;
    snprintf(fake, sizeof fake, "%s/%s/tests/fake_cuda.so", f->root,
             f->build);
    if (access(fake, R_OK) != 0)
        fail_msg("%s is missing (make builds it with the tests)", fake);
    snprintf(db, sizeof db, "%s/cu.db", f->work);
    setenv("ET_LIBCUDA", fake, 1);
    record_fake_trial(db);
    unsetenv("ET_LIBCUDA");
    assert_int_equal(run(NULL, "cc -std=c11 -Wall -Wextra -Werror "
                               "-Wno-pedantic tests/consumer/consumer_cu.c "
                               "-I tests/so -o '%s/consumer_cu' $(%s "
                               "pkg-config --cflags --libs eintune) -ldl",
                         f->work, f->pc),
                     0);
    int rc = run(&out, "env -u ET_WORKER ET_LIBCUDA='%s' "
                       "LD_LIBRARY_PATH='%s/lib' '%s/consumer_cu' '%s'",
                 fake, f->prefix, f->work, db);
    print_message("%s", out ? out : "");
    if (rc != 0 && out && strstr(out, "NVRTC")) {
        free(out);
        skip(); /* no libnvrtc: nothing can be compiled for CUDA here */
    }
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "consumer_cu: ok"));
    free(out);
}

static void test_man_page(void **state)
{
    fixture *f = *state;
    char *out = NULL;
    assert_int_equal(run(&out, "MANPAGER=cat MANWIDTH=80 man -l "
                               "'%s/share/man/man1/eintune.1' | cat",
                         f->prefix),
                     0);
    static const char *const want[] = {
        "EINTUNE(1)", "devices", "check", "codegen", "tune", "peaks",
        "export", "--budget", "--shape", "--device", "--time-limit",
        "--older-than", "--peaks-file", "EXIT STATUS", "ENVIRONMENT",
        "ET_WORKER", "FILES", "tuning.db",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(out, want[i]))
            fail_msg("the man page lacks '%s'", want[i]);
    free(out);
}

static void test_uninstall(void **state)
{
    fixture *f = *state;
    char *out = NULL;
    assert_int_equal(run(NULL, "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make "
                               "-s --no-print-directory BUILD='%s' "
                               "uninstall PREFIX='%s'",
                         f->build, f->prefix),
                     0);
    assert_int_equal(run(&out, "find '%s' ! -type d", f->prefix), 0);
    if (out[0])
        fail_msg("left behind by make uninstall:\n%s", out);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_installed_files),
        cmocka_unit_test(test_consumer_opencl),
        cmocka_unit_test(test_consumer_static),
        cmocka_unit_test(test_consumer_cuda),
        cmocka_unit_test(test_man_page),
        cmocka_unit_test(test_uninstall),
    };
#ifdef ET_SANITIZED
    printf("test_install: skipped under sanitizers\n");
    return 0;
#endif
    /* its consumer tunes and runs in an OpenCL context of its own */
    if (!td_opencl_only("the installed library's consumer in its own "
                        "OpenCL context"))
        return 0;
    return cmocka_run_group_tests_name("install", tests, group_setup,
                                       group_teardown);
}

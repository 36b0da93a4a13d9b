/*
 * test_base.c - base/: et_errorf and its NULL-safety, et_sbuf's clamped
 * fixed appends and growing appends, the cache directory's XDG rules and
 * its mode, the monotonic clock.
 */
#include "base/cachedir.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/sbuf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static void test_errorf(void **state)
{
    (void)state;
    et_error err = {{0}};
    assert_int_equal(et_errorf(&err, ET_ERR_IO, "cannot read %s: %d", "x", 7),
                     ET_ERR_IO);
    assert_string_equal(err.msg, "cannot read x: 7");
    /* NULL-safe: the status still comes back */
    assert_int_equal(et_errorf(NULL, ET_ERR_DEVICE, "dropped %d", 1),
                     ET_ERR_DEVICE);
    et_error_append(NULL, "x");
    et_error_prefix(NULL, "x");
    et_error_append(&err, " (%s)", "more");
    assert_string_equal(err.msg, "cannot read x: 7 (more)");
    et_error_prefix(&err, "peaks");
    assert_string_equal(err.msg, "peaks: cannot read x: 7 (more)");
    /* a long message is cut at the end of msg, NUL-terminated */
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    et_errorf(&err, ET_ERR_INPUT, "%s", big);
    assert_int_equal(strlen(err.msg), sizeof err.msg - 1);
    et_error_append(&err, "tail");
    assert_int_equal(strlen(err.msg), sizeof err.msg - 1);
    et_error_prefix(&err, "p");
    assert_int_equal(strlen(err.msg), sizeof err.msg - 1);
    assert_memory_equal(err.msg, "p: aaa", 6);
}

static void test_sbuf_fixed(void **state)
{
    (void)state;
    /* a guard after the array shows nothing is written past it */
    char mem[16 + 8];
    memset(mem, '#', sizeof mem);
    et_sbuf b;
    et_sbuf_fixed(&b, mem, 16);
    assert_string_equal(mem, "");
    et_sbuf_printf(&b, "%s-%d", "ab", 12);
    assert_string_equal(mem, "ab-12");
    assert_int_equal(b.len, 5);
    assert_false(b.truncated);
    for (int i = 0; i < 10; i++)
        et_sbuf_printf(&b, " + term%d", i);
    assert_true(b.truncated);
    assert_int_equal(b.len, 15);
    assert_int_equal(strlen(mem), 15);
    assert_string_equal(mem, "ab-12 + term0 +");
    for (size_t i = 16; i < sizeof mem; i++)
        assert_int_equal(mem[i], '#');
    /* appending nothing to a full buffer is not a truncation */
    et_sbuf_fixed(&b, mem, 4);
    et_sbuf_puts(&b, "abc");
    assert_false(b.truncated);
    et_sbuf_puts(&b, "");
    assert_false(b.truncated);
    et_sbuf_puts(&b, "d");
    assert_true(b.truncated);
    assert_string_equal(mem, "abc");
    /* fixed buffers are never handed out */
    assert_null(et_sbuf_take(&b));
    et_sbuf_free(&b);
    assert_string_equal(mem, "");
    assert_int_equal(b.len, 0);
}

static void test_sbuf_growing(void **state)
{
    (void)state;
    et_sbuf b = {0};
    assert_null(et_sbuf_take(&b)); /* nothing appended */
    et_sbuf_init(&b);
    size_t want = 0;
    for (int i = 0; i < 5000; i++) {
        et_sbuf_printf(&b, "line %d\n", i);
        want += (size_t)snprintf(NULL, 0, "line %d\n", i);
    }
    assert_false(b.truncated);
    assert_int_equal(b.len, want);
    char *s = et_sbuf_take(&b);
    assert_non_null(s);
    assert_int_equal(strlen(s), want);
    assert_memory_equal(s, "line 0\nline 1\n", 14);
    assert_non_null(strstr(s, "line 4999\n"));
    free(s);
    assert_null(b.p);
    assert_int_equal(b.len, 0);
    et_sbuf_puts(&b, "again");
    et_sbuf_free(&b);
    assert_null(b.p);
}

static void test_cache_dir(void **state)
{
    (void)state;
    char tmp[] = "/tmp/et_base_XXXXXX";
    assert_non_null(mkdtemp(tmp));
    char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME"))
                                             : NULL;
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    char xdg[256], want[300], got[512];
    et_error err = {{0}};

    snprintf(xdg, sizeof xdg, "%s/a/b", tmp);
    setenv("XDG_CACHE_HOME", xdg, 1);
    snprintf(want, sizeof want, "%s/a/b/eintune", tmp);
    assert_int_equal(et_cache_dir_path(got, sizeof got, &err), ET_OK);
    assert_string_equal(got, want);
    struct stat sb;
    assert_int_not_equal(stat(want, &sb), 0); /* naming creates nothing */
    assert_int_equal(et_cache_dir_make(got, sizeof got, &err), ET_OK);
    assert_int_equal(stat(want, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(sb.st_mode & 0777, 0700);
    /* again: already there is fine */
    assert_int_equal(et_cache_dir_make(got, sizeof got, &err), ET_OK);
    /* too small a buffer */
    assert_int_equal(et_cache_dir_path(got, 8, &err), ET_ERR_IO);
    assert_non_null(strstr(err.msg, "too long"));

    /* a relative XDG_CACHE_HOME is ignored (XDG), HOME then */
    setenv("XDG_CACHE_HOME", "relative/dir", 1);
    setenv("HOME", "/home/someone", 1);
    assert_int_equal(et_cache_dir_path(got, sizeof got, &err), ET_OK);
    assert_string_equal(got, "/home/someone/.cache/eintune");
    unsetenv("XDG_CACHE_HOME");
    assert_int_equal(et_cache_dir_path(got, sizeof got, &err), ET_OK);
    assert_string_equal(got, "/home/someone/.cache/eintune");
    /* neither */
    unsetenv("HOME");
    assert_int_equal(et_cache_dir_path(got, sizeof got, &err), ET_ERR_IO);
    assert_non_null(strstr(err.msg, "neither XDG_CACHE_HOME nor HOME"));
    assert_int_equal(et_cache_dir_path(got, sizeof got, NULL), ET_ERR_IO);

    /* a component that cannot be made is named */
    char file[300];
    snprintf(file, sizeof file, "%s/plain", tmp);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    char under[320];
    snprintf(under, sizeof under, "%s/sub", file);
    assert_int_equal(et_mkdirs(under, &err), ET_ERR_IO);
    assert_non_null(strstr(err.msg, "cannot create"));

    if (old_xdg)
        setenv("XDG_CACHE_HOME", old_xdg, 1);
    if (old_home)
        setenv("HOME", old_home, 1);
    free(old_xdg);
    free(old_home);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    assert_int_equal(system(cmd), 0);
}

static void test_clock(void **state)
{
    (void)state;
    double t0 = et_now_s();
    assert_true(t0 > 0);
    usleep(20000);
    double t1 = et_now_s();
    assert_true(t1 - t0 >= 0.015);
    assert_true(t1 - t0 < 5.0);
    for (int i = 0; i < 1000; i++) {
        double t = et_now_s();
        assert_true(t >= t1);
        t1 = t;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errorf),
        cmocka_unit_test(test_sbuf_fixed),
        cmocka_unit_test(test_sbuf_growing),
        cmocka_unit_test(test_cache_dir),
        cmocka_unit_test(test_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

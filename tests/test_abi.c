/*
 * test_abi.c - the options structs as include/eintune.h's "Growing the
 * ABI" says: the library reads the caller's `size` bytes of them (0: the
 * 1.0 layout), fields past a smaller size read as zero (their defaults),
 * and a larger struct (a caller built against a newer header) passes
 * while the fields this library does not know are zero and is refused
 * once one is set. The copy itself (api_options_copy) and a public call
 * through it (et_database_list with an et_database_filter), on a
 * database in a temporary directory; no device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "api/api_impl.h"
#include "eintune.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A struct of three fields as a later header would have it, and the
 * first two as an older one. */
typedef struct later {
    size_t size;
    int64_t a;
    int64_t b;
} later;
typedef struct older {
    size_t size;
    int64_t a;
} older;

static void test_copy_older_caller(void **state)
{
    (void)state;
    /* an older caller's struct followed by memory it does not own: the
     * copy must stop at its size and leave b zero */
    struct {
        older o;
        int64_t junk[4];
    } mem;
    memset(&mem, 0x5a, sizeof mem);
    mem.o.size = sizeof(older);
    mem.o.a = 7;
    later l;
    et_diag d;
    assert_int_equal(api_options_copy(&l, sizeof l, &mem.o, mem.o.size,
                                      sizeof(older), "fn", &d),
                     ET_OK);
    assert_int_equal(l.a, 7);
    assert_int_equal(l.b, 0);
}

static void test_copy_size_zero_is_base(void **state)
{
    (void)state;
    /* size 0: the 1.0 layout (here the older struct) */
    struct {
        older o;
        int64_t junk[4];
    } mem;
    memset(&mem, 0x5a, sizeof mem);
    mem.o.size = 0;
    mem.o.a = 3;
    later l;
    assert_int_equal(api_options_copy(&l, sizeof l, &mem.o, 0,
                                      sizeof(older), "fn", NULL),
                     ET_OK);
    assert_int_equal(l.a, 3);
    assert_int_equal(l.b, 0);
    /* NULL: every field its default */
    memset(&l, 0x5a, sizeof l);
    assert_int_equal(api_options_copy(&l, sizeof l, NULL, 0, sizeof(older),
                                      "fn", NULL),
                     ET_OK);
    assert_int_equal(l.a, 0);
    assert_int_equal(l.b, 0);
    assert_true(l.size == 0);
}

static void test_copy_newer_caller(void **state)
{
    (void)state;
    /* this library knows `older`; the caller's header had `later` */
    later l = {sizeof(later), 5, 0};
    older o;
    et_diag d;
    assert_int_equal(api_options_copy(&o, sizeof o, &l, l.size,
                                      sizeof(older), "et_fn", &d),
                     ET_OK);
    assert_int_equal(o.a, 5);
    l.b = 1;
    assert_int_equal(api_options_copy(&o, sizeof o, &l, l.size,
                                      sizeof(older), "et_fn", &d),
                     ET_ERR_UNSUPPORTED);
    assert_int_equal(d.status, ET_ERR_UNSUPPORTED);
    assert_int_equal(d.input, ET_INPUT_OPTION);
    assert_non_null(strstr(d.msg, "et_fn"));
    assert_non_null(strstr(d.msg, "does not know"));
}

static int count_row(void *arg, const et_database_row *row)
{
    (void)row;
    (*(int *)arg)++;
    return 0;
}

/* The same through a public function: a filter from a newer header. */
static void test_public_call(void **state)
{
    (void)state;
    char dir[] = "/tmp/et_abi_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/t.db", dir);
    et_database *db = NULL;
    et_diag d;
    assert_int_equal(et_database_open(path, &db, &d), ET_OK);
    struct {
        et_database_filter f;
        uint64_t newer_field;
    } big;
    memset(&big, 0, sizeof big);
    big.f.size = sizeof big;
    int rows = 0;
    assert_int_equal(et_database_list(db, &big.f, count_row, &rows, &d),
                     ET_OK);
    assert_int_equal(rows, 0);
    big.newer_field = 1;
    assert_int_equal(et_database_list(db, &big.f, count_row, &rows, &d),
                     ET_ERR_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "et_database_list"));
    /* ET_SIZED, and {0}, are the two ways a program of this header
     * writes options */
    et_database_filter sized = {ET_SIZED(et_database_filter), .limit = 1};
    assert_true(sized.size == sizeof(et_database_filter));
    assert_int_equal(et_database_list(db, &sized, count_row, &rows, &d),
                     ET_OK);
    et_database_filter zero = {0};
    assert_int_equal(et_database_list(db, &zero, count_row, &rows, &d),
                     ET_OK);
    et_database_close(db);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* A struct that grew since 1.0 (et_dispatch_options gained `batch` in
 * 1.1): a 1.0 caller's size 0 stands for the 1.0 layout, so the library
 * copies no byte past it. The caller's struct here is exactly that long
 * on the heap: the copy of a byte more is an over-read AddressSanitizer
 * reports (make asan runs this test). */
static void test_grown_struct_size_zero(void **state)
{
    (void)state;
    size_t v10 = offsetof(et_dispatch_options, batch);
    assert_true(v10 < sizeof(et_dispatch_options));
    unsigned char *mem = malloc(v10);
    assert_non_null(mem);
    memset(mem, 0, v10);
    const char *dir = ""; /* refused after the copy, before any device */
    memcpy(mem + offsetof(et_dispatch_options, dir), &dir, sizeof dir);
    et_diag d;
    assert_int_equal(et_dispatch_export("ij->i", "i=4,j=4", NULL,
                                        (const et_dispatch_options *)
                                            (void *)mem,
                                        NULL, &d), ET_ERR_INPUT);
    assert_null(strstr(d.msg, "does not know"));
    free(mem);
    /* the copy itself: size 0 takes the 1.0 size given, not sizeof */
    et_dispatch_options full;
    memset(&full, 0xff, sizeof full);
    et_dispatch_options given;
    memset(&given, 0, sizeof given);
    given.size = 0;
    assert_int_equal(api_options_copy(&full, sizeof full, &given, 0, v10,
                                      "f", &d), ET_OK);
    assert_null(full.batch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_older_caller),
        cmocka_unit_test(test_copy_size_zero_is_base),
        cmocka_unit_test(test_copy_newer_caller),
        cmocka_unit_test(test_public_call),
        cmocka_unit_test(test_grown_struct_size_zero),
    };
    return cmocka_run_group_tests_name("abi", tests, NULL, NULL);
}

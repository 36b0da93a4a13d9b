/*
 * test_cli_check.c - `eintune check` run as a subprocess: output, JSON
 * keys, exit status, diagnostics with a caret. The binary is found in
 * $ET_BUILD_DIR (default "build"), relative to the repository root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/suite_device.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct run_result {
    int status;   /* exit status, -1 if it did not exit normally */
    char *out;    /* stdout, NUL-terminated */
    char *err;    /* stderr */
} run_result;

static char g_tmp[256];

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

/* Runs build/eintune with args (NULL-terminated), output to temp files. */
static run_result run(const char *arg0, ...)
{
    const char *dir = getenv("ET_BUILD_DIR");
    char bin[512], out_path[300], err_path[300];
    snprintf(bin, sizeof(bin), "%s/eintune", dir && *dir ? dir : "build");
    snprintf(out_path, sizeof(out_path), "%s/out", g_tmp);
    snprintf(err_path, sizeof(err_path), "%s/err", g_tmp);

    char *argv[32];
    int argc = 0;
    argv[argc++] = bin;
    va_list ap;
    va_start(ap, arg0);
    for (const char *a = arg0; a && argc < 29; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    td_cli_device(argv, &argc);
    argv[argc] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int rc = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        fail_msg("cannot start %s: %s (build it first)", bin, strerror(rc));
    int ws;
    waitpid(pid, &ws, 0);
    run_result r;
    r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    return r;
}

static void run_free(run_result *r)
{
    free(r->out);
    free(r->err);
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_tmp, sizeof(g_tmp), "/tmp/et_test_cli_check.XXXXXX");
    return mkdtemp(g_tmp) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char path[300];
    const char *names[] = {"out", "err", "check.json"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", g_tmp, names[i]);
        unlink(path);
    }
    rmdir(g_tmp);
    return 0;
}

/* Checks the JSON document of the batched-matmul acceptance case. */
static void check_matmul_json(const char *text)
{
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithOpts(text, &end, 1);
    assert_non_null(doc);
    cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "einsum");
    assert_true(cJSON_IsString(e));
    assert_string_equal(e->valuestring, "xik,kj->xij");

    cJSON *idx = cJSON_GetObjectItemCaseSensitive(doc, "indices");
    assert_true(cJSON_IsArray(idx));
    assert_int_equal(cJSON_GetArraySize(idx), 4);
    static const char *const names[] = {"x", "i", "j", "k"};
    static const int sizes[] = {4096, 35, 35, 35};
    static const char *const roles[] = {"free", "free", "free", "summed"};
    for (int i = 0; i < 4; i++) {
        cJSON *x = cJSON_GetArrayItem(idx, i);
        assert_string_equal(
            cJSON_GetObjectItemCaseSensitive(x, "name")->valuestring,
            names[i]);
        assert_int_equal(
            cJSON_GetObjectItemCaseSensitive(x, "size")->valuedouble,
            sizes[i]);
        assert_string_equal(
            cJSON_GetObjectItemCaseSensitive(x, "role")->valuestring,
            roles[i]);
    }
    cJSON *ops = cJSON_GetObjectItemCaseSensitive(doc, "ops");
    assert_true(cJSON_IsObject(ops));
    assert_int_equal(cJSON_GetArraySize(ops), 1);
    cJSON *f64 = cJSON_GetObjectItemCaseSensitive(ops, "f64");
    assert_true(cJSON_IsNumber(f64));
    assert_true(f64->valuedouble == 351232000.0);
    /* two operands: the loop nest's count is the cheapest */
    cJSON *direct = cJSON_GetObjectItemCaseSensitive(doc, "ops_direct");
    assert_true(cJSON_IsObject(direct));
    assert_true(cJSON_GetObjectItemCaseSensitive(direct, "f64")->valuedouble ==
                351232000.0);
    cJSON *bytes = cJSON_GetObjectItemCaseSensitive(doc, "bytes");
    assert_true(cJSON_IsNumber(bytes));
    assert_true(bytes->valuedouble == 80291400.0);
    cJSON *in = cJSON_GetObjectItemCaseSensitive(doc, "intensity");
    assert_true(cJSON_IsNumber(in));
    double want = 351232000.0 / 80291400.0;
    assert_true(in->valuedouble > want * (1 - 1e-12) &&
                in->valuedouble < want * (1 + 1e-12));
    cJSON_Delete(doc);
}

static void test_acceptance_json_stdout(void **state)
{
    (void)state;
    run_result r = run("check", "xik,kj->xij", "--shape",
                       "x=4096,i=35,k=35,j=35", "--dtype", "f64", "--json",
                       "-", NULL);
    assert_int_equal(r.status, 0);
    check_matmul_json(r.out); /* stdout holds the JSON alone */
    assert_non_null(strstr(r.err, "summed")); /* the table went to stderr */
    run_free(&r);
}

static void test_json_file_and_table(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof(path), "%s/check.json", g_tmp);
    run_result r = run("check", "--shape", "x=4096,i=35,k=35,j=35",
                       "xik,kj->xij", "--json", path, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "xik,kj->xij"));
    assert_non_null(strstr(r.out, "351232000"));
    assert_non_null(strstr(r.out, "80291400"));
    char *text = slurp(path);
    check_matmul_json(text);
    free(text);
    run_free(&r);
}

/* A product of three operands: ops is the cheapest contraction order's
 * count (x*e*r*j + 2*|I| = 144 + 1440), ops_direct the loop nest's
 * (3*|I| = 2160), and the table shows both. */
static void test_ops_of_cheapest_path(void **state)
{
    (void)state;
    run_result r = run("check", "xre,rij,xej->xei", "--shape",
                       "x=2,r=3,e=4,i=5,j=6", "--json", "-", NULL);
    assert_int_equal(r.status, 0);
    cJSON *doc = cJSON_Parse(r.out);
    assert_non_null(doc);
    cJSON *ops = cJSON_GetObjectItemCaseSensitive(doc, "ops");
    cJSON *direct = cJSON_GetObjectItemCaseSensitive(doc, "ops_direct");
    assert_true(cJSON_GetObjectItemCaseSensitive(ops, "f64")->valuedouble ==
                1584.0);
    assert_true(cJSON_GetObjectItemCaseSensitive(direct, "f64")->valuedouble ==
                2160.0);
    cJSON_Delete(doc);
    assert_non_null(strstr(r.err, "ops direct"));
    assert_non_null(strstr(r.err, "2160"));
    assert_non_null(strstr(r.err, "1584"));
    run_free(&r);
}

/* The caret line must put '^' under byte `pos` of the echoed text. */
static void assert_caret(const char *err, const char *text, int pos)
{
    char echo[600], caret[600];
    snprintf(echo, sizeof(echo), "\n  %s\n", text);
    const char *p = strstr(err, echo);
    if (!p)
        fail_msg("no echo of '%s' in stderr:\n%s", text, err);
    p += strlen(echo);
    snprintf(caret, sizeof(caret), "  %*s^\n", pos, "");
    if (strncmp(p, caret, strlen(caret)) != 0)
        fail_msg("caret not at %d in:\n%s", pos, err);
}

static void test_unknown_output_index(void **state)
{
    (void)state;
    run_result r =
        run("check", "ij,jk->il", "--shape", "i=2,j=3,k=4", NULL);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "unknown output index 'l'"));
    assert_caret(r.err, "ij,jk->il", 8);
    run_free(&r);

    /* with --json -, stdout holds the error object alone */
    r = run("check", "ij,jk->il", "--shape", "i=2,j=3,k=4", "--json", "-",
            NULL);
    assert_int_equal(r.status, 2);
    cJSON *doc = cJSON_Parse(r.out);
    assert_non_null(doc);
    cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
    assert_non_null(e);
    assert_int_equal(cJSON_GetObjectItem(e, "pos")->valueint, 8);
    assert_int_equal(cJSON_GetObjectItem(e, "exit")->valueint, 2);
    cJSON_Delete(doc);
    run_free(&r);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    run_result r = run("check", "ij,jk->ik", "--shape", "i=2,j=0,k=4", NULL);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    assert_caret(r.err, "i=2,j=0,k=4", 6);
    run_free(&r);

    r = run("check", "ij,jk->ik", "--shape", "i=2,j=3", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "missing size for index 'k'"));
    assert_caret(r.err, "ij,jk->ik", 4);
    run_free(&r);

    r = run("check", "ij,jk->ik", "--shape", "i=2,j=3,k=4", "--dtype",
            "f32,f8", NULL);
    assert_int_equal(r.status, 2);
    assert_caret(r.err, "f32,f8", 4);
    run_free(&r);

    r = run("check", "i.j", "--shape", "i=2,j=3", NULL);
    assert_int_equal(r.status, 2);
    assert_caret(r.err, "i.j", 1);
    run_free(&r);

    r = run("check", "ij", NULL); /* no --shape */
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    run_free(&r);

    r = run("check", "--shape", "i=2", NULL); /* no einsum */
    assert_int_equal(r.status, 2);
    run_free(&r);

    r = run("check", "i", "j", "--shape", "i=2", NULL);
    assert_int_equal(r.status, 2);
    run_free(&r);

    r = run("check", "i", "--shape", "i=2", "--bogus", NULL);
    assert_int_equal(r.status, 2);
    run_free(&r);
}

static void test_roles_printed(void **state)
{
    (void)state;
    run_result r = run("check", "ii->i", "--shape", "i=3", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "ii->i"));
    assert_non_null(strstr(r.out, "batch"));
    run_free(&r);

    r = run("check", "...ij,jk->...ik", "--shape", "...=3x2,i=4,j=5,k=6",
            NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "...ij,jk->...ik"));
    assert_non_null(strstr(r.out, "_0"));
    assert_non_null(strstr(r.out, "_1"));
    assert_non_null(strstr(r.out, "summed"));
    assert_non_null(strstr(r.out, "1440"));
    run_free(&r);

    r = run("check", "ab,bc", "--shape", "a=2,b=3,c=4", "--json", "-",
            NULL);
    assert_int_equal(r.status, 0);
    cJSON *doc = cJSON_Parse(r.out);
    assert_non_null(doc);
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(doc, "einsum")->valuestring,
        "ab,bc->ac");
    cJSON *idx = cJSON_GetObjectItemCaseSensitive(doc, "indices");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetArrayItem(idx, 2), "role")
                            ->valuestring,
                        "summed");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetArrayItem(idx, 2), "name")
                            ->valuestring,
                        "b");
    cJSON_Delete(doc);
    run_free(&r);
}

static void test_dtypes_in_json(void **state)
{
    (void)state;
    run_result r = run("check", "ij,jk->ik", "--shape", "i=2,j=3,k=4",
                       "--dtype", "f16,f32", "--json", "-", NULL);
    assert_int_equal(r.status, 0);
    cJSON *doc = cJSON_Parse(r.out);
    assert_non_null(doc);
    cJSON *ops = cJSON_GetObjectItemCaseSensitive(doc, "ops");
    assert_non_null(cJSON_GetObjectItemCaseSensitive(ops, "f32"));
    assert_null(cJSON_GetObjectItemCaseSensitive(ops, "f64"));
    assert_true(cJSON_GetObjectItemCaseSensitive(ops, "f32")->valuedouble ==
                48.0);
    /* 6*2 + 12*4 + 8*4 */
    assert_true(cJSON_GetObjectItemCaseSensitive(doc, "bytes")->valuedouble ==
                92.0);
    cJSON_Delete(doc);
    run_free(&r);
}

/* With --json -, every command's failure leaves a JSON error object on
 * stdout: usage errors of several commands, an input error with its input
 * and position. */
static void test_json_error_every_command(void **state)
{
    (void)state;
    static const char *const cmds[] = {"check", "codegen", "run", "tune",
                                       "best", "export", "peaks", "db",
                                       "devices"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        run_result r = run(cmds[i], "--no-such-flag", "--json", "-", NULL);
        assert_int_equal(r.status, 2);
        cJSON *doc = cJSON_Parse(r.out);
        if (!doc)
            fail_msg("%s: stdout is not JSON: '%s'", cmds[i], r.out);
        cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
        assert_non_null(e);
        assert_int_equal(cJSON_GetObjectItem(e, "exit")->valueint, 2);
        assert_true(cJSON_IsString(cJSON_GetObjectItem(e, "status")));
        assert_true(cJSON_IsString(cJSON_GetObjectItem(e, "message")));
        cJSON_Delete(doc);
        run_free(&r);
    }
    run_result r = run("check", "ij,jk->iz", "--shape", "i=2,j=3,k=4",
                       "--json", "-", NULL);
    assert_int_equal(r.status, 2);
    cJSON *doc = cJSON_Parse(r.out);
    assert_non_null(doc);
    cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
    assert_string_equal(cJSON_GetObjectItem(e, "status")->valuestring,
                        "bad input");
    assert_string_equal(cJSON_GetObjectItem(e, "input")->valuestring,
                        "einsum");
    assert_int_equal(cJSON_GetObjectItem(e, "pos")->valueint, 8);
    assert_non_null(strstr(cJSON_GetObjectItem(e, "message")->valuestring,
                           "'z'"));
    cJSON_Delete(doc);
    /* stderr keeps the human message with its caret */
    assert_non_null(strstr(r.err, "^"));
    run_free(&r);
}

/* Files a command writes are checked before it runs (exit 2, the path and
 * why): --json in a missing directory for any command, export -o under a
 * regular file, tune --plot in a missing directory. */
static void test_output_paths_checked(void **state)
{
    (void)state;
    run_result r = run("check", "ij->", "--shape", "i=2,j=3", "--json",
                       "/nonexistentdir_et/c.json", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--json /nonexistentdir_et/c.json: "
                                  "directory /nonexistentdir_et"));
    run_free(&r);

    char file[300], sub[320];
    snprintf(file, sizeof file, "%s/plainfile", g_tmp);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(sub, sizeof sub, "%s/kernels", file);
    r = run("export", "ij->", "--shape", "i=2,j=3", "-o", sub, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, sub));
    assert_non_null(strstr(r.err, "Not a directory"));
    run_free(&r);
    unlink(file);

    r = run("tune", "ij->", "--shape", "i=2,j=3", "--plot",
            "/nonexistentdir_et/p.svg", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--plot /nonexistentdir_et/p.svg"));
    run_free(&r);
}

/* tune's seeds: a count from 1 to 16, not with --no-seed (exit 2 before
 * any device is opened). */
static void test_seed_flags(void **state)
{
    (void)state;
    run_result r = run("tune", "ij->", "--shape", "i=2,j=3", "--seeds", "0",
                       NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--seeds must be an integer in [1, 16], "
                                  "not '0'"));
    run_free(&r);
    r = run("tune", "ij->", "--shape", "i=2,j=3", "--seeds", "2",
            "--no-seed", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--seeds and --no-seed exclude each "
                                  "other"));
    run_free(&r);
}

/* A space whose constraint cannot be evaluated at any point: tune exits 2
 * naming the constraint's file, line and column (before any candidate). */
static void test_space_without_points(void **state)
{
    (void)state;
    char path[300], db[300];
    snprintf(path, sizeof path, "%s/never.yaml", g_tmp);
    snprintf(db, sizeof db, "%s/never.db", g_tmp);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("name: never\n"
          "einsum: \"ik,kj->ij\"\n"
          "params:\n"
          "  a: {values: [1, 2, 4]}\n"
          "constraints:\n"
          "  - i % a == 0\n"
          "  - i / (a - a) > 1\n"
          "transforms:\n"
          "  - {op: LOCAL, axis: i, amt: a}\n",
          f);
    fclose(f);
    run_result r = run("tune", "ik,kj->ij", "--shape", "i=8,k=6,j=4",
                       "--space", path, "--budget", "3", "--db", db,
                       "--json", "-", NULL);
    assert_int_equal(r.status, 2);
    char where[512];
    snprintf(where, sizeof where, "%s:7:5: constraint 'i / (a - a) > 1' "
             "cannot be evaluated at any point", path);
    assert_non_null(strstr(r.err, where));
    assert_null(strstr(r.err, "best -"));
    cJSON *doc = cJSON_Parse(r.out);
    assert_non_null(doc);
    cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
    assert_string_equal(cJSON_GetObjectItem(e, "input")->valuestring,
                        "space");
    assert_int_equal(cJSON_GetObjectItem(e, "line")->valueint, 7);
    assert_int_equal(cJSON_GetObjectItem(e, "col")->valueint, 5);
    cJSON_Delete(doc);
    run_free(&r);
    unlink(path);
    char side[320];
    static const char *const ext[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(side, sizeof side, "%s%s", db, ext[i]);
        unlink(side);
    }
}

static void test_help(void **state)
{
    (void)state;
    run_result r = run("check", "--help", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "usage: eintune check"));
    assert_non_null(strstr(r.out, "--shape"));
    assert_non_null(strstr(r.out, "--dtype"));
    run_free(&r);
}

/* `eintune help CMD` is `eintune CMD --help` for every command; an
 * unknown one is bad input. */
static void test_help_command(void **state)
{
    (void)state;
    const char *cmds[] = {"devices", "check", "codegen", "run", "tune",
                          "peaks",   "db",    "best",    "export"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        run_result h = run("help", cmds[i], NULL);
        run_result c = run(cmds[i], "--help", NULL);
        assert_int_equal(h.status, 0);
        assert_int_equal(c.status, 0);
        char want[64];
        snprintf(want, sizeof want, "usage: eintune %s", cmds[i]);
        if (!strstr(h.out, want))
            fail_msg("help %s: no '%s' in:\n%s", cmds[i], want, h.out);
        assert_string_equal(h.out, c.out);
        run_free(&h);
        run_free(&c);
    }
    run_result r = run("help", "nosuch", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "unknown command 'nosuch'"));
    run_free(&r);
    r = run("help", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "commands:"));
    run_free(&r);
}

/* Every --flag a command's --help names is one the command takes (codegen
 * once announced --space and --params it did not have): `CMD --flag
 * --zz-unknown --zz-unknown` must stop at --zz-unknown, never at --flag
 * (the flag's argument, if it takes one, is the first --zz-unknown, so
 * nothing runs). */
static void test_help_flags_exist(void **state)
{
    (void)state;
    const char *cmds[] = {"devices", "check", "codegen", "run", "tune",
                          "peaks",   "best",  "export"};
    int checked = 0;
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        run_result h = run(cmds[i], "--help", NULL);
        assert_int_equal(h.status, 0);
        assert_null(strstr(h.out, "Not yet"));
        for (const char *p = h.out; (p = strstr(p, "--")) != NULL;) {
            char flag[64];
            size_t n = 2;
            while (n < sizeof flag - 1 &&
                   (islower((unsigned char)p[n]) || p[n] == '-' ||
                    isdigit((unsigned char)p[n])))
                n++;
            memcpy(flag, p, n);
            flag[n] = '\0';
            p += n;
            if (n < 4 || !strcmp(flag, "--help"))
                continue;
            run_result r = run(cmds[i], flag, "--zz-unknown", "--zz-unknown",
                               NULL);
            char bad[96];
            snprintf(bad, sizeof bad, "unrecognized option '%s'", flag);
            if (strstr(r.err, bad) || !strstr(r.err, "'--zz-unknown'"))
                fail_msg("%s --help names %s, which it does not take:\n%s",
                         cmds[i], flag, r.err);
            assert_int_equal(r.status, 2);
            run_free(&r);
            checked++;
        }
        run_free(&h);
    }
    assert_true(checked > 40);
    /* and codegen has no --space or --params */
    run_result c = run("codegen", "--help", NULL);
    assert_null(strstr(c.out, "--space"));
    assert_null(strstr(c.out, "--params"));
    run_free(&c);
}

/* The opts error lists every opt, SPLIT included. */
static void test_unknown_opt_lists_all(void **state)
{
    (void)state;
    run_result r = run("codegen", "ij,jk->ik", "--shape", "i=4,j=4,k=4",
                       "--opts", "UPCAT(i,2)", NULL);
    assert_int_equal(r.status, 2);
    const char *names[] = {"LOCAL", "UPCAST", "UNROLL", "GROUP", "GROUPTOP",
                           "PADTO", "SWAP", "NOLOCALS", "PREFETCH", "SPLIT"};
    assert_non_null(strstr(r.err, "unknown opt 'UPCAT'"));
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strstr(r.err, names[i]))
            fail_msg("'%s' missing from: %s", names[i], r.err);
    run_free(&r);
}

/* A device index past the end: bad input (exit 2), "there is only 1",
 * never "there are 1". */
static void test_device_count_grammar(void **state)
{
    (void)state;
    if (!td_opencl_only("the OpenCL device count's grammar"))
        skip();
    run_result r = run("peaks", "--device", "opencl:99", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "no OpenCL device 99"));
    assert_null(strstr(r.err, "there are 1 "));
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acceptance_json_stdout),
        cmocka_unit_test(test_json_file_and_table),
        cmocka_unit_test(test_ops_of_cheapest_path),
        cmocka_unit_test(test_unknown_output_index),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_roles_printed),
        cmocka_unit_test(test_dtypes_in_json),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_help_command),
        cmocka_unit_test(test_unknown_opt_lists_all),
        cmocka_unit_test(test_help_flags_exist),
        cmocka_unit_test(test_device_count_grammar),
        cmocka_unit_test(test_json_error_every_command),
        cmocka_unit_test(test_output_paths_checked),
        cmocka_unit_test(test_seed_flags),
        cmocka_unit_test(test_space_without_points),
    };
    return cmocka_run_group_tests_name("cli_check", tests, setup, teardown);
}

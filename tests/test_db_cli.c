/*
 * test_db_cli.c - the tuning database through the eintune command, on the
 * suite's device (tests/suite_device.h; the exports, run with the OpenCL
 * API, on OpenCL only): a repeated tune answered from the database; a
 * tune killed with SIGKILL and restarted (nothing measured twice, nothing
 * lost); `best` and `export` for the einsum tuned and for renamed and
 * reordered equivalents (opts in the asker's names); an exported kernel
 * compiled with cc against the plain OpenCL API (examples/export_demo.c)
 * and run;
 * the kernels of one shape in two dtypes exported side by side, names,
 * --force and --name; export --embed (the header's string equals the .cl
 * file byte for byte, and the example runs from the header alone);
 * `run --best` against a naive loop; a corrupt --db refused untouched.
 *
 * Runs $ET_BUILD_DIR/eintune (default build/) as a subprocess, always with
 * --db in a temporary directory; peaks come from an override file so that
 * nothing is measured or cached outside it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "api/best_impl.h"
#include "einsum/einsum.h"
#include "einsum/npy.h"
#include "db/db.h"
#include "measure/backend.h"
#include "roofline/peaks.h"
#include "roofline/report.h"
#include "tests/suite_device.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static char g_dir[256];
static char g_bin[512];
static char g_db[512]; /* the database of the tuned matmul */

#define EINSUM "ij,jk->ik"
#define SHAPE "i=16,j=8,k=12"
#define BUDGET "6"

/* ---- helpers ------------------------------------------------------------ */

static const char *build_dir(void)
{
    const char *d = getenv("ET_BUILD_DIR");
    return d && *d ? d : "build";
}

/* Starts argv[0..] with stdout and stderr into g_dir/tag.out and .err
 * (eintune on the suite's device unless argv names one). */
static pid_t spawn_bg(char *const *given, const char *tag)
{
    char *argv[72];
    int argc = 0;
    for (; argc < 69 && given[argc]; argc++)
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
    return rc == 0 ? pid : -1;
}

static int wait_status(pid_t pid)
{
    int ws;
    if (pid < 0 || waitpid(pid, &ws, 0) < 0)
        return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

static int spawn_wait(char *const *argv, const char *tag)
{
    return wait_status(spawn_bg(argv, tag));
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (len)
            *len = 0;
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    if (len)
        *len = got;
    return buf;
}

static char *tag_file(const char *tag, const char *ext)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%s", g_dir, tag, ext);
    char *s = slurp(path, NULL);
    return s ? s : strdup("");
}

/* Runs `eintune ARGS...` (NULL-terminated); returns the exit status and,
 * when doc is non-NULL, the JSON on stdout. */
static int eintune(const char *tag, cJSON **doc, ...)
{
    char *argv[64];
    int n = 0;
    argv[n++] = g_bin;
    va_list ap;
    va_start(ap, doc);
    const char *s;
    while ((s = va_arg(ap, const char *)) != NULL && n < 62)
        argv[n++] = (char *)s;
    va_end(ap);
    argv[n] = NULL;
    int rc = spawn_wait(argv, tag);
    if (doc) {
        char *out = tag_file(tag, "out");
        *doc = cJSON_Parse(out);
        if (!*doc) {
            char *err = tag_file(tag, "err");
            print_error("%s: exit %d, no JSON on stdout; stderr:\n%s\n", tag,
                        rc, err);
            free(err);
        }
        free(out);
    }
    return rc;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static void path_in(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", g_dir, name);
}

static int64_t db_trials(const char *path)
{
    et_db *db = NULL;
    et_error err = {{0}};
    if (et_db_open(path, &db, &err) != ET_OK)
        return -1;
    et_db_stats s;
    int64_t n = et_db_stats_get(db, &s, &err) == ET_OK ? s.trials : -1;
    et_db_close(db);
    return n;
}

/* The opts of the trials in a database (one einsum here); free opts. */
typedef struct trial_set {
    char (*opts)[ET_DB_OPTS_LEN];
    int n, cap;
    int ok; /* trials with outcome other than refused */
} trial_set;

static int collect(void *arg, const et_db_row *row)
{
    trial_set *s = arg;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->opts = realloc(s->opts, (size_t)s->cap * sizeof *s->opts);
    }
    snprintf(s->opts[s->n++], ET_DB_OPTS_LEN, "%s", row->trial.opts);
    if (row->trial.outcome != ET_OUTCOME_REFUSED)
        s->ok++;
    return 0;
}

static int set_has(const trial_set *s, const char *opts)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->opts[i], opts) == 0)
            return 1;
    return 0;
}

static void db_trial_set(const char *path, trial_set *s)
{
    memset(s, 0, sizeof *s);
    et_db *db = NULL;
    et_error err = {{0}};
    assert_int_equal(et_db_open(path, &db, &err), ET_OK);
    assert_int_equal(et_db_list(db, NULL, collect, s, &err), ET_OK);
    et_db_close(db);
}

/* opts text with lower-case letters renamed by from -> to */
static void rename_opts(const char *in, const char *from, const char *to,
                        char *out, size_t cap)
{
    size_t i;
    for (i = 0; in[i] && i + 1 < cap; i++) {
        const char *p = in[i] >= 'a' && in[i] <= 'z' ? strchr(from, in[i])
                                                     : NULL;
        out[i] = p ? to[p - from] : in[i];
    }
    out[i] = '\0';
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/et_db_cli_XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_bin, sizeof g_bin, "%s/eintune", build_dir());
    char path[512];
    snprintf(path, sizeof path, "%s/xdg", g_dir);
    setenv("XDG_CACHE_HOME", path, 1);
    /* fixed peaks: nothing measured, nothing cached */
    snprintf(path, sizeof path, "%s/peaks.json", g_dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs("{\"gflops\": {\"f32\": 100, \"f64\": 50, \"f16\": 100}, "
          "\"bandwidth_gbs\": 20}\n",
          f);
    fclose(f);
    setenv("ET_PEAKS_FILE", path, 1);
    if (!getenv("POCL_CACHE_DIR")) {
        snprintf(path, sizeof path, "%s/pocl", g_dir);
        setenv("POCL_CACHE_DIR", path, 1);
    }
    snprintf(g_db, sizeof g_db, "%s/tuned.db", g_dir);
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

/* ---- (1) a repeated tune is answered from the database ----------------- */

static char g_best_opts[ET_DB_OPTS_LEN];
static double g_best_time;

static void test_repeat_cached(void **state)
{
    (void)state;
    need_binary();
    cJSON *a = NULL, *b = NULL;
    /* without the final race, whose figures are new in every run */
    assert_int_equal(eintune("tune1", &a, "tune", EINSUM, "--shape", SHAPE,
                             "--dtype", "f32", "--budget", BUDGET, "--db",
                             g_db, "--race", "0", "--json", "-", NULL),
                     0);
    assert_int_equal(eintune("tune2", &b, "tune", EINSUM, "--shape", SHAPE,
                             "--dtype", "f32", "--budget", BUDGET, "--db",
                             g_db, "--race", "0", "--json", "-", NULL),
                     0);
    assert_non_null(a);
    assert_non_null(b);
    double ev1 = num(a, "evaluations"), ca1 = num(a, "cached");
    assert_true(ca1 == 0);
    assert_true(ev1 >= 1);
    /* every point the first run measured is answered; none measured */
    assert_true(num(b, "evaluations") == 0);
    assert_true(num(b, "cached") == ev1);
    if (ev1 == atoi(BUDGET))
        assert_true(num(b, "cached") == atoi(BUDGET));
    const cJSON *ba = cJSON_GetObjectItem(a, "best");
    const cJSON *bb = cJSON_GetObjectItem(b, "best");
    assert_true(cJSON_IsObject(ba) && cJSON_IsObject(bb));
    assert_string_equal(str(ba, "opts"), str(bb, "opts"));
    assert_true(num(ba, "time_s") == num(bb, "time_s"));
    /* no figure mixed across runs: the second run's best is marked as the
     * database's, with its date, and has no speed-up against the
     * untransformed kernel timed now */
    assert_string_equal(str(ba, "source"), "this run");
    assert_string_equal(str(bb, "source"), "database");
    assert_true(num(bb, "measured_at") > 0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(bb, "speedup")));
    assert_false(cJSON_IsTrue(
        cJSON_GetObjectItem(cJSON_GetObjectItem(b, "race"), "ran")));
    snprintf(g_best_opts, sizeof g_best_opts, "%s", str(ba, "opts"));
    g_best_time = num(ba, "time_s");
    /* the database holds every trial once */
    const cJSON *cands = cJSON_GetObjectItem(a, "candidates");
    assert_true(db_trials(g_db) >= (int64_t)ev1);
    assert_true(db_trials(g_db) <= cJSON_GetArraySize(cands));
    cJSON_Delete(a);
    cJSON_Delete(b);
}

/* ---- (2) resume after SIGKILL ------------------------------------------ */

static void test_resume_after_kill(void **state)
{
    (void)state;
    need_binary();
    char db[512];
    path_in(db, sizeof db, "killed.db");
    char *argv[] = {g_bin, "tune", "ab,bc->ac", "--shape", "a=12,b=8,c=16",
                    "--dtype", "f32", "--budget", "14", "--seed", "3",
                    "--db", db, "--json", "-", NULL};
    pid_t pid = spawn_bg(argv, "kill1");
    assert_true(pid > 0);
    /* wait until at least 2 trials are committed, then kill */
    int64_t n = 0;
    for (int i = 0; i < 600 && n < 2; i++) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (access(db, F_OK) == 0)
            n = db_trials(db);
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            pid = -1;
            break;
        }
    }
    assert_true(pid > 0); /* still running: the kill is mid-run */
    kill(pid, SIGKILL);
    int ws;
    waitpid(pid, &ws, 0);
    assert_true(WIFSIGNALED(ws));

    trial_set before;
    db_trial_set(db, &before);
    assert_true(before.n >= 2);

    cJSON *doc = NULL;
    assert_int_equal(eintune("kill2", &doc, "tune", "ab,bc->ac", "--shape",
                             "a=12,b=8,c=16", "--dtype", "f32", "--budget",
                             "14", "--seed", "3", "--db", db, "--json", "-",
                             NULL),
                     0);
    assert_non_null(doc);
    /* nothing measured twice: a point timed now was not in the database */
    const cJSON *c;
    int measured = 0, cached = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "candidates"))
    {
        const char *o = str(c, "opts");
        int was_cached = cJSON_IsTrue(cJSON_GetObjectItem(c, "cached"));
        int refused = strcmp(str(c, "status"), "refused") == 0;
        if (!cJSON_IsNull(cJSON_GetObjectItem(c, "duplicate_of")))
            continue; /* answered from an earlier candidate */
        if (was_cached) {
            cached++;
            assert_true(set_has(&before, o));
        } else if (!refused) {
            measured++;
            if (set_has(&before, o))
                fail_msg("'%s' measured again after the restart", o);
        }
    }
    assert_int_equal(measured, (int)num(doc, "evaluations"));
    assert_int_equal(cached, (int)num(doc, "cached"));
    /* the restarted search retraces the first: every measured trial of
     * the first run is answered from the database */
    assert_int_equal(cached, before.ok);

    /* nothing lost: the first run's trials are all there, and the count is
     * the union */
    trial_set after;
    db_trial_set(db, &after);
    for (int i = 0; i < before.n; i++)
        assert_true(set_has(&after, before.opts[i]));
    int union_n = before.n;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "candidates"))
    {
        const char *o = str(c, "opts");
        /* a duplicate kernel is answered from another, never recorded */
        if (!cJSON_IsNull(cJSON_GetObjectItem(c, "duplicate_of")))
            continue;
        if (!set_has(&before, o)) {
            int dup = 0;
            const cJSON *c2;
            cJSON_ArrayForEach(c2, cJSON_GetObjectItem(doc, "candidates"))
            {
                if (c2 == c)
                    break;
                dup |= strcmp(str(c2, "opts"), o) == 0;
            }
            union_n += !dup;
        }
    }
    assert_int_equal(after.n, union_n);
    assert_int_equal(db_trials(db), after.n);
    assert_int_equal(before.ok + (int)num(doc, "evaluations"), after.ok);
    free(before.opts);
    free(after.opts);
    cJSON_Delete(doc);
}

/* ---- (3) best and export, renamed and reordered ------------------------- */

static void check_best(const char *tag, const char *einsum, const char *shape,
                       const char *want_opts)
{
    cJSON *doc = NULL;
    assert_int_equal(eintune(tag, &doc, "best", einsum, "--shape", shape,
                             "--dtype", "f32", "--db", g_db, "--json", "-",
                             NULL),
                     0);
    assert_non_null(doc);
    assert_string_equal(str(doc, "einsum"), einsum);
    assert_string_equal(str(doc, "opts"), want_opts);
    assert_true(num(doc, "time_s") == g_best_time);
    /* the search's median (these runs had no final race: no race time) */
    assert_string_equal(str(doc, "time_source"), "search");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(doc, "race")));
    assert_true(strlen(str(doc, "kernel")) > 0);
    const cJSON *ci = cJSON_GetObjectItem(doc, "ci95_s");
    assert_int_equal(cJSON_GetArraySize(ci), 2);
    assert_true(cJSON_GetArrayItem(ci, 0)->valuedouble <= g_best_time);
    assert_true(cJSON_GetArrayItem(ci, 1)->valuedouble >= g_best_time);
    assert_true(num(cJSON_GetObjectItem(doc, "gops"), "f32") > 0);
    assert_non_null(cJSON_GetObjectItem(doc, "roofline_gops"));
    const cJSON *v = cJSON_GetObjectItem(doc, "verified");
    assert_true(num(v, "trials") == 3);
    assert_true(num(v, "max_norm_err") <= 1);
    assert_true(cJSON_IsObject(cJSON_GetObjectItem(doc, "device")));
    const cJSON *ta = cJSON_GetObjectItem(doc, "tuned_as");
    assert_string_equal(str(ta, "einsum"), EINSUM);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(ta, "source_reproduced")));
    cJSON_Delete(doc);
}

/* Swaps PREFETCH operand numbers 0 and 1 (for the reordered einsum). */
static void swap_prefetch(char *opts)
{
    for (char *p = strstr(opts, "PREFETCH("); p; p = strstr(p + 1,
                                                            "PREFETCH(")) {
        char *d = p + strlen("PREFETCH(");
        if (*d == '0' || *d == '1')
            *d = *d == '0' ? '1' : '0';
    }
}

static void test_best(void **state)
{
    (void)state;
    need_binary();
    if (!g_best_opts[0] && g_best_time == 0)
        skip();
    check_best("best1", EINSUM, SHAPE, g_best_opts);
    char renamed[ET_DB_OPTS_LEN];
    rename_opts(g_best_opts, "ijk", "abc", renamed, sizeof renamed);
    check_best("best2", "ab,bc->ac", "a=16,b=8,c=12", renamed);
    char reordered[ET_DB_OPTS_LEN];
    snprintf(reordered, sizeof reordered, "%s", g_best_opts);
    swap_prefetch(reordered);
    check_best("best3", "jk,ij->ik", SHAPE, reordered);
    /* renamed and reordered at once */
    rename_opts(g_best_opts, "ijk", "xyz", renamed, sizeof renamed);
    swap_prefetch(renamed);
    check_best("best4", "yz,xy->xz", "x=16,y=8,z=12", renamed);

    /* other sizes: with --exact nothing known, exit 1; without, the
     * tuned opts re-applied when the rules accept them at k=13, saying
     * so (docs/database.md), else exit 1 as well */
    assert_int_equal(eintune("best5", NULL, "best", EINSUM, "--shape",
                             "i=16,j=8,k=13", "--dtype", "f32", "--db", g_db,
                             "--exact", NULL),
                     1);
    cJSON *fb = NULL;
    int rc5 = eintune("best5b", &fb, "best", EINSUM, "--shape",
                      "i=16,j=8,k=13", "--dtype", "f32", "--db", g_db,
                      "--json", "-", NULL);
    assert_true(rc5 == 0 || rc5 == 1);
    if (rc5 == 0) {
        assert_string_equal(str(fb, "source"), "fallback");
        assert_string_equal(str(fb, "tuned_at"), "k=12");
        assert_string_equal(str(fb, "applied_at"), "k=13");
    }
    cJSON_Delete(fb);
    /* other dtypes: another einsum altogether, exit 1 */
    assert_int_equal(eintune("best6", NULL, "best", EINSUM, "--shape", SHAPE,
                             "--dtype", "f64", "--db", g_db, NULL),
                     1);
    char *err = tag_file("best5", "err");
    assert_non_null(strstr(err, "no verified kernel known"));
    free(err);
    /* bad input: exit 2 */
    assert_int_equal(eintune("best7", NULL, "best", "ij,jk->", "--db", g_db,
                             NULL),
                     2);
    assert_int_equal(eintune("best8", NULL, "best", "ij,jk->ik", "--shape",
                             "i=x", "--db", g_db, NULL),
                     2);
}

/* Exports einsum into DIR/name; builds examples/export_demo.c against the
 * header with cc and runs it on the .cl; returns the kernel name. */
static void export_and_run(const char *tag, const char *einsum,
                           const char *shape, char *kernel, size_t cap)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s/nested", g_dir, tag);
    cJSON *doc = NULL;
    assert_int_equal(eintune(tag, &doc, "export", einsum, "--shape", shape,
                             "--dtype", "f32", "--db", g_db, "-o", dir,
                             "--json", "-", NULL),
                     0);
    assert_non_null(doc);
    snprintf(kernel, cap, "%s", str(doc, "kernel"));
    assert_true(kernel[0] != '\0');
    assert_string_equal(str(doc, "backend"), "opencl");
    char src[1024], hdr[1024];
    snprintf(src, sizeof src, "%s/%s.cl", dir, kernel);
    snprintf(hdr, sizeof hdr, "%s/%s.h", dir, kernel);
    assert_string_equal(str(doc, "source"), src);
    assert_string_equal(str(doc, "header"), hdr);
    cJSON_Delete(doc);
    char *h = slurp(hdr, NULL);
    assert_non_null(h);
    char want[512];
    snprintf(want, sizeof want, "_KERNEL_NAME \"%s\"", kernel);
    assert_non_null(strstr(h, want));
    assert_non_null(strstr(h, "_GLOBAL_SIZE {"));
    assert_non_null(strstr(h, "_ARG0_OPERAND (-1)"));
    snprintf(want, sizeof want, "_EINSUM \"%s\"", einsum);
    assert_non_null(strstr(h, want));
    free(h);

    /* the example, with cc and the OpenCL API alone, built as
     * examples/README.md says: the header's directory on the include
     * path, the header named alone */
    char def[1200], inc[600], exe[600], ctag[64], rtag[64];
    snprintf(def, sizeof def, "-DET_EXPORT_HEADER=\"%s.h\"", kernel);
    snprintf(inc, sizeof inc, "-I%s", dir);
    snprintf(exe, sizeof exe, "%s/%s/demo", g_dir, tag);
    snprintf(ctag, sizeof ctag, "%s-cc", tag);
    snprintf(rtag, sizeof rtag, "%s-demo", tag);
    char *cc[] = {"/usr/bin/cc", "-std=c11", "-O1", "-Wall", "-Wextra",
                  "-Werror", inc, def, "examples/export_demo.c", "-lOpenCL",
                  "-lm", "-o", exe, NULL};
    int rc = spawn_wait(cc, ctag);
    if (rc != 0) {
        char *e = tag_file(ctag, "err");
        fail_msg("cc export_demo.c: exit %d\n%s", rc, e);
    }
    char *run[] = {exe, src, "7", NULL};
    rc = spawn_wait(run, rtag);
    char *out = tag_file(rtag, "out");
    if (rc != 0) {
        char *e = tag_file(rtag, "err");
        fail_msg("export_demo: exit %d\n%s%s", rc, out, e);
    }
    assert_non_null(strstr(out, ": ok"));
    free(out);
}

/* ---- the tune log and the report ------------------------------------- */

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* In a pipe: a line per candidate ("trying untransformed", never "{} -"),
 * one line per new best with GOps/s and % of roofline, plain progress
 * lines, the roofline table once (in the report); -q: none of it; best's
 * cv in %; the time limit's progress form. */
static void test_tune_log(void **state)
{
    (void)state;
    need_binary();
    char db1[512], db2[512], db3[512];
    path_in(db1, sizeof db1, "log1.db");
    path_in(db2, sizeof db2, "log2.db");
    path_in(db3, sizeof db3, "log3.db");
    assert_int_equal(eintune("log1", NULL, "tune", EINSUM, "--shape", SHAPE,
                             "--dtype", "f32", "--budget", "5", "--db", db1,
                             NULL),
                     0);
    char *err = tag_file("log1", "err"), *out = tag_file("log1", "out");
    if (!strstr(err, "trying untransformed") || !strstr(err, "new best: ") ||
        !strstr(err, " GOps/s") || !strstr(err, "% of roofline") ||
        !strstr(err, "candidate 1/5, ") || !strstr(err, " left, best "))
        fail_msg("tune log lacks a line:\n%s", err);
    if (strstr(err, "{}") || strstr(err, "new best: \n") ||
        strstr(err, "Dtype |") || strstr(err, "':") || strstr(err, " -\n"))
        fail_msg("tune log has a dict, an empty best or a table:\n%s", err);
    if (count_of(out, "Dtype |") != 1 || strstr(out, "params      {}") ||
        strstr(out, "best        -"))
        fail_msg("tune report:\n%s", out);
    free(err);
    free(out);

    assert_int_equal(eintune("log2", NULL, "tune", EINSUM, "--shape", SHAPE,
                             "--dtype", "f32", "--budget", "5", "--db", db2,
                             "-q", NULL),
                     0);
    err = tag_file("log2", "err");
    out = tag_file("log2", "out");
    /* warnings stay under -q (the noise summary names candidates) */
    for (char *w; (w = strstr(err, " WARN "));) {
        char *e = strchr(w, '\n');
        char *b0 = w;
        while (b0 > err && b0[-1] != '\n')
            b0--;
        memmove(b0, e ? e + 1 : w + strlen(w), strlen(e ? e + 1 : "") + 1);
    }
    if (strstr(err, "INFO") || strstr(err, "candidate") ||
        strstr(err, "new best") || strstr(err, "slower_than_bound") ||
        strstr(err, "generated"))
        fail_msg("-q printed routine lines:\n%s", err);
    assert_non_null(strstr(out, "best        "));
    free(err);
    free(out);

    assert_int_equal(eintune("log3", NULL, "best", EINSUM, "--shape", SHAPE,
                             "--dtype", "f32", "--db", db1, NULL),
                     0);
    out = tag_file("log3", "out");
    const char *cv = strstr(out, "cv ");
    double v;
    char pct = 0;
    if (!cv || sscanf(cv, "cv %lf %c", &v, &pct) != 2 || pct != '%')
        fail_msg("best's cv is not in %%:\n%s", out);
    free(out);

    /* the untransformed trial is listed as such, not as "-" */
    assert_int_equal(eintune("log5", NULL, "db", "list", "--db", db1, NULL),
                     0);
    out = tag_file("log5", "out");
    if (!strstr(out, " untransformed "))
        fail_msg("db list:\n%s", out);
    free(out);

    /* the time limit binds: "candidate 1, 0 s of the 1 s limit, ..." */
    assert_int_equal(eintune("log4", NULL, "tune", EINSUM, "--shape", SHAPE,
                             "--dtype", "f32", "--budget", "100000",
                             "--time-limit", "1", "--db", db3, NULL),
                     0);
    err = tag_file("log4", "err");
    if (!strstr(err, "candidate 1, ") || !strstr(err, " of the 1 s limit, ~"))
        fail_msg("no time-limit progress:\n%s", err);
    free(err);
}

/* Runs `eintune ARGS...` with stderr on a new pseudo-terminal and returns
 * what the terminal received (malloc'ed); *rc gets the exit status. */
static char *eintune_on_tty(int *rc, char *const *args)
{
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    assert_true(master >= 0);
    assert_int_equal(grantpt(master), 0);
    assert_int_equal(unlockpt(master), 0);
    char slave[128];
    assert_int_equal(ptsname_r(master, slave, sizeof slave), 0);
    char *argv[32];
    int n = 0;
    argv[n++] = g_bin;
    for (; args[n - 1] && n < 29; n++)
        argv[n] = args[n - 1];
    td_cli_device(argv, &n);
    argv[n] = NULL;
    char out_path[512];
    snprintf(out_path, sizeof out_path, "%s/tty.out", g_dir);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, slave, O_RDWR | O_NOCTTY, 0);
    posix_spawn_file_actions_addclose(&fa, master);
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, g_bin, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int status = -1, done = 0;
    /* read while it runs (a full terminal buffer would block it), then
     * what is left */
    for (;;) {
        struct pollfd pf = {master, POLLIN, 0};
        int ready = poll(&pf, 1, 100);
        if (ready > 0 && (pf.revents & POLLIN)) {
            if (len + 4096 > cap)
                buf = realloc(buf, cap *= 2);
            ssize_t got = read(master, buf + len, 4096);
            if (got > 0) {
                len += (size_t)got;
                continue;
            }
        }
        if (done)
            break;
        int ws;
        if (waitpid(pid, &ws, WNOHANG) == pid) {
            status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
            done = 1;
        } else if (ready > 0 && !(pf.revents & POLLIN)) {
            usleep(20000); /* the slave not yet opened: POLLHUP */
        }
    }
    close(master);
    buf[len] = '\0';
    *rc = status;
    return buf;
}

/* On a terminal the progress is one line redrawn in place ("\r\033[K"
 * before it), the candidates' lines scroll above it; with -q there is
 * none. */
static void test_tune_progress_tty(void **state)
{
    (void)state;
    need_binary();
    char db[512];
    path_in(db, sizeof db, "tty.db");
    char *args[] = {"tune", EINSUM, "--shape", SHAPE, "--dtype", "f32",
                    "--budget", "4", "--db", db, NULL};
    int rc;
    char *tty = eintune_on_tty(&rc, args);
    assert_int_equal(rc, 0);
    if (!strstr(tty, "\r\033[Kcandidate 1/4, ") ||
        !strstr(tty, "\r\033[Kcandidate 4/4, ") ||
        !strstr(tty, "trying untransformed"))
        fail_msg("no progress line in place on the terminal:\n%s", tty);
    /* the progress is not also written as log lines */
    assert_null(strstr(tty, "INFO tune: candidate "));
    free(tty);
    char *quiet[] = {"tune", EINSUM, "--shape", SHAPE, "--dtype", "f32",
                     "--budget", "4", "--db", db, "-q", NULL};
    tty = eintune_on_tty(&rc, quiet);
    assert_int_equal(rc, 0);
    if (strstr(tty, "candidate") || strstr(tty, "\033[K") ||
        strstr(tty, "trying"))
        fail_msg("-q on a terminal:\n%s", tty);
    free(tty);
}

static void test_export(void **state)
{
    (void)state;
    need_binary();
    if (!td_suite_opencl("the exported kernel run by examples/export_demo.c"))
        skip();
    if (g_best_time == 0)
        skip();
    char k1[256], k2[256], k3[256];
    export_and_run("export1", EINSUM, SHAPE, k1, sizeof k1);
    export_and_run("export2", "ab,bc->ac", "a=16,b=8,c=12", k2, sizeof k2);
    export_and_run("export3", "jk,ij->ik", SHAPE, k3, sizeof k3);

    /* its own outputs are overwritten; a foreign file is not */
    char dir[512], src[1024];
    snprintf(dir, sizeof dir, "%s/export1/nested", g_dir);
    assert_int_equal(eintune("export4", NULL, "export", EINSUM, "--shape",
                             SHAPE, "--dtype", "f32", "--db", g_db, "-o", dir,
                             NULL),
                     0);
    snprintf(src, sizeof src, "%s/%s.cl", dir, k1);
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fputs("my own kernel\n", f);
    fclose(f);
    assert_int_equal(eintune("export5", NULL, "export", EINSUM, "--shape",
                             SHAPE, "--dtype", "f32", "--db", g_db, "-o", dir,
                             NULL),
                     2);
    char *s = slurp(src, NULL);
    assert_string_equal(s, "my own kernel\n");
    free(s);
    /* nothing known (--exact: no fallback): exit 1, nothing written */
    snprintf(dir, sizeof dir, "%s/export6", g_dir);
    assert_int_equal(eintune("export6", NULL, "export", EINSUM, "--shape",
                             "i=16,j=8,k=13", "--dtype", "f32", "--db", g_db,
                             "-o", dir, "--exact", NULL),
                     1);
    assert_int_equal(access(dir, F_OK), -1);
    /* flags */
    assert_int_equal(eintune("export7", NULL, "export", EINSUM, "--shape",
                             SHAPE, "--db", g_db, NULL),
                     2);
    assert_int_equal(eintune("export8", NULL, "export", EINSUM, "--shape",
                             SHAPE, "--db", g_db, "-o", dir, "--backend",
                             "metal", NULL),
                     2);
}

/* Compiles a program that includes header hdr (in dir) and writes the
 * string macro `macro` byte for byte to stdout (its sizeof, so a NUL
 * inside would show), and the length macro `len` (or -1) to stderr;
 * returns stdout, its length in *n. */
static char *print_string_macro(const char *tag, const char *dir,
                                const char *hdr, const char *macro,
                                const char *len, size_t *n)
{
    char prog[700], exe[700], inc[600], def[700], ctag[64];
    snprintf(prog, sizeof prog, "%s/%s.c", g_dir, tag);
    snprintf(exe, sizeof exe, "%s/%s.exe", g_dir, tag);
    snprintf(inc, sizeof inc, "-I%s", dir);
    snprintf(def, sizeof def, "-DHDR=\"%s\"", hdr);
    snprintf(ctag, sizeof ctag, "%s-cc", tag);
    FILE *f = fopen(prog, "w");
    assert_non_null(f);
    fprintf(f, "#include <stdio.h>\n#include HDR\n"
               "static const char s[] = %s;\n"
               "int main(void)\n{\n"
               "    fwrite(s, 1, sizeof s - 1, stdout);\n"
               "    fprintf(stderr, \"%%lld\", (long long)(%s));\n"
               "    return 0;\n}\n",
            macro, len);
    fclose(f);
    char *cc[] = {"/usr/bin/cc", "-std=c11", "-Wall", "-Wextra", "-Werror",
                  inc, def, prog, "-o", exe, NULL};
    int rc = spawn_wait(cc, ctag);
    if (rc != 0)
        fail_msg("cc %s: exit %d\n%s", prog, rc, tag_file(ctag, "err"));
    char *run[] = {exe, NULL};
    assert_int_equal(spawn_wait(run, tag), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/%s.out", g_dir, tag);
    return slurp(path, n);
}

/* export --embed: the header's <PREFIX>SOURCE is the .cl file's content
 * byte for byte, and export_demo.c built with -DET_EXPORT_EMBED runs the
 * kernel with no .cl file anywhere; without --embed there is no string.
 * The C string writer keeps every byte (quotes, backslashes, trigraphs,
 * control and high bytes, an octal escape before a digit). */
static void test_export_embed(void **state)
{
    (void)state;
    need_binary();
    if (!td_suite_opencl("the exported kernel run by examples/export_demo.c"))
        skip();
    if (g_best_time == 0)
        skip();
    char dir[512], plain[512];
    path_in(dir, sizeof dir, "embed");
    path_in(plain, sizeof plain, "embed-plain");
    cJSON *doc = NULL;
    assert_int_equal(eintune("embed1", &doc, "export", EINSUM, "--shape",
                             SHAPE, "--dtype", "f32", "--db", g_db, "-o",
                             dir, "--embed", "--json", "-", NULL),
                     0);
    assert_non_null(doc);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(doc, "embedded")));
    char kernel[256], prefix[256], src[1024], hdr[300];
    snprintf(kernel, sizeof kernel, "%s", str(doc, "kernel"));
    snprintf(prefix, sizeof prefix, "%s", str(doc, "prefix"));
    snprintf(src, sizeof src, "%s", str(doc, "source"));
    cJSON_Delete(doc);
    snprintf(hdr, sizeof hdr, "%s.h", kernel);
    size_t n_file = 0, n_str = 0;
    char *file = slurp(src, &n_file);
    assert_non_null(file);
    assert_true(n_file > 100);
    char macro[300], len[300];
    snprintf(macro, sizeof macro, "%sSOURCE", prefix);
    snprintf(len, sizeof len, "%sSOURCE_BYTES", prefix);
    char *got = print_string_macro("embed-print", dir, hdr, macro, len,
                                   &n_str);
    assert_non_null(got);
    if (n_str != n_file || memcmp(got, file, n_file) != 0)
        fail_msg("%s differs from %s (%zu and %zu bytes)", macro, src,
                 n_str, n_file);
    char *lenout = tag_file("embed-print", "err");
    assert_int_equal(atoll(lenout), (long long)n_file);
    free(lenout);
    free(got);
    free(file);

    /* the example from the header alone: the .cl file moved away */
    char away[1100];
    snprintf(away, sizeof away, "%s.away", src);
    assert_int_equal(rename(src, away), 0);
    char def[600], inc[600], exe[600];
    snprintf(def, sizeof def, "-DET_EXPORT_HEADER=\"%s\"", hdr);
    snprintf(inc, sizeof inc, "-I%s", dir);
    snprintf(exe, sizeof exe, "%s/embed-demo", g_dir);
    char *cc[] = {"/usr/bin/cc", "-std=c11", "-O1", "-Wall", "-Wextra",
                  "-Werror", inc, def, "-DET_EXPORT_EMBED",
                  "examples/export_demo.c", "-lOpenCL", "-lm", "-o", exe,
                  NULL};
    int rc = spawn_wait(cc, "embed-cc");
    if (rc != 0)
        fail_msg("cc export_demo.c -DET_EXPORT_EMBED: exit %d\n%s", rc,
                 tag_file("embed-cc", "err"));
    char *run[] = {exe, "-", "7", NULL};
    rc = spawn_wait(run, "embed-demo");
    char *out = tag_file("embed-demo", "out");
    if (rc != 0)
        fail_msg("export_demo -: exit %d\n%s%s", rc, out,
                 tag_file("embed-demo", "err"));
    assert_non_null(strstr(out, ": ok"));
    free(out);
    assert_int_equal(rename(away, src), 0);

    /* without --embed: no string in the header */
    assert_int_equal(eintune("embed2", NULL, "export", EINSUM, "--shape",
                             SHAPE, "--dtype", "f32", "--db", g_db, "-o",
                             plain, NULL),
                     0);
    char ph[1024];
    snprintf(ph, sizeof ph, "%s/%s", plain, hdr);
    char *h = slurp(ph, NULL);
    assert_non_null(h);
    assert_null(strstr(h, "SOURCE_BYTES"));
    assert_null(strstr(h, "SOURCE \\"));
    free(h);

    /* the writer itself, on bytes no kernel has */
    static const char nasty[] = "\"q\" \\b\\\\ ?\?= ?\?/ ?\t\r\x01" "7 \x7f\xff"
                                "\xc3\xa9\n\n  last line, no newline ?";
    et_sbuf b;
    et_sbuf_init(&b);
    et_sbuf_puts(&b, "#define NASTY \\\n");
    api_c_string(&b, nasty);
    et_sbuf_puts(&b, "\n");
    char *text = et_sbuf_take(&b);
    char nh[600];
    snprintf(nh, sizeof nh, "%s/nasty.h", dir);
    FILE *f = fopen(nh, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(text);
    got = print_string_macro("embed-nasty", dir, "nasty.h", "NASTY", "-1",
                             &n_str);
    assert_non_null(got);
    assert_int_equal(n_str, sizeof nasty - 1);
    assert_memory_equal(got, nasty, sizeof nasty - 1);
    free(got);
}

/* The kernels of one shape in two dtypes (both untransformed, so the loop
 * sizes alone would name them alike) exported into one directory: two
 * names, guards and macro prefixes, and one C file includes both headers.
 * A kernel exported under a name another kernel's files hold is refused
 * (exit 2, naming the file) and replaces them with --force; the same
 * kernel again is fine; a --name that is no C identifier is exit 2.
 * `make -C examples` builds the demo where O says. */
static void test_export_dtypes(void **state)
{
    (void)state;
    need_binary();
    if (!td_suite_opencl("the exported kernel run by examples/export_demo.c"))
        skip();
    char db[512], dir[512];
    path_in(db, sizeof db, "dtypes.db");
    path_in(dir, sizeof dir, "dtypes");
    const char *dts[2] = {"f32", "f64"};
    char kernel[2][256], prefix[2][256], src[2][1024], hdr[2][1024];
    for (int t = 0; t < 2; t++) {
        char tag[32];
        snprintf(tag, sizeof tag, "dt-tune-%s", dts[t]);
        assert_int_equal(eintune(tag, NULL, "tune", EINSUM, "--shape", SHAPE,
                                 "--dtype", dts[t], "--budget", "1", "--db",
                                 db, "-q", NULL),
                         0);
        snprintf(tag, sizeof tag, "dt-export-%s", dts[t]);
        cJSON *doc = NULL;
        assert_int_equal(eintune(tag, &doc, "export", EINSUM, "--shape",
                                 SHAPE, "--dtype", dts[t], "--db", db, "-o",
                                 dir, "--json", "-", NULL),
                         0);
        assert_non_null(doc);
        snprintf(kernel[t], sizeof kernel[t], "%s", str(doc, "kernel"));
        snprintf(prefix[t], sizeof prefix[t], "%s", str(doc, "prefix"));
        snprintf(src[t], sizeof src[t], "%s", str(doc, "source"));
        snprintf(hdr[t], sizeof hdr[t], "%s", str(doc, "header"));
        assert_string_equal(str(doc, "opts"), "");
        cJSON_Delete(doc);
    }
    /* one shape: the same loop sizes, then the dtypes */
    assert_string_equal(kernel[0], "r_16_12_8_f32");
    assert_string_equal(kernel[1], "r_16_12_8_f64");
    assert_string_equal(prefix[0], "R_16_12_8_F32_");
    assert_string_equal(prefix[1], "R_16_12_8_F64_");
    char *h0 = slurp(hdr[0], NULL), *h1 = slurp(hdr[1], NULL);
    assert_non_null(h0);
    assert_non_null(h1);
    assert_non_null(strstr(h0, "#ifndef ET_EXPORT_R_16_12_8_F32_H\n"));
    assert_non_null(strstr(h1, "#ifndef ET_EXPORT_R_16_12_8_F64_H\n"));
    assert_null(strstr(h0, "F64"));
    assert_null(strstr(h1, "F32"));
    free(h0);
    free(h1);
    char *s1 = slurp(src[1], NULL);
    assert_non_null(strstr(s1, "void r_16_12_8_f64("));
    free(s1);

    /* both headers in one program */
    char c_file[600], exe[600], inc[600];
    snprintf(c_file, sizeof c_file, "%s/both.c", g_dir);
    snprintf(exe, sizeof exe, "%s/both", g_dir);
    snprintf(inc, sizeof inc, "-I%s", dir);
    FILE *f = fopen(c_file, "w");
    assert_non_null(f);
    fprintf(f,
            "#include \"%s.h\"\n#include \"%s.h\"\n"
            "#include \"%s.h\"\n" /* twice: the guard */
            "#include <stdio.h>\n"
            "int main(void)\n{\n"
            "    static const long long g0[] = %sGLOBAL_SIZE;\n"
            "    static const long long g1[] = %sGLOBAL_SIZE;\n"
            "    printf(\"%%s %%s %%d %%d %%lld\\n\", %sKERNEL_NAME, "
            "%sKERNEL_NAME,\n           (int)%sARG0_ELEM_SIZE, "
            "(int)%sARG0_ELEM_SIZE, g0[0] * g1[1]);\n"
            "    return 0;\n}\n",
            kernel[0], kernel[1], kernel[0], prefix[0], prefix[1], prefix[0],
            prefix[1], prefix[0], prefix[1]);
    fclose(f);
    char *cc[] = {"/usr/bin/cc", "-std=c11", "-Wall", "-Wextra", "-Werror",
                  inc, c_file, "-o", exe, NULL};
    int rc = spawn_wait(cc, "dt-cc");
    if (rc != 0) {
        char *e = tag_file("dt-cc", "err");
        fail_msg("cc both.c: exit %d\n%s", rc, e);
    }
    char *run[] = {exe, NULL};
    assert_int_equal(spawn_wait(run, "dt-both"), 0);
    char *out = tag_file("dt-both", "out");
    char want[600];
    snprintf(want, sizeof want, "%s %s 4 8 ", kernel[0], kernel[1]);
    if (strncmp(out, want, strlen(want)) != 0)
        fail_msg("both.c printed '%s', want '%s...'", out, want);
    free(out);

    /* the f64 kernel under the f32 kernel's name: refused, untouched */
    char *before = slurp(src[0], NULL);
    assert_int_equal(eintune("dt-clash", NULL, "export", EINSUM, "--shape",
                             SHAPE, "--dtype", "f64", "--db", db, "-o", dir,
                             "--name", kernel[0], NULL),
                     2);
    char *err = tag_file("dt-clash", "err");
    if (!strstr(err, src[0]) || !strstr(err, "another exported kernel") ||
        !strstr(err, "--force"))
        fail_msg("clash message:\n%s", err);
    free(err);
    char *after = slurp(src[0], NULL);
    assert_string_equal(after, before);
    free(after);
    free(before);
    /* forced: replaced by the f64 kernel */
    cJSON *doc = NULL;
    assert_int_equal(eintune("dt-force", &doc, "export", EINSUM, "--shape",
                             SHAPE, "--dtype", "f64", "--db", db, "-o", dir,
                             "--name", kernel[0], "--force", "--json", "-",
                             NULL),
                     0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(doc, "replaced")));
    cJSON_Delete(doc);
    after = slurp(src[0], NULL);
    assert_non_null(strstr(after, "(f64,f64 -> f64"));
    free(after);
    /* the same kernel again, without --force */
    assert_int_equal(eintune("dt-same", &doc, "export", EINSUM, "--shape",
                             SHAPE, "--dtype", "f64", "--db", db, "-o", dir,
                             "--json", "-", NULL),
                     0);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(doc, "replaced")));
    cJSON_Delete(doc);
    /* names that are no C identifier: exit 2 before anything runs */
    static const char *const bad[] = {"1abc", "my-kernel", "a b", "int"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char tag[32];
        snprintf(tag, sizeof tag, "dt-bad%zu", i);
        assert_int_equal(eintune(tag, NULL, "export", EINSUM, "--shape",
                                 SHAPE, "--dtype", "f32", "--db", db, "-o",
                                 dir, "--name", bad[i], NULL),
                         2);
        err = tag_file(tag, "err");
        if (!strstr(err, "--name"))
            fail_msg("--name %s:\n%s", bad[i], err);
        free(err);
    }

    /* make -C examples, as examples/README.md says, into O */
    char hv[1200], ov[700], demo[700];
    snprintf(hv, sizeof hv, "HEADER=%s", hdr[1]);
    snprintf(ov, sizeof ov, "O=%s/demo-out", g_dir);
    snprintf(demo, sizeof demo, "%s/demo-out/export_demo", g_dir);
    char *mk[] = {"/usr/bin/make", "-s", "-C", "examples", "export_demo", hv,
                  ov, NULL};
    rc = spawn_wait(mk, "dt-make");
    if (rc != 0) {
        char *e = tag_file("dt-make", "err");
        fail_msg("make -C examples: exit %d\n%s", rc, e);
    }
    assert_int_equal(access("examples/export_demo", F_OK), -1);
    char *drun[] = {demo, src[1], "3", NULL};
    assert_int_equal(spawn_wait(drun, "dt-demo"), 0);
    out = tag_file("dt-demo", "out");
    assert_non_null(strstr(out, ": ok"));
    free(out);
}

/* ---- (4) run --best ------------------------------------------------------ */

static void write_npy(const char *path, int64_t d0, int64_t d1, float *data)
{
    et_array a;
    memset(&a, 0, sizeof a);
    a.dtype = ET_F32;
    a.rank = 2;
    a.dim[0] = d0;
    a.dim[1] = d1;
    a.data = data;
    et_diag d;
    memset(&d, 0, sizeof d);
    assert_int_equal(et_npy_write(path, &a, &d), ET_OK);
}

static void test_run_best(void **state)
{
    (void)state;
    need_binary();
    if (g_best_time == 0)
        skip();
    enum { I = 16, J = 8, K = 12 };
    static float A[I * J], B[J * K];
    srand(11);
    for (int x = 0; x < I * J; x++)
        A[x] = (float)(2.0 * rand() / RAND_MAX - 1.0);
    for (int x = 0; x < J * K; x++)
        B[x] = (float)(2.0 * rand() / RAND_MAX - 1.0);
    char pa[512], pb[512], pc[512];
    path_in(pa, sizeof pa, "A.npy");
    path_in(pb, sizeof pb, "B.npy");
    path_in(pc, sizeof pc, "C.npy");
    write_npy(pa, I, J, A);
    write_npy(pb, J, K, B);

    /* the reordered einsum: operands B then A */
    cJSON *doc = NULL;
    assert_int_equal(eintune("run1", &doc, "run", "jk,ij->ik", "-i", pb,
                             "-i", pa, "-o", pc, "--best", "--db", g_db,
                             "--json", "-", NULL),
                     0);
    assert_non_null(doc);
    char want[ET_DB_OPTS_LEN];
    snprintf(want, sizeof want, "%s", g_best_opts);
    swap_prefetch(want);
    assert_string_equal(str(doc, "opts"), want);
    cJSON_Delete(doc);
    et_array c;
    et_diag d;
    memset(&c, 0, sizeof c);
    memset(&d, 0, sizeof d);
    assert_int_equal(et_npy_read(pc, &c, &d), ET_OK);
    assert_int_equal(c.rank, 2);
    assert_int_equal(c.dim[0], I);
    assert_int_equal(c.dim[1], K);
    const float *got = c.data;
    for (int i = 0; i < I; i++)
        for (int k = 0; k < K; k++) {
            long double ref = 0, mag = 0;
            for (int j = 0; j < J; j++) {
                long double t = (long double)A[i * J + j] * B[j * K + k];
                ref += t;
                mag += fabsl(t);
            }
            double bound = (J + 1) * ldexp(1.0, -24) * (double)mag * 1.01;
            if (fabs(got[i * K + k] - (double)ref) > bound)
                fail_msg("C[%d,%d] = %.9g, reference %.9Lg", i, k,
                         got[i * K + k], ref);
        }
    et_array_free(&c);

    /* --best with --opts: bad flags; with nothing known: exit 1 */
    assert_int_equal(eintune("run2", NULL, "run", EINSUM, "-i", pa, "-i", pb,
                             "-o", pc, "--best", "--opts", "LOCAL(i,2)",
                             "--db", g_db, NULL),
                     2);
    char empty[512];
    path_in(empty, sizeof empty, "empty.db");
    assert_int_equal(eintune("run3", NULL, "run", EINSUM, "-i", pa, "-i", pb,
                             "-o", pc, "--best", "--db", empty, NULL),
                     1);
    char *err = tag_file("run3", "err");
    assert_non_null(strstr(err, "no verified kernel known"));
    free(err);
}

/* Peaks of the test device with every DRAM bandwidth figure gbs and no
 * cache levels, as `eintune peaks` would have measured them. */
static et_peaks planted_peaks(et_device *dev, double gbs)
{
    char path[512];
    path_in(path, sizeof path, "planted.json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"gflops\": {\"f32\": 100, \"f64\": 50, \"f16\": 100}, "
               "\"bandwidth_gbs\": %g}\n", gbs);
    fclose(f);
    et_peaks_get_opts o;
    memset(&o, 0, sizeof o);
    o.peaks_file = path;
    et_peaks p;
    et_error err = {{0}};
    if (et_peaks_get(dev, &o, &p, &err) != ET_OK)
        fail_msg("et_peaks_get: %s", err.msg);
    p.source = ET_PEAKS_MEASURED;
    p.bench_version = ET_PEAKS_BENCH_VERSION;
    return p;
}

/* `eintune run --opts .. --time --db F` takes its roofline from the peaks
 * F keeps (where `eintune peaks --db F` stores them); without --db from
 * the cache file. Planted: 7 GB/s in the database, 29 in the cache file. */
static void test_run_peaks_from_db(void **state)
{
    (void)state;
    need_binary();
    et_device *dev = NULL;
    et_error err = {{0}};
    if (et_device_open(td_device(), &dev, &err) != ET_OK) {
        fprintf(stderr, "  no device %s (%s): skipped\n", td_spec(), err.msg);
        skip();
    }
    char dbp[512];
    path_in(dbp, sizeof dbp, "peaks.db");
    et_db *db = NULL;
    assert_int_equal(et_db_open(dbp, &db, &err), ET_OK);
    int64_t id = 0;
    assert_int_equal(et_db_device_id(db, &dev->info, &id, &err), ET_OK);
    et_peaks in_db = planted_peaks(dev, 7);
    cJSON *j = et_peaks_to_json(&in_db);
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    assert_int_equal(et_db_peaks_store(db, id, text, 0, &err), ET_OK);
    cJSON_free(text);
    et_db_close(db);
    et_peaks in_file = planted_peaks(dev, 29);
    assert_int_equal(et_peaks_store(&in_file, &err), ET_OK);
    et_device_close(dev);

    enum { I = 16, J = 8, K = 12 };
    static float A[I * J], B[J * K];
    for (int x = 0; x < I * J; x++)
        A[x] = (float)(x % 7) - 3;
    for (int x = 0; x < J * K; x++)
        B[x] = (float)(x % 5) - 2;
    char pa[512], pb[512], pc[512];
    path_in(pa, sizeof pa, "PA.npy");
    path_in(pb, sizeof pb, "PB.npy");
    path_in(pc, sizeof pc, "PC.npy");
    write_npy(pa, I, J, A);
    write_npy(pb, J, K, B);
    /* the override file of setup() would stand for both */
    char *keep = strdup(getenv("ET_PEAKS_FILE"));
    unsetenv("ET_PEAKS_FILE");
    static const struct {
        const char *tag;
        int with_db;
        double gbs;
    } want[] = {{"pk_db", 1, 7}, {"pk_file", 0, 29}};
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        cJSON *doc = NULL;
        int rc = want[w].with_db
                     ? eintune(want[w].tag, &doc, "run", "ij,jk->ik", "-i",
                               pa, "-i", pb, "-o", pc, "--opts", "UPCAST(k,4)",
                               "--time", "--db", dbp, "--json", "-", NULL)
                     : eintune(want[w].tag, &doc, "run", "ij,jk->ik", "-i",
                               pa, "-i", pb, "-o", pc, "--opts", "UPCAST(k,4)",
                               "--time", "--json", "-", NULL);
        assert_int_equal(rc, 0);
        assert_non_null(doc);
        const cJSON *m = cJSON_GetObjectItem(doc, "roofline_memory");
        assert_non_null(m);
        double got = num(m, "read_gbs");
        if (fabs(got - want[w].gbs) > 1e-9)
            fail_msg("%s: roofline read %.6g GB/s, planted %.6g",
                     want[w].tag, got, want[w].gbs);
        cJSON_Delete(doc);
    }
    setenv("ET_PEAKS_FILE", keep, 1);
    free(keep);
}

/* ---- (5) a corrupt --db -------------------------------------------------- */

static void test_corrupt_db(void **state)
{
    (void)state;
    need_binary();
    char bad[512], pa[512], pb[512], pc[512], dir[512];
    path_in(bad, sizeof bad, "corrupt.db");
    path_in(pa, sizeof pa, "A.npy");
    path_in(pb, sizeof pb, "B.npy");
    path_in(pc, sizeof pc, "C-corrupt.npy");
    path_in(dir, sizeof dir, "export-corrupt");
    /* an SQLite header followed by garbage */
    unsigned char junk[8192];
    memcpy(junk, "SQLite format 3", 16);
    for (size_t i = 16; i < sizeof junk; i++)
        junk[i] = (unsigned char)(i * 131 + 7);
    FILE *f = fopen(bad, "wb");
    assert_non_null(f);
    fwrite(junk, 1, sizeof junk, f);
    fclose(f);
    if (access(pa, F_OK) != 0) {
        static float A[16 * 8], B[8 * 12];
        write_npy(pa, 16, 8, A);
        write_npy(pb, 8, 12, B);
    }

    assert_int_equal(eintune("corrupt1", NULL, "best", EINSUM, "--shape",
                             SHAPE, "--dtype", "f32", "--db", bad, NULL),
                     2);
    assert_int_equal(eintune("corrupt2", NULL, "export", EINSUM, "--shape",
                             SHAPE, "--dtype", "f32", "--db", bad, "-o", dir,
                             NULL),
                     2);
    assert_int_equal(eintune("corrupt3", NULL, "run", EINSUM, "-i", pa, "-i",
                             pb, "-o", pc, "--best", "--db", bad, NULL),
                     2);
    assert_int_equal(eintune("corrupt4", NULL, "tune", EINSUM, "--shape",
                             SHAPE, "--dtype", "f32", "--budget", "2", "--db",
                             bad, NULL),
                     2);
    assert_int_equal(eintune("corrupt5", NULL, "peaks", "--db", bad, NULL),
                     2);
    size_t n = 0;
    char *after = slurp(bad, &n);
    assert_int_equal(n, sizeof junk);
    assert_memory_equal(after, junk, sizeof junk);
    free(after);
    char side[600];
    snprintf(side, sizeof side, "%s-wal", bad);
    assert_int_equal(access(side, F_OK), -1);
    assert_int_equal(access(dir, F_OK), -1);
    assert_int_equal(access(pc, F_OK), -1);
    char *err = tag_file("corrupt1", "err");
    assert_non_null(strstr(err, bad));
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repeat_cached),
        cmocka_unit_test(test_resume_after_kill),
        cmocka_unit_test(test_best),
        cmocka_unit_test(test_tune_log),
        cmocka_unit_test(test_tune_progress_tty),
        cmocka_unit_test(test_export),
        cmocka_unit_test(test_export_dtypes),
        cmocka_unit_test(test_export_embed),
        cmocka_unit_test(test_run_best),
        cmocka_unit_test(test_run_peaks_from_db),
        cmocka_unit_test(test_corrupt_db),
    };
    return cmocka_run_group_tests_name("db_cli", tests, setup, teardown);
}

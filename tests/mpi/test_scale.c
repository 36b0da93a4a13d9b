/*
 * test_scale.c - `eintune tune` spread over the ranks of an MPI job
 * (`make test-mpi`, not part of `make test`): mpirun -n 3 on the PoCL
 * device answers every candidate once (the database and the JSON agree,
 * no trial twice, duplicates answered from their first), both
 * evaluating ranks did work, each bound to its own cores, the best is
 * verified and the final race ran on one rank; a device worker
 * of one rank that stops answering (SIGSTOP, as a hung kernel or driver)
 * costs that candidate a timeout and the run finishes; a rank whose
 * device does not exist stops the whole run with exit status 2 (bad
 * input) and a message that names the rank. A campaign of 6 problems
 * under mpirun -n 3 and without MPI answers the same set of trials
 * (einsum, sizes, dtypes, opts) in the database, both ranks tune problems,
 * and the campaign run again under mpirun answers every problem from the
 * database.
 *
 * mpirun runs as root here with --allow-run-as-root and, on a machine with
 * fewer cores than ranks, --oversubscribe; $ET_MPIRUN overrides the
 * launcher command.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[64];
static char bin[512];

static const char *mpirun(void)
{
    const char *m = getenv("ET_MPIRUN");
    return m && *m ? m : "mpirun --allow-run-as-root --oversubscribe";
}

/* The file a command sends its standard error to ("2> file"), or "". */
static void err_file(const char *cmd, char *file, size_t n)
{
    const char *e = strstr(cmd, "2> ");
    size_t k = 0;
    if (e)
        for (e += 3; *e && *e != ' ' && k + 1 < n; e++)
            file[k++] = *e;
    file[k] = '\0';
}

/* Does the file contain the text? */
static bool file_has(const char *file, const char *text)
{
    FILE *f = fopen(file, "r");
    char line[1024];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, text) != NULL;
    if (f)
        fclose(f);
    return found;
}

/* Runs a shell command once; its exit status. */
static int run_once(const char *cmd)
{
    print_message("$ %s\n", cmd);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

/*
 * Runs a shell command; its exit status. When it fails and sent its
 * standard error to a file, the end of that file is printed, so that a
 * failure says why. LeakSanitizer's tracer sometimes crashes while a
 * rank exits and the OpenCL driver's threads wind down ("LeakSanitizer
 * has encountered a fatal error", exit status 1): a tool failure that
 * tests/run.sh runs again for a whole program, and that here only the
 * rank's standard error shows. Such a command is run once more, after
 * the shell command reset (NULL: none) has removed what it wrote.
 */
static int run_reset(const char *cmd, const char *reset)
{
    char file[512], show[600];
    int rc = run_once(cmd);
    err_file(cmd, file, sizeof file);
    if (rc == 0 || !file[0])
        return rc;
    if (file_has(file, "LeakSanitizer has encountered a fatal error")) {
        print_message("note: LeakSanitizer's tracer crashed in a rank; "
                      "running the command again\n");
        if (reset && run_once(reset) != 0)
            return rc;
        rc = run_once(cmd);
        if (rc == 0)
            return rc;
    }
    print_message("exit status %d; the end of %s:\n", rc, file);
    snprintf(show, sizeof show, "tail -n 40 %s >&2", file);
    if (system(show) != 0)
        print_message("(cannot show %s)\n", file);
    return rc;
}

static int run(const char *cmd)
{
    return run_reset(cmd, NULL);
}

static char *slurp(const char *file)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

static int64_t count(const char *db, const char *sql)
{
    sqlite3 *c;
    assert_int_equal(sqlite3_open(db, &c), SQLITE_OK);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(c));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(c);
    return n;
}

/* Every candidate of the JSON is one trial of the database and the other
 * way round, but for proposals of a kernel already answered (duplicate_of
 * names an earlier candidate; not charged to the budget, not a trial of
 * their own); returns the JSON (caller frees). */
static cJSON *check_agree(const char *json_file, const char *db, int budget)
{
    char *text = slurp(json_file);
    assert_non_null(text);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    assert_non_null(doc);
    cJSON *cands = cJSON_GetObjectItem(doc, "candidates");
    int n = cJSON_GetArraySize(cands), n_dup = 0;
    sqlite3 *c;
    assert_int_equal(sqlite3_open(db, &c), SQLITE_OK);
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_GetArrayItem(cands, i);
        const char *opts = cJSON_GetObjectItem(e, "opts")->valuestring;
        const char *status = cJSON_GetObjectItem(e, "status")->valuestring;
        cJSON *dup = cJSON_GetObjectItem(e, "duplicate_of");
        assert_non_null(dup);
        assert_non_null(cJSON_GetObjectItem(e, "elapsed_s"));
        if (cJSON_IsNumber(dup)) {
            /* answered from its first, which is no duplicate itself */
            n_dup++;
            cJSON *f = cJSON_GetArrayItem(cands, dup->valueint);
            assert_non_null(f);
            assert_true(cJSON_IsNull(cJSON_GetObjectItem(f, "duplicate_of")));
            assert_string_equal(
                cJSON_GetObjectItem(f, "status")->valuestring, status);
            continue;
        }
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(c, "SELECT outcome FROM trials "
                                               "WHERE opts = ?", -1, &st,
                                            NULL), SQLITE_OK);
        sqlite3_bind_text(st, 1, opts, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_ROW)
            fail_msg("candidate '%s' is not in the database", opts);
        assert_string_equal((const char *)sqlite3_column_text(st, 0),
                            status);
        assert_int_not_equal(sqlite3_step(st), SQLITE_ROW);
        sqlite3_finalize(st);
        /* the others were evaluated on a rank */
        if (strcmp(status, "refused") != 0)
            assert_true(cJSON_GetObjectItem(e, "rank")->valueint >= 1);
    }
    sqlite3_close(c);
    assert_int_equal(n - n_dup, budget);
    assert_int_equal(cJSON_GetObjectItem(doc, "duplicates")->valueint, n_dup);
    assert_int_equal(count(db, "SELECT count(*) FROM trials"), budget);
    assert_int_equal(count(db, "SELECT count(DISTINCT opts) FROM trials"),
                     budget);
    return doc;
}

static void test_three_ranks(void **state)
{
    (void)state;
    char cmd[2048], db[128], json[128];
    snprintf(db, sizeof db, "%s/t.db", dir);
    snprintf(json, sizeof json, "%s/t.json", dir);
    snprintf(cmd, sizeof cmd,
             "%s -n 3 %s tune 'xik,kj->xij' --shape x=256,i=16,k=16,j=16 "
             "--dtype f32 --budget 24 --db %s --json %s > %s/t.out "
             "2> %s/t.err", mpirun(), bin, db, json, dir, dir);
    char reset[640];
    snprintf(reset, sizeof reset, "rm -f %s %s-wal %s-shm %s", db, db, db,
             json);
    assert_int_equal(run_reset(cmd, reset), 0);
    cJSON *doc = check_agree(json, db, 24);
    /* both evaluating ranks worked, each on cores of its own */
    cJSON *ranks = cJSON_GetObjectItem(doc, "ranks");
    assert_int_equal(cJSON_GetArraySize(ranks), 3);
    const char *cpus1 = NULL;
    for (int r = 1; r < 3; r++) {
        cJSON *e = cJSON_GetArrayItem(ranks, r);
        assert_true(cJSON_GetObjectItem(e, "evaluations")->valueint > 0);
        const char *cpus = cJSON_GetObjectItem(e, "cpus")->valuestring;
        assert_true(cpus[0] != '\0');
        if (r == 1)
            cpus1 = cpus;
        else if (sysconf(_SC_NPROCESSORS_ONLN) >= 2)
            assert_string_not_equal(cpus1, cpus);
        assert_non_null(cJSON_GetObjectItem(e, "device")->valuestring);
    }
    /* the best is verified; the final race ran on one rank and set the
     * best's figure, and rank 0 recorded it */
    cJSON *best = cJSON_GetObjectItem(doc, "best");
    assert_true(cJSON_IsObject(best));
    cJSON *ver = cJSON_GetObjectItem(best, "verified");
    assert_int_equal(cJSON_GetObjectItem(ver, "trials")->valueint, 3);
    assert_null(cJSON_GetObjectItem(best, "retimed"));
    cJSON *race = cJSON_GetObjectItem(doc, "race");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(race, "ran")));
    int race_rank = cJSON_GetObjectItem(race, "rank")->valueint;
    assert_true(race_rank >= 1 && race_rank <= 2);
    int chosen = cJSON_GetObjectItem(race, "chosen")->valueint;
    cJSON *kern = cJSON_GetArrayItem(cJSON_GetObjectItem(race, "kernels"),
                                     chosen);
    assert_true(cJSON_GetObjectItem(kern, "time_s")->valuedouble ==
                cJSON_GetObjectItem(best, "time_s")->valuedouble);
    assert_int_equal(count(db, "SELECT count(*) FROM races"), 1);
    assert_int_equal(count(db, "SELECT count(*) FROM race_entries"),
                     cJSON_GetArraySize(cJSON_GetObjectItem(race,
                                                            "kernels")));
    /* rank 0 waited without spinning: its CPU time is a small part of
     * the wall time (a busy-polling MPI_Recv would take all of it) */
    cJSON *sc = cJSON_GetObjectItem(doc, "scale");
    double cpu = cJSON_GetObjectItem(sc, "cpu_s")->valuedouble;
    double wall = cJSON_GetObjectItem(sc, "wall_s")->valuedouble;
    print_message("rank 0: CPU %.2f s of %.2f s\n", cpu, wall);
    assert_true(cpu < 0.5 * wall);
    cJSON_Delete(doc);
    /* only rank 0 wrote stdout: one report */
    char out[128];
    snprintf(out, sizeof out, "%s/t.out", dir);
    char *text = slurp(out);
    assert_non_null(text);
    assert_non_null(strstr(text, "einsum "));
    assert_null(strstr(strstr(text, "einsum ") + 1, "\neinsum "));
    free(text);
}

/* The pid of a device worker started by a rank (an eintune-worker whose
 * parent is an eintune process), 0 when none yet. */
static int find_worker(void)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    int found = 0;
    while (d && !found && (de = readdir(d))) {
        char p[300], buf[512];
        snprintf(p, sizeof p, "/proc/%s/cmdline", de->d_name);
        FILE *f = fopen(p, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        /* bin is DIR/eintune, the worker DIR/eintune-worker */
        if (strstr(buf, "eintune-worker") &&
            strncmp(buf, bin, strlen(bin)) == 0)
            found = atoi(de->d_name);
    }
    if (d)
        closedir(d);
    return found;
}

static void test_hung_worker(void **state)
{
    (void)state;
    char cmd[2048], db[128], json[128];
    snprintf(db, sizeof db, "%s/h.db", dir);
    snprintf(json, sizeof json, "%s/h.json", dir);
    snprintf(cmd, sizeof cmd,
             "%s -n 3 %s tune 'xik,kj->xij' --shape x=512,i=16,k=32,j=16 "
             "--dtype f32 --budget 40 --db %s --json %s > %s/h.out "
             "2> %s/h.err", mpirun(), bin, db, json, dir, dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(run(cmd));
    /* once the search is under way (rank 0 logs its candidates), one
     * rank's device worker stops answering */
    char err_file[128];
    snprintf(err_file, sizeof err_file, "%s/h.err", dir);
    int tried = 0;
    for (int i = 0; i < 6000 && tried < 6; i++) {
        usleep(10000);
        char *text = slurp(err_file);
        tried = 0;
        for (const char *p = text; p && (p = strstr(p, "INFO tune: trying"));
             p++)
            tried++;
        free(text);
    }
    assert_true(tried >= 6);
    int w = find_worker();
    assert_true(w > 0);
    print_message("stopping device worker %d after %d candidates\n", w,
                  tried);
    kill(w, SIGSTOP);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    cJSON *doc = check_agree(json, db, 40);
    cJSON *fails = cJSON_GetObjectItem(doc, "failures");
    cJSON *to = cJSON_GetObjectItem(fails, "timeout");
    assert_non_null(to);
    assert_true(to->valueint >= 1);
    cJSON_Delete(doc);
}

static void test_rank_without_device(void **state)
{
    (void)state;
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s -n 3 %s tune 'ij->i' --shape i=64,j=64 --dtype f32 "
             "--budget 4 --device opencl:0,opencl:77 --db %s/x.db "
             "> %s/x.out 2> %s/x.err", mpirun(), bin, dir, dir, dir);
    int rc = run(cmd);
    assert_int_equal(rc, 2);
    char err[128];
    snprintf(err, sizeof err, "%s/x.err", dir);
    char *text = slurp(err);
    assert_non_null(text);
    print_message("%s", text);
    assert_non_null(strstr(text, "rank 2"));
    assert_non_null(strstr(text, "opencl:77"));
    free(text);
}


/* The sorted (einsum canonical form, opts) of every trial, one a line. */
static char *trial_set(const char *db)
{
    sqlite3 *c;
    assert_int_equal(sqlite3_open(db, &c), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(c, "SELECT e.canonical, t.opts FROM "
                                           "trials t JOIN einsums e ON e.id "
                                           "= t.einsum_id ORDER BY 1, 2",
                                        -1, &st, NULL), SQLITE_OK);
    size_t cap = 1 << 16, n = 0;
    char *out = calloc(cap, 1);
    assert_non_null(out);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int k = snprintf(out + n, cap - n, "%s | %s\n",
                         (const char *)sqlite3_column_text(st, 0),
                         (const char *)sqlite3_column_text(st, 1));
        assert_true(k > 0 && (size_t)k < cap - n);
        n += (size_t)k;
    }
    sqlite3_finalize(st);
    sqlite3_close(c);
    return out;
}

static const char six[] =
    "- {einsum: \"ab,bc->ac\", shape: \"a=16,b=16,c=16\", dtype: f32,\n"
    "   space: tiled.yaml, budget: 3, search: grid}\n"
    "- {einsum: \"ij->i\", shape: \"i=64,j=32\", dtype: f32, budget: 3,\n"
    "   search: random, seed: 1}\n"
    "- {einsum: \"ij->j\", shape: \"i=32,j=64\", dtype: f32, budget: 3,\n"
    "   search: random, seed: 2}\n"
    "- {einsum: \"xik,kj->xij\", shape: \"x=8,i=8,k=8,j=8\", dtype: f32,\n"
    "   budget: 3, race: 2}\n"
    "- {einsum: \"i,i->\", shape: \"i=128\", budget: 3, search: random,\n"
    "   seed: 4}\n"
    "- {einsum: \"ij,j->i\", shape: \"i=32,j=32\", dtype: f32, budget: 3}\n";

static const char tiled[] =
    "name: tiled\n"
    "einsum: \"ik,kj->ij\"\n"
    "params:\n"
    "  tile_j: {pow2: [1, 8]}\n"
    "  unroll_k: {values: [1, 2]}\n"
    "transforms:\n"
    "  - {op: UPCAST, axis: j, amt: tile_j, when: tile_j > 1}\n"
    "  - {op: UNROLL, axis: k, amt: unroll_k, when: unroll_k > 1}\n";

static void test_campaign(void **state)
{
    (void)state;
    char file[128], space[128], one[128], many[128], json[128];
    char cmd[2048];
    snprintf(file, sizeof file, "%s/six.yaml", dir);
    snprintf(space, sizeof space, "%s/tiled.yaml", dir);
    snprintf(one, sizeof one, "%s/one.db", dir);
    snprintf(many, sizeof many, "%s/many.db", dir);
    snprintf(json, sizeof json, "%s/many.json", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs(six, f);
    fclose(f);
    f = fopen(space, "w");
    assert_non_null(f);
    fputs(tiled, f);
    fclose(f);
    /* without MPI, then over 3 ranks */
    snprintf(cmd, sizeof cmd, "%s campaign %s --db %s > %s/one.out 2> "
             "%s/one.err", bin, file, one, dir, dir);
    assert_int_equal(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s -n 3 %s campaign %s --db %s --json %s > "
             "%s/many.out 2> %s/many.err", mpirun(), bin, file, many, json,
             dir, dir);
    char reset[640];
    snprintf(reset, sizeof reset, "rm -f %s %s-wal %s-shm %s", many, many,
             many, json);
    assert_int_equal(run_reset(cmd, reset), 0);
    char *a = trial_set(one), *b = trial_set(many);
    print_message("%d trials in each\n",
                  (int)count(one, "SELECT count(*) FROM trials"));
    assert_true(a[0] != '\0');
    assert_string_equal(a, b);
    free(a);
    free(b);
    assert_int_equal(count(one, "SELECT count(*) FROM campaign_results"), 6);
    assert_int_equal(count(many, "SELECT count(*) FROM campaign_results"),
                     6);
    assert_int_equal(count(many, "SELECT count(*) FROM races"), 6);
    /* rank 0's summary: every problem tuned, by both ranks */
    char *text = slurp(json);
    assert_non_null(text);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    assert_non_null(doc);
    cJSON *tot = cJSON_GetObjectItem(doc, "totals");
    assert_int_equal(cJSON_GetObjectItem(tot, "tuned")->valueint, 6);
    int by[3] = {0, 0, 0};
    cJSON *ps = cJSON_GetObjectItem(doc, "problems");
    for (int i = 0; i < cJSON_GetArraySize(ps); i++) {
        int r = cJSON_GetObjectItem(cJSON_GetArrayItem(ps, i), "rank")
                    ->valueint;
        assert_true(r == 1 || r == 2);
        by[r]++;
    }
    assert_true(by[1] > 0 && by[2] > 0);
    cJSON_Delete(doc);
    /* only rank 0 wrote stdout: one table */
    char out[128];
    snprintf(out, sizeof out, "%s/many.out", dir);
    text = slurp(out);
    assert_non_null(text);
    char *first = strstr(text, "campaign ");
    assert_non_null(first);
    assert_null(strstr(first + 1, "\ncampaign "));
    free(text);
    /* run again: everything from the database, nothing timed */
    int64_t trials = count(many, "SELECT count(*) FROM trials");
    snprintf(cmd, sizeof cmd, "%s -n 3 %s campaign %s --db %s --json %s > "
             "%s/again.out 2> %s/again.err", mpirun(), bin, file, many, json,
             dir, dir);
    assert_int_equal(run(cmd), 0);
    text = slurp(json);
    doc = cJSON_Parse(text);
    free(text);
    assert_non_null(doc);
    tot = cJSON_GetObjectItem(doc, "totals");
    assert_int_equal(cJSON_GetObjectItem(tot, "from_database")->valueint, 6);
    cJSON_Delete(doc);
    assert_int_equal(count(many, "SELECT count(*) FROM trials"), trials);
    assert_int_equal(count(many, "SELECT count(*) FROM races"), 6);
}

int main(void)
{
    const char *b = getenv("ET_BUILD_DIR");
    snprintf(bin, sizeof bin, "%s/eintune", b && *b ? b : "build");
    snprintf(dir, sizeof dir, "/tmp/et_test_scale_%d", (int)getpid());
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
    if (system(cmd) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_ranks),
        cmocka_unit_test(test_rank_without_device),
        cmocka_unit_test(test_hung_worker),
        cmocka_unit_test(test_campaign),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return rc;
}

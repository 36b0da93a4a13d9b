/* test_faults.c - faults a long unattended run must survive, on the PoCL
 * device through the worker process:
 *   - the worker dies in the middle of a tuning run (a driver crash or a
 *     device that goes away): the candidate in flight is recorded as crash,
 *     the worker is restarted, the next candidates run and pass;
 *   - the worker stops answering in the middle of a tuning run (a kernel or
 *     driver that hangs): the candidate is recorded as timeout, the worker
 *     killed and restarted, the run goes on;
 *   - a candidate asks for more device memory than there is: a clean error,
 *     the worker still answers;
 *   - the disk fills while the database is written (RLIMIT_FSIZE set in
 *     a child process after the first trial, SIGXFSZ ignored, so every
 *     later write fails with EFBIG): every later trial is reported as not
 *     recorded, the run goes on to the end with a complete result, and the
 *     database file stays intact with the first trial;
 *   - SIGINT to `eintune tune`: the trial in flight finishes, the report
 *     and the JSON are written whole, exit status 0.
 * A kernel that hangs inside et_evaluate_kernel and a worker that aborts on
 * request are covered by test_worker.c; SIGKILL during `eintune tune` and
 * resuming without losing more than one trial by test_db_cli.c and
 * test_db.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "einsum/einsum.h"
#include "db/db.h"
#include "measure/remote.h"
#include "spaces/space.h"
#include "tests/suite_device.h"
#include "tune/tune.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char scratch[256];

/* A small space: 4 points, in grid order u = 1, 2, 4, 8. */
static const char *space_yaml =
    "name: faults\n"
    "einsum: \"ik,kj->ij\"\n"
    "params:\n"
    "  u: {values: [1, 2, 4, 8]}\n"
    "transforms:\n"
    "  - {op: UPCAST, axis: j, amt: u}\n";

typedef struct fault_ctx {
    et_device *dev;
    int after;     /* act after this many answered candidates */
    int sig;       /* signal sent to the worker */
    int acted;
    int fill_after; /* the disk fills after this many (0: never) */
    int not_recorded;
} fault_ctx;

static int on_progress(void *arg, int done, int budget,
                       const et_tune_candidate *c,
                       const et_tune_candidate *best)
{
    fault_ctx *f = arg;
    if (!f->acted && done == f->after && f->sig) {
        int pid = et_device_worker_pid(f->dev);
        if (pid > 0)
            kill(pid, f->sig);
        f->acted = 1;
    }
    if (f->fill_after && done == f->fill_after) {
        /* from here on every write of this process past byte 0 fails as
         * on a full disk (the worker keeps its own limit) */
        struct rlimit rl = {0, 0};
        signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            abort();
    }
    return 0;
}

static void on_log(void *arg, et_tune_level lvl, const char *msg)
{
    fault_ctx *f = arg;
    if (strstr(msg, "not recorded in the database"))
        f->not_recorded++;
}

typedef struct tune_env {
    et_space *space;
    et_binding *bind;
    et_einsum e;
} tune_env;

static void env_init(tune_env *t)
{
    et_diag d;
    memset(t, 0, sizeof *t);
    assert_int_equal(et_space_load_text(space_yaml, strlen(space_yaml),
                                        "faults.yaml", &t->space, &d),
                     ET_OK);
    assert_int_equal(et_einsum_from_strings("ik,kj->ij", "i=16,k=24,j=16",
                                            "f32", &t->e, &d),
                     ET_OK);
    assert_int_equal(et_space_bind(t->space, &t->e, NULL, &t->bind, &d),
                     ET_OK);
}

static void env_free(tune_env *t)
{
    et_binding_free(t->bind);
    et_space_free(t->space);
}

static et_tune_opts tune_opts(fault_ctx *f)
{
    et_tune_opts o;
    memset(&o, 0, sizeof o);
    o.search.kind = ET_SEARCH_GRID;
    o.search.budget = 4;
    o.search.cut_factor = 1e9; /* no early cut: every candidate is timed */
    o.timing.max_runs = 8;
    o.timing.max_seconds = 0.2;
    o.progress = on_progress;
    o.log = on_log;
    o.arg = f;
    return o;
}

/* The worker is killed after the first candidate: the second is a crash
 * (or, if the restart beat it, passes), the run goes on to the end. */
static void run_with_worker_signal(int sig, et_outcome want)
{
    et_remote_limits lim = {.build_s = 8, .launch_s = 3, .transfer_s = 8};
    et_device *dev = NULL;
    et_error err = {{0}};
    assert_int_equal(et_device_open_isolated(td_device(), &lim, &dev, &err),
                     ET_OK);
    uint64_t epoch0 = et_device_epoch(dev);
    tune_env t;
    env_init(&t);
    fault_ctx f = {.dev = dev, .after = 1, .sig = sig};
    et_tune_opts o = tune_opts(&f);
    et_tune_result res;
    et_status st = et_tune_run(dev, t.bind, &o, &res, &err);
    if (st != ET_OK)
        print_message("tune: %s\n", err.msg);
    assert_int_equal(st, ET_OK);
    assert_true(f.acted);
    assert_int_equal(res.n_cand, 4);
    assert_int_equal(res.cand[0].outcome, ET_OUTCOME_OK);
    assert_int_equal(res.cand[1].outcome, want);
    print_message("candidate 1: %s: %s\n", et_outcome_name(res.cand[1].outcome),
                  res.cand[1].reason);
    /* the candidates after the fault ran on a new worker and passed */
    assert_int_equal(res.cand[2].outcome, ET_OUTCOME_OK);
    assert_int_equal(res.cand[3].outcome, ET_OUTCOME_OK);
    assert_int_equal(res.failures[want], 1);
    assert_true(res.best >= 0);
    assert_true(et_device_epoch(dev) > epoch0);
    assert_int_equal(et_remote_test_hook(dev, ET_REMOTE_HOOK_PING, &err),
                     ET_OK);
    et_tune_result_free(&res);
    env_free(&t);
    et_device_close(dev);
}

static void test_tune_worker_dies(void **state)
{
    (void)state;
    run_with_worker_signal(SIGKILL, ET_OUTCOME_CRASH);
}

static void test_tune_worker_hangs(void **state)
{
    (void)state;
    /* SIGSTOP: the worker is alive but never answers, as in a hung driver */
    run_with_worker_signal(SIGSTOP, ET_OUTCOME_TIMEOUT);
}

static void test_device_out_of_memory(void **state)
{
    (void)state;
    et_device *dev = NULL;
    et_error err = {{0}};
    assert_int_equal(et_device_open_isolated(td_device(), NULL, &dev, &err),
                     ET_OK);
    uint64_t epoch0 = et_device_epoch(dev);
    /* far more than the device's global memory, and than its address
     * space allows */
    size_t sizes[] = {(size_t)1 << 46, (size_t)1 << 62, SIZE_MAX / 2};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        et_buffer *b = NULL;
        memset(&err, 0, sizeof err);
        et_status st = et_buffer_alloc(dev, sizes[i], &b, &err);
        print_message("alloc %zu bytes: %s: %s\n", sizes[i],
                      et_status_str(st), err.msg);
        assert_int_not_equal(st, ET_OK);
        assert_int_not_equal(st, ET_ERR_CRASH);
        assert_null(b);
        assert_true(err.msg[0] != 0);
    }
    /* the same worker still answers and still allocates */
    assert_int_equal(et_device_epoch(dev), epoch0);
    assert_int_equal(et_remote_test_hook(dev, ET_REMOTE_HOOK_PING, &err),
                     ET_OK);
    et_buffer *b = NULL;
    assert_int_equal(et_buffer_alloc(dev, 4096, &b, &err), ET_OK);
    et_buffer_free(dev, b);
    et_device_close(dev);
}

/* In a child: the database's writes fail with EFBIG (a full disk); the
 * tuning run goes on, every trial reported as not recorded. Exit status 0
 * when that is what happened. */
static int disk_full_child(const char *db_path)
{
    et_remote_limits lim = {.build_s = 8, .launch_s = 3, .transfer_s = 8};
    et_device *dev = NULL;
    et_error err = {{0}};
    if (et_device_open_isolated(td_device(), &lim, &dev, &err) != ET_OK)
        return 10;
    et_db *db = NULL;
    if (et_db_open(db_path, &db, &err) != ET_OK)
        return 11;
    tune_env t;
    et_diag d;
    if (et_space_load_text(space_yaml, strlen(space_yaml), "faults.yaml",
                           &t.space, &d) != ET_OK ||
        et_einsum_from_strings("ik,kj->ij", "i=16,k=24,j=16", "f32", &t.e,
                               &d) != ET_OK ||
        et_space_bind(t.space, &t.e, NULL, &t.bind, &d) != ET_OK)
        return 12;
    int64_t space_id = 0;
    if (et_db_space_id(db, "faults", "0123456789abcdef", &space_id, &err) !=
        ET_OK)
        return 13;
    fault_ctx f = {.dev = dev, .fill_after = 1};
    et_tune_opts o = tune_opts(&f);
    o.db = db;
    o.db_space_id = space_id;
    et_tune_result res;
    et_status st = et_tune_run(dev, t.bind, &o, &res, &err);
    int rc = 0;
    if (st != ET_OK) {
        fprintf(stderr, "tune: %s\n", err.msg);
        rc = 20;
    } else if (res.n_cand != 4 || res.best < 0) {
        rc = 21;
    } else if (f.not_recorded != 3) {
        fprintf(stderr, "not recorded: %d\n", f.not_recorded);
        rc = 22;
    }
    for (int i = 0; rc == 0 && i < res.n_cand; i++)
        if (res.cand[i].outcome != ET_OUTCOME_OK)
            rc = 23;
    et_tune_result_free(&res);
    et_binding_free(t.bind);
    et_space_free(t.space);
    et_db_close(db);
    et_device_close(dev);
    return rc;
}

static void test_disk_full_database(void **state)
{
    (void)state;
    char db_path[300];
    snprintf(db_path, sizeof db_path, "%s/full.db", scratch);
    /* the file exists with its schema before the disk fills */
    et_db *db = NULL;
    et_error err = {{0}};
    assert_int_equal(et_db_open(db_path, &db, &err), ET_OK);
    et_db_close(db);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(disk_full_child(db_path));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    /* the database is intact: the trial before the disk filled, no
     * half-written one */
    assert_int_equal(et_db_open(db_path, &db, &err), ET_OK);
    char msg[256];
    assert_int_equal(et_db_integrity(db, msg, sizeof msg, &err), ET_OK);
    assert_string_equal(msg, "ok");
    et_db_stats s;
    assert_int_equal(et_db_stats_get(db, &s, &err), ET_OK);
    assert_int_equal(s.trials, 1);
    et_db_close(db);
}

/* ---- SIGINT to eintune tune ------------------------------------------------ */

static void build_path(char *buf, size_t cap, const char *name)
{
    const char *b = getenv("ET_BUILD_DIR");
    snprintf(buf, cap, "%s/%s", b ? b : "build", name);
}

static int count_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    struct dirent *de;
    while ((de = readdir(d)))
        n += strstr(de->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

static void test_sigint_tune(void **state)
{
    (void)state;
    char exe[512], db[300], json[300], space[300];
    build_path(exe, sizeof exe, "eintune");
    snprintf(db, sizeof db, "%s/int.db", scratch);
    snprintf(json, sizeof json, "%s/int.json", scratch);
    snprintf(space, sizeof space, "%s/int.yaml", scratch);
    FILE *sf = fopen(space, "w");
    assert_non_null(sf);
    fputs("name: sigint\neinsum: \"ik,kj->ij\"\nparams:\n"
          "  u: {range: [1, 16]}\n  l: {values: [1, 2, 4]}\n"
          "transforms:\n  - {op: UPCAST, axis: j, amt: u}\n"
          "  - {op: LOCAL, axis: i, amt: l}\n",
          sf);
    fclose(sf);

    int errp[2];
    assert_int_equal(pipe(errp), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(errp[1], 2);
        close(errp[0]);
        close(errp[1]);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        char *argv[] = {exe,      "tune",     "ik,kj->ij", "--shape",
                        "i=16,k=24,j=16", "--dtype", "f32", "--space",
                        space,    "--search", "grid",      "--budget",
                        "48",     "--db",     db,          "--json",
                        json,     NULL,       NULL,        NULL};
        int argc = 17;
        td_cli_device(argv, &argc);
        argv[argc] = NULL;
        execv(exe, argv);
        _exit(127);
    }
    close(errp[1]);
    /* wait for the third candidate's log line, then interrupt */
    FILE *ef = fdopen(errp[0], "r");
    assert_non_null(ef);
    char line[2048];
    int cands = 0, sent = 0, after = 0;
    while (fgets(line, sizeof line, ef)) {
        if (!sent && strstr(line, "INFO tune: trying "))
            cands++;
        else if (sent)
            after++;
        if (!sent && cands == 3) {
            kill(pid, SIGINT);
            sent = 1;
        }
    }
    fclose(ef);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(sent);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    /* the JSON is whole and says what was done */
    FILE *jf = fopen(json, "r");
    assert_non_null(jf);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, jf);
    fclose(jf);
    text[n] = 0;
    cJSON *doc = cJSON_Parse(text);
    assert_non_null(doc);
    cJSON *cands_j = cJSON_GetObjectItem(doc, "candidates");
    assert_true(cJSON_IsArray(cands_j));
    int nc = cJSON_GetArraySize(cands_j);
    print_message("interrupted after %d candidates\n", nc);
    assert_true(nc >= 3 && nc < 48);
    assert_non_null(cJSON_GetObjectItem(doc, "best"));
    cJSON *ev = cJSON_GetObjectItem(doc, "evaluations");
    assert_true(cJSON_IsNumber(ev));
    cJSON_Delete(doc);
    assert_int_equal(count_tmp(scratch), 0);

    /* every trial of the run is in the database */
    et_db *d = NULL;
    et_error err = {{0}};
    assert_int_equal(et_db_open(db, &d, &err), ET_OK);
    et_db_stats s;
    assert_int_equal(et_db_stats_get(d, &s, &err), ET_OK);
    assert_int_equal(s.trials, nc);
    et_db_close(d);
}

static int setup(void **state)
{
    snprintf(scratch, sizeof scratch, "%s/eintune-faults.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(scratch))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    char cmd[600];
    DIR *d = opendir(scratch);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            snprintf(cmd, sizeof cmd, "%s/%s", scratch, de->d_name);
            unlink(cmd);
        }
        closedir(d);
    }
    rmdir(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_out_of_memory),
        cmocka_unit_test(test_tune_worker_dies),
        cmocka_unit_test(test_tune_worker_hangs),
        cmocka_unit_test(test_disk_full_database),
        cmocka_unit_test(test_sigint_tune),
    };
    return cmocka_run_group_tests_name("faults", tests, setup, teardown);
}

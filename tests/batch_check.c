/*
 * batch_check.c - test helper for batched einsums (batch_check.h).
 */
#include "tests/batch_check.h"

#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

et_status bc_batched(const char *text, const char *shape, const char *dtype,
                     const char *rows, et_einsum *e, et_diag *d)
{
    et_einsum base;
    memset(d, 0, sizeof *d);
    et_status st = et_einsum_from_strings(text, shape, dtype, &base, d);
    return st == ET_OK ? et_einsum_batch_spec(&base, rows, NULL, e, d) : st;
}

int bc_check(et_device *dev, const char *einsum, const char *shape,
             const char *rows, const char *dt, const char *opts,
             unsigned seed, bc_tally *t, char *why, size_t cap)
{
    static char msg[65536];
    et_einsum e;
    et_diag d;
    if (bc_batched(einsum, shape, dt, rows, &e, &d) != ET_OK) {
        snprintf(why, cap, "%s [%s]: %s", einsum, rows, d.msg);
        return -1;
    }
    et_opt o[ET_MAX_OPTS];
    int n = 0;
    if (et_opts_parse(opts, o, ET_MAX_OPTS, &n, &d) != ET_OK) {
        snprintf(why, cap, "opts '%s': %s", opts, d.msg);
        return -1;
    }
    et_kernel *k = NULL;
    if (et_kernel_init(&e, NULL, &k) != ET_OK) {
        snprintf(why, cap, "%s [%s]: no kernel", einsum, rows);
        return -1;
    }
    char reason[512];
    if (et_kernel_apply_opts(k, o, n, reason, sizeof reason) != ET_OK) {
        et_kernel_free(k);
        if (!strstr(reason, "row"))
            return 0;
        snprintf(why, cap, "%s [%s] '%s' refused by a row rule: %s", einsum,
                 rows, opts, reason);
        return -1;
    }
    if (kc_check_kernel(dev, k, seed, msg, sizeof msg) != ET_OK) {
        fprintf(stderr, "%s [%s] %s '%s': %s\n", einsum, rows, dt, opts,
                msg);
        t->failures++;
    } else {
        t->checked++;
    }
    if (!t->nvrtc_absent) {
        et_status st = kc_cuda_compile(k, msg, sizeof msg);
        if (st == ET_ERR_UNSUPPORTED) {
            t->nvrtc_absent = true;
        } else if (st != ET_OK) {
            fprintf(stderr, "CUDA %s '%s': %s\n", einsum, opts, msg);
            t->failures++;
        } else {
            t->cuda++;
        }
    }
    et_kernel_free(k);
    return 0;
}

int bc_run_argv(char *const *argv)
{
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0)
        return -1;
    int ws;
    if (waitpid(pid, &ws, 0) < 0)
        return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

et_status bc_tune(const et_problem *p, const char *db, int budget,
                  char *msg, size_t cap)
{
    et_tune_options o = {0};
    o.db = db;
    o.budget = budget;
    o.race = -1;
    et_tune_report *rep = NULL;
    et_diag d;
    et_status st = et_tune_run_full(p, &o, &rep, &d);
    if (st != ET_OK) {
        snprintf(msg, cap, "%s", d.msg);
        return st;
    }
    et_tune_summary s;
    et_tune_report_summary(rep, &s);
    et_tune_report_free(rep);
    if (!s.found || s.failures) {
        snprintf(msg, cap, "%s, %d failure(s)",
                 s.found ? "a best found" : "no best found", s.failures);
        return ET_ERR_NOT_FOUND;
    }
    return ET_OK;
}

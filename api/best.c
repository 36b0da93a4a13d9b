/*
 * best.c - the public best-kernel lookup (et_best_lookup) and the pieces
 * of it that other API files share (api_best_find, api_best_info_fill):
 * the database opened before any device, the device opened through a
 * worker only to learn its database key, and tune/best.h's mapping of the
 * stored opts onto the asker's index names.
 */
#include "api/api_impl.h"

#include "measure/remote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

et_status api_best_find(const et_einsum *e, const et_device_info *info,
                        const char *db_path, et_best *out, bool *found,
                        char *db_used, size_t db_used_cap, et_diag *diag)
{
    et_error err = {{0}};
    et_db *db = NULL;
    *found = false;
    et_status st = et_db_open(db_path, &db, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_FILE, &err);
        if (diag && db_path)
            snprintf(diag->file, sizeof diag->file, "%s", db_path);
        return st;
    }
    if (db_used)
        snprintf(db_used, db_used_cap, "%s", et_db_path(db));
    st = et_best_find(db, e, info, out, found, &err);
    if (st != ET_OK)
        api_fail_err(diag, st, ET_INPUT_NONE, &err);
    et_db_close(db);
    return st;
}

void api_best_info_fill(const et_best *b, const et_device_info *info,
                        et_best_info *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->opts, sizeof out->opts, "%s", b->opts);
    snprintf(out->kernel, sizeof out->kernel, "%s", b->trial.kernel_name);
    snprintf(out->tuned_einsum, sizeof out->tuned_einsum, "%s",
             b->trial.einsum_text);
    out->exact = b->exact;
    out->time_s = b->trial.median_s;
    out->ci95_s[0] = b->trial.low_s;
    out->ci95_s[1] = b->trial.high_s;
    out->gops = b->trial.gops;
    snprintf(out->device, sizeof out->device, "%s", info->name);
    out->backend = info->target.backend;
    snprintf(out->driver, sizeof out->driver, "%s", info->driver_version);
    out->trial_id = b->trial.id;
}

et_status et_best_lookup(const et_problem *p, const char *device,
                         const char *db, et_best_info *out, int *found,
                         et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    *found = 0;
    memset(out, 0, sizeof *out);
    /* the database first: a file that is not eintune's costs no worker */
    et_error err = {{0}};
    et_db *probe = NULL;
    et_status st = et_db_open(db, &probe, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_FILE, &err);
        if (db)
            snprintf(diag->file, sizeof diag->file, "%s", db);
        return st;
    }
    et_db_close(probe);
    et_device *dev = NULL;
    st = et_device_open_isolated(device, NULL, &dev, &err);
    if (st != ET_OK)
        return api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                         : ET_INPUT_NONE,
                            &err);
    et_device_info info = dev->info;
    et_device_close(dev);
    et_best *best = calloc(1, sizeof *best);
    if (!best)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    bool hit = false;
    st = api_best_find(&p->e, &info, db, best, &hit, NULL, 0, diag);
    if (st == ET_OK && hit) {
        api_best_info_fill(best, &info, out);
        *found = 1;
    }
    free(best);
    return st;
}

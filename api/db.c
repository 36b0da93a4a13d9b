/*
 * db.c - the tuning database in the public API (et_database_*): open,
 * stats with the integrity check, the listing of trials with their names,
 * and pruning, over db/db.h. No device is involved.
 */
#include "api/api_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct et_database {
    et_db *db;
};

/* A database error: input FILE for ET_ERR_INPUT (a file that is not an
 * eintune database, or one from a newer eintune). */
static et_status db_fail(et_diag *d, et_status st, const et_error *err)
{
    return api_fail_err(d, st, st == ET_ERR_INPUT ? ET_INPUT_FILE
                                                  : ET_INPUT_NONE, err);
}

et_status et_database_open(const char *path, et_database **out,
                           et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    et_database *d = calloc(1, sizeof *d);
    if (!d)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    et_error err;
    err.msg[0] = '\0';
    et_status st = et_db_open(path, &d->db, &err);
    if (st != ET_OK) {
        free(d);
        api_fail_err(diag, st, ET_INPUT_FILE, &err);
        if (diag && path)
            snprintf(diag->file, sizeof diag->file, "%s", path);
        return st;
    }
    *out = d;
    return ET_OK;
}

void et_database_close(et_database *db)
{
    if (!db)
        return;
    et_db_close(db->db);
    free(db);
}

const char *et_database_path(const et_database *db)
{
    return db ? et_db_path(db->db) : "";
}

et_status et_database_stats_get(et_database *db, et_database_stats *out,
                                et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    memset(out, 0, sizeof *out);
    API_NEED(diag, db, "db");
    et_db_stats s;
    et_error err;
    err.msg[0] = '\0';
    et_status st = et_db_stats_get(db->db, &s, &err);
    if (st != ET_OK)
        return db_fail(diag, st, &err);
    out->schema_version = s.schema_version;
    out->renderer_version = ET_RENDERER_VERSION;
    out->file_bytes = s.file_bytes;
    out->devices = s.devices;
    out->einsums = s.einsums;
    out->spaces = s.spaces;
    out->trials = s.trials;
    for (int o = 0; o < ET_OUTCOME_COUNT; o++)
        out->by_outcome[o] = s.by_outcome[o];
    out->old_renderer = s.old_renderer;
    out->oldest = s.oldest;
    out->newest = s.newest;
    char integrity[512];
    et_error ierr;
    ierr.msg[0] = '\0';
    if (et_db_integrity(db->db, integrity, sizeof integrity, &ierr) ==
        ET_OK) {
        out->integrity_ok = 1;
        snprintf(out->integrity, sizeof out->integrity, "ok");
    } else {
        snprintf(out->integrity, sizeof out->integrity, "%s", ierr.msg);
    }
    return ET_OK;
}

/* The public row of an internal one, for the caller's callback. */
typedef struct list_bridge {
    et_database_row_fn fn;
    void *arg;
} list_bridge;

static int bridge_row(void *arg, const et_db_row *r)
{
    const list_bridge *b = arg;
    const et_db_trial *t = &r->trial;
    /* the trial's columns under the names of the public row */
    et_database_row o = {
        .id = t->id, .opts = t->opts, .outcome = t->outcome,
        .einsum = r->einsum, .sizes = r->sizes, .dtypes = r->dtypes,
        .canonical = r->canonical, .einsum_text = t->einsum_text,
        .device = r->device_name, .backend = r->backend,
        .driver = r->driver_version, .space = r->space_name,
        .params = t->params_json, .reason = t->reason,
        .time_s = t->median_s, .ci95_s = {t->low_s, t->high_s},
        .cv = t->cv, .runs = t->runs, .gops = t->gops,
        .verify_trials = t->verify_trials, .max_norm_err = t->max_norm_err,
        .p_value = t->p_value, .compile_s = t->compile_s,
        .kernel = t->kernel_name, .source_hash = t->source_hash,
        .renderer_version = t->renderer_version, .recorded = t->created_at,
        .eintune_version = t->eintune_version,
    };
    return b->fn(b->arg, &o);
}

et_status et_database_list(et_database *db, const et_database_filter *f,
                           et_database_row_fn fn, void *arg, et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, db, "db");
    API_NEED(diag, fn, "fn");
    API_OPTIONS(et_database_filter, f, diag);
    et_db_filter flt;
    memset(&flt, 0, sizeof flt);
    et_error err;
    err.msg[0] = '\0';
    if (f) {
        flt.outcome_mask = f->outcome_mask;
        flt.limit = f->limit;
        if (f->problem) {
            bool found = false;
            et_status st = et_db_einsum_find(db->db, &f->problem->e,
                                             &flt.einsum_id, &found, &err);
            if (st != ET_OK)
                return db_fail(diag, st, &err);
            if (!found)
                return ET_OK; /* the einsum was never tuned: no rows */
        }
    }
    list_bridge b = {fn, arg};
    et_status st = et_db_list(db->db, &flt, bridge_row, &b, &err);
    if (st != ET_OK)
        return db_fail(diag, st, &err);
    return ET_OK;
}

et_status et_database_prune(et_database *db,
                            const et_database_prune_options *o,
                            int64_t *deleted, et_diag *diag)
{
    api_diag_clear(diag);
    if (deleted)
        *deleted = 0;
    API_NEED(diag, db, "db");
    API_NEED(diag, o, "o");
    API_OPTIONS(et_database_prune_options, o, diag);
    et_db_prune_opts po;
    memset(&po, 0, sizeof po);
    po.failed = o->failed != 0;
    po.older_than_days = o->older_than_days;
    po.renderer_old = o->renderer_old != 0;
    po.dry_run = o->dry_run != 0;
    if (deleted)
        *deleted = 0;
    if (!po.failed && !po.renderer_old && !(po.older_than_days > 0))
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "say what to delete: failed, older than or "
                        "renderer old");
    et_error err;
    err.msg[0] = '\0';
    et_status st = et_db_prune(db->db, &po, deleted, &err);
    if (st != ET_OK)
        return db_fail(diag, st, &err);
    return ET_OK;
}

et_status et_database_merge(et_database *db, const char *in,
                            et_database_merge_stats *out, et_diag *diag)
{
    api_diag_clear(diag);
    if (out)
        memset(out, 0, sizeof *out);
    API_NEED(diag, db, "db");
    API_NEED(diag, in, "in");
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(in, a) && realpath(et_db_path(db->db), b) &&
        strcmp(a, b) == 0) {
        et_status st = api_fail(diag, ET_ERR_INPUT, ET_INPUT_FILE,
                                "%s is the output database itself", in);
        if (diag)
            snprintf(diag->file, sizeof diag->file, "%s", in);
        return st;
    }
    et_db_merge_stats ms;
    et_error err;
    err.msg[0] = '\0';
    et_status st = et_db_merge(db->db, in, &ms, &err);
    if (st != ET_OK) {
        db_fail(diag, st, &err);
        if (diag && st == ET_ERR_INPUT)
            snprintf(diag->file, sizeof diag->file, "%s", in);
        return st;
    }
    if (out) {
        out->n_tables = ms.n_tables < 32 ? ms.n_tables : 32;
        for (int i = 0; i < out->n_tables; i++) {
            et_database_merge_table *t = &out->table[i];
            snprintf(t->name, sizeof t->name, "%s", ms.table[i].name);
            t->added = ms.table[i].added;
            t->same = ms.table[i].same;
            t->replaced = ms.table[i].replaced;
            t->skipped = ms.table[i].skipped;
        }
    }
    return ET_OK;
}

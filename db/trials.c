/*
 * trials.c - the trials: a trial's key and figures filled from an
 * evaluation, recorded under its key (replacing what the key had, its row
 * id kept) and looked up by it; the best trial of an einsum on a device;
 * the einsums of the same structure at other sizes.
 */
#include "db/db.h"
#include "db/db_impl.h"

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a trial's values --------------------------------------------------- */

et_status et_db_trial_init(et_db_trial *t, int64_t einsum_id,
                           const et_einsum *e, int64_t device_id,
                           const char *opts, const char *source,
                           const et_launch *geom, et_error *err)
{
    memset(t, 0, sizeof(*t));
    t->p_value = NAN;
    t->load_1m = NAN;
    t->max_norm_err = NAN;
    t->einsum_id = einsum_id;
    db_copy_str(t->einsum_text, sizeof(t->einsum_text), e->text);
    t->device_id = device_id;
    if (opts && strlen(opts) >= sizeof(t->opts))
        return et_errorf(err, ET_ERR_INPUT, "opt list too long for the "
                         "database (%zu bytes, at most %zu)", strlen(opts),
                         sizeof(t->opts) - 1);
    db_copy_str(t->opts, sizeof(t->opts), opts);
    t->renderer_version = ET_RENDERER_VERSION;
    if (source)
        et_db_source_hash(source, geom, t->source_hash);
    int oa = et_einsum_open_axis(e);
    if (oa >= 0)
        snprintf(t->tuned_at, sizeof(t->tuned_at), "%s=%" PRId64,
                 e->idx[oa].name, e->idx[oa].size);
    return ET_OK;
}

void et_db_trial_set_evaluation(et_db_trial *t, const et_einsum *e,
                                const et_evaluation *ev)
{
    t->outcome = ev->result.outcome;
    db_copy_str(t->reason, sizeof(t->reason), ev->result.reason);
    t->compile_s = ev->build_s;
    if (ev->verified) {
        t->verify_trials = ev->verify.trials;
        t->max_norm_err = ev->verify.max_norm_err;
        t->p_value = ev->verify.p_value;
    }
    if (ev->timed) {
        t->median_s = ev->timing.median_s;
        t->low_s = ev->timing.low_s;
        t->high_s = ev->timing.high_s;
        t->cv = ev->timing.cv;
        t->runs = ev->timing.runs;
        int64_t ops[ET_DTYPE_COUNT];
        et_einsum_ops(e, ops);
        double total = 0;
        for (int d = 0; d < ET_DTYPE_COUNT; d++)
            total += (double)ops[d];
        t->gops = t->median_s > 0 ? total / t->median_s / 1e9 : 0;
    }
}

void db_read_trial(sqlite3_stmt *st, et_db_trial *t)
{
    memset(t, 0, sizeof(*t));
    t->id = sqlite3_column_int64(st, 0);
    t->einsum_id = sqlite3_column_int64(st, 1);
    db_col_text(st, 2, t->einsum_text, sizeof(t->einsum_text));
    t->device_id = sqlite3_column_int64(st, 3);
    db_col_text(st, 4, t->opts, sizeof(t->opts));
    t->renderer_version = sqlite3_column_int(st, 5);
    db_col_text(st, 6, t->source_hash, sizeof(t->source_hash));
    t->space_id = sqlite3_column_int64(st, 7);
    db_col_text(st, 8, t->params_json, sizeof(t->params_json));
    db_col_text(st, 9, t->kernel_name, sizeof(t->kernel_name));
    char name[32];
    db_col_text(st, 10, name, sizeof(name));
    et_outcome o = ET_OUTCOME_CRASH;
    if (et_outcome_parse(name, &o) != 0)
        o = ET_OUTCOME_CRASH; /* the CHECK constraint makes this moot */
    t->outcome = o;
    db_col_text(st, 11, t->reason, sizeof(t->reason));
    t->median_s = db_col_real(st, 12);
    t->low_s = db_col_real(st, 13);
    t->high_s = db_col_real(st, 14);
    t->cv = db_col_real(st, 15);
    t->runs = sqlite3_column_int(st, 16);
    t->verify_trials = sqlite3_column_int(st, 17);
    t->max_norm_err = db_col_real(st, 18);
    t->p_value = db_col_real(st, 19);
    t->gops = db_col_real(st, 20);
    t->compile_s = db_col_real(st, 21);
    t->created_at = sqlite3_column_int64(st, 22);
    db_col_text(st, 23, t->eintune_version, sizeof(t->eintune_version));
    t->load_1m = db_col_real(st, 24);
    db_col_text(st, 25, t->tuned_at, sizeof(t->tuned_at));
}

/* ---- record and look up ------------------------------------------------- */

/* Steps a query of DB_TRIAL_COLS for at most one row. */
static et_status step_trial(et_db *db, sqlite3_stmt *st, et_db_trial *out,
                            bool *found, const char *what, et_error *err)
{
    int rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW)
        db_read_trial(st, out);
    else if (rc != SQLITE_DONE)
        return db_sql_fail(db, rc, what, err);
    return ET_OK;
}

/* The trial key's columns, ?1..?6 of the statements below. Bound as
 * copies: et_db_trial_lookup's out may be its key. */
static void trial_key(sqlite3_stmt *st, const void *row)
{
    const et_db_trial *t = row;
    sqlite3_bind_int64(st, 1, t->einsum_id);
    sqlite3_bind_int64(st, 2, t->device_id);
    sqlite3_bind_text(st, 3, t->einsum_text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, t->opts, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, t->renderer_version);
    sqlite3_bind_text(st, 6, t->source_hash, -1, SQLITE_TRANSIENT);
}

#define TRIAL_KEY_WHERE                                                     \
    "einsum_id = ?1 AND device_id = ?2 AND einsum_text = ?3 AND "          \
    "opts = ?4 AND renderer_version = ?5 AND source_hash = ?6"

et_status et_db_trial_lookup(et_db *db, const et_db_trial *key,
                             et_db_trial *out, bool *found, et_error *err)
{
    sqlite3_stmt *st;
    et_status s = db_prep(db,
                          "SELECT " DB_TRIAL_COLS " FROM trials t WHERE "
                          TRIAL_KEY_WHERE,
                          &st, err);
    if (s != ET_OK)
        return s;
    trial_key(st, key);
    s = step_trial(db, st, out, found, "looking up a trial", err);
    sqlite3_finalize(st);
    return s;
}

/* What the key does not name: ?7..?25 of the insert. */
static void trial_rest(sqlite3_stmt *st, const void *row)
{
    const et_db_trial *t = row;
    if (t->space_id > 0)
        sqlite3_bind_int64(st, 7, t->space_id);
    else
        sqlite3_bind_null(st, 7);
    db_bind_text(st, 8, t->params_json);
    db_bind_text(st, 9, t->kernel_name);
    db_bind_text(st, 10, et_outcome_name(t->outcome));
    db_bind_text(st, 11, t->reason);
    db_bind_real(st, 12, t->median_s);
    db_bind_real(st, 13, t->low_s);
    db_bind_real(st, 14, t->high_s);
    db_bind_real(st, 15, t->cv);
    sqlite3_bind_int(st, 16, t->runs);
    sqlite3_bind_int(st, 17, t->verify_trials);
    db_bind_real(st, 18, t->max_norm_err);
    db_bind_real(st, 19, t->p_value);
    db_bind_real(st, 20, t->gops);
    db_bind_real(st, 21, t->compile_s);
    sqlite3_bind_int64(st, 22, t->created_at ? t->created_at : db_now());
    db_bind_text(st, 23, t->eintune_version[0] ? t->eintune_version
                                               : ET_VERSION);
    db_bind_real(st, 24, t->load_1m);
    db_bind_text(st, 25, t->tuned_at);
}

static et_status trial_dangling(et_db *db, const void *row, et_error *err)
{
    const et_db_trial *t = row;
    return et_errorf(err, ET_ERR_INPUT, "%s: trial refers to an einsum, "
                     "device or space that is not recorded (ids %" PRId64
                     ", %" PRId64 ", %" PRId64 ")",
                     db->path, t->einsum_id, t->device_id, t->space_id);
}

et_status et_db_trial_record(et_db *db, const et_db_trial *t, int64_t *id,
                             et_error *err)
{
    if ((unsigned)t->outcome >= ET_OUTCOME_COUNT)
        return et_errorf(err, ET_ERR_INPUT, "trial with an invalid outcome %d",
                         (int)t->outcome);
    /* a trial recorded again keeps its row id and takes the new figures;
     * a row deleted between the insert and the find (a prune) is id 0 */
    db_keyed k = {
        .insert =
            "INSERT INTO trials (einsum_id, device_id, einsum_text, opts, "
            "renderer_version, source_hash, space_id, params_json, "
            "kernel_name, outcome, reason, median_s, low_s, high_s, cv, "
            "runs, verify_trials, max_norm_err, p_value, gops, compile_s, "
            "created_at, eintune_version, load_1m, tuned_at) VALUES (?1, ?2, "
            "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
            "?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25) "
            "ON CONFLICT (einsum_id, device_id, einsum_text, opts, "
            "renderer_version, source_hash) DO UPDATE SET "
            "space_id = excluded.space_id, "
            "params_json = excluded.params_json, "
            "kernel_name = excluded.kernel_name, outcome = excluded.outcome, "
            "reason = excluded.reason, median_s = excluded.median_s, "
            "low_s = excluded.low_s, high_s = excluded.high_s, "
            "cv = excluded.cv, runs = excluded.runs, "
            "verify_trials = excluded.verify_trials, "
            "max_norm_err = excluded.max_norm_err, "
            "p_value = excluded.p_value, gops = excluded.gops, "
            "compile_s = excluded.compile_s, "
            "created_at = excluded.created_at, "
            "eintune_version = excluded.eintune_version, "
            "load_1m = excluded.load_1m, tuned_at = excluded.tuned_at",
        .find = "SELECT id FROM trials WHERE " TRIAL_KEY_WHERE,
        .bind_key = trial_key,
        .bind_rest = trial_rest,
        .row = t,
        .recording = "recording a trial",
        .looking_up = "looking up a trial",
        .dangling = trial_dangling,
    };
    return db_insert_or_find(db, &k, id, err);
}

/* ---- the best trial, other sizes ---------------------------------------- */

/* The trial a query of DB_TRIAL_COLS picks for einsum ?1 on device ?2
 * among those of renderer ?3. */
static et_status best_query(et_db *db, const char *sql, int64_t einsum_id,
                            int64_t device_id, et_db_trial *out,
                            bool *found, et_error *err)
{
    sqlite3_stmt *st;
    et_status s = db_prep(db, sql, &st, err);
    if (s != ET_OK)
        return s;
    sqlite3_bind_int64(st, 1, einsum_id);
    sqlite3_bind_int64(st, 2, device_id);
    sqlite3_bind_int(st, 3, ET_RENDERER_VERSION);
    s = step_trial(db, st, out, found, "looking up the best trial", err);
    sqlite3_finalize(st);
    return s;
}

et_status et_db_best_ids(et_db *db, int64_t einsum_id, int64_t device_id,
                         et_db_trial *out, bool *found, et_error *err)
{
    /* the choice of the latest final race, when its trial still stands */
    et_status s = best_query(
        db,
        "SELECT " DB_TRIAL_COLS " FROM races r JOIN trials t ON "
        "t.einsum_id = r.einsum_id AND "
        "t.device_id = r.device_id AND "
        "t.einsum_text = r.einsum_text AND "
        "t.opts = r.chosen_opts WHERE "
        "r.einsum_id = ?1 AND r.device_id = ?2 AND "
        "t.outcome = 'ok' AND t.renderer_version = ?3 AND "
        "t.median_s IS NOT NULL "
        "ORDER BY r.created_at DESC, r.id DESC, "
        "t.created_at DESC LIMIT 1",
        einsum_id, device_id, out, found, err);
    if (s != ET_OK || *found)
        return s;
    /* else the fastest of the trials */
    return best_query(db,
                      "SELECT " DB_TRIAL_COLS " FROM trials t WHERE "
                      "einsum_id = ?1 AND device_id = ?2 AND "
                      "outcome = 'ok' AND renderer_version = ?3 AND "
                      "median_s IS NOT NULL "
                      "ORDER BY median_s ASC, id ASC LIMIT 1",
                      einsum_id, device_id, out, found, err);
}

et_status et_db_best(et_db *db, const et_einsum *e,
                     const et_device_info *info, et_db_trial *out,
                     bool *found, et_error *err)
{
    int64_t eid, did;
    *found = false;
    et_status s = et_db_einsum_find(db, e, &eid, found, err);
    if (s != ET_OK || !*found)
        return s;
    if ((s = et_db_device_find(db, info, &did, found, err)) != ET_OK ||
        !*found)
        return s;
    return et_db_best_ids(db, eid, did, out, found, err);
}

et_status et_db_einsums_like(et_db *db, const et_einsum *e,
                             et_db_einsum_fn fn, void *arg, et_error *err)
{
    char structure[ET_DB_CANON_LEN];
    et_einsum_structure(e, structure, sizeof(structure));
    sqlite3_stmt *st;
    et_status s = db_prep(db,
                          "SELECT id, canonical, text, sizes FROM einsums "
                          "WHERE structure = ?1 ORDER BY id",
                          &st, err);
    if (s != ET_OK)
        return s;
    db_bind_text(st, 1, structure);
    et_db_einsum_row *row = malloc(sizeof *row);
    if (!row) {
        sqlite3_finalize(st);
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        memset(row, 0, sizeof *row);
        row->id = sqlite3_column_int64(st, 0);
        db_col_text(st, 1, row->canonical, sizeof(row->canonical));
        db_col_text(st, 2, row->text, sizeof(row->text));
        db_col_text(st, 3, row->sizes, sizeof(row->sizes));
        if (fn(arg, row) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    if (rc != SQLITE_DONE)
        s = db_sql_fail(db, rc, "listing the sizes of an einsum", err);
    free(row);
    sqlite3_finalize(st);
    return s;
}


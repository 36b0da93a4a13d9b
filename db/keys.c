/*
 * keys.c - the rows trials refer to: devices, einsums and spaces, each
 * recorded once under its key and found by it (db_insert_or_find), and
 * the hashes that make keys (db.h's trial key).
 */
#include "db/db.h"
#include "db/db_impl.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- devices ------------------------------------------------------------ */

static const char *backend_of(const et_device_info *info)
{
    return et_backend_name(info->target.backend);
}

static void limits_json(const et_target *t, char *buf, size_t cap)
{
    snprintf(buf, cap,
             "{\"backend\": \"%s\", \"max_work_group_size\": %" PRId64 ", "
             "\"max_work_item_sizes\": [%" PRId64 ", %" PRId64 ", %" PRId64
             "], \"local_mem_bytes\": %" PRId64 ", \"has_fp64\": %s, "
             "\"has_fp16\": %s, \"mem_base_addr_align\": %" PRId64 ", "
             "\"compute_units\": %d, \"global_mem_bytes\": %" PRId64 ", "
             "\"preferred_vector_width\": {\"f16\": %d, \"f32\": %d, "
             "\"f64\": %d}}",
             et_backend_name(t->backend), t->max_work_group_size,
             t->max_work_item_sizes[0], t->max_work_item_sizes[1],
             t->max_work_item_sizes[2], t->local_mem_bytes,
             t->has_fp64 ? "true" : "false", t->has_fp16 ? "true" : "false",
             t->mem_base_addr_align, t->compute_units, t->global_mem_bytes,
             t->preferred_vector_width[ET_F16],
             t->preferred_vector_width[ET_F32],
             t->preferred_vector_width[ET_F64]);
}

/* A device as its statements see it: the key (backend, name,
 * driver_version) from info, the rest from info and limits. */
typedef struct device_row {
    const et_device_info *info;
    const char *limits;       /* limits_json of info's target */
} device_row;

static void device_key(sqlite3_stmt *st, const void *row)
{
    const device_row *d = row;
    db_bind_text(st, 1, backend_of(d->info));
    db_bind_text(st, 2, d->info->name);
    db_bind_text(st, 3, d->info->driver_version);
}

static void device_rest(sqlite3_stmt *st, const void *row)
{
    const device_row *d = row;
    db_bind_text(st, 4, d->info->vendor);
    db_bind_text(st, 5, d->info->device_version);
    db_bind_text(st, 6, d->limits);
    sqlite3_bind_int64(st, 7, db_now());
}

/* Devices are never deleted: the row is there after the insert, without
 * a transaction around the two. */
static db_keyed device_keyed(const device_row *d)
{
    return (db_keyed){
        .insert =
            "INSERT INTO devices (backend, name, driver_version, vendor, "
            "device_version, limits_json, first_seen, last_seen) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7) "
            "ON CONFLICT (backend, name, driver_version) DO UPDATE SET "
            "vendor = excluded.vendor, "
            "device_version = excluded.device_version, "
            "limits_json = excluded.limits_json, "
            "last_seen = excluded.last_seen",
        .find = "SELECT id FROM devices WHERE backend = ?1 AND "
                "name = ?2 AND driver_version = ?3",
        .bind_key = device_key,
        .bind_rest = device_rest,
        .row = d,
        .recording = "recording a device",
        .looking_up = "looking up a device",
        .vanished = "device",
    };
}

et_status et_db_device_find(et_db *db, const et_device_info *info,
                            int64_t *id, bool *found, et_error *err)
{
    device_row d = {info, NULL};
    db_keyed k = device_keyed(&d);
    return db_find_id(db, &k, id, found, err);
}

et_status et_db_device_id(et_db *db, const et_device_info *info, int64_t *id,
                          et_error *err)
{
    char limits[1024];
    limits_json(&info->target, limits, sizeof(limits));
    device_row d = {info, limits};
    db_keyed k = device_keyed(&d);
    return db_insert_or_find(db, &k, id, err);
}

/* ---- einsums ------------------------------------------------------------ */

static void einsum_sizes(const et_einsum *e, char *buf, size_t cap)
{
    et_einsum_sizes_str(e, true, buf, cap);
}

static void einsum_dtypes(const et_einsum *e, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < e->n_ops && n < cap; k++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", k ? "," : "",
                              et_dtype_name(e->op[k].dtype));
    if (n < cap)
        snprintf(buf + n, cap - n, "->%s", et_dtype_name(e->out.dtype));
}

/* An einsum as its statements see it: the key is its canonical form (a
 * lookup fills nothing else). */
typedef struct einsum_row {
    const et_einsum *e;
    char canon[ET_DB_CANON_LEN];
    char structure[ET_DB_CANON_LEN];
    char sizes[4096], dtypes[256];
} einsum_row;

static void einsum_key(sqlite3_stmt *st, const void *row)
{
    db_bind_text(st, 1, ((const einsum_row *)row)->canon);
}

static void einsum_rest(sqlite3_stmt *st, const void *row)
{
    const einsum_row *r = row;
    db_bind_text(st, 2, r->e->text);
    db_bind_text(st, 3, r->sizes);
    db_bind_text(st, 4, r->dtypes);
    sqlite3_bind_int64(st, 5, db_now());
    db_bind_text(st, 6, r->structure);
}

/* In one write transaction: the row is found before anything else can
 * delete it. */
static db_keyed einsum_keyed(const einsum_row *r)
{
    return (db_keyed){
        .insert = "INSERT INTO einsums (canonical, text, sizes, dtypes, "
                  "created_at, structure) VALUES (?1, ?2, ?3, ?4, ?5, "
                  "?6) ON CONFLICT (canonical) DO NOTHING",
        .find = "SELECT id FROM einsums WHERE canonical = ?1",
        .bind_key = einsum_key,
        .bind_rest = einsum_rest,
        .row = r,
        .recording = "recording an einsum",
        .looking_up = "looking up an einsum",
        .vanished = "einsum",
        .tx = true,
    };
}

et_status et_db_einsum_find(et_db *db, const et_einsum *e, int64_t *id,
                            bool *found, et_error *err)
{
    einsum_row r = {.e = e};
    et_einsum_canonical(e, r.canon, sizeof(r.canon));
    db_keyed k = einsum_keyed(&r);
    return db_find_id(db, &k, id, found, err);
}

et_status et_db_einsum_id(et_db *db, const et_einsum *e, int64_t *id,
                          et_error *err)
{
    einsum_row r = {.e = e};
    et_einsum_canonical(e, r.canon, sizeof(r.canon));
    et_einsum_structure(e, r.structure, sizeof(r.structure));
    einsum_sizes(e, r.sizes, sizeof(r.sizes));
    einsum_dtypes(e, r.dtypes, sizeof(r.dtypes));
    db_keyed k = einsum_keyed(&r);
    return db_insert_or_find(db, &k, id, err);
}

/* Migration to version 5: the structure form of every einsum recorded,
 * rebuilt from its canonical form. A row that cannot be rebuilt keeps ''
 * (it then takes no part in answers for other sizes). */
et_status db_structure_fill(et_db *db, et_error *err)
{
    sqlite3_stmt *sel = NULL, *upd = NULL;
    et_status s = db_prep(db, "SELECT id, canonical FROM einsums", &sel, err);
    if (s != ET_OK)
        return s;
    if ((s = db_prep(db, "UPDATE einsums SET structure = ?1 WHERE id = ?2",
                     &upd, err)) != ET_OK)
        goto done;
    et_einsum *e = malloc(sizeof *e);
    if (!e) {
        s = et_errorf(err, ET_ERR_NOMEM, "out of memory");
        goto done;
    }
    int rc;
    while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
        const char *canon = (const char *)sqlite3_column_text(sel, 1);
        et_diag d;
        memset(&d, 0, sizeof d);
        if (!canon || et_einsum_from_canonical(canon, e, &d) != ET_OK)
            continue;
        char structure[ET_DB_CANON_LEN];
        et_einsum_structure(e, structure, sizeof structure);
        sqlite3_reset(upd);
        db_bind_text(upd, 1, structure);
        sqlite3_bind_int64(upd, 2, sqlite3_column_int64(sel, 0));
        int rc2 = sqlite3_step(upd);
        if (rc2 != SQLITE_DONE) {
            s = db_sql_fail(db, rc2, "writing an einsum's structure", err);
            break;
        }
    }
    if (s == ET_OK && rc != SQLITE_DONE)
        s = db_sql_fail(db, rc, "reading the einsums", err);
    free(e);
done:
    sqlite3_finalize(sel);
    sqlite3_finalize(upd);
    return s;
}

/* ---- spaces ------------------------------------------------------------- */

typedef struct space_row {
    const char *name, *content_hash;
} space_row;

static void space_key(sqlite3_stmt *st, const void *row)
{
    const space_row *r = row;
    db_bind_text(st, 1, r->name);
    db_bind_text(st, 2, r->content_hash);
}

static void space_rest(sqlite3_stmt *st, const void *row)
{
    sqlite3_bind_int64(st, 3, db_now());
}

et_status et_db_space_id(et_db *db, const char *name,
                         const char *content_hash, int64_t *id,
                         et_error *err)
{
    space_row r = {name, content_hash};
    db_keyed k = {
        .insert = "INSERT INTO spaces (name, content_hash, created_at) "
                  "VALUES (?1, ?2, ?3) "
                  "ON CONFLICT (name, content_hash) DO NOTHING",
        .find = "SELECT id FROM spaces WHERE name = ?1 AND "
                "content_hash = ?2",
        .bind_key = space_key,
        .bind_rest = space_rest,
        .row = &r,
        .recording = "recording a space",
        .looking_up = "looking up a space",
        .vanished = "space",
        .tx = true,
    };
    return db_insert_or_find(db, &k, id, err);
}

/* ---- hashes ------------------------------------------------------------- */

uint64_t et_db_fnv1a64(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static void hex64(uint64_t h, char out[ET_DB_HASH_LEN])
{
    snprintf(out, ET_DB_HASH_LEN, "%016" PRIx64, h);
}

void et_db_hash_hex(const void *data, size_t n, char out[ET_DB_HASH_LEN])
{
    hex64(et_db_fnv1a64(ET_DB_FNV_INIT, data, n), out);
}

void et_db_source_hash(const char *source, const et_launch *geom,
                       char out[ET_DB_HASH_LEN])
{
    uint64_t h = ET_DB_FNV_INIT;
    h = et_db_fnv1a64(h, source, strlen(source));
    /* geometry as text: the same hash on every machine */
    char g[256] = "|no launch";
    if (geom)
        snprintf(g, sizeof(g),
                 "|ndim=%d|global=%" PRId64 ",%" PRId64 ",%" PRId64
                 "|local=%" PRId64 ",%" PRId64 ",%" PRId64 "|has_local=%d",
                 geom->ndim, geom->global[0], geom->global[1],
                 geom->global[2], geom->local[0], geom->local[1],
                 geom->local[2], geom->has_local ? 1 : 0);
    h = et_db_fnv1a64(h, g, strlen(g));
    hex64(h, out);
}


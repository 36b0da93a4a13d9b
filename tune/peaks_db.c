/*
 * peaks_db.c - device peaks kept in the tuning database (peaks_db.h).
 */
#include "tune/peaks_db.h"
#include "roofline/report.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* The JSON of et_peaks_to_json back into p. */
static et_status parse(const char *text, et_peaks *p, et_error *err)
{
    memset(p, 0, sizeof *p);
    et_status st = et_peaks_parse(text, "stored peaks", p, NULL, err);
    p->source = ET_PEAKS_CACHED;
    return st;
}

et_status et_peaks_db_load(et_db *db, const et_device_info *info,
                           et_peaks *out, et_error *err)
{
    int64_t id = 0;
    bool found = false;
    et_status st = et_db_device_find(db, info, &id, &found, err);
    if (st != ET_OK)
        return st;
    char *json = NULL;
    if (found)
        st = et_db_peaks_load(db, id, &json, NULL, &found, err);
    if (st != ET_OK)
        return st;
    if (!found)
        return et_errorf(err, ET_ERR_IO,
                         "no peaks in the database for %s (driver %s)",
                         info->name, info->driver_version);
    et_peaks p;
    st = parse(json, &p, err);
    free(json);
    if (st != ET_OK)
        return st;
    if (!(p.gflops[ET_F32] > 0) || !(p.bandwidth_gbs > 0))
        return et_errorf(err, ET_ERR_IO,
                         "peaks in the database for %s lack f32 or bandwidth",
                         info->name);
    if (p.bench_version != ET_PEAKS_BENCH_VERSION)
        return et_errorf(err, ET_ERR_IO,
                         "peaks in the database for %s are from older "
                         "micro-benchmarks (version %d, now %d)",
                         info->name, p.bench_version,
                         ET_PEAKS_BENCH_VERSION);
    *out = p;
    return ET_OK;
}

et_status et_peaks_get_db(et_device *dev, et_db *db,
                          const et_peaks_get_opts *opts, et_peaks *out,
                          et_error *err)
{
    et_peaks_get_opts o;
    if (opts)
        o = *opts;
    else
        memset(&o, 0, sizeof o);
    const char *file = o.peaks_file;
    if (!file) {
        file = getenv("ET_PEAKS_FILE");
        if (file && !file[0])
            file = NULL;
    }
    if (!db || file)
        return et_peaks_get(dev, &o, out, err);
    if (!o.remeasure) {
        et_error lerr;
        lerr.msg[0] = '\0';
        if (et_peaks_db_load(db, &dev->info, out, &lerr) == ET_OK) {
            if (o.measure.log)
                o.measure.log(o.measure.log_arg,
                              "peaks from the tuning database");
            return ET_OK;
        }
    }
    /* keep_max: the figures stored in the database, to keep where they
     * are the faster (the file cache's are et_peaks_get's business) */
    et_peaks old;
    et_error oerr;
    oerr.msg[0] = '\0';
    bool have_old = o.remeasure && o.keep_max &&
                    et_peaks_db_load(db, &dev->info, &old, &oerr) == ET_OK;
    et_status st = et_peaks_get(dev, &o, out, err);
    if (st != ET_OK || out->source == ET_PEAKS_OVERRIDE)
        return st;
    if (have_old)
        et_peaks_keep_max(out, &old);
    int64_t id = 0;
    et_error serr;
    serr.msg[0] = '\0';
    cJSON *doc = et_peaks_to_json(out);
    char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
    if (!text ||
        et_db_device_id(db, &dev->info, &id, &serr) != ET_OK ||
        et_db_peaks_store(db, id, text, 0, &serr) != ET_OK) {
        if (o.measure.log)
            o.measure.log(o.measure.log_arg,
                          "peaks not stored in the tuning database");
    }
    if (text)
        cJSON_free(text);
    cJSON_Delete(doc);
    return ET_OK;
}

/*
 * peaks_db.c - device peaks kept in the tuning database (peaks_db.h).
 */
#include "tune/peaks_db.h"
#include "roofline/report.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void str(const cJSON *o, const char *key, char *buf, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(v))
        snprintf(buf, cap, "%s", v->valuestring);
}

static et_spread spread(const cJSON *o)
{
    et_spread s = {0, 0, 0, 0};
    if (!cJSON_IsObject(o))
        return s;
    s.runs = (int)num(o, "runs");
    s.min = num(o, "min");
    s.median = num(o, "median");
    s.max = num(o, "max");
    return s;
}

/* The JSON of et_peaks_to_json back into p. */
static et_status parse(const char *text, et_peaks *p, et_error *err)
{
    cJSON *doc = cJSON_Parse(text);
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return et_errorf(err, ET_ERR_INPUT,
                         "stored peaks are not a JSON object");
    }
    memset(p, 0, sizeof *p);
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(doc, "device");
    str(dev, "name", p->device_name, sizeof p->device_name);
    str(dev, "backend", p->backend, sizeof p->backend);
    str(dev, "driver", p->driver, sizeof p->driver);
    str(doc, "eintune_version", p->eintune_version,
        sizeof p->eintune_version);
    const cJSON *gf = cJSON_GetObjectItemCaseSensitive(doc, "gflops");
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(doc, "gflops_spread");
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        const char *n = et_dtype_name((et_dtype)t);
        double v = num(gf, n);
        if (v > 0) {
            p->gflops[t] = v;
            p->gflops_spread[t] =
                spread(cJSON_GetObjectItemCaseSensitive(gs, n));
        }
    }
    p->bandwidth_gbs = num(doc, "bandwidth_gbs");
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(doc, "bandwidth");
    for (int k = 0; k < ET_BW_COUNT; k++) {
        const cJSON *o =
            cJSON_GetObjectItemCaseSensitive(bw, et_bw_kind_name(k));
        double v = num(o, "gbs");
        if (v > 0) {
            p->bw_gbs[k] = v;
            p->bw_spread[k] = spread(o);
        }
    }
    cJSON_Delete(doc);
    p->source = ET_PEAKS_CACHED;
    return ET_OK;
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
    et_status st = et_peaks_get(dev, &o, out, err);
    if (st != ET_OK || out->source == ET_PEAKS_OVERRIDE)
        return st;
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

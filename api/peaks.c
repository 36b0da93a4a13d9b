/*
 * peaks.c - the device's peaks through the public API (et_peaks_report_*):
 * from the tuning database, the per-device cache file or measured
 * (tune/peaks_db.h, roofline/peaks.h), whose table and JSON (`eintune
 * peaks`) report/ makes; and the peaks measured again when a kernel
 * `tune` or `run` timed is above its roofline (api_roof_again).
 */
#include "api/api_impl.h"

#include "measure/remote.h"
#include "report/report.h"
#include "roofline/peaks.h"
#include "tune/peaks_db.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct et_peaks_report {
    et_peaks p;
};

/* The measurement's progress lines, as info. */
static void measure_log(void *arg, const char *msg)
{
    const et_peaks_options *o = arg;
    if (o->log)
        o->log(o->log_arg, ET_LOG_INFO, msg);
}

et_status et_peaks_report_init(const et_peaks_options *o,
                               et_peaks_report **out, et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_OPTIONS(et_peaks_options, o, diag);
    if (o->runs < 0 || o->runs > 1000)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "runs must be in 1..1000 (0: the default), not %d",
                        o->runs);
    et_peaks_get_opts po;
    memset(&po, 0, sizeof po);
    po.remeasure = o->remeasure != 0;
    po.peaks_file = o->peaks_file;
    po.measure.runs = o->runs;
    po.measure.log = measure_log;
    po.measure.log_arg = (void *)o;

    et_error err = {{0}};
    et_device *dev = NULL;
    et_db *db = NULL;
    et_status st;
    if (!o->quick) {
        st = et_db_open(o->db, &db, &err);
        if (st != ET_OK && o->db) {
            api_fail_err(diag, st, ET_INPUT_FILE, &err);
            if (diag)
                snprintf(diag->file, sizeof diag->file, "%s", o->db);
            return st;
        }
        if (st != ET_OK)
            api_logf(o->log, o->log_arg, ET_LOG_WARN,
                     "no tuning database: %s", err.msg);
        err.msg[0] = '\0';
    }
    st = et_device_open_isolated(o->device, NULL, &dev, &err);
    if (st == ET_ERR_DEVICE && !dev) {
        char path[1024];
        if (et_remote_worker_path(path, sizeof(path)) != 0) {
            api_logf(o->log, o->log_arg, ET_LOG_WARN,
                     "no device worker (%s): measuring in this process",
                     path);
            err.msg[0] = '\0';
            st = et_device_open(o->device, &dev, &err);
        }
    }
    if (st != ET_OK) {
        et_db_close(db);
        return api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                         : ET_INPUT_NONE,
                            &err);
    }
    api_logf(o->log, o->log_arg, ET_LOG_INFO, "device %s (%s, driver %s)",
             dev->info.name, et_backend_name(dev->info.target.backend),
             dev->info.driver_version);

    et_peaks_report *r = calloc(1, sizeof *r);
    if (!r) {
        et_device_close(dev);
        et_db_close(db);
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    }
    if (o->quick) {
        /* rough figures: shown, never kept */
        po.measure.quick = true;
        st = et_peaks_measure(dev, &po.measure, &r->p, &err);
    } else {
        st = et_peaks_get_db(dev, db, &po, &r->p, &err);
    }
    et_device_close(dev);
    et_db_close(db);
    if (st != ET_OK) {
        free(r);
        return api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_FILE
                                                         : ET_INPUT_NONE,
                            &err);
    }
    /* On a CPU device another busy process takes whole cores from the
     * benchmark: its runs then spread widely (best ~2x worst on 2 cores). */
    for (int t = 0; r->p.source == ET_PEAKS_MEASURED && t < ET_DTYPE_COUNT;
         t++) {
        const et_spread *s = &r->p.gflops_spread[t];
        if (s->runs > 1 && s->min < 0.7 * s->max) {
            api_logf(o->log, o->log_arg, ET_LOG_WARN,
                     "%s FMA runs varied from %.1f to %.1f GFLOP/s: the "
                     "device may be busy with other work; the best run is "
                     "kept (--remeasure on an idle device to refresh)",
                     et_dtype_name((et_dtype)t), s->min, s->max);
            break;
        }
    }
    *out = r;
    return ET_OK;
}

void et_peaks_report_free(et_peaks_report *r)
{
    free(r);
}

double et_peaks_report_gflops(const et_peaks_report *r, et_dtype t)
{
    return r && (unsigned)t < ET_DTYPE_COUNT ? r->p.gflops[t] : 0;
}

double et_peaks_report_bandwidth(const et_peaks_report *r)
{
    return r ? r->p.bandwidth_gbs : 0;
}

const char *et_peaks_report_source(const et_peaks_report *r)
{
    return r ? et_peaks_source_name(r->p.source) : "";
}

void et_peaks_report_print(const et_peaks_report *r, FILE *f)
{
    if (r && f)
        report_peaks_print(&r->p, f);
}

char *et_peaks_report_json(const et_peaks_report *r)
{
    return r ? report_peaks_json(&r->p) : NULL;
}

int api_roof_again(et_device *dev, et_db *db, const et_einsum *e,
                   double median_s, double high_s, et_peaks *pk,
                   et_roofline *roof, const char *what, char *note,
                   size_t cap, et_log_fn log, void *log_arg)
{
    if (!(high_s < roof->time_s) || pk->source == ET_PEAKS_OVERRIDE)
        return 0;
    double before = 100 * roof->time_s / median_s;
    api_logf(log, log_arg, ET_LOG_WARN,
             "%s measures %.0f %% of its roofline (its interval is above "
             "the roof): measuring the peaks again", what, before);
    et_peaks_get_opts po;
    memset(&po, 0, sizeof po);
    po.remeasure = true;
    po.keep_max = true;
    et_error err = {{0}};
    char why[256] = "";
    et_peaks pk2;
    et_roofline roof2;
    if (et_peaks_get_db(dev, db, &po, &pk2, &err) != ET_OK ||
        et_roofline_compute(e, &pk2, &roof2, why, sizeof why) != ET_OK) {
        snprintf(note, cap, "%s measured %.0f %% of the roofline; "
                 "measuring the peaks again failed: %.120s", what, before,
                 err.msg[0] ? err.msg : why);
    } else {
        *pk = pk2;
        *roof = roof2;
        snprintf(note, cap, "%s measured %.0f %% of the roofline of the "
                 "stored peaks, so the peaks were measured again: now "
                 "%.0f %%", what, before, 100 * roof2.time_s / median_s);
    }
    api_logf(log, log_arg, ET_LOG_WARN, "%s", note);
    return 1;
}

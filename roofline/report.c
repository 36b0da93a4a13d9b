/* report.c - roofline tables and JSON (see report.h). */
#include "roofline/report.h"

#include <math.h>
#include <string.h>

/* ---- peaks -------------------------------------------------------------- */

static cJSON *spread_json(const et_spread *s, const char *value_key,
                          double value)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (value_key)
        cJSON_AddNumberToObject(o, value_key, value);
    cJSON_AddNumberToObject(o, "runs", s->runs);
    cJSON_AddNumberToObject(o, "min", s->min);
    cJSON_AddNumberToObject(o, "median", s->median);
    cJSON_AddNumberToObject(o, "max", s->max);
    return o;
}

cJSON *et_peaks_to_json(const et_peaks *p)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON *dev = cJSON_CreateObject();
    cJSON *gf = cJSON_CreateObject();
    cJSON *gs = cJSON_CreateObject();
    cJSON *bw = cJSON_CreateObject();
    if (!doc || !dev || !gf || !gs || !bw) {
        cJSON_Delete(doc);
        cJSON_Delete(dev);
        cJSON_Delete(gf);
        cJSON_Delete(gs);
        cJSON_Delete(bw);
        return NULL;
    }
    cJSON_AddStringToObject(dev, "name", p->device_name);
    cJSON_AddStringToObject(dev, "backend", p->backend);
    cJSON_AddStringToObject(dev, "driver", p->driver);
    cJSON_AddItemToObject(doc, "device", dev);
    cJSON_AddStringToObject(doc, "eintune_version", p->eintune_version);
    cJSON_AddStringToObject(doc, "source", et_peaks_source_name(p->source));
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        if (!(p->gflops[t] > 0))
            continue;
        const char *n = et_dtype_name((et_dtype)t);
        cJSON_AddNumberToObject(gf, n, p->gflops[t]);
        if (p->gflops_spread[t].runs > 0)
            cJSON_AddItemToObject(gs, n,
                                  spread_json(&p->gflops_spread[t], NULL, 0));
    }
    cJSON_AddItemToObject(doc, "gflops", gf);
    cJSON_AddNumberToObject(doc, "bandwidth_gbs", p->bandwidth_gbs);
    cJSON_AddItemToObject(doc, "gflops_spread", gs);
    for (int k = 0; k < ET_BW_COUNT; k++)
        if (p->bw_gbs[k] > 0)
            cJSON_AddItemToObject(bw, et_bw_kind_name((et_bw_kind)k),
                                  spread_json(&p->bw_spread[k], "gbs",
                                              p->bw_gbs[k]));
    cJSON_AddItemToObject(doc, "bandwidth", bw);
    return doc;
}

static void spread_cols(FILE *f, const et_spread *s)
{
    if (s->runs > 0)
        fprintf(f, " %10.1f %10.1f %10.1f %5d\n", s->min, s->median, s->max,
                s->runs);
    else
        fprintf(f, " %10s %10s %10s %5s\n", "-", "-", "-", "-");
}

void et_peaks_print(FILE *f, const et_peaks *p)
{
    fprintf(f, "device:  %s (%s, driver %s)\n", p->device_name, p->backend,
            p->driver);
    fprintf(f, "source:  %s\n\n", et_peaks_source_name(p->source));
    fprintf(f, "%-14s %12s %10s %10s %10s %5s\n", "peak", "best", "min",
            "median", "max", "runs");
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        if (!(p->gflops[t] > 0))
            continue;
        char label[32];
        snprintf(label, sizeof(label), "%s FMA", et_dtype_name((et_dtype)t));
        fprintf(f, "%-14s %7.1f GF/s", label, p->gflops[t]);
        spread_cols(f, &p->gflops_spread[t]);
    }
    for (int k = 0; k < ET_BW_COUNT; k++) {
        if (!(p->bw_gbs[k] > 0))
            continue;
        char label[32];
        snprintf(label, sizeof(label), "%s", et_bw_kind_name((et_bw_kind)k));
        fprintf(f, "%-14s %7.1f GB/s", label, p->bw_gbs[k]);
        spread_cols(f, &p->bw_spread[k]);
    }
    fprintf(f, "\nroofline uses: ");
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (p->gflops[t] > 0)
            fprintf(f, "%s %.1f GFLOP/s, ", et_dtype_name((et_dtype)t),
                    p->gflops[t]);
    fprintf(f, "bandwidth %.1f GB/s\n", p->bandwidth_gbs);
}

/* ---- one einsum --------------------------------------------------------- */

cJSON *et_roofline_gops_json(const et_roofline *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (r->ops[t] > 0)
            cJSON_AddNumberToObject(o, et_dtype_name((et_dtype)t),
                                    r->gops[t]);
    return o;
}

cJSON *et_measured_gops_json(const et_roofline *r, double measured_s)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (r->ops[t] > 0)
            cJSON_AddNumberToObject(
                o, et_dtype_name((et_dtype)t),
                et_roofline_measured_gops(r, (et_dtype)t, measured_s));
    return o;
}

cJSON *et_roofline_to_json(const et_roofline *r, const et_peaks *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *pk = cJSON_CreateObject();
    cJSON *gf = cJSON_CreateObject();
    cJSON *rg = et_roofline_gops_json(r);
    if (!o || !pk || !gf || !rg) {
        cJSON_Delete(o);
        cJSON_Delete(pk);
        cJSON_Delete(gf);
        cJSON_Delete(rg);
        return NULL;
    }
    cJSON_AddNumberToObject(o, "roofline_s", r->time_s);
    cJSON_AddStringToObject(o, "bound", et_bound_name(r->bound));
    cJSON_AddNumberToObject(o, "compute_s", r->compute_s);
    cJSON_AddNumberToObject(o, "memory_s", r->memory_s);
    cJSON_AddItemToObject(o, "roofline_gops", rg);
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (p->gflops[t] > 0)
            cJSON_AddNumberToObject(gf, et_dtype_name((et_dtype)t),
                                    p->gflops[t]);
    cJSON_AddItemToObject(pk, "gflops", gf);
    cJSON_AddNumberToObject(pk, "bandwidth_gbs", p->bandwidth_gbs);
    cJSON_AddItemToObject(o, "peaks", pk);
    return o;
}

int et_report_add_gops(cJSON *obj, const et_roofline *r, double measured_s)
{
    cJSON *m = et_measured_gops_json(r, measured_s);
    cJSON *g = et_roofline_gops_json(r);
    if (!m || !g) {
        cJSON_Delete(m);
        cJSON_Delete(g);
        return -1;
    }
    cJSON_AddItemToObject(obj, "gops", m);
    cJSON_AddItemToObject(obj, "roofline_gops", g);
    if (!cJSON_AddNumberToObject(obj, "roofline_fraction",
                                 et_roofline_ratio(r, measured_s)))
        return -1;
    return 0;
}

static void rule(FILE *f)
{
    fprintf(f, "------+-----------------+-----------------+--------------\n");
}

void et_roofline_table(FILE *f, const et_roofline *r, double measured_s)
{
    double ratio = et_roofline_ratio(r, measured_s);
    fprintf(f, "Dtype | Measured GOps/s | Roofline GOps/s | %% of roofline\n");
    rule(f);
    int rows = 0;
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        if (r->ops[t] <= 0)
            continue;
        fprintf(f, "%-5s | %15.3f | %15.3f | %12.1f\n",
                et_dtype_name((et_dtype)t),
                et_roofline_measured_gops(r, (et_dtype)t, measured_s),
                r->gops[t], 100.0 * ratio);
        rows++;
    }
    if (rows == 0)
        fprintf(f, "%-5s | %15s | %15s | %12.1f\n", "-", "0 ops", "0 ops",
                100.0 * ratio);
    double eff = measured_s > 0 ? (double)r->bytes / measured_s / 1e9 : 0;
    double roof_bw = r->memory_s > 0 ? (double)r->bytes / r->memory_s / 1e9
                                     : 0;
    fprintf(f,
            "%s-bound, intensity %.3g ops/byte; time %.4g ms (roofline "
            "%.4g ms); %.2f GB/s moved (peak %.2f GB/s)\n",
            et_bound_name(r->bound), r->intensity, measured_s * 1e3,
            r->time_s * 1e3, eff, roof_bw);
    if (ratio > 1.05)
        fprintf(f,
                "note: %.0f %% of the roofline: the peaks are lower than this "
                "device reaches (measured while it was busy? `eintune peaks "
                "--remeasure` on an idle device), or the data fits in a "
                "cache and is read faster than from memory\n",
                100.0 * ratio);
}

void et_roofline_print(FILE *f, const et_roofline *r, const et_peaks *p)
{
    fprintf(f, "roofline: %.4g ms, %s-bound (compute %.4g ms, memory %.4g "
            "ms)\n",
            r->time_s * 1e3, et_bound_name(r->bound), r->compute_s * 1e3,
            r->memory_s * 1e3);
    fprintf(f, "  roofs (%s peaks of %s):", et_peaks_source_name(p->source),
            p->device_name);
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (r->ops[t] > 0)
            fprintf(f, " %s peak %.1f GFLOP/s, roofline %.3f GOps/s;",
                    et_dtype_name((et_dtype)t), r->peak_gflops[t],
                    r->gops[t]);
    fprintf(f, " bandwidth %.1f GB/s\n", p->bandwidth_gbs);
}

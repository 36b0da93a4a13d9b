/* model.c - the roofline model: times and GOps/s from counts and peaks. */
#include "roofline/roofline.h"

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char *const bw_kind_names[] = {"read", "copy"};
static_assert(sizeof(bw_kind_names) / sizeof(bw_kind_names[0]) == ET_BW_COUNT,
              "bw_kind_names must name every et_bw_kind");

static const char *const level_names[] = {"L1", "L2", "L3", "DRAM"};
static_assert(sizeof(level_names) / sizeof(level_names[0]) ==
                  ET_MEM_LEVEL_COUNT,
              "level_names must name every et_mem_level");

static const char *const pattern_names[] = {"chunk", "strided", "walk",
                                            "sweep"};
static_assert(sizeof(pattern_names) / sizeof(pattern_names[0]) ==
                  ET_BW_PATTERN_COUNT,
              "pattern_names must name every et_bw_pattern");

static const char *const source_names[] = {"measured", "cached", "override"};
static_assert(sizeof(source_names) / sizeof(source_names[0]) ==
                  ET_PEAKS_SOURCE_COUNT,
              "source_names must name every et_peaks_source");

static const char *const bound_names[] = {"memory", "compute"};
static_assert(sizeof(bound_names) / sizeof(bound_names[0]) == ET_BOUND_COUNT,
              "bound_names must name every et_bound");

const char *et_bw_kind_name(et_bw_kind k)
{
    return (unsigned)k < ET_BW_COUNT ? bw_kind_names[k] : "?";
}

const char *et_mem_level_name(et_mem_level l)
{
    return (unsigned)l < ET_MEM_LEVEL_COUNT ? level_names[l] : "?";
}

const char *et_bw_pattern_name(et_bw_pattern p)
{
    return (unsigned)p < ET_BW_PATTERN_COUNT ? pattern_names[p] : "?";
}

const char *et_peaks_source_name(et_peaks_source s)
{
    return (unsigned)s < ET_PEAKS_SOURCE_COUNT ? source_names[s] : "?";
}

const char *et_bound_name(et_bound b)
{
    return (unsigned)b < ET_BOUND_COUNT ? bound_names[b] : "?";
}

double et_peaks_gflops_for(const et_peaks *p, et_dtype t)
{
    if ((unsigned)t >= ET_DTYPE_COUNT)
        return 0;
    if (p->gflops[t] > 0)
        return p->gflops[t];
    /* f16 is a storage type computed in f32 where it is not native. */
    if (t == ET_F16 && p->gflops[ET_F32] > 0)
        return p->gflops[ET_F32];
    return 0;
}

/* Every level's read-only and copy figures after the fallbacks and the
 * raising of roofline.h; 0 where there is none. */
static void level_figures(const et_peaks *p, double r_eff[ET_MEM_LEVEL_COUNT],
                          double c_eff[ET_MEM_LEVEL_COUNT])
{
    /* DRAM first, then each cache level from the largest down, every one
     * raised to the figures of the levels beyond it */
    const et_level_bw *d = &p->level[ET_MEM_DRAM];
    double cp = p->bandwidth_gbs > 0 ? p->bandwidth_gbs : d->gbs[ET_BW_COPY];
    double rd = d->gbs[ET_BW_READ] > 0 ? d->gbs[ET_BW_READ] : cp;
    if (!(cp > 0))
        cp = rd;
    r_eff[ET_MEM_DRAM] = rd;
    c_eff[ET_MEM_DRAM] = cp;
    for (int l = ET_MEM_DRAM - 1; l >= 0; l--) {
        const et_level_bw *lv = &p->level[l];
        double c = lv->gbs[ET_BW_COPY], r = lv->gbs[ET_BW_READ];
        if (!(r > 0))
            r = c;
        r_eff[l] = r > r_eff[l + 1] ? r : r_eff[l + 1];
        c_eff[l] = c > c_eff[l + 1] ? c : c_eff[l + 1];
    }
    /* a kernel that only reads can do what a copy does */
    for (int l = 0; l < ET_MEM_LEVEL_COUNT; l++)
        if (c_eff[l] > r_eff[l])
            r_eff[l] = c_eff[l];
}

/* A cache level the model may use: measured, with a capacity. */
static bool level_usable(const et_peaks *p, int l)
{
    const et_level_bw *lv = &p->level[l];
    return lv->capacity_bytes > 0 &&
           (lv->gbs[ET_BW_READ] > 0 || lv->gbs[ET_BW_COPY] > 0);
}

et_mem_level et_peaks_level_for(const et_peaks *p, int64_t bytes,
                                double *read_gbs, double *copy_gbs)
{
    double r_eff[ET_MEM_LEVEL_COUNT], c_eff[ET_MEM_LEVEL_COUNT];
    level_figures(p, r_eff, c_eff);
    et_mem_level pick = ET_MEM_DRAM;
    for (int l = 0; l < ET_MEM_DRAM; l++) {
        if (level_usable(p, l) && bytes <= p->level[l].capacity_bytes) {
            pick = (et_mem_level)l;
            break;
        }
    }
    if (read_gbs)
        *read_gbs = r_eff[pick];
    if (copy_gbs)
        *copy_gbs = c_eff[pick];
    return pick;
}

/* The memory time of R bytes read and W written at one level's figures
 * (the formula of roofline.h). */
static double level_time(double R, double W, double rd, double cp)
{
    /* a written byte costs what it adds to a copy over a read */
    double cw = 2.0 / (cp * 1e9) - 1.0 / (rd * 1e9);
    if (cw < 0)
        cw = 0;
    double t = R / (rd * 1e9) + W * cw;
    double fastest = (R + W) / ((rd > cp ? rd : cp) * 1e9);
    return t > fastest ? t : fastest;
}

const char *et_roofline_bandwidth_label(const et_roofline *r, char *buf,
                                        size_t cap)
{
    int64_t b = r->read_bytes + r->write_bytes;
    double w = b > 0 ? (double)r->write_bytes / (double)b : 0;
    const char *kind = w < 0.1    ? "read-only"
                       : w >= 0.4 ? "copy"
                                  : "read/copy mix";
    if (r->closer_bytes <= 0) {
        snprintf(buf, cap, "%.1f GB/s (%s, %s)", r->bandwidth_gbs,
                 et_mem_level_name(r->level), kind);
        return buf;
    }
    /* the closer levels' share, in the largest binary unit it fills */
    double c = (double)r->closer_bytes;
    const char *unit = c >= 1 << 20 ? "MiB" : c >= 1 << 10 ? "KiB" : "B";
    double v = c >= 1 << 20 ? c / (1 << 20) : c >= 1 << 10 ? c / (1 << 10) : c;
    snprintf(buf, cap, "%.1f GB/s (%s, %s; %.4g %s of it from closer caches)",
             r->bandwidth_gbs, et_mem_level_name(r->level), kind, v, unit);
    return buf;
}

static void say(char *why, size_t cap, const char *msg, const char *arg)
{
    if (why && cap)
        snprintf(why, cap, msg, arg);
}

et_status et_roofline_from_counts(const int64_t ops[ET_DTYPE_COUNT],
                                  int64_t read_bytes, int64_t write_bytes,
                                  const et_peaks *p, et_roofline *r,
                                  char *why, size_t why_cap)
{
    memset(r, 0, sizeof(*r));
    if (why && why_cap)
        why[0] = '\0';
    if (read_bytes < 0 || write_bytes < 0 ||
        read_bytes > INT64_MAX - write_bytes) {
        say(why, why_cap, "negative or overflowing byte count%s", "");
        return ET_ERR_INPUT;
    }
    int64_t bytes = read_bytes + write_bytes;
    r->bytes = bytes;
    r->read_bytes = read_bytes;
    r->write_bytes = write_bytes;
    r->compute_dtype = ET_F32;
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        if (ops[t] < 0) {
            say(why, why_cap, "negative op count for %s",
                et_dtype_name((et_dtype)t));
            return ET_ERR_INPUT;
        }
        r->ops[t] = ops[t];
        r->ops_total += ops[t];
        if (ops[t] == 0)
            continue;
        double peak = et_peaks_gflops_for(p, (et_dtype)t);
        if (!(peak > 0)) {
            say(why, why_cap, "no %s peak for this device (its ops cannot "
                "be placed under a roof)", et_dtype_name((et_dtype)t));
            return ET_ERR_UNSUPPORTED;
        }
        r->peak_gflops[t] = peak;
        double s = (double)ops[t] / (peak * 1e9);
        if (s > r->compute_s) {
            r->compute_s = s;
            r->compute_dtype = (et_dtype)t;
        }
    }
    r->level = et_peaks_level_for(p, bytes, &r->read_gbs, &r->copy_gbs);
    if (bytes > 0) {
        /* slices: each usable cache level serves the bytes between the
         * capacity of the closer ones and its own, DRAM the rest; every
         * slice reads and writes in the problem's proportion */
        double r_eff[ET_MEM_LEVEL_COUNT], c_eff[ET_MEM_LEVEL_COUNT];
        level_figures(p, r_eff, c_eff);
        const double rf = (double)read_bytes / (double)bytes;
        int64_t below = 0;
        double t = 0;
        for (int l = 0; l < ET_MEM_LEVEL_COUNT && below < bytes; l++) {
            int64_t upto = bytes;
            if (l < ET_MEM_DRAM) {
                if (!level_usable(p, l) || p->level[l].capacity_bytes <= below)
                    continue;
                if (p->level[l].capacity_bytes < bytes)
                    upto = p->level[l].capacity_bytes;
            }
            if (!(r_eff[l] > 0) || !(c_eff[l] > 0)) {
                say(why, why_cap, "no bandwidth figure for this device%s",
                    "");
                return ET_ERR_INPUT;
            }
            double slice = (double)(upto - below);
            t += level_time(slice * rf, slice * (1 - rf), r_eff[l],
                            c_eff[l]);
            if (upto == bytes)
                r->closer_bytes = below;
            below = upto;
        }
        r->memory_s = t;
        r->bandwidth_gbs = (double)bytes / r->memory_s / 1e9;
    }
    if (r->ops_total == 0 && bytes == 0) {
        say(why, why_cap, "nothing to count: no ops and no bytes%s", "");
        return ET_ERR_INPUT;
    }
    r->intensity = bytes > 0 ? (double)r->ops_total / (double)bytes : 0;
    if (r->memory_s >= r->compute_s) {
        r->bound = ET_BOUND_MEMORY;
        r->time_s = r->memory_s;
    } else {
        r->bound = ET_BOUND_COMPUTE;
        r->time_s = r->compute_s;
    }
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        r->gops[t] = r->ops[t] > 0 ? (double)r->ops[t] / r->time_s / 1e9 : 0;
    return ET_OK;
}

et_status et_roofline_compute(const et_einsum *e, const et_peaks *p,
                              et_roofline *r, char *why, size_t why_cap)
{
    int64_t ops[ET_DTYPE_COUNT];
    et_einsum_ops(e, ops);
    int64_t w = et_einsum_operand_elems(e, -1) *
                (int64_t)et_dtype_size(e->out.dtype);
    return et_roofline_from_counts(ops, et_einsum_bytes(e) - w, w, p, r, why,
                                   why_cap);
}

double et_roofline_measured_gops(const et_roofline *r, et_dtype t,
                                 double measured_s)
{
    if ((unsigned)t >= ET_DTYPE_COUNT || !(measured_s > 0) || r->ops[t] <= 0)
        return 0;
    return (double)r->ops[t] / measured_s / 1e9;
}

double et_roofline_ratio(const et_roofline *r, double measured_s)
{
    if (!(measured_s > 0))
        return 0;
    return r->time_s / measured_s;
}

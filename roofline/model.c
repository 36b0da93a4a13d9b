/* model.c - the roofline model: times and GOps/s from counts and peaks. */
#include "roofline/roofline.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

static const char *const bw_kind_names[] = {"read", "write", "copy", "triad"};
static_assert(sizeof(bw_kind_names) / sizeof(bw_kind_names[0]) == ET_BW_COUNT,
              "bw_kind_names must name every et_bw_kind");

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

static void say(char *why, size_t cap, const char *msg, const char *arg)
{
    if (why && cap)
        snprintf(why, cap, msg, arg);
}

et_status et_roofline_from_counts(const int64_t ops[ET_DTYPE_COUNT],
                                  int64_t bytes, const et_peaks *p,
                                  et_roofline *r, char *why, size_t why_cap)
{
    memset(r, 0, sizeof(*r));
    if (why && why_cap)
        why[0] = '\0';
    if (bytes < 0) {
        say(why, why_cap, "negative byte count%s", "");
        return ET_ERR_INPUT;
    }
    r->bytes = bytes;
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
    if (bytes > 0) {
        if (!(p->bandwidth_gbs > 0)) {
            say(why, why_cap, "no bandwidth figure for this device%s", "");
            return ET_ERR_INPUT;
        }
        r->memory_s = (double)bytes / (p->bandwidth_gbs * 1e9);
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
    return et_roofline_from_counts(ops, et_einsum_bytes(e), p, r, why,
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

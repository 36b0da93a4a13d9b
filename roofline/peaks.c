/*
 * peaks.c - the device peaks measured (see peaks.h): et_peaks_measure's
 * passes over the micro-benchmarks (peaks_fma.c, peaks_bw.c), launched
 * through the et_device interface and timed with the device timer, best
 * of N; the variant search they share, the program cache, the runs kept
 * over the passes.
 */
#include "roofline/peaks_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char pk_hexdigit[17] = "0123456789abcdef";

/* ---- variant search ----------------------------------------------------- */

int et_vsearch_run(const et_vsearch_dim *dims, int ndims, int *point,
                   double *best_rate, et_vsearch_rate rate, void *arg)
{
    /* every point timed, so that none is timed twice */
    enum { MEMO = 128 };
    int seen[MEMO][ET_VSEARCH_MAX_DIMS];
    double seen_rate[MEMO];
    int n_seen = 0, evals = 0;
    if (ndims < 1 || ndims > ET_VSEARCH_MAX_DIMS)
        return 0;
    int cur[ET_VSEARCH_MAX_DIMS];
    memcpy(cur, point, (size_t)ndims * sizeof(int));
    double best = rate(arg, cur);
    evals++;
    memcpy(seen[n_seen], cur, (size_t)ndims * sizeof(int));
    seen_rate[n_seen++] = best;
    /* coordinate descent: a coarse pass along each dimension in turn from
     * the start, then passes that refine around the best until one finds
     * nothing better (at most ET_VSEARCH_PASSES) */
    for (int pass = 0; pass < ET_VSEARCH_PASSES; pass++) {
        bool better = false;
        for (int d = 0; d < ndims; d++) {
            int keep = cur[d];
            for (int i = 0; i < dims[d].n; i++) {
                int trial[ET_VSEARCH_MAX_DIMS];
                memcpy(trial, cur, (size_t)ndims * sizeof(int));
                trial[d] = dims[d].values[i];
                if (trial[d] == keep)
                    continue;
                int hit = -1;
                for (int s = 0; s < n_seen && hit < 0; s++)
                    if (!memcmp(seen[s], trial, (size_t)ndims * sizeof(int)))
                        hit = s;
                double r;
                if (hit >= 0) {
                    r = seen_rate[hit];
                } else {
                    r = rate(arg, trial);
                    evals++;
                    if (n_seen < MEMO) {
                        memcpy(seen[n_seen], trial,
                               (size_t)ndims * sizeof(int));
                        seen_rate[n_seen++] = r;
                    }
                }
                if (r > best) {
                    best = r;
                    memcpy(cur, trial, (size_t)ndims * sizeof(int));
                    better = true;
                }
            }
        }
        if (!better)
            break;
    }
    memcpy(point, cur, (size_t)ndims * sizeof(int));
    if (best_rate)
        *best_rate = best;
    return evals;
}

/* ---- measurement -------------------------------------------------------- */

void pk_note(const et_peaks_opts *o, const char *fmt, ...)
{
    if (!o->log)
        return;
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    o->log(o->log_arg, msg);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Spread of n rates (n >= 1); sorts them. */
static et_spread spread_of(double *rates, int n)
{
    qsort(rates, (size_t)n, sizeof(double), cmp_double);
    et_spread s;
    s.runs = n;
    s.min = rates[0];
    s.max = rates[n - 1];
    s.median = n % 2 ? rates[n / 2] : 0.5 * (rates[n / 2 - 1] + rates[n / 2]);
    return s;
}

/* Launches `runs` timed times after one untimed launch (where PoCL
 * compiles for a new geometry); rates[i] = work / duration. */
et_status pk_time_runs(et_device *dev, et_program *p, const et_launch *g,
                       et_buffer *const *args, int nargs, double work,
                       int runs, double *rates, et_error *err)
{
    et_status st = et_launch_kernel(dev, p, g, args, NULL, nargs, NULL, err);
    for (int i = 0; st == ET_OK && i < runs; i++) {
        double s = 0;
        st = et_launch_kernel(dev, p, g, args, NULL, nargs, &s, err);
        if (st == ET_OK && !(s > 0)) {
            st = et_errorf(err, ET_ERR_DEVICE,
                           "device timer gave a duration of %g s", s);
        }
        if (st == ET_OK)
            rates[i] = work / s;
    }
    return st;
}

et_launch pk_launch_1d(int64_t global, int64_t local)
{
    et_launch g;
    memset(&g, 0, sizeof(g));
    g.ndim = 1;
    g.global[0] = global;
    g.global[1] = g.global[2] = 1;
    g.local[0] = local > 0 ? local : 1;
    g.local[1] = g.local[2] = 1;
    g.has_local = local > 0;
    return g;
}

static void prog_cache_free(prog_cache *pc)
{
    for (int i = 0; i < pc->n; i++) {
        et_program_free(pc->dev, pc->prog[i]);
        free(pc->src[i]);
    }
    pc->n = 0;
}

/* The program of src (taken: freed here or kept in the cache). */
et_status pk_prog_get(prog_cache *pc, char *src, const char *name,
                      et_program **out, et_error *err)
{
    for (int i = 0; i < pc->n; i++)
        if (!strcmp(pc->src[i], src)) {
            free(src);
            *out = pc->prog[i];
            return ET_OK;
        }
    if (pc->n == PROG_CACHE_CAP)
        prog_cache_free(pc);
    et_status st = et_program_build(pc->dev, src, name, out, err);
    if (st != ET_OK) {
        free(src);
        return st;
    }
    pc->src[pc->n] = src;
    pc->prog[pc->n++] = *out;
    return ET_OK;
}

/* The kept runs are a multiset: sorting them in place is fine. */
et_spread pk_keep_runs(bench *bn, int fig, double *rates, int n)
{
    double *k = realloc(bn->kept[fig],
                        (size_t)(bn->nkept[fig] + n) * sizeof(double));
    if (!k)
        return spread_of(rates, n);
    memcpy(k + bn->nkept[fig], rates, (size_t)n * sizeof(double));
    bn->kept[fig] = k;
    bn->nkept[fig] += n;
    return spread_of(k, bn->nkept[fig]);
}

/* A pass's fastest launch: the search's best and the winner's runs. */
double pk_fastest_of(double best, const double *rates, int n)
{
    double f = best > 0 ? best : 0;
    for (int i = 0; i < n; i++)
        f = fmax(f, rates[i]);
    return f;
}

/* A later pass times the winner alone: every dimension pinned to the
 * winner's value, fixed[i]. */
void pk_pin_dims(et_vsearch_dim *dims, int *fixed, int n)
{
    for (int i = 0; i < n; i++) {
        dims[i].values = &fixed[i];
        dims[i].n = 1;
    }
}

/* "" in the search, ", pass 2" etc. after it (for the notes). */
const char *pk_pass_text(const bench *bn, char *buf, size_t cap)
{
    if (bn->pass == 0)
        return "";
    snprintf(buf, cap, ", pass %d: the winner again", bn->pass + 1);
    return buf;
}

/* A variant that cannot be built or launched (too large a work-group,
 * a compiler's refusal) only loses the search; a lost device or memory
 * stops the whole measurement. */
double pk_variant_failed(bench *bn, et_status st, const et_error *e)
{
    if (st == ET_ERR_NOMEM || st == ET_ERR_TIMEOUT || st == ET_ERR_CRASH) {
        bn->st = st;
        *bn->err = *e;
    }
    return 0;
}

/* ---- the passes --------------------------------------------------------- */

et_status et_peaks_measure(et_device *dev, const et_peaks_opts *opts,
                           et_peaks *out, et_error *err)
{
    et_peaks_opts o;
    if (opts)
        o = *opts;
    else
        memset(&o, 0, sizeof(o));
    int runs = o.runs > 0 ? o.runs : (o.quick ? 2 : 5);
    int passes = o.passes > 0 ? o.passes : (o.quick ? 1 : 2);
    double target_s = o.target_s > 0 ? o.target_s : (o.quick ? 0.005 : 0.02);
    size_t bytes = o.bw_bytes ? o.bw_bytes
                              : (o.quick ? (size_t)4 << 20 : (size_t)64 << 20);
    const et_device_info *info = &dev->info;
    const et_target *tg = &info->target;
    /* DRAM buffers at least four times the largest cache */
    for (int l = 0; !o.bw_bytes && !o.quick && l < ET_CACHE_LEVELS; l++)
        if (info->cache[l].bytes > 0 &&
            bytes < 4 * (size_t)info->cache[l].bytes)
            bytes = 4 * (size_t)info->cache[l].bytes;
    if (tg->global_mem_bytes > 0 && bytes > (size_t)tg->global_mem_bytes / 4)
        bytes = (size_t)tg->global_mem_bytes / 4;
    /* whole work-groups of 256 for every width and elements per item */
    size_t quantum = 16 * sizeof(float) * 64 * 256;
    bytes = bytes / quantum * quantum;
    if (bytes == 0)
        bytes = quantum;

    memset(out, 0, sizeof(*out));
    snprintf(out->device_name, sizeof(out->device_name), "%s", info->name);
    snprintf(out->backend, sizeof(out->backend), "%s",
             et_backend_name(tg->backend));
    snprintf(out->driver, sizeof(out->driver), "%s", info->driver_version);
    snprintf(out->eintune_version, sizeof(out->eintune_version), "%s",
             ET_VERSION);
    out->bench_version = ET_PEAKS_BENCH_VERSION;
    out->source = ET_PEAKS_MEASURED;
    err->msg[0] = '\0';

    bench bn;
    memset(&bn, 0, sizeof bn);
    bn.dev = dev;
    bn.o = &o;
    bn.pc.dev = dev;
    bn.runs = runs;
    bn.short_runs = 3;
    bn.target_s = target_s;
    bn.err = err;
    /* Pass 1 searches every figure's variants; each later pass times the
     * winners again, seconds after, and a figure keeps its fastest run of
     * any pass: a spell in which the machine ran slowly (another process,
     * a host that took a core away for a while) then lowers one pass, not
     * the ceiling. */
    pk_note(&o, ET_PEAKS_NOTE_START "%s: FMA throughput, then bandwidth "
            "per memory level; %d pass%s", info->name, passes,
            passes > 1 ? "es" : "");
    et_status st = ET_OK;
    for (bn.pass = 0; st == ET_OK && bn.pass < passes; bn.pass++) {
        st = pk_measure_fma(&bn, ET_F32, out);
        if (st == ET_OK && tg->has_fp64)
            st = pk_measure_fma(&bn, ET_F64, out);
        if (st == ET_OK && tg->has_fp16)
            st = pk_measure_fma(&bn, ET_F16, out);
        /* the FMA programs are not needed until the next pass */
        prog_cache_free(&bn.pc);
        if (st == ET_OK)
            st = pk_measure_bw(&bn, bytes, out);
        prog_cache_free(&bn.pc);
    }
    for (int f = 0; f < FIG_COUNT; f++)
        free(bn.kept[f]);
    for (int t = 0; st == ET_OK && t < ET_DTYPE_COUNT; t++)
        if (!isfinite(out->gflops[t])) {
            st = et_errorf(err, ET_ERR_DEVICE,
                           "%s FMA benchmark gave a non-finite figure",
                           et_dtype_name((et_dtype)t));
        }
    return st;
}

/* inputs.c - xoshiro256** generator, input distributions, guarded buffers. */
#include "measure/inputs.h"

#include "einsum/einsum.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- generator ---------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void et_rng_seed(et_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t et_rng_next(et_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double et_rng_uniform(et_rng *r)
{
    return (double)(et_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t et_rng_below(et_rng *r, uint64_t n)
{
    /* rejection of the short last bucket keeps it unbiased */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = et_rng_next(r);
    while (x >= limit);
    return x % n;
}

double et_rng_normal(et_rng *r)
{
    /* polar method; the second value of each pair is dropped so that a
     * generator's state alone decides the next value */
    for (;;) {
        double u = 2 * et_rng_uniform(r) - 1;
        double v = 2 * et_rng_uniform(r) - 1;
        double s = u * u + v * v;
        if (s > 0 && s < 1)
            return u * sqrt(-2 * log(s) / s);
    }
}

uint64_t et_seed_mix(uint64_t seed, uint64_t a, uint64_t b)
{
    uint64_t x = seed;
    uint64_t h = splitmix64(&x);
    x = h ^ (a * 0xd1b54a32d192ed03ull);
    h = splitmix64(&x);
    x = h ^ (b * 0xaef17502108ef2d9ull);
    return splitmix64(&x);
}

/* ---- distributions ------------------------------------------------------ */

static const char *const dist_names[] = {"uniform", "normal", "mixed"};
static_assert(sizeof(dist_names) / sizeof(dist_names[0]) == ET_DIST_COUNT,
              "dist_names must match et_dist");

const char *et_dist_name(et_dist d)
{
    if ((unsigned)d >= ET_DIST_COUNT)
        return "?";
    return dist_names[d];
}

static double draw(et_rng *r, et_dist d, et_dtype t)
{
    switch (d) {
    case ET_DIST_NORMAL:
        return et_rng_normal(r);
    case ET_DIST_MIXED: {
        int span = t == ET_F16 ? 10 : 20;
        int k = (int)et_rng_below(r, (uint64_t)(2 * span + 1)) - span;
        return (2 * et_rng_uniform(r) - 1) * ldexp(1.0, k);
    }
    case ET_DIST_UNIFORM:
    default:
        return 2 * et_rng_uniform(r) - 1;
    }
}

void et_inputs_fill(void *dst, et_dtype t, size_t n, et_dist d,
                    uint64_t seed)
{
    et_rng r;
    et_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        double v = draw(&r, d, t);
        switch (t) {
        case ET_F16:
            ((uint16_t *)dst)[i] = et_float_to_half((float)v);
            break;
        case ET_F32:
            ((float *)dst)[i] = (float)v;
            break;
        default:
            ((double *)dst)[i] = v;
            break;
        }
    }
}

void et_fill_nan(void *dst, et_dtype t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (t) {
        case ET_F16:
            ((uint16_t *)dst)[i] = 0x7e00;
            break;
        case ET_F32:
            ((float *)dst)[i] = NAN;
            break;
        default:
            ((double *)dst)[i] = NAN;
            break;
        }
    }
}

double et_elem_get(const void *base, et_dtype t, size_t i)
{
    switch (t) {
    case ET_F16:
        return et_half_to_float(((const uint16_t *)base)[i]);
    case ET_F32:
        return ((const float *)base)[i];
    default:
        return ((const double *)base)[i];
    }
}

/* ---- guarded device buffers --------------------------------------------- */

#define GUARD_MIN 4096
#define CANARY_SEED 0x63616e617279ull

size_t et_guard_bytes(const et_device *dev)
{
    size_t align = 128;
    if (dev && dev->info.target.mem_base_addr_align > 0)
        align = (size_t)dev->info.target.mem_base_addr_align;
    return (GUARD_MIN + align - 1) / align * align;
}

/* The canary: pseudo-random bytes from a fixed seed, one pattern for the
 * guard before the data and another for the guard after it. */
static void canary(unsigned char *p, size_t n, int which)
{
    et_rng r;
    et_rng_seed(&r, CANARY_SEED + (uint64_t)which);
    for (size_t i = 0; i < n; i += 8) {
        uint64_t x = et_rng_next(&r);
        for (size_t k = 0; k < 8 && i + k < n; k++)
            p[i + k] = (unsigned char)(x >> (8 * k));
    }
}

static et_status write_canaries(et_device *dev, const et_guarded *g,
                                et_error *err)
{
    unsigned char *c = malloc(g->guard);
    if (!c)
        return et_errorf(err, ET_ERR_NOMEM, "guard: out of memory");
    canary(c, g->guard, 0);
    et_status st = et_buffer_write(dev, g->buf, 0, c, g->guard, err);
    if (st == ET_OK) {
        canary(c, g->guard, 1);
        st = et_buffer_write(dev, g->buf, g->guard + g->bytes, c, g->guard,
                             err);
    }
    free(c);
    return st;
}

et_status et_guarded_alloc(et_device *dev, size_t data_bytes, et_guarded *g,
                           et_error *err)
{
    g->buf = NULL;
    g->guard = et_guard_bytes(dev);
    g->bytes = data_bytes;
    et_status st =
        et_buffer_alloc(dev, data_bytes + 2 * g->guard, &g->buf, err);
    if (st != ET_OK) {
        g->buf = NULL;
        return st;
    }
    st = write_canaries(dev, g, err);
    if (st != ET_OK)
        et_guarded_free(dev, g);
    return st;
}

et_status et_guarded_write(et_device *dev, const et_guarded *g,
                           const void *src, et_error *err)
{
    if (g->bytes == 0)
        return ET_OK;
    return et_buffer_write(dev, g->buf, g->guard, src, g->bytes, err);
}

et_status et_guarded_fill_nan(et_device *dev, const et_guarded *g,
                              et_dtype t, et_error *err)
{
    /* one element of NaN, repeated on the device (et_buffer_fill): a
     * verification fills every output before every trial */
    unsigned char nan[8];
    size_t es = et_dtype_size(t);
    et_fill_nan(nan, t, 1);
    et_status st = ET_OK;
    if (g->bytes)
        st = et_buffer_fill(dev, g->buf, g->guard, nan, es,
                            g->bytes / es * es, err);
    if (st == ET_OK)
        st = write_canaries(dev, g, err);
    return st;
}

et_status et_guarded_read(et_device *dev, const et_guarded *g, void *dst,
                          et_error *err)
{
    if (g->bytes == 0)
        return ET_OK;
    return et_buffer_read(dev, g->buf, g->guard, dst, g->bytes, err);
}

et_status et_guarded_check(et_device *dev, const et_guarded *g,
                           bool *intact, char *where, size_t where_cap,
                           et_error *err)
{
    *intact = true;
    unsigned char *got = malloc(2 * g->guard);
    if (!got)
        return et_errorf(err, ET_ERR_NOMEM, "guard: out of memory");
    unsigned char *want = got + g->guard;
    et_status st = ET_OK;
    for (int which = 0; which < 2 && *intact; which++) {
        size_t off = which == 0 ? 0 : g->guard + g->bytes;
        st = et_buffer_read(dev, g->buf, off, got, g->guard, err);
        if (st != ET_OK)
            break;
        canary(want, g->guard, which);
        size_t first = SIZE_MAX, last = 0, changed = 0;
        for (size_t i = 0; i < g->guard; i++) {
            if (got[i] != want[i]) {
                if (first == SIZE_MAX)
                    first = i;
                last = i;
                changed++;
            }
        }
        if (changed == 0)
            continue;
        *intact = false;
        if (where && which == 0)
            snprintf(where, where_cap,
                     "guard before the data overwritten from byte %zu to "
                     "byte %zu before the start (%zu bytes changed)",
                     g->guard - first, g->guard - last, changed);
        else if (where)
            snprintf(where, where_cap,
                     "guard after the data overwritten at byte %zu past the "
                     "end (%zu bytes changed, the last at byte %zu)",
                     first, changed, last);
    }
    free(got);
    return st;
}

void et_guarded_free(et_device *dev, et_guarded *g)
{
    if (g->buf)
        et_buffer_free(dev, g->buf);
    g->buf = NULL;
}

/*
 * inputs.h - seeded input data and guarded device buffers.
 *
 * Generator: xoshiro256** seeded through splitmix64, written out here so
 * the same seed gives the same bits on every machine. Uniform and
 * mixed-magnitude values use only exact arithmetic (integer -> double
 * conversions, multiplications by powers of two); normal values use the
 * polar method, whose log and sqrt come from libm (sqrt is correctly
 * rounded; glibc's log is the same on every x86-64 and aarch64 build).
 * Every value is rounded to the operand's dtype before it is stored, so
 * the host reference sees exactly the bits the device sees (f16 through
 * et_float_to_half).
 *
 * Guarded buffers: each device buffer is allocated as
 *     [guard | data | guard]
 * where each guard is a multiple of the device's mem_base_addr_align (so
 * the data, passed to a kernel through launch's offsets argument, keeps
 * the device's base alignment) and holds a canary pattern (pseudo-random
 * bytes from a fixed seed: no float a kernel computes is likely to match
 * it). After a launch, et_guarded_check reads both guards back and names
 * the first overwritten byte. Outputs are pre-filled with NaN so an
 * element the kernel never wrote is found by verification.
 */
#ifndef ET_INPUTS_H
#define ET_INPUTS_H

#include "eintune.h"
#include "measure/backend.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- generator ---------------------------------------------------------- */

typedef struct et_rng {
    uint64_t s[4];
} et_rng;

/* Seeds the generator (any seed, 0 included). */
void et_rng_seed(et_rng *r, uint64_t seed);
/* Next 64 random bits. */
uint64_t et_rng_next(et_rng *r);
/* Uniform on [0, 1), 53 random bits. */
double et_rng_uniform(et_rng *r);
/* Uniform integer in [0, n), n >= 1 (unbiased). */
uint64_t et_rng_below(et_rng *r, uint64_t n);
/* Standard normal (polar method). */
double et_rng_normal(et_rng *r);
/* A seed derived from a base seed and two small numbers (e.g. trial and
 * operand), well mixed by splitmix64. */
uint64_t et_seed_mix(uint64_t seed, uint64_t a, uint64_t b);

/* ---- distributions ------------------------------------------------------ */

typedef enum et_dist {
    ET_DIST_UNIFORM = 0, /* uniform on [-1, 1] */
    ET_DIST_NORMAL,      /* standard normal */
    ET_DIST_MIXED,       /* uniform on [-1, 1] times 2^k, k uniform in
                          * [-20, 20] ([-10, 10] for f16, whose range ends
                          * at 65504) */
    ET_DIST_COUNT
} et_dist;

/* "uniform", "normal", "mixed". */
const char *et_dist_name(et_dist d);

/*
 * Fills n elements of dtype t at dst (f16 as binary16 bits) with values of
 * distribution d from a generator seeded with `seed`, each rounded to t.
 */
void et_inputs_fill(void *dst, et_dtype t, size_t n, et_dist d,
                    uint64_t seed);

/* Fills n elements of dtype t with a quiet NaN. */
void et_fill_nan(void *dst, et_dtype t, size_t n);

/* Element i of an array of dtype t as a double (f16 converted exactly). */
double et_elem_get(const void *base, et_dtype t, size_t i);

/* ---- guarded device buffers --------------------------------------------- */

typedef struct et_guarded {
    et_buffer *buf;      /* the whole allocation */
    size_t guard;        /* bytes of each guard; also the data's offset */
    size_t bytes;        /* bytes of data */
} et_guarded;

/* Guard size for a device: 4 KiB rounded up to a multiple of align. */
size_t et_guard_bytes(const et_device *dev);

/*
 * Allocates data_bytes (0 is allowed: the guards alone) between two guards
 * on dev and writes the canaries. On failure g->buf is NULL. Free with
 * et_guarded_free.
 */
et_status et_guarded_alloc(et_device *dev, size_t data_bytes, et_guarded *g,
                           et_error *err);

/* Writes the data part (g->bytes bytes from src). */
et_status et_guarded_write(et_device *dev, const et_guarded *g,
                           const void *src, et_error *err);

/* Fills the data part with NaN of dtype t (for outputs) and rewrites the
 * canaries (a previous launch may have broken them). */
et_status et_guarded_fill_nan(et_device *dev, const et_guarded *g,
                              et_dtype t, et_error *err);

/* Reads the data part into dst (g->bytes bytes). */
et_status et_guarded_read(et_device *dev, const et_guarded *g, void *dst,
                          et_error *err);

/*
 * Reads both guards back. *intact is false when a canary changed; then
 * `where` (may be NULL) gets e.g. "guard after the data overwritten at
 * byte 0 past the end (4 bytes changed, the last at byte 3)".
 */
et_status et_guarded_check(et_device *dev, const et_guarded *g,
                           bool *intact, char *where, size_t where_cap,
                           et_error *err);

/* Frees the buffer (NULL-safe on g->buf). */
void et_guarded_free(et_device *dev, et_guarded *g);

#endif

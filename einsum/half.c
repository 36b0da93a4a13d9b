/*
 * half.c - IEEE 754 binary16 <-> binary32 conversions, in integer
 * arithmetic so they behave the same on every host and compiler.
 *
 * binary16: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits.
 * Half to float is exact (every half is a float). Float to half rounds to
 * nearest, ties to even; values at or above 65520 (the midpoint between the
 * largest half, 65504, and 2^16) become infinity; values below the smallest
 * subnormal's half (2^-25) become zero, 2^-25 itself ties to zero (even).
 * NaNs stay NaNs: the sign and the top 10 fraction bits are kept and the
 * quiet bit is set, so a signalling NaN whose payload lives in the low bits
 * does not turn into infinity.
 */
#include "einsum/einsum.h"

#include <string.h>

float et_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t frac = h & 0x3ffu;
    uint32_t bits;

    if (exp == 0x1f) {                 /* inf or NaN */
        bits = sign | 0x7f800000u | (frac << 13);
    } else if (exp != 0) {             /* normal */
        bits = sign | ((exp + 112) << 23) | (frac << 13);
    } else if (frac == 0) {            /* signed zero */
        bits = sign;
    } else {                           /* subnormal: normalize */
        int e = -1;
        do {
            frac <<= 1;
            e++;
        } while (!(frac & 0x400u));
        /* value = 1.f * 2^(-14 - (e+1) + 1) = 2^(-15 - e) */
        bits = sign | ((uint32_t)(112 - e) << 23) | ((frac & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* x >> shift rounded to nearest, ties to even (1 <= shift <= 31) */
static uint32_t shift_rne(uint32_t x, unsigned shift)
{
    uint32_t q = x >> shift;
    uint32_t rem = x & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1)))
        q++;
    return q;
}

uint16_t et_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    x &= 0x7fffffffu;

    if (x >= 0x7f800000u) {
        if (x == 0x7f800000u)
            return sign | 0x7c00u;
        return (uint16_t)(sign | 0x7e00u | ((x >> 13) & 0x3ffu));
    }
    if (x >= 0x477ff000u)              /* >= 65520: rounds to infinity */
        return sign | 0x7c00u;
    if (x >= 0x38800000u) {            /* >= 2^-14: normal half */
        /* rebias 127 -> 15 and round off 13 fraction bits; a carry out of
         * the fraction correctly bumps the exponent */
        uint32_t r = shift_rne(x - (112u << 23), 13);
        return (uint16_t)(sign | r);
    }
    if (x <= 0x33000000u)              /* <= 2^-25: rounds to zero */
        return sign;
    /* subnormal half: value = m * 2^(e-150), in units of 2^-24 that is
     * m >> (126 - e); 2^-25 < value < 2^-14 gives e in 102..112 */
    uint32_t e = x >> 23;
    uint32_t m = (x & 0x7fffffu) | 0x800000u;
    return (uint16_t)(sign | shift_rne(m, 126 - e));
}

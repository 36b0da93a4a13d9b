/*
 * clock.h - owns the library's one clock for measuring elapsed time.
 */
#ifndef ET_BASE_CLOCK_H
#define ET_BASE_CLOCK_H

/* Seconds on CLOCK_MONOTONIC: only differences mean anything; never goes
 * back when the wall clock is set. */
double et_now_s(void);

#endif

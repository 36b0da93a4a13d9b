/*
 * clock.c - owns et_now_s (see clock.h).
 */
#include "base/clock.h"

#include <time.h>

double et_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

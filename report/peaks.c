/*
 * peaks.c - the device's peaks as `eintune peaks` reports them (report.h,
 * et_peaks_report_print and et_peaks_report_json): roofline/report.h's
 * table and JSON document.
 */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <stdio.h>

void report_peaks_print(const et_peaks *p, FILE *f)
{
    et_peaks_print(f, p);
}

char *report_peaks_json(const et_peaks *p)
{
    return report_json_text(et_peaks_to_json(p));
}

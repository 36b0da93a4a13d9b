/*
 * check.c - what `eintune check` says about a problem (et_problem_check):
 * its op and byte counts, intensity and, from the device's peaks, the
 * roofline, kept as an et_check_report whose printed and JSON forms
 * (normalized form, dtypes, indices with sizes and roles...) report/
 * makes.
 */
#include "api/api_impl.h"

#include "measure/remote.h"
#include "report/report.h"
#include "roofline/peaks.h"
#include "roofline/roofline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The roofline part: the device's peaks (cached per device, measured on a
 * miss) and the model. A device that cannot be opened is not an error for
 * `check`: the report says why the roofline is missing.
 */
static void check_roofline(et_check_report *r, const char *device)
{
    et_device *dev = NULL;
    et_error err = {{0}};
    char why[256] = "";
    if (et_device_open_isolated(device, NULL, &dev, &err) != ET_OK) {
        snprintf(r->why, sizeof r->why, "%s", err.msg);
        return;
    }
    et_peaks_get_opts po;
    memset(&po, 0, sizeof po);
    if (et_peaks_get(dev, &po, &r->peaks, &err) != ET_OK)
        snprintf(r->why, sizeof r->why, "%s", err.msg);
    else if (et_roofline_compute(&r->e, &r->peaks, &r->roof, why,
                                 sizeof why) != ET_OK)
        snprintf(r->why, sizeof r->why, "%s", why);
    else
        r->have_roof = true;
    et_device_close(dev);
}

et_status et_problem_check(const et_problem *p, const char *device,
                           int roofline, et_check_report **out,
                           et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, p, "p");
    et_check_report *r = calloc(1, sizeof *r);
    if (!r)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    r->e = p->e;
    et_einsum_ops(&r->e, r->ops);
    r->ops_direct = et_einsum_ops_direct(&r->e);
    r->bytes = et_einsum_bytes(&r->e);
    int64_t total_ops = 0;
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        total_ops += r->ops[t];
    r->intensity = (double)total_ops / (double)r->bytes;
    r->want_roof = roofline != 0;
    if (r->want_roof)
        check_roofline(r, device);
    *out = r;
    return ET_OK;
}

void et_check_report_free(et_check_report *r)
{
    free(r);
}

int et_check_report_has_roofline(const et_check_report *r)
{
    return r ? r->have_roof : 0;
}

double et_check_report_roofline_s(const et_check_report *r)
{
    return r && r->have_roof ? r->roof.time_s : 0;
}

void et_check_report_print(const et_check_report *r, FILE *f)
{
    if (r && f)
        report_check_print(r, f);
}

char *et_check_report_json(const et_check_report *r)
{
    return r ? report_check_json(r) : NULL;
}

/*
 * plot.c - the roofline chart (see et_plot_write in report.h), drawn with
 * cairo on an SVG or image (PNG) surface.
 *
 * Layout: the title (the problem) and the subtitle (the device, the run)
 * on top; the roofline panel on the left with log-log axes (decade grid,
 * tick labels at decades, minor ticks at 2..9), the bandwidth slope and a
 * horizontal compute roof for each of the problem's dtypes (each
 * labelled), the candidates, a legend in the panel's lower right corner.
 * Points that a log axis cannot show (no ops, or no time) are left out
 * and counted in a note. Every candidate of one einsum has the same
 * intensity, so on the roofline they stack on one vertical line: they are
 * spread a few pixels apart (the legend says so), and the convergence
 * panel on the right, when there are trials, is where they are told
 * apart: time against elapsed time, the best so far as a step line.
 */
#include "roofline/report.h"

#include <cairo-svg.h>
#include <cairo.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* one panel; the convergence panel doubles the width (less overlap) */
#define PLOT_W 960.0
#define PLOT_H 640.0
#define PANEL_W 840.0
#define TWO_H 700.0
#define MARGIN_L 92.0
#define MARGIN_R 36.0
#define MARGIN_T 56.0
#define MARGIN_T2 78.0 /* with a subtitle */
#define MARGIN_B 72.0
#define MARGIN_B2 104.0 /* with the convergence panel's legend below */
#define JITTER_PX 9.0

typedef struct rgb {
    double r, g, b;
} rgb;

/* Byte values so that cairo's SVG percentages are those of report.h. */

/* The bandwidth slope drawn: the roofline's own (its memory level and
 * read/copy mix) when given, else the peaks' DRAM copy figure. */
static double slope_gbs(const et_plot *pl)
{
    return pl->bandwidth_gbs > 0 ? pl->bandwidth_gbs
                                 : pl->peaks->bandwidth_gbs;
}

static const rgb point_fill = {32 / 255.0, 96 / 255.0, 191 / 255.0};
static const rgb best_fill = {224 / 255.0, 32 / 255.0, 32 / 255.0};
static const rgb roof_rgb[ET_DTYPE_COUNT] = {
    {0.50, 0.20, 0.60}, /* f16: purple */
    {0.85, 0.45, 0.05}, /* f32: orange */
    {0.10, 0.50, 0.20}, /* f64: green */
};
static const rgb bw_rgb = {0.25, 0.25, 0.25};
/* the convergence panel's own colours (not the roofline's fills) */
static const rgb conv_fill = {48 / 255.0, 140 / 255.0, 217 / 255.0};
static const rgb conv_best = {0.80, 0.10, 0.10};
static const rgb step_rgb = {0.80, 0.10, 0.10};
static const rgb fail_rgb = {0.55, 0.55, 0.55};
static const rgb roof_time_rgb = {0.10, 0.50, 0.20};
static const rgb text_rgb = {0, 0, 0};
static const rgb grid_rgb = {0.88, 0.88, 0.88};

typedef struct frame {
    double x0, x1, y0, y1;     /* plot area in device units */
    double lx0, lx1, ly0, ly1; /* log10 of the axis ranges */
} frame;

static double px(const frame *f, double x)
{
    return f->x0 + (log10(x) - f->lx0) / (f->lx1 - f->lx0) * (f->x1 - f->x0);
}

static double py(const frame *f, double y)
{
    return f->y1 - (log10(y) - f->ly0) / (f->ly1 - f->ly0) * (f->y1 - f->y0);
}

static void set_rgb(cairo_t *cr, rgb c)
{
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

static int drawable(const et_plot_point *p)
{
    return isfinite(p->intensity) && isfinite(p->gops) && p->intensity > 0 &&
           p->gops > 0;
}

/* Text with its anchor: ax, ay in [0, 1] of its extents (0.5 = centre). */
static void text_at(cairo_t *cr, double x, double y, double ax, double ay,
                    const char *s)
{
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    cairo_move_to(cr, x - e.x_bearing - ax * e.width,
                  y - e.y_bearing - ay * e.height);
    cairo_show_text(cr, s);
}

static void fmt_tick(char *buf, size_t cap, int decade)
{
    if (decade >= -4 && decade <= 6)
        snprintf(buf, cap, "%g", pow(10, decade));
    else
        snprintf(buf, cap, "1e%d", decade);
}

static void circle_in(cairo_t *cr, double x, double y, rgb fill, int hollow)
{
    cairo_new_path(cr);
    cairo_arc(cr, x, y, 4.5, 0, 2 * M_PI);
    cairo_close_path(cr);
    if (hollow) {
        set_rgb(cr, fill);
        cairo_set_line_width(cr, 1.6);
        cairo_stroke(cr);
        return;
    }
    set_rgb(cr, fill);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0.05, 0.15, 0.35);
    cairo_set_line_width(cr, 0.8);
    cairo_stroke(cr);
}

static void circle(cairo_t *cr, double x, double y)
{
    circle_in(cr, x, y, point_fill, 0);
}

static void diamond_in(cairo_t *cr, double x, double y, rgb fill)
{
    const double r = 8.5;
    cairo_new_path(cr);
    cairo_move_to(cr, x, y - r);
    cairo_line_to(cr, x + r, y);
    cairo_line_to(cr, x, y + r);
    cairo_line_to(cr, x - r, y);
    cairo_close_path(cr);
    set_rgb(cr, fill);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0.3, 0, 0);
    cairo_set_line_width(cr, 1.2);
    cairo_stroke(cr);
}

static void diamond(cairo_t *cr, double x, double y)
{
    diamond_in(cr, x, y, best_fill);
}

/* Is the roof of dtype t drawn? */
static int roof_shown(const et_plot *pl, int t)
{
    return pl->peaks->gflops[t] > 0 &&
           (pl->roof_dtypes == 0 || (pl->roof_dtypes & (1u << t)));
}

/* Axis ranges: every point, the ridge points and the roofs, with room. */
static void choose_ranges(const et_plot *pl, frame *f)
{
    const et_peaks *pk = pl->peaks;
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY,
           ymax = -INFINITY;
    for (int i = 0; i < pl->n_points; i++) {
        const et_plot_point *p = &pl->points[i];
        if (!drawable(p))
            continue;
        xmin = fmin(xmin, p->intensity);
        xmax = fmax(xmax, p->intensity);
        ymin = fmin(ymin, p->gops);
        ymax = fmax(ymax, p->gops);
    }
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        if (!roof_shown(pl, t))
            continue;
        ymax = fmax(ymax, pk->gflops[t]);
        ymin = fmin(ymin, pk->gflops[t] / 100);
        if (slope_gbs(pl) > 0) {
            double ridge = pk->gflops[t] / slope_gbs(pl);
            xmin = fmin(xmin, ridge / 10);
            xmax = fmax(xmax, ridge * 10);
        }
    }
    if (!isfinite(xmin)) {
        xmin = 0.01;
        xmax = 100;
    }
    if (!isfinite(ymin)) {
        ymin = 0.1;
        ymax = 1000;
    }
    f->lx0 = floor(log10(xmin));
    f->lx1 = ceil(log10(xmax * 1.01));
    f->ly0 = floor(log10(ymin));
    f->ly1 = ceil(log10(ymax * 1.6));
    if (f->lx1 - f->lx0 < 2)
        f->lx1 = f->lx0 + 2;
    if (f->ly1 - f->ly0 < 2)
        f->ly0 = f->ly1 - 2;
}

static void draw_axes(cairo_t *cr, const frame *f)
{
    char buf[32];
    cairo_set_line_width(cr, 1);
    /* grid and minor ticks */
    for (int d = (int)f->lx0; d < (int)f->lx1; d++)
        for (int m = 1; m < 10; m++) {
            double x = px(f, m * pow(10, d));
            set_rgb(cr, grid_rgb);
            if (m == 1 && d > (int)f->lx0) {
                cairo_move_to(cr, x, f->y0);
                cairo_line_to(cr, x, f->y1);
                cairo_stroke(cr);
            }
            set_rgb(cr, text_rgb);
            cairo_move_to(cr, x, f->y1);
            cairo_line_to(cr, x, f->y1 - (m == 1 ? 8 : 4));
            cairo_stroke(cr);
        }
    for (int d = (int)f->ly0; d < (int)f->ly1; d++)
        for (int m = 1; m < 10; m++) {
            double y = py(f, m * pow(10, d));
            set_rgb(cr, grid_rgb);
            if (m == 1 && d > (int)f->ly0) {
                cairo_move_to(cr, f->x0, y);
                cairo_line_to(cr, f->x1, y);
                cairo_stroke(cr);
            }
            set_rgb(cr, text_rgb);
            cairo_move_to(cr, f->x0, y);
            cairo_line_to(cr, f->x0 + (m == 1 ? 8 : 4), y);
            cairo_stroke(cr);
        }
    /* frame */
    set_rgb(cr, text_rgb);
    cairo_set_line_width(cr, 1.2);
    cairo_rectangle(cr, f->x0, f->y0, f->x1 - f->x0, f->y1 - f->y0);
    cairo_stroke(cr);
    /* tick labels at decades */
    cairo_set_font_size(cr, 13);
    for (int d = (int)f->lx0; d <= (int)f->lx1; d++) {
        fmt_tick(buf, sizeof(buf), d);
        text_at(cr, px(f, pow(10, d)), f->y1 + 8, 0.5, 0, buf);
    }
    for (int d = (int)f->ly0; d <= (int)f->ly1; d++) {
        fmt_tick(buf, sizeof(buf), d);
        text_at(cr, f->x0 - 8, py(f, pow(10, d)), 1, 0.5, buf);
    }
    /* axis titles */
    cairo_set_font_size(cr, 15);
    text_at(cr, 0.5 * (f->x0 + f->x1), f->y1 + 36, 0.5, 0,
            "arithmetic intensity (ops/byte)");
    cairo_save(cr);
    cairo_translate(cr, f->x0 - 70, 0.5 * (f->y0 + f->y1));
    cairo_rotate(cr, -M_PI / 2);
    text_at(cr, 0, 0, 0.5, 0.5, "performance (GOps/s)");
    cairo_restore(cr);
}

static void draw_roofs(cairo_t *cr, const frame *f, const et_plot *pl)
{
    char buf[96];
    const et_peaks *pk = pl->peaks;
    const double xmin = pow(10, f->lx0), xmax = pow(10, f->lx1);
    double top = 0;
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (roof_shown(pl, t))
            top = fmax(top, pk->gflops[t]);
    cairo_save(cr);
    cairo_rectangle(cr, f->x0, f->y0, f->x1 - f->x0, f->y1 - f->y0);
    cairo_clip(cr);
    cairo_set_line_width(cr, 2.2);
    if (slope_gbs(pl) > 0) {
        /* y = bw * x up to the highest roof (or the right edge) */
        double xe = top > 0 ? fmin(top / slope_gbs(pl), xmax) : xmax;
        set_rgb(cr, bw_rgb);
        cairo_move_to(cr, px(f, xmin), py(f, slope_gbs(pl) * xmin));
        cairo_line_to(cr, px(f, xe), py(f, slope_gbs(pl) * xe));
        cairo_stroke(cr);
    }
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        if (!roof_shown(pl, t))
            continue;
        double ridge = slope_gbs(pl) > 0
                           ? pk->gflops[t] / slope_gbs(pl)
                           : xmin;
        set_rgb(cr, roof_rgb[t]);
        cairo_move_to(cr, px(f, fmax(ridge, xmin)), py(f, pk->gflops[t]));
        cairo_line_to(cr, f->x1, py(f, pk->gflops[t]));
        cairo_stroke(cr);
        /* the part of the slope above this roof is out of reach for t */
        if (pk->gflops[t] < top && slope_gbs(pl) > 0) {
            const double dash[] = {5, 4};
            cairo_set_dash(cr, dash, 2, 0);
            cairo_set_line_width(cr, 1);
            cairo_move_to(cr, px(f, fmax(ridge, xmin)), py(f, pk->gflops[t]));
            cairo_line_to(cr, px(f, fmax(ridge, xmin)), f->y1);
            cairo_stroke(cr);
            cairo_set_dash(cr, NULL, 0, 0);
            cairo_set_line_width(cr, 2.2);
        }
    }
    cairo_restore(cr);

    /* labels */
    cairo_set_font_size(cr, 13);
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        if (!roof_shown(pl, t))
            continue;
        snprintf(buf, sizeof(buf), "%s peak %.1f GFLOP/s",
                 et_dtype_name((et_dtype)t), pk->gflops[t]);
        set_rgb(cr, roof_rgb[t]);
        text_at(cr, f->x1 - 8, py(f, pk->gflops[t]) - 5, 1, 1, buf);
    }
    if (slope_gbs(pl) > 0) {
        /* along the slope, a third of the way in from the left */
        double lx = f->lx0 + (f->lx1 - f->lx0) * 0.12;
        double x = pow(10, lx), y = slope_gbs(pl) * x;
        if (top > 0 && y > top / 3) {
            y = top / 3;
            x = y / slope_gbs(pl);
        }
        if (y > pow(10, f->ly0)) {
            double dx = px(f, x * 10) - px(f, x);
            double dy = py(f, y * 10) - py(f, y);
            snprintf(buf, sizeof(buf), "bandwidth %.1f GB/s",
                     slope_gbs(pl));
            set_rgb(cr, bw_rgb);
            cairo_save(cr);
            cairo_translate(cr, px(f, x), py(f, y));
            cairo_rotate(cr, atan2(dy, dx));
            text_at(cr, 6, -6, 0, 1, buf);
            cairo_restore(cr);
        }
    }
}

static void draw_legend(cairo_t *cr, const frame *f, int n_shown,
                        int has_best, int n_hidden, int jittered)
{
    char buf[96];
    cairo_set_font_size(cr, 13);
    const double w = 250, row = 20;
    int rows = 1 + (has_best ? 1 : 0) + (n_hidden ? 1 : 0) + jittered;
    double x = f->x1 - w - 10, y = f->y1 - rows * row - 14;
    cairo_set_source_rgba(cr, 1, 1, 1, 0.9);
    cairo_rectangle(cr, x, y, w, rows * row + 8);
    cairo_fill_preserve(cr);
    set_rgb(cr, grid_rgb);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    double cy = y + 4 + row / 2;
    circle(cr, x + 16, cy);
    snprintf(buf, sizeof(buf), "timed candidate (%d shown)", n_shown);
    set_rgb(cr, text_rgb);
    text_at(cr, x + 32, cy, 0, 0.5, buf);
    if (has_best) {
        cy += row;
        diamond(cr, x + 16, cy);
        set_rgb(cr, text_rgb);
        text_at(cr, x + 32, cy, 0, 0.5, "best candidate");
    }
    if (jittered) {
        cy += row;
        snprintf(buf, sizeof(buf), "one intensity: spread \u00b1%.0f px in x",
                 JITTER_PX);
        set_rgb(cr, text_rgb);
        text_at(cr, x + 8, cy, 0, 0.5, buf);
    }
    if (n_hidden) {
        cy += row;
        snprintf(buf, sizeof(buf), "%d with 0 ops or no time not shown",
                 n_hidden);
        set_rgb(cr, text_rgb);
        text_at(cr, x + 8, cy, 0, 0.5, buf);
    }
}

/* A pixel offset in [-JITTER_PX, JITTER_PX] for point i, the same on
 * every run (the golden ratio's multiples spread evenly). */
static double jitter(int i)
{
    double v = fmod((i + 1) * 0.6180339887498949, 1.0);
    return (2 * v - 1) * JITTER_PX;
}

/* The roofline panel in frame f (f's axis ranges are chosen here). */
static void draw_roofline(cairo_t *cr, const et_plot *pl, frame *f)
{
    choose_ranges(pl, f);
    draw_axes(cr, f);
    draw_roofs(cr, f, pl);

    int shown = 0, hidden = 0;
    int best = pl->best >= 0 && pl->best < pl->n_points &&
                       drawable(&pl->points[pl->best])
                   ? pl->best
                   : -1;
    /* spread the points only when some share their intensity */
    int jittered = 0;
    for (int i = 0; i < pl->n_points && !jittered; i++)
        for (int j = i + 1; j < pl->n_points && !jittered; j++)
            jittered = drawable(&pl->points[i]) &&
                       drawable(&pl->points[j]) &&
                       fabs(px(f, pl->points[i].intensity) -
                            px(f, pl->points[j].intensity)) < 1;
    cairo_save(cr);
    cairo_rectangle(cr, f->x0, f->y0, f->x1 - f->x0, f->y1 - f->y0);
    cairo_clip(cr);
    for (int i = 0; i < pl->n_points; i++) {
        const et_plot_point *p = &pl->points[i];
        if (!drawable(p)) {
            hidden++;
            continue;
        }
        shown++;
        if (i != best)
            circle(cr, px(f, p->intensity) + (jittered ? jitter(i) : 0),
                   py(f, p->gops));
    }
    cairo_restore(cr);
    if (best >= 0) {
        /* drawn last so that it is on top, at its true intensity; its
         * label beside it */
        const et_plot_point *p = &pl->points[best];
        double x = px(f, p->intensity), y = py(f, p->gops);
        diamond(cr, x, y);
        char label[200];
        if (pl->best_label)
            snprintf(label, sizeof(label), "%s", pl->best_label);
        else
            snprintf(label, sizeof(label), "best: %.3g GOps/s", p->gops);
        cairo_set_font_size(cr, 14);
        cairo_text_extents_t e;
        cairo_text_extents(cr, label, &e);
        double ax = x + 16 + e.width > f->x1 ? 1 : 0;
        double lx = ax ? x - 16 : x + 16;
        /* a white backing keeps the label legible over roofs and points */
        cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
        cairo_rectangle(cr, lx - ax * e.width - 3, y - 10 - e.height - 3,
                        e.width + 6, e.height + 6);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0.65, 0.05, 0.05); /* not best_fill */
        text_at(cr, lx, y - 10, ax, 1, label);
    }
    draw_legend(cr, f, shown, best >= 0, hidden, jittered);
}

/* ---- the convergence panel ---------------------------------------------- */

/* The panel: linear elapsed time (x), log candidate time (y). */
typedef struct cframe {
    double x0, x1, y0, y1; /* plot area in device units */
    double xmax;           /* seconds at the right edge */
    double ly0, ly1;       /* log10 of the time range */
} cframe;

static double cx(const cframe *f, double s)
{
    return f->x0 + s / f->xmax * (f->x1 - f->x0);
}

static double cy(const cframe *f, double t)
{
    return f->y1 - (log10(t) - f->ly0) / (f->ly1 - f->ly0) * (f->y1 - f->y0);
}

/* "94.9 µs", "1.2 ms", "3 s" */
static void fmt_time(char *buf, size_t cap, double s)
{
    if (s >= 1)
        snprintf(buf, cap, "%.3g s", s);
    else if (s >= 1e-3)
        snprintf(buf, cap, "%.3g ms", s * 1e3);
    else if (s >= 1e-6)
        snprintf(buf, cap, "%.3g \u00b5s", s * 1e6);
    else
        snprintf(buf, cap, "%.3g ns", s * 1e9);
}

/* A step of 1, 2 or 5 times a power of ten giving about n ticks. */
static double nice_step(double range, int n)
{
    double raw = range / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void conv_ranges(const et_plot *pl, cframe *f)
{
    double tmin = INFINITY, tmax = -INFINITY, xmax = pl->run_s;
    for (int i = 0; i < pl->n_trials; i++) {
        const et_plot_trial *t = &pl->trials[i];
        xmax = fmax(xmax, t->elapsed_s);
        if (t->time_s > 0 && isfinite(t->time_s)) {
            tmin = fmin(tmin, t->time_s);
            tmax = fmax(tmax, t->time_s);
        }
    }
    if (pl->baseline_s > 0) {
        tmin = fmin(tmin, pl->baseline_s);
        tmax = fmax(tmax, pl->baseline_s);
    }
    if (pl->roofline_s > 0)
        tmin = fmin(tmin, pl->roofline_s);
    if (!isfinite(tmin)) {
        tmin = 1e-4;
        tmax = 1e-2;
    }
    f->ly0 = log10(tmin) - 0.12;
    f->ly1 = log10(tmax) + 0.12;
    if (f->ly1 - f->ly0 < 0.7) {
        double mid = 0.5 * (f->ly0 + f->ly1);
        f->ly0 = mid - 0.35;
        f->ly1 = mid + 0.35;
    }
    f->xmax = xmax > 0 ? xmax * 1.03 : 1;
}

static void conv_axes(cairo_t *cr, const cframe *f)
{
    char buf[48];
    cairo_set_line_width(cr, 1);
    cairo_set_font_size(cr, 13);
    /* time ticks: decades, with 2 and 5 while the range is short */
    double span = f->ly1 - f->ly0;
    for (int d = (int)floor(f->ly0); d <= (int)ceil(f->ly1); d++)
        for (int m = 1; m < 10; m++) {
            double t = m * pow(10, d), lt = log10(t);
            if (lt < f->ly0 || lt > f->ly1)
                continue;
            int labelled = m == 1 || (span < 2.5 && (m == 2 || m == 5));
            double y = cy(f, t);
            if (labelled) {
                set_rgb(cr, grid_rgb);
                cairo_move_to(cr, f->x0, y);
                cairo_line_to(cr, f->x1, y);
                cairo_stroke(cr);
                fmt_time(buf, sizeof(buf), t);
                set_rgb(cr, text_rgb);
                text_at(cr, f->x0 - 8, y, 1, 0.5, buf);
            }
            set_rgb(cr, text_rgb);
            cairo_move_to(cr, f->x0, y);
            cairo_line_to(cr, f->x0 + (labelled ? 8 : 4), y);
            cairo_stroke(cr);
        }
    /* elapsed ticks */
    double step = nice_step(f->xmax, 7);
    for (int i = 0; i * step <= f->xmax * 1.0001; i++) {
        double s = i * step, x = cx(f, s);
        if (i > 0) {
            set_rgb(cr, grid_rgb);
            cairo_move_to(cr, x, f->y0);
            cairo_line_to(cr, x, f->y1);
            cairo_stroke(cr);
        }
        set_rgb(cr, text_rgb);
        cairo_move_to(cr, x, f->y1);
        cairo_line_to(cr, x, f->y1 - 8);
        cairo_stroke(cr);
        snprintf(buf, sizeof(buf), "%g", s);
        text_at(cr, x, f->y1 + 8, 0.5, 0, buf);
    }
    set_rgb(cr, text_rgb);
    cairo_set_line_width(cr, 1.2);
    cairo_rectangle(cr, f->x0, f->y0, f->x1 - f->x0, f->y1 - f->y0);
    cairo_stroke(cr);
    cairo_set_font_size(cr, 15);
    text_at(cr, 0.5 * (f->x0 + f->x1), f->y1 + 36, 0.5, 0,
            ET_PLOT_CONV_X_LABEL);
    cairo_save(cr);
    cairo_translate(cr, f->x0 - 78, 0.5 * (f->y0 + f->y1));
    cairo_rotate(cr, -M_PI / 2);
    text_at(cr, 0, 0, 0.5, 0.5, ET_PLOT_CONV_Y_LABEL);
    cairo_restore(cr);
}

/* A dashed horizontal reference line at time t with a label at the
 * right. */
static void conv_reference(cairo_t *cr, const cframe *f, double t, rgb c,
                           const char *what)
{
    if (!(t > 0))
        return;
    char buf[96], tb[48];
    const double dash[] = {6, 4};
    double y = cy(f, t);
    set_rgb(cr, c);
    cairo_set_line_width(cr, 1.4);
    cairo_set_dash(cr, dash, 2, 0);
    cairo_move_to(cr, f->x0, y);
    cairo_line_to(cr, f->x1, y);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    fmt_time(tb, sizeof(tb), t);
    snprintf(buf, sizeof(buf), "%s %s", what, tb);
    cairo_set_font_size(cr, 13);
    text_at(cr, f->x1 - 6, y - 4, 1, 1, buf);
}

/* One legend entry of the convergence panel: its marker, then its text;
 * entries wrap onto a second row at the panel's right edge. */
typedef enum conv_mark {
    MARK_POINT,
    MARK_HOLLOW,
    MARK_STEP,
    MARK_BEST,
    MARK_TICK
} conv_mark;

static void conv_entry(cairo_t *cr, const cframe *f, double *x, double *y,
                       conv_mark m, const char *text)
{
    cairo_text_extents_t e;
    cairo_text_extents(cr, text, &e);
    const double mark_w = 24;
    if (*x + mark_w + e.width > f->x1 && *x > f->x0) {
        *x = f->x0;
        *y += 20;
    }
    double X = *x, Y = *y;
    switch (m) {
    case MARK_POINT: circle_in(cr, X + 8, Y, conv_fill, 0); break;
    case MARK_HOLLOW: circle_in(cr, X + 8, Y, conv_fill, 1); break;
    case MARK_BEST: diamond_in(cr, X + 9, Y, conv_best); break;
    case MARK_STEP:
        set_rgb(cr, step_rgb);
        cairo_set_line_width(cr, 2.2);
        cairo_move_to(cr, X, Y - 5);
        cairo_line_to(cr, X + 9, Y - 5);
        cairo_line_to(cr, X + 9, Y + 5);
        cairo_line_to(cr, X + 18, Y + 5);
        cairo_stroke(cr);
        break;
    case MARK_TICK:
        set_rgb(cr, fail_rgb);
        cairo_set_line_width(cr, 2);
        cairo_move_to(cr, X + 8, Y - 6);
        cairo_line_to(cr, X + 8, Y + 6);
        cairo_stroke(cr);
        break;
    }
    set_rgb(cr, text_rgb);
    text_at(cr, X + mark_w, Y, 0, 0.5, text);
    *x += mark_w + e.width + 22;
}

static void conv_legend(cairo_t *cr, const cframe *f, int n_timed,
                        int n_cached, int n_untimed, int has_best)
{
    char buf[96];
    cairo_set_font_size(cr, 13);
    double x = f->x0, y = f->y1 + 66;
    if (n_timed > n_cached) {
        snprintf(buf, sizeof(buf), "measured in this run (%d)",
                 n_timed - n_cached);
        conv_entry(cr, f, &x, &y, MARK_POINT, buf);
    }
    if (n_cached) {
        snprintf(buf, sizeof(buf), "from the database (%d)", n_cached);
        conv_entry(cr, f, &x, &y, MARK_HOLLOW, buf);
    }
    conv_entry(cr, f, &x, &y, MARK_STEP, "best so far");
    if (has_best)
        conv_entry(cr, f, &x, &y, MARK_BEST, "final best");
    if (n_untimed) {
        snprintf(buf, sizeof(buf), "not timed: refused, failed, cut (%d)",
                 n_untimed);
        conv_entry(cr, f, &x, &y, MARK_TICK, buf);
    }
}

static void draw_convergence(cairo_t *cr, const et_plot *pl, cframe *f)
{
    conv_ranges(pl, f);
    conv_axes(cr, f);
    cairo_save(cr);
    cairo_rectangle(cr, f->x0, f->y0, f->x1 - f->x0, f->y1 - f->y0);
    cairo_clip(cr);
    conv_reference(cr, f, pl->baseline_s, bw_rgb, "untransformed");
    conv_reference(cr, f, pl->roofline_s, roof_time_rgb, "roofline");

    /* the best so far: flat until a candidate beats it, then down */
    int n_timed = 0, n_cached = 0, n_untimed = 0;
    double best = INFINITY, last_x = 0;
    set_rgb(cr, step_rgb);
    cairo_set_line_width(cr, 2.2);
    cairo_new_path(cr);
    for (int i = 0; i < pl->n_trials; i++) {
        const et_plot_trial *t = &pl->trials[i];
        if (!(t->time_s > 0) || !(t->time_s < best))
            continue;
        double x = cx(f, t->elapsed_s);
        if (isfinite(best)) {
            cairo_line_to(cr, x, cy(f, best));
            cairo_line_to(cr, x, cy(f, t->time_s));
        } else {
            cairo_move_to(cr, x, cy(f, t->time_s));
        }
        best = t->time_s;
        last_x = x;
    }
    if (isfinite(best)) {
        cairo_line_to(cr, fmax(last_x, cx(f, pl->run_s)), cy(f, best));
        cairo_stroke(cr);
    }
    cairo_new_path(cr);
    for (int i = 0; i < pl->n_trials; i++) {
        const et_plot_trial *t = &pl->trials[i];
        double x = cx(f, t->elapsed_s);
        if (!(t->time_s > 0)) {
            /* untimed: a tick on the time axis at when it was answered */
            n_untimed++;
            set_rgb(cr, fail_rgb);
            cairo_set_line_width(cr, 2);
            cairo_move_to(cr, x, f->y1);
            cairo_line_to(cr, x, f->y1 - 12);
            cairo_stroke(cr);
            continue;
        }
        n_timed++;
        n_cached += t->cached != 0;
        if (i != pl->best_trial)
            circle_in(cr, x, cy(f, t->time_s), conv_fill, t->cached);
    }
    cairo_restore(cr);
    int has_best = pl->best_trial >= 0 && pl->best_trial < pl->n_trials &&
                   pl->trials[pl->best_trial].time_s > 0;
    if (has_best) {
        const et_plot_trial *t = &pl->trials[pl->best_trial];
        double x = cx(f, t->elapsed_s), y = cy(f, t->time_s);
        diamond_in(cr, x, y, conv_best);
        char label[96], tb[48];
        fmt_time(tb, sizeof(tb), t->time_s);
        snprintf(label, sizeof(label), "best %s at %.3g s", tb,
                 t->elapsed_s);
        cairo_set_font_size(cr, 14);
        cairo_text_extents_t e;
        cairo_text_extents(cr, label, &e);
        double ax = x + 16 + e.width > f->x1 ? 1 : 0;
        double lx = ax ? x - 16 : x + 16;
        cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
        cairo_rectangle(cr, lx - ax * e.width - 3, y + 10 - 3,
                        e.width + 6, e.height + 6);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0.65, 0.05, 0.05);
        text_at(cr, lx, y + 10, ax, 0, label);
    }
    conv_legend(cr, f, n_timed, n_cached, n_untimed, has_best);
}

/* The canvas: one panel, or the roofline and the convergence side by
 * side. */
static void canvas_size(const et_plot *pl, double *w, double *h)
{
    *w = pl->n_trials > 0 ? 2 * PANEL_W : PLOT_W;
    *h = pl->n_trials > 0 ? TWO_H : PLOT_H;
}

static void draw(cairo_t *cr, const et_plot *pl)
{
    double W, H;
    canvas_size(pl, &W, &H);
    int two = pl->n_trials > 0;
    double top = pl->subtitle ? MARGIN_T2 : MARGIN_T;
    double bottom = two ? MARGIN_B2 : MARGIN_B;
    double pw = two ? PANEL_W : PLOT_W;
    frame f = {MARGIN_L, pw - MARGIN_R, top, H - bottom, 0, 0, 0, 0};
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                           CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);

    char title[600];
    snprintf(title, sizeof(title), "%s",
             pl->title ? pl->title : "roofline");
    cairo_set_font_size(cr, 17);
    set_rgb(cr, text_rgb);
    text_at(cr, W / 2, 14, 0.5, 0, title);
    if (pl->subtitle) {
        cairo_set_font_size(cr, 14);
        text_at(cr, W / 2, 40, 0.5, 0, pl->subtitle);
    }
    draw_roofline(cr, pl, &f);
    if (two) {
        cframe c = {PANEL_W + MARGIN_L + 10, 2 * PANEL_W - MARGIN_R, top,
                    H - bottom, 0, 0, 0};
        draw_convergence(cr, pl, &c);
    }
}

et_plot_point et_plot_point_of(const et_roofline *r, double measured_s)
{
    et_plot_point p;
    p.intensity = r->intensity;
    p.gops = measured_s > 0 ? (double)r->ops_total / measured_s / 1e9 : 0;
    return p;
}

static void say(char *why, size_t cap, const char *fmt, const char *a,
                const char *b)
{
    if (why && cap)
        snprintf(why, cap, fmt, a, b);
}

static et_status plot_render(const char *file, int svg, const et_plot *plot,
                             const char *path, char *why, size_t why_cap);

et_status et_plot_write(const char *path, const et_plot *plot, char *why,
                        size_t why_cap)
{
    if (why && why_cap)
        why[0] = '\0';
    if (!path || !plot || !plot->peaks || plot->n_points < 0 ||
        (plot->n_points > 0 && !plot->points)) {
        say(why, why_cap, "plot: %s%s", "missing path, peaks or points", "");
        return ET_ERR_INPUT;
    }
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (dot && slash && dot < slash)
        dot = NULL;
    int svg = dot && strcasecmp(dot, ".svg") == 0;
    int png = dot && strcasecmp(dot, ".png") == 0;
    if (!svg && !png) {
        say(why, why_cap,
            "%s: unknown plot format '%s' (use a .svg or .png file name)",
            path, dot ? dot : "");
        return ET_ERR_INPUT;
    }
    /* the plot appears whole: cairo writes a temporary file created next
     * to the target with O_EXCL (never through a planted symlink), renamed
     * over the target when complete */
    char tmp[4200];
    if (strlen(path) > sizeof(tmp) - 40) {
        say(why, why_cap, "%s: %s", path, "file name too long");
        return ET_ERR_INPUT;
    }
    const char *ext = svg ? ".svg" : ".png";
    int fd = -1;
    for (int attempt = 0; attempt < 2 && fd < 0; attempt++) {
        snprintf(tmp, sizeof(tmp), "%s.tmp.%ld%s", path, (long)getpid(), ext);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && (errno != EEXIST || unlink(tmp) != 0))
            break;
    }
    if (fd < 0) {
        say(why, why_cap, "%s: cannot write the plot: %s", path,
            strerror(errno));
        return ET_ERR_IO;
    }
    close(fd);
    et_status st = plot_render(tmp, svg, plot, path, why, why_cap);
    if (st == ET_OK && rename(tmp, path) != 0) {
        say(why, why_cap, "%s: cannot write the plot: %s", path,
            strerror(errno));
        st = ET_ERR_IO;
    }
    if (st != ET_OK)
        unlink(tmp);
    return st;
}

/* Growing memory for cairo's SVG stream. */
typedef struct membuf {
    char *data;
    size_t len, cap;
    int failed;
} membuf;

static cairo_status_t mem_write(void *closure, const unsigned char *d,
                                unsigned int n)
{
    membuf *m = closure;
    if (m->len + n + 1 > m->cap) {
        size_t cap = m->cap ? m->cap : 65536;
        while (cap < m->len + n + 1)
            cap *= 2;
        char *p = realloc(m->data, cap);
        if (!p) {
            m->failed = 1;
            return CAIRO_STATUS_NO_MEMORY;
        }
        m->data = p;
        m->cap = cap;
    }
    memcpy(m->data + m->len, d, n);
    m->len += n;
    m->data[m->len] = '\0';
    return CAIRO_STATUS_SUCCESS;
}

/* s with &, <, > and " as XML entities. */
static void xml_put(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* The chart's <title> and <desc>: the text the glyph outlines show, for
 * readers, search and screen readers. */
static void svg_meta(FILE *f, const et_plot *pl)
{
    fputs("<title>", f);
    xml_put(f, pl->title ? pl->title : "roofline");
    if (pl->subtitle) {
        fputs(" \xe2\x80\x94 ", f);
        xml_put(f, pl->subtitle);
    }
    fputs("</title>\n<desc>", f);
    char buf[160];
    fputs(pl->n_trials > 0 ? "Left panel: " : "", f);
    fputs("roofline; x: arithmetic intensity (ops/byte), y: performance "
          "(GOps/s), log-log; roofs:", f);
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        if (roof_shown(pl, t)) {
            snprintf(buf, sizeof(buf), " %s peak %.1f GFLOP/s,",
                     et_dtype_name((et_dtype)t), pl->peaks->gflops[t]);
            fputs(buf, f);
        }
    snprintf(buf, sizeof(buf), " bandwidth %.1f GB/s; %d candidates.",
             slope_gbs(pl), pl->n_points);
    fputs(buf, f);
    if (pl->n_trials > 0) {
        fputs(" Right panel: the search's convergence; x: "
              ET_PLOT_CONV_X_LABEL ", y: " ET_PLOT_CONV_Y_LABEL
              "; each timed candidate as a point, the best so far as a "
              "step line, the final best as a diamond", f);
        if (pl->best_trial >= 0 && pl->best_trial < pl->n_trials &&
            pl->trials[pl->best_trial].time_s > 0) {
            char tb[48];
            fmt_time(tb, sizeof(tb), pl->trials[pl->best_trial].time_s);
            snprintf(buf, sizeof(buf), " (%s at %.3g s)", tb,
                     pl->trials[pl->best_trial].elapsed_s);
            xml_put(f, buf);
        }
        fputs(".", f);
    }
    fputs("</desc>\n", f);
}

/* Writes cairo's SVG text to file with the <title> and <desc> after the
 * root's start tag. */
static et_status svg_write(const char *file, const membuf *m,
                           const et_plot *pl)
{
    const char *root = m->data ? strstr(m->data, "<svg") : NULL;
    const char *open_end = root ? strchr(root, '>') : NULL;
    if (!open_end)
        return ET_ERR_INTERNAL;
    FILE *f = fopen(file, "wb");
    if (!f)
        return ET_ERR_IO;
    size_t head = (size_t)(open_end + 1 - m->data);
    fwrite(m->data, 1, head, f);
    fputc('\n', f);
    svg_meta(f, pl);
    fwrite(m->data + head, 1, m->len - head, f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return ET_ERR_IO;
    return ET_OK;
}

/* Draws the plot into the file `file` (SVG or PNG); `path` names it in
 * messages. */
static et_status plot_render(const char *file, int svg, const et_plot *plot,
                             const char *path, char *why, size_t why_cap)
{
    double W, H;
    canvas_size(plot, &W, &H);
    membuf mem = {NULL, 0, 0, 0};
    cairo_surface_t *s =
        svg ? cairo_svg_surface_create_for_stream(mem_write, &mem, W, H)
            : cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)W, (int)H);
    cairo_status_t cs = cairo_surface_status(s);
    if (cs != CAIRO_STATUS_SUCCESS) {
        say(why, why_cap, "%s: %s", path, cairo_status_to_string(cs));
        cairo_surface_destroy(s);
        free(mem.data);
        return cs == CAIRO_STATUS_NO_MEMORY ? ET_ERR_NOMEM : ET_ERR_IO;
    }
    cairo_t *cr = cairo_create(s);
    draw(cr, plot);
    cs = cairo_status(cr);
    cairo_destroy(cr);
    if (cs == CAIRO_STATUS_SUCCESS && !svg)
        cs = cairo_surface_write_to_png(s, file);
    cairo_surface_finish(s);
    if (cs == CAIRO_STATUS_SUCCESS)
        cs = cairo_surface_status(s);
    cairo_surface_destroy(s);
    if (cs == CAIRO_STATUS_SUCCESS && mem.failed)
        cs = CAIRO_STATUS_NO_MEMORY;
    if (cs != CAIRO_STATUS_SUCCESS) {
        free(mem.data);
        say(why, why_cap, "%s: cannot write the plot: %s", path,
            cairo_status_to_string(cs));
        return cs == CAIRO_STATUS_NO_MEMORY ? ET_ERR_NOMEM : ET_ERR_IO;
    }
    et_status st = svg ? svg_write(file, &mem, plot) : ET_OK;
    free(mem.data);
    if (st != ET_OK)
        say(why, why_cap, "%s: cannot write the plot: %s", path,
            st == ET_ERR_IO ? strerror(errno) : "no <svg> element");
    return st;
}

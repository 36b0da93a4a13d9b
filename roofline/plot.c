/*
 * plot.c - the roofline chart (see et_plot_write in report.h), drawn with
 * cairo on an SVG or image (PNG) surface.
 *
 * Layout: title on top, the plot area with log-log axes (decade grid,
 * tick labels at decades, minor ticks at 2..9), the bandwidth slope and a
 * horizontal compute roof per dtype (each labelled), the candidates, a
 * legend in the plot's lower right corner. Points that a log axis cannot
 * show (no ops, or no time) are left out and counted in a note.
 */
#include "roofline/report.h"

#include <cairo-svg.h>
#include <cairo.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define PLOT_W 960.0
#define PLOT_H 640.0
#define MARGIN_L 92.0
#define MARGIN_R 36.0
#define MARGIN_T 56.0
#define MARGIN_B 72.0

typedef struct rgb {
    double r, g, b;
} rgb;

/* Byte values so that cairo's SVG percentages are those of report.h. */
static const rgb point_fill = {32 / 255.0, 96 / 255.0, 191 / 255.0};
static const rgb best_fill = {224 / 255.0, 32 / 255.0, 32 / 255.0};
static const rgb roof_rgb[ET_DTYPE_COUNT] = {
    {0.50, 0.20, 0.60}, /* f16: purple */
    {0.85, 0.45, 0.05}, /* f32: orange */
    {0.10, 0.50, 0.20}, /* f64: green */
};
static const rgb bw_rgb = {0.25, 0.25, 0.25};
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

static void circle(cairo_t *cr, double x, double y)
{
    cairo_new_path(cr);
    cairo_arc(cr, x, y, 4.5, 0, 2 * M_PI);
    cairo_close_path(cr);
    set_rgb(cr, point_fill);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0.05, 0.15, 0.35);
    cairo_set_line_width(cr, 0.8);
    cairo_stroke(cr);
}

static void diamond(cairo_t *cr, double x, double y)
{
    const double r = 8.5;
    cairo_new_path(cr);
    cairo_move_to(cr, x, y - r);
    cairo_line_to(cr, x + r, y);
    cairo_line_to(cr, x, y + r);
    cairo_line_to(cr, x - r, y);
    cairo_close_path(cr);
    set_rgb(cr, best_fill);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0.3, 0, 0);
    cairo_set_line_width(cr, 1.2);
    cairo_stroke(cr);
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
        if (!(pk->gflops[t] > 0))
            continue;
        ymax = fmax(ymax, pk->gflops[t]);
        ymin = fmin(ymin, pk->gflops[t] / 100);
        if (pk->bandwidth_gbs > 0) {
            double ridge = pk->gflops[t] / pk->bandwidth_gbs;
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
    cairo_translate(cr, 22, 0.5 * (f->y0 + f->y1));
    cairo_rotate(cr, -M_PI / 2);
    text_at(cr, 0, 0, 0.5, 0.5, "performance (GOps/s)");
    cairo_restore(cr);
}

static void draw_roofs(cairo_t *cr, const frame *f, const et_peaks *pk)
{
    char buf[96];
    const double xmin = pow(10, f->lx0), xmax = pow(10, f->lx1);
    double top = 0;
    for (int t = 0; t < ET_DTYPE_COUNT; t++)
        top = fmax(top, pk->gflops[t]);
    cairo_save(cr);
    cairo_rectangle(cr, f->x0, f->y0, f->x1 - f->x0, f->y1 - f->y0);
    cairo_clip(cr);
    cairo_set_line_width(cr, 2.2);
    if (pk->bandwidth_gbs > 0) {
        /* y = bw * x up to the highest roof (or the right edge) */
        double xe = top > 0 ? fmin(top / pk->bandwidth_gbs, xmax) : xmax;
        set_rgb(cr, bw_rgb);
        cairo_move_to(cr, px(f, xmin), py(f, pk->bandwidth_gbs * xmin));
        cairo_line_to(cr, px(f, xe), py(f, pk->bandwidth_gbs * xe));
        cairo_stroke(cr);
    }
    for (int t = 0; t < ET_DTYPE_COUNT; t++) {
        if (!(pk->gflops[t] > 0))
            continue;
        double ridge = pk->bandwidth_gbs > 0
                           ? pk->gflops[t] / pk->bandwidth_gbs
                           : xmin;
        set_rgb(cr, roof_rgb[t]);
        cairo_move_to(cr, px(f, fmax(ridge, xmin)), py(f, pk->gflops[t]));
        cairo_line_to(cr, f->x1, py(f, pk->gflops[t]));
        cairo_stroke(cr);
        /* the part of the slope above this roof is out of reach for t */
        if (pk->gflops[t] < top && pk->bandwidth_gbs > 0) {
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
        if (!(pk->gflops[t] > 0))
            continue;
        snprintf(buf, sizeof(buf), "%s peak %.1f GFLOP/s",
                 et_dtype_name((et_dtype)t), pk->gflops[t]);
        set_rgb(cr, roof_rgb[t]);
        text_at(cr, f->x1 - 8, py(f, pk->gflops[t]) - 5, 1, 1, buf);
    }
    if (pk->bandwidth_gbs > 0) {
        /* along the slope, a third of the way in from the left */
        double lx = f->lx0 + (f->lx1 - f->lx0) * 0.12;
        double x = pow(10, lx), y = pk->bandwidth_gbs * x;
        if (top > 0 && y > top / 3) {
            y = top / 3;
            x = y / pk->bandwidth_gbs;
        }
        if (y > pow(10, f->ly0)) {
            double dx = px(f, x * 10) - px(f, x);
            double dy = py(f, y * 10) - py(f, y);
            snprintf(buf, sizeof(buf), "bandwidth %.1f GB/s",
                     pk->bandwidth_gbs);
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
                        int has_best, int n_hidden)
{
    char buf[96];
    cairo_set_font_size(cr, 13);
    const double w = 230, row = 20;
    int rows = 1 + (has_best ? 1 : 0) + (n_hidden ? 1 : 0);
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
    if (n_hidden) {
        cy += row;
        snprintf(buf, sizeof(buf), "%d with 0 ops or no time not shown",
                 n_hidden);
        set_rgb(cr, text_rgb);
        text_at(cr, x + 8, cy, 0, 0.5, buf);
    }
}

static void draw(cairo_t *cr, const et_plot *pl)
{
    frame f = {MARGIN_L, PLOT_W - MARGIN_R, MARGIN_T, PLOT_H - MARGIN_B,
               0, 0, 0, 0};
    choose_ranges(pl, &f);
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
    text_at(cr, PLOT_W / 2, 16, 0.5, 0, title);

    draw_axes(cr, &f);
    draw_roofs(cr, &f, pl->peaks);

    int shown = 0, hidden = 0;
    int best = pl->best >= 0 && pl->best < pl->n_points &&
                       drawable(&pl->points[pl->best])
                   ? pl->best
                   : -1;
    cairo_save(cr);
    cairo_rectangle(cr, f.x0, f.y0, f.x1 - f.x0, f.y1 - f.y0);
    cairo_clip(cr);
    for (int i = 0; i < pl->n_points; i++) {
        const et_plot_point *p = &pl->points[i];
        if (!drawable(p)) {
            hidden++;
            continue;
        }
        shown++;
        if (i != best)
            circle(cr, px(&f, p->intensity), py(&f, p->gops));
    }
    cairo_restore(cr);
    if (best >= 0) {
        /* drawn last so that it is on top; its label beside it */
        const et_plot_point *p = &pl->points[best];
        double x = px(&f, p->intensity), y = py(&f, p->gops);
        diamond(cr, x, y);
        char label[200];
        if (pl->best_label)
            snprintf(label, sizeof(label), "%s", pl->best_label);
        else
            snprintf(label, sizeof(label), "best: %.3g GOps/s", p->gops);
        cairo_set_font_size(cr, 14);
        cairo_text_extents_t e;
        cairo_text_extents(cr, label, &e);
        double ax = x + 12 + e.width > f.x1 ? 1 : 0;
        double lx = ax ? x - 12 : x + 12;
        /* a white backing keeps the label legible over roofs and points */
        cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
        cairo_rectangle(cr, lx - ax * e.width - 3, y - 10 - e.height - 3,
                        e.width + 6, e.height + 6);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0.65, 0.05, 0.05); /* not best_fill */
        text_at(cr, lx, y - 10, ax, 1, label);
    }
    draw_legend(cr, &f, shown, best >= 0, hidden);
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

/* Draws the plot into the file `file` (SVG or PNG); `path` names it in
 * messages. */
static et_status plot_render(const char *file, int svg, const et_plot *plot,
                             const char *path, char *why, size_t why_cap)
{
    int png = !svg;
    cairo_surface_t *s =
        svg ? cairo_svg_surface_create(file, PLOT_W, PLOT_H)
            : cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)PLOT_W,
                                         (int)PLOT_H);
    cairo_status_t cs = cairo_surface_status(s);
    if (cs != CAIRO_STATUS_SUCCESS) {
        say(why, why_cap, "%s: %s", path, cairo_status_to_string(cs));
        cairo_surface_destroy(s);
        return cs == CAIRO_STATUS_NO_MEMORY ? ET_ERR_NOMEM : ET_ERR_IO;
    }
    cairo_t *cr = cairo_create(s);
    draw(cr, plot);
    cs = cairo_status(cr);
    cairo_destroy(cr);
    if (cs == CAIRO_STATUS_SUCCESS && png)
        cs = cairo_surface_write_to_png(s, file);
    cairo_surface_finish(s);
    if (cs == CAIRO_STATUS_SUCCESS)
        cs = cairo_surface_status(s);
    cairo_surface_destroy(s);
    if (cs != CAIRO_STATUS_SUCCESS) {
        say(why, why_cap, "%s: cannot write the plot: %s", path,
            cairo_status_to_string(cs));
        return cs == CAIRO_STATUS_NO_MEMORY ? ET_ERR_NOMEM : ET_ERR_IO;
    }
    return ET_OK;
}

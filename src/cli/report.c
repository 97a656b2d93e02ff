/* report.c - writes the HTML report of `ringfeed bench --diagnose --report
 * FILE` and `ringfeed tune --report FILE`: one self-contained page (inline
 * CSS and SVG, nothing fetched) with the verdict, samples/s per stage (or
 * per tuning finalist, with the spread of its runs), findings, the
 * consumer's wait per batch and the tuning trials; a section with nothing
 * to show is left out. Plain fprintf, no libm, no allocation. */
#include "cli/report.h"

#include <errno.h>
#include <math.h>   /* isfinite only: a macro, no libm needed */
#include <stdio.h>
#include <string.h>

#define W 1000.0         /* every chart's viewBox width */
#define MAXV 1e12        /* values are clamped to [0, MAXV] */
#define MAX_BARS 2000    /* more batches than this are bucketed ... */
#define BUCKETS 1000     /* ... into about this many bars */
#define MAX_CATS 12      /* up to this many distinct x values: evenly spaced */

#define C_BAR "#4c78a8"
#define C_BEST "#e8702a"
#define C_STEP "#c0392b"
#define C_GRID "#e3e3e3"
#define C_AXIS "#555"
#define C_TEXT "#222"
#define C_MUTED "#666"

/* ---- numbers ------------------------------------------------------------ */

/* x if finite and positive, else 0; at most MAXV */
static double val(double x)
{
	if (!isfinite(x) || x <= 0)
		return 0;
	return x > MAXV ? MAXV : x;
}

static double absd(double x) { return x < 0 ? -x : x; }

/* a step of 1, 2, 2.5 or 5 times a power of ten giving about 5 ticks up to
 * span; span > 0 */
static double nice_step(double span)
{
	double raw = span / 5, p = 1, m;
	if (!(raw > 0))
		return 1;
	while (p * 10 <= raw && p < 1e15)
		p *= 10;
	while (p > raw && p > 1e-9)
		p /= 10;
	m = raw / p;
	return p * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10);
}

/* smallest multiple of step at or above x (x >= 0) */
static double ceil_to(double x, double step)
{
	double k = (double)(long long)(x / step);
	if (k * step < x - step * 1e-9)
		k += 1;
	return k * step;
}

/* The axis from 0: top tick and step, for values up to maxv. */
static void axis_from_zero(double maxv, double *top, double *step)
{
	if (!(maxv > 0))
		maxv = 1;
	*step = nice_step(maxv);
	*top = ceil_to(maxv, *step);
	if (*top <= 0)
		*top = *step;
}

/* v (>= 0, < 1e15) as an integer with thousands separators */
static char *fmt_int(char *buf, size_t n, double v)
{
	char digits[32];
	long long k = (long long)(v + 0.5);
	int len, i, o = 0;
	if (k < 0)
		k = 0;
	len = snprintf(digits, sizeof digits, "%lld", k);
	for (i = 0; i < len && o + 2 < (int)n; i++) {
		if (i > 0 && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

/* a measured value: "12,345", "45.6", "3.21"; "n/a" if not finite */
static char *fmt_val(char *buf, size_t n, double v)
{
	if (!isfinite(v))
		snprintf(buf, n, "n/a");
	else if (v < 0)
		snprintf(buf, n, "%.3g", v);
	else if (v >= 1e15)
		snprintf(buf, n, "%.3g", v);
	else if (v >= 100)
		fmt_int(buf, n, v);
	else if (v >= 10)
		snprintf(buf, n, "%.1f", v);
	else
		snprintf(buf, n, "%.2f", v);
	return buf;
}

/* a tick label: as many decimals as step needs */
static char *fmt_tick(char *buf, size_t n, double v, double step)
{
	int d = 0;
	double s = step;
	if (v >= 1e15 || v <= -1e15) {
		snprintf(buf, n, "%.3g", v);
		return buf;
	}
	while (d < 6 && absd(s - (double)(long long)(s + 0.5)) > 1e-6 * (s > 1 ? s : 1)) {
		s *= 10;
		d++;
	}
	if (d == 0 && v >= 0)
		return fmt_int(buf, n, v);
	snprintf(buf, n, "%.*f", d, v);
	return buf;
}

/* ---- text --------------------------------------------------------------- */

/* At most max bytes of s (NULL: ""), HTML-escaped, not cutting a UTF-8
 * sequence; "..." marks a cut. */
static void esc_n(FILE *f, const char *s, size_t max)
{
	size_t len, i;
	int cut = 0;
	if (!s)
		return;
	len = strlen(s);
	if (len > max) {
		len = max;
		while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
			len--;
		cut = 1;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			fputc(c < 0x20 || c == 0x7f ? ' ' : c, f);
		}
	}
	if (cut)
		fputs("&#8230;", f);
}

static void esc(FILE *f, const char *s) { esc_n(f, s, (size_t)-1); }

static const char *verdict_colour(const char *v)
{
	if (!v)
		return C_MUTED;
	if (strcmp(v, "storage-bound") == 0)
		return "#c0392b";
	if (strcmp(v, "decode-bound") == 0)
		return "#8e44ad";
	if (strcmp(v, "consumer-bound") == 0)
		return "#1f7a3a";
	return C_MUTED;
}

/* ---- chart pieces ------------------------------------------------------- */

static void svg_open(FILE *f, const char *id, double h, const char *label)
{
	fprintf(f, "<svg id=\"%s\" viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" role=\"img\" "
		"aria-label=\"%s\" font-size=\"14\" fill=\"" C_TEXT "\">\n"
		"<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>\n",
		id, W, h, label, W, h);
}

static void svg_message(FILE *f, double x, double y, const char *msg)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"18\" "
		"fill=\"" C_MUTED "\">%s</text>\n", x, y, msg);
}

/* Horizontal value axis from 0 to top under a plot [x0, x1] x [y0, y1]:
 * vertical grid lines, tick labels and a title. */
static void x_axis_zero(FILE *f, double x0, double x1, double y0, double y1,
			double top, double step, const char *title)
{
	char b[48];
	double v;
	int i;
	for (i = 0, v = 0; v <= top + step * 1e-6 && i < 50; i++, v = i * step) {
		double x = x0 + (x1 - x0) * v / top;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_GRID
			"\"/>\n", x, y0, x, y1);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"" C_MUTED
			"\">%s</text>\n", x, y1 + 20, fmt_tick(b, sizeof b, v, step));
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_AXIS "\"/>\n",
		x0, y1, x1, y1);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"600\">%s</text>\n",
		(x0 + x1) / 2, y1 + 44, title);
}

/* Vertical value axis from 0 to top beside a plot [x0, x1] x [y0, y1]:
 * horizontal grid lines, tick labels and a rotated title. */
static void y_axis_zero(FILE *f, double x0, double x1, double y0, double y1,
			double top, double step, const char *title)
{
	char b[48];
	double v;
	int i;
	for (i = 0, v = 0; v <= top + step * 1e-6 && i < 50; i++, v = i * step) {
		double y = y1 - (y1 - y0) * v / top;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_GRID
			"\"/>\n", x0, y, x1, y);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" dy=\"0.35em\" fill=\""
			C_MUTED "\">%s</text>\n", x0 - 8, y, fmt_tick(b, sizeof b, v, step));
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_AXIS "\"/>\n",
		x0, y0, x0, y1);
	fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\" "
		"font-weight=\"600\">%s</text>\n", x0 - 62, (y0 + y1) / 2, title);
}

/* ---- chart: samples/s per stage ----------------------------------------- */

static void chart_stages(FILE *f, const rf_report *r)
{
	const double L = 200, R = 150, T = 14, BH = 30, GAP = 14, B = 60;
	size_t n = r->stages ? r->nstages : 0, i;
	double h = n ? T + (double)n * (BH + GAP) - GAP + 10 + B : 120;
	double maxv = 0, top, step, x1 = W - R, y1 = h - B;
	char b[48];

	svg_open(f, "chart-stages", h, "samples per second per stage");
	if (!n) {
		svg_message(f, W / 2, h / 2, "no stage measurements");
		fputs("</svg>\n", f);
		return;
	}
	for (i = 0; i < n; i++) {
		if (val(r->stages[i].samples_per_s) > maxv)
			maxv = val(r->stages[i].samples_per_s);
		if (val(r->stages[i].hi) > maxv)
			maxv = val(r->stages[i].hi);
	}
	axis_from_zero(maxv, &top, &step);
	x_axis_zero(f, L, x1, T - 6, y1, top, step, "samples/s");
	for (i = 0; i < n; i++) {
		const rf_report_stage *s = &r->stages[i];
		double v = val(s->samples_per_s), lo = val(s->lo), hi = val(s->hi);
		double y = T + (double)i * (BH + GAP), w = (x1 - L) * v / top, end = w;
		int spread = hi > 0 && hi >= lo;
		char c[48], d[48];
		fputs("<g><title>", f);
		esc(f, s->name);
		fprintf(f, ": %s samples/s", fmt_val(b, sizeof b, s->samples_per_s));
		if (spread)
			fprintf(f, " (median; runs from %s to %s)", fmt_val(c, sizeof c, s->lo),
				fmt_val(d, sizeof d, s->hi));
		fputs("</title>\n", f);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" dy=\"0.35em\" "
			"font-size=\"15\">", L - 10, y + BH / 2);
		esc_n(f, s->name, 20);
		fputs("</text>\n", f);
		if (w > 0)
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\""
				C_BAR "\"/>\n", L, y, w, BH);
		if (spread) { /* the whisker: lowest to highest run, with caps */
			double xl = L + (x1 - L) * lo / top, xh = L + (x1 - L) * hi / top, ym = y + BH / 2;
			fprintf(f, "<path d=\"M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f\" stroke=\""
				C_TEXT "\" stroke-width=\"2\" fill=\"none\"/>\n", xl, ym, xh, xl, y + 6,
				y + BH - 6, xh, y + 6, y + BH - 6);
			if (xh - L > end)
				end = xh - L;
		}
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" dy=\"0.35em\" font-size=\"15\" "
			"font-weight=\"600\">%s", L + end + 8, y + BH / 2,
			fmt_val(b, sizeof b, s->samples_per_s));
		if (spread)
			fprintf(f, "<tspan font-weight=\"400\" fill=\"" C_MUTED "\"> (%s&#8211;%s)</tspan>",
				fmt_val(c, sizeof c, s->lo), fmt_val(d, sizeof d, s->hi));
		fputs("</text></g>\n", f);
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_AXIS "\"/>\n",
		L, T - 6, L, y1);
	fputs("</svg>\n", f);
}

/* ---- chart: consumer wait per batch ------------------------------------- */

/* mean and max of the waits in bucket k of size per */
static void bucket(const rf_report *r, size_t k, size_t per, double *mean, double *max)
{
	size_t a = k * per, e = a + per, i;
	double s = 0, m = 0;
	if (e > r->nbatches)
		e = r->nbatches;
	for (i = a; i < e; i++) {
		double v = val(r->batch_wait_ms[i]);
		s += v;
		if (v > m)
			m = v;
	}
	*mean = e > a ? s / (double)(e - a) : 0;
	*max = m;
}

static void waits_summary(FILE *f, const rf_report *r)
{
	size_t n = r->batch_wait_ms ? r->nbatches : 0, i, over = 0;
	double s = 0, m = 0, step = val(r->step_ms);
	char a[48], b[48], c[48], d[48];
	if (!n) {
		fputs("<p class=\"note\">No batches were recorded.</p>\n", f);
		return;
	}
	for (i = 0; i < n; i++) {
		double v = val(r->batch_wait_ms[i]);
		s += v;
		if (v > m)
			m = v;
		if (step > 0 && v > step)
			over++;
	}
	fprintf(f, "<p class=\"note\">%s batches (the first, start-up, left out): mean wait <b>%s ms</b>, max %s ms, "
		"total %s s waiting", fmt_int(a, sizeof a, (double)n),
		fmt_val(b, sizeof b, s / (double)n), fmt_val(c, sizeof c, m),
		fmt_val(d, sizeof d, s / 1000));
	if (step > 0)
		fprintf(f, "; simulated step %s ms (dashed line), %s batches waited longer than a step",
			fmt_val(a, sizeof a, step), fmt_int(b, sizeof b, (double)over));
	fputs(".</p>\n", f);
}

static void chart_waits(FILE *f, const rf_report *r)
{
	const double L = 80, R = 24, T = 30, B = 62, H = 360;
	size_t n = r->batch_wait_ms ? r->nbatches : 0, per = 1, nb, k;
	double x0 = L, x1 = W - R, y0 = T, y1 = H - B;
	double maxv = 0, top, step, xtop, xstep, bw, v, stepms = val(r->step_ms);
	char b[48];
	int i;

	svg_open(f, "chart-waits", n ? H : 120, "consumer wait per batch");
	if (!n) {
		svg_message(f, W / 2, 66, "no batches recorded");
		fputs("</svg>\n", f);
		return;
	}
	if (n > MAX_BARS)
		per = (n + BUCKETS - 1) / BUCKETS;
	nb = (n + per - 1) / per;
	for (k = 0; k < n; k++)
		if (val(r->batch_wait_ms[k]) > maxv)
			maxv = val(r->batch_wait_ms[k]);
	if (stepms > maxv)
		maxv = stepms;
	axis_from_zero(maxv * 1.05, &top, &step);
	y_axis_zero(f, x0, x1, y0, y1, top, step, "wait (ms)");

	/* x: batch index 0 .. n */
	axis_from_zero((double)n, &xtop, &xstep);
	if (xstep < 1)
		xstep = 1;
	for (i = 0, v = 0; v <= (double)n && i < 50; i++, v = i * xstep) {
		double x = x0 + (x1 - x0) * v / (double)n;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_AXIS
			"\"/>\n", x, y1, x, y1 + 5);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"" C_MUTED
			"\">%s</text>\n", x, y1 + 20, fmt_int(b, sizeof b, v));
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"600\">%s</text>\n",
		(x0 + x1) / 2, y1 + 44,
		per > 1 ? "batch index (each bar: mean of a bucket of batches; line: its max)"
			: "batch index");

	/* bars */
	bw = (x1 - x0) / (double)nb;
	fprintf(f, "<g fill=\"" C_BAR "\"%s>\n", bw < 3 ? " shape-rendering=\"crispEdges\"" : "");
	for (k = 0; k < nb; k++) {
		double mean, mx, hgt, gap = bw >= 4 ? bw * 0.15 : 0;
		bucket(r, k, per, &mean, &mx);
		hgt = (y1 - y0) * mean / top;
		if (hgt <= 0)
			continue;
		fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/>\n",
			x0 + (double)k * bw + gap / 2, y1 - hgt, bw - gap + (gap ? 0 : 0.3), hgt);
	}
	fputs("</g>\n", f);
	if (per > 1) {
		fputs("<polyline fill=\"none\" stroke=\"" C_BEST "\" stroke-width=\"1.2\" points=\"", f);
		for (k = 0; k < nb; k++) {
			double mean, mx;
			bucket(r, k, per, &mean, &mx);
			fprintf(f, "%.1f,%.1f ", x0 + ((double)k + 0.5) * bw, y1 - (y1 - y0) * mx / top);
		}
		fputs("\"/>\n", f);
	}
	if (stepms > 0) {
		double y = y1 - (y1 - y0) * stepms / top;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_STEP
			"\" stroke-width=\"2\" stroke-dasharray=\"8 5\"/>\n", x0, y, x1, y);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"" C_STEP
			"\" font-weight=\"600\" stroke=\"#fff\" stroke-width=\"4\" paint-order=\"stroke\">"
			"step %s ms</text>\n", x1 - 4, y - 7, fmt_val(b, sizeof b, stepms));
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_AXIS "\"/>\n",
		x0, y1, x1, y1);
	fputs("</svg>\n", f);
}

/* ---- chart: tuning trials ----------------------------------------------- */

/* An x axis over one integer field of the trials: evenly spaced categories
 * when there are at most MAX_CATS distinct values, else linear. */
typedef struct xaxis {
	int cat, ncat;
	int cats[MAX_CATS];
	double lo, hi;
} xaxis;

/* The panels of the tuning chart: 0 threads, 1 io_depth, 2 prefetch. */
#define TUNE_PANELS 3
static int field(const rf_report_trial *t, int which)
{
	return which == 2 ? t->prefetch : which ? t->io_depth : t->threads;
}

static const char *field_name(int which)
{
	return which == 2 ? "prefetch" : which ? "io_depth" : "threads";
}

static const char *field_meaning(int which)
{
	return which == 2 ? "batch slots" : which ? "reads in flight" : "compute threads";
}

static void xaxis_init(xaxis *a, const rf_report *r, int which)
{
	size_t i;
	int j, k;
	a->cat = 1;
	a->ncat = 0;
	a->lo = a->hi = field(&r->trials[0], which);
	for (i = 0; i < r->ntrials; i++) {
		int v = field(&r->trials[i], which);
		if (v < a->lo)
			a->lo = v;
		if (v > a->hi)
			a->hi = v;
		if (!a->cat)
			continue;
		for (j = 0; j < a->ncat && a->cats[j] < v; j++)
			;
		if (j < a->ncat && a->cats[j] == v)
			continue;
		if (a->ncat == MAX_CATS) {
			a->cat = 0;
			continue;
		}
		for (k = a->ncat; k > j; k--)
			a->cats[k] = a->cats[k - 1];
		a->cats[j] = v;
		a->ncat++;
	}
	if (a->hi <= a->lo) {
		a->lo -= 1;
		a->hi += 1;
	}
}

static double xaxis_pos(const xaxis *a, int v, double x0, double x1)
{
	int j;
	if (a->cat) {
		for (j = 0; j < a->ncat && a->cats[j] != v; j++)
			;
		return x0 + (x1 - x0) * (j + 0.5) / a->ncat;
	}
	{
		double pad = (a->hi - a->lo) * 0.05;
		return x0 + (x1 - x0) * (v - (a->lo - pad)) / (a->hi - a->lo + 2 * pad);
	}
}

static void tune_panel(FILE *f, const rf_report *r, int which, double px, double H,
		       double top, double step, size_t best)
{
	const double L = 84, R = 24, T = 44, B = 62;
	const char *name = field_name(which);
	double x0 = px + L, x1 = px + W / TUNE_PANELS - R, y0 = T, y1 = H - B;
	xaxis a;
	char b[48];
	size_t i;
	int j;

	xaxis_init(&a, r, which);
	fprintf(f, "<text x=\"%.1f\" y=\"24\" font-size=\"16\" font-weight=\"600\">samples/s by %s</text>\n",
		x0, name);
	y_axis_zero(f, x0, x1, y0, y1, top, step, "samples/s");
	/* x ticks */
	if (a.cat) {
		for (j = 0; j < a.ncat; j++) {
			double x = xaxis_pos(&a, a.cats[j], x0, x1);
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\""
				C_AXIS "\"/>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\""
				C_MUTED "\">%d</text>\n", x, y1, x, y1 + 5, x, y1 + 20, a.cats[j]);
		}
	} else {
		double xs = nice_step(a.hi - a.lo), v;
		if (xs < 1)
			xs = 1;
		for (j = 0, v = ceil_to(a.lo > 0 ? a.lo : 0, xs); v <= a.hi && j < 50; j++, v += xs) {
			double x = xaxis_pos(&a, (int)v, x0, x1);
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\""
				C_AXIS "\"/>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\""
				C_MUTED "\">%s</text>\n", x, y1, x, y1 + 5, x, y1 + 20,
				fmt_tick(b, sizeof b, v, xs));
		}
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_AXIS "\"/>\n",
		x0, y1, x1, y1);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"600\">%s (%s)</text>\n",
		(x0 + x1) / 2, y1 + 44, name, field_meaning(which));

	/* the best trial at each value, joined */
	if (a.cat && a.ncat > 1) {
		fputs("<polyline fill=\"none\" stroke=\"" C_BAR "\" stroke-width=\"2\" "
		      "stroke-opacity=\"0.6\" points=\"", f);
		for (j = 0; j < a.ncat; j++) {
			double m = -1;
			for (i = 0; i < r->ntrials; i++)
				if (field(&r->trials[i], which) == a.cats[j] &&
				    isfinite(r->trials[i].samples_per_s) &&
				    val(r->trials[i].samples_per_s) > m)
					m = val(r->trials[i].samples_per_s);
			if (m >= 0)
				fprintf(f, "%.1f,%.1f ", xaxis_pos(&a, a.cats[j], x0, x1),
					y1 - (y1 - y0) * m / top);
		}
		fputs("\"/>\n", f);
	}
	/* every trial; the best last, on top */
	for (i = 0; i <= r->ntrials; i++) {
		size_t t = i < r->ntrials ? i : best;
		const rf_report_trial *tr = &r->trials[t];
		if (i < r->ntrials && i == best)
			continue;
		if (!isfinite(tr->samples_per_s))
			continue;
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\" fill-opacity=\"0.85\" "
			"stroke=\"#fff\" stroke-width=\"1.5\"><title>threads %d, io_depth %d, prefetch %d, "
			"batch %d: %s samples/s</title></circle>\n",
			xaxis_pos(&a, field(tr, which), x0, x1),
			y1 - (y1 - y0) * val(tr->samples_per_s) / top,
			t == best ? 8 : 6, t == best ? C_BEST : C_BAR,
			tr->threads, tr->io_depth, tr->prefetch, tr->batch,
			fmt_val(b, sizeof b, tr->samples_per_s));
	}
}

static size_t best_trial(const rf_report *r)
{
	size_t i, best = 0;
	for (i = 1; i < r->ntrials; i++)
		if (val(r->trials[i].samples_per_s) > val(r->trials[best].samples_per_s))
			best = i;
	return best;
}

static void tune_summary(FILE *f, const rf_report *r)
{
	const rf_report_trial *t;
	char b[48], c[48];
	if (!r->trials || !r->ntrials) {
		fputs("<p class=\"note\">No tuning run: <code>ringfeed tune</code> tries thread "
		      "counts and read depths and shows them here.</p>\n", f);
		return;
	}
	t = &r->trials[best_trial(r)];
	fprintf(f, "<p class=\"note\">%s trials. Each dot is one run of the search, the line joins "
		"the best at each value; <span style=\"color:" C_BEST "\">&#9679;</span> the fastest run: "
		"<b>threads %d, io_depth %d, prefetch %d, batch %d</b> at <b>%s samples/s</b>.</p>\n",
		fmt_int(c, sizeof c, (double)r->ntrials), t->threads, t->io_depth, t->prefetch,
		t->batch, fmt_val(b, sizeof b, t->samples_per_s));
}

static void chart_tune(FILE *f, const rf_report *r)
{
	const double H = 380;
	double maxv = 0, top, step;
	size_t i;

	svg_open(f, "chart-tune", r->trials && r->ntrials ? H : 120,
		 "samples per second against threads, io_depth and prefetch, per tuning trial");
	if (!r->trials || !r->ntrials) {
		svg_message(f, W / 2, 66, "no tuning run");
		fputs("</svg>\n", f);
		return;
	}
	for (i = 0; i < r->ntrials; i++)
		if (val(r->trials[i].samples_per_s) > maxv)
			maxv = val(r->trials[i].samples_per_s);
	axis_from_zero(maxv * 1.05, &top, &step);
	for (int k = 0; k < TUNE_PANELS; k++)
		tune_panel(f, r, k, k * W / TUNE_PANELS, H, top, step, best_trial(r));
	fputs("</svg>\n", f);
}

/* ---- the page ----------------------------------------------------------- */

static void page(FILE *f, const rf_report *r)
{
	const char *title = r->title ? r->title : "ringfeed diagnosis";
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>", f);
	esc(f, title);
	fputs("</title>\n<style>\n"
	      "html { background: #fff; }\n"
	      "body { margin: 0 auto; padding: 24px 32px 40px; max-width: 1080px; background: #fff;\n"
	      "  color: " C_TEXT "; font: 16px/1.45 system-ui, -apple-system, 'Segoe UI', "
	      "'DejaVu Sans', 'Liberation Sans', Arial, sans-serif; }\n"
	      "h1 { font-size: 26px; margin: 0 0 12px; overflow-wrap: anywhere; }\n"
	      "h2 { font-size: 19px; margin: 28px 0 4px; }\n"
	      ".verdict { font-size: 40px; font-weight: 700; margin: 4px 0 6px; "
	      "padding-left: 14px; border-left: 8px solid; }\n"
	      ".explanation { font-size: 17px; margin: 6px 0; }\n"
	      ".machine, .note { color: " C_MUTED "; font-size: 15px; margin: 4px 0 8px; }\n"
	      ".warning { color: #8a4b00; background: #fff4e0; border-left: 6px solid #e8a33a; "
	      "padding: 6px 10px; margin: 8px 0; }\n"
	      ".finding { font-size: 16px; margin: 6px 0; }\n"
	      "svg { display: block; background: #fff; }\n"
	      "code { font-size: 14px; }\n"
	      "</style>\n</head>\n<body>\n<h1>", f);
	esc(f, title);
	fprintf(f, "</h1>\n<div class=\"verdict\" style=\"color:%s\">",
		verdict_colour(r->verdict));
	esc(f, r->verdict && *r->verdict ? r->verdict : "no verdict");
	fputs("</div>\n<p class=\"explanation\">", f);
	esc(f, r->explanation);
	fputs("</p>\n", f);
	if (r->warning && *r->warning) {
		fputs("<p class=\"warning\">", f);
		esc(f, r->warning);
		fputs("</p>\n", f);
	}
	fputs("<p class=\"machine\">Machine: ", f);
	esc(f, r->machine && *r->machine ? r->machine : "not recorded");
	fputs("</p>\n", f);

	/* the sections that have something to show, in this order */
	if (r->stages && r->nstages) {
		fputs("<h2>", f);
		esc(f, r->stages_title ? r->stages_title : "Throughput by stage");
		fputs("</h2>\n<p class=\"note\">", f);
		esc(f, r->stages_note ? r->stages_note : "Samples per second each stage alone "
			"sustains; the slowest one limits the whole.");
		fputs("</p>\n", f);
		chart_stages(f, r);
	}
	if (r->notes && r->nnotes) {
		fputs("<h2>", f);
		esc(f, r->notes_title ? r->notes_title : "Findings");
		fputs("</h2>\n", f);
		for (size_t i = 0; i < r->nnotes; i++) {
			fputs("<p class=\"finding\">", f);
			esc(f, r->notes[i]);
			fputs("</p>\n", f);
		}
	}
	if (r->batch_wait_ms && r->nbatches) {
		fputs("<h2>Consumer wait per batch</h2>\n", f);
		waits_summary(f, r);
		chart_waits(f, r);
	}
	if (r->trials && r->ntrials) {
		fputs("<h2>Tuning trials</h2>\n", f);
		tune_summary(f, r);
		chart_tune(f, r);
	}
	fputs("</body>\n</html>\n", f);
}

int rfi_report_write_html(const char *path, const rf_report *r, char *err, size_t errlen)
{
	FILE *f;
	int e = 0;

	if (!path || !r) {
		if (err && errlen)
			snprintf(err, errlen, "report: %s", path ? "no report data" : "no file name");
		return -EINVAL;
	}
	f = fopen(path, "w");
	if (!f) {
		e = errno ? errno : EIO;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	page(f, r);
	if (ferror(f))
		e = errno ? errno : EIO;
	if (fclose(f) != 0 && !e)
		e = errno ? errno : EIO;
	if (e) {
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}

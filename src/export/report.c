/*
 * report.c - the HTML report: page frame, summary, steps, counters.
 *
 * The page is the inline stylesheet and script (report_assets.c, made
 * from report.css and report.js) and one <script type="application/json">
 * block with the data, which the script turns into SVG plots, canvas
 * heat maps and tables when the page loads.  '<' never appears raw in
 * the data block (written as \u003c), so no name in the file can end the
 * script element.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/counters.h"
#include "sync/jobevents.h"
#include "export/report.h"
#include "export/report_int.h"

extern const char sh5_report_css[];
extern const char sh5_report_js[];

struct sink {
	FILE *f;
	int err;	/* errno of the first failed write, 0 */
};

/* The JSON sink: '<' becomes \u003c (only possible inside strings). */
static int sink_write(void *arg, const void *buf, size_t len)
{
	struct sink *s = arg;
	const char *p = buf, *q;

	while (len) {
		q = memchr(p, '<', len);
		if (!q) {
			if (fwrite(p, 1, len, s->f) != len)
				goto error;
			break;
		}
		if (fwrite(p, 1, (size_t)(q - p), s->f) != (size_t)(q - p) ||
		    fputs("\\u003c", s->f) < 0)
			goto error;
		len -= (size_t)(q - p) + 1;
		p = q + 1;
	}
	return 0;
error:
	if (!s->err)
		s->err = errno ? errno : EIO;
	return -1;
}

static int discard(void *arg, const void *buf, size_t len)
{
	(void)arg;
	(void)buf;
	(void)len;
	return 0;
}

/* Scalar attributes of obj as [name, value] pairs. */
static herr_t attr_cb(hid_t loc, const char *name, const H5A_info_t *info,
		      void *arg)
{
	struct sh5_json *j = arg;
	hid_t a, t, s;
	H5T_class_t c;
	char buf[512];

	(void)info;
	a = H5Aopen(loc, name, H5P_DEFAULT);
	if (a < 0)
		return 0;
	t = H5Aget_type(a);
	s = H5Aget_space(a);
	c = H5Tget_class(t);
	if (H5Sget_simple_extent_npoints(s) != 1)
		goto out;
	if (c == H5T_INTEGER) {
		long long v = 0;

		if (H5Aread(a, H5T_NATIVE_LLONG, &v) >= 0) {
			sh5_json_string(j, name);
			sh5_json_int(j, v);
		}
	} else if (c == H5T_FLOAT) {
		double v = 0;

		if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0) {
			sh5_json_string(j, name);
			rp_num(j, v);
		}
	} else if (c == H5T_STRING && !H5Tis_variable_str(t) &&
		   H5Tget_size(t) < sizeof(buf)) {
		hid_t m = H5Tcopy(t);

		memset(buf, 0, sizeof(buf));
		H5Tset_cset(m, H5T_CSET_ASCII);
		if (H5Aread(a, m, buf) >= 0) {
			buf[H5Tget_size(t)] = 0;
			sh5_json_string(j, name);
			sh5_json_string(j, buf);
		}
		H5Tclose(m);
	}
out:
	H5Sclose(s);
	H5Tclose(t);
	H5Aclose(a);
	return 0;
}

static void attrs(struct sh5_json *j, hid_t file, const char *path,
		  const char *key)
{
	hid_t g;

	sh5_json_key(j, key);
	sh5_json_array_open(j);
	H5E_BEGIN_TRY
	{
		g = H5Oopen(file, path, H5P_DEFAULT);
		if (g >= 0) {
			H5Aiterate2(g, H5_INDEX_NAME, H5_ITER_INC, NULL,
				    attr_cb, j);
			H5Oclose(g);
		}
	}
	H5E_END_TRY;
	sh5_json_array_close(j);
}

static int step_section(struct rp *r, const char *step,
			struct sh5_error *errp)
{
	struct sh5_json *j = r->j;
	struct sh5_evstep *ev = NULL;
	struct sh5_error e2;
	char p[300];
	hid_t g;
	int rc = -1;

	r->step = step;
	sh5_json_object_open(j);
	sh5_json_kv_string(j, "name", step);
	if (rp_series(r, step, errp) < 0)
		return -1;
	snprintf(p, sizeof(p), "/Steps/%s/Nodes", step);
	H5E_BEGIN_TRY
	{
		g = H5Gopen2(r->file, p, H5P_DEFAULT);
	}
	H5E_END_TRY;
	if (g < 0) {
		sh5_errprintf(errp, "%s: cannot open %s", r->path, p);
		return -1;
	}
	snprintf(p, sizeof(p), "/Steps/%s", step);
	{
		hid_t sg = H5Gopen2(r->file, p, H5P_DEFAULT);

		if (sg >= 0) {
			if (r->o.progress)
				r->o.progress(r->o.progress_arg, "events", 0,
					      1);
			ev = sh5_evstep_read(sg, step, &e2);
			H5Gclose(sg);
			if (!ev) {
				rp_missing(r, "step %s: events unreadable: %s",
					   step, e2.text);
				sh5_json_kv_string(j, "events_error", e2.text);
			}
		}
	}
	if (rp_clock(r, g, ev, errp) < 0)
		goto out;
	if (rp_events(r, ev, errp) < 0)
		goto out;
	rc = sh5_json_object_close(j);
out:
	H5Gclose(g);
	sh5_evstep_free(ev);
	return rc;
}

static int counters_section(struct rp *r, struct sh5_error *errp)
{
	struct sh5_json *j = r->j, *nj;
	struct sh5_counters_opts co = { .sigma = r->o.sigma, .top = 50,
					.step = r->o.step };
	struct sh5_counters_result cr;
	struct sh5_error e2;
	size_t i;

	(void)errp;
	memset(&cr, 0, sizeof(cr));
	if (r->o.progress)
		r->o.progress(r->o.progress_arg, "counters", 0, 1);
	nj = sh5_json_create_cb(discard, NULL, 0, &e2);
	sh5_json_key(j, "anomalies");
	if (!nj || sh5_counters_export(r->path, nj, &co, &cr, &e2) < 0) {
		rp_missing(r, "counter anomalies: %s", e2.text);
		sh5_json_destroy(nj);
		sh5_counters_result_free(&cr);
		return sh5_json_null(j);
	}
	sh5_json_destroy(nj);
	sh5_json_object_open(j);
	sh5_json_kv_double(j, "sigma", co.sigma);
	sh5_json_kv_uint(j, "count", cr.anomalies);
	sh5_json_kv_uint(j, "series", cr.nkeys);
	sh5_json_key(j, "top");	/* [t, app, node, task, counter, v, score,
				 *  mean, sd] */
	sh5_json_array_open(j);
	for (i = 0; i < cr.ntop; i++) {
		const struct sh5_counters_anomaly *a = &cr.top[i];

		sh5_json_array_open(j);
		sh5_json_int(j, a->time_ns);
		sh5_json_string(j, a->app);
		sh5_json_string(j, a->node);
		sh5_json_int(j, a->task);
		sh5_json_string(j, a->counter);
		rp_num(j, a->value);
		rp_num(j, a->score);
		rp_num(j, a->mean);
		rp_num(j, a->stddev);
		sh5_json_array_close(j);
	}
	sh5_json_array_close(j);
	sh5_counters_result_free(&cr);
	return sh5_json_object_close(j);
}

static void html_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else
			fputc(*s, f);
	}
}

/* The options with their defaults filled in. */
static void set_opts(struct rp *r, const struct sh5_report_opts *opts)
{
	if (opts)
		r->o = *opts;
	if (!r->o.bins)
		r->o.bins = 600;
	if (!r->o.heat_budget)
		r->o.heat_budget = 2u << 20;
	if (!(r->o.sigma > 0))
		r->o.sigma = 6;
}

/* The page up to the data block, and the data's head ("file" ...). */
static void write_head(struct rp *r, FILE *out, const char *path)
{
	char when[40];
	time_t now = time(NULL);
	struct tm tmv;

	gmtime_r(&now, &tmv);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tmv);
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8"
	      "\">\n<meta http-equiv=\"Content-Security-Policy\" content=\""
	      "default-src 'none'; style-src 'unsafe-inline'; script-src "
	      "'unsafe-inline'; img-src data:\">\n<title>sh5 report: ", out);
	html_escape(out, path);
	fprintf(out, "</title>\n<style>\n%s</style>\n</head><body>\n"
		"<noscript>This report draws its plots with JavaScript."
		"</noscript>\n<div id=\"app\"></div>\n"
		"<script id=\"data\" type=\"application/json\">", sh5_report_css);
	sh5_json_object_open(r->j);
	sh5_json_kv_string(r->j, "file", path);
	sh5_json_kv_string(r->j, "made", when);
	sh5_json_kv_string(r->j, "version", PACKAGE_VERSION);
	attrs(r->j, r->file, "/", "job");
	attrs(r->j, r->file, "/Merge", "merge");
}

/* Key "steps": every step (or the one asked for). */
static int write_steps(struct rp *r, const char *const *steps,
		       size_t nsteps, struct sh5_error *errp)
{
	size_t i;

	sh5_json_key(r->j, "steps");
	sh5_json_array_open(r->j);
	for (i = 0; i < nsteps; i++) {
		if (r->o.step && strcmp(r->o.step, steps[i]))
			continue;
		if (r->o.progress)
			r->o.progress(r->o.progress_arg, "steps", i, nsteps);
		if (step_section(r, steps[i], errp) < 0)
			return -1;
		r->res->nsteps++;
	}
	sh5_json_array_close(r->j);
	if (r->o.step && !r->res->nsteps) {
		errno = ENOENT;
		sh5_errprintf(errp, "%s: no step %s", r->path, r->o.step);
		return -1;
	}
	return 0;
}

/* Keys "missing" and "nmissing", then the end of the data and page. */
static int write_tail(struct rp *r, FILE *out, const char *name,
		      const struct sink *sk, struct sh5_error *errp)
{
	size_t i;

	sh5_json_key(r->j, "missing");
	sh5_json_array_open(r->j);
	for (i = 0; i < r->res->nmissing && i < 16; i++)
		sh5_json_string(r->j, r->res->missing[i]);
	sh5_json_array_close(r->j);
	sh5_json_kv_uint(r->j, "nmissing", r->res->nmissing);
	sh5_json_object_close(r->j);
	if (sh5_json_finish(r->j, errp) < 0) {
		if (sk->err) {
			errno = sk->err;
			sh5_errprintf(errp, "%s: write failed: %s", name,
				      strerror(sk->err));
		}
		return -1;
	}
	fprintf(out, "</script>\n<script>\n%s</script>\n</body></html>\n",
		sh5_report_js);
	if (fflush(out) != 0 || ferror(out)) {
		sh5_errprintf(errp, "%s: write failed: %s", name,
			      strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

int sh5_report_write(const char *path, FILE *out, const char *name,
		     const struct sh5_report_opts *opts,
		     struct sh5_report_result *res, struct sh5_error *errp)
{
	struct sh5_report_result dummy;
	struct sink sk = { out, 0 };
	struct rp r;
	const char *const *steps;
	size_t nsteps;
	int rc = -1;

	memset(&r, 0, sizeof(r));
	r.path = path;
	r.res = res ? res : &dummy;
	memset(r.res, 0, sizeof(*r.res));
	set_opts(&r, opts);
	r.file = -1;
	r.jr = sh5_jobread_open(path, errp);
	if (!r.jr)
		return -1;
	if (sh5_jobread_steps(r.jr, &steps, &nsteps, errp) < 0)
		goto out;
	r.file = (hid_t)sh5_jobread_file(r.jr);
	if (!nsteps) {
		sh5_errprintf(errp, "%s: no steps under /Steps", path);
		goto out;
	}
	r.j = sh5_json_create_cb(sink_write, &sk, 0, errp);
	if (!r.j)
		goto out;
	write_head(&r, out, path);
	if (write_steps(&r, steps, nsteps, errp) < 0 ||
	    counters_section(&r, errp) < 0 ||
	    write_tail(&r, out, name, &sk, errp) < 0)
		goto out;
	rc = 0;
out:
	/* A failed write is the cause whatever step noticed it first. */
	if (rc < 0 && (sk.err || ferror(out))) {
		errno = sk.err ? sk.err : EIO;
		sh5_errprintf(errp, "%s: write failed: %s", name,
			      strerror(errno));
	}
	if (r.o.progress)
		r.o.progress(r.o.progress_arg, "done", 1, 1);
	sh5_json_destroy(r.j);
	rp_series_free(&r);
	sh5_jobread_close(r.jr);
	return rc;
}

/* mergesync.c - see mergesync.h */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/h5attr.h"
#include "sync/mergesync.h"
#include "profile/reader.h"
#include "sync/evsync.h"
#include "sync/syncrun.h"
#include "sync/timesync.h"

/* What hook_probe() found in an input (merge ORs them over inputs). */
#define PROBE_CLOCK 1
#define PROBE_EVENTS 2

struct sh5_mergesync {
	enum sh5_sync_method requested, method;
	const char *note;		/* why auto chose none, ... */
	void (*report)(void *arg, int error, const char *file,
		       const char *msg);
	void *report_arg;
	struct sh5_mergesync_stats st;
	/* The current node. */
	const struct sh5_input *in;
	struct sh5_offset_point *pts;
	size_t npts, cap;
	int node_sync;			/* SyncTimeNs for this node */
	int64_t node_max_corr, node_err;
	size_t node_dropped;		/* measurements left out as noisy */
	double node_drift;
	/* Scratch times for one row buffer. */
	int64_t *tin, *tout;
	size_t tcap;
	/* clc: the events' synchronization (hook_finish). */
	struct sh5_evsync_stats ev;
	const char *output;		/* the job file's name */
};

int sh5_sync_method_parse(const char *name, enum sh5_sync_method *out)
{
	static const struct {
		const char *n;
		enum sh5_sync_method m;
	} t[] = { { "auto", SH5_SYNC_AUTO }, { "none", SH5_SYNC_NONE },
		  { "offset", SH5_SYNC_OFFSET }, { "clc", SH5_SYNC_CLC } };
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(name, t[i].n)) {
			*out = t[i].m;
			return 0;
		}
	return -1;
}

const char *sh5_sync_method_name(enum sh5_sync_method m)
{
	switch (m) {
	case SH5_SYNC_AUTO: return "auto";
	case SH5_SYNC_NONE: return "none";
	case SH5_SYNC_OFFSET: return "offset";
	case SH5_SYNC_CLC: return "clc";
	}
	return "?";
}

static void warn(struct sh5_mergesync *ms, const char *file,
		 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void warn(struct sh5_mergesync *ms, const char *file,
		 const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!ms->report)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ms->report(ms->report_arg, 0, file, msg);
}

/* ------------------------------------------------------------------ */
/* Reading measurements. */

/* Rows of node/ClockOffsets: 0 if absent, -1 if unreadable. */
static long long clock_rows(hid_t node)
{
	hid_t d, sp;
	hsize_t dims[1] = { 0 };
	int nd;

	if (H5Lexists(node, "ClockOffsets", H5P_DEFAULT) <= 0)
		return 0;
	if ((d = H5Dopen2(node, "ClockOffsets", H5P_DEFAULT)) < 0)
		return -1;
	sp = H5Dget_space(d);
	nd = sp >= 0 ? H5Sget_simple_extent_dims(sp, dims, NULL) : -1;
	if (sp >= 0)
		H5Sclose(sp);
	H5Dclose(d);
	return nd == 1 ? (long long)dims[0] : -1;
}

/*
 * Load the usable measurements of node into ms->pts (sorted by local
 * time): sh5_clock_points_read().  Returns the number loaded, or -1 with
 * why set (the node then keeps its times).
 */
static long load_points(struct sh5_mergesync *ms, hid_t node, char *why,
			size_t whylen)
{
	struct sh5_clock_points cp;
	long n;

	ms->npts = 0;
	ms->node_err = 0;
	ms->node_dropped = 0;
	n = sh5_clock_points_read(node, &cp, why, whylen);
	if (n < 0)
		return -1;
	free(ms->pts);
	ms->pts = cp.pts;
	ms->cap = cp.n;
	ms->npts = cp.n;
	cp.pts = NULL;
	ms->node_err = cp.err_ns;
	ms->node_dropped = cp.dropped;
	if (cp.bad)
		warn(ms, ms->in->path, "%zu of %zu clock-offset measurements "
		     "left out (unsynchronised server or negative round trip)",
		     cp.bad, cp.total);
	sh5_clock_points_free(&cp);
	return n;
}

/* ------------------------------------------------------------------ */
/* Hooks. */

/* The merge's first pass: does this input carry measurements (1),
 * events (2)? */
static int hook_probe(void *arg, hid_t in_node)
{
	(void)arg;
	return (clock_rows(in_node) > 0 ? PROBE_CLOCK : 0) |
	       (H5Lexists(in_node, "Events", H5P_DEFAULT) > 0 ? PROBE_EVENTS :
								 0);
}

static int hook_checked(void *arg, int any, struct sh5_error *errp)
{
	struct sh5_mergesync *ms = arg;

	if (ms->method == SH5_SYNC_CLC && !(any & PROBE_EVENTS)) {
		errno = EINVAL;
		sh5_errprintf(errp, "--sync clc needs events (message sends "
			      "and receives, collectives), and no node-step "
			      "file of this job carries any: use --sync "
			      "offset");
		return -1;
	}
	if (ms->method == SH5_SYNC_AUTO) {
		if (any & PROBE_EVENTS) {
			ms->method = SH5_SYNC_CLC;
			ms->note = "auto: clc (the node-step files carry "
				   "events)";
		} else if (any) {
			ms->method = SH5_SYNC_OFFSET;
			ms->note = "auto: offset (the node-step files carry "
				   "clock-offset measurements)";
		} else {
			ms->method = SH5_SYNC_NONE;
			ms->note = "auto: none (no node-step file carries "
				   "clock-offset measurements)";
		}
		ms->st.method = ms->method;
	}
	return ms->method == SH5_SYNC_OFFSET || ms->method == SH5_SYNC_CLC;
}

static int hook_node_begin(void *arg, const struct sh5_input *in,
			   hid_t in_node, hid_t out_node,
			   struct sh5_error *errp)
{
	struct sh5_mergesync *ms = arg;
	char why[128] = "";
	long n;

	(void)out_node;
	(void)errp;
	ms->in = in;
	ms->npts = 0;
	ms->node_sync = 0;
	ms->node_max_corr = 0;
	ms->node_err = 0;
	ms->node_dropped = 0;
	ms->node_drift = NAN;
	ms->st.nodes++;
	if (ms->method != SH5_SYNC_OFFSET && ms->method != SH5_SYNC_CLC)
		return 0;
	ms->node_sync = 1;
	n = load_points(ms, in_node, why, sizeof(why));
	if (n <= 0) {
		ms->npts = 0;
		ms->node_err = 0;
		ms->st.unmeasured++;
		warn(ms, in->path, "%s: its times are kept as they are "
		     "(SyncTimeNs = EpochTimeNs)",
		     n < 0 ? why : "no clock-offset measurement");
		return 1;
	}
	ms->st.corrected++;
	ms->st.measurements += ms->npts;
	ms->st.dropped += ms->node_dropped;
	if (ms->node_err > ms->st.error_bound_ns)
		ms->st.error_bound_ns = ms->node_err;
	if (ms->npts >= 2 &&
	    ms->pts[ms->npts - 1].local_ns > ms->pts[0].local_ns)
		ms->node_drift =
			(double)(ms->pts[ms->npts - 1].offset_ns -
				 ms->pts[0].offset_ns) /
			(double)(ms->pts[ms->npts - 1].local_ns -
				 ms->pts[0].local_ns) * 1e6;
	return 1;
}

static void hook_sync_rows(void *arg, const struct sh5_series *s, void *recs,
			   size_t n)
{
	struct sh5_mergesync *ms = arg;
	size_t i, slots = sh5_record_slots(s), sync = SH5_SLOT_SYNC(s);
	union sh5_value *v = recs;

	if (n > ms->tcap) {
		int64_t *a = realloc(ms->tin, n * sizeof(*a));
		int64_t *b = a ? realloc(ms->tout, n * sizeof(*b)) : NULL;

		if (a)
			ms->tin = a;
		if (b)
			ms->tout = b;
		if (!a || !b) {
			/* No scratch: one at a time (same result). */
			for (i = 0; i < n; i++) {
				int64_t t = v[i * slots + 2].i;
				int64_t u = sh5_timesync_offset_map(ms->pts,
								    ms->npts, t);
				int64_t c = u > t ? u - t : t - u;

				v[i * slots + sync].i = u;
				if (c > ms->node_max_corr)
					ms->node_max_corr = c;
			}
			return;
		}
		ms->tcap = n;
	}
	for (i = 0; i < n; i++)
		ms->tin[i] = v[i * slots + 2].i;
	sh5_timesync_offset_map_array(ms->pts, ms->npts, ms->tin, ms->tout, n);
	for (i = 0; i < n; i++) {
		int64_t t = ms->tin[i], u = ms->tout[i];
		int64_t c = u > t ? u - t : t - u;

		v[i * slots + sync].i = u;
		if (c > ms->node_max_corr)
			ms->node_max_corr = c;
	}
}

static int hook_node_end(void *arg, hid_t out_node, struct sh5_error *errp)
{
	struct sh5_mergesync *ms = arg;
	const char *method = ms->node_sync && ms->npts ? "offset" : "none";

	if (!ms->node_sync)
		return 0;
	if (ms->node_max_corr > ms->st.max_correction_ns)
		ms->st.max_correction_ns = ms->node_max_corr;
	if (sh5_h5attr_put_str(out_node, "Sync Method", method) < 0 ||
	    sh5_h5attr_put_u32(out_node, "Sync Measurements", (uint32_t)ms->npts) < 0 ||
	    sh5_h5attr_put_i64(out_node, "Sync Max Correction ns",
		    ms->node_max_corr) < 0 ||
	    sh5_h5attr_put_i64(out_node, "Sync Error Bound ns", ms->node_err) < 0 ||
	    sh5_h5attr_put_u32(out_node, "Sync Measurements Dropped",
		    (uint32_t)ms->node_dropped) < 0 ||
	    (!isnan(ms->node_drift) &&
	     sh5_h5attr_put_f64(out_node, "Sync Drift ppm", ms->node_drift) < 0))
		return sh5_errprintf_h5(errp, "%s: cannot write the sync "
					"attributes of its node group",
					ms->in ? ms->in->path : "?");
	return 0;
}

static int hook_finish(void *arg, hid_t fout, struct sh5_error *errp)
{
	struct sh5_mergesync *ms = arg;
	hid_t g = H5Gopen2(fout, "Merge", H5P_DEFAULT);
	int rc = -1;

	if (g < 0)
		return sh5_errprintf_h5(errp, "cannot open /Merge");
	if (ms->method == SH5_SYNC_CLC) {
		const char *fname = ms->output ? ms->output : "job file";

		if (sh5_evsync_job(fout, fname, &ms->ev, ms->report,
				   ms->report_arg, errp) < 0) {
			H5Gclose(g);
			return -1;
		}
	}
	if (sh5_h5attr_put_str(g, "Sync Requested",
		    sh5_sync_method_name(ms->requested)) < 0 ||
	    sh5_h5attr_put_str(g, "Sync Method", sh5_sync_method_name(ms->method)) < 0 ||
	    sh5_h5attr_put_str(g, "Sync Note", ms->note ? ms->note : "") < 0)
		goto out;
	if ((ms->method == SH5_SYNC_OFFSET || ms->method == SH5_SYNC_CLC) &&
	    (sh5_h5attr_put_u32(g, "Sync Nodes Corrected", (uint32_t)ms->st.corrected) <
		     0 ||
	     sh5_h5attr_put_u32(g, "Sync Nodes Unmeasured",
		     (uint32_t)ms->st.unmeasured) < 0 ||
	     sh5_h5attr_put_i64(g, "Sync Max Correction ns",
		     ms->st.max_correction_ns) < 0 ||
	     sh5_h5attr_put_i64(g, "Sync Error Bound ns", ms->st.error_bound_ns) < 0))
		goto out;
	if (ms->method == SH5_SYNC_CLC &&
	    (sh5_h5attr_put_u32(g, "Sync Event Steps", (uint32_t)ms->ev.steps) < 0 ||
	     sh5_h5attr_put_u32(g, "Sync Event Steps Synchronized",
		     (uint32_t)ms->ev.synced) < 0 ||
	     sh5_h5attr_put_u64(g, "Sync Events", ms->ev.events) < 0 ||
	     sh5_h5attr_put_u64(g, "Sync Messages Matched", ms->ev.messages) < 0 ||
	     sh5_h5attr_put_u64(g, "Sync Problems", ms->ev.problems) < 0 ||
	     sh5_h5attr_put_u64(g, "Sync P2P Violations Before",
		     ms->ev.viol_p2p_before) < 0 ||
	     sh5_h5attr_put_u64(g, "Sync Collective Violations Before",
		     ms->ev.viol_coll_before) < 0 ||
	     sh5_h5attr_put_u64(g, "Sync P2P Violations After",
		     ms->ev.viol_p2p_after) < 0 ||
	     sh5_h5attr_put_u64(g, "Sync Collective Violations After",
		     ms->ev.viol_coll_after) < 0 ||
	     sh5_h5attr_put_i64(g, "Sync Mu Intra ns", ms->ev.mu_intra) < 0 ||
	     sh5_h5attr_put_i64(g, "Sync Mu Inter ns", ms->ev.mu_inter) < 0 ||
	     sh5_h5attr_put_str(g, "Sync Mu Intra Source",
		     sh5_syncrun_mu_source(ms->ev.src_intra)) < 0 ||
	     sh5_h5attr_put_str(g, "Sync Mu Inter Source",
		     sh5_syncrun_mu_source(ms->ev.src_inter)) < 0))
		goto out;
	rc = 0;
out:
	if (rc < 0)
		sh5_errprintf_h5(errp, "cannot write the sync attributes of "
				 "/Merge");
	H5Gclose(g);
	return rc;
}

/* ------------------------------------------------------------------ */

struct sh5_mergesync *sh5_mergesync_create(
	enum sh5_sync_method method, const struct sh5_merge_opts *opts,
	void (*report)(void *arg, int error, const char *file,
		       const char *msg),
	void *report_arg, struct sh5_error *errp)
{
	struct sh5_mergesync *ms;

	if (method != SH5_SYNC_AUTO && method != SH5_SYNC_NONE &&
	    method != SH5_SYNC_OFFSET && method != SH5_SYNC_CLC) {
		errno = EINVAL;
		sh5_errprintf(errp, "unknown sync method %d", (int)method);
		return NULL;
	}
	if (!(ms = calloc(1, sizeof(*ms)))) {
		errno = ENOMEM;
		sh5_errprintf(errp, "out of memory");
		return NULL;
	}
	ms->requested = method;
	ms->output = opts ? opts->output : NULL;
	ms->report = report;
	ms->report_arg = report_arg;
	/* auto is decided by hook_checked() from the merge's first pass,
	 * which opens every input anyway. */
	ms->method = method;
	ms->st.requested = method;
	ms->st.method = ms->method;
	return ms;
}

static void hook_restart(void *arg)
{
	struct sh5_mergesync *ms = arg;
	enum sh5_sync_method req = ms->st.requested, method = ms->st.method;

	memset(&ms->st, 0, sizeof(ms->st));
	ms->st.requested = req;
	ms->st.method = method;
}

void sh5_mergesync_hooks(struct sh5_mergesync *ms,
			 struct sh5_merge_hooks *h)
{
	memset(h, 0, sizeof(*h));
	h->node_begin = hook_node_begin;
	h->sync_rows = hook_sync_rows;
	h->node_end = hook_node_end;
	h->finish = hook_finish;
	h->probe = hook_probe;
	h->checked = hook_checked;
	h->arg = ms;
	h->never_sync = ms->method == SH5_SYNC_NONE;
	h->sync_if_hit = ms->method == SH5_SYNC_AUTO;
	h->restart = hook_restart;
}

void sh5_mergesync_stats(const struct sh5_mergesync *ms,
			 struct sh5_mergesync_stats *st)
{
	*st = ms->st;
	st->ev = ms->ev;
}

void sh5_mergesync_destroy(struct sh5_mergesync *ms)
{
	if (!ms)
		return;
	free(ms->pts);
	free(ms->tin);
	free(ms->tout);
	free(ms);
}

int sh5_mergesync_node_read(hid_t g, struct sh5_mergesync_node *out)
{
	long long v;
	hid_t a;

	memset(out, 0, sizeof(*out));
	out->drift_ppm = NAN;
	if (sh5_attr_get_str(g, "Sync Method", out->method,
			     sizeof(out->method)) < 0)
		return -1;
	if (sh5_attr_get_int(g, "Sync Measurements", &v) == 0)
		out->measurements = (uint32_t)v;
	if (sh5_attr_get_int(g, "Sync Measurements Dropped", &v) == 0)
		out->dropped = (uint32_t)v;
	if (sh5_attr_get_int(g, "Sync Max Correction ns", &v) == 0)
		out->max_correction_ns = v;
	if (sh5_attr_get_int(g, "Sync Error Bound ns", &v) == 0)
		out->error_bound_ns = v;
	if (H5Aexists(g, "Sync Drift ppm") > 0 &&
	    (a = H5Aopen(g, "Sync Drift ppm", H5P_DEFAULT)) >= 0) {
		double d;

		if (H5Aread(a, H5T_NATIVE_DOUBLE, &d) >= 0)
			out->drift_ppm = d;
		H5Aclose(a);
	}
	return 0;
}

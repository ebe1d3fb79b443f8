/*
 * report_clock.c - clock offsets per node, raw and corrected.
 *
 * Raw: the usable measurements of the node's ClockOffsets (the filter of
 * merge --sync offset), offset = reference - local, with half the round
 * trip as error.  Corrected: what is left of each measurement after the
 * correction the job file applies at that local time: SyncTimeNs -
 * TimeNs of the node's nearest event when the step's events are
 * synchronized (CLC), else the interpolated offset when the samples
 * carry SyncTimeNs (merge --sync offset), else no correction (the
 * residual is the raw offset).  Points per node are thinned evenly to
 * keep the section small.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "sync/jobevents.h"
#include "export/report_int.h"
#include "sync/mergesync.h"
#include "sync/timesync.h"

#define RP_CLOCK_POINTS 32768

/* Correction at local time t from the events of node `node`. */
static int ev_correction(const struct sh5_evstep *ev, uint32_t node,
			 int64_t t, int64_t *corr)
{
	int64_t best = INT64_MAX;
	size_t i;
	int found = 0;

	for (i = 0; i < ev->ntasks; i++) {
		const struct sh5_evtask *k = &ev->tasks[i];
		size_t lo = 0, hi = k->nev, m;
		int64_t d;

		if (k->node != node || !k->sync || !k->nev)
			continue;
		while (lo < hi) {	/* first record with time >= t */
			m = (lo + hi) / 2;
			if (k->ev[m].time_ns < t)
				lo = m + 1;
			else
				hi = m;
		}
		for (m = lo ? lo - 1 : 0; m <= lo && m < k->nev; m++) {
			d = llabs(k->ev[m].time_ns - t);
			if (d < best) {
				best = d;
				*corr = k->sync[m] - k->ev[m].time_ns;
				found = 1;
			}
		}
	}
	return found;
}

static int ev_node(const struct sh5_evstep *ev, const char *name)
{
	size_t i;

	for (i = 0; ev && i < ev->nnodes; i++)
		if (!strcmp(ev->nodes[i].name, name))
			return (int)i;
	return -1;
}

/* The object of node i: its counts and points; returns 1 when it has
 * offsets. */
static int write_node(struct rp *r, hid_t step_g, const struct sh5_evstep *ev,
		      size_t i, size_t cap)
{
	struct sh5_json *j = r->j;
	struct sh5_clock_points cp;
	char why[200] = "";
	hid_t g;
	long n;
	size_t k, step;
	int en = ev && ev->synced ? ev_node(ev, r->node_name[i]) : -1;

	memset(&cp, 0, sizeof(cp));
	H5E_BEGIN_TRY
	{
		g = H5Gopen2(step_g, r->node_group[i], H5P_DEFAULT);
	}
	H5E_END_TRY;
	n = g < 0 ? -1 : sh5_clock_points_read(g, &cp, why, sizeof(why));
	if (g >= 0)
		H5Gclose(g);
	sh5_json_object_open(j);
	sh5_json_kv_string(j, "node", r->node_name[i]);
	if (n < 0)
		sh5_json_kv_string(j, "error", why);
	sh5_json_kv_uint(j, "total", cp.total);
	sh5_json_kv_uint(j, "bad", cp.bad);
	sh5_json_kv_uint(j, "dropped", cp.dropped);
	/* [local_s_rel, raw_ms, err_ms, residual_ms] */
	sh5_json_key(j, "p");
	sh5_json_array_open(j);
	step = cp.n > cap ? (cp.n + cap - 1) / cap : 1;
	for (k = 0; n > 0 && k < cp.n; k += step) {
		int64_t t = cp.pts[k].local_ns, c = 0;

		if (en >= 0) {
			if (!ev_correction(ev, (uint32_t)en, t, &c))
				c = sh5_timesync_offset_map(cp.pts, cp.n, t) -
				    t;
		} else if (r->synced) {
			c = sh5_timesync_offset_map(cp.pts, cp.n, t) - t;
		}
		rp_num(j, (double)(t - r->t0) / 1e9);
		rp_num(j, (double)cp.pts[k].offset_ns / 1e6);
		rp_num(j, (double)cp.rtt[k] / 2e6);
		rp_num(j, (double)(cp.pts[k].offset_ns - c) / 1e6);
	}
	sh5_json_array_close(j);
	sh5_json_object_close(j);
	sh5_clock_points_free(&cp);
	return n > 0;
}

int rp_clock(struct rp *r, hid_t step_g, const struct sh5_evstep *ev,
	     struct sh5_error *errp)
{
	struct sh5_json *j = r->j;
	size_t i, cap, with = 0;
	const char *how;

	(void)errp;
	cap = r->nnodes ? RP_CLOCK_POINTS / r->nnodes : 0;
	if (cap < 8)
		cap = 8;
	if (ev && ev->synced)
		how = "events (SyncTimeNs - TimeNs)";
	else if (r->synced)
		how = "samples (interpolated offsets)";
	else
		how = "none";
	sh5_json_key(j, "clock");
	sh5_json_object_open(j);
	sh5_json_kv_string(j, "correction", how);
	sh5_json_key(j, "nodes");
	sh5_json_array_open(j);
	for (i = 0; i < r->nnodes; i++)
		if (write_node(r, step_g, ev, i, cap))
			with++;
	sh5_json_array_close(j);
	sh5_json_kv_uint(j, "with", with);
	if (!with && r->nnodes)
		rp_missing(r, "step %s: no clock offsets (ClockOffsets) on any "
			   "node", r->step);
	if (r->nnodes == 1)
		rp_missing(r, "step %s: one node: nothing to synchronize "
			   "between nodes", r->step);
	return sh5_json_object_close(j);
}

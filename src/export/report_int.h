/*
 * report_int.h - internals of the HTML report (report*.c).
 *
 * report.c drives: per step it calls the series pass (report_series.c:
 * every sample into fixed time bins per row = node or task), the clock
 * section (report_clock.c) and the events section (report_events.c),
 * each writing its part of the JSON data block through r->j.
 */
#ifndef SH5_REPORT_INT_H
#define SH5_REPORT_INT_H

#include <hdf5.h>
#include <stdint.h>

#include "common/error.h"
#include "export/report_types.h"
#include "common/json.h"
#include "merge/jobread.h"
#include "export/report_util.h"

struct sh5_evstep;

struct rp {
	const char *path;
	struct sh5_report_opts o;
	struct sh5_report_result *res;
	struct sh5_json *j;
	hid_t file;
	struct sh5_jobread *jr;
	/* the current step, filled by rp_series() */
	const char *step;
	int64_t t0, t1;		/* time span of its samples, ns */
	int synced;		/* its samples carry SyncTimeNs */
	size_t nnodes;
	char (*node_group)[64];	/* group name under Nodes, walk order */
	char (*node_name)[64];	/* "Node Name" */
	size_t ntasks;
	int64_t *task_id;	/* walk order (node by node) */
	size_t *task_node;	/* node position of each */
};

/* Keys "t0", "t1", "nodes", "tasks", "series" of the step. */
int rp_series(struct rp *r, const char *step, struct sh5_error *errp);
void rp_series_free(struct rp *r);

/* Key "clock": offsets per node, raw and corrected.  ev may be NULL. */
int rp_clock(struct rp *r, hid_t step_g, const struct sh5_evstep *ev,
	     struct sh5_error *errp);

/* Key "events" (null without events). */
int rp_events(struct rp *r, const struct sh5_evstep *ev,
	      struct sh5_error *errp);

#endif

/*
 * mergesync.h - timestamp synchronization while merging
 * (`sh5merge merge --sync none|offset|clc`).
 *
 * offset: each node-step file's /<node>/ClockOffsets (the plugin's
 * Cristian-style measurements against the clock server, doc/format.md)
 * gives that node's mapping from its clock to the reference clock:
 * piecewise-linear interpolation through the measurements (a single one
 * is a constant shift; the first and last segments are extended), see
 * sh5_timesync_offset_map() in timesync.h.  Measurements of an
 * unsynchronised server (stratum 0 or >= 16) or with a negative round
 * trip are left out (with a warning), and so are those whose round trip
 * exceeds 4 times the node's median round trip plus 50 us: the offset's
 * error is bounded by half the round trip, and a busy host or network
 * makes a few exchanges slow while the others stay precise.  Every
 * sample of the node gets SyncTimeNs = map(EpochTimeNs) beside its
 * original times; totals then use SyncTimeNs.  What was done is recorded
 * on each node group and on /Merge
 * (doc/jobfile.md, "Timestamp synchronization").
 *
 * clc (the controlled logical clock) works on events (messages and
 * collectives); profiles hold samples only, so a merge refuses it (errno
 * ENOTSUP) and points to `sh5merge sync` for event traces.
 *
 * auto (the default): offset when at least one node-step file of the
 * job carries a measurement, else none.
 *
 * The state is used through the merge's hooks (merge.h); one state per
 * sh5_merge_job() call.  Memory: the measurements of one node at a time
 * (16 bytes each) and a scratch array of one row buffer's times.
 */
#ifndef SH5_MERGESYNC_H
#define SH5_MERGESYNC_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "merge/merge.h"
#include "sync/clockpoints.h"
#include "sync/evsync.h"
#include "sync/timesync.h"	/* struct sh5_offset_point */

enum sh5_sync_method {
	SH5_SYNC_AUTO = -1,
	SH5_SYNC_NONE = 0,
	SH5_SYNC_OFFSET = 1,
	SH5_SYNC_CLC = 2,
};

/* "auto", "none", "offset", "clc" -> method; -1 for anything else. */
int sh5_sync_method_parse(const char *name, enum sh5_sync_method *out);
const char *sh5_sync_method_name(enum sh5_sync_method m);

struct sh5_mergesync_stats {
	enum sh5_sync_method requested;
	enum sh5_sync_method method;	/* what was applied: none or offset */
	size_t nodes;			/* node-step files seen */
	size_t corrected;		/* ... corrected by measurements */
	size_t unmeasured;		/* offset, but no usable measurement:
					 * SyncTimeNs = EpochTimeNs */
	size_t measurements;		/* used, all nodes */
	size_t dropped;			/* left out for a round trip above
					 * 4 x the node's median + 50 us */
	int64_t max_correction_ns;	/* max |SyncTimeNs - EpochTimeNs| */
	int64_t error_bound_ns;		/* max round trip / 2 used */
	struct sh5_evsync_stats ev;	/* clc: the events */
};

struct sh5_mergesync;

/*
 * Prepare synchronization for the merge opts describes.  With
 * SH5_SYNC_AUTO the method is chosen during the merge, from its first
 * pass (the hooks' probe and checked: offset when any input carries
 * measurements, else none).  report
 * (may be NULL) receives warnings (error 0), as merge's report does.
 * Returns a state (free with sh5_mergesync_destroy()) or NULL with errno
 * set and errp filled: ENOTSUP for SH5_SYNC_CLC, EINVAL for an unknown
 * method, ENOMEM.
 */
struct sh5_mergesync *sh5_mergesync_create(
	enum sh5_sync_method method, const struct sh5_merge_opts *opts,
	void (*report)(void *arg, int error, const char *file,
		       const char *msg),
	void *report_arg, struct sh5_error *errp);

/* Fill hooks (for sh5_merge_opts.hooks) that apply ms; ms must outlive
 * the merge. */
void sh5_mergesync_hooks(struct sh5_mergesync *ms,
			 struct sh5_merge_hooks *hooks);

/* What was done so far (after the merge: the whole job). */
void sh5_mergesync_stats(const struct sh5_mergesync *ms,
			 struct sh5_mergesync_stats *st);

void sh5_mergesync_destroy(struct sh5_mergesync *ms);

/* One node's record, read back from a job file's node group (the
 * attributes node_end writes).  Returns 0, or -1 when the group carries
 * no "Sync Method" attribute. */
struct sh5_mergesync_node {
	char method[16];		/* "offset" or "none" */
	uint32_t measurements;
	uint32_t dropped;		/* left out as noisy */
	int64_t max_correction_ns;
	int64_t error_bound_ns;
	double drift_ppm;		/* NAN with fewer than 2 measurements */
};
int sh5_mergesync_node_read(hid_t node_group, struct sh5_mergesync_node *out);

#endif /* SH5_MERGESYNC_H */

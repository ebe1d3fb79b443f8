/*
 * clockpoints.h - the usable clock-offset measurements of a node
 * (ClockOffsets, filtered as `--sync offset` does).
 */
#ifndef SH5_CLOCKPOINTS_H
#define SH5_CLOCKPOINTS_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "sync/timesync.h"	/* struct sh5_offset_point */

/*
 * The usable clock-offset measurements of a node group (node-step file's
 * /<node> or a job file's node group): its ClockOffsets, leaving out an
 * unsynchronised server (stratum 0 or >= 16), a negative round trip
 * (counted in bad) and a round trip above 4 x the node's median + 50 us
 * (counted in dropped); sorted by local time.  This is the filter of
 * --sync offset, for everyone who maps a node's clock.  cp's arrays are
 * malloc'd (free with sh5_clock_points_free()).  Returns the number of
 * usable measurements (0 without ClockOffsets), or -1 with why set
 * (ClockOffsets unreadable, out of memory; cp then empty).
 */
struct sh5_clock_points {
	struct sh5_offset_point *pts;	/* usable, by local time */
	int64_t *rtt;			/* round trip of each, ns */
	size_t n;
	size_t total;			/* rows in ClockOffsets */
	size_t bad;			/* unsynchronised, negative trip */
	size_t dropped;			/* noisy */
	int64_t err_ns;			/* max round trip / 2 of those used */
};
long sh5_clock_points_read(hid_t node, struct sh5_clock_points *cp,
			   char *why, size_t whylen);
void sh5_clock_points_free(struct sh5_clock_points *cp);

#endif /* SH5_CLOCKPOINTS_H */

/*
 * otf2.h - the application events of one step as an OTF2 archive.
 *
 * Mapping (doc/otf2.md): one location (CPU thread) per rank, in a
 * location group (process) of its own whose system-tree parent is its
 * node (machine -> node -> rank), or one location group per node
 * (SH5_OTF2_GROUP_NODE); regions unified by name over ranks
 * (MPI functions with paradigm MPI, others user); SEND/RECV as MpiSend/
 * MpiRecv on the recorded communicator (peer as the rank in it);
 * CBEGIN/CEND as MpiCollectiveBegin/End; PHASE as a ParameterInt
 * "phase" event.  Times: SyncTimeNs (or the recorded times with raw),
 * clock properties 1 ns resolution, global offset = the first event,
 * realtime = that time since 1970.  Uses the OTF2 library (Debian
 * libotf2-trace-dev 3.0).
 */
#ifndef SH5_OTF2_H
#define SH5_OTF2_H

#include <stdint.h>

#include "common/error.h"

struct sh5_evstep;

struct sh5_otf2_result {
	uint64_t enter, leave, send, recv, cbegin, cend, phase;
	uint64_t skipped;	/* records with no OTF2 event (OBJECT, ...) */
	size_t locations, regions, comms;
	int64_t t0, t1;		/* first and last event time, ns */
};

/*
 * Write the events of s into a new archive "traces" in the existing
 * directory dir (dir/traces.otf2, dir/traces.def, dir/traces/).  raw:
 * the recorded times instead of SyncTimeNs (EINVAL when s is not
 * synchronized and raw is 0).  machine names the system-tree root.
 * Returns 0, or -1 with errno and errp set.
 */
int sh5_otf2_write(const struct sh5_evstep *s, const char *dir,
		   const char *machine, int raw, struct sh5_otf2_result *res,
		   struct sh5_error *errp);

/*
 * The same with flags: SH5_OTF2_GROUP_NODE makes one location group
 * (type PROCESS) per node holding its ranks' locations, instead of one
 * per rank.
 */
#define SH5_OTF2_RAW 0x1
#define SH5_OTF2_GROUP_NODE 0x2
int sh5_otf2_write_flags(const struct sh5_evstep *s, const char *dir,
			 const char *machine, int flags,
			 struct sh5_otf2_result *res, struct sh5_error *errp);

#endif

/*
 * evstore.h - events in HDF5: the layout under a node group, shared by
 * the node-step writer (absorbing spill files) and by sh5merge (reading
 * node-step and job files).  doc/format.md, "Events", is the reference.
 *
 *   <node>/Events/                     group
 *       attribute "Events Format Version" int32 1
 *   <node>/Events/<task>               one dataset per task (global task
 *                                      id): event records, compound of
 *       TimeNs int64, Kind uint8, Op uint8, Flags uint16, Id uint32,
 *       Peer int32, Tag int32, Bytes uint64, Value float64 (struct
 *       sh5ev_rec, same meaning; only kinds ENTER..LOST), chunked
 *       (4096 records), shuffle + deflate + fletcher32; attributes:
 *         "Task" uint32, "Pid" uint32, "World Rank" int32 (-1: no RANK
 *         record), "World Size" int32, "Library Version" string,
 *         "Spill File" string (name as found), "Blocks" uint32,
 *         "Blocks Dropped" uint32, "Records Rejected" uint64,
 *         "Events Lost" uint64, "Torn Tail" int32, "Truncated" int32,
 *         "Problem" string (the first thing dropped, "" when none)
 *   <node>/Events/Regions              compound {Task uint32, Region
 *                                      uint32, Flags uint32, Name
 *                                      string[128] NUL-padded}
 *   <node>/Events/Comms                compound {Task uint32, Local
 *                                      uint32, Global uint64, Size int32,
 *                                      Rank int32}
 *   <node>/Events/CommMembers          compound {Global uint64, Rank
 *                                      int32, WorldRank int32}: one row
 *                                      per member of each communicator
 *                                      whose definition carried members
 *
 * A job file (sh5merge merge) holds the same under
 * /Steps/<step>/Nodes/<node>/Events, plus after `merge --sync clc`
 *   .../Events/SyncTimeNs/<task>       int64, one corrected time per
 *                                      record of Events/<task>
 */
#ifndef SH5_EVSTORE_H
#define SH5_EVSTORE_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "events/evformat.h"

#define SH5_EVSTORE_GROUP "Events"
#define SH5_EVSTORE_SYNC "SyncTimeNs"
#define SH5_EVSTORE_CHUNK 4096

/* HDF5 types (memory = file layout, native little-endian): the caller
 * closes them.  Return a type id or H5I_INVALID_HID. */
hid_t sh5_evstore_rec_type(void);
hid_t sh5_evstore_region_type(void);
hid_t sh5_evstore_comm_type(void);
hid_t sh5_evstore_member_type(void);

struct sh5_evstore_region {
	uint32_t task, region, flags;
	char name[SH5EV_NAME_MAX + 1];
};
struct sh5_evstore_comm {
	uint32_t task, local;
	uint64_t global;
	int32_t size, rank;
};
struct sh5_evstore_member {
	uint64_t global;
	int32_t rank, world_rank;
};

#endif /* SH5_EVSTORE_H */

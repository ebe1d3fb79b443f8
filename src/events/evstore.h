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

#include "common/error.h"
#include "events/evformat.h"
#include "events/evspill.h"

#define SH5_EVSTORE_GROUP "Events"
#define SH5_EVSTORE_SYNC "SyncTimeNs"
#define SH5_EVSTORE_CHUNK 4096

/*
 * The members of the four compounds: the one definition of the layout,
 * from which the writer builds the file types and readers find and
 * check the members of a file by name.  For a string member native and
 * file are 0 and size is its length; cls is what the file's member must
 * be.  Tables are built at the first call (HDF5's type ids are not
 * constants); *n receives their length.
 */
struct sh5_evstore_field {
	const char *name;
	size_t off;		/* in the memory struct */
	hid_t native;		/* memory type, or 0: string */
	hid_t file;		/* file type (little-endian), or 0 */
	size_t size;		/* string length */
	H5T_class_t cls;
};
const struct sh5_evstore_field *sh5_evstore_rec_fields(size_t *n);
const struct sh5_evstore_field *sh5_evstore_region_fields(size_t *n);
const struct sh5_evstore_field *sh5_evstore_comm_fields(size_t *n);
const struct sh5_evstore_field *sh5_evstore_member_fields(size_t *n);

/* HDF5 types (memory = file layout, native little-endian): the caller
 * closes them.  Return a type id or H5I_INVALID_HID. */
hid_t sh5_evstore_rec_type(void);
/* The compound of the n fields f in a struct of size bytes, with their
 * file types (file 1) or native ones (file 0). */
hid_t sh5_evstore_compound(size_t size, const struct sh5_evstore_field *f,
			   size_t n, int file);
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

/*
 * Writing the events of one node group (the plugin, absorbing spill
 * files).  One task is open at a time: begin it, pass its definitions and
 * events in any order, then end it (attributes written, rows committed)
 * or abort it (its dataset unlinked, its rows of Regions, Comms and
 * CommMembers cut off again).  Nothing is created before the first
 * task begins: a node group without events gets no Events group, and
 * when a store that made the group aborts its only task, the group goes
 * too.  Errors name the node group and dataset ("/<node>/Events/<task>:
 * ..."); the caller adds the file name.  Not thread-safe: the caller
 * serializes every HDF5 call of the file (sh5_writer_call()).
 */
struct sh5_evstore;

/* A writer of Events under node_group (not taken: it stays open and the
 * caller's).  compression: deflate level 0-9 (0: shuffle and fletcher32
 * only).  Returns NULL with errp set (EINVAL, ENOMEM, HDF5 errors when an
 * existing Events group cannot be opened). */
struct sh5_evstore *sh5_evstore_open(hid_t node_group, int compression,
				     struct sh5_error *errp);

/* Begin task's dataset Events/<task>.  -1 with errno EEXIST when that
 * task already has one, EBUSY when another task is open. */
int sh5_evstore_task_begin(struct sh5_evstore *es, uint32_t task,
			   struct sh5_error *errp);

/* A region or communicator definition of the open task (a row of
 * Regions; a row of Comms and, when members is not NULL, size rows of
 * CommMembers).  name is cut at SH5EV_NAME_MAX bytes.  0 or -1. */
int sh5_evstore_region(struct sh5_evstore *es, uint32_t id, uint16_t flags,
		       const char *name, struct sh5_error *errp);
int sh5_evstore_comm(struct sh5_evstore *es, uint32_t local, uint64_t global,
		     int32_t size, int32_t myrank, const int32_t *members,
		     struct sh5_error *errp);

/* Append n event records (kinds ENTER..LOST) to the open task.  The
 * first RANK record gives the task's World Rank and World Size.  0 or
 * -1. */
int sh5_evstore_events(struct sh5_evstore *es, const struct sh5ev_rec *recs,
		       size_t n, struct sh5_error *errp);

/* Records appended to the open task so far (0 when none is open). */
uint64_t sh5_evstore_task_records(const struct sh5_evstore *es);

/* Write what is buffered and the attributes of the open task (info from
 * sh5_evspill_read(), spill_file the name as found) and close it.  On
 * failure the task is aborted.  0 or -1. */
int sh5_evstore_task_end(struct sh5_evstore *es,
			 const struct sh5_evspill_info *info,
			 const char *spill_file, struct sh5_error *errp);

/* Undo the open task (no-op when none is open). */
void sh5_evstore_task_abort(struct sh5_evstore *es);

/* Flush the file (H5Fflush, global scope).  0 or -1. */
int sh5_evstore_flush(struct sh5_evstore *es, struct sh5_error *errp);

/* Tasks ended (committed) through this store. */
unsigned sh5_evstore_tasks(const struct sh5_evstore *es);

/* Abort an open task, close the handles and free es (NULL-safe).  The
 * file is not flushed. */
void sh5_evstore_close(struct sh5_evstore *es);

#endif /* SH5_EVSTORE_H */

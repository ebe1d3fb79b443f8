/*
 * jobevents_int.h - internals shared by jobevents_read.c, jobevents_ids.c
 * and jobevents_h5.c
 * (not an interface: see jobevents.h).
 */
#ifndef SH5_JOBEVENTS_INT_H
#define SH5_JOBEVENTS_INT_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sync/jobevents.h"

/* Sizes beyond these are refused as damage, not allocated. */
#define MAX_RECS (UINT64_C(1) << 28)	/* per task: 10 GiB of records */
#define MAX_ROWS (UINT64_C(1) << 24)	/* Regions, Comms, CommMembers */
#define MAX_LINKS 1000000		/* names in Nodes/, Events/ */

/*
 * Read the 1-D compound dataset name of g (HDF5 path shown as path) into
 * a new array of *n records of size bytes, after checking that the file
 * type has every member with its class and that there are at most max
 * rows.  Returns the array (NULL with *n 0 for an empty dataset), or
 * NULL with errp set and *n == (size_t)-1.
 */
void *sh5_jev_read_compound(hid_t g, const char *name, const char *path,
			    size_t size, const struct sh5_evstore_field *m,
			    size_t nm, uint64_t max, size_t *n,
			    struct sh5_error *errp);

/* dst = a "/" b [ "/" c ], cut to len (paths in messages only). */
void sh5_jev_join(char *dst, size_t len, const char *a, const char *b,
		  const char *c);

/* The link names of a group, in name order (at most MAX_LINKS). */
struct sh5_jev_names {
	char **v;
	size_t n, cap;
	int over;
};
int sh5_jev_names_list(hid_t g, const char *path, struct sh5_jev_names *nm,
		       struct sh5_error *errp);
void sh5_jev_names_free(struct sh5_jev_names *nm);

/* Link name as a task id: decimal, no sign, fits uint32.  0 or -1. */
int sh5_jev_task_name(const char *s, uint32_t *out);

/* H5O_type_t of g/name, -2 when there is no such link, -1 unreadable. */
int sh5_jev_obj_type(hid_t g, const char *name);

/* A warning into s->warning (the first few kept, all counted). */
void sh5_jev_warnf(struct sh5_evstep *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* jobevents_ids.c: after reading every node. */

/* World rank of each task from its RANK record (s->tasks ascending): two
 * tasks on one id or one world rank are errors.  0, or -1 with errp. */
int sh5_jev_set_ranks(struct sh5_evstep *s, struct sh5_error *errp);

/* s->comms from the tasks' Comms rows and the nmem CommMembers rows mem
 * (sorted and deduplicated in place: *nmem shrinks).  0, or -1 with
 * errno and errp set. */
int sh5_jev_build_comms(struct sh5_evstep *s, struct sh5_evstore_member *mem,
			size_t *nmem, struct sh5_error *errp);

/* Every record of every task: known kind, defined ids, mapped peers.
 * 0, or -1 with errno and errp naming the record. */
int sh5_jev_check_records(struct sh5_evstep *s, struct sh5_error *errp);

/* qsort order of CommMembers rows: global id, rank, world rank. */
int sh5_jev_mem_cmp(const void *pa, const void *pb);

#endif /* SH5_JOBEVENTS_INT_H */

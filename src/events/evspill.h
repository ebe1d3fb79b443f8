/*
 * evspill.h - reading a task's spill file (untrusted input).
 *
 * Run as root inside slurmstepd on a file the job's user wrote: nothing
 * in it is trusted.  The file is opened relative to a directory fd with
 * O_NOFOLLOW|O_NONBLOCK (never a symlink, a FIFO, a device, a file of
 * another owner or with other links), read one block at a time (memory:
 * one block plus the definitions), and every block and record is
 * checked: header fields and checksum, block magic, sequence, record
 * count, checksum, record kinds, flags, ids defined before use, times
 * non-decreasing, definition payloads complete.  What fails a check is
 * dropped and counted, never passed on; reading never takes longer than
 * the file's size allows and never more than max_bytes.
 *
 * The result is delivered through callbacks, in file order: definitions
 * (regions, communicators with their members) and then each valid event
 * record (kinds ENTER..LOST; definition records and their payload are
 * not passed as events).
 */
#ifndef SH5_EVSPILL_H
#define SH5_EVSPILL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "events/evformat.h"

struct sh5_evspill_cb {
	/* A region definition: id, flags (SH5EV_F_MPI), name (NUL-terminated,
	 * 1..SH5EV_NAME_MAX bytes, printable: other bytes replaced by '?').
	 * Return 0, or -1 to stop (errp set). */
	int (*region)(void *arg, uint32_t id, uint16_t flags,
		      const char *name, struct sh5_error *errp);
	/* A communicator definition; members (world ranks, comm rank order)
	 * is NULL unless the record carried them (size entries). */
	int (*comm)(void *arg, uint32_t local, uint64_t global, int32_t size,
		    int32_t myrank, const int32_t *members,
		    struct sh5_error *errp);
	/* n valid event records (up to one block's worth at a time). */
	int (*events)(void *arg, const struct sh5ev_rec *recs, size_t n,
		      struct sh5_error *errp);
	void *arg;
};

struct sh5_evspill_info {
	uint32_t task;		/* from the header */
	uint32_t pid;
	uint32_t block_size;
	uint32_t flags;		/* SH5EV_HF_* of the header */
	int64_t created_ns;
	char prefix[128];
	char lib_version[32];
	uint64_t file_bytes;	/* size when opened */
	uint32_t blocks;	/* blocks read and accepted */
	uint32_t blocks_bad;	/* blocks dropped (checksum, magic, seq) */
	int torn_tail;		/* 1: the file ended inside a block */
	uint64_t unwritten;	/* bytes from the first block never
				 * finished (magic 0) to the end: the rest of
				 * a file extended ahead by a killed task;
				 * not read, 0 when none */
	int truncated;		/* 1: stopped at max_bytes */
	uint64_t events;	/* event records passed on */
	uint64_t rejected;	/* records dropped (bad kind, undefined id,
				 * time backwards, bad field) */
	uint64_t lost;		/* sum of the LOST records' counts */
	char first_problem[200]; /* the first thing dropped, or "" */
};

/*
 * Open name (a plain file name: no '/') in directory dirfd (a spill
 * file), check it is a regular file owned by uid with one link, and read
 * it through cb.  max_bytes
 * caps what is read (0: no cap).  Returns 0 when the file was read
 * (info says what was dropped), or -1 with errno and errp naming the
 * file and the reason when it could not be read at all (wrong owner or
 * type, unreadable or invalid header, version mismatch: errno
 * EPROTONOSUPPORT, a callback's failure).  info (may be NULL) is filled
 * in both cases as far as known.
 */
int sh5_evspill_read(int dirfd, const char *name, uid_t uid,
		     uint64_t max_bytes, const struct sh5_evspill_cb *cb,
		     struct sh5_evspill_info *info, struct sh5_error *errp);

/*
 * Parse a spill-file name "<prefix>.<task>.<pid>.sh5ev" whose prefix is
 * the given one.  Returns 0 and sets task and pid, or -1 (not one).
 */
int sh5_evspill_name_parse(const char *name, const char *prefix,
			   uint32_t *task, uint32_t *pid);

#endif /* SH5_EVSPILL_H */

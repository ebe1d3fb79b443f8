/*
 * trace.h - the event-trace CSV, version 1 (doc/timesync.md and
 * ../shared/notes/event-trace-csv.md): reading, validation, writing.
 *
 * A trace is read once into compact arrays (32 bytes per event: a
 * 16-byte record, the 8-byte time and 4-byte location in arrays of their
 * own, a 4-byte per-location index; line numbers are not kept per event
 * but derived from the list of the other lines), with point-to-point
 * messages matched (MPI's non-overtaking rule) and collective operations
 * assembled into instances.  No per-event allocation: a trace of 10
 * million events takes about 320 MB here.
 *
 * Problems in the file (malformed lines, unknown kinds, times going
 * backwards, unmatched sends or receives, collectives with missing
 * members or mismatched operations) are collected as "problems" with
 * their line numbers instead of failing the read, so that a caller can
 * report all of them, or go on with SH5_TRACE_PARTIAL semantics: the
 * offending line or constraint is left out of the synchronization and the
 * line is written back (with the time corrected where it could be).
 *
 * Writing re-reads the input file and copies every line unchanged except
 * the time field of event lines, so comments, blank lines, directives and
 * OFFSET lines stay byte for byte in place.  Each new time is written
 * over the old one in the read buffer when both have the same length
 * (the common case), and each block goes out in one write.
 *
 * Both passes take the text in blocks of whole lines (the reader 256 KiB,
 * so a block stays in the cache while it is parsed; the writer 1 MiB:
 * fewer, longer writes cost less in the kernel); the common event lines
 * are parsed in one pass over their bytes, anything else (directives,
 * comments, CRLF lines, malformed lines) by the general parser.
 */
#ifndef SH5_TRACE_H
#define SH5_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* The OFFSET measurements of a location (trace->off) are timesync.h's
 * points; only a pointer here, so that timesync.h (which includes this
 * header) is not included back. */
struct sh5_offset_point;

#define SH5_TRACE_NONE UINT32_MAX

enum sh5_trace_kind {
	SH5_EV_INT = 0,
	SH5_EV_SEND,
	SH5_EV_RECV,
	SH5_EV_CBEGIN,
	SH5_EV_CEND,
};

/* Collective operations (the `peer` field of CBEGIN/CEND). */
enum sh5_coll_op {
	SH5_OP_NONE = 0,
	SH5_OP_BARRIER,
	SH5_OP_BCAST,
	SH5_OP_SCATTER,
	SH5_OP_GATHER,
	SH5_OP_REDUCE,
	SH5_OP_ALLREDUCE,
	SH5_OP_ALLGATHER,
	SH5_OP_ALLTOALL,
	SH5_OP_REDUCE_SCATTER,
	SH5_OP_SCAN,
	SH5_OP_EXSCAN,
	SH5_OP_COUNT
};

/* Classes of happened-before relations inside one collective instance. */
enum sh5_coll_class {
	SH5_COLL_NTON,		/* every end after every begin */
	SH5_COLL_1TON,		/* non-root ends after the root's begin */
	SH5_COLL_NTO1,		/* the root's end after every begin */
	SH5_COLL_SCAN,		/* end_i after begin_j, j <= i in rank */
	SH5_COLL_EXSCAN,	/* end_i after begin_j, j < i */
};

/* Event flags. */
#define SH5_EVF_FREE 0x01	/* constraint left out (--allow-partial) */
#define SH5_EVF_CLAMPED 0x02	/* time went backwards; clamped */

/* One event line (16 bytes).  Times are kept by the caller in parallel
 * arrays (trace->time holds the times as read); the line number is
 * sh5_trace_line()'s. */
struct sh5_trace_event {
	uint32_t link;	/* SEND<->RECV partner, CBEGIN<->CEND; or NONE */
	uint32_t ref;	/* collective: instance; p2p: channel; or NONE */
	uint32_t aux;	/* p2p: peer location index; collective: root
			 * location index or NONE */
	uint8_t kind;	/* enum sh5_trace_kind */
	uint8_t op;	/* enum sh5_coll_op for CBEGIN/CEND */
	uint16_t flags;	/* SH5_EVF_* */
};

/* One assembled collective operation instance: members' CBEGIN event
 * indices are trace->inst_begin[first .. first+size), in rank order;
 * each CEND is ev[begin].link. */
struct sh5_trace_inst {
	uint32_t first;
	uint32_t size;
	uint32_t comm;		/* communicator index */
	uint32_t root_rank;	/* rank of the root, or NONE */
	uint8_t op;		/* enum sh5_coll_op */
	uint8_t cls;		/* enum sh5_coll_class */
	uint8_t free;		/* 1: left unconstrained */
};

struct sh5_trace_problem {
	uint32_t line;		/* 0 when not tied to one line */
	char text[200];
};

#define SH5_TRACE_MAX_PROBLEMS 64

struct sh5_trace {
	size_t nev;
	struct sh5_trace_event *ev;	/* file order */
	int64_t *time;			/* times as read, file order */
	uint32_t *loc;			/* location index of each event
					 * (0 .. nloc-1), file order */

	size_t nloc;
	int64_t *loc_id;		/* location number of each index */
	uint32_t *loc_node;		/* node index of each location */
	uint32_t *loc_first;		/* [nloc+1]: loc_order ranges */
	uint32_t *loc_order;		/* event indices by location,
					 * local order */
	uint32_t *off_first;		/* [nloc+1]: off ranges */
	struct sh5_offset_point *off;	/* OFFSET lines by location */
	size_t noff;

	size_t nnode;

	size_t ncomm;
	int64_t *comm_id;
	uint32_t *comm_first;		/* [ncomm+1]: comm_members */
	uint32_t *comm_members;		/* locations, rank order */

	size_t ninst;
	struct sh5_trace_inst *inst;
	uint32_t *inst_begin;

	/* From #mu / #mu-intra; -1 when absent. */
	int64_t mu_inter;
	int64_t mu_intra;

	size_t nlines;			/* lines in the file */
	uint32_t *other;		/* the lines that are not event
					 * lines, ascending (the writer's
					 * map of the file) */
	size_t nother;
	size_t nmsg;			/* matched p2p messages */

	/* Problems found, in the order found; nproblems counts all of them,
	 * the first SH5_TRACE_MAX_PROBLEMS are kept. */
	size_t nproblems;
	struct sh5_trace_problem problem[SH5_TRACE_MAX_PROBLEMS];
};

/*
 * Read and validate the trace in the file at path.
 *
 * Returns a new trace (free with sh5_trace_destroy()) or NULL with errno
 * set and errp filled on I/O or memory errors, or when the file is not an
 * event trace at all (no "#sh5-trace 1" first line).  Problems with
 * individual lines are not errors here: they are collected in
 * trace->problem (check trace->nproblems) and the offending constraint
 * is left out, as --allow-partial asks.
 */
struct sh5_trace *sh5_trace_read(const char *path, struct sh5_error *errp);

/* Same, from a buffer (name is used in messages only). */
struct sh5_trace *sh5_trace_read_mem(const char *buf, size_t len,
				     const char *name,
				     struct sh5_error *errp);

/* NULL-safe. */
void sh5_trace_destroy(struct sh5_trace *t);

/*
 * Write the trace in the file in_path to out_path with the time of every
 * event line replaced by times[i] (times in file order, trace->nev of
 * them).  Everything else is copied byte for byte.  The output follows
 * common/outfile.h: a temporary file beside out_path renamed over it on
 * success only (on failure nothing is left under out_path); "-" and an
 * existing device or FIFO are written in place; out_path == in_path is
 * refused.  A write error names out_path.
 * Returns 0, or -1 with errno set and errp filled.
 */
int sh5_trace_write(const struct sh5_trace *t, const char *in_path,
		    const int64_t *times, const char *out_path,
		    struct sh5_error *errp);

/* Same, from the input buffer to a FILE-less memory result: *out gets a
 * malloc'd buffer (caller frees) of *outlen bytes. */
int sh5_trace_write_mem(const struct sh5_trace *t, const char *in,
			size_t inlen, const int64_t *times, char **out,
			size_t *outlen, struct sh5_error *errp);

/* The 1-based line number in the file of event e (file order), from
 * trace->other (a binary search: for messages, not for loops). */
uint32_t sh5_trace_line(const struct sh5_trace *t, size_t e);

/* Name of a collective operation ("BARRIER"...), or "?" */
const char *sh5_trace_op_name(unsigned op);

/* Happened-before class of a collective operation. */
enum sh5_coll_class sh5_trace_op_class(unsigned op);

/* Record a problem (used by the synchronization, too).  line 0: none. */
void sh5_trace_problem_add(struct sh5_trace *t, uint32_t line,
			   const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* SH5_TRACE_H */

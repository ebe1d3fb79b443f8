/*
 * evlog.h - the task-side event log: one per process, CLOG-style.
 *
 * Used by the public API (sh5ev.h) and the MPI interposition library
 * (mpi/).  Runs inside the user's application: it never aborts, never
 * blocks on anything but one write() of a full block to the spill file,
 * never calls MPI, and never changes what the application computes.
 * Any failure (no SH5_EVENTS_DIR, file cannot be created, write error,
 * size cap reached) is reported once on stderr, prefixed "sh5ev: ", and
 * recording stops for the process; every call stays cheap and harmless.
 *
 * Memory: one block (SH5_EVENTS_BUFFER bytes, default 64 KiB, a power of
 * two 4 KiB..16 MiB) plus small tables; when the block is full it is
 * written to the spill file and reused, so a kill -9 loses at most the
 * events of the current block.  The spill file is created (O_EXCL,
 * O_NOFOLLOW, mode 0600) when the first block is written, so a process
 * that records nothing leaves no file.  It stops growing at
 * SH5_EVENTS_MAX bytes (default 1 GiB): a LOST record then counts what
 * was not recorded.
 *
 * Threads: records are taken from the thread that opened the log (the
 * one that called MPI_Init, or the first to call the public API); calls
 * from other threads are counted as lost and otherwise ignored.
 *
 * Time: CLOCK_REALTIME in ns, the clock the plugin's clock-offset
 * measurements describe.
 */
#ifndef SH5_EVLOG_H
#define SH5_EVLOG_H

#include <stddef.h>
#include <stdint.h>

#include "events/evformat.h"

/*
 * Open the process's log from the environment (SH5_EVENTS_DIR,
 * SH5_EVENTS_PREFIX, SLURM_PROCID, SH5_EVENTS_BUFFER, SH5_EVENTS_MAX).
 * Idempotent: later calls return the first result.  Returns 1 when
 * recording, 0 when not (no directory given, or after an error, which
 * was reported once).  Also registers sh5_evlog_close() with atexit().
 */
int sh5_evlog_open(void);

/* 1 when recording from the calling thread; cheap (inline check of a
 * thread-local flag). */
int sh5_evlog_on(void);

/* CLOCK_REALTIME in ns. */
int64_t sh5_evlog_now(void);

/*
 * Append one record (r->time_ns as given).  No-op when not recording.
 * The hot path: a copy into the current block; a full block is written.
 */
void sh5_evlog_put(const struct sh5ev_rec *r);

/* Shorthands building the record; time taken now unless given. */
void sh5_evlog_event(uint8_t kind, uint8_t op, uint16_t flags, uint32_t id,
		     int32_t peer, int32_t tag, uint64_t bytes,
		     int64_t time_ns);

/*
 * Region ids.  sh5_evlog_region() returns the id of name (defined at its
 * first use: a DEFREGION with flags is written), or -1 when not
 * recording or the name is empty or longer than SH5EV_NAME_MAX (reported
 * once).  Names are looked up in a hash table; callers on hot paths keep
 * the id.
 */
int32_t sh5_evlog_region(const char *name, uint16_t flags);

/*
 * Define communicator local id `local` (>= 2) with global id `global`,
 * `size` members of which the caller is `myrank`; members (world ranks,
 * rank order) may be NULL, and are written only when given.
 */
void sh5_evlog_comm(uint32_t local, uint64_t global, int32_t size,
		    int32_t myrank, const int32_t *members);

/* Start phase n+1 (n phases so far); level: MPI_Pcontrol's, or -1.
 * Returns the new phase number (1, 2, ...), 0 when not recording. */
uint32_t sh5_evlog_phase(int32_t level, uint16_t flags);

/* The current phase number (0 before the first mark). */
uint32_t sh5_evlog_current_phase(void);

/* Write the current block (if it holds anything) and close the spill
 * file; recording stops.  Safe to call more than once and from atexit. */
void sh5_evlog_close(void);

/* Counters, for tests and the benchmark. */
struct sh5_evlog_stats {
	uint64_t recorded;	/* records put */
	uint64_t lost;		/* not recorded (cap, other thread, error) */
	uint64_t blocks;	/* blocks written */
};
void sh5_evlog_stats(struct sh5_evlog_stats *st);

#endif /* SH5_EVLOG_H */

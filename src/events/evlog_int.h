/*
 * evlog_int.h - what the files of the task-side event log share (see
 * evlog.c): its state, the TSC clock's, and the functions that one file
 * calls in another.  Internal to libsh5evlog.
 *
 * The code uses short names (L, C, report(), stop() ...); the symbols
 * behind them are prefixed with sh5_evlog_ and hidden, so that they
 * clash with nothing in the program or in the MPI preload library.
 */
#ifndef SH5_EVENTS_EVLOG_INT_H
#define SH5_EVENTS_EVLOG_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "events/evformat.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define TLS __thread __attribute__((tls_model("initial-exec")))

#define MAX_DEFAULT (1ull << 30)
#define RING 4			/* blocks: the one being filled + queued */
#define REGIONS_MAX (1u << 20)	/* what the reader accepts */
#define WINDOW_FIRST (1u << 20) /* file extended and mapped this far, */
#define WINDOW_BYTES (16u << 20) /* doubling up to this */
#define WINDOW_MIN 4		/* blocks, at least */
#define WINDOW_SLOW 5000000000ll /* a window filled slower: halve */
#define TMPFS_MAGIC_ 0x01021994	/* statfs f_type, <linux/magic.h> */

struct region {
	char *name;		/* NULL: free slot */
	uint32_t hash;
	uint32_t id;
	uint16_t flags;
};

struct evlog {
	/* hot */
	struct sh5ev_rec *recs;	/* records of the current block */
	uint32_t n;		/* records used */
	uint32_t limit;		/* block is full at n == limit */
	int64_t last_ns;	/* time of the block's last event */
	uint64_t recorded;
	uint64_t lost_cap;	/* owner's records after the cap */

	/* cold */
	unsigned char *block;	/* block_size bytes: ring[slot] */
	unsigned char *ring[RING];
	uint32_t slot;		/* of the block being filled */
	uint32_t queued;	/* atomic: blocks handed to the writer */
	uint32_t done;		/* atomic: of those, written (or dropped) */
	int use_thread;		/* 1: start a writer at the first block */
	int use_map;		/* 1: blocks after the first are mapped */
	int extended;		/* the file was extended ahead */
	unsigned char *map;	/* MAP_SHARED window of the file */
	size_t map_len;
	uint64_t map_off;	/* file offset of map (page aligned) */
	uint64_t map_end;	/* first block after the window */
	uint64_t window;	/* blocks of the last window */
	int64_t window_ns;	/* when it was made (CLOCK_MONOTONIC) */
	int zero_fill;		/* write the window's zeros (not tmpfs) */
	int thread_on;		/* the writer runs (joined at close) */
	int quit;		/* under mu: writer, drain and return */
	int werr;		/* atomic: errno of the writer's failure */
	uint64_t lost_async;	/* atomic: records of blocks it dropped */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t block_size;
	uint32_t cap;		/* records per block */
	uint32_t cont;		/* leading payload records of the block */
	uint32_t seq;		/* of the current block */
	uint64_t max_blocks;	/* blocks the size cap allows (>= 1) */
	uint64_t blocks;	/* written */
	uint64_t lost_err;	/* records in blocks that failed to write */
	int capped;
	int fd;			/* -1 until the first block is written */
	pid_t pid;
	uint32_t task;
	char prefix[128];
	char path[PATH_MAX];

	struct region *regions;	/* open addressing, power-of-two size */
	uint32_t nregions;
	uint32_t region_slots;
	uint32_t phase;
};

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_TSC 1

struct tscclock {
	uint64_t t0;		/* window: anchor TSC */
	int64_t ns0;		/* window: anchor ns (>= the real clock's) */
	uint64_t win;		/* ticks after t0 that are extrapolated */
	uint64_t mult;		/* window's ns per tick << 32 (the rate, less
				 * what absorbs a lead); 0: no window */
	uint64_t rate;		/* measured ns per tick << 32; 0: none yet */
	uint64_t pt;		/* the last (TSC, real ns) pair */
	int64_t pns;
	uint64_t bt[2];		/* rate bases: TSC, ns (older, newer) */
	int64_t bns[2];
	uint64_t wmin;		/* narrowest pair seen, ticks */
	int usable;
};

static inline uint64_t rdtsc(void)
{
	return __builtin_ia32_rdtsc();
}

#endif

#define L sh5_evlog_L
#define C sh5_evlog_C
#define g_recording sh5_evlog_g_recording
#define g_lost_other sh5_evlog_g_lost_other
#define tl_on sh5_evlog_tl_on
#define tl_owner sh5_evlog_tl_owner
#define report sh5_evlog_report
#define stop sh5_evlog_stop
#define gettime_ns sh5_evlog_gettime_ns
#define tsc_init sh5_evlog_tsc_init
#define tsc_anchor sh5_evlog_tsc_anchor
#define stop_writer sh5_evlog_stop_writer
#define write_block sh5_evlog_write_block
#define block_full sh5_evlog_block_full
#define map_drop sh5_evlog_map_drop
#define next_block sh5_evlog_next_block
#define is_mapped sh5_evlog_is_mapped

#pragma GCC visibility push(hidden)

/* evlog_state.c: the log's state, the error report */
extern struct evlog L;
extern int g_recording;		/* 1 from open until stop/close/fork */
extern uint64_t g_lost_other;	/* atomic: calls from other threads */
extern TLS int tl_on;		/* owner thread, recording, not capped */
extern TLS int tl_owner;	/* owner thread */
void report(const char *what, const char *reason);
void stop(void);

/* evlog_clock.c: the owner thread's clock */
int64_t gettime_ns(void);
#ifdef HAVE_TSC
extern struct tscclock C;
void tsc_init(void);
int64_t __attribute__((noinline)) tsc_anchor(uint64_t now);
#endif

/* evlog_write.c: the file, the blocks and the writer thread */
void stop_writer(void);
int write_block(int more);
void block_full(void);

/* evlog_map.c: the mapped window of the file */
void map_drop(void);
void next_block(void);
int is_mapped(const unsigned char *blk);

#pragma GCC visibility pop

#endif /* SH5_EVENTS_EVLOG_INT_H */

/*
 * writer.h - the node-step file writer.
 *
 * One writer per node-step file.  Samples are appended to per-series
 * memory buffers (cheap, no I/O, safe from several threads); a flush
 * (called periodically by the owner's thread) creates datasets as needed,
 * appends the buffered records, and flushes the file.  Between flushes the
 * library does not touch the file, so a process killed at any moment other
 * than during a flush leaves a consistent file holding every sample up to
 * the last flush (see doc/format.md, "Durability").
 *
 * HDF5 file locking is turned off (readers may open the file while the
 * step runs; locks break on NFS/Lustre).
 *
 * Thread safety: sh5_writer_append() and sh5_writer_add_*() may be called
 * from any thread at any time; flush and close from one thread at a time.
 */
#ifndef SH5_WRITER_H
#define SH5_WRITER_H

#include <stdint.h>
#include <sys/types.h>

#include <hdf5.h>

#include "common/error.h"
#include "profile/series.h"

struct sh5_writer;

struct sh5_writer_opts {
	int compression;     /* deflate level 0-9 (0: no deflate) */
	int shuffle;         /* byte shuffle before deflate */
	size_t max_pending;  /* records buffered per series before drops */
	size_t chunk_rows;   /* records per chunk; 0: sh5_writer_chunk_rows()
			      * of each series' sampling rate */
	int defer_file;      /* 1: sh5_writer_create() keeps a duplicate of
			      * fd and creates the HDF5 file only at the
			      * first call that writes to it (an attribute,
			      * sh5_writer_flush/call/close); series and
			      * samples are taken before that as always.
			      * 0 (default): created at once */
	int recompress;      /* 0 (default): with shuffle and deflate, every
			      * chunk coded incrementally (src/profile/
			      * zinc.h; fixed-Huffman run-length deflate, a
			      * flush costs its own records); 1: the
			      * previous method, the partial last chunk
			      * recompressed whole at every flush, complete
			      * chunks deflated at the configured level */
};

/* Defaults: deflate 4, shuffle on, 1 Mi records pending per series,
 * chunks sized by the sampling rate. */
void sh5_writer_opts_init(struct sh5_writer_opts *o);

/*
 * Create the node-step file.  When fd >= 0 the file is the one already
 * open on fd (created safely by sh5_layout_open_node_file()); path is then
 * only used in messages.  The writer does not take fd: the caller closes
 * it after this returns (with opts->defer_file the writer keeps a
 * duplicate of fd until the file is created; errors of the creation are
 * then those of the call that writes first).  node is the node group
 * name.  Returns NULL with errp set on failure.
 */
struct sh5_writer *sh5_writer_create(const char *path, int fd,
				     const char *node,
				     const struct sh5_writer_opts *opts,
				     struct sh5_error *errp);

/* Attributes of the node group (written at once).  0 or -1. */
int sh5_writer_attr_str(struct sh5_writer *w, const char *name,
			const char *value, struct sh5_error *errp);
int sh5_writer_attr_int(struct sh5_writer *w, const char *name, int value,
			struct sh5_error *errp);
int sh5_writer_attr_u32(struct sh5_writer *w, const char *name,
			uint32_t value, struct sh5_error *errp);
int sh5_writer_attr_i64(struct sh5_writer *w, const char *name,
			int64_t value, struct sh5_error *errp);
int sh5_writer_attr_f64(struct sh5_writer *w, const char *name,
			double value, struct sh5_error *errp);

/*
 * Register a series under group parent of the node group (NULL: the node
 * group itself).  The writer takes ownership of s (also on failure).
 * sample_hz is the expected sampling rate (chunk sizing; <= 0: 1 Hz).
 * Returns the series id (>= 0) or -1 (EEXIST: name already registered).
 */
int sh5_writer_add_series(struct sh5_writer *w, const char *parent,
			  struct sh5_series *s, double sample_hz,
			  struct sh5_error *errp);

/* The series of an id, or NULL. */
const struct sh5_series *sh5_writer_series(struct sh5_writer *w, int id);

/*
 * Append one record (sh5_record_slots(s) slots, see series.h) to series
 * id.  Copies; no I/O.  Returns 0, or -1 with errno EINVAL (unknown id),
 * ESHUTDOWN (writer closed) or ENOBUFS (pending limit hit: the record was
 * dropped and counted).
 */
int sh5_writer_append(struct sh5_writer *w, int id,
		      const union sh5_value *slots);

/* A clock-offset measurement (see ntp.h): stored in /<node>/ClockOffsets. */
struct sh5_clock_sample {
	int64_t local_ns;  /* local CLOCK_REALTIME at the measurement */
	int64_t offset_ns; /* reference minus local */
	int64_t rtt_ns;    /* round trip of the kept exchange */
	uint32_t stratum;
	uint32_t phase;    /* 0 step start, 1 periodic, 2 step end */
};
int sh5_writer_add_clock(struct sh5_writer *w,
			 const struct sh5_clock_sample *c);

/*
 * Write what is buffered and flush the file.  Returns 0, or -1 with errp
 * set; after an error the writer refuses further flushes (the file keeps
 * what the last good flush wrote).
 */
int sh5_writer_flush(struct sh5_writer *w, struct sh5_error *errp);

/*
 * Run fn(node, arg, errp) on the node group under the writer's rules:
 * with the lock of every HDF5 call of the file held, so no flush or
 * attribute write runs meanwhile.  For code that writes objects of its
 * own under the node group (the Events of evstore.h); call it from the
 * thread that flushes.  fn must close what it opens, leave the file
 * consistent also when it fails, and not call the writer.  Returns fn's
 * result (fn's failure does not fail the writer), or -1 with errp set
 * and errno ESHUTDOWN (closed) or EIO (an earlier write failed) without
 * calling fn.
 */
int sh5_writer_call(struct sh5_writer *w,
		    int (*fn)(hid_t node, void *arg, struct sh5_error *errp),
		    void *arg, struct sh5_error *errp);

/* Counters. */
struct sh5_writer_stats {
	uint64_t written;  /* records written to the file */
	uint64_t dropped;  /* records dropped (pending limit, closed) */
	uint64_t flushes;
};
void sh5_writer_stats(struct sh5_writer *w, struct sh5_writer_stats *st);

/*
 * Final flush and close; frees w (NULL-safe).  Returns the flush result.
 * Appends racing with close are refused with ESHUTDOWN.
 */
int sh5_writer_close(struct sh5_writer *w, struct sh5_error *errp);

/*
 * Chunk length (records) for a series sampled at hz (<= 0: 1 Hz): ten
 * minutes of samples, at least 512 and at most 4096 (see writer.c).
 */
size_t sh5_writer_chunk_rows(double hz);

#endif /* SH5_WRITER_H */

/*
 * stream.h - live streaming of profile samples over HTTP (libcurl).
 *
 * Made for use inside slurmstepd: sh5_stream_push() only copies a sample
 * into a bounded, preallocated queue (no network or disk I/O, no
 * allocation after a series' first sample); a sender thread owned by the
 * stream formats batches and POSTs them with libcurl (one reused handle,
 * connect and total timeouts).  Nothing here logs, exits or raises
 * signals; the sender thread blocks all signals.
 *
 * Failure behaviour.  When a POST fails (refused, timeout, HTTP 5xx, or
 * a 4xx other than 400/413/422) the batch is kept: written to the spool
 * directory when one is configured, else held in memory, and retried
 * with capped exponential backoff (0.5 s doubling to 30 s).  While
 * anything of this stream is spooled, new batches go to the spool too, so
 * data is delivered in order per series.  HTTP 400, 413 and 422 mean the
 * server will never take that batch (unparsable, too large): it is
 * dropped and counted as rejected, not retried.  When the queue is full
 * the oldest sample is dropped and counted (this only happens when the
 * sender cannot keep up or cannot spool).  The spool is bounded: writing
 * beyond spool_max_bytes deletes the oldest spool files first, counted.
 *
 * The spool directory is shared by every stream of a node (all steps).
 * Each file holds one ready-to-POST body; its name orders it by creation
 * time.  Files of streams that no longer exist (their owner lock is free)
 * are adopted by a later stream with the same directory and format, and
 * delivered before that stream's own data.
 *
 * A spool operation that fails (slurmstepd switches the effective uid of
 * every thread to the job user for moments; the directory may vanish or
 * not be creatable yet) never loses nor duplicates a batch: a batch is
 * either in the spool or held in memory (at most two, within the memory
 * bound) and the operation is tried again 200 ms later; a directory that
 * is missing is created again, with a new owner lock.  A spool file that
 * was delivered but could not be removed yet is remembered and never sent
 * again by this stream (only a later stream could deliver it a second
 * time, if this one ended before removing it).  Spool operations are done
 * with the sender thread's filesystem uid set back to the real uid
 * (setfsuid acts on one thread), so a root process that switched its
 * effective uid keeps its spool.  At close, what is left is spooled with
 * retries until shortly before the deadline; what could not be is counted
 * as unsent.
 *
 * Credentials (pass, token, userinfo or u=/p= in the URL) never appear
 * in error texts, spool files or statistics.
 *
 * Memory bound: queue_max * SH5_STREAM_SLOT_BYTES for the queue plus three
 * request bodies: two batches of at most batch_max lines and a spool file
 * being delivered (see sh5_stream_memory_bound()).
 */
#ifndef SH5_STREAM_H
#define SH5_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Most fields one sample may carry, and longest series/field name. */
#define SH5_STREAM_MAX_FIELDS 32
#define SH5_STREAM_MAX_NAME 64
/* Most distinct (series, field list) shapes one stream accepts. */
#define SH5_STREAM_MAX_SERIES 64

enum sh5_stream_format {
	SH5_STREAM_INFLUX1 = 1, /* InfluxDB 1.x /write, line protocol */
	SH5_STREAM_INFLUX2,	/* InfluxDB 2.x /api/v2/write, line protocol */
	SH5_STREAM_JSON,	/* counter-statistics packets, application/json */
};

/*
 * "influx1", "influx2" or "json" (case-insensitive) to the enum.
 * Returns the format, or -1 with errno EINVAL for anything else.
 */
int sh5_stream_format_from_string(const char *s);
/* The option word of a format ("influx1"...), "unknown" when invalid. */
const char *sh5_stream_format_name(int format);

enum sh5_stream_type {
	SH5_STREAM_U64 = 1, /* value.u */
	SH5_STREAM_DOUBLE,  /* value.d */
};

union sh5_stream_value {
	uint64_t u;
	double d;
};

/*
 * Configuration.  Fill it with sh5_stream_conf_init() and set what you
 * need; zero numbers mean "the default".  sh5_stream_create() copies all
 * strings, so the caller keeps ownership of them.
 */
struct sh5_stream_conf {
	const char *url;	 /* full write endpoint (required), e.g.
				    http://h:8086/write?db=slurm; for influx
				    formats precision=ns is appended unless
				    present (another precision: EINVAL) */
	int format;		 /* enum sh5_stream_format (required) */
	const char *user;	 /* HTTP basic auth user (NULL: none) */
	const char *pass;	 /* HTTP basic auth password */
	const char *token;	 /* "Authorization: Token <token>" (influx)
				    or "Bearer <token>" (json) */
	long timeout_ms;	 /* total time of one POST [5000] */
	long connect_timeout_ms; /* connect (and resolve) time [2000] */
	const char *spool_dir;	 /* NULL or "": no spool (memory only) */
	uint64_t spool_max_bytes; /* bound of the whole spool dir [64 MiB] */
	size_t queue_max;	 /* samples in the queue [4096] */
	size_t batch_max;	 /* samples per POST [500] */
	long flush_interval_ms;	 /* send at least this often [10000] */
	const char *ca_file;	 /* CA bundle for https (NULL: system) */
	int insecure_tls;	 /* nonzero: do not verify the TLS peer
				    (default 0: verify) */
};

/* Tags added to every sample (copied; NULL or "" leaves a tag out; at
 * most SH5_STREAM_MAX_NAME bytes, no control characters). */
struct sh5_stream_tags {
	const char *job;
	const char *step;
	const char *node;
};

/* Counters of a stream's life (samples unless said otherwise). */
struct sh5_stream_stats {
	uint64_t pushed;	/* accepted by sh5_stream_push() */
	uint64_t sent;		/* of this stream, delivered (2xx)
				   straight from memory */
	uint64_t recovered;	/* delivered from spool files (this stream's
				   or earlier streams') */
	uint64_t spooled;	/* of this stream, written to the spool
				   (each sample once: pushed = sent +
				   spooled + dropped_queue + unsent +
				   rejected from memory; over all streams
				   of a spool dir, spooled = recovered +
				   dropped_spool + rejected from spool +
				   what is left in it) */
	uint64_t dropped_queue; /* oldest dropped because the queue was full */
	uint64_t dropped_spool; /* deleted to keep the spool under its bound
				   (any stream's) */
	uint64_t rejected;	/* in batches refused with 400/413/422, or
				   with no finite value to send */
	uint64_t unsent;	/* left in memory at close with no spool */
	uint64_t posts;		/* successful POSTs */
	uint64_t failed_posts;	/* POSTs that failed (batch kept) */
	int closed_in_time;	/* 1 when close() stopped the sender before
				   its deadline, 0 when it had to abandon it */
	char last_error[256];	/* the latest error text not yet returned by
				   sh5_stream_last_error(), "" if none (close()
				   counts as returning it) */
};

struct sh5_stream;

/* Initialise conf with the defaults above (format, url NULL). */
void sh5_stream_conf_init(struct sh5_stream_conf *conf);

/*
 * Bytes the stream may hold in memory at most with this configuration
 * (queue + two batch bodies + per-series tables), defaults applied.
 */
size_t sh5_stream_memory_bound(const struct sh5_stream_conf *conf);

/*
 * Create a stream and start its sender thread.  The spool directory is
 * created (mode 0700, last component only) when missing, by the calling
 * thread; when that fails the stream works without it for the moment
 * (the sender tries again every 200 ms, batches are held in memory
 * meanwhile) and the error is reported by sh5_stream_last_error().
 * Returns the stream, or NULL with errno set (EINVAL bad configuration,
 * ENOMEM, or the error of creating the thread) and a reason in errp.
 * The stream owns its thread; end it with sh5_stream_close().
 */
struct sh5_stream *sh5_stream_create(const struct sh5_stream_conf *conf,
				     const struct sh5_stream_tags *tags,
				     struct sh5_error *errp);

/*
 * Queue one sample: series name (measurement), task id (-1 for node-level
 * series: no task tag), nfields field names, types and values, and the
 * sample time in ns since the epoch.  The arrays are copied; the first
 * push of a new (series, names, types) shape copies its names once.
 * Never blocks on I/O; safe to call from several threads.
 * Returns 0, or -1 with errno EINVAL (NULL arguments, nfields 0 or above
 * SH5_STREAM_MAX_FIELDS, an empty name, one longer than
 * SH5_STREAM_MAX_NAME or with control characters),
 * ENOSPC (more than SH5_STREAM_MAX_SERIES shapes), ENOMEM (first push of
 * a shape), EPIPE (stream is closing).  A full queue is not an error:
 * the oldest sample is dropped and counted.
 */
int sh5_stream_push(struct sh5_stream *s, const char *series, int task,
		    const char *const *names,
		    const enum sh5_stream_type *types,
		    const union sh5_stream_value *values, size_t nfields,
		    int64_t time_ns);

/* Ask the sender to send what is queued now (no waiting).  NULL-safe. */
void sh5_stream_flush(struct sh5_stream *s);

/* Copy the current counters into st.  NULL-safe (zeros). */
void sh5_stream_stats(struct sh5_stream *s, struct sh5_stream_stats *st);

/*
 * Copy the text of the latest error into buf (NUL-terminated) once: a
 * repeated error (same text, no success in between) is reported only
 * once.  Returns 1 when a new error was copied, 0 when there is none.
 * The text names the endpoint without credentials or query secrets.
 */
int sh5_stream_last_error(struct sh5_stream *s, char *buf, size_t size);

/*
 * Drain and stop: keep sending for at most deadline_ms (<= 0: 2000) in
 * total, then spool what is left, stop the thread and free the stream.
 * Returns within the deadline even if the sender is stuck in a system
 * call (the thread is then detached and frees the stream itself;
 * st->closed_in_time is 0 and the counters are those of that moment).
 * st (may be NULL) receives the final counters.  Returns 0, or -1 when
 * samples were lost in this stream's life (dropped or rejected or
 * unsent: see st).  NULL-safe (returns 0).
 */
int sh5_stream_close(struct sh5_stream *s, long deadline_ms,
		     struct sh5_stream_stats *st);

/*
 * Format one sample as an InfluxDB line (with the newline) into buf.
 * Used by the stream; exposed for tests.  Tag values are escaped,
 * uint64 values above INT64_MAX and non-finite doubles are left out
 * (InfluxDB 1.x has no unsigned integers; Slurm uses such values for
 * "no value").  Returns the length written (excluding the NUL), 0 when
 * no field is left to write, or -1 (errno ENOBUFS) when buf is too small.
 */
long sh5_stream_format_line(char *buf, size_t size, const char *series,
			    const struct sh5_stream_tags *tags, int task,
			    const char *const *names,
			    const enum sh5_stream_type *types,
			    const union sh5_stream_value *values,
			    size_t nfields, int64_t time_ns);

/*
 * For tests: hook(op, path) is called before every spool operation of
 * every stream ("open", "rename", "unlink", "mkdir", "opendir", "stat");
 * a nonzero return fails the operation with that errno (it may also
 * sleep, as a hanging filesystem would).  NULL removes the hook.
 */
void sh5_stream_test_fault(int (*hook)(const char *op, const char *path));

/* Bytes of one queue slot (the unit of the memory bound). */
extern const size_t SH5_STREAM_SLOT_BYTES;

#endif /* SH5_STREAM_H */

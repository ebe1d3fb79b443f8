/*
 * stream_int.h - what the files of the stream module share: limits, the
 * state of a stream, and the functions one file calls in another.
 * Internal to libsh5stream; the API is stream.h.
 *
 * Files: stream.c (clocks, buffers, error text, configuration defaults),
 * format.c (line protocol, JSON), queue.c (push, series shapes, batches),
 * spool.c (the on-disk spool), http.c (curl handle and URL), sender.c
 * (the sender thread, create and close).
 *
 * Internals.  One mutex protects the queue (a ring of fixed-size slots),
 * the series shapes, the counters and the error text.  push() holds it
 * for a copy of at most SH5_STREAM_MAX_FIELDS values.  The sender thread
 * takes samples out in chunks (dropping the lock between chunks), formats
 * a body outside the lock and POSTs it through a curl multi handle, so
 * that while a POST is in flight it can still notice the close deadline
 * and spill a filling queue to the spool.
 *
 * Spool files: "<ts>-<owner>-<tag>-<n>.<ext>" where ts is the batch's
 * formation time (20 digits, ns), owner the stream's id, tag a sequence
 * number ("<origowner>_<tag>" once adopted), n the number of samples and
 * ext "lp" or "json".  "<owner>.lock" is held (flock) while the owner
 * lives; it is created under a temporary name and renamed into place
 * after locking, so a scanner never mistakes a starting owner for a dead
 * one.  Temporary files start with '.'.
 *
 * Batches: "cur" (formed from the queue) and "spill" (formed while a POST
 * hangs) are each either empty, in flight, or held (not delivered, not
 * spooled: the spool refused them); held ones are spooled or delivered
 * later, the oldest first among them and the own spool files, by
 * formation time.  New batches are formed only when none is held.
 * Delivered spool files that could not be removed are listed in undel[]
 * (skipped by scans, removed later).
 *
 * The code uses short names (set_error(), spool_write() ...); the
 * symbols behind them are prefixed with sh5_st_ and hidden, so that they
 * clash with nothing else in libsh5 or the plugin.
 */
#ifndef SH5_STREAM_STREAM_INT_H
#define SH5_STREAM_STREAM_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <curl/curl.h>

#include "common/runstats.h"
#include "stream/stream.h"

#define DEF_TIMEOUT_MS 5000
#define DEF_CONNECT_MS 2000
#define DEF_SPOOL_MAX (64ULL << 20)
#define DEF_QUEUE 4096
#define DEF_BATCH 500
/* every 10 s: a POST costs libcurl ~90 k instructions, 17 times what the
 * node-step writer spends on a sample (doc/performance.md, streaming) */
#define DEF_FLUSH_MS 10000
#define DEF_DEADLINE_MS 2000
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000
#define SCAN_PERIOD_NS (10LL * 1000000000LL)
/* slurmstepd switches the effective uid of every thread to the job user
 * for moments (task launch): a spool operation refused or failing then is
 * tried again this much later, the batch being kept in memory meanwhile. */
#define SPOOL_RETRY_NS (200LL * 1000000LL)
/* at close, spooling what is left is retried this often until the hard
 * deadline */
#define FINAL_RETRY_NS (20LL * 1000000LL)
/* delivered spool files whose removal failed (removed later) */
#define UNDEL_MAX 16
#define POLL_MS 100
#define CHUNK 64
#define MAX_SPOOL_FILE (64 << 20)
/* Worst-case bytes of one formatted sample: names and tags have no
 * control characters (push and create refuse them), so escaping at most
 * doubles them; a number takes at most 26 bytes. */
#define LINE_MAX_BYTES                                                      \
	(2 * 2 * SH5_STREAM_MAX_NAME + 5 * (16 + 2 * SH5_STREAM_MAX_NAME) + \
	 SH5_STREAM_MAX_FIELDS * (2 * SH5_STREAM_MAX_NAME + 40) + 64)
/* Worst-case bytes of the two formatted shapes of a series (format.c:
 * the line protocol's and JSON's, each a struct of offsets and the
 * series, tags and names escaped at most twice over). */
#define SHAPES_MAX_BYTES                                                 \
	(2 * (1024 + 9 * SH5_STREAM_MAX_NAME + 64 +                      \
	      SH5_STREAM_MAX_FIELDS * (2 * SH5_STREAM_MAX_NAME + 3)))
/* Worst-case bytes of one counter_stats entry. */
#define STATS_MAX_BYTES (8 * SH5_STREAM_MAX_NAME + 8 * 40 + 160)

struct lp_shape;
struct js_shape;

struct schema {
	char *series;
	size_t nf;
	char *names[SH5_STREAM_MAX_FIELDS];
	enum sh5_stream_type types[SH5_STREAM_MAX_FIELDS];
	struct sh5_runstats rs[SH5_STREAM_MAX_FIELDS]; /* json, sender only */
	uint64_t nsamples;			       /* json, sender only */
	struct lp_shape *lp; /* line protocol: formatted names (format.c),
				sender only */
	struct js_shape *js; /* json: the same */
};

struct slot {
	int64_t time_ns;
	int32_t task;
	uint16_t schema;
	uint16_t nf;
	union sh5_stream_value v[SH5_STREAM_MAX_FIELDS];
};


struct buf {
	char *p;
	size_t len, cap;
};

/* A formed batch (request body) of the sender. */
struct batch {
	struct buf b;
	uint64_t n; /* samples in it */
	int64_t ts; /* formation time: orders it among spool files */
	int held;   /* undelivered and not in the spool: kept in memory */
};

enum post_result { POST_OK, POST_RETRY, POST_REJECT, POST_ABORT };

struct sh5_stream {
	/* immutable after create */
	int format;
	char *url, *safe_url, *user, *pass, *token, *enc_pass, *spool_dir,
		*ca_file;
	char *job, *step, *node;
	struct sh5_stream_tags tags;
	const char *ext;
	long timeout_ms, connect_ms, flush_ms;
	uint64_t spool_max;
	size_t qcap, batch_max;
	int insecure;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_cond_t done_cond;
	pthread_t thread;
	CURLM *multi;

	/* under lock */
	struct slot *ring;
	size_t head, count;
	struct schema *schemas[SH5_STREAM_MAX_SERIES];
	size_t nschemas;
	int closing, flush_req, done, abandoned, in_post;
	int64_t abort_at;
	struct sh5_stream_stats st;
	char err[256];
	int err_new, err_since_ok, err_kind;

	/* sender thread only */
	CURL *easy;
	struct curl_slist *hdrs;
	struct slot *batch;
	struct batch cur, spill; /* new batches; spilled while posting */
	struct buf rd;		 /* a spool file being delivered */
	const struct buf *posting; /* body of the POST in flight */
	char resp[256];
	size_t resp_len;
	char curl_err[CURL_ERROR_SIZE];
	char owner[48];
	int lock_fd;
	uint64_t seq;
	int64_t last_ts;
	size_t own_files;
	char oldest[256];
	uint64_t spool_bytes;
	int64_t spool_retry_at; /* spool refused: not before this */
	char undel[UNDEL_MAX][256];
	size_t nundel;
	int64_t backoff_until;
	long backoff_ms;
	int final_scan;
	int64_t last_form, next_scan;
	int64_t hard_end; /* close(): all work ends by then (under lock) */
};

struct spool_name {
	int64_t ts;
	char owner[48];
	char tag[160];
	uint64_t n;
	char ext[8];
};

/* Error kinds: an error is reported again only when its kind changes
 * or after a success (texts of one kind vary, e.g. curl's timings). */
enum {
	EK_FORMAT = 1,
	EK_ABORT,
	EK_MULTI,
	EK_SPOOL = 100,	 /* + errno */
	EK_CURL = 1000,	 /* + CURLcode */
	EK_HTTP = 2000,	 /* + status */
};

#define mono_ns sh5_st_mono_ns
#define real_ns sh5_st_real_ns
#define dup_or_null sh5_st_dup_or_null
#define buf_grow sh5_st_buf_grow
#define buf_append sh5_st_buf_append
#define buf_free sh5_st_buf_free
#define set_error sh5_st_set_error
#define format_lines sh5_st_format_lines
#define format_json sh5_st_format_json
#define lp_shape_free sh5_st_lp_shape_free
#define js_shape_free sh5_st_js_shape_free
#define schema_free sh5_st_schema_free
#define name_ok sh5_st_name_ok
#define form_batch sh5_st_form_batch
#define sp_unlink sh5_st_sp_unlink
#define spool_name_parse sh5_st_spool_name_parse
#define path_in sh5_st_path_in
#define spool_failed sh5_st_spool_failed
#define lock_create sh5_st_lock_create
#define undeleted sh5_st_undeleted
#define undel_retry sh5_st_undel_retry
#define spool_scan sh5_st_spool_scan
#define spool_write sh5_st_spool_write
#define spool_write_final sh5_st_spool_write_final
#define spool_close sh5_st_spool_close
#define spool_read sh5_st_spool_read
#define http_setup sh5_st_http_setup
#define make_urls sh5_st_make_urls

#pragma GCC visibility push(hidden)

/* stream.c */
int64_t mono_ns(void);
int64_t real_ns(void);
char *dup_or_null(const char *s);
int buf_grow(struct buf *b, size_t more);
int buf_append(struct buf *b, const void *data, size_t len);
void buf_free(struct buf *b);
void set_error(struct sh5_stream *s, int kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Room for more bytes (and a NUL) in b: 0, or -1 out of memory.  Inline,
 * as format_lines() asks once per sample. */
static inline int buf_reserve(struct buf *b, size_t more)
{
	if (b->len + more + 1 <= b->cap)
		return 0;
	return buf_grow(b, more);
}

/* format.c */
int format_lines(struct sh5_stream *s, const struct slot *batch,
		 size_t n, struct buf *b, uint64_t *nlines);
int format_json(struct sh5_stream *s, const struct slot *batch,
		size_t n, struct buf *b, uint64_t *nsamples);
void lp_shape_free(struct lp_shape *sh);
void js_shape_free(struct js_shape *sh);

/* queue.c */
void schema_free(struct schema *sc);
int name_ok(const char *s);
size_t form_batch(struct sh5_stream *s, struct buf *b, uint64_t *nsent,
		  int64_t *ts);

/* spool.c */
int sp_unlink(const char *path);
int spool_name_parse(const char *name, struct spool_name *sn);
int path_in(const struct sh5_stream *s, char *out, size_t size,
	    const char *name);
void spool_failed(struct sh5_stream *s, int e);
int lock_create(struct sh5_stream *s);
int undeleted(const struct sh5_stream *s, const char *name);
void undel_retry(struct sh5_stream *s);
void spool_scan(struct sh5_stream *s, uint64_t evict);
int spool_write(struct sh5_stream *s, struct batch *b);
int spool_write_final(struct sh5_stream *s, struct batch *b);
void spool_close(struct sh5_stream *s);
int spool_read(struct sh5_stream *s, const char *name);

/* http.c */
int http_setup(struct sh5_stream *s, struct sh5_error *errp);
int make_urls(struct sh5_stream *s, const char *url,
	      struct sh5_error *errp);

#pragma GCC visibility pop

#endif /* SH5_STREAM_STREAM_INT_H */

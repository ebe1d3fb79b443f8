/* stream.c - see stream.h
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
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/json.h"
#include "common/runstats.h"
#include "stream/stream.h"

#define DEF_TIMEOUT_MS 5000
#define DEF_CONNECT_MS 2000
#define DEF_SPOOL_MAX (64ULL << 20)
#define DEF_QUEUE 4096
#define DEF_BATCH 500
#define DEF_FLUSH_MS 1000
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
/* Worst-case bytes of one counter_stats entry. */
#define STATS_MAX_BYTES (8 * SH5_STREAM_MAX_NAME + 8 * 40 + 160)

struct schema {
	char *series;
	size_t nf;
	char *names[SH5_STREAM_MAX_FIELDS];
	enum sh5_stream_type types[SH5_STREAM_MAX_FIELDS];
	struct sh5_runstats rs[SH5_STREAM_MAX_FIELDS]; /* json, sender only */
	uint64_t nsamples;			       /* json, sender only */
};

struct slot {
	int64_t time_ns;
	int32_t task;
	uint16_t schema;
	uint16_t nf;
	union sh5_stream_value v[SH5_STREAM_MAX_FIELDS];
};

const size_t SH5_STREAM_SLOT_BYTES = sizeof(struct slot);

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

static void stream_free(struct sh5_stream *s);

/* ------------------------------------------------------------ helpers */

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static char *dup_or_null(const char *s)
{
	return (s && s[0]) ? strdup(s) : NULL;
}

static int buf_reserve(struct buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->len + more + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

static int buf_append(struct buf *b, const void *data, size_t len)
{
	if (buf_reserve(b, len) < 0)
		return -1;
	memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
	return 0;
}

static void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* Replace every occurrence of secret in text (in place) with "***". */
static void scrub(char *text, size_t size, const char *secret)
{
	size_t sl, tl;
	char *p;

	if (!secret || !secret[0])
		return;
	sl = strlen(secret);
	while ((p = strstr(text, secret))) {
		tl = strlen(p + sl);
		if (sl >= 3) {
			memcpy(p, "***", 3);
			memmove(p + 3, p + sl, tl + 1);
		} else {
			memset(p, '*', sl);
		}
	}
	(void)size;
}

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

/* Record an error text (credentials scrubbed) for last_error(). */
static void set_error(struct sh5_stream *s, int kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_error(struct sh5_stream *s, int kind, const char *fmt, ...)
{
	char text[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	scrub(text, sizeof(text), s->pass);
	scrub(text, sizeof(text), s->enc_pass);
	scrub(text, sizeof(text), s->token);
	pthread_mutex_lock(&s->lock);
	if (s->err_since_ok || kind != s->err_kind) {
		s->err_new = 1;
		s->err_since_ok = 0;
		s->err_kind = kind;
	}
	/* keep the newest text of the kind (as fresh as possible) */
	memcpy(s->err, text, sizeof(text));
	pthread_mutex_unlock(&s->lock);
}

/* ---------------------------------------------------- line protocol */

/* Append s escaping the characters in special with a backslash and
 * turning control characters into '_'.  Returns new length or -1. */
static long put_escaped(char *buf, size_t size, size_t len, const char *s,
			const char *special)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (strchr(special, c)) {
			if (len + 2 >= size)
				return -1;
			buf[len++] = '\\';
			buf[len++] = (char)c;
		} else {
			if (len + 1 >= size)
				return -1;
			buf[len++] = (c < 0x20 || c == 0x7f) ? '_' : (char)c;
		}
	}
	buf[len] = '\0';
	return (long)len;
}

static long put_str(char *buf, size_t size, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (len + n + 1 > size)
		return -1;
	memcpy(buf + len, s, n + 1);
	return (long)(len + n);
}

/* Shortest of %.15g / %.17g that reads back to the same double. */
static int fmt_double(char *out, size_t size, double v)
{
	int n = snprintf(out, size, "%.15g", v);

	if (strtod(out, NULL) != v)
		n = snprintf(out, size, "%.17g", v);
	return n;
}

static long put_tag(char *buf, size_t size, long len, const char *key,
		    const char *val)
{
	if (len < 0 || !val || !val[0])
		return len;
	len = put_str(buf, size, (size_t)len, ",");
	if (len >= 0)
		len = put_escaped(buf, size, (size_t)len, key, ",= ");
	if (len >= 0)
		len = put_str(buf, size, (size_t)len, "=");
	if (len >= 0)
		len = put_escaped(buf, size, (size_t)len, val, ",= ");
	return len;
}

long sh5_stream_format_line(char *buf, size_t size, const char *series,
			    const struct sh5_stream_tags *tags, int task,
			    const char *const *names,
			    const enum sh5_stream_type *types,
			    const union sh5_stream_value *values,
			    size_t nfields, int64_t time_ns)
{
	char num[40], taskbuf[16];
	size_t i, nput = 0;
	long len;

	if (!buf || size == 0) {
		errno = ENOBUFS;
		return -1;
	}
	len = put_escaped(buf, size, 0, series, ", ");
	/* tags in key order, as InfluxDB prefers */
	len = put_tag(buf, size, len, "job", tags ? tags->job : NULL);
	len = put_tag(buf, size, len, "node", tags ? tags->node : NULL);
	len = put_tag(buf, size, len, "series", series);
	len = put_tag(buf, size, len, "step", tags ? tags->step : NULL);
	if (task >= 0) {
		snprintf(taskbuf, sizeof(taskbuf), "%d", task);
		len = put_tag(buf, size, len, "task", taskbuf);
	}
	for (i = 0; i < nfields && len >= 0; i++) {
		if (types[i] == SH5_STREAM_U64) {
			if (values[i].u > (uint64_t)INT64_MAX)
				continue;
			snprintf(num, sizeof(num), "%" PRIu64 "i",
				 values[i].u);
		} else {
			if (!isfinite(values[i].d))
				continue;
			fmt_double(num, sizeof(num), values[i].d);
		}
		len = put_str(buf, size, (size_t)len, nput ? "," : " ");
		if (len >= 0)
			len = put_escaped(buf, size, (size_t)len, names[i],
					  ",= ");
		if (len >= 0)
			len = put_str(buf, size, (size_t)len, "=");
		if (len >= 0)
			len = put_str(buf, size, (size_t)len, num);
		nput++;
	}
	if (len >= 0 && nput == 0) {
		buf[0] = '\0';
		return 0;
	}
	if (len >= 0) {
		snprintf(num, sizeof(num), " %" PRId64 "\n", time_ns);
		len = put_str(buf, size, (size_t)len, num);
	}
	if (len < 0) {
		buf[0] = '\0';
		errno = ENOBUFS;
		return -1;
	}
	return len;
}

/* ----------------------------------------------------------- formats */

int sh5_stream_format_from_string(const char *s)
{
	if (s && !strcasecmp(s, "influx1"))
		return SH5_STREAM_INFLUX1;
	if (s && !strcasecmp(s, "influx2"))
		return SH5_STREAM_INFLUX2;
	if (s && !strcasecmp(s, "json"))
		return SH5_STREAM_JSON;
	errno = EINVAL;
	return -1;
}

const char *sh5_stream_format_name(int format)
{
	switch (format) {
	case SH5_STREAM_INFLUX1:
		return "influx1";
	case SH5_STREAM_INFLUX2:
		return "influx2";
	case SH5_STREAM_JSON:
		return "json";
	}
	return "unknown";
}

void sh5_stream_conf_init(struct sh5_stream_conf *conf)
{
	memset(conf, 0, sizeof(*conf));
	conf->timeout_ms = DEF_TIMEOUT_MS;
	conf->connect_timeout_ms = DEF_CONNECT_MS;
	conf->spool_max_bytes = DEF_SPOOL_MAX;
	conf->queue_max = DEF_QUEUE;
	conf->batch_max = DEF_BATCH;
	conf->flush_interval_ms = DEF_FLUSH_MS;
}

size_t sh5_stream_memory_bound(const struct sh5_stream_conf *conf)
{
	size_t q = conf && conf->queue_max ? conf->queue_max : DEF_QUEUE;
	size_t b = conf && conf->batch_max ? conf->batch_max : DEF_BATCH;
	size_t body;

	if (b > q)
		b = q;
	body = b * LINE_MAX_BYTES + 256 +
	       (size_t)SH5_STREAM_MAX_SERIES * SH5_STREAM_MAX_FIELDS *
		       STATS_MAX_BYTES;
	return sizeof(struct sh5_stream) + q * sizeof(struct slot) +
	       b * sizeof(struct slot) + 3 * body +
	       SH5_STREAM_MAX_SERIES *
		       (sizeof(struct schema) +
			(SH5_STREAM_MAX_FIELDS + 1) * (SH5_STREAM_MAX_NAME + 1));
}

/* Format samples batch[0..n) of the stream into b (appending). */
static int format_lines(struct sh5_stream *s, const struct slot *batch,
			size_t n, struct buf *b, uint64_t *nlines)
{
	size_t i;
	long len;

	for (i = 0; i < n; i++) {
		const struct slot *sl = &batch[i];
		const struct schema *sc = s->schemas[sl->schema];

		if (buf_reserve(b, LINE_MAX_BYTES) < 0)
			return -1;
		len = sh5_stream_format_line(
			b->p + b->len, b->cap - b->len, sc->series, &s->tags,
			sl->task, (const char *const *)sc->names, sc->types,
			sl->v, sl->nf, sl->time_ns);
		if (len < 0)
			return -1;
		if (len == 0) {
			pthread_mutex_lock(&s->lock);
			s->st.rejected++;
			pthread_mutex_unlock(&s->lock);
			continue;
		}
		b->len += (size_t)len;
		(*nlines)++;
	}
	return 0;
}

static int json_sink(void *arg, const void *data, size_t len)
{
	if (buf_append(arg, data, len) < 0) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

static void kv_tag(struct sh5_json *j, const char *key, const char *val)
{
	if (val)
		sh5_json_kv_string(j, key, val);
	else {
		sh5_json_key(j, key);
		sh5_json_null(j);
	}
}

/* One counter-statistics packet: running statistics of every counter so
 * far (updated with this batch) and the batch's raw samples. */
static int format_json(struct sh5_stream *s, const struct slot *batch,
		       size_t n, struct buf *b, uint64_t *nsamples)
{
	struct sh5_error err;
	struct sh5_json *j;
	char app[2 * SH5_STREAM_MAX_NAME + 2];
	char counter[2 * SH5_STREAM_MAX_NAME + 2];
	size_t i, k, nsch;
	int rc;

	pthread_mutex_lock(&s->lock);
	nsch = s->nschemas;
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < n; i++) {
		struct schema *sc = s->schemas[batch[i].schema];

		sc->nsamples++;
		for (k = 0; k < batch[i].nf; k++)
			sh5_runstats_push(&sc->rs[k],
					  sc->types[k] == SH5_STREAM_U64 ?
						  (double)batch[i].v[k].u :
						  batch[i].v[k].d);
	}
	snprintf(app, sizeof(app), "%s.%s", s->job ? s->job : "",
		 s->step ? s->step : "");
	j = sh5_json_create_cb(json_sink, b, 0, &err);
	if (!j)
		return -1;
	sh5_json_object_open(j);
	sh5_json_kv_int(j, "version", 2);
	sh5_json_kv_int(j, "created_at", real_ns() / 1000000);
	kv_tag(j, "job", s->job);
	kv_tag(j, "step", s->step);
	kv_tag(j, "node", s->node);
	sh5_json_key(j, "counter_stats");
	sh5_json_array_open(j);
	for (i = 0; i < nsch; i++) {
		struct schema *sc = s->schemas[i];

		if (!sc->nsamples)
			continue;
		for (k = 0; k < sc->nf; k++) {
			snprintf(counter, sizeof(counter), "%s.%s",
				 sc->series, sc->names[k]);
			sh5_json_object_open(j);
			sh5_json_kv_string(j, "app", app);
			sh5_json_kv_string(j, "counter", counter);
			sh5_json_key(j, "stats");
			sh5_json_runstats(j, &sc->rs[k]);
			sh5_json_object_close(j);
		}
	}
	sh5_json_array_close(j);
	sh5_json_key(j, "samples");
	sh5_json_array_open(j);
	for (i = 0; i < n; i++) {
		const struct slot *sl = &batch[i];
		const struct schema *sc = s->schemas[sl->schema];

		sh5_json_object_open(j);
		sh5_json_kv_string(j, "series", sc->series);
		if (sl->task >= 0)
			sh5_json_kv_int(j, "task", sl->task);
		sh5_json_kv_int(j, "time_ns", sl->time_ns);
		sh5_json_key(j, "fields");
		sh5_json_object_open(j);
		for (k = 0; k < sl->nf; k++) {
			sh5_json_key(j, sc->names[k]);
			if (sc->types[k] == SH5_STREAM_U64)
				sh5_json_uint(j, sl->v[k].u);
			else if (isfinite(sl->v[k].d))
				sh5_json_double(j, sl->v[k].d);
			else
				sh5_json_null(j);
		}
		sh5_json_object_close(j);
		sh5_json_object_close(j);
	}
	sh5_json_array_close(j);
	sh5_json_object_close(j);
	rc = sh5_json_finish(j, &err);
	sh5_json_destroy(j);
	if (rc < 0)
		return -1;
	*nsamples += n;
	return 0;
}

/* ------------------------------------------------------------- queue */

static struct schema *schema_new(const char *series, const char *const *names,
				 const enum sh5_stream_type *types, size_t nf)
{
	struct schema *sc = calloc(1, sizeof(*sc));
	size_t i;

	if (!sc)
		return NULL;
	sc->series = strdup(series);
	sc->nf = nf;
	for (i = 0; i < nf; i++) {
		sc->names[i] = strdup(names[i]);
		sc->types[i] = types[i];
		sh5_runstats_init(&sc->rs[i]);
	}
	for (i = 0; i < nf; i++)
		if (!sc->names[i])
			break;
	if (!sc->series || i < nf) {
		for (i = 0; i < nf; i++)
			free(sc->names[i]);
		free(sc->series);
		free(sc);
		return NULL;
	}
	return sc;
}

static void schema_free(struct schema *sc)
{
	size_t i;

	if (!sc)
		return;
	for (i = 0; i < sc->nf; i++)
		free(sc->names[i]);
	free(sc->series);
	free(sc);
}

/* Names are 1..SH5_STREAM_MAX_NAME bytes without control characters. */
static int name_ok(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if ((unsigned char)s[n] < 0x20 || s[n] == 0x7f ||
		    n >= SH5_STREAM_MAX_NAME)
			return 0;
	return n > 0;
}

/* Index of the shape, adding it when new (lock held).  -1 with errno. */
static int schema_find(struct sh5_stream *s, const char *series,
		       const char *const *names,
		       const enum sh5_stream_type *types, size_t nf)
{
	size_t i, k;

	for (i = 0; i < s->nschemas; i++) {
		const struct schema *sc = s->schemas[i];

		if (sc->nf != nf || strcmp(sc->series, series))
			continue;
		for (k = 0; k < nf; k++)
			if (sc->types[k] != types[k] ||
			    strcmp(sc->names[k], names[k]))
				break;
		if (k == nf)
			return (int)i;
	}
	if (s->nschemas >= SH5_STREAM_MAX_SERIES) {
		errno = ENOSPC;
		return -1;
	}
	if (!name_ok(series)) {
		errno = EINVAL;
		return -1;
	}
	for (k = 0; k < nf; k++)
		if (!names[k] || !name_ok(names[k]) ||
		    (types[k] != SH5_STREAM_U64 &&
		     types[k] != SH5_STREAM_DOUBLE)) {
			errno = EINVAL;
			return -1;
		}
	s->schemas[s->nschemas] = schema_new(series, names, types, nf);
	if (!s->schemas[s->nschemas]) {
		errno = ENOMEM;
		return -1;
	}
	return (int)s->nschemas++;
}

int sh5_stream_push(struct sh5_stream *s, const char *series, int task,
		    const char *const *names,
		    const enum sh5_stream_type *types,
		    const union sh5_stream_value *values, size_t nfields,
		    int64_t time_ns)
{
	struct slot *sl;
	int idx, wake = 0;

	if (!s || !series || !names || !types || !values || nfields == 0 ||
	    nfields > SH5_STREAM_MAX_FIELDS) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&s->lock);
	if (s->closing) {
		pthread_mutex_unlock(&s->lock);
		errno = EPIPE;
		return -1;
	}
	idx = schema_find(s, series, names, types, nfields);
	if (idx < 0) {
		int e = errno;

		pthread_mutex_unlock(&s->lock);
		errno = e;
		return -1;
	}
	if (s->count == s->qcap) {
		s->head = (s->head + 1) % s->qcap;
		s->count--;
		s->st.dropped_queue++;
	}
	sl = &s->ring[(s->head + s->count) % s->qcap];
	sl->time_ns = time_ns;
	sl->task = task < 0 ? -1 : task;
	sl->schema = (uint16_t)idx;
	sl->nf = (uint16_t)nfields;
	memcpy(sl->v, values, nfields * sizeof(*values));
	s->count++;
	s->st.pushed++;
	/* wake the sender when its timers must start or a batch is full */
	if (s->count == 1 || s->count == s->batch_max ||
	    s->count == s->qcap / 2)
		wake = 1;
	pthread_mutex_unlock(&s->lock);
	if (wake)
		pthread_cond_signal(&s->cond);
	return 0;
}

void sh5_stream_flush(struct sh5_stream *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->flush_req = 1;
	pthread_mutex_unlock(&s->lock);
	pthread_cond_signal(&s->cond);
}

void sh5_stream_stats(struct sh5_stream *s, struct sh5_stream_stats *st)
{
	if (!st)
		return;
	memset(st, 0, sizeof(*st));
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	if (s->err_new)
		memcpy(st->last_error, s->err, sizeof(st->last_error));
	pthread_mutex_unlock(&s->lock);
}

int sh5_stream_last_error(struct sh5_stream *s, char *buf, size_t size)
{
	int rc = 0;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	if (s->err_new) {
		if (buf && size) {
			strncpy(buf, s->err, size - 1);
			buf[size - 1] = '\0';
		}
		s->err_new = 0;
		rc = 1;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Take up to batch_max samples out of the queue into s->batch, dropping
 * the lock every CHUNK samples.  Returns the number taken. */
static size_t take_batch(struct sh5_stream *s)
{
	size_t n = 0, k, i;

	pthread_mutex_lock(&s->lock);
	while (n < s->batch_max && s->count > 0) {
		k = s->count < CHUNK ? s->count : CHUNK;
		if (k > s->batch_max - n)
			k = s->batch_max - n;
		for (i = 0; i < k; i++) {
			const struct slot *src = &s->ring[s->head];

			memcpy(&s->batch[n], src,
			       offsetof(struct slot, v) +
				       src->nf * sizeof(src->v[0]));
			n++;
			s->head = (s->head + 1) % s->qcap;
			s->count--;
		}
		pthread_mutex_unlock(&s->lock);
		pthread_mutex_lock(&s->lock);
	}
	s->flush_req = 0;
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* Take a batch and format it into b (emptied first).  Returns the number
 * of samples taken (0: queue empty), *nsent the number formatted. */
static size_t form_batch(struct sh5_stream *s, struct buf *b, uint64_t *nsent,
			 int64_t *ts)
{
	size_t n = take_batch(s);
	int rc;

	b->len = 0;
	*nsent = 0;
	if (n == 0)
		return 0;
	*ts = real_ns();
	if (*ts <= s->last_ts)
		*ts = s->last_ts + 1;
	s->last_ts = *ts;
	s->last_form = mono_ns();
	if (s->format == SH5_STREAM_JSON)
		rc = format_json(s, s->batch, n, b, nsent);
	else
		rc = format_lines(s, s->batch, n, b, nsent);
	if (rc < 0) {
		set_error(s, EK_FORMAT, "formatting %zu samples: out of memory",
			  n);
		pthread_mutex_lock(&s->lock);
		s->st.unsent += n - *nsent;
		pthread_mutex_unlock(&s->lock);
	}
	return n;
}

/* ------------------------------------------------------------- spool */

/*
 * Spool I/O and slurmstepd's privilege switches.  slurmstepd (real uid 0)
 * sets the effective uid of every thread to the job user for moments
 * (glibc broadcasts seteuid), and the kernel moves the filesystem uid
 * with it: a spool operation of the sender would then be refused
 * (EACCES) in the root-owned 0700 spool directory.  Before each spool
 * operation the sender sets its own filesystem ids back to the real ones
 * (setfsuid acts on the calling thread only); a switch that lands between
 * that and the operation still fails it, so every caller treats a failure
 * as transient: the batch stays in memory and the operation is tried
 * again SPOOL_RETRY_NS later.
 */

static int (*fault_hook)(const char *op, const char *path);

void sh5_stream_test_fault(int (*hook)(const char *op, const char *path))
{
	__atomic_store_n(&fault_hook, hook, __ATOMIC_SEQ_CST);
}

/* Prepare a spool operation; 1 (errno set) when a test fault refuses it. */
static int sp_enter(const char *op, const char *path)
{
	int (*hook)(const char *, const char *) =
		__atomic_load_n(&fault_hook, __ATOMIC_SEQ_CST);
	int e;

	if (getuid() == 0 && geteuid() != 0) {
		setfsgid(getgid());
		setfsuid(0);
	}
	if (hook && (e = hook(op, path)) != 0) {
		errno = e;
		return 1;
	}
	return 0;
}

static int sp_open(const char *path, int flags, mode_t mode)
{
	return sp_enter("open", path) ? -1 : open(path, flags, mode);
}

static int sp_rename(const char *from, const char *to)
{
	return sp_enter("rename", to) ? -1 : rename(from, to);
}

static int sp_unlink(const char *path)
{
	return sp_enter("unlink", path) ? -1 : unlink(path);
}

static int sp_mkdir(const char *path, mode_t mode)
{
	return sp_enter("mkdir", path) ? -1 : mkdir(path, mode);
}

static DIR *sp_opendir(const char *path)
{
	return sp_enter("opendir", path) ? NULL : opendir(path);
}

struct spool_name {
	int64_t ts;
	char owner[48];
	char tag[160];
	uint64_t n;
	char ext[8];
};

/* Parse "<ts>-<owner>-<tag>-<n>.<ext>".  0 ok, -1 not a spool file. */
static int parse_name(const char *name, struct spool_name *sn)
{
	const char *p = name, *q;
	char *end;
	size_t l;

	if (!isdigit((unsigned char)*p))
		return -1;
	errno = 0;
	sn->ts = strtoll(p, &end, 10);
	if (errno || *end != '-' || end - p != 20)
		return -1;
	p = end + 1;
	q = strchr(p, '-');
	if (!q || q == p || (size_t)(q - p) >= sizeof(sn->owner))
		return -1;
	memcpy(sn->owner, p, (size_t)(q - p));
	sn->owner[q - p] = '\0';
	p = q + 1;
	q = strrchr(p, '-');
	if (!q || q == p || (size_t)(q - p) >= sizeof(sn->tag))
		return -1;
	memcpy(sn->tag, p, (size_t)(q - p));
	sn->tag[q - p] = '\0';
	p = q + 1;
	if (!isdigit((unsigned char)*p))
		return -1;
	sn->n = strtoull(p, &end, 10);
	if (*end != '.')
		return -1;
	l = strlen(end + 1);
	if (l == 0 || l >= sizeof(sn->ext))
		return -1;
	memcpy(sn->ext, end + 1, l + 1);
	return 0;
}

static int path_in(const struct sh5_stream *s, char *out, size_t size,
		   const char *name)
{
	int n = snprintf(out, size, "%s/%s", s->spool_dir, name);

	return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

/* A failing spool operation: note the error, try again later. */
static void spool_failed(struct sh5_stream *s, int e)
{
	s->spool_retry_at = mono_ns() + SPOOL_RETRY_NS;
	set_error(s, EK_SPOOL + e, "spool %s: %s", s->spool_dir, strerror(e));
	errno = e;
}

/* Create the spool directory (last component) when missing and take the
 * owner lock "<owner>.lock" (made under a temporary name, renamed into
 * place once locked).  Replaces a lock whose file vanished.  0 or -1. */
static int lock_create(struct sh5_stream *s)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	struct stat sb;
	int fd, e;

	if (sp_mkdir(s->spool_dir, 0700) < 0 && errno != EEXIST)
		return -1;
	if (sp_enter("stat", s->spool_dir) || stat(s->spool_dir, &sb) < 0)
		return -1;
	if (!S_ISDIR(sb.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.lock", s->spool_dir, s->owner) >=
		    (int)sizeof(tmp) ||
	    snprintf(path, sizeof(path), "%s/%s.lock", s->spool_dir,
		     s->owner) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	sp_unlink(tmp); /* a leftover of an earlier failed attempt */
	fd = sp_open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX) < 0 || sp_rename(tmp, path) < 0) {
		e = errno;
		close(fd);
		sp_unlink(tmp);
		errno = e;
		return -1;
	}
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	s->lock_fd = fd;
	/* what was known of the directory may be stale: look again */
	s->next_scan = 0;
	return 0;
}

/*
 * Is the spool usable now?  It is when the directory holds our lock file;
 * otherwise (never created, or the directory vanished) it is created
 * again, at most every SPOOL_RETRY_NS.  1 yes, 0 no (errno set).
 */
static int spool_ready(struct sh5_stream *s)
{
	struct stat sb;

	if (!s->spool_dir) {
		errno = ENOENT;
		return 0;
	}
	if (s->lock_fd >= 0 && fstat(s->lock_fd, &sb) == 0 && sb.st_nlink > 0)
		return 1;
	if (mono_ns() < s->spool_retry_at) {
		errno = EAGAIN;
		return 0;
	}
	if (lock_create(s) == 0)
		return 1;
	spool_failed(s, errno);
	return 0;
}

/* Is the owner of a lock file gone?  When it is and fdp is not NULL,
 * *fdp keeps the lock (close it after adopting).  1 dead, 0 alive (or
 * unknown now). */
static int owner_dead(struct sh5_stream *s, const char *owner, int *fdp)
{
	char path[PATH_MAX], name[80];
	int fd;

	snprintf(name, sizeof(name), "%s.lock", owner);
	if (path_in(s, path, sizeof(path), name) < 0)
		return 0;
	fd = sp_open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return errno == ENOENT;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return 0;
	}
	if (fdp)
		*fdp = fd;
	else
		close(fd);
	return 1;
}

/* Was this (delivered) spool file's removal postponed? */
static int undeleted(const struct sh5_stream *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nundel; i++)
		if (!strcmp(s->undel[i], name))
			return 1;
	return 0;
}

/* Remove delivered spool files whose removal failed before. */
static void undel_retry(struct sh5_stream *s)
{
	char path[PATH_MAX];
	size_t i = 0;

	while (i < s->nundel) {
		if (path_in(s, path, sizeof(path), s->undel[i]) < 0 ||
		    sp_unlink(path) == 0 || errno == ENOENT) {
			memmove(s->undel[i], s->undel[i + 1],
				(s->nundel - i - 1) * sizeof(s->undel[0]));
			s->nundel--;
		} else {
			i++;
		}
	}
}

struct dead_owner {
	char owner[48];
	int dead;
	int fd;
};

/*
 * Scan the spool directory: adopt files of dead owners (same format),
 * remove their lock files and the temporary files of dead owners and of
 * this stream, count this stream's files and bytes of all spool files,
 * remember the oldest own file.  With evict > 0, afterwards delete
 * oldest spool files until evict more bytes fit under the bound.  When
 * the directory cannot be read, what was known stays (tried again soon).
 */
static void spool_scan(struct sh5_stream *s, uint64_t evict)
{
	struct dead_owner owners[16];
	size_t nowners = 0, i;
	char path[PATH_MAX], path2[PATH_MAX], name[256], oldest[256] = "";
	struct spool_name sn;
	struct dirent *de;
	struct stat sb;
	DIR *d;
	uint64_t total = 0;
	size_t own = 0;
	int again, len, tmpfile;

	if (!spool_ready(s)) {
		s->next_scan = mono_ns() + SPOOL_RETRY_NS;
		return;
	}
	s->next_scan = mono_ns() + SCAN_PERIOD_NS;
	undel_retry(s);
	d = sp_opendir(s->spool_dir);
	if (!d) {
		s->next_scan = mono_ns() + SPOOL_RETRY_NS;
		spool_failed(s, errno);
		return;
	}
	while ((de = readdir(d))) {
		tmpfile = de->d_name[0] == '.';
		if (parse_name(de->d_name + tmpfile, &sn) < 0)
			continue;
		if (path_in(s, path, sizeof(path), de->d_name) < 0 ||
		    lstat(path, &sb) < 0 || !S_ISREG(sb.st_mode))
			continue;
		if (tmpfile) {
			/* a write that failed half-way (its batch was kept
			 * in memory): remove it when its writer is gone or
			 * is this stream (not writing now) */
			if (!strcmp(sn.owner, s->owner) ||
			    owner_dead(s, sn.owner, NULL))
				sp_unlink(path);
			continue;
		}
		total += (uint64_t)sb.st_size;
		if (strcmp(sn.ext, s->ext))
			continue;
		if (strcmp(sn.owner, s->owner)) {
			for (i = 0; i < nowners; i++)
				if (!strcmp(owners[i].owner, sn.owner))
					break;
			if (i == nowners) {
				if (nowners == 16)
					continue;
				snprintf(owners[i].owner,
					 sizeof(owners[i].owner), "%s",
					 sn.owner);
				owners[i].fd = -1;
				owners[i].dead =
					owner_dead(s, sn.owner, &owners[i].fd);
				nowners++;
			}
			if (!owners[i].dead)
				continue;
			len = snprintf(name, sizeof(name),
				       "%020" PRId64 "-%s-%s_%s-%" PRIu64 ".%s",
				       sn.ts, s->owner, sn.owner, sn.tag, sn.n,
				       sn.ext);
			if (len < 0 || (size_t)len >= sizeof(name) ||
			    path_in(s, path2, sizeof(path2), name) < 0)
				continue;
			if (sp_rename(path, path2) < 0) {
				/* gone (another stream adopted it) or
				 * refused for now: look again soon */
				if (errno != ENOENT)
					s->next_scan =
						mono_ns() + SPOOL_RETRY_NS;
				continue;
			}
		} else {
			len = snprintf(name, sizeof(name), "%s", de->d_name);
			if (len < 0 || (size_t)len >= sizeof(name))
				continue;
			if (undeleted(s, name))
				continue; /* delivered already */
		}
		own++;
		if (!oldest[0] || strcmp(name, oldest) < 0)
			snprintf(oldest, sizeof(oldest), "%s", name);
	}
	closedir(d);
	for (i = 0; i < nowners; i++) {
		if (owners[i].fd < 0)
			continue;
		len = snprintf(name, sizeof(name), "%s.lock", owners[i].owner);
		if (len > 0 && (size_t)len < sizeof(name) &&
		    path_in(s, path, sizeof(path), name) == 0)
			sp_unlink(path);
		close(owners[i].fd);
	}
	s->own_files = own;
	s->spool_bytes = total;
	memcpy(s->oldest, oldest, sizeof(oldest));

	/* enforce the bound: delete the oldest spool files (any owner) */
	while (evict && s->spool_bytes + evict > s->spool_max) {
		char victim[256] = "";

		again = 0;
		d = sp_opendir(s->spool_dir);
		if (!d)
			return;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.' ||
			    parse_name(de->d_name, &sn) < 0 ||
			    undeleted(s, de->d_name))
				continue;
			if (!victim[0] || strcmp(de->d_name, victim) < 0)
				snprintf(victim, sizeof(victim), "%s",
					 de->d_name);
		}
		closedir(d);
		if (!victim[0] || parse_name(victim, &sn) < 0 ||
		    path_in(s, path, sizeof(path), victim) < 0)
			return;
		if (lstat(path, &sb) < 0 || sp_unlink(path) < 0)
			return;
		s->spool_bytes -= (uint64_t)sb.st_size < s->spool_bytes ?
					  (uint64_t)sb.st_size :
					  s->spool_bytes;
		pthread_mutex_lock(&s->lock);
		s->st.dropped_spool += sn.n;
		pthread_mutex_unlock(&s->lock);
		if (!strcmp(sn.owner, s->owner) && s->own_files)
			s->own_files--;
		if (!strcmp(victim, s->oldest))
			again = 1;
		if (again) {
			/* find the new oldest own file */
			spool_scan(s, 0);
		}
	}
}

/* Write batch b as a spool file.  0 ok (b->held cleared), -1 (errno set,
 * error noted, retried not before spool_retry_at): b is untouched, the
 * caller keeps it. */
static int spool_write(struct sh5_stream *s, struct batch *b)
{
	char name[256], path[PATH_MAX], tmp[PATH_MAX];
	size_t off = 0;
	ssize_t w;
	int fd, e;

	if (!spool_ready(s))
		return -1;
	if (b->b.len > s->spool_max) {
		set_error(s, EK_SPOOL + EFBIG,
			  "spool %s: batch of %zu bytes exceeds the bound",
			  s->spool_dir, b->b.len);
		s->spool_retry_at = mono_ns() + SPOOL_RETRY_NS;
		errno = EFBIG;
		return -1;
	}
	if (s->spool_bytes + b->b.len > s->spool_max)
		spool_scan(s, b->b.len);
	snprintf(name, sizeof(name), "%020" PRId64 "-%s-%010" PRIu64 "-%" PRIu64
		 ".%s", b->ts, s->owner, ++s->seq, b->n, s->ext);
	if (path_in(s, path, sizeof(path), name) < 0) {
		errno = ENAMETOOLONG;
		goto error;
	}
	snprintf(tmp, sizeof(tmp), "%s/.%s", s->spool_dir, name);
	fd = sp_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		goto error;
	while (off < b->b.len) {
		w = write(fd, b->b.p + off, b->b.len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			goto error_fd;
		}
		off += (size_t)w;
	}
	if (close(fd) < 0) {
		fd = -1;
		goto error_fd;
	}
	fd = -1;
	if (sp_rename(tmp, path) < 0)
		goto error_fd;
	s->spool_bytes += b->b.len;
	s->own_files++;
	if (!s->oldest[0] || strcmp(name, s->oldest) < 0)
		snprintf(s->oldest, sizeof(s->oldest), "%s", name);
	pthread_mutex_lock(&s->lock);
	s->st.spooled += b->n;
	pthread_mutex_unlock(&s->lock);
	b->held = 0;
	b->b.len = 0;
	return 0;
error_fd:
	e = errno;
	if (fd >= 0)
		close(fd);
	/* may fail too; then the next scan removes it */
	sp_unlink(tmp);
	errno = e;
error:
	spool_failed(s, errno);
	return -1;
}

/* At close: spool_write() tried again until the hard deadline. */
static int spool_write_final(struct sh5_stream *s, struct batch *b)
{
	struct timespec pause = { 0, FINAL_RETRY_NS };
	int64_t end;

	pthread_mutex_lock(&s->lock);
	end = s->hard_end;
	pthread_mutex_unlock(&s->lock);
	if (!s->spool_dir)
		return -1;
	while (mono_ns() < end) {
		s->spool_retry_at = 0;
		if (spool_write(s, b) == 0)
			return 0;
		if (mono_ns() + FINAL_RETRY_NS >= end)
			break;
		nanosleep(&pause, NULL);
	}
	return -1;
}

static void spool_close(struct sh5_stream *s)
{
	char path[PATH_MAX], name[80];

	if (s->lock_fd < 0)
		return;
	snprintf(name, sizeof(name), "%s.lock", s->owner);
	if (path_in(s, path, sizeof(path), name) == 0)
		sp_unlink(path);
	close(s->lock_fd);
	s->lock_fd = -1;
}

/* Read spool file name into s->rd.  0, or -1 with errno: ENOENT it is
 * gone, EFBIG too large, EACCES/EPERM/... refused for now. */
static int spool_read(struct sh5_stream *s, const char *name)
{
	char path[PATH_MAX];
	struct stat sb;
	ssize_t r;
	int fd, e;

	s->rd.len = 0;
	if (path_in(s, path, sizeof(path), name) < 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = sp_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) < 0)
		goto error;
	if (sb.st_size > MAX_SPOOL_FILE) {
		errno = EFBIG;
		goto error;
	}
	if (buf_reserve(&s->rd, (size_t)sb.st_size) < 0) {
		errno = ENOMEM;
		goto error;
	}
	while ((r = read(fd, s->rd.p + s->rd.len,
			 s->rd.cap - s->rd.len - 1)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto error;
		s->rd.len += (size_t)r;
		if (s->rd.len + 1 >= s->rd.cap &&
		    buf_reserve(&s->rd, 4096) < 0) {
			errno = ENOMEM;
			goto error;
		}
	}
	close(fd);
	return 0;
error:
	e = errno;
	close(fd);
	s->rd.len = 0;
	errno = e;
	return -1;
}

/* -------------------------------------------------------------- HTTP */

static size_t on_response(char *data, size_t size, size_t nmemb, void *arg)
{
	struct sh5_stream *s = arg;
	size_t n = size * nmemb, room = sizeof(s->resp) - 1 - s->resp_len;

	if (room > n)
		room = n;
	memcpy(s->resp + s->resp_len, data, room);
	s->resp_len += room;
	s->resp[s->resp_len] = '\0';
	return n;
}

static int http_setup(struct sh5_stream *s, struct sh5_error *errp)
{
	char hdr[1100];
	CURLcode rc = CURLE_OK;

	s->multi = curl_multi_init();
	s->easy = curl_easy_init();
	if (!s->multi || !s->easy) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "stream: cannot create curl handles");
	}
	s->hdrs = curl_slist_append(NULL, s->format == SH5_STREAM_JSON ?
						  "Content-Type: application/json" :
						  "Content-Type: text/plain; charset=utf-8");
	if (s->hdrs)
		s->hdrs = curl_slist_append(s->hdrs, "Expect:");
	if (s->hdrs && s->token) {
		snprintf(hdr, sizeof(hdr), "Authorization: %s %s",
			 s->format == SH5_STREAM_JSON ? "Bearer" : "Token",
			 s->token);
		s->hdrs = curl_slist_append(s->hdrs, hdr);
		explicit_bzero(hdr, sizeof(hdr));
	}
	if (!s->hdrs) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "stream: out of memory");
	}
#define SET(opt, val) \
	if (rc == CURLE_OK) \
	rc = curl_easy_setopt(s->easy, opt, val)
	SET(CURLOPT_URL, s->url);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_CONNECTTIMEOUT_MS, s->connect_ms);
	SET(CURLOPT_TIMEOUT_MS, s->timeout_ms);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
#if LIBCURL_VERSION_NUM >= 0x075700
	/* never wait for a hanging name resolution when a POST is aborted */
	SET(CURLOPT_QUICK_EXIT, 1L);
#endif
	SET(CURLOPT_HTTPHEADER, s->hdrs);
	SET(CURLOPT_USERAGENT, "sh5-stream/" PACKAGE_VERSION);
	SET(CURLOPT_WRITEFUNCTION, on_response);
	SET(CURLOPT_WRITEDATA, s);
	SET(CURLOPT_ERRORBUFFER, s->curl_err);
	SET(CURLOPT_POST, 1L);
	SET(CURLOPT_SSL_VERIFYPEER, s->insecure ? 0L : 1L);
	SET(CURLOPT_SSL_VERIFYHOST, s->insecure ? 0L : 2L);
	if (s->ca_file)
		SET(CURLOPT_CAINFO, s->ca_file);
	if (s->user) {
		SET(CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		SET(CURLOPT_USERNAME, s->user);
		SET(CURLOPT_PASSWORD, s->pass ? s->pass : "");
	}
#undef SET
	if (rc != CURLE_OK) {
		errno = EINVAL;
		return sh5_errprintf(errp, "stream: curl setup: %s",
				     curl_easy_strerror(rc));
	}
	return 0;
}

/* Is it time to form a batch from the queue?  (lock held) */
static int batch_due(const struct sh5_stream *s, int64_t now)
{
	if (s->count == 0)
		return 0;
	return s->count >= s->batch_max || s->flush_req || s->closing ||
	       now - s->last_form >= s->flush_ms * 1000000LL;
}

/* While a POST is in flight: spill the queue to the spool when it is
 * half full, so a slow server does not make push() drop samples.  A
 * spill the spool refuses is held in memory (one at most) and spooled
 * or delivered later. */
static void spill_if_filling(struct sh5_stream *s)
{
	size_t full;

	if (!s->spool_dir)
		return;
	for (;;) {
		pthread_mutex_lock(&s->lock);
		full = s->count >= s->qcap / 2 && s->count > 0;
		pthread_mutex_unlock(&s->lock);
		if (!full)
			return;
		if (s->spill.held) {
			if (s->posting == &s->spill.b ||
			    mono_ns() < s->spool_retry_at ||
			    spool_write(s, &s->spill) < 0)
				return;
			continue;
		}
		if (form_batch(s, &s->spill.b, &s->spill.n, &s->spill.ts) == 0)
			return;
		if (s->spill.n == 0)
			continue;
		s->spill.held = 1;
		if (spool_write(s, &s->spill) < 0)
			return;
	}
}

/* One-line summary of the server's answer (no newlines, no trailing
 * blanks). */
static void squash(char *t)
{
	char *end = t;

	for (; *t; t++) {
		if (*t == '\n' || *t == '\r' || *t == '\t')
			*t = ' ';
		if (*t != ' ')
			end = t + 1;
	}
	*end = '\0';
}

/* POST body b.  Never longer than the close deadline. */
static enum post_result post_body(struct sh5_stream *s, const struct buf *b)
{
	CURLMsg *msg;
	CURLcode cc = CURLE_OK;
	long code = 0;
	int running = 1, left, aborted = 0;

	s->resp_len = 0;
	s->resp[0] = '\0';
	s->curl_err[0] = '\0';
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, b->p);
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)b->len);
	if (curl_multi_add_handle(s->multi, s->easy) != CURLM_OK) {
		set_error(s, EK_MULTI, "POST %s: curl_multi_add_handle failed",
			  s->safe_url);
		return POST_RETRY;
	}
	pthread_mutex_lock(&s->lock);
	s->in_post = 1;
	pthread_mutex_unlock(&s->lock);
	s->posting = b;
	while (running) {
		if (curl_multi_perform(s->multi, &running) != CURLM_OK)
			break;
		if (!running)
			break;
		pthread_mutex_lock(&s->lock);
		aborted = s->closing && mono_ns() >= s->abort_at;
		pthread_mutex_unlock(&s->lock);
		if (aborted)
			break;
		spill_if_filling(s);
		curl_multi_poll(s->multi, NULL, 0, POLL_MS, NULL);
	}
	s->posting = NULL;
	pthread_mutex_lock(&s->lock);
	s->in_post = 0;
	pthread_mutex_unlock(&s->lock);
	while ((msg = curl_multi_info_read(s->multi, &left)))
		if (msg->msg == CURLMSG_DONE)
			cc = msg->data.result;
	if (!aborted && !running)
		curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code);
	curl_multi_remove_handle(s->multi, s->easy);
	if (aborted || running) {
		set_error(s, EK_ABORT, "POST %s: close deadline reached, batch kept",
			  s->safe_url);
		return POST_ABORT;
	}
	if (cc != CURLE_OK) {
		set_error(s, EK_CURL + (int)cc, "POST %s: %s", s->safe_url,
			  s->curl_err[0] ? s->curl_err :
					   curl_easy_strerror(cc));
		return POST_RETRY;
	}
	if (code >= 200 && code < 300) {
		pthread_mutex_lock(&s->lock);
		s->err_since_ok = 1;
		s->st.posts++;
		pthread_mutex_unlock(&s->lock);
		return POST_OK;
	}
	squash(s->resp);
	if (code == 400 || code == 413 || code == 422) {
		set_error(s, EK_HTTP + (int)code,
			  "POST %s: HTTP %ld (batch rejected, not retried): %s",
			  s->safe_url, code, s->resp);
		return POST_REJECT;
	}
	set_error(s, EK_HTTP + (int)code, "POST %s: HTTP %ld: %s", s->safe_url,
		  code, s->resp);
	return POST_RETRY;
}

static void count_post(struct sh5_stream *s, enum post_result r, uint64_t n,
		       int from_spool)
{
	pthread_mutex_lock(&s->lock);
	if (r == POST_OK) {
		if (from_spool)
			s->st.recovered += n;
		else
			s->st.sent += n;
	} else if (r == POST_REJECT) {
		s->st.rejected += n;
	} else if (r == POST_RETRY) {
		s->st.failed_posts++;
	}
	pthread_mutex_unlock(&s->lock);
	if (r == POST_OK || r == POST_REJECT) {
		s->backoff_ms = 0;
		s->backoff_until = 0;
	} else if (r == POST_RETRY) {
		s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 :
						BACKOFF_MIN_MS;
		if (s->backoff_ms > BACKOFF_MAX_MS)
			s->backoff_ms = BACKOFF_MAX_MS;
		s->backoff_until = mono_ns() + s->backoff_ms * 1000000LL;
	}
}

/* Deliver the oldest own spool file.  A file that cannot be read now is
 * left for later; one delivered is removed, or remembered as delivered
 * until it can be (never sent twice by this stream). */
static void send_spooled(struct sh5_stream *s)
{
	char path[PATH_MAX], name[256];
	struct spool_name sn = { 0 };
	enum post_result r;

	snprintf(name, sizeof(name), "%s", s->oldest);
	if (parse_name(name, &sn) < 0 || undeleted(s, name) ||
	    path_in(s, path, sizeof(path), name) < 0) {
		/* delivered already: the scan that would forget it failed */
		spool_scan(s, 0);
		return;
	}
	if (spool_read(s, name) < 0) {
		if (errno == ENOENT) {
			/* evicted by another stream (which counted it) */
		} else if (errno == EFBIG) {
			if (sp_unlink(path) < 0) {
				spool_failed(s, errno);
				return;
			}
			pthread_mutex_lock(&s->lock);
			s->st.dropped_spool += sn.n;
			pthread_mutex_unlock(&s->lock);
		} else {
			/* refused for now (privileges switched...) */
			spool_failed(s, errno);
			return;
		}
		spool_scan(s, 0);
		return;
	}
	r = post_body(s, &s->rd);
	count_post(s, r, sn.n, 1);
	if (r == POST_OK || r == POST_REJECT) {
		if (sp_unlink(path) == 0 || errno == ENOENT) {
			if (s->spool_bytes >= s->rd.len)
				s->spool_bytes -= s->rd.len;
		} else {
			spool_failed(s, errno);
			snprintf(s->undel[s->nundel++], sizeof(s->undel[0]),
				 "%s", name);
		}
		spool_scan(s, 0);
	}
	s->rd.len = 0;
}

/* The held batch to deliver or spool first (oldest), NULL if none. */
static struct batch *held_oldest(struct sh5_stream *s)
{
	if (s->cur.held && (!s->spill.held || s->cur.ts <= s->spill.ts))
		return &s->cur;
	return s->spill.held ? &s->spill : NULL;
}

/* Is the oldest own spool file older than batch b (or b NULL)? */
static int spool_first(const struct sh5_stream *s, const struct batch *b)
{
	struct spool_name sn;

	if (s->own_files == 0 || !s->oldest[0])
		return 0;
	if (!b)
		return 1;
	return parse_name(s->oldest, &sn) == 0 && sn.ts < b->ts;
}

/* POST a held batch; when it fails, try to spool it. */
static void send_held(struct sh5_stream *s, struct batch *b)
{
	enum post_result r = post_body(s, &b->b);

	count_post(s, r, b->n, 0);
	if (r == POST_OK || r == POST_REJECT) {
		b->held = 0;
		b->b.len = 0;
	} else if (r == POST_RETRY && s->spool_dir &&
		   mono_ns() >= s->spool_retry_at) {
		spool_write(s, b);
	}
}

/* A new batch in s->cur: POST it, or spool it (behind spooled data,
 * while backing off, or after a failed POST); held if neither worked. */
static void send_new(struct sh5_stream *s, int backoff)
{
	enum post_result r;

	s->cur.held = 1;
	if (backoff || s->own_files > 0) {
		if (s->spool_dir && mono_ns() >= s->spool_retry_at)
			spool_write(s, &s->cur);
		return;
	}
	r = post_body(s, &s->cur.b);
	count_post(s, r, s->cur.n, 0);
	if (r == POST_OK || r == POST_REJECT) {
		s->cur.held = 0;
		s->cur.b.len = 0;
	} else if (s->spool_dir && mono_ns() >= s->spool_retry_at) {
		spool_write(s, &s->cur);
	}
}

/* At the end: spool what is held and what is queued, until the hard
 * deadline; count what could not be kept as unsent. */
static void spool_rest(struct sh5_stream *s)
{
	struct batch *b;
	uint64_t lost = 0;

	while ((b = held_oldest(s))) {
		if (spool_write_final(s, b) < 0) {
			lost += b->n;
			b->held = 0;
			b->b.len = 0;
		}
	}
	while (form_batch(s, &s->cur.b, &s->cur.n, &s->cur.ts)) {
		if (s->cur.n == 0)
			continue;
		s->cur.held = 1;
		if (spool_write_final(s, &s->cur) < 0) {
			lost += s->cur.n;
			s->cur.held = 0;
			s->cur.b.len = 0;
		}
	}
	if (lost) {
		pthread_mutex_lock(&s->lock);
		s->st.unsent += lost;
		pthread_mutex_unlock(&s->lock);
	}
}

static void *sender_main(void *arg)
{
	struct sh5_stream *s = arg;
	struct timespec until;
	struct batch *h;
	int64_t now, wake;
	int backoff, spool_now, abandoned;

	if (s->spool_dir)
		spool_scan(s, 0);
	s->last_form = mono_ns();
	pthread_mutex_lock(&s->lock);
	for (;;) {
		now = mono_ns();
		if (s->closing && now >= s->abort_at)
			break;
		backoff = now < s->backoff_until;
		spool_now = s->spool_dir && now >= s->spool_retry_at;
		h = held_oldest(s);
		pthread_mutex_unlock(&s->lock);
		if (spool_now && s->nundel > 0) {
			undel_retry(s);
			if (s->nundel > 0)
				s->spool_retry_at = now + SPOOL_RETRY_NS;
		}
		if (h && backoff && spool_now) {
			/* the server is away: held batches go to the spool
			 * (frees memory; names keep the order) */
			spool_write(s, h);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		if (!backoff && spool_first(s, h)) {
			if (spool_now && s->nundel < UNDEL_MAX) {
				send_spooled(s);
				pthread_mutex_lock(&s->lock);
				continue;
			}
			/* older spool files come first: wait for the spool */
		} else if (!backoff && h) {
			send_held(s, h);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		pthread_mutex_lock(&s->lock);
		if (!h && batch_due(s, now)) {
			pthread_mutex_unlock(&s->lock);
			if (form_batch(s, &s->cur.b, &s->cur.n, &s->cur.ts) &&
			    s->cur.n)
				send_new(s, backoff);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		if (s->closing && s->count == 0 && (!h || backoff) &&
		    (s->own_files == 0 || backoff)) {
			/* all of ours is out: one last look for files of
			 * streams ended since the last scan, delivered while
			 * the deadline allows */
			if (!s->spool_dir || backoff || s->final_scan)
				break;
			if (spool_now) {
				s->final_scan = 1;
				pthread_mutex_unlock(&s->lock);
				spool_scan(s, 0);
				pthread_mutex_lock(&s->lock);
				continue;
			}
			/* else wait for the spool (at most until abort_at) */
		}
		if (s->spool_dir && !s->closing && now >= s->next_scan &&
		    spool_now) {
			pthread_mutex_unlock(&s->lock);
			spool_scan(s, 0);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		/* sleep until something is due (push() wakes us when the
		 * queue stops being empty or fills a batch) */
		wake = now + 3600 * 1000000000LL;
		if (s->spool_dir && !s->closing) {
			int64_t scan_at = s->next_scan;

			/* no scan before the spool may be used again */
			if (!spool_now && scan_at < s->spool_retry_at)
				scan_at = s->spool_retry_at;
			if (scan_at < wake)
				wake = scan_at;
		}
		if (s->spool_dir && !spool_now && s->spool_retry_at < wake)
			wake = s->spool_retry_at;
		if (s->count > 0 && !h &&
		    s->last_form + s->flush_ms * 1000000LL < wake)
			wake = s->last_form + s->flush_ms * 1000000LL;
		if (backoff && s->backoff_until < wake)
			wake = s->backoff_until;
		if (s->closing && s->abort_at < wake)
			wake = s->abort_at;
		if (wake <= now)
			wake = now + 1000000;
		until.tv_sec = wake / 1000000000LL;
		until.tv_nsec = wake % 1000000000LL;
		pthread_cond_timedwait(&s->cond, &s->lock, &until);
	}
	pthread_mutex_unlock(&s->lock);

	/* deadline reached or nothing left: spool what is left */
	spool_rest(s);
	spool_close(s);

	pthread_mutex_lock(&s->lock);
	s->done = 1;
	abandoned = s->abandoned;
	pthread_cond_broadcast(&s->done_cond);
	pthread_mutex_unlock(&s->lock);
	if (abandoned) {
		/* close() gave up waiting: nobody else will free it */
		pthread_detach(pthread_self());
		stream_free(s);
	}
	return NULL;
}

/* --------------------------------------------------------- lifecycle */

static void stream_free(struct sh5_stream *s)
{
	size_t i;

	if (!s)
		return;
	if (s->easy)
		curl_easy_cleanup(s->easy);
	if (s->multi)
		curl_multi_cleanup(s->multi);
	curl_slist_free_all(s->hdrs);
	for (i = 0; i < s->nschemas; i++)
		schema_free(s->schemas[i]);
	free(s->ring);
	free(s->batch);
	buf_free(&s->cur.b);
	buf_free(&s->spill.b);
	buf_free(&s->rd);
	if (s->pass)
		explicit_bzero(s->pass, strlen(s->pass));
	if (s->enc_pass)
		explicit_bzero(s->enc_pass, strlen(s->enc_pass));
	if (s->token)
		explicit_bzero(s->token, strlen(s->token));
	free(s->url);
	free(s->safe_url);
	free(s->user);
	free(s->pass);
	free(s->enc_pass);
	free(s->token);
	free(s->spool_dir);
	free(s->ca_file);
	free(s->job);
	free(s->step);
	free(s->node);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	pthread_cond_destroy(&s->done_cond);
	free(s);
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void init_curl(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Keep only harmless query parameters in the URL shown in messages. */
static int keep_param(const char *p)
{
	static const char *const keep[] = { "db=",  "rp=",	"bucket=",
					    "org=", "precision=", NULL };
	size_t i;

	for (i = 0; keep[i]; i++)
		if (!strncmp(p, keep[i], strlen(keep[i])))
			return 1;
	return 0;
}

/* Final URL (precision=ns for influx) and its credential-free form. */
static int make_urls(struct sh5_stream *s, const char *url,
		     struct sh5_error *errp)
{
	CURLU *h = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL,
	     *query = NULL, *full = NULL, *prec;
	char safe[1024], *tok, *save = NULL;
	size_t len;
	int rc = -1;

	if (!h) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "stream: out of memory");
	}
	if (curl_url_set(h, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		errno = EINVAL;
		sh5_errprintf(errp, "stream: URL is not valid");
		goto out;
	}
	if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https")) {
		errno = EINVAL;
		sh5_errprintf(errp, "stream: URL scheme %s is not http or https",
			      scheme);
		goto out;
	}
	curl_url_get(h, CURLUPART_PORT, &port, 0);
	curl_url_get(h, CURLUPART_PATH, &path, 0);
	curl_url_get(h, CURLUPART_QUERY, &query, 0);
	if (s->format != SH5_STREAM_JSON) {
		prec = query ? strstr(query, "precision=") : NULL;
		if (prec && (prec == query || prec[-1] == '&')) {
			if (strncmp(prec + 10, "ns", 2) ||
			    (prec[12] && prec[12] != '&')) {
				errno = EINVAL;
				sh5_errprintf(errp,
					      "stream: URL must use precision=ns (or none)");
				goto out;
			}
		} else if (curl_url_set(h, CURLUPART_QUERY, "precision=ns",
					CURLU_APPENDQUERY) != CURLUE_OK) {
			errno = ENOMEM;
			sh5_errprintf(errp, "stream: out of memory");
			goto out;
		}
		curl_free(query);
		query = NULL;
		curl_url_get(h, CURLUPART_QUERY, &query, 0);
	}
	if (curl_url_get(h, CURLUPART_URL, &full, 0) != CURLUE_OK) {
		errno = EINVAL;
		sh5_errprintf(errp, "stream: URL is not valid");
		goto out;
	}
	snprintf(safe, sizeof(safe), "%s://%s%s%s%s", scheme, host,
		 port ? ":" : "", port ? port : "", path ? path : "/");
	if (query) {
		char sep = '?';

		for (tok = strtok_r(query, "&", &save); tok;
		     tok = strtok_r(NULL, "&", &save)) {
			if (!keep_param(tok))
				continue;
			len = strlen(safe);
			snprintf(safe + len, sizeof(safe) - len, "%c%s", sep,
				 tok);
			sep = '&';
		}
	}
	s->url = strdup(full);
	s->safe_url = strdup(safe);
	if (!s->url || !s->safe_url) {
		errno = ENOMEM;
		sh5_errprintf(errp, "stream: out of memory");
		goto out;
	}
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_free(query);
	curl_free(full);
	curl_url_cleanup(h);
	return rc;
}

static int check_tag(const char *name, const char *v, struct sh5_error *errp)
{
	if (v && v[0] && !name_ok(v)) {
		errno = EINVAL;
		return sh5_errprintf(errp,
				     "stream: tag %s is longer than %d bytes or "
				     "has control characters",
				     name, SH5_STREAM_MAX_NAME);
	}
	return 0;
}

struct sh5_stream *sh5_stream_create(const struct sh5_stream_conf *conf,
				     const struct sh5_stream_tags *tags,
				     struct sh5_error *errp)
{
	struct sh5_stream *s = NULL;
	pthread_condattr_t ca;
	sigset_t all, old;
	int e;

	if (!conf || !conf->url || !conf->url[0]) {
		errno = EINVAL;
		sh5_errprintf(errp, "stream: no URL configured");
		return NULL;
	}
	if (conf->format < SH5_STREAM_INFLUX1 ||
	    conf->format > SH5_STREAM_JSON) {
		errno = EINVAL;
		sh5_errprintf(errp, "stream: unknown format %d", conf->format);
		return NULL;
	}
	if (tags && (check_tag("job", tags->job, errp) < 0 ||
		     check_tag("step", tags->step, errp) < 0 ||
		     check_tag("node", tags->node, errp) < 0))
		return NULL;
	pthread_once(&curl_once, init_curl);
	if (curl_init_rc != CURLE_OK) {
		errno = ENOMEM;
		sh5_errprintf(errp, "stream: curl_global_init: %s",
			      curl_easy_strerror(curl_init_rc));
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		sh5_errprintf(errp, "stream: out of memory");
		return NULL;
	}
	s->lock_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_cond_init(&s->done_cond, &ca);
	pthread_condattr_destroy(&ca);
	s->format = conf->format;
	s->ext = s->format == SH5_STREAM_JSON ? "json" : "lp";
	s->timeout_ms = conf->timeout_ms > 0 ? conf->timeout_ms : DEF_TIMEOUT_MS;
	s->connect_ms = conf->connect_timeout_ms > 0 ? conf->connect_timeout_ms :
						       DEF_CONNECT_MS;
	s->flush_ms = conf->flush_interval_ms > 0 ? conf->flush_interval_ms :
						    DEF_FLUSH_MS;
	s->spool_max = conf->spool_max_bytes ? conf->spool_max_bytes :
					       DEF_SPOOL_MAX;
	s->qcap = conf->queue_max ? conf->queue_max : DEF_QUEUE;
	s->batch_max = conf->batch_max ? conf->batch_max : DEF_BATCH;
	if (s->batch_max > s->qcap)
		s->batch_max = s->qcap;
	s->insecure = conf->insecure_tls != 0;
	s->user = dup_or_null(conf->user);
	s->pass = dup_or_null(conf->pass);
	s->token = dup_or_null(conf->token);
	s->spool_dir = dup_or_null(conf->spool_dir);
	s->ca_file = dup_or_null(conf->ca_file);
	if (tags) {
		s->job = dup_or_null(tags->job);
		s->step = dup_or_null(tags->step);
		s->node = dup_or_null(tags->node);
	}
	s->tags.job = s->job;
	s->tags.step = s->step;
	s->tags.node = s->node;
	s->ring = calloc(s->qcap, sizeof(*s->ring));
	s->batch = calloc(s->batch_max, sizeof(*s->batch));
	if (s->ring) {
		/* touch every page now: push() must not take page faults */
		volatile char *p = (volatile char *)s->ring;
		size_t off, len = s->qcap * sizeof(*s->ring);

		for (off = 0; off < len; off += 4096)
			p[off] = 0;
	}
	if (!s->ring || !s->batch || (conf->user && !s->user) ||
	    (conf->pass && conf->pass[0] && !s->pass) ||
	    (conf->token && conf->token[0] && !s->token) ||
	    (conf->spool_dir && conf->spool_dir[0] && !s->spool_dir)) {
		errno = ENOMEM;
		sh5_errprintf(errp, "stream: out of memory");
		goto error;
	}
	if (s->pass) {
		char *enc = curl_easy_escape(NULL, s->pass, 0);

		s->enc_pass = enc ? strdup(enc) : NULL;
		curl_free(enc);
	}
	if (make_urls(s, conf->url, errp) < 0 || http_setup(s, errp) < 0)
		goto error;
	if (s->spool_dir) {
		static unsigned counter;
		unsigned c = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);

		snprintf(s->owner, sizeof(s->owner), "o%ldx%lldx%u",
			 (long)getpid(), (long long)(real_ns() / 1000000000LL),
			 c);
		/* now, while the caller (node_step_start) still runs with
		 * its own privileges; when it fails, the sender tries again
		 * and the error is reported by last_error() */
		if (lock_create(s) < 0)
			spool_failed(s, errno);
	}
	/* the sender must not take the caller's signals */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&s->thread, NULL, sender_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		errno = e;
		sh5_errprintf(errp, "stream: cannot start sender thread: %s",
			      strerror(e));
		goto error;
	}
	return s;
error:
	e = errno;
	spool_close(s);
	stream_free(s);
	errno = e;
	return NULL;
}

int sh5_stream_close(struct sh5_stream *s, long deadline_ms,
		     struct sh5_stream_stats *st)
{
	struct sh5_stream_stats copy;
	struct timespec until;
	int64_t start = mono_ns(), end, reserve;
	int done, rc;

	if (!s) {
		if (st)
			memset(st, 0, sizeof(*st));
		return 0;
	}
	if (deadline_ms <= 0)
		deadline_ms = DEF_DEADLINE_MS;
	end = start + deadline_ms * 1000000LL;
	/* keep a quarter (at most 250 ms) for spooling what is left */
	reserve = deadline_ms * 1000000LL / 4;
	if (reserve > 250000000LL)
		reserve = 250000000LL;
	pthread_mutex_lock(&s->lock);
	s->closing = 1;
	s->abort_at = end - reserve;
	/* the sender's last spooling ends a little before close() gives up
	 * waiting, so that the counters it returns are final */
	s->hard_end = end - (reserve / 5 < 50000000LL ? reserve / 5 :
							50000000LL);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	curl_multi_wakeup(s->multi);

	until.tv_sec = end / 1000000000LL;
	until.tv_nsec = end % 1000000000LL;
	pthread_mutex_lock(&s->lock);
	while (!s->done)
		if (pthread_cond_timedwait(&s->done_cond, &s->lock, &until) ==
		    ETIMEDOUT)
			break;
	done = s->done;
	if (!done)
		s->abandoned = 1;
	copy = s->st;
	if (s->err_new)
		memcpy(copy.last_error, s->err, sizeof(copy.last_error));
	s->err_new = 0;
	pthread_mutex_unlock(&s->lock);
	copy.closed_in_time = done;
	rc = (copy.dropped_queue || copy.rejected || copy.unsent) ? -1 : 0;
	if (st)
		*st = copy;
	if (done) {
		pthread_join(s->thread, NULL);
		stream_free(s);
	}
	/* else the sender frees the stream when it ends (see sender_main) */
	return rc;
}

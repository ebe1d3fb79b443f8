/* stream.c - what the files of the stream module share (see
 * stream_int.h): clocks, growing buffers, the error text; and the
 * configuration defaults of stream.h. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stream/stream_int.h"

/* ------------------------------------------------------------ helpers */

int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

char *dup_or_null(const char *s)
{
	return (s && s[0]) ? strdup(s) : NULL;
}

/* Grow b to hold more bytes (and a NUL); buf_reserve()'s slow path. */
int buf_grow(struct buf *b, size_t more)
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

int buf_append(struct buf *b, const void *data, size_t len)
{
	if (buf_reserve(b, len) < 0)
		return -1;
	memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
	return 0;
}

void buf_free(struct buf *b)
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

/* Record an error text (credentials scrubbed) for last_error(). */
void set_error(struct sh5_stream *s, int kind, const char *fmt, ...)
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
		       (sizeof(struct schema) + SHAPES_MAX_BYTES +
			(SH5_STREAM_MAX_FIELDS + 1) * (SH5_STREAM_MAX_NAME + 1));
}

/* format.c - request bodies: InfluxDB line protocol and JSON
 * counter-statistics packets (see stream.h, stream_int.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "stream/stream_int.h"

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

/* Format samples batch[0..n) of the stream into b (appending). */
int format_lines(struct sh5_stream *s, const struct slot *batch,
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

/* Add the batch's samples to the running statistics of their series. */
static void json_update_stats(struct sh5_stream *s, const struct slot *batch,
			      size_t n)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		struct schema *sc = s->schemas[batch[i].schema];

		sc->nsamples++;
		for (k = 0; k < batch[i].nf; k++) {
			double v = sc->types[k] == SH5_STREAM_U64 ?
					   (double)batch[i].v[k].u :
					   batch[i].v[k].d;

			/* A NaN or infinity would spoil the statistics
			 * for the rest of the stream. */
			if (isfinite(v))
				sh5_runstats_push(&sc->rs[k], v);
		}
	}
}

/* Whether every statistic of rs has a JSON form (finite samples can
 * still overflow: a square near 1e300). */
static int stats_finite(const struct sh5_runstats *rs)
{
	return isfinite(sh5_runstats_accumulate(rs)) &&
	       isfinite(sh5_runstats_min(rs)) &&
	       isfinite(sh5_runstats_max(rs)) &&
	       isfinite(sh5_runstats_mean(rs)) &&
	       isfinite(sh5_runstats_stddev(rs)) &&
	       isfinite(sh5_runstats_skewness(rs)) &&
	       isfinite(sh5_runstats_kurtosis(rs));
}

/* The "counter_stats" array: one entry per counter of the first nsch
 * series that have samples; "stats": null where they overflowed. */
static void json_counter_stats(struct sh5_json *j, struct sh5_stream *s,
			       size_t nsch)
{
	char app[2 * SH5_STREAM_MAX_NAME + 2];
	char counter[2 * SH5_STREAM_MAX_NAME + 2];
	size_t i, k;

	snprintf(app, sizeof(app), "%s.%s", s->job ? s->job : "",
		 s->step ? s->step : "");
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
			if (stats_finite(&sc->rs[k]))
				sh5_json_runstats(j, &sc->rs[k]);
			else
				sh5_json_null(j);
			sh5_json_object_close(j);
		}
	}
	sh5_json_array_close(j);
}

/* The "samples" array: the batch's raw samples. */
static void json_samples(struct sh5_json *j, const struct sh5_stream *s,
			 const struct slot *batch, size_t n)
{
	size_t i, k;

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
}

/* One counter-statistics packet: running statistics of every counter so
 * far (updated with this batch) and the batch's raw samples. */
int format_json(struct sh5_stream *s, const struct slot *batch,
		size_t n, struct buf *b, uint64_t *nsamples)
{
	struct sh5_error err;
	struct sh5_json *j;
	size_t nsch;
	int rc;

	pthread_mutex_lock(&s->lock);
	nsch = s->nschemas;
	pthread_mutex_unlock(&s->lock);
	json_update_stats(s, batch, n);
	j = sh5_json_create_cb(json_sink, b, 0, &err);
	if (!j)
		return -1;
	sh5_json_object_open(j);
	sh5_json_kv_int(j, "version", 2);
	sh5_json_kv_int(j, "created_at", real_ns() / 1000000);
	kv_tag(j, "job", s->job);
	kv_tag(j, "step", s->step);
	kv_tag(j, "node", s->node);
	json_counter_stats(j, s, nsch);
	json_samples(j, s, batch, n);
	sh5_json_object_close(j);
	rc = sh5_json_finish(j, &err);
	sh5_json_destroy(j);
	if (rc < 0)
		return -1;
	*nsamples += n;
	return 0;
}

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

#include "common/csvfmt.h"
#include "common/json.h"
#include "stream/stream_int.h"

/* ---------------------------------------------------- line protocol */

/* Append s escaping the characters in special with a backslash and
 * turning control characters into '_'.  out has room for 2 strlen(s).
 * Returns the bytes written. */
static size_t put_escaped(char *out, const char *s, const char *special)
{
	size_t len = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (strchr(special, c)) {
			out[len++] = '\\';
			out[len++] = (char)c;
		} else {
			out[len++] = (c < 0x20 || c == 0x7f) ? '_' : (char)c;
		}
	}
	return len;
}

/* Shortest of %.15g / %.17g that reads back to the same double. */
static size_t fmt_double_printf(char *out, size_t size, double v)
{
	int n = snprintf(out, size, "%.15g", v);

	if (strtod(out, NULL) != v)
		n = snprintf(out, size, "%.17g", v);
	return (size_t)n;
}

/* Significant digits of a number in plain notation ("-0.0125": 3). */
static size_t sig_digits(const char *s, size_t n)
{
	size_t i, count = 0;
	int lead = 1;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			continue;
		if (lead && s[i] == '0')
			continue;
		lead = 0;
		count++;
	}
	return count;
}

/* Is out[0..n) a number in plain notation with at most 15 significant
 * digits? */
static int plain15(const char *out, size_t n)
{
	return n > 0 && !memchr(out, 'e', n) && sig_digits(out, n) <= 15;
}

/*
 * fmt_double_printf()'s text of v (finite) into out (SH5_FMT_MAX bytes
 * at least), mostly without printf.  sh5_fmt_double() (fixed, up to 6
 * decimals) and sh5_json_format_double() (shortest digits) write
 * decimals that read back as v; when one is in plain notation with at
 * most 15 significant digits and 1e-4 <= |v| < 1e15 it is what %.15g
 * writes: a decimal of at most 15 digits that reads back as v is within
 * half an ulp of v (at most 2^-53 |v|), less than half a unit of v's
 * 15th digit (at least 10^-15 |v| / 2), so it is v rounded to 15 digits,
 * trailing zeros dropped; and %g's plain range is that of |v| here.
 * Other values go to printf.
 */
static size_t fmt_double(char *out, double v)
{
	double a = fabs(v);
	int n;

	if (v == 0) {
		/* %g keeps the sign of a negative zero */
		n = 0;
		if (signbit(v))
			out[n++] = '-';
		out[n++] = '0';
		out[n] = '\0';
		return (size_t)n;
	}
	if (a >= 1e-4 && a < 1e15) {
		n = (int)sh5_fmt_double(out, v);
		if (plain15(out, (size_t)n))
			return (size_t)n;
		n = sh5_json_format_double(out, SH5_FMT_MAX, v);
		/* (integral values, written "N.0", were taken above) */
		if (n > 0 && out[n - 1] != '0' && plain15(out, (size_t)n))
			return (size_t)n;
	}
	return fmt_double_printf(out, SH5_FMT_MAX, v);
}

/* A (series, tags, fields) shape formatted once: measurement and tags
 * up to "step", and each field's "name=", escaped. */
struct lp_shape {
	char *buf;
	size_t plen;
	size_t koff[SH5_STREAM_MAX_FIELDS];
	size_t klen[SH5_STREAM_MAX_FIELDS];
};

static size_t put_tag(char *out, const char *key, const char *val)
{
	size_t len;

	if (!val || !val[0])
		return 0;
	out[0] = ',';
	len = 1 + put_escaped(out + 1, key, ",= ");
	out[len++] = '=';
	return len + put_escaped(out + len, val, ",= ");
}

/* Build sh into one allocation.  0, or -1 (ENOMEM). */
static int lp_shape_build(struct lp_shape *sh, const char *series,
			  const struct sh5_stream_tags *tags,
			  const char *const *names, size_t nf)
{
	size_t i, len, size = 3 * strlen(series) + 64;

	if (tags)
		size += 2 * (strlen(tags->job ? tags->job : "") +
			     strlen(tags->node ? tags->node : "") +
			     strlen(tags->step ? tags->step : ""));
	for (i = 0; i < nf; i++)
		size += 2 * strlen(names[i]) + 2;
	sh->buf = malloc(size);
	if (!sh->buf) {
		errno = ENOMEM;
		return -1;
	}
	/* tags in key order, as InfluxDB prefers */
	len = put_escaped(sh->buf, series, ", ");
	len += put_tag(sh->buf + len, "job", tags ? tags->job : NULL);
	len += put_tag(sh->buf + len, "node", tags ? tags->node : NULL);
	len += put_tag(sh->buf + len, "series", series);
	len += put_tag(sh->buf + len, "step", tags ? tags->step : NULL);
	sh->plen = len;
	for (i = 0; i < nf; i++) {
		sh->koff[i] = len;
		len += put_escaped(sh->buf + len, names[i], ",= ");
		sh->buf[len++] = '=';
		sh->klen[i] = len - sh->koff[i];
	}
	return 0;
}

/* Bytes one line of sh may take at most. */
static size_t lp_line_max(const struct lp_shape *sh, size_t nf)
{
	size_t i, n = sh->plen + 16 + 2 + 24;

	for (i = 0; i < nf; i++)
		n += 1 + sh->klen[i] + SH5_FMT_MAX + 1;
	return n;
}

/* One line of shape sh into out (lp_line_max() bytes of room), without
 * a NUL.  Returns its length, 0 when no field is left to write. */
static size_t lp_line(char *out, const struct lp_shape *sh, int task,
		      const enum sh5_stream_type *types,
		      const union sh5_stream_value *values, size_t nf,
		      int64_t time_ns)
{
	char num[SH5_FMT_MAX + 1];
	size_t i, n, len = sh->plen, nput = 0;

	memcpy(out, sh->buf, sh->plen);
	if (task >= 0) {
		memcpy(out + len, ",task=", 6);
		len += 6;
		n = sh5_fmt_i64(num, task);
		memcpy(out + len, num, n);
		len += n;
	}
	for (i = 0; i < nf; i++) {
		if (types[i] == SH5_STREAM_U64) {
			if (values[i].u > (uint64_t)INT64_MAX)
				continue;
			n = sh5_fmt_u64(num, values[i].u);
			num[n++] = 'i';
		} else {
			if (!isfinite(values[i].d))
				continue;
			n = fmt_double(num, values[i].d);
		}
		out[len++] = nput ? ',' : ' ';
		memcpy(out + len, sh->buf + sh->koff[i], sh->klen[i]);
		len += sh->klen[i];
		memcpy(out + len, num, n);
		len += n;
		nput++;
	}
	if (nput == 0)
		return 0;
	out[len++] = ' ';
	n = sh5_fmt_i64(num, time_ns);
	memcpy(out + len, num, n);
	len += n;
	out[len++] = '\n';
	return len;
}

long sh5_stream_format_line(char *buf, size_t size, const char *series,
			    const struct sh5_stream_tags *tags, int task,
			    const char *const *names,
			    const enum sh5_stream_type *types,
			    const union sh5_stream_value *values,
			    size_t nfields, int64_t time_ns)
{
	struct lp_shape sh;
	char *line;
	size_t len;

	if (!buf || size == 0) {
		errno = ENOBUFS;
		return -1;
	}
	buf[0] = '\0';
	if (lp_shape_build(&sh, series, tags, names, nfields) < 0)
		return -1;
	line = malloc(lp_line_max(&sh, nfields));
	if (!line) {
		free(sh.buf);
		errno = ENOMEM;
		return -1;
	}
	len = lp_line(line, &sh, task < 0 ? -1 : task, types, values,
		      nfields, time_ns);
	free(sh.buf);
	if (len + 1 > size) {
		free(line);
		errno = ENOBUFS;
		return -1;
	}
	memcpy(buf, line, len);
	buf[len] = '\0';
	free(line);
	return (long)len;
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

void lp_shape_free(struct lp_shape *sh)
{
	if (sh)
		free(sh->buf);
	free(sh);
}

/* The line shape of schema sc, built at its first line (sender only). */
static const struct lp_shape *lp_shape_of(struct sh5_stream *s,
					  struct schema *sc)
{
	if (!sc->lp) {
		struct lp_shape *sh = calloc(1, sizeof(*sh));

		if (!sh)
			return NULL;
		if (lp_shape_build(sh, sc->series, &s->tags,
				   (const char *const *)sc->names,
				   sc->nf) < 0) {
			free(sh);
			return NULL;
		}
		sc->lp = sh;
	}
	return sc->lp;
}

/* Format samples batch[0..n) of the stream into b (appending). */
int format_lines(struct sh5_stream *s, const struct slot *batch,
		 size_t n, struct buf *b, uint64_t *nlines)
{
	uint64_t rejected = 0;
	size_t i, len;

	for (i = 0; i < n; i++) {
		const struct slot *sl = &batch[i];
		const struct lp_shape *sh =
			lp_shape_of(s, s->schemas[sl->schema]);

		if (!sh || buf_reserve(b, lp_line_max(sh, sl->nf)) < 0)
			break;
		len = lp_line(b->p + b->len, sh, sl->task,
			      s->schemas[sl->schema]->types, sl->v, sl->nf,
			      sl->time_ns);
		if (len == 0) {
			rejected++;
			continue;
		}
		b->len += len;
		b->p[b->len] = '\0';
		(*nlines)++;
	}
	if (rejected) {
		pthread_mutex_lock(&s->lock);
		s->st.rejected += rejected;
		pthread_mutex_unlock(&s->lock);
	}
	return i == n ? 0 : -1;
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

/* "a.b" into out (2 SH5_STREAM_MAX_NAME + 2 bytes; a and b are names,
 * at most SH5_STREAM_MAX_NAME bytes: create() and push() check them). */
static void join(char *out, const char *a, const char *b)
{
	size_t na = strnlen(a, SH5_STREAM_MAX_NAME),
	       nb = strnlen(b, SH5_STREAM_MAX_NAME);

	memcpy(out, a, na);
	out[na] = '.';
	memcpy(out + na + 1, b, nb);
	out[na + 1 + nb] = '\0';
}

/* The "counter_stats" array: one entry per counter of the first nsch
 * series that have samples; "stats": null where they overflowed. */
static void json_counter_stats(struct sh5_json *j, struct sh5_stream *s,
			       size_t nsch)
{
	char app[2 * SH5_STREAM_MAX_NAME + 2];
	char counter[2 * SH5_STREAM_MAX_NAME + 2];
	size_t i, k;

	join(app, s->job ? s->job : "", s->step ? s->step : "");
	sh5_json_key(j, "counter_stats");
	sh5_json_array_open(j);
	for (i = 0; i < nsch; i++) {
		struct schema *sc = s->schemas[i];

		if (!sc->nsamples)
			continue;
		for (k = 0; k < sc->nf; k++) {
			join(counter, sc->series, sc->names[k]);
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

/* A series' constant parts of its JSON samples, escaped as yajl escapes
 * names (they have no control characters, which sh5_stream_push refuses:
 * only '"' and '\\'). */
struct js_shape {
	char *buf; /* {"series":"<series>" then each "<name>": */
	size_t hlen;
	size_t koff[SH5_STREAM_MAX_FIELDS];
	size_t klen[SH5_STREAM_MAX_FIELDS];
};

static size_t put_json_str(char *out, const char *s)
{
	size_t len = 0;

	out[len++] = '"';
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			out[len++] = '\\';
		out[len++] = *s;
	}
	out[len++] = '"';
	return len;
}

void js_shape_free(struct js_shape *sh)
{
	if (sh)
		free(sh->buf);
	free(sh);
}

/* The JSON shape of schema sc, built at its first sample (sender
 * only). */
static const struct js_shape *js_shape_of(struct schema *sc)
{
	struct js_shape *sh;
	size_t i, len, size = 2 * strlen(sc->series) + 16;

	if (sc->js)
		return sc->js;
	for (i = 0; i < sc->nf; i++)
		size += 2 * strlen(sc->names[i]) + 3;
	sh = calloc(1, sizeof(*sh));
	if (!sh || !(sh->buf = malloc(size))) {
		free(sh);
		return NULL;
	}
	memcpy(sh->buf, "{\"series\":", 10);
	len = 10 + put_json_str(sh->buf + 10, sc->series);
	sh->hlen = len;
	for (i = 0; i < sc->nf; i++) {
		sh->koff[i] = len;
		len += put_json_str(sh->buf + len, sc->names[i]);
		sh->buf[len++] = ':';
		sh->klen[i] = len - sh->koff[i];
	}
	sc->js = sh;
	return sh;
}

/* Bytes one JSON sample of sh may take at most. */
static size_t js_sample_max(const struct js_shape *sh, size_t nf)
{
	size_t i, n = sh->hlen + 64 + 2 * SH5_FMT_MAX;

	for (i = 0; i < nf; i++)
		n += 1 + sh->klen[i] + 40;
	return n;
}

static size_t put_lit(char *out, const char *lit)
{
	size_t n = strlen(lit);

	memcpy(out, lit, n);
	return n;
}

/* One element of "samples" (what yajl writes for it) into out
 * (js_sample_max() bytes of room).  Returns its length. */
static size_t js_sample(char *out, const struct js_shape *sh,
			const struct schema *sc, const struct slot *sl)
{
	size_t k, len = sh->hlen;
	int n;

	memcpy(out, sh->buf, sh->hlen);
	if (sl->task >= 0) {
		len += put_lit(out + len, ",\"task\":");
		len += sh5_fmt_i64(out + len, sl->task);
	}
	len += put_lit(out + len, ",\"time_ns\":");
	len += sh5_fmt_i64(out + len, sl->time_ns);
	len += put_lit(out + len, ",\"fields\":{");
	for (k = 0; k < sl->nf; k++) {
		if (k)
			out[len++] = ',';
		memcpy(out + len, sh->buf + sh->koff[k], sh->klen[k]);
		len += sh->klen[k];
		if (sc->types[k] == SH5_STREAM_U64) {
			len += sh5_fmt_u64(out + len, sl->v[k].u);
		} else {
			n = sh5_json_format_double(out + len, 40, sl->v[k].d);
			len += n > 0 ? (size_t)n : put_lit(out + len, "null");
		}
	}
	out[len++] = '}';
	out[len++] = '}';
	return len;
}

/*
 * The batch's raw samples as the elements of the "samples" array, comma
 * separated, appended to b: the text yajl writes for them (no spaces,
 * the numbers as sh5_json_int/uint/double write them, non-finite doubles
 * null), but from each series' names escaped once.  0, or -1 (ENOMEM).
 */
static int json_samples(struct sh5_stream *s, const struct slot *batch,
			size_t n, struct buf *b)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct schema *sc = s->schemas[batch[i].schema];
		const struct js_shape *sh = js_shape_of(sc);

		if (!sh || buf_reserve(b, js_sample_max(sh, batch[i].nf) + 1) < 0)
			return -1;
		if (i)
			b->p[b->len++] = ',';
		b->len += js_sample(b->p + b->len, sh, sc, &batch[i]);
	}
	return 0;
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
	/* "samples" last: written empty by yajl, then filled in place */
	sh5_json_key(j, "samples");
	sh5_json_array_open(j);
	sh5_json_array_close(j);
	sh5_json_object_close(j);
	rc = sh5_json_finish(j, &err);
	sh5_json_destroy(j);
	if (rc < 0 || b->len < 2 || memcmp(b->p + b->len - 2, "]}", 2))
		return -1;
	b->len -= 2;
	if (json_samples(s, batch, n, b) < 0 || buf_append(b, "]}", 2) < 0)
		return -1;
	*nsamples += n;
	return 0;
}

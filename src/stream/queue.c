/* queue.c - the sample queue of a stream: push(), the series shapes,
 * counters, and batches taken out of it by the sender (see
 * stream_int.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stream/stream_int.h"

const size_t SH5_STREAM_SLOT_BYTES = sizeof(struct slot);

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

void schema_free(struct schema *sc)
{
	size_t i;

	if (!sc)
		return;
	for (i = 0; i < sc->nf; i++)
		free(sc->names[i]);
	free(sc->series);
	lp_shape_free(sc->lp);
	js_shape_free(sc->js);
	free(sc);
}

/* Names are 1..SH5_STREAM_MAX_NAME bytes without control characters. */
int name_ok(const char *s)
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
	/* empty: the next sample goes to the front again (the pages the
	 * queue uses stay those of its largest backlog, see create_queue) */
	if (s->count == 0)
		s->head = 0;
	s->flush_req = 0;
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* Take a batch and format it into b (emptied first).  Returns the number
 * of samples taken (0: queue empty), *nsent the number formatted. */
size_t form_batch(struct sh5_stream *s, struct buf *b, uint64_t *nsent,
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

/* trace_src.c - the hash map and the line source (trace_int.h) */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sync/trace_int.h"

/* ------------------------------------------------------------ hash map */

static uint64_t hmix(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t h = a * 0x9E3779B97F4A7C15ULL;

	h ^= (b + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
	h = (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ULL;
	h ^= (c + 0x94D049BB133111EBULL) * 0x165667B19E3779F9ULL;
	h ^= h >> 32;
	return h;
}

static int hmap_grow(struct hmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64, i, j;
	struct hslot *ns = malloc(ncap * sizeof(*ns));

	if (!ns)
		return -1;
	for (i = 0; i < ncap; i++)
		ns[i].val = SH5_TRACE_NONE;
	for (i = 0; i < m->cap; i++) {
		const struct hslot *o = &m->slot[i];

		if (o->val == SH5_TRACE_NONE)
			continue;
		j = hmix(o->a, o->b, o->c) & (ncap - 1);
		while (ns[j].val != SH5_TRACE_NONE)
			j = (j + 1) & (ncap - 1);
		ns[j] = *o;
	}
	free(m->slot);
	m->slot = ns;
	m->cap = ncap;
	return 0;
}

uint32_t trace_hmap_get(struct hmap *m, uint64_t a, uint64_t b,
			uint64_t c, uint32_t val_new)
{
	size_t j;

	if (m->cap) {
		j = hmix(a, b, c) & (m->cap - 1);
		while (m->slot[j].val != SH5_TRACE_NONE) {
			if (m->slot[j].a == a && m->slot[j].b == b &&
			    m->slot[j].c == c)
				return m->slot[j].val;
			j = (j + 1) & (m->cap - 1);
		}
	}
	if (val_new == SH5_TRACE_NONE)
		return SH5_TRACE_NONE;
	if ((m->n + 1) * 2 > m->cap && hmap_grow(m) < 0)
		return HMAP_NOMEM;
	j = hmix(a, b, c) & (m->cap - 1);
	while (m->slot[j].val != SH5_TRACE_NONE)
		j = (j + 1) & (m->cap - 1);
	m->slot[j].a = a;
	m->slot[j].b = b;
	m->slot[j].c = c;
	m->slot[j].val = val_new;
	m->n++;
	return val_new;
}

void trace_hmap_free(struct hmap *m)
{
	free(m->slot);
	memset(m, 0, sizeof(*m));
}

/* ---------------------------------------------------------- line source */

/* Returns 1 with a block, 0 at the end, -1 with errno set. */
int trace_csrc_next(struct csrc *s, const char **b, size_t *n,
		    int *virt)
{
	const char *q;
	ssize_t r;

	*virt = 0;
	if (s->fd < 0) {
		size_t lim, left = s->memlen - s->mempos;
		const char *p = s->mem + s->mempos;

		if (s->mempos >= s->memlen)
			return 0;
		lim = left < CSRC_CHUNK ? left : CSRC_CHUNK;
		q = memrchr(p, '\n', lim);
		if (!q && lim < left)
			q = memchr(p + lim, '\n', left - lim);
		if (q) {
			*b = p;
			*n = (size_t)(q + 1 - p);
			s->mempos += *n;
			return 1;
		}
		free(s->buf);
		s->buf = malloc(left + CSRC_SLACK);
		if (!s->buf)
			return -1;
		memcpy(s->buf, p, left);
		memset(s->buf + left, '\n', CSRC_SLACK);
		s->mempos = s->memlen;
		*b = s->buf;
		*n = left + 1;
		*virt = 1;
		return 1;
	}
	for (;;) {
		if (s->end > s->beg) {
			q = memrchr(s->buf + s->beg, '\n', s->end - s->beg);
			if (q) {
				*b = s->buf + s->beg;
				*n = (size_t)(q + 1 - *b);
				s->beg += *n;
				return 1;
			}
		}
		if (s->eof) {
			if (s->beg == s->end)
				return 0;
			/* the slack holds the added '\n' */
			s->buf[s->end] = '\n';
			*b = s->buf + s->beg;
			*n = s->end - s->beg + 1;
			s->beg = s->end;
			*virt = 1;
			return 1;
		}
		if (s->beg > 0) {
			memmove(s->buf, s->buf + s->beg, s->end - s->beg);
			s->end -= s->beg;
			s->beg = 0;
		}
		if (s->end == s->cap) {
			char *nb = realloc(s->buf, s->cap * 2 + CSRC_SLACK);

			if (!nb)
				return -1;
			s->buf = nb;
			s->cap *= 2;
		}
		r = read(s->fd, s->buf + s->end, s->cap - s->end);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			s->eof = 1;
		s->end += (size_t)r;
	}
}

/* A source reading the file at path (opened here) in blocks of up to
 * chunk bytes. */
int trace_csrc_open(struct csrc *s, const char *path, size_t chunk)
{
	memset(s, 0, sizeof(*s));
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		return -1;
	s->cap = chunk;
	s->buf = malloc(s->cap + CSRC_SLACK);
	if (!s->buf) {
		close(s->fd);
		s->fd = -1;
		return -1;
	}
	memset(s->buf + s->cap, 0, CSRC_SLACK);
	return 0;
}

void trace_csrc_mem(struct csrc *s, const char *buf, size_t len)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->mem = buf;
	s->memlen = len;
}

/* Closes the file (when any); keeps errno. */
void trace_csrc_close(struct csrc *s)
{
	int saved = errno;

	if (s->fd >= 0)
		close(s->fd);
	free(s->buf);
	s->fd = -1;
	s->buf = NULL;
	errno = saved;
}

/* trace.c - see trace.h */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "sync/trace.h"
#include "common/outfile.h"

/* ------------------------------------------------------------ hash map */

/* Open addressing map from a key of three 64-bit words to a uint32; key
 * and value in one slot (one cache line per probe). */
struct hslot {
	uint64_t a, b, c;
	uint32_t val;	/* SH5_TRACE_NONE: empty slot */
};

struct hmap {
	struct hslot *slot;
	size_t cap;	/* power of two */
	size_t n;
};

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

/* Find key; if absent and val_new != NONE, insert it with val_new.
 * Returns the value, NONE when absent (and not inserted), or HMAP_NOMEM
 * on memory error. */
#define HMAP_NOMEM (UINT32_MAX - 1)
static uint32_t trace_hmap_get(struct hmap *m, uint64_t a, uint64_t b,
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

static void trace_hmap_free(struct hmap *m)
{
	free(m->slot);
	memset(m, 0, sizeof(*m));
}

/* ---------------------------------------------------------- line source */

/*
 * Whole lines in blocks, from a file descriptor (a large read buffer) or
 * from memory: every block ends in '\n', so a caller can walk a block's
 * lines without bounds checks other than "stop at '\n'".  A final line
 * without a '\n' is handed out as a block of its own with a '\n' added
 * (*virt = 1).  The fd buffer keeps SLACK readable bytes after the data,
 * so a caller may read a few bytes past the end of a block (never use
 * them).
 */
#define CSRC_CHUNK (256u << 10)
#define CSRC_SLACK 64

struct csrc {
	int fd;			/* -1: memory */
	const char *mem;
	size_t memlen, mempos;
	char *buf;		/* fd: cap + CSRC_SLACK bytes; memory: the
				 * final line plus '\n' */
	size_t cap, beg, end;
	int eof;
};

/* Returns 1 with a block, 0 at the end, -1 with errno set. */
static int trace_csrc_next(struct csrc *s, const char **b, size_t *n,
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

/* A source reading the file at path (opened here). */
static int trace_csrc_open(struct csrc *s, const char *path)
{
	memset(s, 0, sizeof(*s));
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		return -1;
	s->cap = CSRC_CHUNK;
	s->buf = malloc(s->cap + CSRC_SLACK);
	if (!s->buf) {
		close(s->fd);
		s->fd = -1;
		return -1;
	}
	memset(s->buf + s->cap, 0, CSRC_SLACK);
	return 0;
}

static void trace_csrc_mem(struct csrc *s, const char *buf, size_t len)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->mem = buf;
	s->memlen = len;
}

/* Closes the file (when any); keeps errno. */
static void trace_csrc_close(struct csrc *s)
{
	int saved = errno;

	if (s->fd >= 0)
		close(s->fd);
	free(s->buf);
	s->fd = -1;
	s->buf = NULL;
	errno = saved;
}

/* ------------------------------------------------------------- helpers */

static const char *const trace_op_names[SH5_OP_COUNT] = {
	"?", "BARRIER", "BCAST", "SCATTER", "GATHER", "REDUCE", "ALLREDUCE",
	"ALLGATHER", "ALLTOALL", "REDUCE_SCATTER", "SCAN", "EXSCAN",
};

const char *sh5_trace_op_name(unsigned op)
{
	return op < SH5_OP_COUNT ? trace_op_names[op] : "?";
}

enum sh5_coll_class sh5_trace_op_class(unsigned op)
{
	switch (op) {
	case SH5_OP_BCAST:
	case SH5_OP_SCATTER:
		return SH5_COLL_1TON;
	case SH5_OP_GATHER:
	case SH5_OP_REDUCE:
		return SH5_COLL_NTO1;
	case SH5_OP_SCAN:
		return SH5_COLL_SCAN;
	case SH5_OP_EXSCAN:
		return SH5_COLL_EXSCAN;
	default:
		return SH5_COLL_NTON;
	}
}

/* Rooted: 1-to-N or N-to-1 (a table: called once per collective line). */
static inline int op_rooted(unsigned op)
{
	static const uint8_t rooted[SH5_OP_COUNT] = {
		[SH5_OP_BCAST] = 1, [SH5_OP_SCATTER] = 1,
		[SH5_OP_GATHER] = 1, [SH5_OP_REDUCE] = 1,
	};

	return op < SH5_OP_COUNT && rooted[op];
}

static unsigned op_lookup(const char *s, size_t len)
{
	unsigned op;

	/* by length and first letter, then one compare */
	switch (len) {
	case 4:
		op = SH5_OP_SCAN;
		break;
	case 5:
		op = SH5_OP_BCAST;
		break;
	case 6:
		op = s[0] == 'G' ? SH5_OP_GATHER : s[0] == 'R' ?
		     SH5_OP_REDUCE : SH5_OP_EXSCAN;
		break;
	case 7:
		op = s[0] == 'B' ? SH5_OP_BARRIER : SH5_OP_SCATTER;
		break;
	case 8:
		op = SH5_OP_ALLTOALL;
		break;
	case 9:
		op = s[3] == 'R' ? SH5_OP_ALLREDUCE : SH5_OP_ALLGATHER;
		break;
	case 14:
		op = SH5_OP_REDUCE_SCATTER;
		break;
	default:
		return SH5_OP_NONE;
	}
	return memcmp(trace_op_names[op], s, len) ? SH5_OP_NONE : op;
}

void sh5_trace_problem_add(struct sh5_trace *t, uint32_t line,
			   const char *fmt, ...)
{
	va_list ap;

	if (t->nproblems < SH5_TRACE_MAX_PROBLEMS) {
		struct sh5_trace_problem *p = &t->problem[t->nproblems];

		p->line = line;
		va_start(ap, fmt);
		vsnprintf(p->text, sizeof(p->text), fmt, ap);
		va_end(ap);
	}
	t->nproblems++;
}

uint32_t sh5_trace_line(const struct sh5_trace *t, size_t e)
{
	size_t lo = 0, hi = t->nother, mid;

	/* other[j] - 1 - j events come before other line j: count the
	 * other lines with at most e events before them */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->other[mid] - 1 - mid <= e)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint32_t)(e + 1 + lo);
}

/* Eight ASCII digits at s to their value (SWAR); -1 if any is not a
 * digit. */
static int digits8(const char *s, uint64_t *out)
{
	uint64_t v, d;

	memcpy(&v, s, 8);
	d = v - 0x3030303030303030ULL;
	if ((v & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL ||
	    ((d + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL))
		return -1;
	/* little-endian: the first digit is the lowest byte */
	d = d * 10 + (d >> 8);
	d = (((d & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
	     (((d >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32))))
	    >> 32;
	*out = d;
	return 0;
}

/* Parse a decimal int64 (optional '-').  0 ok, -1 bad or empty. */
static int parse_i64(const char *s, size_t len, int64_t *out)
{
	uint64_t v = 0, lim, d8;
	int neg = 0;
	size_t i = 0;

	if (len && s[0] == '-') {
		neg = 1;
		i = 1;
	}
	if (i == len || len - i > 19)
		return -1;
	/* At most 19 digits: no uint64 overflow. */
	while (len - i >= 8) {
		if (digits8(s + i, &d8) < 0)
			return -1;
		v = v * 100000000u + d8;
		i += 8;
	}
	for (; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9)
			return -1;
		v = v * 10 + d;
	}
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	if (v > lim)
		return -1;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elsz)
{
	size_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return p;
	while (ncap < need)
		ncap *= 2;
	np = realloc(p, ncap * elsz);
	if (!np)
		return NULL;
	*cap = ncap;
	return np;
}

/* --------------------------------------------------------------- parse */

struct offrec {
	int64_t local, offset;
	uint32_t loc, line;
};

struct chan {
	int64_t tag, comm;
	uint32_t src, dst;
};

struct locstate {
	int64_t last;
	uint32_t count;		/* events */
	uint32_t open;		/* open CBEGIN event, or NONE */
	uint8_t has_time;
	uint8_t has_line;	/* an event or OFFSET line */
};

#define LOC_DIRECT 65536

struct parser {
	uint32_t *locdirect;	/* [LOC_DIRECT] */
	struct sh5_trace *t;
	const char *name;
	size_t evcap, loccap, offcap, chancap, commcap, cmemcap;
	struct locstate *ls;
	struct offrec *offs;
	struct chan *chans;
	size_t nchan;
	uint32_t *p2p;		/* SEND and RECV events, file order */
	size_t np2p, p2pcap;
	uint32_t *cbl;		/* CBEGIN events, file order */
	size_t ncb, cbcap;
	size_t ncmem;
	struct hmap locmap, commmap, chanmap, nodemap, rankmap;
	int seen_data;
	int64_t lastcomm;	/* one-entry cache of commmap */
	uint32_t lastcomm_idx;
	int comm0;		/* comm index of communicator 0, or -1 */
	int comm0_declared;
	size_t nnode_named;
	uint32_t *loc_node_named;	/* per location, NONE if no #node */
	size_t lncap;
	size_t othercap;		/* of t->other */
};

#define NOMEM(p) do { errno = ENOMEM; goto nomem; } while (0)

/* loc_index() of a location not in the direct table. */
static uint32_t trace_loc_index_slow(struct parser *p, int64_t id)
{
	struct sh5_trace *t = p->t;
	uint32_t v;

	v = trace_hmap_get(&p->locmap, (uint64_t)id, 0, 0, (uint32_t)t->nloc);
	if (v != HMAP_NOMEM && id >= 0 && id < LOC_DIRECT)
		p->locdirect[id] = v;

	if (v == HMAP_NOMEM)
		return SH5_TRACE_NONE;
	if (v == t->nloc) {
		size_t c1 = p->loccap, c2 = p->loccap, c3 = p->lncap;
		int64_t *ids = grow(t->loc_id, &c1, t->nloc + 1, sizeof(*ids));

		if (!ids)
			return SH5_TRACE_NONE;
		t->loc_id = ids;
		struct locstate *ls = grow(p->ls, &c2, t->nloc + 1,
					   sizeof(*ls));
		if (!ls)
			return SH5_TRACE_NONE;
		p->ls = ls;
		uint32_t *ln = grow(p->loc_node_named, &c3, t->nloc + 1,
				    sizeof(*ln));
		if (!ln)
			return SH5_TRACE_NONE;
		p->loc_node_named = ln;
		p->loccap = c1;
		p->lncap = c3;
		ids[t->nloc] = id;
		memset(&ls[t->nloc], 0, sizeof(*ls));
		ls[t->nloc].open = SH5_TRACE_NONE;
		ln[t->nloc] = SH5_TRACE_NONE;
		t->nloc++;
	}
	return v;
}

/* Location index of number id (created when new); NONE on memory error. */
static inline uint32_t loc_index(struct parser *p, int64_t id)
{
	/* Small location numbers: a direct table in front of the map. */
	if (id >= 0 && id < LOC_DIRECT && p->locdirect[id] != SH5_TRACE_NONE)
		return p->locdirect[id];
	return trace_loc_index_slow(p, id);
}

static int trace_comm_add(struct parser *p, int64_t id, uint32_t *idx)
{
	struct sh5_trace *t = p->t;
	size_t c = p->commcap;
	uint32_t v = trace_hmap_get(&p->commmap, (uint64_t)id, 0, 0,
				    (uint32_t)t->ncomm);

	if (v == HMAP_NOMEM)
		return -1;
	if (v == t->ncomm) {
		/* Both arrays grow at the same need (ncomm + 2), so that the
		 * one capacity kept describes both. */
		int64_t *ids = grow(t->comm_id, &c, t->ncomm + 2,
				    sizeof(*ids));
		if (!ids)
			return -1;
		t->comm_id = ids;
		c = p->commcap;
		uint32_t *cf = grow(t->comm_first, &c, t->ncomm + 2,
				    sizeof(*cf));
		if (!cf)
			return -1;
		t->comm_first = cf;
		p->commcap = c;
		ids[t->ncomm] = id;
		cf[t->ncomm] = (uint32_t)p->ncmem;
		cf[t->ncomm + 1] = (uint32_t)p->ncmem;
		t->ncomm++;
	}
	*idx = v;
	return 0;
}

/* Split on ASCII blanks. */
static size_t split_ws(const char *s, size_t len, const char **tok,
		       size_t *tlen, size_t max)
{
	size_t n = 0, i = 0;

	while (i < len) {
		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (i == len)
			break;
		if (n == max)
			return max + 1;
		tok[n] = s + i;
		while (i < len && s[i] != ' ' && s[i] != '\t')
			i++;
		tlen[n] = (size_t)(s + i - tok[n]);
		n++;
	}
	return n;
}

static int word_is(const char *s, size_t len, const char *w)
{
	size_t wl = strlen(w);

	return len >= wl && !memcmp(s, w, wl) &&
	       (len == wl || s[wl] == ' ' || s[wl] == '\t');
}

/* A directive line (#comm, #node, #mu, #mu-intra).  Returns 0, 1 when the
 * line is an ordinary comment, -1 on memory error. */
static int parse_directive(struct parser *p, const char *s, size_t len,
			   uint32_t line)
{
	struct sh5_trace *t = p->t;
	const char *tok[4];
	size_t tl[4], n;
	int64_t v;

	if (word_is(s, len, "#mu") || word_is(s, len, "#mu-intra")) {
		int intra = word_is(s, len, "#mu-intra");

		if (p->seen_data) {
			sh5_trace_problem_add(t, line, "directive after the "
					      "first data line");
			return 0;
		}
		n = split_ws(s, len, tok, tl, 4);
		if (n != 2 || parse_i64(tok[1], tl[1], &v) < 0 || v < 0) {
			sh5_trace_problem_add(t, line, "malformed %s "
					      "directive (want one integer "
					      ">= 0)", intra ? "#mu-intra" :
					      "#mu");
			return 0;
		}
		if (intra)
			t->mu_intra = v;
		else
			t->mu_inter = v;
		return 0;
	}
	if (!word_is(s, len, "#comm") && !word_is(s, len, "#node"))
		return 1;
	if (p->seen_data) {
		sh5_trace_problem_add(t, line,
				      "directive after the first data line");
		return 0;
	}
	/* Long member lists: walk tokens without a fixed limit. */
	{
		int is_comm = word_is(s, len, "#comm");
		size_t pos = 5, k = 0;
		uint32_t cidx = 0, nidx = 0;
		int64_t cid = 0;

		while (pos < len) {
			size_t b, e;
			int64_t lid;
			uint32_t li;

			while (pos < len && (s[pos] == ' ' || s[pos] == '\t'))
				pos++;
			if (pos == len)
				break;
			b = pos;
			while (pos < len && s[pos] != ' ' && s[pos] != '\t')
				pos++;
			e = pos;
			if (k == 0) {
				if (is_comm) {
					if (parse_i64(s + b, e - b, &cid) < 0) {
						sh5_trace_problem_add(t, line,
							"malformed #comm: bad "
							"communicator id");
						return 0;
					}
					if (trace_hmap_get(&p->commmap,
							   (uint64_t)cid, 0, 0,
							   SH5_TRACE_NONE) !=
					    SH5_TRACE_NONE) {
						sh5_trace_problem_add(t, line,
							"communicator %lld "
							"declared twice",
							(long long)cid);
						return 0;
					}
					if (trace_comm_add(p, cid, &cidx) < 0)
						return -1;
					if (cid == 0) {
						p->comm0 = (int)cidx;
						p->comm0_declared = 1;
					}
				} else {
					uint64_t h = 1469598103934665603ULL;
					size_t q;

					for (q = b; q < e; q++)
						h = (h ^ (unsigned char)s[q]) *
						    1099511628211ULL;
					nidx = trace_hmap_get(&p->nodemap, h,
						e - b, 0,
						(uint32_t)p->nnode_named);
					if (nidx == HMAP_NOMEM)
						return -1;
					if (nidx == p->nnode_named)
						p->nnode_named++;
				}
				k++;
				continue;
			}
			if (parse_i64(s + b, e - b, &lid) < 0 || lid < 0) {
				sh5_trace_problem_add(t, line, "malformed %s: "
						      "bad location '%.*s'",
						      is_comm ? "#comm" :
						      "#node", (int)(e - b),
						      s + b);
				return 0;
			}
			li = loc_index(p, lid);
			if (li == SH5_TRACE_NONE)
				return -1;
			if (is_comm) {
				uint32_t r = trace_hmap_get(&p->rankmap, cidx,
					li, 0,
					(uint32_t)(p->ncmem -
						   t->comm_first[cidx]));
				if (r == HMAP_NOMEM)
					return -1;
				if (r != p->ncmem - t->comm_first[cidx]) {
					sh5_trace_problem_add(t, line,
						"location %lld listed twice in "
						"communicator %lld",
						(long long)lid,
						(long long)cid);
					continue;
				}
				size_t c = p->cmemcap;
				uint32_t *m = grow(t->comm_members, &c,
						   p->ncmem + 1, sizeof(*m));
				if (!m)
					return -1;
				t->comm_members = m;
				p->cmemcap = c;
				m[p->ncmem++] = li;
				t->comm_first[cidx + 1] = (uint32_t)p->ncmem;
			} else {
				if (p->loc_node_named[li] != SH5_TRACE_NONE &&
				    p->loc_node_named[li] != nidx) {
					sh5_trace_problem_add(t, line,
						"location %lld is on two nodes",
						(long long)lid);
					continue;
				}
				p->loc_node_named[li] = nidx;
			}
			k++;
		}
		if (k == 0)
			sh5_trace_problem_add(t, line, "malformed %s directive",
					      is_comm ? "#comm" : "#node");
	}
	return 0;
}

/* The fields of one valid data line. */
struct rec {
	int64_t lid, tm, peer, tag, comm, root;
	unsigned kind, op;
	int is_offset;
};

static inline int add_event(struct parser *p, const struct rec *r,
			    uint32_t line) __attribute__((always_inline));

/* Parse one data line.  Returns 1 with its fields in *r (the caller adds
 * the event), 0 when it is not valid (problem recorded). */
static int parse_data(struct parser *p, const char *s, size_t len,
		      uint32_t line, struct rec *r)
{
	struct sh5_trace *t = p->t;
	const char *f[8];
	size_t fl[8], nf = 0, i;
	int64_t lid, tm, peer = 0, tag = 0, comm = 0, root = 0, bytes;
	unsigned kind, op = 0;
	int is_offset = 0;

	/* Find the commas eight bytes at a time (exact per-byte test). */
	f[0] = s;
	nf = 1;
	for (i = 0; i + 8 <= len && nf <= 8; i += 8) {
		uint64_t v, x, m;

		memcpy(&v, s + i, 8);
		x = v ^ 0x2C2C2C2C2C2C2C2CULL;
		m = ~(((x & 0x7F7F7F7F7F7F7F7FULL) + 0x7F7F7F7F7F7F7F7FULL) |
		      x) & 0x8080808080808080ULL;
		while (m && nf <= 8) {
			size_t c = i + ((size_t)__builtin_ctzll(m) >> 3);

			if (nf == 8) {
				nf = 9;
				break;
			}
			fl[nf - 1] = (size_t)(s + c - f[nf - 1]);
			f[nf++] = s + c + 1;
			m &= m - 1;
		}
	}
	for (; i < len && nf <= 8; i++) {
		if (s[i] != ',')
			continue;
		if (nf == 8) {
			nf = 9;
			break;
		}
		fl[nf - 1] = (size_t)(s + i - f[nf - 1]);
		f[nf++] = s + i + 1;
	}
	if (nf <= 8)
		fl[nf - 1] = (size_t)(s + len - f[nf - 1]);
	if (nf != 8) {
		sh5_trace_problem_add(t, line, "malformed line: want 8 "
				      "comma-separated fields, got %s%zu",
				      nf > 8 ? "more than " : "",
				      nf > 8 ? (size_t)8 : nf);
		return 0;
	}
	if (parse_i64(f[0], fl[0], &lid) < 0 || lid < 0) {
		sh5_trace_problem_add(t, line, "malformed line: bad location "
				      "'%.*s'", (int)fl[0], f[0]);
		return 0;
	}
	if (parse_i64(f[1], fl[1], &tm) < 0) {
		sh5_trace_problem_add(t, line, "malformed line: bad time "
				      "'%.*s'", (int)fl[1], f[1]);
		return 0;
	}
#define KIND_IS(w) (fl[2] == sizeof(w) - 1 && !memcmp(f[2], w, fl[2]))
	if (KIND_IS("INT"))
		kind = SH5_EV_INT;
	else if (KIND_IS("SEND"))
		kind = SH5_EV_SEND;
	else if (KIND_IS("RECV"))
		kind = SH5_EV_RECV;
	else if (KIND_IS("CBEGIN"))
		kind = SH5_EV_CBEGIN;
	else if (KIND_IS("CEND"))
		kind = SH5_EV_CEND;
	else if (KIND_IS("OFFSET")) {
		kind = SH5_EV_INT;
		is_offset = 1;
	} else {
		sh5_trace_problem_add(t, line, "unknown kind '%.*s'",
				      (int)(fl[2] > 40 ? 40 : fl[2]), f[2]);
		return 0;
	}
#undef KIND_IS
	if (fl[7] && parse_i64(f[7], fl[7], &bytes) < 0) {
		sh5_trace_problem_add(t, line, "malformed line: bad bytes "
				      "'%.*s'", (int)fl[7], f[7]);
		return 0;
	}
	if (is_offset) {
		if (parse_i64(f[3], fl[3], &peer) < 0 ||
		    parse_i64(f[4], fl[4], &tag) < 0 || tag < 0 || fl[5] ||
		    fl[6] || fl[7]) {
			sh5_trace_problem_add(t, line, "malformed OFFSET line "
					      "(want loc,time,OFFSET,offset,"
					      "rtt,,,)");
			return 0;
		}
	} else if (kind == SH5_EV_INT) {
		if (fl[3] || fl[4] || fl[5] || fl[6] || fl[7]) {
			sh5_trace_problem_add(t, line, "malformed INT line: "
					      "fields after the kind must be "
					      "empty");
			return 0;
		}
	} else if (kind == SH5_EV_SEND || kind == SH5_EV_RECV) {
		if (parse_i64(f[3], fl[3], &peer) < 0 || peer < 0 ||
		    parse_i64(f[4], fl[4], &tag) < 0 ||
		    parse_i64(f[5], fl[5], &comm) < 0 || fl[6]) {
			sh5_trace_problem_add(t, line, "malformed %s line "
					      "(want peer,tag,comm and an "
					      "empty root)", kind ==
					      SH5_EV_SEND ? "SEND" : "RECV");
			return 0;
		}
	} else {
		op = op_lookup(f[3], fl[3]);
		if (op == SH5_OP_NONE) {
			sh5_trace_problem_add(t, line, "unknown collective "
					      "operation '%.*s'",
					      (int)(fl[3] > 40 ? 40 : fl[3]),
					      f[3]);
			return 0;
		}
		if (parse_i64(f[5], fl[5], &comm) < 0) {
			sh5_trace_problem_add(t, line, "malformed %s line: "
					      "bad communicator", kind ==
					      SH5_EV_CBEGIN ? "CBEGIN" :
					      "CEND");
			return 0;
		}
		if (op_rooted(op)) {
			if (parse_i64(f[6], fl[6], &root) < 0 || root < 0) {
				sh5_trace_problem_add(t, line, "malformed "
						      "line: %s needs a root "
						      "location",
						      trace_op_names[op]);
				return 0;
			}
		} else if (fl[6]) {
			sh5_trace_problem_add(t, line, "malformed line: %s "
					      "takes no root",
					      trace_op_names[op]);
			return 0;
		}
		if (fl[4]) {
			sh5_trace_problem_add(t, line, "malformed line: "
					      "collectives take no tag");
			return 0;
		}
	}

	r->lid = lid;
	r->tm = tm;
	r->peer = peer;
	r->tag = tag;
	r->comm = comm;
	r->root = root;
	r->kind = kind;
	r->op = op;
	r->is_offset = is_offset;
	return 1;
}

/* Add the event (or OFFSET measurement) of a valid data line.  Returns 0
 * (added, or problem recorded), -1 on memory error. */
static inline int add_event(struct parser *p, const struct rec *r,
			    uint32_t line)
{
	struct sh5_trace *t = p->t;
	int64_t lid = r->lid, tm = r->tm, peer = r->peer, tag = r->tag;
	int64_t comm = r->comm, root = r->root;
	unsigned kind = r->kind, op = r->op;
	int is_offset = r->is_offset;
	struct sh5_trace_event *e;
	uint32_t li;
	size_t b;

	p->seen_data = 1;
	li = loc_index(p, lid);
	if (li == SH5_TRACE_NONE)
		return -1;
	p->ls[li].has_line = 1;
	if (p->ls[li].has_time && tm < p->ls[li].last) {
		if (is_offset) {
			sh5_trace_problem_add(t, line, "time goes backwards at "
					      "location %lld (%lld after "
					      "%lld); OFFSET line ignored",
					      (long long)lid, (long long)tm,
					      (long long)p->ls[li].last);
			return 0;
		}
		sh5_trace_problem_add(t, line, "time goes backwards at "
				      "location %lld (%lld after %lld)",
				      (long long)lid, (long long)tm,
				      (long long)p->ls[li].last);
		tm = p->ls[li].last;
		b = SH5_EVF_CLAMPED;
	} else {
		b = 0;
	}
	p->ls[li].last = tm;
	p->ls[li].has_time = 1;

	if (is_offset) {
		struct offrec *o = grow(p->offs, &p->offcap, t->noff + 1,
					sizeof(*o));
		if (!o)
			return -1;
		p->offs = o;
		o[t->noff].local = tm;
		o[t->noff].offset = peer;
		o[t->noff].loc = li;
		o[t->noff].line = line;
		t->noff++;
		return 0;
	}

	if (t->nev >= UINT32_MAX - 2) {
		errno = EFBIG;
		return -1;
	}
	if (t->nev == p->evcap) {
		size_t c = p->evcap;
		void *ne = grow(t->ev, &c, t->nev + 1, sizeof(*t->ev));

		if (!ne)
			return -1;
		t->ev = ne;
		c = p->evcap;
		void *nt = grow(t->time, &c, t->nev + 1, sizeof(*t->time));
		if (!nt)
			return -1;
		t->time = nt;
		c = p->evcap;
		nt = grow(t->loc, &c, t->nev + 1, sizeof(*t->loc));
		if (!nt)
			return -1;
		t->loc = nt;
		p->evcap = c;
	}
	e = &t->ev[t->nev];
	t->loc[t->nev] = li;
	e->link = SH5_TRACE_NONE;
	e->ref = SH5_TRACE_NONE;
	e->aux = SH5_TRACE_NONE;
	e->kind = (uint8_t)kind;
	e->op = (uint8_t)op;
	e->flags = (uint16_t)b;
	t->time[t->nev] = tm;
	p->ls[li].count++;
	if (kind == SH5_EV_SEND || kind == SH5_EV_RECV) {
		uint32_t *l2 = p->np2p < p->p2pcap ? p->p2p :
			       grow(p->p2p, &p->p2pcap, p->np2p + 1,
				    sizeof(*l2));
		if (!l2)
			return -1;
		p->p2p = l2;
		l2[p->np2p++] = (uint32_t)t->nev;
	} else if (kind == SH5_EV_CBEGIN) {
		uint32_t *l2 = p->ncb < p->cbcap ? p->cbl :
			       grow(p->cbl, &p->cbcap, p->ncb + 1,
				    sizeof(*l2));
		if (!l2)
			return -1;
		p->cbl = l2;
		l2[p->ncb++] = (uint32_t)t->nev;
	}

	if (kind == SH5_EV_SEND || kind == SH5_EV_RECV) {
		uint32_t pi = loc_index(p, peer), src, dst, c;

		if (pi == SH5_TRACE_NONE)
			return -1;
		e->aux = pi;
		src = kind == SH5_EV_SEND ? li : pi;
		dst = kind == SH5_EV_SEND ? pi : li;
		c = trace_hmap_get(&p->chanmap, ((uint64_t)src << 32) | dst,
				   (uint64_t)tag, (uint64_t)comm,
				   (uint32_t)p->nchan);
		if (c == HMAP_NOMEM)
			return -1;
		if (c == p->nchan) {
			struct chan *ch = grow(p->chans, &p->chancap,
					       p->nchan + 1, sizeof(*ch));
			if (!ch)
				return -1;
			p->chans = ch;
			ch[c].src = src;
			ch[c].dst = dst;
			ch[c].tag = tag;
			ch[c].comm = comm;
			p->nchan++;
		}
		e->ref = c;
	} else if (kind == SH5_EV_CBEGIN || kind == SH5_EV_CEND) {
		uint32_t cidx = p->lastcomm_idx != SH5_TRACE_NONE &&
				p->lastcomm == comm ? p->lastcomm_idx :
				trace_hmap_get(&p->commmap, (uint64_t)comm,
					       0, 0, SH5_TRACE_NONE);
		if (cidx == SH5_TRACE_NONE && comm == 0) {
			if (trace_comm_add(p, 0, &cidx) < 0)
				return -1;
			p->comm0 = (int)cidx;
		}
		if (cidx != SH5_TRACE_NONE) {
			p->lastcomm = comm;
			p->lastcomm_idx = cidx;
		}
		if (op_rooted(op)) {
			e->aux = loc_index(p, root);
			if (e->aux == SH5_TRACE_NONE)
				return -1;
		}
		e->ref = cidx;	/* comm index until assembly */
		if (cidx == SH5_TRACE_NONE) {
			sh5_trace_problem_add(t, line, "collective on "
					      "undeclared communicator %lld",
					      (long long)comm);
			e->flags |= SH5_EVF_FREE;
		}
		if (kind == SH5_EV_CBEGIN) {
			if (p->ls[li].open != SH5_TRACE_NONE) {
				struct sh5_trace_event *o =
					&t->ev[p->ls[li].open];
				sh5_trace_problem_add(t, line, "CBEGIN at "
					"location %lld before the CEND of the "
					"collective begun at line %u",
					(long long)lid,
					sh5_trace_line(t, p->ls[li].open));
				o->flags |= SH5_EVF_FREE;
			}
			p->ls[li].open = (uint32_t)t->nev;
		} else {
			uint32_t bi = p->ls[li].open;
			struct sh5_trace_event *o;

			p->ls[li].open = SH5_TRACE_NONE;
			if (bi == SH5_TRACE_NONE) {
				sh5_trace_problem_add(t, line, "CEND at "
					"location %lld without a CBEGIN",
					(long long)lid);
				e->flags |= SH5_EVF_FREE;
			} else {
				o = &t->ev[bi];
				if (o->op != e->op || o->ref != e->ref ||
				    o->aux != e->aux) {
					sh5_trace_problem_add(t, line,
						"CEND does not repeat the "
						"operation, communicator and "
						"root of its CBEGIN (line %u)",
						sh5_trace_line(t, bi));
					o->flags |= SH5_EVF_FREE;
					e->flags |= SH5_EVF_FREE;
				} else {
					o->link = (uint32_t)t->nev;
					e->link = bi;
					if (o->flags & SH5_EVF_FREE)
						e->flags |= SH5_EVF_FREE;
				}
			}
			if (e->flags & SH5_EVF_FREE)
				e->ref = SH5_TRACE_NONE;
		}
	}
	t->nev++;
	return 0;
}

/* --------------------------------------------------- fast line parsing */

/*
 * The common shapes of data lines, parsed in one pass over the bytes
 * (the line is known to end in '\n').  Each helper returns the position
 * after the field's terminator, or NULL when the line is not of the
 * simple shape; the caller then hands the line to parse_data(), which
 * accepts the same lines with the same values and reports problems.
 */

/* Decimal digits of at most 19 characters, within int64 (negative when
 * neg is set), then term. */
static inline const char *fld_digits(const char *q, uint64_t v, unsigned n,
				     int neg, char term, int64_t *out)
{
	unsigned d;

	while ((d = (unsigned char)*q - '0') <= 9) {
		if (++n > 19)
			return NULL;
		v = v * 10 + d;
		q++;
	}
	if (n == 0 || *q != term ||
	    v > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
		return NULL;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return q + 1;
}

/* Integer field (optional '-' when signed_ok). */
static inline const char *fld_int(const char *q, int signed_ok, char term,
				  int64_t *out)
{
	int neg = signed_ok && *q == '-';
	unsigned d0 = (unsigned char)q[0] - '0', d1;

	/* one or two digits: most fields */
	if (d0 <= 9) {
		if (q[1] == term) {
			*out = d0;
			return q + 2;
		}
		d1 = (unsigned char)q[1] - '0';
		if (d1 <= 9 && q[2] == term) {
			*out = d0 * 10 + d1;
			return q + 3;
		}
	}
	return fld_digits(q + neg, 0, 0, neg, term, out);
}

/* The time: usually 19 digits, eight at a time while at least eight bytes
 * of the block are left. */
static inline const char *fld_time(const char *q, const char *end,
				   int64_t *out)
{
	int neg = *q == '-';
	uint64_t v = 0, d8;
	unsigned n = 0;

	q += neg;
	while (n < 16 && end - q >= 8 && digits8(q, &d8) == 0) {
		v = v * 100000000u + d8;
		q += 8;
		n += 8;
	}
	return fld_digits(q, v, n, neg, ',', out);
}

/* The bytes field (empty, or digits) and the end of the line. */
static inline const char *fld_bytes_eol(const char *q)
{
	unsigned n = 0;

	while ((unsigned)((unsigned char)*q - '0') <= 9) {
		if (++n > 18)
			return NULL;
		q++;
	}
	return *q == '\n' ? q + 1 : NULL;
}

/* The operation name at q (at least 16 bytes of the block left) if a
 * ',' follows it: its length in *len.  SH5_OP_NONE otherwise. */
static inline unsigned op_at(const char *q, size_t *len)
{
#define OP_IS(name, op) (!memcmp(q, name ",", sizeof(name)) ? \
			 (*len = sizeof(name) - 1, (op)) : SH5_OP_NONE)
	switch (q[0]) {
	case 'A':
		return q[3] == 'R' ? OP_IS("ALLREDUCE", SH5_OP_ALLREDUCE) :
		       q[3] == 'G' ? OP_IS("ALLGATHER", SH5_OP_ALLGATHER) :
		       OP_IS("ALLTOALL", SH5_OP_ALLTOALL);
	case 'B':
		return q[1] == 'A' ? OP_IS("BARRIER", SH5_OP_BARRIER) :
		       OP_IS("BCAST", SH5_OP_BCAST);
	case 'E':
		return OP_IS("EXSCAN", SH5_OP_EXSCAN);
	case 'G':
		return OP_IS("GATHER", SH5_OP_GATHER);
	case 'R':
		return q[6] == '_' ?
		       OP_IS("REDUCE_SCATTER", SH5_OP_REDUCE_SCATTER) :
		       OP_IS("REDUCE", SH5_OP_REDUCE);
	case 'S':
		return q[3] == 'N' ? OP_IS("SCAN", SH5_OP_SCAN) :
		       OP_IS("SCATTER", SH5_OP_SCATTER);
	default:
		return SH5_OP_NONE;
	}
#undef OP_IS
}

/* Returns the start of the next line when the line at s was parsed and
 * added; NULL when parse_data() must see it, or on a memory error (*nomem
 * set). */
static const char *parse_fast(struct parser *p, const char *s,
			      const char *end, uint32_t line, int *nomem)
{
	struct rec r;
	const char *q;

	if (!(q = fld_int(s, 0, ',', &r.lid)) ||
	    !(q = fld_time(q, end, &r.tm)))
		return NULL;
	r.peer = r.tag = r.comm = r.root = 0;
	r.op = SH5_OP_NONE;
	r.is_offset = 0;
	switch (*q) {
	case 'I':
		if (end - q < 9 || memcmp(q, "INT,,,,,\n", 9))
			return NULL;
		r.kind = SH5_EV_INT;
		q += 9;
		break;
	case 'S':
	case 'R':
		if (end - q < 5)
			return NULL;
		if (!memcmp(q, "SEND,", 5))
			r.kind = SH5_EV_SEND;
		else if (!memcmp(q, "RECV,", 5))
			r.kind = SH5_EV_RECV;
		else
			return NULL;
		if (!(q = fld_int(q + 5, 0, ',', &r.peer)) ||
		    !(q = fld_int(q, 1, ',', &r.tag)) ||
		    !(q = fld_int(q, 1, ',', &r.comm)) || *q != ',' ||
		    !(q = fld_bytes_eol(q + 1)))
			return NULL;
		break;
	case 'C': {
		size_t ol;

		if (end - q >= 7 && !memcmp(q, "CBEGIN,", 7)) {
			r.kind = SH5_EV_CBEGIN;
			q += 7;
		} else if (end - q >= 5 && !memcmp(q, "CEND,", 5)) {
			r.kind = SH5_EV_CEND;
			q += 5;
		} else {
			return NULL;
		}
		if (end - q < 16 || (r.op = op_at(q, &ol)) == SH5_OP_NONE ||
		    q[ol + 1] != ',' ||
		    !(q = fld_int(q + ol + 2, 1, ',', &r.comm)))
			return NULL;
		if (op_rooted(r.op)) {
			if (!(q = fld_int(q, 0, ',', &r.root)))
				return NULL;
		} else if (*q++ != ',') {
			return NULL;
		}
		if (!(q = fld_bytes_eol(q)))
			return NULL;
		break;
	}
	case 'O':
		if (end - q < 7 || memcmp(q, "OFFSET,", 7))
			return NULL;
		r.kind = SH5_EV_INT;
		r.is_offset = 1;
		if (!(q = fld_int(q + 7, 1, ',', &r.peer)) ||
		    !(q = fld_int(q, 0, ',', &r.tag)) || end - q < 3 ||
		    memcmp(q, ",,\n", 3))
			return NULL;
		q += 3;
		break;
	default:
		return NULL;
	}
	if (add_event(p, &r, line) < 0) {
		*nomem = 1;
		return NULL;
	}
	return q;
}

/* ---------------------------------------------------------- post-passes */

static int match_p2p(struct parser *p)
{
	struct sh5_trace *t = p->t;
	size_t nc = p->nchan, i, j;
	uint32_t *sf = NULL, *rf = NULL, *sl = NULL, *rl = NULL;
	size_t ns = 0, nr = 0;
	int rc = -1;

	if (!nc)
		return 0;
	sf = calloc(nc + 1, sizeof(*sf));
	rf = calloc(nc + 1, sizeof(*rf));
	if (!sf || !rf)
		goto out;
	for (j = 0; j < p->np2p; j++) {
		i = p->p2p[j];
		if (t->ev[i].kind == SH5_EV_SEND) {
			sf[t->ev[i].ref + 1]++;
			ns++;
		} else {
			rf[t->ev[i].ref + 1]++;
			nr++;
		}
	}
	for (i = 0; i < nc; i++) {
		sf[i + 1] += sf[i];
		rf[i + 1] += rf[i];
	}
	sl = malloc((ns + 1) * sizeof(*sl));
	rl = malloc((nr + 1) * sizeof(*rl));
	if (!sl || !rl)
		goto out;
	/* Fill using sf[c]/rf[c] as cursors, then shift back. */
	for (j = 0; j < p->np2p; j++) {
		i = p->p2p[j];
		if (t->ev[i].kind == SH5_EV_SEND)
			sl[sf[t->ev[i].ref]++] = (uint32_t)i;
		else
			rl[rf[t->ev[i].ref]++] = (uint32_t)i;
	}
	for (i = nc; i > 0; i--) {
		sf[i] = sf[i - 1];
		rf[i] = rf[i - 1];
	}
	sf[0] = rf[0] = 0;
	for (i = 0; i < nc; i++) {
		uint32_t a = sf[i], ae = sf[i + 1], b = rf[i], be = rf[i + 1];
		const struct chan *ch = &p->chans[i];

		for (; a < ae && b < be; a++, b++) {
			t->ev[sl[a]].link = rl[b];
			t->ev[rl[b]].link = sl[a];
			t->nmsg++;
		}
		for (; a < ae; a++) {
			sh5_trace_problem_add(t, sh5_trace_line(t, sl[a]),
				"unmatched SEND from %lld to %lld (tag %lld, "
				"comm %lld): no matching RECV",
				(long long)t->loc_id[ch->src],
				(long long)t->loc_id[ch->dst],
				(long long)ch->tag, (long long)ch->comm);
			t->ev[sl[a]].flags |= SH5_EVF_FREE;
		}
		for (; b < be; b++) {
			sh5_trace_problem_add(t, sh5_trace_line(t, rl[b]),
				"unmatched RECV at %lld from %lld (tag %lld, "
				"comm %lld): no matching SEND",
				(long long)t->loc_id[ch->dst],
				(long long)t->loc_id[ch->src],
				(long long)ch->tag, (long long)ch->comm);
			t->ev[rl[b]].flags |= SH5_EVF_FREE;
		}
	}
	rc = 0;
out:
	free(sf);
	free(rf);
	free(sl);
	free(rl);
	return rc;
}

static int cmp_loc_id(const void *a, const void *b, void *arg)
{
	const int64_t *ids = arg;
	int64_t x = ids[*(const uint32_t *)a], y = ids[*(const uint32_t *)b];

	return x < y ? -1 : x > y;
}

static void free_flag_coll(struct sh5_trace *t, uint32_t b)
{
	t->ev[b].flags |= SH5_EVF_FREE;
	t->ev[b].ref = SH5_TRACE_NONE;
	if (t->ev[b].link != SH5_TRACE_NONE) {
		t->ev[t->ev[b].link].flags |= SH5_EVF_FREE;
		t->ev[t->ev[b].link].ref = SH5_TRACE_NONE;
	}
}

/* "OP" or "OP root N" */
static void op_desc(const struct sh5_trace *t, const struct sh5_trace_event *e,
		    char *buf, size_t len)
{
	if (e->aux == SH5_TRACE_NONE)
		snprintf(buf, len, "%s", trace_op_names[e->op]);
	else
		snprintf(buf, len, "%s root %lld", trace_op_names[e->op],
			 (long long)t->loc_id[e->aux]);
}

static int assemble_colls(struct parser *p)
{
	struct sh5_trace *t = p->t;
	size_t nslot, i, j, c, k, r, ninst = 0, nmem = 0;
	uint32_t *cnt = NULL, *cur = NULL, *rk = NULL, *slotcomm = NULL;
	uint32_t *rtab = NULL;	/* rank by communicator and location */
	size_t *moff = NULL;
	struct { uint32_t comm, rank; } *lc = NULL;	/* rank cache */
	int rc = -1;

	/* Communicator 0 by default: every location with a line, ascending. */
	if (p->comm0 >= 0 && !p->comm0_declared) {
		uint32_t *m;
		size_t n0 = 0, cap = p->cmemcap;

		/* comm 0 was added last among declared ones only if no other
		 * undeclared... its member range must be at the end. */
		for (i = 0; i < t->nloc; i++)
			n0 += p->ls[i].has_line;
		m = grow(t->comm_members, &cap, p->ncmem + n0 + 1,
			 sizeof(*m));
		if (!m)
			return -1;
		t->comm_members = m;
		p->cmemcap = cap;
		/* comm 0 was created after all #comm lines: it is the last
		 * communicator, so its members go at the end. */
		for (i = 0; i < t->nloc; i++)
			if (p->ls[i].has_line)
				m[p->ncmem++] = (uint32_t)i;
		qsort_r(m + t->comm_first[p->comm0], n0, sizeof(*m),
			cmp_loc_id, t->loc_id);
		t->comm_first[p->comm0 + 1] = (uint32_t)p->ncmem;
		for (i = t->comm_first[p->comm0]; i < p->ncmem; i++)
			if (trace_hmap_get(&p->rankmap, (uint64_t)p->comm0,
					   m[i], 0, (uint32_t)(i -
					   t->comm_first[p->comm0])) ==
			    HMAP_NOMEM)
				return -1;
	}
	/* Ranks: a dense table (communicator x location) when small, else
	 * the map. */
	if (t->ncomm && t->nloc && t->ncomm <= (4u << 20) / t->nloc) {
		rtab = malloc(t->ncomm * t->nloc * sizeof(*rtab));
		if (!rtab)
			goto out;
		memset(rtab, 0xff, t->ncomm * t->nloc * sizeof(*rtab));
		for (c = 0; c < t->ncomm; c++)
			for (i = t->comm_first[c]; i < t->comm_first[c + 1];
			     i++)
				rtab[c * t->nloc + t->comm_members[i]] =
					(uint32_t)(i - t->comm_first[c]);
	}
#define RANK(c, l) (rtab ? rtab[(size_t)(c) * t->nloc + (l)] : \
		    trace_hmap_get(&p->rankmap, (c), (l), 0, SH5_TRACE_NONE))
	/* Check every member and root; assign slots. */
	nslot = p->ncmem;
	cnt = calloc(nslot + 1, sizeof(*cnt));
	rk = malloc((p->ncb + 1) * sizeof(*rk));
	lc = malloc((t->nloc + 1) * sizeof(*lc));
	if (!cnt || !rk || !lc)
		goto out;
	memset(lc, 0xff, (t->nloc + 1) * sizeof(*lc));
	for (j = 0; j < p->ncb; j++) {
		struct sh5_trace_event *e = &t->ev[i = p->cbl[j]];
		uint32_t rank;

		rk[j] = SH5_TRACE_NONE;	/* slot, or NONE: left out */
		if (e->flags & SH5_EVF_FREE) {
			free_flag_coll(t, (uint32_t)i);
			continue;
		}
		if (e->link == SH5_TRACE_NONE) {
			sh5_trace_problem_add(t, sh5_trace_line(t, i),
				"CBEGIN without a "
					      "CEND at location %lld",
					      (long long)t->loc_id[t->loc[i]]);
			free_flag_coll(t, (uint32_t)i);
			continue;
		}
		/* per location: the rank in the communicator it used last */
		if (rtab) {
			rank = RANK(e->ref, t->loc[i]);
		} else if (lc[t->loc[i]].comm == e->ref) {
			rank = lc[t->loc[i]].rank;
		} else {
			rank = RANK(e->ref, t->loc[i]);
			lc[t->loc[i]].comm = e->ref;
			lc[t->loc[i]].rank = rank;
		}
		if (rank == SH5_TRACE_NONE) {
			sh5_trace_problem_add(t, sh5_trace_line(t, i),
				"location %lld is "
				"not a member of communicator %lld",
				(long long)t->loc_id[t->loc[i]],
				(long long)t->comm_id[e->ref]);
			free_flag_coll(t, (uint32_t)i);
			continue;
		}
		if (op_rooted(e->op) && !(lc[e->aux].comm == e->ref &&
					  lc[e->aux].rank != SH5_TRACE_NONE) &&
		    RANK(e->ref, e->aux) == SH5_TRACE_NONE) {
			sh5_trace_problem_add(t, sh5_trace_line(t, i),
				"root %lld of %s is "
				"not a member of communicator %lld",
				(long long)t->loc_id[e->aux],
				trace_op_names[e->op],
				(long long)t->comm_id[e->ref]);
			free_flag_coll(t, (uint32_t)i);
			continue;
		}
		rk[j] = t->comm_first[e->ref] + rank;
		cnt[rk[j]]++;
	}
	/* Instance k of communicator c (size members) gets the members'
	 * begins at inst_begin[moff[c] + k * size + rank], in one pass in
	 * file order; instances found incomplete or inconsistent are then
	 * squeezed out. */
	moff = malloc((t->ncomm + 1) * sizeof(*moff));
	cur = calloc(nslot + 1, sizeof(*cur));
	slotcomm = malloc((nslot + 1) * sizeof(*slotcomm));
	if (!moff || !cur || !slotcomm)
		goto out;
	for (c = 0; c < t->ncomm; c++) {
		size_t f = t->comm_first[c], l = t->comm_first[c + 1], mx = 0;

		for (r = f; r < l; r++) {
			slotcomm[r] = (uint32_t)c;
			if (cnt[r] > mx)
				mx = cnt[r];
		}
		moff[c] = nmem;
		ninst += mx;
		nmem += mx * (l - f);
	}
	t->inst = calloc(ninst + 1, sizeof(*t->inst));
	t->inst_begin = malloc((nmem + 1) * sizeof(*t->inst_begin));
	if (!t->inst || !t->inst_begin)
		goto out;
	memset(t->inst_begin, 0xff, nmem * sizeof(*t->inst_begin));
	for (j = 0; j < p->ncb; j++) {
		uint32_t sl = rk[j];

		if (sl == SH5_TRACE_NONE)
			continue;
		c = slotcomm[sl];
		t->inst_begin[moff[c] + (size_t)cur[sl]++ *
			      (t->comm_first[c + 1] - t->comm_first[c]) +
			      (sl - t->comm_first[c])] = p->cbl[j];
	}
	nmem = 0;
	for (c = 0; c < t->ncomm; c++) {
		size_t f = t->comm_first[c], l = t->comm_first[c + 1];
		size_t size = l - f, mx = 0;

		for (r = f; r < l; r++)
			if (cnt[r] > mx)
				mx = cnt[r];
		for (k = 0; k < mx; k++) {
			uint32_t *b = t->inst_begin + moff[c] + k * size;
			uint32_t ok = 1;
			struct sh5_trace_event *fe = NULL;
			uint32_t fi = 0;

			for (r = 0; r < size; r++) {
				if (b[r] == SH5_TRACE_NONE) {
					ok = 0;
					continue;
				}
				if (!fe)
					fe = &t->ev[fi = b[r]];
			}
			if (!ok) {
				for (r = 0; r < size; r++)
					if (b[r] == SH5_TRACE_NONE)
						break;
				sh5_trace_problem_add(t, sh5_trace_line(t, fi),
					"collective #%zu (%s) on communicator "
					"%lld: member %lld never calls it",
					k + 1, trace_op_names[fe->op],
					(long long)t->comm_id[c],
					(long long)t->loc_id[
						t->comm_members[f + r]]);
			} else {
				for (r = 0; r < size; r++) {
					struct sh5_trace_event *e =
						&t->ev[b[r]];
					if (e->op != fe->op ||
					    e->aux != fe->aux) {
						char x1[64], x2[64];

						op_desc(t, e, x1, sizeof(x1));
						op_desc(t, fe, x2, sizeof(x2));
						sh5_trace_problem_add(t,
							sh5_trace_line(t, b[r]),
							"collective #%zu on "
							"communicator %lld: "
							"%s here but %s at "
							"line %u", k + 1,
							(long long)
							t->comm_id[c],
							x1, x2,
							sh5_trace_line(t, fi));
						ok = 0;
						break;
					}
				}
			}
			if (!ok) {
				for (r = 0; r < size; r++)
					if (b[r] != SH5_TRACE_NONE)
						free_flag_coll(t, b[r]);
				continue;
			}
			{
				struct sh5_trace_inst *in =
					&t->inst[t->ninst];
				in->first = (uint32_t)nmem;
				in->size = (uint32_t)size;
				in->comm = (uint32_t)c;
				in->op = fe->op;
				in->cls = (uint8_t)sh5_trace_op_class(fe->op);
				in->root_rank = op_rooted(fe->op) ?
					RANK(c, fe->aux) : SH5_TRACE_NONE;
				for (r = 0; r < size; r++) {
					uint32_t bi = b[r];

					/* never ahead of b: nmem <= b's
					 * offset */
					t->inst_begin[nmem++] = bi;
					t->ev[bi].ref = (uint32_t)t->ninst;
					t->ev[t->ev[bi].link].ref =
						(uint32_t)t->ninst;
				}
				t->ninst++;
			}
		}
	}
#undef RANK
	/* (every collective event left out was marked by free_flag_coll) */
	rc = 0;
out:
	free(cnt);
	free(cur);
	free(rk);
	free(lc);
	free(moff);
	free(slotcomm);
	free(rtab);
	return rc;
}

static int trace_finish(struct parser *p)
{
	struct sh5_trace *t = p->t;
	size_t i, nextnode;

	/* Open collectives at the end of the file. */
	for (i = 0; i < t->nloc; i++) {
		if (p->ls[i].open != SH5_TRACE_NONE) {
			struct sh5_trace_event *e = &t->ev[p->ls[i].open];

			sh5_trace_problem_add(t,
				sh5_trace_line(t, p->ls[i].open),
				"CBEGIN without a CEND at location %lld",
				(long long)t->loc_id[i]);
			e->flags |= SH5_EVF_FREE;
		}
	}
	if (match_p2p(p) < 0)
		return -1;
	if (assemble_colls(p) < 0)
		return -1;

	/* Nodes. */
	t->loc_node = malloc((t->nloc + 1) * sizeof(*t->loc_node));
	if (!t->loc_node)
		return -1;
	nextnode = p->nnode_named;
	for (i = 0; i < t->nloc; i++)
		t->loc_node[i] = p->loc_node_named[i] != SH5_TRACE_NONE ?
				 p->loc_node_named[i] : (uint32_t)nextnode++;
	t->nnode = nextnode;

	/* Events by location. */
	t->loc_first = calloc(t->nloc + 2, sizeof(*t->loc_first));
	t->loc_order = malloc((t->nev + 1) * sizeof(*t->loc_order));
	if (!t->loc_first || !t->loc_order)
		return -1;
	for (i = 0; i < t->nloc; i++)
		t->loc_first[i + 2] = p->ls[i].count;
	for (i = 0; i < t->nloc; i++)
		t->loc_first[i + 2] += t->loc_first[i + 1];
	for (i = 0; i < t->nev; i++)
		t->loc_order[t->loc_first[t->loc[i] + 1]++] = (uint32_t)i;

	/* Offsets by location. */
	t->off_first = calloc(t->nloc + 2, sizeof(*t->off_first));
	t->off = malloc((t->noff + 1) * sizeof(*t->off));
	if (!t->off_first || !t->off)
		return -1;
	for (i = 0; i < t->noff; i++)
		t->off_first[p->offs[i].loc + 2]++;
	for (i = 0; i < t->nloc; i++)
		t->off_first[i + 2] += t->off_first[i + 1];
	for (i = 0; i < t->noff; i++) {
		uint32_t k = t->off_first[p->offs[i].loc + 1]++;

		t->off[k].local_ns = p->offs[i].local;
		t->off[k].offset_ns = p->offs[i].offset;
	}
	if (!t->comm_first) {
		t->comm_first = calloc(1, sizeof(*t->comm_first));
		if (!t->comm_first)
			return -1;
	}
	return 0;
}

/* Any line but the common event lines (s without its '\n').  Returns 0,
 * 1 with a valid data line's fields in *r (the caller adds the event), -1
 * on memory error, -2 on a fatal error (errno set, errp filled). */
static int trace_read_line(struct parser *p, const char *s, size_t len,
			   uint32_t line, struct sh5_error *errp,
			   struct rec *r)
{
	size_t q;

	if (len && s[len - 1] == '\r')
		len--;
	if (line == 1) {
		size_t e = len;
		int64_t v;

		if (len < 11 || memcmp(s, "#sh5-trace", 10) ||
		    (s[10] != ' ' && s[10] != '\t')) {
			errno = EINVAL;
			sh5_errprintf(errp, "%s:1: not an event trace (the "
				      "first line must be '#sh5-trace 1')",
				      p->name);
			return -2;
		}
		q = 10;
		while (q < len && (s[q] == ' ' || s[q] == '\t'))
			q++;
		while (e > q && (s[e - 1] == ' ' || s[e - 1] == '\t'))
			e--;
		if (parse_i64(s + q, e - q, &v) < 0 || v != 1) {
			errno = EINVAL;
			sh5_errprintf(errp, "%s:1: unsupported event-trace "
				      "version '%.*s' (want 1)", p->name,
				      (int)(len - q), s + q);
			return -2;
		}
		return 0;
	}
	if (len == 0)
		return 0;
	if (s[0] == '#')
		return parse_directive(p, s, len, line) < 0 ? -1 : 0;
	/* A line of blanks only is a blank line. */
	for (q = 0; q < len && (s[q] == ' ' || s[q] == '\t'); q++)
		;
	if (q == len)
		return 0;
	return parse_data(p, s, len, line, r);
}

/* Line `line` is done: note it in t->other unless it added an event
 * (nev0: the events before it).  0, or -1 on memory error. */
static inline int line_done(struct parser *p, uint32_t line, size_t nev0)
{
	struct sh5_trace *t = p->t;
	uint32_t *o;

	if (t->nev != nev0)
		return 0;
	o = t->nother < p->othercap ? t->other :
	    grow(t->other, &p->othercap, t->nother + 1, sizeof(*o));
	if (!o)
		return -1;
	t->other = o;
	o[t->nother++] = line;
	return 0;
}

/* A line that is not of the common shapes: trace_read_line(), then
 * add_event() for a valid data line.  Returns as trace_read_line() but
 * never 1.  Not inlined: keeps the loop of read_src() small. */
static __attribute__((noinline)) int read_other(struct parser *p,
						const char *s, size_t len,
						uint32_t line,
						struct sh5_error *errp)
{
	struct rec r;
	int rl = trace_read_line(p, s, len, line, errp, &r);

	return rl == 1 ? add_event(p, &r, line) : rl;
}

static struct sh5_trace *read_src(struct csrc *src, const char *name,
				  size_t sizehint, struct sh5_error *errp)
{
	struct parser p;
	struct sh5_trace *t;
	const char *blk, *bend, *nl;
	size_t n, nev0;
	uint32_t line = 0;
	int r, rl, virt, nomem = 0;

	memset(&p, 0, sizeof(p));
	p.comm0 = -1;
	p.lastcomm_idx = SH5_TRACE_NONE;
	t = calloc(1, sizeof(*t));
	if (!t) {
		sh5_errprintf(errp, "%s: %s", name, strerror(errno));
		return NULL;
	}
	p.t = t;
	p.name = name;
	p.locdirect = malloc(LOC_DIRECT * sizeof(*p.locdirect));
	if (!p.locdirect)
		NOMEM(p);
	memset(p.locdirect, 0xff, LOC_DIRECT * sizeof(*p.locdirect));
	t->mu_inter = -1;
	t->mu_intra = -1;
	if (sizehint) {
		p.evcap = sizehint / 24 + 16;
		t->ev = malloc(p.evcap * sizeof(*t->ev));
		t->time = malloc(p.evcap * sizeof(*t->time));
		t->loc = malloc(p.evcap * sizeof(*t->loc));
		if (!t->ev || !t->time || !t->loc)
			NOMEM(p);
	}
	while ((r = trace_csrc_next(src, &blk, &n, &virt)) > 0) {
		for (bend = blk + n; blk < bend;) {
			if (line == UINT32_MAX - 1) {
				errno = EFBIG;
				sh5_errprintf(errp, "%s: too many lines",
					      name);
				goto fail;
			}
			line++;
			nev0 = t->nev;
			/* Most lines: an event of a simple shape. */
			if ((unsigned)((unsigned char)*blk - '0') <= 9 &&
			    line > 1) {
				const char *next = parse_fast(&p, blk, bend,
							      line, &nomem);
				if (next) {
					blk = next;
					if (line_done(&p, line, nev0) < 0)
						NOMEM(p);
					continue;
				}
				if (nomem)
					NOMEM(p);
			}
			nl = memchr(blk, '\n', (size_t)(bend - blk));
			rl = read_other(&p, blk, (size_t)(nl - blk), line,
					errp);
			if (rl == -1 || line_done(&p, line, nev0) < 0)
				NOMEM(p);
			if (rl < 0)
				goto fail;
			blk = nl + 1;
		}
	}
	if (r < 0) {
		sh5_errprintf(errp, "%s: %s", name, strerror(errno));
		goto fail;
	}
	if (line == 0) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: empty file, not an event trace", name);
		goto fail;
	}
	t->nlines = line;
	if (trace_finish(&p) < 0)
		NOMEM(p);
	goto done;
nomem:
	sh5_errprintf(errp, "%s: %s", name, strerror(errno ? errno : ENOMEM));
fail:
	sh5_trace_destroy(t);
	t = NULL;
done:
	free(p.locdirect);
	free(p.ls);
	free(p.offs);
	free(p.chans);
	free(p.p2p);
	free(p.cbl);
	free(p.loc_node_named);
	trace_hmap_free(&p.locmap);
	trace_hmap_free(&p.commmap);
	trace_hmap_free(&p.chanmap);
	trace_hmap_free(&p.nodemap);
	trace_hmap_free(&p.rankmap);
	return t;
}

struct sh5_trace *sh5_trace_read(const char *path, struct sh5_error *errp)
{
	struct csrc src;
	struct sh5_trace *t;
	struct stat st;

	if (trace_csrc_open(&src, path) < 0) {
		sh5_errprintf(errp, "%s: %s", path, strerror(errno));
		return NULL;
	}
	t = read_src(&src, path,
		     fstat(src.fd, &st) == 0 && S_ISREG(st.st_mode) ?
		     (size_t)st.st_size : 0, errp);
	trace_csrc_close(&src);
	return t;
}

struct sh5_trace *sh5_trace_read_mem(const char *buf, size_t len,
				     const char *name,
				     struct sh5_error *errp)
{
	struct csrc src;
	struct sh5_trace *t;

	trace_csrc_mem(&src, buf, len);
	t = read_src(&src, name, 0, errp);
	trace_csrc_close(&src);
	return t;
}

void sh5_trace_destroy(struct sh5_trace *t)
{
	if (!t)
		return;
	free(t->ev);
	free(t->time);
	free(t->loc);
	free(t->loc_id);
	free(t->loc_node);
	free(t->loc_first);
	free(t->loc_order);
	free(t->off_first);
	free(t->off);
	free(t->comm_id);
	free(t->comm_first);
	free(t->comm_members);
	free(t->inst);
	free(t->inst_begin);
	free(t->other);
	free(t);
}

/* --------------------------------------------------------------- write */

struct obuf {
	int fd;			/* -1: memory */
	char *buf;
	size_t len, cap;
	const char *name;	/* the output, for write errors */
	int werr;		/* a write to fd failed */
	size_t total;		/* bytes written to fd */
};

static int obuf_flush(struct obuf *o)
{
	size_t off = 0;
	ssize_t w;

	if (o->fd < 0)
		return 0;
	while (off < o->len) {
		w = write(o->fd, o->buf + off, o->len - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			o->werr = 1;
			return -1;
		}
		off += (size_t)w;
	}
	o->total += o->len;
	o->len = 0;
	return 0;
}

/* Room for n more bytes at o->buf + o->len (flushing to the file, or
 * growing).  Returns 0, or -1 with errno set. */
static int obuf_room(struct obuf *o, size_t n)
{
	size_t nc;
	char *nb;

	if (o->len + n <= o->cap)
		return 0;
	if (o->fd >= 0 && obuf_flush(o) < 0)
		return -1;
	if (o->len + n <= o->cap)
		return 0;
	for (nc = o->cap ? o->cap : 4096; nc < o->len + n; nc *= 2)
		;
	nb = realloc(o->buf, nc);
	if (!nb)
		return -1;
	o->buf = nb;
	o->cap = nc;
	return 0;
}

static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233"
	"34353637383940414243444546474849505152535455565758596061626364656667"
	"6869707172737475767778798081828384858687888990919293949596979899";

/* Exactly eight digits of v < 10^8, without a table (SWAR): the two
 * halves of four digits in 32-bit lanes, split into pairs in 16-bit
 * lanes, then into digits in bytes (little-endian: the first digit is
 * the lowest byte).  Exact: x * 5243 >> 19 is x / 100 for x < 10^4,
 * x * 103 >> 10 is x / 10 for x < 100. */
static inline void put8(char *o, uint32_t v)
{
	uint64_t x = (v / 10000) | ((uint64_t)(v % 10000) << 32), q;

	q = ((x * 5243) >> 19) & 0x0000007F0000007FULL;
	x = q | ((x - q * 100) << 16);
	q = ((x * 103) >> 10) & 0x000F000F000F000FULL;
	x = q | ((x - q * 10) << 8);
	x += 0x3030303030303030ULL;
	memcpy(o, &x, 8);
}

/* Decimal digits of v < 10^8, no leading zeros. */
static inline size_t put_small(char *o, uint32_t v)
{
	char tmp[8];
	size_t n = sizeof(tmp);

	while (v >= 100) {
		unsigned r = (v % 100) * 2;

		v /= 100;
		tmp[--n] = digit_pairs[r + 1];
		tmp[--n] = digit_pairs[r];
	}
	if (v >= 10) {
		tmp[--n] = digit_pairs[v * 2 + 1];
		tmp[--n] = digit_pairs[v * 2];
	} else {
		tmp[--n] = (char)('0' + v);
	}
	memcpy(o, tmp + n, sizeof(tmp) - n);
	return sizeof(tmp) - n;
}

static inline size_t fmt_i64(char *out, int64_t v)
{
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	size_t i = 0;

	if (v < 0)
		out[i++] = '-';
	if (u < 100000000u)
		return i + put_small(out + i, (uint32_t)u);
	if (u >= 10000000000000000ULL) {
		i += put_small(out + i, (uint32_t)(u / 10000000000000000ULL));
		put8(out + i,
		     (uint32_t)(u / 100000000u % 100000000u));
		put8(out + i + 8, (uint32_t)(u % 100000000u));
		return i + 16;
	}
	i += put_small(out + i, (uint32_t)(u / 100000000u));
	put8(out + i, (uint32_t)(u % 100000000u));
	return i + 8;
}

/* The first ',' or '\n' from q on (there is a '\n' before end); eight
 * bytes at a time while eight are left. */
static inline const char *comma_or_nl(const char *q, const char *end)
{
	for (; end - q >= 8; q += 8) {
		uint64_t v, x, y, m;

		memcpy(&v, q, 8);
		x = v ^ 0x2C2C2C2C2C2C2C2CULL;
		y = v ^ 0x0A0A0A0A0A0A0A0AULL;
		/* exact per-byte zero tests */
		x = ~(((x & 0x7F7F7F7F7F7F7F7FULL) + 0x7F7F7F7F7F7F7F7FULL) |
		      x);
		y = ~(((y & 0x7F7F7F7F7F7F7F7FULL) + 0x7F7F7F7F7F7F7F7FULL) |
		      y);
		m = (x | y) & 0x8080808080808080ULL;
		if (m)
			return q + (__builtin_ctzll(m) >> 3);
	}
	while (*q != ',' && *q != '\n')
		q++;
	return q;
}

/* The start of the line after the one at q (there is a '\n' before
 * end); eight bytes at a time while eight are left. */
static inline const char *next_line(const char *q, const char *end)
{
	for (; end - q >= 8; q += 8) {
		uint64_t v, y;

		memcpy(&v, q, 8);
		y = v ^ 0x0A0A0A0A0A0A0A0AULL;
		y = ~(((y & 0x7F7F7F7F7F7F7F7FULL) + 0x7F7F7F7F7F7F7F7FULL) |
		      y) & 0x8080808080808080ULL;
		if (y)
			return q + (__builtin_ctzll(y) >> 3) + 1;
	}
	while (*q != '\n')
		q++;
	return q + 1;
}

/* Write v over the len bytes at f when its decimal form has exactly that
 * length (the common case: 19 digits, nanoseconds since 1970).  Returns
 * 1 when written, 0 when the lengths differ (nothing written). */
static inline int put_time_over(char *f, size_t len, int64_t v)
{
	char tmp[24];
	uint64_t hi;

	if (len == 19 && v >= 1000000000000000000LL) {
		hi = (uint64_t)v / 100000000u;
		put8(f + 11, (uint32_t)((uint64_t)v % 100000000u));
		put8(f + 3, (uint32_t)(hi % 100000000u));
		hi /= 100000000u;	/* 100 .. 922 */
		f[0] = (char)('0' + hi / 100);
		memcpy(f + 1, digit_pairs + 2 * (hi % 100), 2);
		return 1;
	}
	if (fmt_i64(tmp, v) != len)
		return 0;
	memcpy(f, tmp, len);
	return 1;
}

/* Where write_src() is: the lines done, the next line that is not an
 * event line (t->other[oi], or every line after the last), the next
 * event.  Lines 1 .. t->nlines not in t->other are the t->nev event
 * lines, so k stays below t->nev on an event line. */
struct wcur {
	uint32_t line, skip;
	size_t oi, k;
};

static inline void wcur_init(const struct sh5_trace *t, struct wcur *c)
{
	c->line = 0;
	c->oi = 0;
	c->k = 0;
	c->skip = t->nother ? t->other[0] : (uint32_t)t->nlines + 1;
}

/* The next line: 1 when it is an event line. */
static inline int wcur_line(const struct sh5_trace *t, struct wcur *c)
{
	if (++c->line != c->skip)
		return 1;
	c->oi++;
	c->skip = c->oi < t->nother ? t->other[c->oi] :
		  c->line > t->nlines ? c->line + 1 : (uint32_t)t->nlines + 1;
	return 0;
}

/* The lines p[0..n) copied to o one by one, the time field (between the
 * first two commas) of every event line replaced.  Returns 0, 1 when an
 * event line lacks its commas (the input changed), -1 with errno set. */
static int write_lines(const struct sh5_trace *t, const char *p, size_t n,
		       const int64_t *times, struct wcur *c, struct obuf *o)
{
	const char *end = p + n, *c1, *c2, *nl;
	size_t ln;
	char *w;

	for (; p < end; p = nl) {
		if (!wcur_line(t, c)) {
			nl = next_line(p, end);
			ln = (size_t)(nl - p);
			if (obuf_room(o, ln) < 0)
				return -1;
			memcpy(o->buf + o->len, p, ln);
			o->len += ln;
			continue;
		}
		c1 = comma_or_nl(p, end);
		c2 = *c1 == ',' ? comma_or_nl(c1 + 1, end) : c1;
		if (*c2 != ',')
			return 1;
		nl = next_line(c2, end);
		if (obuf_room(o, (size_t)(nl - p) + 24) < 0)
			return -1;
		w = o->buf + o->len;
		memcpy(w, p, (size_t)(c1 + 1 - p));
		w += c1 + 1 - p;
		w += fmt_i64(w, times[c->k]);
		memcpy(w, c2, (size_t)(nl - c2));
		w += nl - c2;
		o->len = (size_t)(w - o->buf);
		c->k++;
	}
	return 0;
}

/* n bytes at p to the output: through the buffer, or (a file output)
 * straight from p after what the buffer holds.  0, or -1 with errno
 * set. */
static int obuf_put(struct obuf *o, const char *p, size_t n)
{
	ssize_t w;

	if (o->fd < 0 || n < 4096) {
		if (obuf_room(o, n) < 0)
			return -1;
		memcpy(o->buf + o->len, p, n);
		o->len += n;
		return 0;
	}
	if (obuf_flush(o) < 0)
		return -1;
	while (n) {
		w = write(o->fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			o->werr = 1;
			return -1;
		}
		p += w;
		n -= (size_t)w;
		o->total += (size_t)w;
	}
	return 0;
}

#ifdef __SSE2__
/* Bit i set in *commas (*nls) when q[i] is ',' ('\n'), for the 64 bytes
 * at q (all readable). */
static inline void marks64(const char *q, uint64_t *commas, uint64_t *nls)
{
	const __m128i cm = _mm_set1_epi8(','), nl = _mm_set1_epi8('\n');
	uint64_t c = 0, n = 0;
	unsigned i;

	for (i = 0; i < 64; i += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(q + i));

		c |= (uint64_t)(unsigned)_mm_movemask_epi8(
			_mm_cmpeq_epi8(v, cm)) << i;
		n |= (uint64_t)(unsigned)_mm_movemask_epi8(
			_mm_cmpeq_epi8(v, nl)) << i;
	}
	*commas = c;
	*nls = n;
}
#endif

/* The event line at q (a '\n' before end): its time field from *c1 + 1
 * to the second comma (returned), its end in *nl (after the '\n');
 * NULL when the line has no two commas. */
static inline char *time_field(char *q, char *end, char **c1, char **nl)
{
	char *c2;

#ifdef __SSE2__
	if (end - q >= 64) {
		uint64_t cm, nm;

		marks64(q, &cm, &nm);
		if (nm) {
			nm &= -nm;	/* the first '\n' */
			cm &= nm - 1;	/* commas before it */
			*nl = q + __builtin_ctzll(nm) + 1;
			if (!cm || !(cm & (cm - 1)))
				return NULL;
			*c1 = q + __builtin_ctzll(cm);
			cm &= cm - 1;
			return q + __builtin_ctzll(cm);
		}
	}
#endif
	*c1 = (char *)comma_or_nl(q, end);
	c2 = **c1 == ',' ? (char *)comma_or_nl(*c1 + 1, end) : *c1;
	if (*c2 != ',')
		return NULL;
	*nl = (char *)next_line(c2, end);
	return c2;
}

/* The same for a block of whole lines that may be changed in place
 * (the source's buffer), faster: each new time is written over the old
 * one and the block goes out in one piece; from the first line whose new
 * time has another length on, line by line. */
static int write_block(const struct sh5_trace *t, char *p, size_t n,
		       const int64_t *times, struct wcur *c, struct obuf *o)
{
	char *end = p + n, *q, *c1, *c2, *nl;

	for (q = p; q < end;) {
		if (c->line + 1 == c->skip) {
			wcur_line(t, c);
			q = (char *)next_line(q, end);
			continue;
		}
		c2 = time_field(q, end, &c1, &nl);
		if (!c2 || !put_time_over(c1 + 1, (size_t)(c2 - c1 - 1),
					  times[c->k])) {
			if (obuf_put(o, p, (size_t)(q - p)) < 0)
				return -1;
			return write_lines(t, q, (size_t)(end - q), times, c,
					   o);
		}
		c->line++;
		c->k++;
		q = nl;
	}
	return obuf_put(o, p, n);
}

/* Copy the input to o with the time field (between the first two
 * commas) of every event line replaced. */
static int write_src(const struct sh5_trace *t, struct csrc *src,
		     const int64_t *times, struct obuf *o, const char *name,
		     struct sh5_error *errp)
{
	struct wcur c;
	const char *p;
	size_t n;
	int r, w, virt;

	wcur_init(t, &c);
	while ((r = trace_csrc_next(src, &p, &n, &virt)) > 0) {
		/* an fd source's blocks are in its own buffer; the last
		 * line with its '\n' added goes through o's buffer */
		w = src->fd >= 0 && !virt ?
		    write_block(t, (char *)p, n, times, &c, o) :
		    write_lines(t, p, n, times, &c, o);
		if (w < 0)
			goto syserr;
		if (w > 0) {
			errno = EINVAL;
			return sh5_errprintf(errp, "%s:%u: input changed "
					     "while synchronizing", name,
					     c.line);
		}
		if (virt)
			o->len--;	/* the '\n' added to the last line */
	}
	if (r < 0)
		goto syserr;
	if (c.k != t->nev) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: input changed while "
				     "synchronizing", name);
	}
	return 0;
syserr:
	if (o->werr)
		return sh5_errprintf(errp, "%s: write failed: %s",
				     o->name ? o->name : "output",
				     strerror(errno));
	return sh5_errprintf(errp, "%s: %s", name, strerror(errno));
}

int sh5_trace_write(const struct sh5_trace *t, const char *in_path,
		    const int64_t *times, const char *out_path,
		    struct sh5_error *errp)
{
	struct sh5_outfile out = { .fd = -1 };
	struct csrc src;
	struct obuf o;
	struct stat st;
	int rc = -1, saved, prealloc = 0;

	memset(&o, 0, sizeof(o));
	o.fd = -1;
	if (trace_csrc_open(&src, in_path) < 0)
		return sh5_errprintf(errp, "%s: %s", in_path, strerror(errno));
	o.cap = CSRC_CHUNK;
	o.buf = malloc(o.cap);
	if (!o.buf) {
		sh5_errprintf(errp, "%s: %s", out_path, strerror(errno));
		goto out;
	}
	if (sh5_outfile_open(&out, out_path, &in_path, 1, errp) < 0)
		goto out;
	o.fd = out.fd;
	o.name = strcmp(out_path, "-") ? out_path : "stdout";
	if (out.tmp && fstat(src.fd, &st) == 0 && st.st_size > 0)
		prealloc = fallocate(o.fd, 0, 0, st.st_size) == 0;
	if (write_src(t, &src, times, &o, in_path, errp) < 0)
		goto out;
	if (obuf_flush(&o) < 0 ||
	    (prealloc && ftruncate(o.fd, (off_t)o.total) < 0)) {
		sh5_errprintf(errp, "%s: write failed: %s", o.name,
			      strerror(errno));
		goto out;
	}
	if (sh5_outfile_commit(&out, errp) < 0)
		goto out;
	rc = 0;
out:
	saved = errno;
	sh5_outfile_abort(&out);
	trace_csrc_close(&src);
	free(o.buf);
	errno = saved;
	return rc;
}

int sh5_trace_write_mem(const struct sh5_trace *t, const char *in,
			size_t inlen, const int64_t *times, char **out,
			size_t *outlen, struct sh5_error *errp)
{
	struct csrc src;
	struct obuf o;
	int rc;

	memset(&o, 0, sizeof(o));
	o.fd = -1;
	trace_csrc_mem(&src, in, inlen);
	rc = write_src(t, &src, times, &o, "(memory)", errp);
	trace_csrc_close(&src);
	if (rc < 0) {
		free(o.buf);
		return -1;
	}
	if (obuf_room(&o, 1) < 0) {	/* NUL for convenience */
		free(o.buf);
		return sh5_errprintf(errp, "(memory): %s", strerror(errno));
	}
	o.buf[o.len++] = '\0';
	*out = o.buf;
	*outlen = o.len - 1;
	return 0;
}

/* trace_read.c - the read loop: the fast parser, add_event()
 * (trace_int.h) */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/prefault.h"
#include "sync/trace_int.h"

#define NOMEM(p) do { errno = ENOMEM; goto nomem; } while (0)

/* The steps of add_event() and parse_fast(), inlined into them as they
 * are into the loop (the compiler would keep some apart). */
#define HOT inline __attribute__((always_inline))

static inline int add_event(struct parser *p, const struct rec *r,
			    uint32_t line) __attribute__((always_inline));

/* Report the time of a line at location li going backwards (below the
 * location's last time).  Returns -1 for an OFFSET line (to be ignored),
 * 0 for an event (to be clamped). */
static int time_backwards(struct parser *p, const struct rec *r,
			  uint32_t li, uint32_t line)
{
	struct sh5_trace *t = p->t;

	if (r->is_offset) {
		sh5_trace_problem_add(t, line, "time goes backwards at "
				      "location %lld (%lld after "
				      "%lld); OFFSET line ignored",
				      (long long)r->lid, (long long)r->tm,
				      (long long)p->ls[li].last);
		return -1;
	}
	sh5_trace_problem_add(t, line, "time goes backwards at "
			      "location %lld (%lld after %lld)",
			      (long long)r->lid, (long long)r->tm,
			      (long long)p->ls[li].last);
	return 0;
}

/* The OFFSET measurement of line at location li, local time tm.  0, or
 * -1 on memory error. */
static int add_offset(struct parser *p, const struct rec *r, uint32_t li,
		      int64_t tm, uint32_t line)
{
	struct sh5_trace *t = p->t;
	struct offrec *o = grow(p->offs, &p->offcap, t->noff + 1, sizeof(*o));

	if (!o)
		return -1;
	p->offs = o;
	o[t->noff].local = tm;
	o[t->noff].offset = r->peer;
	o[t->noff].loc = li;
	o[t->noff].line = line;
	t->noff++;
	return 0;
}

/* Room for more events in t->ev, t->time and t->loc (full now).  0, or
 * -1 on memory error. */
static int grow_events(struct parser *p)
{
	struct sh5_trace *t = p->t;
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
	return 0;
}

/* The next 8192 slots of the event arrays (at most to their capacity)
 * faulted in at once: about to be written, in order. */
static void prefault_events(struct parser *p)
{
	struct sh5_trace *t = p->t;
	size_t n = p->evcap - t->nev < 8192 ? p->evcap - t->nev : 8192;

	sh5_prefault(t->ev + t->nev, n * sizeof(*t->ev));
	sh5_prefault(t->time + t->nev, n * sizeof(*t->time));
	sh5_prefault(t->loc + t->nev, n * sizeof(*t->loc));
	p->prefaulted = t->nev + n;
}

/* The SEND or RECV e (the next event, index t->nev) on channel ch:
 * matched with the oldest pending event of the other kind, or queued. */
static HOT void p2p_match(struct sh5_trace *t, struct chq *ch,
			  struct sh5_trace_event *e)
{
	uint32_t me = (uint32_t)t->nev, h = ch->head;

	if (h != SH5_TRACE_NONE && t->ev[h].kind != e->kind) {
		ch->head = t->ev[h].link;
		if (ch->head == SH5_TRACE_NONE)
			ch->tail = SH5_TRACE_NONE;
		t->ev[h].link = me;
		e->link = h;
		t->nmsg++;
		return;
	}
	/* e->link is NONE: the end of the queue */
	if (ch->tail != SH5_TRACE_NONE)
		t->ev[ch->tail].link = me;
	else
		ch->head = me;
	ch->tail = me;
}

/* Channel p->nchan (new): src to dst with r's tag and communicator.  0,
 * or -1 on memory error. */
static int new_chan(struct parser *p, const struct rec *r, uint32_t src,
		    uint32_t dst)
{
	size_t cap = p->chancap;
	struct chan *ch = grow(p->chans, &cap, p->nchan + 1, sizeof(*ch));
	struct chq *q;
	uint32_t c = (uint32_t)p->nchan;

	if (!ch)
		return -1;
	p->chans = ch;
	cap = p->chancap;
	q = grow(p->chq, &cap, p->nchan + 1, sizeof(*q));
	if (!q)
		return -1;
	p->chq = q;
	p->chancap = cap;
	ch[c].src = src;
	ch[c].dst = dst;
	ch[c].tag = r->tag;
	ch[c].comm = r->comm;
	q[c].head = q[c].tail = SH5_TRACE_NONE;
	p->nchan++;
	return 0;
}

/* A SEND or RECV e at location li: its peer, its channel (source,
 * destination, tag, communicator) and its partner when it is known.
 * 0, or -1 on memory error. */
static HOT int p2p_event(struct parser *p, struct sh5_trace_event *e,
			 const struct rec *r, uint32_t li)
{
	struct chslot *slot = NULL;
	uint32_t pi, src, dst, c;

	pi = loc_index(p, r->peer);
	if (pi == SH5_TRACE_NONE)
		return -1;
	e->aux = pi;
	src = r->kind == SH5_EV_SEND ? li : pi;
	dst = r->kind == SH5_EV_SEND ? pi : li;
	/* most messages repeat the communicator of the last message of
	 * their pair and tag */
	if (src < 128 && dst < 128 && (uint64_t)r->tag < 8 &&
	    r->comm == (int32_t)r->comm) {
		slot = &p->chanlast[src << 10 | dst << 3 | (uint32_t)r->tag];
		if (slot->chan && slot->comm == (int32_t)r->comm) {
			c = slot->chan - 1;
			goto found;
		}
	}
	c = trace_hmap_get(&p->chanmap, ((uint64_t)src << 32) | dst,
			   (uint64_t)r->tag, (uint64_t)r->comm,
			   (uint32_t)p->nchan);
	if (c == HMAP_NOMEM || (c == p->nchan && new_chan(p, r, src, dst) < 0))
		return -1;
	if (slot) {
		slot->chan = c + 1;
		slot->comm = (int32_t)r->comm;
	}
found:
	e->ref = c;
	p2p_match(p->t, &p->chq[c], e);
	return 0;
}

/* The index of communicator comm in *cidx: NONE when undeclared
 * (communicator 0 is created on first use).  0, or -1 on memory error. */
static HOT int coll_comm(struct parser *p, int64_t comm, uint32_t *cidx)
{
	uint32_t c = p->lastcomm_idx != SH5_TRACE_NONE &&
		     p->lastcomm == comm ? p->lastcomm_idx :
		     trace_hmap_get(&p->commmap, (uint64_t)comm, 0, 0,
				    SH5_TRACE_NONE);

	if (c == SH5_TRACE_NONE && comm == 0) {
		if (trace_comm_add(p, 0, &c) < 0)
			return -1;
		p->comm0 = (int)c;
	}
	if (c != SH5_TRACE_NONE) {
		p->lastcomm = comm;
		p->lastcomm_idx = c;
	}
	*cidx = c;
	return 0;
}

/* A CBEGIN at location li: the location's open collective (one left
 * open before is left out). */
static HOT void coll_begin(struct parser *p, const struct rec *r,
			   uint32_t li, uint32_t line)
{
	struct sh5_trace *t = p->t;

	if (p->ls[li].open != SH5_TRACE_NONE) {
		struct sh5_trace_event *o = &t->ev[p->ls[li].open];

		sh5_trace_problem_add(t, line, "CBEGIN at location %lld "
				      "before the CEND of the collective "
				      "begun at line %u", (long long)r->lid,
				      sh5_trace_line(t, p->ls[li].open));
		o->flags |= SH5_EVF_FREE;
	}
	p->ls[li].open = (uint32_t)t->nev;
}

/* A CEND e at location li: linked with the location's open CBEGIN when
 * it repeats its operation, communicator and root. */
static HOT void coll_end(struct parser *p, struct sh5_trace_event *e,
			 const struct rec *r, uint32_t li, uint32_t line)
{
	struct sh5_trace *t = p->t;
	uint32_t bi = p->ls[li].open;
	struct sh5_trace_event *o;

	p->ls[li].open = SH5_TRACE_NONE;
	if (bi == SH5_TRACE_NONE) {
		sh5_trace_problem_add(t, line, "CEND at location %lld "
				      "without a CBEGIN", (long long)r->lid);
		e->flags |= SH5_EVF_FREE;
	} else {
		o = &t->ev[bi];
		if (o->op != e->op || o->ref != e->ref || o->aux != e->aux) {
			sh5_trace_problem_add(t, line, "CEND does not repeat "
					      "the operation, communicator "
					      "and root of its CBEGIN (line "
					      "%u)", sh5_trace_line(t, bi));
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

/* A CBEGIN or CEND e at location li: a CBEGIN on the list of them;
 * communicator, root, pairing.  0, or -1 on memory error. */
static HOT int coll_event(struct parser *p, struct sh5_trace_event *e,
			  const struct rec *r, uint32_t li, uint32_t line)
{
	uint32_t cidx;

	if (r->kind == SH5_EV_CBEGIN) {
		uint32_t *l2 = p->ncb < p->cbcap ? p->cbl :
			       grow(p->cbl, &p->cbcap, p->ncb + 1,
				    sizeof(*l2));
		if (!l2)
			return -1;
		p->cbl = l2;
		l2[p->ncb++] = (uint32_t)p->t->nev;
	}
	if (coll_comm(p, r->comm, &cidx) < 0)
		return -1;
	if (op_rooted(r->op)) {
		e->aux = loc_index(p, r->root);
		if (e->aux == SH5_TRACE_NONE)
			return -1;
	}
	e->ref = cidx;	/* comm index until assembly */
	if (cidx == SH5_TRACE_NONE) {
		sh5_trace_problem_add(p->t, line, "collective on undeclared "
				      "communicator %lld",
				      (long long)r->comm);
		e->flags |= SH5_EVF_FREE;
	}
	if (r->kind == SH5_EV_CBEGIN)
		coll_begin(p, r, li, line);
	else
		coll_end(p, e, r, li, line);
	return 0;
}

/* Add the event (or OFFSET measurement) of a valid data line.  Returns 0
 * (added, or problem recorded), -1 on memory error. */
static inline int add_event(struct parser *p, const struct rec *r,
			    uint32_t line)
{
	struct sh5_trace *t = p->t;
	int64_t tm = r->tm;
	unsigned kind = r->kind;
	struct sh5_trace_event *e;
	uint32_t li;
	size_t b;

	p->seen_data = 1;
	li = loc_index(p, r->lid);
	if (li == SH5_TRACE_NONE)
		return -1;
	p->ls[li].has_line = 1;
	if (p->ls[li].has_time && tm < p->ls[li].last) {
		if (time_backwards(p, r, li, line) < 0)
			return 0;
		tm = p->ls[li].last;
		b = SH5_EVF_CLAMPED;
	} else {
		b = 0;
	}
	p->ls[li].last = tm;
	p->ls[li].has_time = 1;
	if (r->is_offset)
		return add_offset(p, r, li, tm, line);

	if (t->nev >= UINT32_MAX - 2) {
		errno = EFBIG;
		return -1;
	}
	if (t->nev == p->evcap && grow_events(p) < 0)
		return -1;
	if (t->nev >= p->prefaulted)
		prefault_events(p);
	e = &t->ev[t->nev];
	t->loc[t->nev] = li;
	e->link = SH5_TRACE_NONE;
	e->ref = SH5_TRACE_NONE;
	e->aux = SH5_TRACE_NONE;
	e->kind = (uint8_t)kind;
	e->op = (uint8_t)r->op;
	e->flags = (uint16_t)b;
	t->time[t->nev] = tm;
	p->ls[li].count++;
	if (kind == SH5_EV_SEND || kind == SH5_EV_RECV) {
		if (p2p_event(p, e, r, li) < 0)
			return -1;
	} else if (kind == SH5_EV_CBEGIN || kind == SH5_EV_CEND) {
		if (coll_event(p, e, r, li, line) < 0)
			return -1;
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
	unsigned n = 0, a, b, c;

	/* 19 digits and ',' (nanoseconds since 1970): no loop */
	if (end - q >= 20 && q[19] == ',' && digits16(q, &d8) == 0 &&
	    (a = (unsigned char)q[16] - '0') <= 9 &&
	    (b = (unsigned char)q[17] - '0') <= 9 &&
	    (c = (unsigned char)q[18] - '0') <= 9) {
		v = d8 * 1000u + a * 100u + b * 10u + c;
		if (v > (uint64_t)INT64_MAX)
			return NULL;
		*out = (int64_t)v;
		return q + 20;
	}
	v = 0;
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

/* A CBEGIN or CEND line from its kind at q on: kind, operation,
 * communicator and root in *r.  Returns the start of the next line, or
 * NULL when the line is not of the simple shape. */
static HOT const char *fast_coll(const char *q, const char *end,
				 struct rec *r)
{
	size_t ol;

	if (end - q >= 7 && !memcmp(q, "CBEGIN,", 7)) {
		r->kind = SH5_EV_CBEGIN;
		q += 7;
	} else if (end - q >= 5 && !memcmp(q, "CEND,", 5)) {
		r->kind = SH5_EV_CEND;
		q += 5;
	} else {
		return NULL;
	}
	if (end - q < 16 || (r->op = op_at(q, &ol)) == SH5_OP_NONE ||
	    q[ol + 1] != ',' || !(q = fld_int(q + ol + 2, 1, ',', &r->comm)))
		return NULL;
	if (op_rooted(r->op)) {
		if (!(q = fld_int(q, 0, ',', &r->root)))
			return NULL;
	} else if (*q++ != ',') {
		return NULL;
	}
	return fld_bytes_eol(q);
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
	case 'C':
		if (!(q = fast_coll(q, end, &r)))
			return NULL;
		break;
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

/* A parser with a new, empty trace in p->t (NULL when that failed);
 * sizehint: the size of the file, to allocate the event arrays at once.
 * 0, or -1 on memory error. */
static int parser_init(struct parser *p, const char *name, size_t sizehint)
{
	struct sh5_trace *t;

	memset(p, 0, sizeof(*p));
	p->comm0 = -1;
	p->lastcomm_idx = SH5_TRACE_NONE;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -1;
	p->t = t;
	p->name = name;
	p->locdirect = malloc(LOC_DIRECT * sizeof(*p->locdirect));
	if (!p->locdirect)
		return -1;
	memset(p->locdirect, 0xff, LOC_DIRECT * sizeof(*p->locdirect));
	/* zeroed by the kernel: only the slots used are touched */
	p->chanlast = calloc(CHAN_CACHE, sizeof(*p->chanlast));
	if (!p->chanlast)
		return -1;
	t->mu_inter = -1;
	t->mu_intra = -1;
	if (sizehint) {
		p->evcap = sizehint / 24 + 16;
		t->ev = malloc(p->evcap * sizeof(*t->ev));
		t->time = malloc(p->evcap * sizeof(*t->time));
		t->loc = malloc(p->evcap * sizeof(*t->loc));
		if (!t->ev || !t->time || !t->loc)
			return -1;
	}
	return 0;
}

/* The parser's own arrays and maps (not the trace). */
static void parser_free(struct parser *p)
{
	free(p->locdirect);
	free(p->chanlast);
	free(p->ls);
	free(p->offs);
	free(p->chans);
	free(p->chq);
	free(p->cbl);
	free(p->loc_node_named);
	trace_hmap_free(&p->locmap);
	trace_hmap_free(&p->commmap);
	trace_hmap_free(&p->chanmap);
	trace_hmap_free(&p->nodemap);
	trace_hmap_free(&p->rankmap);
}

/* The whole lines [blk, bend) of one block; *linep: the lines before it
 * (updated).  Returns 0, -1 on memory error, -2 on a fatal error (errno
 * set, errp filled). */
static int read_block(struct parser *p, const char *blk, const char *bend,
		      uint32_t *linep, struct sh5_error *errp)
{
	struct sh5_trace *t = p->t;
	uint32_t line = *linep;
	const char *nl;
	size_t nev0;
	int rl, nomem = 0, rc = 0;

	while (blk < bend) {
		if (line == UINT32_MAX - 1) {
			errno = EFBIG;
			sh5_errprintf(errp, "%s: too many lines", p->name);
			rc = -2;
			break;
		}
		line++;
		nev0 = t->nev;
		/* Most lines: an event of a simple shape. */
		if ((unsigned)((unsigned char)*blk - '0') <= 9 && line > 1) {
			const char *next = parse_fast(p, blk, bend, line,
						      &nomem);
			if (next) {
				blk = next;
				if (line_done(p, line, nev0) < 0) {
					rc = -1;
					break;
				}
				continue;
			}
			if (nomem) {
				rc = -1;
				break;
			}
		}
		nl = memchr(blk, '\n', (size_t)(bend - blk));
		rl = read_other(p, blk, (size_t)(nl - blk), line, errp);
		if (rl == -1 || line_done(p, line, nev0) < 0) {
			rc = -1;
			break;
		}
		if (rl < 0) {
			rc = -2;
			break;
		}
		blk = nl + 1;
	}
	*linep = line;
	return rc;
}

static struct sh5_trace *read_src(struct csrc *src, const char *name,
				  size_t sizehint, struct sh5_error *errp)
{
	struct parser p;
	struct sh5_trace *t;
	const char *blk;
	size_t n;
	uint32_t line = 0;
	int r, rb, virt;

	rb = parser_init(&p, name, sizehint);
	t = p.t;
	if (!t) {
		sh5_errprintf(errp, "%s: %s", name, strerror(errno));
		return NULL;
	}
	if (rb < 0)
		NOMEM(p);
	while ((r = trace_csrc_next(src, &blk, &n, &virt)) > 0) {
		rb = read_block(&p, blk, blk + n, &line, errp);
		if (rb == -1)
			NOMEM(p);
		if (rb < 0)
			goto fail;
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
	parser_free(&p);
	return t;
}

struct sh5_trace *sh5_trace_read(const char *path, struct sh5_error *errp)
{
	struct csrc src;
	struct sh5_trace *t;
	struct stat st;

	if (trace_csrc_open(&src, path, CSRC_CHUNK) < 0) {
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

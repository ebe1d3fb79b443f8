/* trace_parse.c - the general parser, the location and
 * communicator tables (trace_int.h) */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sync/trace_int.h"

/* --------------------------------------------------------------- parse */

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

/* loc_index() of a location not in the direct table. */
uint32_t trace_loc_index_slow(struct parser *p, int64_t id)
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

int trace_comm_add(struct parser *p, int64_t id, uint32_t *idx)
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

/* A #mu or #mu-intra directive.  Returns 0. */
static int parse_mu(struct parser *p, const char *s, size_t len,
		    uint32_t line)
{
	struct sh5_trace *t = p->t;
	int intra = word_is(s, len, "#mu-intra");
	const char *tok[4];
	size_t tl[4], n;
	int64_t v;

	if (p->seen_data) {
		sh5_trace_problem_add(t, line, "directive after the first "
				      "data line");
		return 0;
	}
	n = split_ws(s, len, tok, tl, 4);
	if (n != 2 || parse_i64(tok[1], tl[1], &v) < 0 || v < 0) {
		sh5_trace_problem_add(t, line, "malformed %s directive (want "
				      "one integer >= 0)", intra ?
				      "#mu-intra" : "#mu");
		return 0;
	}
	if (intra)
		t->mu_intra = v;
	else
		t->mu_inter = v;
	return 0;
}

/* The next blank-separated token of s from *pos on in [*b, *e), *pos
 * after it.  0 when there is none. */
static int next_token(const char *s, size_t len, size_t *pos, size_t *b,
		      size_t *e)
{
	size_t q = *pos;

	while (q < len && (s[q] == ' ' || s[q] == '\t'))
		q++;
	*pos = q;
	if (q == len)
		return 0;
	*b = q;
	while (q < len && s[q] != ' ' && s[q] != '\t')
		q++;
	*e = q;
	*pos = q;
	return 1;
}

/* The id of a #comm (tok, len bytes) into *cid, the new communicator's
 * index into *cidx.  1, 0 when bad (problem recorded), -1 on memory
 * error. */
static int comm_head(struct parser *p, const char *tok, size_t len,
		     uint32_t line, int64_t *cid, uint32_t *cidx)
{
	if (parse_i64(tok, len, cid) < 0) {
		sh5_trace_problem_add(p->t, line, "malformed #comm: bad "
				      "communicator id");
		return 0;
	}
	if (trace_hmap_get(&p->commmap, (uint64_t)*cid, 0, 0,
			   SH5_TRACE_NONE) != SH5_TRACE_NONE) {
		sh5_trace_problem_add(p->t, line, "communicator %lld declared "
				      "twice", (long long)*cid);
		return 0;
	}
	if (trace_comm_add(p, *cid, cidx) < 0)
		return -1;
	if (*cid == 0) {
		p->comm0 = (int)*cidx;
		p->comm0_declared = 1;
	}
	return 1;
}

/* The name of a #node (tok, len bytes): its index into *nidx (new or
 * not).  1, or -1 on memory error. */
static int node_head(struct parser *p, const char *tok, size_t len,
		     uint32_t *nidx)
{
	uint64_t h = 1469598103934665603ULL;
	size_t q;

	for (q = 0; q < len; q++)
		h = (h ^ (unsigned char)tok[q]) * 1099511628211ULL;
	*nidx = trace_hmap_get(&p->nodemap, h, len, 0,
			       (uint32_t)p->nnode_named);
	if (*nidx == HMAP_NOMEM)
		return -1;
	if (*nidx == p->nnode_named)
		p->nnode_named++;
	return 1;
}

/* Location li (number lid) the next member of communicator cidx (id
 * cid).  0, 1 when listed twice (problem recorded), -1 on memory
 * error. */
static int comm_member(struct parser *p, uint32_t cidx, int64_t cid,
		       int64_t lid, uint32_t li, uint32_t line)
{
	struct sh5_trace *t = p->t;
	size_t c = p->cmemcap;
	uint32_t *m, r;

	r = trace_hmap_get(&p->rankmap, cidx, li, 0,
			   (uint32_t)(p->ncmem - t->comm_first[cidx]));
	if (r == HMAP_NOMEM)
		return -1;
	if (r != p->ncmem - t->comm_first[cidx]) {
		sh5_trace_problem_add(t, line, "location %lld listed twice "
				      "in communicator %lld", (long long)lid,
				      (long long)cid);
		return 1;
	}
	m = grow(t->comm_members, &c, p->ncmem + 1, sizeof(*m));
	if (!m)
		return -1;
	t->comm_members = m;
	p->cmemcap = c;
	m[p->ncmem++] = li;
	t->comm_first[cidx + 1] = (uint32_t)p->ncmem;
	return 0;
}

/* Location li (number lid) on node nidx.  0, or 1 when it is on another
 * one already (problem recorded). */
static int node_member(struct parser *p, uint32_t nidx, int64_t lid,
		       uint32_t li, uint32_t line)
{
	if (p->loc_node_named[li] != SH5_TRACE_NONE &&
	    p->loc_node_named[li] != nidx) {
		sh5_trace_problem_add(p->t, line, "location %lld is on two "
				      "nodes", (long long)lid);
		return 1;
	}
	p->loc_node_named[li] = nidx;
	return 0;
}

/* A #comm or #node directive (is_comm): the id or name, then the
 * locations (long lists: tokens walked without a fixed limit).  0, or -1
 * on memory error. */
static int parse_members(struct parser *p, const char *s, size_t len,
			 uint32_t line, int is_comm)
{
	size_t pos = 5, k = 0, b, e;
	uint32_t cidx = 0, nidx = 0, li;
	int64_t cid = 0, lid;
	int r;

	while (next_token(s, len, &pos, &b, &e)) {
		if (k == 0) {
			r = is_comm ? comm_head(p, s + b, e - b, line, &cid,
						&cidx) :
			    node_head(p, s + b, e - b, &nidx);
			if (r <= 0)
				return r;
			k++;
			continue;
		}
		if (parse_i64(s + b, e - b, &lid) < 0 || lid < 0) {
			sh5_trace_problem_add(p->t, line, "malformed %s: bad "
					      "location '%.*s'", is_comm ?
					      "#comm" : "#node", (int)(e - b),
					      s + b);
			return 0;
		}
		li = loc_index(p, lid);
		if (li == SH5_TRACE_NONE)
			return -1;
		r = is_comm ? comm_member(p, cidx, cid, lid, li, line) :
		    node_member(p, nidx, lid, li, line);
		if (r < 0)
			return -1;
		if (r == 0)
			k++;
	}
	if (k == 0)
		sh5_trace_problem_add(p->t, line, "malformed %s directive",
				      is_comm ? "#comm" : "#node");
	return 0;
}

/* A directive line (#comm, #node, #mu, #mu-intra).  Returns 0, 1 when the
 * line is an ordinary comment, -1 on memory error. */
static int parse_directive(struct parser *p, const char *s, size_t len,
			   uint32_t line)
{
	if (word_is(s, len, "#mu") || word_is(s, len, "#mu-intra"))
		return parse_mu(p, s, len, line);
	if (!word_is(s, len, "#comm") && !word_is(s, len, "#node"))
		return 1;
	if (p->seen_data) {
		sh5_trace_problem_add(p->t, line,
				      "directive after the first data line");
		return 0;
	}
	return parse_members(p, s, len, line, word_is(s, len, "#comm"));
}

/* The comma-separated fields of the line s (len bytes, no '\n') in f[],
 * their lengths in fl[]: returns how many (9: more than 8; only the
 * first 8 are set). */
static size_t split_fields(const char *s, size_t len, const char **f,
			   size_t *fl)
{
	size_t nf, i;

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
	return nf;
}

/* The kind field (s, len bytes) into r->kind and r->is_offset.  0, or -1
 * when unknown. */
static int data_kind(const char *s, size_t len, struct rec *r)
{
#define KIND_IS(w) (len == sizeof(w) - 1 && !memcmp(s, w, len))
	r->is_offset = 0;
	if (KIND_IS("INT"))
		r->kind = SH5_EV_INT;
	else if (KIND_IS("SEND"))
		r->kind = SH5_EV_SEND;
	else if (KIND_IS("RECV"))
		r->kind = SH5_EV_RECV;
	else if (KIND_IS("CBEGIN"))
		r->kind = SH5_EV_CBEGIN;
	else if (KIND_IS("CEND"))
		r->kind = SH5_EV_CEND;
	else if (KIND_IS("OFFSET")) {
		r->kind = SH5_EV_INT;
		r->is_offset = 1;
	} else {
		return -1;
	}
#undef KIND_IS
	return 0;
}

/* The fields after the kind of an OFFSET, INT, SEND or RECV line into *r.
 * 1 when valid, 0 when not (problem recorded). */
static int plain_fields(struct sh5_trace *t, uint32_t line,
			const char **f, const size_t *fl, struct rec *r)
{
	if (r->is_offset) {
		if (parse_i64(f[3], fl[3], &r->peer) < 0 ||
		    parse_i64(f[4], fl[4], &r->tag) < 0 || r->tag < 0 ||
		    fl[5] || fl[6] || fl[7]) {
			sh5_trace_problem_add(t, line, "malformed OFFSET line "
					      "(want loc,time,OFFSET,offset,"
					      "rtt,,,)");
			return 0;
		}
	} else if (r->kind == SH5_EV_INT) {
		if (fl[3] || fl[4] || fl[5] || fl[6] || fl[7]) {
			sh5_trace_problem_add(t, line, "malformed INT line: "
					      "fields after the kind must be "
					      "empty");
			return 0;
		}
	} else {
		if (parse_i64(f[3], fl[3], &r->peer) < 0 || r->peer < 0 ||
		    parse_i64(f[4], fl[4], &r->tag) < 0 ||
		    parse_i64(f[5], fl[5], &r->comm) < 0 || fl[6]) {
			sh5_trace_problem_add(t, line, "malformed %s line "
					      "(want peer,tag,comm and an "
					      "empty root)", r->kind ==
					      SH5_EV_SEND ? "SEND" : "RECV");
			return 0;
		}
	}
	return 1;
}

/* The fields after the kind of a CBEGIN or CEND line into *r.  1 when
 * valid, 0 when not (problem recorded). */
static int coll_fields(struct sh5_trace *t, uint32_t line, const char **f,
		       const size_t *fl, struct rec *r)
{
	unsigned op = op_lookup(f[3], fl[3]);

	if (op == SH5_OP_NONE) {
		sh5_trace_problem_add(t, line, "unknown collective "
				      "operation '%.*s'",
				      (int)(fl[3] > 40 ? 40 : fl[3]), f[3]);
		return 0;
	}
	if (parse_i64(f[5], fl[5], &r->comm) < 0) {
		sh5_trace_problem_add(t, line, "malformed %s line: "
				      "bad communicator", r->kind ==
				      SH5_EV_CBEGIN ? "CBEGIN" : "CEND");
		return 0;
	}
	if (op_rooted(op)) {
		if (parse_i64(f[6], fl[6], &r->root) < 0 || r->root < 0) {
			sh5_trace_problem_add(t, line, "malformed line: %s "
					      "needs a root location",
					      trace_op_names[op]);
			return 0;
		}
	} else if (fl[6]) {
		sh5_trace_problem_add(t, line, "malformed line: %s takes no "
				      "root", trace_op_names[op]);
		return 0;
	}
	if (fl[4]) {
		sh5_trace_problem_add(t, line, "malformed line: collectives "
				      "take no tag");
		return 0;
	}
	r->op = op;
	return 1;
}

/* Parse one data line.  Returns 1 with its fields in *r (the caller adds
 * the event), 0 when it is not valid (problem recorded). */
static int parse_data(struct parser *p, const char *s, size_t len,
		      uint32_t line, struct rec *r)
{
	struct sh5_trace *t = p->t;
	const char *f[8];
	size_t fl[8], nf;
	int64_t bytes;

	nf = split_fields(s, len, f, fl);
	if (nf != 8) {
		sh5_trace_problem_add(t, line, "malformed line: want 8 "
				      "comma-separated fields, got %s%zu",
				      nf > 8 ? "more than " : "",
				      nf > 8 ? (size_t)8 : nf);
		return 0;
	}
	if (parse_i64(f[0], fl[0], &r->lid) < 0 || r->lid < 0) {
		sh5_trace_problem_add(t, line, "malformed line: bad location "
				      "'%.*s'", (int)fl[0], f[0]);
		return 0;
	}
	if (parse_i64(f[1], fl[1], &r->tm) < 0) {
		sh5_trace_problem_add(t, line, "malformed line: bad time "
				      "'%.*s'", (int)fl[1], f[1]);
		return 0;
	}
	if (data_kind(f[2], fl[2], r) < 0) {
		sh5_trace_problem_add(t, line, "unknown kind '%.*s'",
				      (int)(fl[2] > 40 ? 40 : fl[2]), f[2]);
		return 0;
	}
	if (fl[7] && parse_i64(f[7], fl[7], &bytes) < 0) {
		sh5_trace_problem_add(t, line, "malformed line: bad bytes "
				      "'%.*s'", (int)fl[7], f[7]);
		return 0;
	}
	r->peer = r->tag = r->comm = r->root = 0;
	r->op = SH5_OP_NONE;
	if (r->kind == SH5_EV_CBEGIN || r->kind == SH5_EV_CEND)
		return coll_fields(t, line, f, fl, r);
	return plain_fields(t, line, f, fl, r);
}

/* Any line but the common event lines (s without its '\n').  Returns 0,
 * 1 with a valid data line's fields in *r (the caller adds the event), -1
 * on memory error, -2 on a fatal error (errno set, errp filled). */
int trace_read_line(struct parser *p, const char *s, size_t len,
		    uint32_t line, struct sh5_error *errp, struct rec *r)
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

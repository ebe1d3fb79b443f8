/* trace_assemble.c - matching of messages, assembly of
 * collectives, the per-location arrays (trace_int.h) */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync/timesync.h"	/* struct sh5_offset_point */
#include "sync/trace_int.h"

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

int trace_finish(struct parser *p)
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

/* evmatch.c - see evmatch.h */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "sync/evmatch.h"
#include "common/sort.h"

void sh5_evmsg_set(struct sh5_evmsg *m, const struct sh5_evtask *t,
		   size_t i, uint32_t self, uint32_t peer)
{
	const struct sh5ev_rec *e = &t->ev[i];
	int snd = e->kind == SH5EV_K_SEND;

	m->src = snd ? self : peer;
	m->dst = snd ? peer : self;
	m->comm = sh5_evstep_comm(t, e->id);
	m->tag = e->tag;
	m->seq = i;
}

/* Same (src, dst, comm, tag): 0; else the order of the keys. */
static int cmp_key(const struct sh5_evmsg *x, const struct sh5_evmsg *y)
{
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->dst != y->dst)
		return x->dst < y->dst ? -1 : 1;
	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	return 0;
}

/* Key, then seq. */
static int cmp_msg(const void *a, const void *b)
{
	const struct sh5_evmsg *x = a, *y = b;
	int c = cmp_key(x, y);

	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int sh5_evmatch(void *sends, size_t ns, void *recvs, size_t nr, size_t size,
		sh5_evmatch_fn fn, void *arg, uint64_t *unmatched_sends,
		uint64_t *unmatched_recvs)
{
	char *s = sends, *r = recvs;
	size_t i = 0, j = 0;
	int c;

	sh5_qsort(s, ns, size, cmp_msg);
	sh5_qsort(r, nr, size, cmp_msg);
	while (i < ns || j < nr) {
		c = i == ns ? 1 : j == nr ? -1 :
			cmp_key((const void *)(s + i * size),
				(const void *)(r + j * size));
		if (c < 0) {
			if (unmatched_sends)
				(*unmatched_sends)++;
			i++;
		} else if (c > 0) {
			if (unmatched_recvs)
				(*unmatched_recvs)++;
			j++;
		} else {
			if (fn(arg, s + i * size, r + j * size) < 0)
				return -1;
			i++;
			j++;
		}
	}
	return 0;
}

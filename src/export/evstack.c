/* evstack.c - see evstack.h */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "events/evformat.h"
#include "export/evstack.h"

int sh5_evstack_push(struct sh5_evstack *st, uint32_t region,
		     uint32_t flags, int64_t t, size_t at)
{
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 32;
		struct sh5_evstack_ent *ne = realloc(st->e, cap * sizeof(*ne));

		if (!ne) {
			errno = ENOMEM;
			return -1;
		}
		st->e = ne;
		st->cap = cap;
	}
	st->e[st->n].region = region;
	st->e[st->n].flags = flags;
	st->e[st->n].t = t;
	st->e[st->n].at = at;
	st->n++;
	if (flags & SH5EV_F_MPI)
		st->nmpi++;
	return 0;
}

int sh5_evstack_pop(struct sh5_evstack *st, uint32_t region,
		    struct sh5_evstack_ent *out)
{
	size_t i = st->n;

	while (i > 0 && st->e[i - 1].region != region)
		i--;
	if (i == 0) {
		st->dropped++;
		return 0;
	}
	*out = st->e[i - 1];
	while (st->n >= i) {
		if (st->e[st->n - 1].flags & SH5EV_F_MPI)
			st->nmpi--;
		if (st->n > i)
			st->dropped++;
		st->n--;
		if (st->n == 0)
			break;
	}
	return 1;
}

void sh5_evstack_reset(struct sh5_evstack *st)
{
	st->n = 0;
	st->nmpi = 0;
}

void sh5_evstack_free(struct sh5_evstack *st)
{
	free(st->e);
	st->e = NULL;
	st->n = st->cap = st->nmpi = 0;
}

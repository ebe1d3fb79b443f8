/* trace.c - see trace.h; the files of the reader and writer: see
 * trace_int.h */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "sync/trace_int.h"

/* ------------------------------------------------------------- helpers */

const char *const trace_op_names[SH5_OP_COUNT] = {
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

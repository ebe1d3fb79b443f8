/* prefault.c - see prefault.h */
#include "config.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/prefault.h"

/* Linux's value (uapi/asm-generic/mman-common.h), for older headers. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

void sh5_prefault(void *p, size_t n)
{
	static int unsupported;
	uintptr_t pg = 4096, a, b;
	long sz;

	if (!p || !n || unsupported)
		return;
	if ((sz = sysconf(_SC_PAGESIZE)) > 0)
		pg = (uintptr_t)sz;
	/* The first and last pages hold p and p + n - 1: both mapped. */
	a = (uintptr_t)p & ~(pg - 1);
	b = ((uintptr_t)p + n + pg - 1) & ~(pg - 1);
	if (madvise((void *)a, b - a, MADV_POPULATE_WRITE) < 0)
		unsupported = 1;
}

/*
 * sort.h - qsort() that accepts what it is often handed: an empty array
 * may be NULL (qsort's base must never be NULL, even for 0 elements:
 * undefined behaviour, found by UBSan), and 0 or 1 element needs no sort.
 */
#ifndef SH5_SORT_H
#define SH5_SORT_H

#include <stdlib.h>

static inline void sh5_qsort(void *base, size_t n, size_t size,
			     int (*cmp)(const void *, const void *))
{
	if (base && n > 1)
		qsort(base, n, size, cmp);
}

#endif /* SH5_SORT_H */

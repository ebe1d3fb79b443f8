/* csvfmt.c - see csvfmt.h: integers (doubles: fmtdouble.c) */
#include "config.h"

#include <string.h>

#include "common/csvfmt.h"
#include "common/digits.h"

size_t sh5_fmt_u64(char *buf, uint64_t v)
{
	size_t n = ndigits(v);

	put_left(buf, v, n);
	buf[n] = '\0';
	return n;
}

size_t sh5_fmt_i64(char *buf, int64_t v)
{
	if (v < 0) {
		buf[0] = '-';
		return 1 + sh5_fmt_u64(buf + 1, (uint64_t)0 - (uint64_t)v);
	}
	return sh5_fmt_u64(buf, (uint64_t)v);
}

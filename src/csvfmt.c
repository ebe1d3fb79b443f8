/* csvfmt.c - see csvfmt.h */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "csvfmt.h"

size_t sh5_fmt_u64(char *buf, uint64_t v)
{
	char tmp[24];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
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

static const double pow10tab[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6 };

size_t sh5_fmt_double(char *buf, double v)
{
	size_t k;

	if (isfinite(v) && fabs(v) < 1e15) {
		for (k = 0; k < sizeof(pow10tab) / sizeof(pow10tab[0]); k++) {
			double x = v * pow10tab[k];
			long long r;
			char digits[24];
			size_t n, pos = 0, i;
			uint64_t a;

			if (fabs(x) >= 9007199254740992.0) /* 2^53 */
				break;
			r = llround(x);
			/* Exact: both r and 10^k are exact doubles and the
			 * division is correctly rounded, as is strtod. */
			if ((double)r / pow10tab[k] != v)
				continue;
			if (r < 0)
				buf[pos++] = '-';
			a = r < 0 ? (uint64_t)0 - (uint64_t)r : (uint64_t)r;
			n = sh5_fmt_u64(digits, a);
			if (!k) {
				memcpy(buf + pos, digits, n + 1);
				return pos + n;
			}
			if (n <= k) {
				buf[pos++] = '0';
				buf[pos++] = '.';
				for (i = n; i < k; i++)
					buf[pos++] = '0';
				memcpy(buf + pos, digits, n);
				pos += n;
			} else {
				memcpy(buf + pos, digits, n - k);
				pos += n - k;
				buf[pos++] = '.';
				memcpy(buf + pos, digits + n - k, k);
				pos += k;
			}
			buf[pos] = '\0';
			return pos;
		}
	}
	return (size_t)snprintf(buf, SH5_FMT_MAX, "%.17g", v);
}

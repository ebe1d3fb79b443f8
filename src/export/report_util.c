/* report_util.c - what the parts of the report share (report_util.h). */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/report_int.h"

void rp_missing(struct rp *r, const char *fmt, ...)
{
	va_list ap;
	size_t i = r->res->nmissing;

	if (i < 16) {
		va_start(ap, fmt);
		vsnprintf(r->res->missing[i], sizeof(r->res->missing[i]), fmt,
			  ap);
		va_end(ap);
	}
	r->res->nmissing++;
}

int rp_num(struct sh5_json *j, double v)
{
	char b[32];

	if (!isfinite(v))
		return sh5_json_null(j);
	snprintf(b, sizeof(b), "%.4g", v);
	return sh5_json_double(j, strtod(b, NULL));
}

int rp_base64(struct sh5_json *j, const unsigned char *p, size_t n)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqr"
				"stuvwxyz0123456789+/";
	char *s = malloc((n + 2) / 3 * 4 + 1), *o = s;
	size_t i;
	int rc;

	if (!s)
		return sh5_json_null(j);
	for (i = 0; i + 2 < n; i += 3) {
		*o++ = t[p[i] >> 2];
		*o++ = t[(p[i] & 3) << 4 | p[i + 1] >> 4];
		*o++ = t[(p[i + 1] & 15) << 2 | p[i + 2] >> 6];
		*o++ = t[p[i + 2] & 63];
	}
	if (i < n) {
		*o++ = t[p[i] >> 2];
		if (i + 1 < n) {
			*o++ = t[(p[i] & 3) << 4 | p[i + 1] >> 4];
			*o++ = t[(p[i + 1] & 15) << 2];
		} else {
			*o++ = t[(p[i] & 3) << 4];
			*o++ = '=';
		}
		*o++ = '=';
	}
	*o = 0;
	rc = sh5_json_string(j, s);
	free(s);
	return rc;
}

/* series_csv.c - see series_csv.h */
#include "config.h"

#include <string.h>

#include "common/csvfmt.h"
#include "common/timeconv.h"
#include "profile/series.h"
#include "profile/series_csv.h"

/* EpochTime values 1..EPOCH_NS_MAX times 10^9 fit an int64_t. */
#define EPOCH_NS_MAX UINT64_C(9223372036)

size_t sh5_fmt_row(char *buf, const struct sh5_series *s,
		   const union sh5_value *v)
{
	size_t len = 0, i, tlen;
	const union sh5_value *f = v + SH5_TIME_SLOTS;
	char *t;

	len += sh5_fmt_u64(buf + len, v[0].u);
	buf[len++] = ',';
	t = buf + len;
	tlen = sh5_fmt_u64(t, v[1].u);
	len += tlen;
	buf[len++] = ',';
	if (!s->has_time_ns && v[1].u - 1 < EPOCH_NS_MAX) {
		/* EpochTime * 10^9: its digits and nine zeros. */
		memcpy(buf + len, t, tlen);
		memcpy(buf + len + tlen, "000000000", 9);
		len += tlen + 9;
	} else {
		len += sh5_fmt_i64(buf + len, s->has_time_ns ? v[2].i :
				   sh5_epoch_to_ns(v[1].u));
	}
	if (s->has_sync_ns) {
		buf[len++] = ',';
		len += sh5_fmt_i64(buf + len, v[SH5_SLOT_SYNC(s)].i);
	}
	for (i = 0; i < s->nfields; i++) {
		buf[len++] = ',';
		if (s->fields[i].type == SH5_FT_DOUBLE)
			len += sh5_fmt_double(buf + len, f[i].d);
		else
			len += sh5_fmt_u64(buf + len, f[i].u);
	}
	buf[len++] = '\n';
	return len;
}

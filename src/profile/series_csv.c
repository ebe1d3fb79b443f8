/* series_csv.c - see series_csv.h */
#include "config.h"

#include <string.h>

#include "common/csvfmt.h"
#include "common/fmtfast.h"
#include "common/timeconv.h"
#include "profile/series.h"
#include "profile/series_csv.h"

/* EpochTime values 1..EPOCH_NS_MAX times 10^9 fit an int64_t. */
#define EPOCH_NS_MAX UINT64_C(9223372036)

/* v's digits into buf (room for SH5_FMT_MAX + 1 bytes) through memo
 * slot i: when v is one above the value last written there and its last
 * digit is not 9, that digit is incremented; when v is at most 99 above
 * it and only its last two digits change (no carry further), they are
 * patched into a copy of the last text; else v is formatted afresh. */
static inline __attribute__((always_inline)) size_t
put_u64_memo(char *buf, uint64_t v, struct sh5_fmt_memo *m, int i)
{
	size_t len = m->len[i];
	char *t = m->text[i];

	if (len && v - m->v[i] == 1 && t[len - 1] != '9') {
		/* the common step: one more, no carry */
		t[len - 1]++;
		m->v[i] = v;
		memcpy(buf, t, 24);
		return len;
	}
	if (len >= 2 && v >= m->v[i] && v - m->v[i] < 100) {
		unsigned tail = (unsigned)(t[len - 2] - '0') * 10 +
				(unsigned)(t[len - 1] - '0') +
				(unsigned)(v - m->v[i]);

		if (tail < 100) {
			memcpy(t + len - 2, digits2 + tail * 2, 2);
			m->v[i] = v;
			memcpy(buf, t, 24); /* len <= 20 */
			return len;
		}
	}
	len = sh5_fmt_u64_fast(buf, v);
	memcpy(t, buf, 24);
	m->v[i] = v;
	m->len[i] = len;
	return len;
}

size_t sh5_fmt_row(char *buf, const struct sh5_series *s,
		   const union sh5_value *v)
{
	struct sh5_fmt_memo m;

	m.len[0] = m.len[1] = 0;
	return sh5_fmt_row_memo(buf, s, v, &m);
}

/* Field i of f, a double or not, after buf's len bytes, after a comma:
 * the new length. */
static inline __attribute__((always_inline)) size_t
put_typed(char *buf, size_t len, const union sh5_value *f, size_t i,
	  int is_double)
{
	buf[len++] = ',';
	if (is_double)
		return len + sh5_fmt_double_fast(buf + len, f[i].d);
	return len + sh5_fmt_u64_fast(buf + len, f[i].u);
}

/* Field i of f after buf's len bytes, its type from fl. */
static inline __attribute__((always_inline)) size_t
put_field(char *buf, size_t len, const struct sh5_field *fl,
	  const union sh5_value *f, size_t i)
{
	return put_typed(buf, len, f, i, fl[i].type == SH5_FT_DOUBLE);
}

/* Which of a Task series' 8 fields are doubles (bit i: field i), in
 * Slurm 22.05's Task type and the stock plugin's: CPUTime,
 * CPUUtilization, ReadMB, WriteMB.  A series with this pattern has its
 * field types as constants (eight == 2): no look-up per field and row. */
#define TASK8_DOUBLES 0xc6u

/* The nf fields f: the new length; 8 of them (Task series, the stock
 * plugin's and ours) unrolled, no loop (eight; only sh5_fmt_rows_split's
 * loop has that: each copy is large). */
static inline __attribute__((always_inline)) size_t
put_fields(char *buf, size_t len, const struct sh5_field *fl,
	   const union sh5_value *f, size_t nf, int eight)
{
	size_t i;

	if (eight == 2) {
#pragma GCC unroll 8
		for (i = 0; i < 8; i++)
			len = put_typed(buf, len, f, i,
					(TASK8_DOUBLES >> i) & 1);
		return len;
	}
	if (eight) {
#pragma GCC unroll 8
		for (i = 0; i < 8; i++)
			len = put_field(buf, len, fl, f, i);
		return len;
	}
	for (i = 0; i < nf; i++)
		len = put_field(buf, len, fl, f, i);
	return len;
}

/* A row from its time slots v and its fields f (the sync slot after
 * them). */
static inline __attribute__((always_inline)) size_t
fmt_row(char *buf, const struct sh5_series *s, const union sh5_value *v,
	const union sh5_value *f, struct sh5_fmt_memo *m, int eight)
{
	/* In locals: the stores through buf could alias s, which the
	 * compiler would read again for every field. */
	const struct sh5_field *fl = s->fields;
	size_t len = 0, tlen, nf = s->nfields;
	char *t;

	len += put_u64_memo(buf + len, v[0].u, m, 0);
	buf[len++] = ',';
	t = buf + len;
	tlen = put_u64_memo(t, v[1].u, m, 1);
	len += tlen;
	buf[len++] = ',';
	if (!s->has_time_ns && v[1].u - 1 < EPOCH_NS_MAX) {
		/* EpochTime * 10^9: its digits (from the memo, 24 bytes as
		 * put_u64_memo copies them) and nine zeros. */
		memcpy(buf + len, m->text[1], 24);
		memcpy(buf + len + tlen, "000000000", 9);
		len += tlen + 9;
	} else {
		len += sh5_fmt_i64(buf + len, s->has_time_ns ? v[2].i :
				   sh5_epoch_to_ns(v[1].u));
	}
	if (s->has_sync_ns) {
		buf[len++] = ',';
		len += sh5_fmt_i64(buf + len, f[nf].i);
	}
	len = put_fields(buf, len, fl, f, nf, eight);
	buf[len++] = '\n';
	return len;
}

size_t sh5_fmt_row_memo(char *buf, const struct sh5_series *s,
			const union sh5_value *v, struct sh5_fmt_memo *m)
{
	return fmt_row(buf, s, v, v + SH5_TIME_SLOTS, m, 0);
}

#define PRE_COPY 32 /* a prefix up to this is copied this many bytes */

size_t sh5_fmt_rows_split(char *buf, const struct sh5_series *s,
			  const char *prefix, size_t plen,
			  const unsigned char *recs, size_t rsz, size_t n,
			  struct sh5_fmt_memo *m)
{
	char pre[PRE_COPY] = "", *p = buf;
	unsigned dmask = 0;
	size_t r;
	int eight = s->nfields == 8;

	/* Fixed size: no call; the row overwrites what is past it. */
	if (plen <= PRE_COPY)
		memcpy(pre, prefix, plen);
	/* The field types once for all n rows. */
	for (r = 0; eight && r < 8; r++)
		if (s->fields[r].type == SH5_FT_DOUBLE)
			dmask |= 1u << r;
	if (eight && dmask == TASK8_DOUBLES)
		eight = 2;
	for (r = 0; r < n; r++, recs += rsz) {
		const union sh5_value *t = (const void *)recs;

		if (plen <= PRE_COPY)
			memcpy(p, pre, PRE_COPY);
		else
			memcpy(p, prefix, plen);
		p += plen;
		if (eight == 2)
			p += fmt_row(p, s, t, t + 2, m, 2);
		else if (eight)
			p += fmt_row(p, s, t, t + 2, m, 1);
		else
			p += fmt_row(p, s, t, t + 2, m, 0);
	}
	return (size_t)(p - buf);
}

/*
 * series_csv.h - one CSV row of a series record, formatted with csvfmt.
 */
#ifndef SH5_SERIES_CSV_H
#define SH5_SERIES_CSV_H

#include <stddef.h>
#include <stdint.h>

#include "common/csvfmt.h"

/*
 * One CSV row of a memory record (struct sh5_series' layout), exactly as
 * the ops' extract_series writes it after its prefix:
 * ElapsedTime,EpochTime,EpochTimeNs[,SyncTimeNs],field...\n.  buf holds
 * at least SH5_FMT_ROW_MAX(s->nfields) bytes; no NUL is written.
 * extract_series formats a row this way only when its prefix and
 * SH5_FMT_ROW_MAX fit in 4096 bytes (SH5_FMT_ROW_LINE), else with printf.
 */
struct sh5_series;
union sh5_value;
#define SH5_FMT_ROW_MAX(nfields) (((nfields) + 4) * (SH5_FMT_MAX + 1) + 2)
#define SH5_FMT_ROW_LINE 4096
size_t sh5_fmt_row(char *buf, const struct sh5_series *s,
		   const union sh5_value *v);

/*
 * The same, for consecutive rows: ElapsedTime and EpochTime usually grow
 * by a little from row to row, and their text is patched from the last
 * row's rather than formatted again.  Start a memo with len[] zeroed;
 * any rows (of any series) may follow each other through one memo.
 */
struct sh5_fmt_memo {
	uint64_t v[2];             /* the last ElapsedTime, EpochTime */
	char text[2][SH5_FMT_MAX]; /* their digits */
	size_t len[2];             /* their lengths, 0: none */
};
size_t sh5_fmt_row_memo(char *buf, const struct sh5_series *s,
			const union sh5_value *v, struct sh5_fmt_memo *m);
/*
 * n rows through m from a file's own records (sh5_cursor_read_flat),
 * rsz bytes apart, each after the plen bytes of prefix: a record is
 * ElapsedTime, EpochTime (EpochTimeNs after them read only when
 * s->has_time_ns), then the fields from its third slot on (SyncTimeNs
 * after them read only when s->has_sync_ns).  buf holds at least n (plen
 * + SH5_FMT_ROW_MAX(s->nfields)) bytes (a prefix of up to 32 bytes is
 * copied 32 bytes at once, within that); no NUL.  The bytes written.
 * One call for many rows: no call per row.
 */
size_t sh5_fmt_rows_split(char *buf, const struct sh5_series *s,
			  const char *prefix, size_t plen,
			  const unsigned char *recs, size_t rsz, size_t n,
			  struct sh5_fmt_memo *m);

#endif /* SH5_SERIES_CSV_H */

/* extract_rows.c - CSV rows of series into an output buffer (see
 * extract_int.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fdio.h"
#include "merge/extract_int.h"
#include "profile/series_csv.h"

void sh5_extract_prefix(const struct sh5_extract *o,
			const struct sh5_extract_sel *e, char *buf, size_t len)
{
	if (is_tasks(o))
		snprintf(buf, len, "%s,%s,%s,", e->e.step, e->e.node, e->e.name);
	else
		snprintf(buf, len, "%s,%s,", e->e.step, e->e.node);
}

/* Tell o->warn that series e lost rows. */
void sh5_extract_warn_lost(const struct sh5_extract *o,
			   const struct sh5_extract_sel *e, uint64_t lost,
			   const char *reason)
{
	char msg[1024];

	if (!o->warn)
		return;
	snprintf(msg, sizeof(msg), "%s: %s/%s/%s: %" PRIu64 " rows "
		 "unreadable (%s)", o->input, e->e.step, e->e.node, e->e.path,
		 lost, reason);
	o->warn(o->arg, msg);
}

/* Has writing the output failed, through stdio or the descriptor? */
int sh5_extract_out_failed(FILE *out, int out_errno)
{
	return ferror(out) || out_errno;
}

void sh5_extract_wrote(int fd)
{
#ifdef SYNC_FILE_RANGE_WRITE
	/* Start writing the file's new pages to disk now, in the
	 * background: the output's fsync at the end (common/outfile) then
	 * waits for the last blocks only, not for all of them (11 ms of a
	 * 70 ms extract of 25 MB).  Pipes and terminals refuse it: no
	 * matter. */
	sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#else
	(void)fd;
#endif
}

static void out_error(struct obuf *b)
{
	if (!*b->out_errno)
		*b->out_errno = errno ? errno : EIO;
}

int sh5_obuf_flush(struct obuf *b)
{
	if (b->flush)
		return b->flush(b);
	if (b->dw) {
		/* The whole aligned blocks go, the rest stays in b->p. */
		if (sh5_dwrite_submit(b->dw, &b->p, &b->len) < 0) {
			out_error(b);
			b->len = 0;
			return -1;
		}
		return sh5_extract_out_failed(b->out, *b->out_errno) ? -1 : 0;
	}
	/* Straight to the file descriptor (after what stdio holds): a
	 * copy of every byte through stdio's buffer costs more than the
	 * write itself. */
	if (b->len && (fflush(b->out) != 0 ||
		       sh5_fd_write_all(fileno(b->out), b->p, b->len) < 0)) {
		out_error(b);
		b->len = 0;
		return -1;
	}
	if (b->len)
		sh5_extract_wrote(fileno(b->out));
	b->len = 0;
	return sh5_extract_out_failed(b->out, *b->out_errno) ? -1 : 0;
}

void sh5_obuf_direct(struct obuf *b)
{
	char *p;
	size_t len;

	if (b->flush || b->dw || getenv("SH5MERGE_NO_DIRECT") ||
	    sh5_obuf_flush(b) < 0 || fflush(b->out) != 0 ||
	    !(b->dw = sh5_dwrite_start(fileno(b->out), OUT_BUFFER, &p, &len)))
		return;
	b->own = b->p;
	b->p = p;
	b->len = len;
}

int sh5_obuf_direct_end(struct obuf *b)
{
	int rc = 0;

	if (!b->dw)
		return 0;
	if (sh5_dwrite_finish(b->dw, b->p, b->len) < 0) {
		out_error(b);
		rc = -1;
	}
	b->dw = NULL;
	b->p = b->own;
	b->own = NULL;
	b->len = 0;
	return rc;
}

/* The rows of n records after prefix: what ops->extract_series writes
 * (it formats each row with sh5_fmt_row unless prefix and row could
 * exceed its line buffer; then it does it itself). */
int sh5_extract_emit_rows(const struct sh5_extract_sel *e, const char *prefix,
			  const void *recs, size_t n, struct obuf *b)
{
	const struct sh5_series *s = e->s;
	size_t plen = strlen(prefix), max = SH5_FMT_ROW_MAX(s->nfields);
	size_t slots = sh5_record_slots(s), r;
	const union sh5_value *v = recs;
	struct sh5_fmt_memo memo;

	memo.len[0] = memo.len[1] = 0;
	if (plen + max > SH5_FMT_ROW_LINE) {
		/* stdio writes the rest: to the file the ordinary way. */
		if (sh5_obuf_flush(b) < 0 || sh5_obuf_direct_end(b) < 0)
			return -1;
		return s->ops->extract_series(s, b->out, 0, prefix, recs, n);
	}
	for (r = 0; r < n; r++, v += slots) {
		char *p;

		if (OUT_BUFFER - b->len < plen + max && sh5_obuf_flush(b) < 0)
			return -1;
		p = b->p + b->len;
		memcpy(p, prefix, plen);
		b->len += plen + sh5_fmt_row_memo(p + plen, s, v, &memo);
	}
	return 0;
}

/* The rows of n records as the file stores them (sh5_cursor_read_flat:
 * rsz bytes each), as sh5_extract_emit_rows writes them: as many at once
 * as the output buffer has room for. */
static int emit_flat(const struct sh5_extract_sel *e, const char *prefix,
		     const unsigned char *recs, size_t rsz, size_t n,
		     struct obuf *b)
{
	const struct sh5_series *s = e->s;
	size_t plen = strlen(prefix), row = plen + SH5_FMT_ROW_MAX(s->nfields);
	struct sh5_fmt_memo memo;

	memo.len[0] = memo.len[1] = 0;
	while (n) {
		size_t fit, k;

		if (OUT_BUFFER - b->len < row && sh5_obuf_flush(b) < 0)
			return -1;
		fit = (OUT_BUFFER - b->len) / row;
		k = n < fit ? n : fit;
		b->len += sh5_fmt_rows_split(b->p + b->len, s, prefix, plen,
					     recs, rsz, k, &memo);
		recs += k * rsz;
		n -= k;
	}
	return 0;
}

int sh5_extract_rows(struct sh5_cursor *c, const struct sh5_extract_sel *e,
		     const char *prefix, void *buf, uint64_t to,
		     struct obuf *b)
{
	size_t rows = ROW_BUFFER / e->s->ops->record_size(e->s), got;

	if (!rows)
		rows = 1;
	/* Rows that do not fit the line buffer go through the ops'. */
	if (strlen(prefix) + SH5_FMT_ROW_MAX(e->s->nfields) > SH5_FMT_ROW_LINE)
		c->flat = 0;
	while (c->pos < to) {
		size_t want = to - c->pos < rows ? (size_t)(to - c->pos) : rows;
		const void *recs;

		if (c->flat) {
			if ((got = sh5_cursor_read_flat(c, &recs, want))) {
				if (emit_flat(e, prefix, recs,
					      H5Tget_size(c->rtype), got,
					      b) < 0)
					return -1;
				continue;
			}
			if (c->flat)
				break; /* the end, or damage */
		}
		if (!(got = sh5_cursor_read(c, buf, want)))
			break;
		if (sh5_extract_emit_rows(e, prefix, buf, got, b) < 0)
			return -1;
	}
	return c->damaged ? 1 : 0;
}

/* Read and format rows [from, to) of an open cursor into b.  1 when the
 * series ended at damage there, 0 done, -1 write error. */
int sh5_extract_segment(struct sh5_cursor *c, const struct sh5_extract_sel *e,
			const char *prefix, void *buf, uint64_t from,
			uint64_t to, struct obuf *b)
{
	c->pos = from;
	return sh5_extract_rows(c, e, prefix, buf, to, b);
}

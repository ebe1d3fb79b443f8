/*
 * extract_int.h - internals shared by extract.c, extract_rows.c and
 * extract_piped.c (not installed, not for other areas).
 */
#ifndef SH5_EXTRACT_INT_H
#define SH5_EXTRACT_INT_H

#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "merge/extract_types.h"
#include "profile/reader.h"

#define ROW_BUFFER (1u << 20)

/* Series in a group (Tasks/<id>, or any group a gather plugin made):
 * one more key column, named Task for Tasks and Series otherwise. */
static inline int is_tasks(const struct sh5_extract *o)
{
	return o->group;
}

/* Rows are formatted into a large buffer and written in blocks: stdio's
 * per-line fwrite (a lock and a copy per call) costs as much as the
 * formatting itself. */
#define OUT_BUFFER (1u << 20)

struct obuf {
	char *p;
	size_t len;
	FILE *out;
	int fd;           /* >= 0: frames to this pipe (the child) */
	int splice;       /* the parent may splice the child's CSV to out */
	int err;          /* errno of a failed splice (no ferror(out) then) */
	int *out_errno;   /* errno of the first failed write (stdio keeps
			   * none) */
};

/* The time series CSV runs as two processes when it can.  Every series
 * is cut into segments of whole chunks (about SEG_ROWS rows); the
 * segments, in output order, go alternately to this process and to a
 * child.  Each reads, decodes (HDF5, inflate) and formats its own
 * segments; the child sends its CSV through a pipe, and this process
 * writes its own and the child's in order.  On two CPUs both halves of
 * the work (decoding and formatting) run in parallel; memory stays
 * bounded (the buffers of each process and the pipe).  The child's CSV
 * of a segment comes in frames: data frames, then one end frame that
 * says whether the segment met damage (the series ends there, as in one
 * process). */
#define SEG_ROWS 4096

struct frame {
	uint64_t len;     /* bytes of CSV that follow (data frame) */
	int64_t end;      /* 0 data, 1 end of segment, 2 end at damage,
			   * 3 the series could not be opened (reason) */
	uint64_t lost;
	char reason[200];
};

/* extract_rows.c */
void sh5_extract_prefix(const struct sh5_extract *o,
			const struct sh5_extract_sel *e, char *buf,
			size_t len);
void sh5_extract_warn_lost(const struct sh5_extract *o,
			   const struct sh5_extract_sel *e, uint64_t lost,
			   const char *reason);
int sh5_extract_out_failed(FILE *out, int out_errno);
int sh5_obuf_flush(struct obuf *b);
int sh5_frame_flush(struct obuf *b);
int sh5_extract_emit_rows(const struct sh5_extract_sel *e,
			  const char *prefix, const void *recs, size_t n,
			  struct obuf *b);
int sh5_extract_segment(struct sh5_cursor *c,
			const struct sh5_extract_sel *e, const char *prefix,
			void *buf, uint64_t from, uint64_t to,
			struct obuf *b);

/* extract_piped.c */
int sh5_extract_all_buffered(const struct sh5_extract *o,
			     const struct sh5_extract_sel *v, size_t n);
int sh5_extract_piped(const struct sh5_extract *o,
		      struct sh5_extract_sel *v, size_t n, struct obuf *out,
		      void *buf, struct sh5_error *errp);

#endif /* SH5_EXTRACT_INT_H */

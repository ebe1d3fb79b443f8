/*
 * extract_int.h - internals shared by extract.c, extract_rows.c and
 * extract_piped.c (not installed, not for other areas).
 */
#ifndef SH5_EXTRACT_INT_H
#define SH5_EXTRACT_INT_H

#include <stdint.h>
#include <stdio.h>

#include "common/dwrite.h"
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
	/* Set: hands full buffers on (the worker thread) instead of
	 * writing them to out. */
	int (*flush)(struct obuf *b);
	void *arg;
	int *out_errno;   /* errno of the first failed write (stdio keeps
			   * none) */
	/* Set: p is one of its blocks, and full buffers go to the file
	 * through it (common/dwrite: no copy into the page cache). */
	struct sh5_dwrite *dw;
	char *own;        /* then: the buffer p was, back at the end */
};

/* The time series CSV runs in two threads when it can.  Every series
 * is cut into segments of whole chunks (about SEG_ROWS rows); the
 * segments, in output order, go alternately to the calling thread and to
 * a worker thread.  Each reads, decodes (HDF5, inflate) and formats its
 * own segments; the calling thread writes its own CSV and the worker's,
 * which comes through a small ring of blocks, in order.  HDF5 calls are
 * serialized by HDF5's own lock (a thread-safe build, else one thread
 * does all); decoding and formatting run in parallel on two CPUs, and
 * memory stays bounded (the ring and each thread's buffers). */
#define SEG_ROWS 4096

/* extract_rows.c */
void sh5_extract_prefix(const struct sh5_extract *o,
			const struct sh5_extract_sel *e, char *buf,
			size_t len);
void sh5_extract_warn_lost(const struct sh5_extract *o,
			   const struct sh5_extract_sel *e, uint64_t lost,
			   const char *reason);
int sh5_extract_out_failed(FILE *out, int out_errno);
int sh5_obuf_flush(struct obuf *b);
/* Write b's rows through common/dwrite from now on when the output
 * allows it (a regular file; SH5MERGE_NO_DIRECT unset), else as before:
 * b->p is then one of dwrite's blocks, b's own kept in b->own. */
void sh5_obuf_direct(struct obuf *b);
/* Write what dwrite holds, end it and give b its own buffer back (b->p
 * empty; nothing when b writes no other way).  0, or -1 with
 * *b->out_errno set. */
int sh5_obuf_direct_end(struct obuf *b);
/* Bytes were written to fd (the output): see extract_rows.c. */
void sh5_extract_wrote(int fd);
int sh5_extract_emit_rows(const struct sh5_extract_sel *e,
			  const char *prefix, const void *recs, size_t n,
			  struct obuf *b);
/* Read and format the rows of an open cursor up to row to into b (from
 * the file's records when c->flat, without the copy into the ops'
 * layout).  1 when the series ended at damage, 0 done, -1 write error. */
int sh5_extract_rows(struct sh5_cursor *c, const struct sh5_extract_sel *e,
		     const char *prefix, void *buf, uint64_t to,
		     struct obuf *b);
int sh5_extract_segment(struct sh5_cursor *c,
			const struct sh5_extract_sel *e, const char *prefix,
			void *buf, uint64_t from, uint64_t to,
			struct obuf *b);

/* extract_par.c */
int sh5_extract_all_buffered(const struct sh5_extract *o,
			     const struct sh5_extract_sel *v, size_t n);
int sh5_extract_par(const struct sh5_extract *o, struct sh5_extract_sel *v,
		    size_t n, struct obuf *out, void *buf,
		    struct sh5_error *errp);

#endif /* SH5_EXTRACT_INT_H */

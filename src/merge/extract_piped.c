/* extract_piped.c - the time series CSV in two processes (see
 * extract_int.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fdio.h"
#include "merge/extract_int.h"
#include "profile/series_csv.h"

/* Can every row go through sh5_extract_emit_rows' buffer (the child has
 * no FILE)? */
int sh5_extract_all_buffered(const struct sh5_extract *o,
			     const struct sh5_extract_sel *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char prefix[256];

		sh5_extract_prefix(o, &v[i], prefix, sizeof(prefix));
		if (strlen(prefix) + SH5_FMT_ROW_MAX(v[i].s->nfields) >
		    SH5_FMT_ROW_LINE)
			return 0;
	}
	return 1;
}

/* Rows per segment of a cursor: whole chunks, about SEG_ROWS
 * (SH5MERGE_EXTRACT_SEGMENT overrides it, for tests). */
static uint64_t seg_rows(uint64_t cr)
{
	uint64_t want = SEG_ROWS;
	const char *e = getenv("SH5MERGE_EXTRACT_SEGMENT");

	if (e && strtoull(e, NULL, 10) > 0)
		want = strtoull(e, NULL, 10);
	if (!cr)
		return want;
	return cr >= want ? cr : want / cr * cr;
}

/* How a series is cut, worked out before the fork so that both
 * processes agree without opening every series: rows and chunk rows as
 * the cursor finds them, and the global index of its first segment. */
struct segs {
	uint64_t nrows, step, first, count;
};

static void plan_segments(const struct sh5_extract_sel *v, size_t n,
			  struct segs *sg)
{
	uint64_t g = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		hid_t sp = H5Dget_space(v[i].dset);
		hid_t dcpl = H5Dget_create_plist(v[i].dset);
		hsize_t dims[1] = { 0 }, cdims[1] = { 0 };
		uint64_t cr = 0;

		sg[i].nrows = 0;
		if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
		    H5Sget_simple_extent_dims(sp, dims, NULL) == 1)
			sg[i].nrows = dims[0];
		if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED &&
		    H5Pget_chunk(dcpl, 1, cdims) == 1 && cdims[0] > 0)
			cr = cdims[0];
		if (sp >= 0)
			H5Sclose(sp);
		if (dcpl >= 0)
			H5Pclose(dcpl);
		sg[i].step = seg_rows(cr);
		sg[i].first = g;
		sg[i].count = (sg[i].nrows + sg[i].step - 1) / sg[i].step;
		g += sg[i].count;
	}
}

/* Does the process of parity `mine` own a segment of this series? */
static int owns(const struct segs *sg, unsigned mine)
{
	return sg->count > 1 || (sg->count == 1 && (sg->first & 1) == mine);
}

/* The child: its (odd) segments, framed, to fd.  Exits. */
static void seg_child(int fd, const struct sh5_extract *o,
		      struct sh5_extract_sel *v, size_t n,
		      const struct segs *sg, void *buf, struct obuf *b)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct sh5_cursor c;
		struct sh5_error err = { "" };
		char prefix[256];
		uint64_t k, at;

		if (!owns(&sg[i], 1))
			continue;
		if (sh5_cursor_open(&c, v[i].dset, v[i].s, 0, &err) < 0) {
			struct frame fr;

			memset(&fr, 0, sizeof(fr));
			fr.end = 3;
			snprintf(fr.reason, sizeof(fr.reason), "%.*s",
				 (int)sizeof(fr.reason) - 1, err.text);
			sh5_fd_write_all(fd, &fr, sizeof(fr));
			_exit(0);
		}
		sh5_extract_prefix(o, &v[i], prefix, sizeof(prefix));
		for (k = 0; k < sg[i].count; k++) {
			struct frame fr;
			int r;

			if (!((sg[i].first + k) & 1))
				continue;
			at = k * sg[i].step;
			memset(&fr, 0, sizeof(fr));
			r = sh5_extract_segment(&c, &v[i], prefix, buf, at,
				       at + sg[i].step < sg[i].nrows ?
				       at + sg[i].step : sg[i].nrows, b);
			if (r < 0 || sh5_obuf_flush(b) < 0)
				_exit(3);
			fr.end = r ? 2 : 1;
			if (r) {
				fr.lost = sh5_cursor_lost(&c);
				snprintf(fr.reason, sizeof(fr.reason), "%s",
					 c.reason);
			}
			if (sh5_fd_write_all(fd, &fr, sizeof(fr)) < 0)
				_exit(3);
		}
		sh5_cursor_close(&c);
	}
	_exit(0);
}

/* Copy (or drop) one segment of the child into out.  1 when it ended at
 * damage (fr filled), 0 ok, -1 the child failed, -2 writing the output
 * failed, -3 the child could not open the series (fr->reason). */
static int take_segment(int fd, struct obuf *out, int drop, struct frame *fr)
{
	for (;;) {
		uint64_t left;

		if (sh5_fd_read_all(fd, fr, sizeof(*fr)) < 0)
			return -1;
		if (fr->end == 3)
			return -3;
		if (fr->end)
			return fr->end == 2;
		left = fr->len;
#ifdef SPLICE_F_MOVE
		/* Straight from the pipe into the output, in order: the
		 * bytes cross no buffer of this process. */
		if (!drop && out->splice && sh5_obuf_flush(out) == 0 &&
		    fflush(out->out) == 0) {
			while (left) {
				ssize_t k = splice(fd, NULL, fileno(out->out),
						   NULL, (size_t)left,
						   SPLICE_F_MOVE);

				if (k < 0 && errno == EINTR)
					continue;
				if (k == 0)
					return -1; /* the child is gone */
				if (k < 0)
					break;
				left -= (uint64_t)k;
			}
			if (left && errno != EINVAL) {
				out->err = errno;
				return -2;
			}
			if (left)
				out->splice = 0; /* not supported: copy */
		}
#endif
		while (left) {
			size_t k;

			if (out->len == OUT_BUFFER && sh5_obuf_flush(out) < 0)
				return -2;
			k = OUT_BUFFER - out->len;
			if (k > left)
				k = (size_t)left;
			if (sh5_fd_read_all(fd, out->p + out->len, k) < 0)
				return -1;
			if (!drop)
				out->len += k;
			left -= k;
		}
	}
}

/* A failure of the child's segment of e (take_segment's r < 0) into
 * errp; writing the output failed (-2) is the caller's. */
static void child_error(const struct sh5_extract *o,
			const struct sh5_extract_sel *e, int r,
			const struct frame *fr, struct sh5_error *errp)
{
	if (r == -3)
		sh5_errprintf(errp, "%s: %s/%s/%s: %s", o->input, e->e.step,
			      e->e.node, e->e.path, fr->reason);
	else if (r == -1)
		sh5_errprintf(errp, "%s: the reading process failed",
			      o->input);
}

/* This process's side of series e: its own segments formatted here, the
 * child's copied from fd (or dropped after damage), in order.  0, or -1
 * failed (*werr: writing the output failed, else errp set). */
static int parent_series(const struct sh5_extract *o, struct sh5_extract_sel *e,
			 const struct segs *sg, int fd, struct obuf *out,
			 void *buf, int *werr, struct sh5_error *errp)
{
	struct sh5_cursor c;
	struct sh5_error err = { "" };
	char prefix[256], reason[200] = "";
	uint64_t k, at, lost = 0;
	int dead = 0, open = 0, r, rc = -1;

	sh5_extract_prefix(o, e, prefix, sizeof(prefix));
	for (k = 0; k < sg->count; k++) {
		at = k * sg->step;
		if ((sg->first + k) & 1) {
			struct frame fr;

			r = take_segment(fd, out, dead, &fr);
			if (r < 0) {
				child_error(o, e, r, &fr, errp);
				*werr = r == -2;
				goto out;
			}
			if (r && !dead) {
				dead = 1;
				lost = fr.lost;
				snprintf(reason, sizeof(reason), "%s",
					 fr.reason);
			}
			continue;
		}
		if (dead)
			continue;
		if (!open && sh5_cursor_open(&c, e->dset, e->s, 0, &err) < 0) {
			sh5_errprintf(errp, "%s: %s/%s/%s: %s", o->input,
				      e->e.step, e->e.node, e->e.path,
				      err.text);
			goto out;
		}
		open = 1;
		r = sh5_extract_segment(&c, e, prefix, buf, at,
					at + sg->step < sg->nrows ?
					at + sg->step : sg->nrows, out);
		if (r < 0) {
			*werr = 1;
			goto out;
		}
		if (r) {
			dead = 1;
			lost = sh5_cursor_lost(&c);
			snprintf(reason, sizeof(reason), "%s", c.reason);
		}
	}
	if (open)
		sh5_cursor_close(&c);
	open = 0;
	if (dead)
		sh5_extract_warn_lost(o, e, lost, reason);
	rc = 0;
out:
	if (open)
		sh5_cursor_close(&c);
	return rc;
}

/* 0 done (a write error is left in ferror(out->out) for the caller to
 * report), -1 failed (errp set), 1 no child could be started. */
int sh5_extract_piped(const struct sh5_extract *o, struct sh5_extract_sel *v,
		      size_t n, struct obuf *out, void *buf,
		      struct sh5_error *errp)
{
	int pfd[2], st = 0, rc = -1, werr = 0;
	struct segs *sg = calloc(n ? n : 1, sizeof(*sg));
	size_t i;
	pid_t pid;

	if (!sg)
		return 1;
	plan_segments(v, n, sg);
	if (pipe(pfd) < 0) {
		free(sg);
		return 1;
	}
#ifdef F_SETPIPE_SZ
	fcntl(pfd[1], F_SETPIPE_SZ, 1 << 20);
#endif
	if ((pid = fork()) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		free(sg);
		return 1;
	}
	if (pid == 0) {
		close(pfd[0]);
		out->fd = pfd[1];
		out->len = 0;
		seg_child(pfd[1], o, v, n, sg, buf, out);
	}
	close(pfd[1]);
	for (i = 0; i < n; i++) {
		if (parent_series(o, &v[i], &sg[i], pfd[0], out, buf, &werr,
				  errp) < 0)
			goto out;
		if (o->progress)
			o->progress(o->arg, i + 1, n);
	}
	rc = 0;
out:
	close(pfd[0]);
	if (rc < 0)
		kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	free(sg);
	if (werr && out->err &&
	    !sh5_extract_out_failed(out->out, *out->out_errno))
		return sh5_errprintf(errp, "%s: write failed: %s",
				     o->output ? o->output : "stdout",
				     strerror(out->err));
	if (werr)
		return 0;
	if (!rc && (!WIFEXITED(st) || WEXITSTATUS(st)))
		rc = sh5_errprintf(errp, "%s: the reading process failed",
				   o->input);
	return rc;
}

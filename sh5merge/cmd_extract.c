/* cmd_extract.c - sh5merge extract: series or totals of a job file as CSV. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_util.h"
#include "common/outfile.h"
#include "commands.h"
#include "profile/series_csv.h"
#include "common/fdio.h"
#include "common/error.h"
#include "merge/jobfile.h"
#include "profile/reader.h"
#include "profile/series.h"

#define ROW_BUFFER (1u << 20)

static void usage(FILE *f)
{
	fprintf(f,
"Usage: sh5merge extract -i JOB.h5 [OPTIONS]\n"
"\n"
"Write series or totals of a job file as CSV with a header row.\n"
"\n"
"  -i, --input FILE     the job file (ours or sh5util's)\n"
"  -s, --step S         only step S (number, batch, extern, ...)\n"
"  -S, --series NAME    Tasks (default), Energy, Filesystem, Network or\n"
"                       another series name\n"
"  -n, --node N         only node N\n"
"  -t, --task T         only task T (series Tasks; or the member T of\n"
"                       another series group)\n"
"  -F, --field F        only field F: one column per node (per task for\n"
"                       Tasks), rows aligned by EpochTime\n"
"  -l, --level L        timeseries (default) or totals\n"
"  -o, --output FILE    the CSV file (default: standard output)\n"
"  -h, --help           this help\n"
"\n"
"Exit status: 0 ok, 1 error, 2 usage.\n");
}

struct opts {
	const char *input, *step, *series, *node, *task, *field, *output;
	int totals;
	int group;  /* the series is a group of series: Tasks, or another */
	/* A series lost rows (msg names the input and the series). */
	void (*warn)(void *arg, const char *msg);
	/* done of total series written. */
	void (*progress)(void *arg, size_t done, size_t total);
	void *arg;
	int out_errno; /* errno of the first failed write to the output */
};

struct sel {
	struct sh5_jf_entry e;
	struct sh5_series *s;
	hid_t dset;
};

/* Series in a group (Tasks/<id>, or any group a gather plugin made):
 * one more key column, named Task for Tasks and Series otherwise. */
static int is_tasks(const struct opts *o)
{
	return o->group;
}

static const char *key_name(const struct opts *o)
{
	return strcmp(o->series, "Tasks") ? "Series" : "Task";
}

/* Select and open the entries that match the options. */
static int select_entries(hid_t f, struct opts *o, struct sel **out,
			  size_t *nout, struct sh5_error *errp)
{
	struct sh5_jf_entry *v = NULL;
	struct sel *sv = NULL;
	size_t n = 0, i, k = 0;
	char stepname[32] = "";

	hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);

	/* All selected datasets stay open (--field reads them side by
	 * side): no chunk cache per dataset, or memory grows with their
	 * number.  Reads are of many records at a time anyway. */
	H5Pset_chunk_cache(dapl, 0, 0, 1.0);
	if (sh5_jobfile_list(f, o->input, &v, &n, errp) < 0) {
		H5Pclose(dapl);
		return -1;
	}
	if (o->step)
		sh5_step_name(o->step, stepname, sizeof(stepname));
	o->group = !strcmp(o->series, "Tasks");
	for (i = 0; i < n && !o->group; i++)
		o->group = !strcmp(v[i].parent, o->series);
	if (!(sv = calloc(n ? n : 1, sizeof(*sv)))) {
		free(v);
		H5Pclose(dapl);
		return sh5_errprintf(errp, "%s: out of memory", o->input);
	}
	for (i = 0; i < n; i++) {
		struct sh5_jf_entry *e = &v[i];
		char np[256];
		hid_t d;

		if (o->step && strcmp(e->step, stepname) &&
		    strcmp(e->step, o->step))
			continue;
		if (o->node && strcmp(e->node, o->node))
			continue;
		if (is_tasks(o)) {
			if (strcmp(e->parent, o->series))
				continue;
			if (o->task && strcmp(e->name, o->task))
				continue;
		} else if (e->parent[0] || strcmp(e->name, o->series)) {
			continue;
		}
		sh5_jobfile_node_path(e, np, sizeof(np));
		{
			char full[512];

			snprintf(full, sizeof(full), "%s/%s", np, e->path);
			if ((d = H5Dopen2(f, full, dapl)) < 0)
				continue;
		}
		sv[k].s = sh5_series_from_dataset(e->parent, e->name, d, NULL);
		if (!sv[k].s) {
			H5Dclose(d);
			continue;
		}
		sv[k].e = *e;
		sv[k].dset = d;
		k++;
	}
	free(v);
	H5Pclose(dapl);
	*out = sv;
	*nout = k;
	return 0;
}

static void free_sel(struct sel *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++) {
		sh5_series_destroy(v[i].s);
		H5Dclose(v[i].dset);
	}
	free(v);
}

static void prefix_of(const struct opts *o, const struct sel *e, char *buf,
		      size_t len)
{
	if (is_tasks(o))
		snprintf(buf, len, "%s,%s,%s,", e->e.step, e->e.node, e->e.name);
	else
		snprintf(buf, len, "%s,%s,", e->e.step, e->e.node);
}

/* Tell o->warn that series e lost rows. */
static void warn_lost(const struct opts *o, const struct sel *e,
		      uint64_t lost, const char *reason)
{
	char msg[1024];

	if (!o->warn)
		return;
	snprintf(msg, sizeof(msg), "%s: %s/%s/%s: %" PRIu64 " rows "
		 "unreadable (%s)", o->input, e->e.step, e->e.node, e->e.path,
		 lost, reason);
	o->warn(o->arg, msg);
}

/* The header an entry's ops write, for checking all entries agree. */
static char *header_of(const struct sel *e, int totals)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return NULL;
	if (totals)
		e->s->ops->extract_totals(e->s, m, 1, "", NULL);
	else
		e->s->ops->extract_series(e->s, m, 1, "", NULL, 0);
	fclose(m);
	return buf;
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

static int frame_flush(struct obuf *b);

/* Has writing the output failed, through stdio or the descriptor? */
static int out_failed(FILE *out, int out_errno)
{
	return ferror(out) || out_errno;
}

static int obuf_flush(struct obuf *b)
{
	if (b->fd >= 0)
		return frame_flush(b);
	/* Straight to the file descriptor (after what stdio holds): a
	 * copy of every byte through stdio's buffer costs more than the
	 * write itself. */
	if (b->len && (fflush(b->out) != 0 ||
		       sh5_fd_write_all(fileno(b->out), b->p, b->len) < 0)) {
		if (!*b->out_errno)
			*b->out_errno = errno ? errno : EIO;
		b->len = 0;
		return -1;
	}
	b->len = 0;
	return out_failed(b->out, *b->out_errno) ? -1 : 0;
}

/* The rows of n records after prefix: what ops->extract_series writes
 * (it formats each row with sh5_fmt_row unless prefix and row could
 * exceed its line buffer; then it does it itself). */
static int emit_rows(const struct sel *e, const char *prefix,
		     const void *recs, size_t n, struct obuf *b)
{
	const struct sh5_series *s = e->s;
	size_t plen = strlen(prefix), max = SH5_FMT_ROW_MAX(s->nfields);
	size_t slots = sh5_record_slots(s), r;
	const union sh5_value *v = recs;

	if (plen + max > SH5_FMT_ROW_LINE) {
		if (obuf_flush(b) < 0)
			return -1;
		return s->ops->extract_series(s, b->out, 0, prefix, recs, n);
	}
	for (r = 0; r < n; r++, v += slots) {
		char *p;

		if (OUT_BUFFER - b->len < plen + max && obuf_flush(b) < 0)
			return -1;
		p = b->p + b->len;
		memcpy(p, prefix, plen);
		b->len += plen + sh5_fmt_row(p + plen, s, v);
	}
	return 0;
}

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

/* Can every row go through emit_rows' buffer (the child has no FILE)? */
static int all_buffered(const struct opts *o, const struct sel *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char prefix[256];

		prefix_of(o, &v[i], prefix, sizeof(prefix));
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

/* Read and format rows [from, to) of an open cursor into b.  1 when the
 * series ended at damage there, 0 done, -1 write error. */
static int do_segment(struct sh5_cursor *c, const struct sel *e,
		      const char *prefix, void *buf, uint64_t from,
		      uint64_t to, struct obuf *b)
{
	size_t rows = ROW_BUFFER / e->s->ops->record_size(e->s), got;

	if (!rows)
		rows = 1;
	c->pos = from;
	while (c->pos < to) {
		size_t want = to - c->pos < rows ? (size_t)(to - c->pos) : rows;

		if (!(got = sh5_cursor_read(c, buf, want)))
			break;
		if (emit_rows(e, prefix, buf, got, b) < 0)
			return -1;
	}
	return c->damaged ? 1 : 0;
}

/* How a series is cut, worked out before the fork so that both
 * processes agree without opening every series: rows and chunk rows as
 * the cursor finds them, and the global index of its first segment. */
struct segs {
	uint64_t nrows, step, first, count;
};

static void plan_segments(const struct sel *v, size_t n, struct segs *sg)
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
static void seg_child(int fd, const struct opts *o, struct sel *v,
		      size_t n, const struct segs *sg, void *buf,
		      struct obuf *b)
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
		prefix_of(o, &v[i], prefix, sizeof(prefix));
		for (k = 0; k < sg[i].count; k++) {
			struct frame fr;
			int r;

			if (!((sg[i].first + k) & 1))
				continue;
			at = k * sg[i].step;
			memset(&fr, 0, sizeof(fr));
			r = do_segment(&c, &v[i], prefix, buf, at,
				       at + sg[i].step < sg[i].nrows ?
				       at + sg[i].step : sg[i].nrows, b);
			if (r < 0 || obuf_flush(b) < 0)
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

/* Frames from the child's pipe (the obuf's fd mode). */
static int frame_flush(struct obuf *b)
{
	struct frame fr;

	if (!b->len)
		return 0;
	memset(&fr, 0, sizeof(fr));
	fr.len = b->len;
	b->len = 0;
	if (sh5_fd_write_all(b->fd, &fr, sizeof(fr)) < 0 ||
	    sh5_fd_write_all(b->fd, b->p, (size_t)fr.len) < 0)
		return -1;
	return 0;
}

/* Copy (or drop) one segment of the child into out.  1 when it ended at
 * damage (fr filled), 0 ok, -1 the child failed, -2 writing the output
 * failed, -3 the child could not open the series (fr->reason). */
static int take_segment(int fd, struct obuf *out, int drop,
			struct frame *fr)
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
		if (!drop && out->splice && obuf_flush(out) == 0 &&
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

			if (out->len == OUT_BUFFER && obuf_flush(out) < 0)
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

/* 0 done (a write error is left in ferror(out->out) for the caller to
 * report), -1 failed (reported), 1 no child could be started. */
static int timeseries_piped(const struct opts *o, struct sel *v, size_t n,
			    struct obuf *out, void *buf, struct sh5_error *errp)
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
		struct sh5_cursor c;
		struct sh5_error err = { "" };
		char prefix[256];
		uint64_t k, at, lost = 0;
		int dead = 0, open = 0;
		char reason[200] = "";

		prefix_of(o, &v[i], prefix, sizeof(prefix));
		for (k = 0; k < sg[i].count; k++) {
			int r;

			at = k * sg[i].step;
			if ((sg[i].first + k) & 1) {
				struct frame fr;

				r = take_segment(pfd[0], out, dead, &fr);
				if (r == -3)
					sh5_errprintf(errp, "%s: %s/%s/%s: %s",
						      o->input, v[i].e.step,
						      v[i].e.node, v[i].e.path,
						      fr.reason);
				else if (r == -1)
					sh5_errprintf(errp, "%s: the reading "
						      "process failed",
						      o->input);
				if (r < 0) {
					werr = r == -2;
					goto fail;
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
			if (!open && sh5_cursor_open(&c, v[i].dset, v[i].s, 0,
						     &err) < 0) {
				sh5_errprintf(errp, "%s: %s/%s/%s: %s",
					      o->input, v[i].e.step,
					      v[i].e.node, v[i].e.path,
					      err.text);
				goto out;
			}
			open = 1;
			r = do_segment(&c, &v[i], prefix, buf, at,
				       at + sg[i].step < sg[i].nrows ?
				       at + sg[i].step : sg[i].nrows, out);
			if (r < 0) {
				werr = 1;
				goto fail;
			}
			if (r) {
				dead = 1;
				lost = sh5_cursor_lost(&c);
				snprintf(reason, sizeof(reason), "%s",
					 c.reason);
			}
		}
		if (open)
			sh5_cursor_close(&c);
		open = 0;
		if (dead)
			warn_lost(o, &v[i], lost, reason);
		if (o->progress)
			o->progress(o->arg, i + 1, n);
		continue;
fail:
		if (open)
			sh5_cursor_close(&c);
		goto out;
	}
	rc = 0;
out:
	close(pfd[0]);
	if (rc < 0)
		kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	free(sg);
	if (werr && out->err && !out_failed(out->out, *out->out_errno))
		return sh5_errprintf(errp, "%s: write failed: %s",
				     o->output ? o->output : "stdout",
				     strerror(out->err));
	if (werr)
		return 0;
	if (!rc && (!WIFEXITED(st) || WEXITSTATUS(st))) {
		rc = sh5_errprintf(errp, "%s: the reading process failed",
				   o->input);
	}
	return rc;
}

static int timeseries(struct opts *o, struct sel *v, size_t n, FILE *out,
		      struct sh5_error *errp)
{
	void *buf = malloc(ROW_BUFFER);
	struct obuf ob = { malloc(OUT_BUFFER), 0, out, -1, 1, 0,
			   &o->out_errno };
	size_t i;
	int rc = -1;

	if (!buf || !ob.p) {
		free(buf);
		free(ob.p);
		return sh5_errprintf(errp, "%s: out of memory", o->input);
	}
	/* SH5MERGE_NO_FORK: one process (tests compare both). */
	if (sysconf(_SC_NPROCESSORS_ONLN) > 1 && !getenv("SH5MERGE_NO_FORK") &&
	    all_buffered(o, v, n)) {
		rc = timeseries_piped(o, v, n, &ob, buf, errp);
		if (rc <= 0)
			goto out;
		rc = -1; /* no child: do it here */
	}
	for (i = 0; i < n; i++) {
		struct sh5_cursor c;
		struct sh5_error err = { "" };
		size_t rows = ROW_BUFFER / v[i].s->ops->record_size(v[i].s), got;
		char prefix[256];

		if (!rows)
			rows = 1;
		prefix_of(o, &v[i], prefix, sizeof(prefix));
		if (sh5_cursor_open(&c, v[i].dset, v[i].s, 0, &err) < 0) {
			sh5_errprintf(errp, "%s: %s/%s/%s: %s", o->input,
				      v[i].e.step, v[i].e.node, v[i].e.path,
				      err.text);
			goto out;
		}
		while ((got = sh5_cursor_read(&c, buf, rows)) > 0)
			if (emit_rows(&v[i], prefix, buf, got, &ob) < 0)
				break;
		if (c.damaged)
			warn_lost(o, &v[i], sh5_cursor_lost(&c), c.reason);
		sh5_cursor_close(&c);
		if (out_failed(out, o->out_errno))
			break;
		if (o->progress)
			o->progress(o->arg, i + 1, n);
	}
	rc = 0;
out:
	obuf_flush(&ob); /* an error stays in ferror(out) */
	free(ob.p);
	free(buf);
	return rc;
}

/* The total of one entry: stored under Totals/ or computed. */
static void *entry_total(hid_t f, struct sel *e)
{
	const struct sh5_series *s = e->s;
	void *t = malloc(s->ops->total_size(s));
	char np[256], full[512];
	hid_t d, mt;

	if (!t)
		return NULL;
	sh5_jobfile_node_path(&e->e, np, sizeof(np));
	snprintf(full, sizeof(full), "%s/Totals/%s", np, e->e.path);
	if (H5Lexists(f, np, H5P_DEFAULT) > 0 &&
	    H5Lexists(f, full, H5P_DEFAULT) <= 0)
		d = -1;
	else
		d = H5Dopen2(f, full, H5P_DEFAULT);
	if (d >= 0) {
		s->ops->total_init(s, t);
		mt = s->ops->total_mem_type(s);
		if (mt >= 0 && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT,
				       t) >= 0) {
			H5Tclose(mt);
			H5Dclose(d);
			return t;
		}
		if (mt >= 0)
			H5Tclose(mt);
		H5Dclose(d);
	}
	/* sh5util's job files have no totals: compute them. */
	{
		struct sh5_cursor c;
		size_t rows = ROW_BUFFER / s->ops->record_size(s), got;
		void *buf = malloc(ROW_BUFFER);

		s->ops->total_init(s, t);
		if (!buf || sh5_cursor_open(&c, e->dset, s, 0, NULL) < 0) {
			free(buf);
			return t;
		}
		while ((got = sh5_cursor_read(&c, buf, rows ? rows : 1)) > 0)
			s->ops->total_add(s, t, buf, got);
		sh5_cursor_close(&c);
		free(buf);
	}
	return t;
}

static int totals(const struct opts *o, hid_t f, struct sel *v, size_t n,
		  FILE *out, struct sh5_error *errp)
{
	void *node_t = NULL, *step_t = NULL;
	size_t i;
	int per_node = is_tasks(o) && !o->task;
	int per_step = !o->task && !o->node;
	char prefix[256];

	for (i = 0; i < n; i++) {
		const struct sh5_series *s = v[i].s;
		void *t = entry_total(f, &v[i]);

		if (!t) {
			sh5_errprintf(errp, "%s: out of memory", o->input);
			goto error;
		}
		prefix_of(o, &v[i], prefix, sizeof(prefix));
		s->ops->extract_totals(s, out, 0, prefix, t);
		if (per_node) {
			if (!node_t && (node_t = malloc(s->ops->total_size(s))))
				s->ops->total_init(s, node_t);
			if (node_t)
				s->ops->total_merge(s, node_t, t);
		}
		if (per_step) {
			if (!step_t && (step_t = malloc(s->ops->total_size(s))))
				s->ops->total_init(s, step_t);
			if (step_t)
				s->ops->total_merge(s, step_t, t);
		}
		free(t);
		if (per_node && node_t &&
		    (i + 1 == n || strcmp(v[i + 1].e.node, v[i].e.node) ||
		     strcmp(v[i + 1].e.step, v[i].e.step))) {
			snprintf(prefix, sizeof(prefix), "%s,%s,all,",
				 v[i].e.step, v[i].e.node);
			s->ops->extract_totals(s, out, 0, prefix, node_t);
			free(node_t);
			node_t = NULL;
		}
		if (per_step && step_t &&
		    (i + 1 == n || strcmp(v[i + 1].e.step, v[i].e.step))) {
			snprintf(prefix, sizeof(prefix), "%s,all,%s",
				 v[i].e.step, is_tasks(o) ? "all," : "");
			s->ops->extract_totals(s, out, 0, prefix, step_t);
			free(step_t);
			step_t = NULL;
		}
	}
	return 0;
error:
	free(node_t);
	free(step_t);
	return -1;
}

/* --field: one column per entry, one row per EpochTime second. */
struct col {
	struct sh5_cursor c;
	void *buf;
	size_t rows, have, at;
	int field;
	int done;
};

static int col_fill(struct col *k)
{
	if (k->at < k->have)
		return 1;
	k->have = sh5_cursor_read(&k->c, k->buf, k->rows);
	k->at = 0;
	if (!k->have)
		k->done = 1;
	return k->have > 0;
}

static uint64_t col_time(const struct col *k, const struct sh5_series *s)
{
	return ((const union sh5_value *)k->buf)[k->at * sh5_record_slots(s) +
						  1].u;
}

static int aligned(const struct opts *o, struct sel *v, size_t n, FILE *out,
		   struct sh5_error *errp)
{
	struct col *cols = calloc(n ? n : 1, sizeof(*cols));
	size_t i, multi_step = 0, budget;
	char *line = NULL;
	size_t linecap;
	int rc = -1;

	if (!cols)
		goto oom;
	for (i = 1; i < n; i++)
		if (strcmp(v[i].e.step, v[0].e.step))
			multi_step = 1;
	/* Bounded memory: 16 MiB of row buffers across all columns
	 * (SH5MERGE_EXTRACT_BUFFER overrides it, for tests). */
	budget = (16u << 20);
	if (getenv("SH5MERGE_EXTRACT_BUFFER"))
		budget = (size_t)strtoul(getenv("SH5MERGE_EXTRACT_BUFFER"),
					 NULL, 10);
	budget /= n ? n : 1;
	fputs("EpochTime", out);
	for (i = 0; i < n; i++) {
		struct col *k = &cols[i];
		size_t rs = v[i].s->ops->record_size(v[i].s);

		k->field = sh5_series_field_index(v[i].s, o->field);
		if (k->field < 0) {
			sh5_errprintf(errp, "%s: %s/%s/%s: no field %s",
				      o->input, v[i].e.step, v[i].e.node,
				      v[i].e.path, o->field);
			goto out;
		}
		k->rows = budget / rs;
		if (k->rows < 16)
			k->rows = 16;
		if (k->rows > 4096)
			k->rows = 4096;
		if (!(k->buf = malloc(k->rows * rs)))
			goto oom;
		if (sh5_cursor_open(&k->c, v[i].dset, v[i].s, 0, NULL) < 0) {
			sh5_errprintf(errp, "%s: %s/%s/%s: unreadable",
				      o->input, v[i].e.step, v[i].e.node,
				      v[i].e.path);
			goto out;
		}
		/* Direct chunk reads need a whole chunk per column. */
		k->c.direct = 0;
		fputc(',', out);
		if (multi_step)
			fprintf(out, "%s:", v[i].e.step);
		if (is_tasks(o))
			fprintf(out, "%s:%s", v[i].e.node, v[i].e.name);
		else
			fputs(v[i].e.node, out);
	}
	fputc('\n', out);
	linecap = 32 + n * (SH5_FMT_MAX + 1);
	if (!(line = malloc(linecap)))
		goto oom;
	for (;;) {
		uint64_t tmin = UINT64_MAX;
		size_t len = 0;

		for (i = 0; i < n; i++) {
			if (cols[i].done || !col_fill(&cols[i]))
				continue;
			if (col_time(&cols[i], v[i].s) < tmin)
				tmin = col_time(&cols[i], v[i].s);
		}
		if (tmin == UINT64_MAX)
			break;
		len = sh5_fmt_u64(line, tmin);
		for (i = 0; i < n; i++) {
			struct col *k = &cols[i];
			const struct sh5_series *s = v[i].s;
			union sh5_value val;
			int have = 0;

			line[len++] = ',';
			/* Several samples in one second: the last one.  The
			 * value is copied out: refilling the buffer
			 * overwrites it. */
			while (!k->done && col_fill(k) &&
			       col_time(k, s) == tmin) {
				val = ((const union sh5_value *)k->buf)
					[k->at * sh5_record_slots(s) +
					 SH5_TIME_SLOTS + (size_t)k->field];
				have = 1;
				k->at++;
			}
			if (!have)
				continue;
			if (s->fields[k->field].type == SH5_FT_DOUBLE)
				len += sh5_fmt_double(line + len, val.d);
			else
				len += sh5_fmt_u64(line + len, val.u);
		}
		line[len++] = '\n';
		if (fwrite(line, 1, len, out) != len)
			break;
	}
	rc = 0;
	goto out;
oom:
	sh5_errprintf(errp, "%s: out of memory", o->input);
out:
	for (i = 0; cols && i < n; i++) {
		if (cols[i].buf)
			sh5_cursor_close(&cols[i].c);
		free(cols[i].buf);
	}
	free(cols);
	free(line);
	return rc;
}

static void warn_cb(void *arg, const char *msg)
{
	(void)arg;
	cli_warn(NULL, "%s", msg);
}

static void progress_cb(void *arg, size_t done, size_t total)
{
	(void)arg;
	cli_progress("extracting", done, total);
}

int cmd_extract(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "step", required_argument, NULL, 's' },
		{ "series", required_argument, NULL, 'S' },
		{ "node", required_argument, NULL, 'n' },
		{ "task", required_argument, NULL, 't' },
		{ "field", required_argument, NULL, 'F' },
		{ "level", required_argument, NULL, 'l' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o;
	struct sel *v = NULL;
	size_t n = 0, i;
	hid_t f = -1;
	FILE *out = NULL;
	struct sh5_outfile of = { .fd = -1 };
	struct sh5_error oerr = { "" };
	char *first = NULL;
	static char obuf[1 << 20];
	int c, status = 1;

	memset(&o, 0, sizeof(o));
	o.series = "Tasks";
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:s:S:n:t:F:l:o:h", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'i': o.input = optarg; break;
		case 's': o.step = optarg; break;
		case 'S': o.series = optarg; break;
		case 'n': o.node = optarg; break;
		case 't': o.task = optarg; break;
		case 'F': o.field = optarg; break;
		case 'l':
			if (!strcmp(optarg, "totals") ||
			    !strcasecmp(optarg, "Node:Totals"))
				o.totals = 1;
			else if (strcmp(optarg, "timeseries") &&
				 strcasecmp(optarg, "Node:TimeSeries")) {
				cli_error(NULL, "--level: timeseries or totals");
				return 2;
			}
			break;
		case 'o': o.output = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || !o.input) {
		cli_error(NULL, "extract: %s", optind < argc ?
			  "unexpected argument" : "-i JOB.h5 is required");
		usage(stderr);
		return 2;
	}
	if (o.field && o.totals) {
		cli_error(NULL, "--field works on time series only");
		return 2;
	}
	if (sh5_infile_check(o.input, &oerr) < 0 ||
	    (o.output && sh5_outfile_same(o.output, &o.input, 1) &&
	     sh5_errprintf(&oerr, "%s: is also the input; refusing to "
			   "overwrite it", o.output))) {
		cli_error(NULL, "%s", oerr.text);
		return 1;
	}
	sh5_error_h5_silence();
	if ((f = H5Fopen(o.input, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0) {
		struct sh5_error err;

		sh5_errprintf_h5(&err, "cannot open");
		cli_error(o.input, "%s", err.text);
		return 1;
	}
	o.warn = warn_cb;
	o.progress = progress_cb;
	if (select_entries(f, &o, &v, &n, &oerr) < 0) {
		cli_error(NULL, "%s", oerr.text);
		goto out;
	}
	if (o.task && !o.group) {
		cli_error(NULL, "--task needs a series group such as Tasks");
		status = 2;
		goto out;
	}
	if (!n) {
		cli_error(o.input, "no series %s%s%s%s%s%s%s", o.series,
			  o.step ? " in step " : "", o.step ? o.step : "",
			  o.node ? " on node " : "", o.node ? o.node : "",
			  o.task ? " of task " : "", o.task ? o.task : "");
		goto out;
	}
	first = header_of(&v[0], o.totals);
	for (i = 1; i < n && !o.field; i++) {
		char *h = header_of(&v[i], o.totals);
		int same = h && first && !strcmp(h, first);

		free(h);
		if (!same) {
			cli_error(o.input, "%s/%s/%s: fields differ from %s/%s/%s"
				  " (select one step or node)", v[i].e.step,
				  v[i].e.node, v[i].e.path, v[0].e.step,
				  v[0].e.node, v[0].e.path);
			goto out;
		}
	}
	if (sh5_outfile_open(&of, o.output ? o.output : "-", &o.input, 1,
			     &oerr) < 0) {
		cli_error(NULL, "%s", oerr.text);
		goto out;
	}
	if (!(out = sh5_outfile_fp(&of))) {
		cli_error(o.output, "%s", strerror(errno));
		goto out;
	}
	setvbuf(out, obuf, _IOFBF, sizeof(obuf));
	if (!o.field)
		fprintf(out, "Step,Node,%s%s%s", is_tasks(&o) ? key_name(&o) : "",
			is_tasks(&o) ? "," : "",
			first ? first : "\n");
	if (o.field ? aligned(&o, v, n, out, &oerr) :
	    o.totals ? totals(&o, f, v, n, out, &oerr) :
	    timeseries(&o, v, n, out, &oerr)) {
		cli_error(NULL, "%s", oerr.text);
		goto out;
	}
	errno = 0;
	if (fflush(out) != 0 || out_failed(out, o.out_errno)) {
		int e = o.out_errno ? o.out_errno : errno;

		cli_error(o.output ? o.output : "stdout", "write failed: %s",
			  strerror(e ? e : EIO));
		goto out;
	}
	out = NULL;
	if (sh5_outfile_commit(&of, &oerr) < 0) {
		cli_error(NULL, "%s", oerr.text);
		goto out;
	}
	status = 0;
out:
	sh5_outfile_abort(&of);
	free(first);
	free_sel(v, n);
	if (f >= 0)
		H5Fclose(f);
	return status;
}

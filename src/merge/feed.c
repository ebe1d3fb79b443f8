/* feed.c - the reader process of the second pass (see merge_int.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fdio.h"
#include "merge/merge_int.h"

/* The second pass's reader process.  HDF5 reading and decoding (inflate
 * included) run in a child while this process writes: two CPUs work, and
 * a crash of HDF5 on a damaged input ends only the child (the series is
 * cut there and a new child goes on with the next file). */

size_t mg_rows_per_buffer(const struct mstate *m,
			      const struct sh5_series *s)
{
	size_t rows = m->buf_bytes / s->ops->record_size(s);

	if (rows > CHUNK_ROWS_MAX)
		rows -= rows % CHUNK_ROWS_MAX;
	return rows ? rows : 1;
}

/* Can the chunks of din be copied raw into a dataset of file type ft?
 * Filtered (else the plain path is as fast), same type. */
int mg_raw_copyable(hid_t din, hid_t ft)
{
	hid_t dcpl = H5Dget_create_plist(din), t = H5Dget_type(din);
	int ok = dcpl >= 0 && t >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED &&
		 H5Pget_nfilters(dcpl) > 0 && H5Tequal(t, ft) > 0;

	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (t >= 0)
		H5Tclose(t);
	return ok;
}

/* Will mg_write_series() copy the chunks of series s (dataset d) of ns raw?
 * (Its condition, without synchronization.) */
static int raw_series(struct sh5_nodestep *ns, const struct sh5_series *s,
		      hid_t d, const struct sh5_cursor *c)
{
	hid_t ft;
	int ok;

	if (ns->salvaged || !c->chunk_rows)
		return 0;
	if ((ft = s->ops->file_type(s)) < 0)
		return 0;
	ok = mg_raw_copyable(d, ft);
	H5Tclose(ft);
	return ok;
}

/* The ring slot number k, of buf_bytes bytes. */
static unsigned char *ring_slot(const struct mstate *m, uint64_t k)
{
	return m->feed_ring + (size_t)(k % FEED_SLOTS) * m->buf_bytes;
}

/* Send one block of n records of series (fi, si) with the given status;
 * extra: the bytes the caller sends after them (a running total).  The
 * records go into the next ring slot once the parent has handed one
 * back (a credit), else (no ring, a block larger than a slot) through
 * the pipe after the header. */
static void feed_put(struct mstate *m, int fd, struct feed_head *h,
		     int64_t status, const void *p, size_t n, size_t size,
		     size_t extra)
{
	size_t len = n * size;
	char credit;

	h->status = status;
	h->rows = n;
	h->ring = 0;
	/* A credit channel (the child's end) exists only with a ring. */
	if (len && m->feed_credit >= 0 && len <= m->buf_bytes) {
		if (sh5_fd_read_all(m->feed_credit, &credit, 1) < 0)
			_exit(3);
		memcpy(ring_slot(m, m->feed_slot++), p, len);
		h->ring = 1;
		len = 0;
	}
	h->bytes = (uint64_t)len + extra;
	if (sh5_fd_write_all(fd, h, sizeof(*h)) < 0 ||
	    (len && sh5_fd_write_all(fd, p, len) < 0))
		_exit(3);
}

/* The parent: the rows of the header just taken (ring set) are in the
 * next slot: len bytes of them copied to buf (NULL: passed over) and the
 * slot handed back to the child.  0, or -1 (no such slot).  A child that
 * has sent everything and ended takes no credit: the send may fail, and
 * a child gone too early is found at its next header. */
static int ring_take(struct mstate *m, void *buf, size_t len)
{
	uint64_t k = m->feed_slot++;

	if (!m->feed_ring || len > m->buf_bytes)
		return -1;
	if (buf)
		memcpy(buf, ring_slot(m, k), len);
	if (m->feed_credit >= 0)
		(void)send(m->feed_credit, "c", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	return 0;
}

/* The child's buffers: a running total, packed records. */
struct feed_bufs {
	void *total, *pbuf;
	size_t total_len, pbuf_len;
};

/* When the child totals (m->feed_totals): the total of series s started;
 * *raw: its chunks are copied raw by the parent; else *map packs its
 * records into the job file's layout (*fsize bytes each). */
static void feed_totals_setup(struct mstate *m, struct sh5_nodestep *ns,
			      const struct sh5_series *s, hid_t d,
			      struct sh5_cursor *c, struct feed_bufs *b,
			      int *raw, struct sh5_recmap **map,
			      size_t *fsize)
{
	const struct sh5_series_ops *ops = s->ops;
	size_t rows = mg_rows_per_buffer(m, s), rs = ops->record_size(s);
	size_t ts = ops->total_size(s);
	hid_t ft;

	if (ts > b->total_len) {
		free(b->total);
		if (!(b->total = malloc(ts)))
			_exit(3);
		b->total_len = ts;
	}
	ops->total_init(s, b->total);
	*raw = raw_series(ns, s, d, c);
	if (!*raw && (ft = ops->file_type(s)) >= 0) {
		*fsize = H5Tget_size(ft);
		if (*fsize <= rs)
			*map = sh5_recmap_build(c->mtype, ft);
		H5Tclose(ft);
	}
	if (*map && rows * *fsize > b->pbuf_len) {
		free(b->pbuf);
		if (!(b->pbuf = malloc(rows * *fsize)))
			_exit(3);
		b->pbuf_len = rows * *fsize;
	}
}

/* Send series si of file fi (open as ns) to the parent. */
static void feed_series(struct mstate *m, int fd, size_t fi, size_t si,
			struct sh5_nodestep *ns, struct feed_bufs *b)
{
	struct sh5_ns_series *e = &ns->series[si];
	const struct sh5_series *s = e->series;
	const struct sh5_series_ops *ops = s->ops;
	struct feed_head h;
	struct sh5_cursor c;
	struct sh5_recmap *map = NULL;
	size_t rows = mg_rows_per_buffer(m, s), n, fsize = 0;
	size_t rs = ops->record_size(s), ts = 0;
	hid_t d = H5Dopen2(ns->node, e->path, H5P_DEFAULT);
	int raw = 0;

	memset(&h, 0, sizeof(h));
	h.file = fi;
	h.series = si;
	if (d < 0 || sh5_cursor_open(&c, d, s, ns->salvaged ?
				     ns->real_eof : 0, NULL) < 0) {
		if (d >= 0)
			H5Dclose(d);
		feed_put(m, fd, &h, -1, NULL, 0, 0, 0);
		return;
	}
	if (m->feed_totals) {
		/* Totals here; records the parent copies raw are not sent,
		 * the others packed in the job file's layout as
		 * mg_write_series() would pack them. */
		ts = ops->total_size(s);
		feed_totals_setup(m, ns, s, d, &c, b, &raw, &map, &fsize);
	}
	while ((n = sh5_cursor_read(&c, m->buf, rows)) > 0) {
		if (!m->feed_totals) {
			feed_put(m, fd, &h, 0, m->buf, n, rs, 0);
			continue;
		}
		ops->total_add(s, b->total, m->buf, n);
		if (raw) {
			feed_put(m, fd, &h, 4, NULL, n, 0, ts);
		} else if (map) {
			sh5_recmap_apply(map, m->buf, b->pbuf, n);
			feed_put(m, fd, &h, 3, b->pbuf, n, fsize, ts);
		} else {
			feed_put(m, fd, &h, 0, m->buf, n, rs, ts);
		}
		/* The running total follows every block: a crash later
		 * keeps the total of what was sent. */
		if (sh5_fd_write_all(fd, b->total, ts) < 0)
			_exit(3);
	}
	sh5_recmap_free(map);
	h.good_rows = c.good_rows;
	h.damaged = c.damaged;
	snprintf(h.reason, sizeof(h.reason), "%s", c.reason);
	sh5_cursor_close(&c);
	H5Dclose(d);
	if (m->feed_totals)
		feed_put(m, fd, &h, 2, NULL, 0, 0, ts);
	else
		feed_put(m, fd, &h, 1, NULL, 0, 0, 0);
	if (m->feed_totals && sh5_fd_write_all(fd, b->total, ts) < 0)
		_exit(3);
}

/* The one-pass feeder: input fi checked here (not checked before) and
 * what the check found sent first. */
static void feed_check(struct mstate *m, int fd, size_t fi)
{
	struct feed_head h;
	struct probe_msg msg;

	mg_probe_check(m, fi, &msg);
	memset(&h, 0, sizeof(h));
	h.file = fi;
	h.status = FEED_CHECKED;
	h.bytes = mg_probe_msg_len(&msg);
	if (sh5_fd_write_all(fd, &h, sizeof(h)) < 0 ||
	    mg_probe_msg_send(fd, &msg) < 0)
		_exit(3);
	/* ents and blob stay with it (whole_fold() is the merge's). */
	m->fi[fi] = msg.f;
	m->fi[fi].probed = 1;
}

static void feeder_child(struct mstate *m, int fd, int credit, size_t from)
{
	struct feed_bufs b = { NULL, NULL, 0, 0 };
	size_t fi, si;

	mg_child_signals();
	m->in_child = 1;
	/* The credits come on credit (EOF: the parent is gone); the slots
	 * are used from the first. */
	m->feed_credit = credit;
	m->feed_slot = 0;
	for (fi = from; fi < m->nin; fi++) {
		struct finfo *f = &m->fi[fi];
		struct sh5_nodestep *ns = NULL;

		if (m->onefeed && !f->probed)
			feed_check(m, fd, fi);
		/* Files copied whole are not read (without sync). */
		if (f->usable && !(f->whole && m->feed_totals)) {
			if (m->held && m->held_idx == fi) {
				/* Its check left it open (one open). */
				ns = m->held;
				m->held = NULL;
			} else {
				ns = sh5_nodestep_open(f->in->path,
						       f->in->node, m->o->job,
						       f->in->step_id, NULL);
			}
		}
		for (si = 0; ns && si < ns->nseries; si++)
			feed_series(m, fd, fi, si, ns, &b);
		sh5_nodestep_close(ns);
		if (m->onefeed) {
			struct feed_head h;

			memset(&h, 0, sizeof(h));
			h.file = fi;
			h.status = FEED_DONE;
			if (sh5_fd_write_all(fd, &h, sizeof(h)) < 0)
				_exit(3);
		}
	}
	_exit(0);
}

/* The ring and a new credit channel for a new child: FEED_SLOTS credits
 * in it, the slots used from the first.  *child_end: the end the child
 * reads, or -1 when the records go through the pipe. */
static void ring_reset(struct mstate *m, int *child_end)
{
	static const char credits[FEED_SLOTS] = { 0 };
	int sv[2];

	*child_end = -1;
	if (m->feed_credit >= 0)
		close(m->feed_credit);
	m->feed_credit = -1;
	m->feed_slot = 0;
	if (!m->feed_ring && !getenv("SH5MERGE_FEED_PIPE")) {
		void *p = mmap(NULL, FEED_SLOTS * m->buf_bytes,
			       PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		m->feed_ring = p == MAP_FAILED ? NULL : p;
	}
	if (!m->feed_ring ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	if (send(sv[0], credits, sizeof(credits), MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(credits)) {
		close(sv[0]);
		close(sv[1]);
		return;
	}
	m->feed_credit = sv[0];
	*child_end = sv[1];
}

void mg_feeder_start(struct mstate *m, size_t from)
{
	int pfd[2], credit;
	pid_t pid;

	m->feed_fd = -1;
	m->feed_have = 0;
	m->feed_at = from;
	/* Also on one CPU: the child is what keeps a crash of HDF5 from
	 * ending the merge.  SH5MERGE_NO_FORK: all in this process (for
	 * comparisons in tests; loses that protection). */
	if (getenv("SH5MERGE_NO_FORK") || pipe(pfd) < 0)
		return;
	ring_reset(m, &credit);
	if ((pid = fork()) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		if (credit >= 0)
			close(credit);
		return;
	}
	if (pid == 0) {
		close(pfd[0]);
		if (m->feed_credit >= 0)
			close(m->feed_credit);
		/* No credits (credit -1): the records through the pipe. */
		feeder_child(m, pfd[1], credit, from);
	}
	close(pfd[1]);
	if (credit >= 0)
		close(credit);
#ifdef F_SETPIPE_SZ
	fcntl(pfd[0], F_SETPIPE_SZ, 1 << 20);
#endif
	m->feed_pid = pid;
	m->feed_fd = pfd[0];
}

void mg_feeder_stop(struct mstate *m)
{
	if (m->feed_fd < 0)
		return;
	close(m->feed_fd);
	m->feed_fd = -1;
	kill(m->feed_pid, SIGKILL);
	waitpid(m->feed_pid, NULL, 0);
}

void mg_feed_ring_free(struct mstate *m)
{
	if (m->feed_credit >= 0)
		close(m->feed_credit);
	m->feed_credit = -1;
	if (m->feed_ring)
		munmap(m->feed_ring, FEED_SLOTS * m->buf_bytes);
	m->feed_ring = NULL;
}

int mg_feed_discard(struct mstate *m)
{
	uint64_t len = m->feed_head.bytes;

	m->feed_have = 0;
	if (m->feed_head.status == FEED_DONE)
		m->feed_at = m->feed_head.file + 1;
	if (m->feed_head.ring && ring_take(m, NULL, 0) < 0)
		return -1;
	while (len) {
		size_t k = len < m->buf_bytes ? (size_t)len : m->buf_bytes;

		if (sh5_fd_read_all(m->feed_fd, m->buf, k) < 0)
			return -1;
		len -= k;
	}
	return 0;
}

/* The child ended early while reading file fi: note why, and start a new
 * one after that file. */
static void feeder_died(struct mstate *m, size_t fi, struct sh5_cursor *c)
{
	int st = 0;

	close(m->feed_fd);
	m->feed_fd = -1;
	waitpid(m->feed_pid, &st, 0);
	m->feed_died = 1;
	m->feed_dead_file = fi;
	c->damaged = 1;
	if (mg_changed(m, fi, c->reason, sizeof(c->reason)))
		;
	else if (WIFSIGNALED(st))
		snprintf(c->reason, sizeof(c->reason), "reading it crashes "
			 "HDF5 (signal %d)", WTERMSIG(st));
	else
		snprintf(c->reason, sizeof(c->reason), "the reading process "
			 "failed");
	c->good_rows = c->pos;
	mg_feeder_start(m, fi + 1);
}

/* Consume what the child sends for series (fi, si), whose records are
 * read in this process instead.  0, or -1 when the child died. */
static int feed_skip(struct mstate *m, size_t fi, size_t si,
		     struct sh5_cursor *c)
{
	struct feed_head *h = &m->feed_head;

	while (m->feed_fd >= 0) {
		size_t len;

		if (!m->feed_have) {
			if (sh5_fd_read_all(m->feed_fd, h, sizeof(*h)) < 0)
				goto died;
			m->feed_have = 1;
		}
		if (h->file != fi || h->series != si)
			return 0;
		m->feed_have = 0;
		if (h->ring && ring_take(m, NULL, 0) < 0)
			goto died;
		if ((h->status == 0 || h->status == 3) && !h->ring)
			len = (size_t)h->rows * (h->status == 0 ?
				c->s->ops->record_size(c->s) : 1);
		else if (h->status == 0 || h->status == 3 ||
			 h->status == 2 || h->status == 4)
			len = 0;	/* the rows (if any) were in the ring */
		else
			return 0;
		if (h->status == 3 && len) {
			/* Packed: the size of a record is not known here;
			 * the child sent rows * fsize bytes. */
			hid_t ft = c->s->ops->file_type(c->s);

			if (ft < 0)
				goto died;
			len *= H5Tget_size(ft);
			H5Tclose(ft);
		}
		len += c->s->ops->total_size(c->s);
		while (len) {
			size_t k = len < m->buf_bytes ? len : m->buf_bytes;

			if (sh5_fd_read_all(m->feed_fd, m->buf, k) < 0)
				goto died;
			len -= k;
		}
		if (h->status == 2)
			return 0;
	}
	return 0;
died:
	/* The rest is read in this process. */
	mg_feeder_stop(m);
	return -1;
}

/* Have the next header from the child in m->feed_head.  0, or -1 when
 * the child died or hangs (c marked, a new child started). */
static int feed_next_head(struct mstate *m, size_t fi, struct sh5_cursor *c)
{
	struct pollfd pf = { m->feed_fd, POLLIN, 0 };

	if (m->feed_have)
		return 0;
	/* HDF5 may loop forever on a damaged file. */
	if (poll(&pf, 1, mg_read_timeout() * 1000) == 0) {
		kill(m->feed_pid, SIGKILL);
		feeder_died(m, fi, c);
		snprintf(c->reason, sizeof(c->reason), "HDF5 does not finish "
			 "reading it (stopped after %d s)", mg_read_timeout());
		return -1;
	}
	if (sh5_fd_read_all(m->feed_fd, &m->feed_head,
			    sizeof(m->feed_head)) < 0) {
		feeder_died(m, fi, c);
		return -1;
	}
	m->feed_have = 1;
	return 0;
}

/* The end of the series (status 1, or 2 with its total). */
static size_t feed_end(struct mstate *m, size_t fi, struct sh5_cursor *c,
		       void *total)
{
	struct feed_head *h = &m->feed_head;

	if (h->status == 2 &&
	    sh5_fd_read_all(m->feed_fd, total,
			    c->s->ops->total_size(c->s)) < 0) {
		feeder_died(m, fi, c);
		return 0;
	}
	if (h->damaged) {
		c->damaged = 1;
		snprintf(c->reason, sizeof(c->reason), "%s", h->reason);
	}
	c->good_rows = c->pos;
	return 0;
}

/* A block of rows (status 0, 3 packed, 4 totalled only) into buf. */
static size_t feed_block(struct mstate *m, size_t fi, struct sh5_cursor *c,
			 void *buf, size_t max, void *total, int *how)
{
	struct feed_head *h = &m->feed_head;
	size_t rs = c->s->ops->record_size(c->s);

	if (h->status == 4) {
		/* Rows totalled, not sent (copied raw). */
		if (sh5_fd_read_all(m->feed_fd, total,
				    c->s->ops->total_size(c->s)) < 0)
			goto bad;
		*how = FEED_NODATA | FEED_TOTALED;
		c->pos += h->rows;
		return (size_t)h->rows;
	}
	if (h->status == 3) {
		hid_t ft = c->s->ops->file_type(c->s);
		size_t fsize = ft < 0 ? 0 : H5Tget_size(ft);

		if (ft >= 0)
			H5Tclose(ft);
		if (!fsize || fsize > rs)
			goto bad;
		rs = fsize;
		*how = FEED_PACKED;
	}
	if (m->feed_totals)
		*how |= FEED_TOTALED;
	if (h->rows > max ||
	    (h->ring ? ring_take(m, buf, (size_t)h->rows * rs) :
		       sh5_fd_read_all(m->feed_fd, buf,
				       (size_t)h->rows * rs)) < 0 ||
	    (m->feed_totals &&
	     sh5_fd_read_all(m->feed_fd, total,
			     c->s->ops->total_size(c->s)) < 0))
		goto bad;
	c->pos += h->rows;
	return (size_t)h->rows;
bad:
	feeder_died(m, fi, c);
	return 0;
}

/* Next block of series si of file fi into buf (at most max records),
 * like sh5_cursor_read() on the local cursor c, whose position and
 * damage fields it keeps up to date.  *how gets FEED_ flags: without
 * FEED_PACKED the records are in the ops' layout.  When the child totals
 * (m->feed_totals), its running total of the series (the rows sent so
 * far) is stored in total with every block (FEED_TOTALED).  local: the
 * records must be read in this process (they are synchronized). */
size_t mg_feed_read(struct mstate *m, size_t fi, size_t si,
		    struct sh5_cursor *c, void *buf, size_t max,
		    void *total, int local, int *how)
{
	struct feed_head *h = &m->feed_head;

	*how = 0;
	if (m->feed_died && m->feed_dead_file == fi) {
		/* The rest of a file that crashed HDF5 is not read. */
		if (!c->damaged) {
			c->damaged = 1;
			snprintf(c->reason, sizeof(c->reason), "not read: "
				 "reading this file crashes HDF5");
			c->good_rows = c->pos;
		}
		return 0;
	}
	if ((m->feed_local && m->feed_local_file == fi &&
	     m->feed_local_series == si) || m->feed_fd < 0)
		return sh5_cursor_read(c, buf, max);
	if (local && m->feed_totals) {
		m->feed_local = 1;
		m->feed_local_file = fi;
		m->feed_local_series = si;
		feed_skip(m, fi, si, c);
		return sh5_cursor_read(c, buf, max);
	}
again:
	if (feed_next_head(m, fi, c) < 0)
		return 0;
	if (m->onefeed && (h->file < fi || (h->file == fi &&
					    h->status != FEED_DONE &&
					    h->status != FEED_CHECKED &&
					    h->series < si))) {
		/* Left over from a series or input not read from the
		 * child (read here, or left out). */
		if (mg_feed_discard(m) < 0) {
			feeder_died(m, fi, c);
			return 0;
		}
		goto again;
	}
	if (m->onefeed && (h->file != fi || h->series != si ||
			   h->status == FEED_DONE)) {
		/* The child sends nothing (more) of it: read here, the
		 * child kept for the next inputs. */
		return sh5_cursor_read(c, buf, max);
	}
	if (h->file != fi || h->series != si) {
		/* Out of step (a series or file skipped here): go on
		 * without the child. */
		mg_feeder_stop(m);
		return sh5_cursor_read(c, buf, max);
	}
	m->feed_have = 0;
	if (h->status < 0) {
		c->damaged = 1;
		snprintf(c->reason, sizeof(c->reason), "unreadable");
		c->good_rows = c->pos;
		return 0;
	}
	if (h->status == 1 || h->status == 2)
		return feed_end(m, fi, c, total);
	return feed_block(m, fi, c, buf, max, total, how);
}

/* merge.c - see merge.h */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/fdio.h"
#include "common/h5attr.h"
#include "merge/merge.h"
#include "common/checksum.h"
#include "profile/reader.h"
#include "profile/totals.h"
#include "common/sort.h"

#define CHUNK_ROWS_MAX 4096

/* Children leave signals to the parent (its handlers remove the
 * temporary output). */
static void mg_child_signals(void)
{
	/* ... and die with it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
}

/* Seconds a child may read one input without a sign of progress: HDF5
 * loops forever on some damaged files.  SH5MERGE_READ_TIMEOUT overrides
 * it (tests). */
static int mg_read_timeout(void)
{
	const char *e = getenv("SH5MERGE_READ_TIMEOUT");
	long v = e ? strtol(e, NULL, 10) : 0;

	return v > 0 && v < 86400 ? (int)v : 120;
}

static double mg_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* Discovery. */

static int step_rank(const char *s)
{
	static const char *const special[] = { "batch", "extern",
					       "interactive", "pending" };
	size_t i;

	for (i = 0; i < 4; i++)
		if (!strcmp(s, special[i]))
			return (int)i;
	if (s[0] && strspn(s, "0123456789") == strlen(s))
		return 4;
	return 5;
}

int sh5_step_cmp(const char *a, const char *b)
{
	int ra = step_rank(a), rb = step_rank(b);

	if (ra != rb)
		return ra - rb;
	if (ra == 4) {
		unsigned long long x = strtoull(a, NULL, 10),
				   y = strtoull(b, NULL, 10);

		return x < y ? -1 : x > y;
	}
	return strcmp(a, b);
}

/* Node names: natural order (n2 before n10). */
int sh5_natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			unsigned long long x = strtoull(a, (char **)&a, 10);
			unsigned long long y = strtoull(b, (char **)&b, 10);

			if (x != y)
				return x < y ? -1 : 1;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

static int input_cmp(const void *pa, const void *pb)
{
	const struct sh5_input *a = pa, *b = pb;
	int c = sh5_step_cmp(a->step, b->step);

	return c ? c : sh5_natural_cmp(a->node, b->node);
}

void sh5_inputs_free(struct sh5_input *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		free(v[i].path);
	free(v);
}

/* Parse <job>_<step>_<node>.h5; 0 if it matches job. */
static int parse_name(const char *name, uint32_t job, struct sh5_input *in)
{
	const char *p = name, *u1, *u2;
	size_t len = strlen(name), sl, nl;
	char *end;
	unsigned long long j;

	if (len < 8 || strcmp(name + len - 3, ".h5") || !isdigit((unsigned char)*p))
		return -1;
	errno = 0;
	j = strtoull(p, &end, 10);
	if (errno || *end != '_' || j != job)
		return -1;
	u1 = end;
	if (!(u2 = strchr(u1 + 1, '_')))
		return -1;
	sl = (size_t)(u2 - u1 - 1);
	nl = (size_t)(name + len - 3 - u2 - 1);
	if (!sl || sl >= sizeof(in->step_id) || !nl || nl >= sizeof(in->node))
		return -1;
	in->job = (uint32_t)j;
	memcpy(in->step_id, u1 + 1, sl);
	in->step_id[sl] = '\0';
	memcpy(in->node, u2 + 1, nl);
	in->node[nl] = '\0';
	sh5_step_name(in->step_id, in->step, sizeof(in->step));
	return 0;
}

int sh5_merge_discover(const char *dir, uint32_t job,
		       const char *const *steps, size_t nsteps,
		       struct sh5_input **out, size_t *n,
		       struct sh5_error *errp)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct sh5_input *v = NULL, in;
	size_t cnt = 0, cap = 0, i;

	*out = NULL;
	*n = 0;
	if (!d)
		return sh5_errprintf(errp, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		int want = nsteps == 0;

		if (de->d_name[0] == '.')
			continue;
		memset(&in, 0, sizeof(in));
		if (parse_name(de->d_name, job, &in) < 0)
			continue;
		for (i = 0; i < nsteps && !want; i++) {
			char b[32];

			want = !strcmp(sh5_step_name(steps[i], b, sizeof(b)),
				       in.step);
		}
		if (!want)
			continue;
		if (cnt == cap) {
			struct sh5_input *nv;

			cap = cap ? 2 * cap : 64;
			if (!(nv = realloc(v, cap * sizeof(*v))))
				goto oom;
			v = nv;
		}
		if (!(in.path = malloc(strlen(dir) + strlen(de->d_name) + 2)))
			goto oom;
		snprintf(in.path, strlen(dir) + strlen(de->d_name) + 2,
			 "%s/%s", dir, de->d_name);
		in.file = in.path + strlen(dir) + 1;
		v[cnt++] = in;
	}
	closedir(d);
	if (cnt > 1)
		sh5_qsort(v, cnt, sizeof(*v), input_cmp);
	*out = v;
	*n = cnt;
	return 0;
oom:
	closedir(d);
	sh5_inputs_free(v, cnt);
	errno = ENOMEM;
	return sh5_errprintf(errp, "%s: out of memory", dir);
}

/* ------------------------------------------------------------------ */
/* Small HDF5 writers. */

/* Like sh5_errprintf_h5(), but a system error inside HDF5 (a full disk,
 * a file size limit) is reported as strerror() instead of HDF5's
 * multi-line description. */
static int mg_h5err(struct sh5_error *errp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int mg_h5err(struct sh5_error *errp, const char *fmt, ...)
{
	struct sh5_error tmp = { "" };
	char prefix[200], *p;
	const char *e;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	sh5_errprintf_h5(&tmp, "%s", prefix);
	if ((e = strstr(tmp.text, "errno = "))) {
		long n = strtol(e + 8, NULL, 10);

		if (n > 0) {
			errno = (int)n;
			return sh5_errprintf(errp, "%s: %s", prefix,
					     strerror((int)n));
		}
	}
	for (p = tmp.text; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return sh5_errprintf(errp, "%s", tmp.text);
}



static herr_t copy_attr_cb(hid_t src, const char *name,
			   const H5A_info_t *info, void *data)
{
	hid_t dst = *(hid_t *)data;
	hid_t a = -1, ft = -1, mt = -1, sp = -1, na = -1;
	hssize_t n;
	void *buf = NULL;
	int vlen;

	(void)info;
	if ((a = H5Aopen(src, name, H5P_DEFAULT)) < 0 ||
	    (ft = H5Aget_type(a)) < 0 || !sh5_type_sane(ft) ||
	    (sp = H5Aget_space(a)) < 0 ||
	    (mt = H5Tget_native_type(ft, H5T_DIR_ASCEND)) < 0)
		goto out;
	n = H5Sget_select_npoints(sp);
	if (n < 0 || !(buf = calloc((size_t)(n ? n : 1), H5Tget_size(mt))))
		goto out;
	vlen = H5Tdetect_class(mt, H5T_VLEN) > 0 ||
	       (H5Tget_class(mt) == H5T_STRING && H5Tis_variable_str(mt) > 0);
	if (H5Aread(a, mt, buf) < 0)
		goto out;
	if ((na = H5Acreate2(dst, name, ft, sp, H5P_DEFAULT, H5P_DEFAULT)) >= 0)
		H5Awrite(na, mt, buf);
	if (vlen)
		H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, buf);
out:
	free(buf);
	if (na >= 0)
		H5Aclose(na);
	if (mt >= 0)
		H5Tclose(mt);
	if (sp >= 0)
		H5Sclose(sp);
	if (ft >= 0)
		H5Tclose(ft);
	if (a >= 0)
		H5Aclose(a);
	return 0; /* an unreadable attribute does not stop the others */
}

static void mg_copy_attrs(hid_t src, hid_t dst)
{
	hsize_t idx = 0;

	H5Aiterate2(src, H5_INDEX_NAME, H5_ITER_INC, &idx, copy_attr_cb, &dst);
}

static hid_t mg_lcpl_intermediate(void)
{
	hid_t p = H5Pcreate(H5P_LINK_CREATE);

	if (p >= 0)
		H5Pset_create_intermediate_group(p, 1);
	return p;
}

static hid_t mg_make_group(hid_t loc, const char *name)
{
	hid_t lcpl, g;

	if (H5Lexists(loc, name, H5P_DEFAULT) > 0)
		return H5Gopen2(loc, name, H5P_DEFAULT);
	lcpl = mg_lcpl_intermediate();
	g = H5Gcreate2(loc, name, lcpl, H5P_DEFAULT, H5P_DEFAULT);
	H5Pclose(lcpl);
	return g;
}

static unsigned mg_read_attrs(hid_t obj);

/* Copy a dataset that is not a series (ClockOffsets, ...) by reading and
 * writing it in blocks: H5Ocopy() crashes on some damaged objects.
 * dst < 0: only read it (the first pass).  0, or -1 with err set. */
static int mg_copy_dataset(hid_t src, const char *path, hid_t dst,
			struct sh5_error *err)
{
	hid_t d = -1, ft = -1, nt = -1, sp = -1, od = -1, dcpl = -1,
	      lcpl = -1, osp = -1, ms = -1;
	hsize_t dims[1], maxd[1] = { H5S_UNLIMITED }, chunk[1], start[1],
		cnt[1];
	size_t esz, rows;
	void *buf = NULL;
	int nd, vlen, rc = -1;

	if ((d = H5Dopen2(src, path, H5P_DEFAULT)) < 0 ||
	    (ft = H5Dget_type(d)) < 0 || !sh5_type_sane(ft) ||
	    (nt = H5Tget_native_type(ft, H5T_DIR_ASCEND)) < 0 ||
	    (sp = H5Dget_space(d)) < 0 ||
	    (nd = H5Sget_simple_extent_ndims(sp)) < 0) {
		sh5_errprintf_h5(err, "unreadable");
		goto out;
	}
	vlen = H5Tdetect_class(nt, H5T_VLEN) > 0 ||
	       (H5Tget_class(nt) == H5T_STRING && H5Tis_variable_str(nt) > 0);
	esz = H5Tget_size(nt);
	lcpl = mg_lcpl_intermediate();
	if (nd != 1) {
		/* Scalars and the like: small by nature. */
		hssize_t n = H5Sget_select_npoints(sp);

		if (n < 0 || (size_t)n * esz > SH5_MERGE_BUFFER * 16) {
			sh5_errprintf(err, "not a 1-D dataset and too large");
			goto out;
		}
		if (!(buf = calloc((size_t)(n ? n : 1), esz)) ||
		    H5Dread(d, nt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0 ||
		    (dst >= 0 &&
		     ((od = H5Dcreate2(dst, path, ft, sp, lcpl, H5P_DEFAULT,
				       H5P_DEFAULT)) < 0 ||
		      H5Dwrite(od, nt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) <
			      0))) {
			sh5_errprintf_h5(err, "cannot copy");
			goto out;
		}
		if (vlen)
			H5Dvlen_reclaim(nt, sp, H5P_DEFAULT, buf);
	} else {
		H5Sget_simple_extent_dims(sp, dims, NULL);
		/* A claimed size far beyond what is stored (a task's data
		 * is untrusted: a sparse dataset of 2^40 rows) would be
		 * read as fill values for ever: refused. */
		if ((double)dims[0] * (double)esz > 64.0 * 1024 * 1024 &&
		    (double)dims[0] * (double)esz / 1024.0 >
			    (double)H5Dget_storage_size(d)) {
			sh5_errprintf(err, "claims %llu rows of %zu bytes but "
				      "stores %llu bytes",
				      (unsigned long long)dims[0], esz,
				      (unsigned long long)H5Dget_storage_size(d));
			goto out;
		}
		rows = SH5_MERGE_BUFFER / (esz ? esz : 1);
		if (!rows)
			rows = 1;
		chunk[0] = dims[0] ? (dims[0] < rows ? dims[0] : rows) : 1;
		if ((dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 ||
		    H5Pset_chunk(dcpl, 1, chunk) < 0 ||
		    (osp = H5Screate_simple(1, dims, maxd)) < 0 ||
		    (dst >= 0 &&
		     (od = H5Dcreate2(dst, path, ft, osp, lcpl, dcpl,
				      H5P_DEFAULT)) < 0) ||
		    !(buf = malloc(rows * esz))) {
			sh5_errprintf_h5(err, "cannot create the copy");
			goto out;
		}
		for (start[0] = 0; start[0] < dims[0]; start[0] += cnt[0]) {
			cnt[0] = dims[0] - start[0] < rows ? dims[0] - start[0] :
							     rows;
			if ((ms = H5Screate_simple(1, cnt, NULL)) < 0 ||
			    H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL,
						cnt, NULL) < 0 ||
			    H5Sselect_hyperslab(osp, H5S_SELECT_SET, start,
						NULL, cnt, NULL) < 0 ||
			    H5Dread(d, nt, ms, sp, H5P_DEFAULT, buf) < 0 ||
			    (od >= 0 &&
			     H5Dwrite(od, nt, ms, osp, H5P_DEFAULT, buf) < 0)) {
				sh5_errprintf_h5(err, "unreadable rows from %llu",
						 (unsigned long long)start[0]);
				goto out;
			}
			if (vlen)
				H5Dvlen_reclaim(nt, ms, H5P_DEFAULT, buf);
			H5Sclose(ms);
			ms = -1;
		}
	}
	if (od >= 0)
		mg_copy_attrs(d, od);
	else
		mg_read_attrs(d);
	rc = 0;
out:
	free(buf);
	if (ms >= 0)
		H5Sclose(ms);
	if (osp >= 0)
		H5Sclose(osp);
	if (od >= 0)
		H5Dclose(od);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (lcpl >= 0)
		H5Pclose(lcpl);
	if (sp >= 0)
		H5Sclose(sp);
	if (nt >= 0)
		H5Tclose(nt);
	if (ft >= 0)
		H5Tclose(ft);
	if (d >= 0)
		H5Dclose(d);
	return rc;
}

/* ------------------------------------------------------------------ */
/* State. */

/* A series of an input copied whole: enough to check and total it. */
struct whole_ent {
	char path[2 * SH5_NAME_MAX + 2]; /* relative to the node group */
	uint64_t rows;
	int32_t task;                    /* a task (totalled in AllTasks) */
	uint64_t sig;                    /* series_sig() of its series */
	uint64_t tofs, tlen;             /* its total in the blob (the
					  * first task: AllTasks), or 0 */
};

struct finfo {
	struct sh5_input *in;
	int usable;
	enum sh5_nodestep_kind kind;
	uint64_t size;
	uint32_t crc;
	int node_index, ntasks, nnodes, step_tasks;
	int has_start;      /* start_ns: its "Start Time ns" */
	int64_t start_ns;
	long max_task;
	uint64_t samples;   /* rows the file claims */
	uint64_t written;   /* rows merged */
	uint64_t lost;      /* rows lost */
	unsigned lost_objects;
	int probe_hit;      /* hooks->probe returned 1 */
	int probed;         /* the first pass is done with it */
	int whole;          /* intact, checksummed, totals stored: its node
			     * group is copied as it is (see whole_ok()) */
	char node_name[SH5_NAME_MAX]; /* its node group */
	struct whole_ent *ents; /* whole: its series (sent after the
				 * first pass's message) */
	size_t nents;
	unsigned char *blob;    /* whole: the totals to fold (sent after
				 * ents) */
	size_t blob_len;
	const char *status; /* merged, salvaged, skipped */
	char reason[256];
};

struct check {              /* a dataset to verify after writing */
	char *path;
	uint64_t rows;
};

struct prober {
	pid_t pid;
	int fd;
	size_t next;   /* the input it is on */
	int live;
	double since;  /* when it started on it */
};

/* The checking children of the first pass (see mg_probe_start()). */
struct probers {
	struct prober pr[4];
	size_t par;    /* children */
	size_t done;   /* inputs checked */
};

struct mstate {
	const struct sh5_merge_opts *o;
	struct sh5_merge_stats *st;
	struct sh5_error *errp;
	struct sh5_input *in;
	size_t nin;
	struct finfo *fi;
	char **missing;         /* step-level findings */
	size_t nmissing;
	struct check *checks;
	size_t nchecks;
	void *buf;
	size_t buf_bytes;
	char user[64], cluster[64];
	size_t nsteps_written;
	int write_failed;       /* an HDF5 write failed: stop */
	int out_fd;             /* the temporary output, for early writeback */
	int out_wfd;            /* the same, writable: space reservations */
	hid_t dxpl;             /* small conversion buffers */
	/* Second pass: a child process reads and decodes the records of
	 * the inputs in order and streams them here (see mg_feed_read()). */
	pid_t feed_pid;
	int feed_fd;            /* -1: read in this process */
	int feed_have;          /* feed_head holds an unconsumed header */
	/* The child totals the series whose chunks the parent copies raw
	 * and sends only their totals (no synchronization asked). */
	int feed_totals;
	/* The child sent only the totals of series (feed_local_file,
	 * feed_local_series) but its records are needed here: they are
	 * read in this process. */
	int feed_local;
	size_t feed_local_file, feed_local_series;
	struct feed_head {
		uint64_t file, series, rows;
		/* 0 data (ops' layout), 1 end of series, -1 failed; when
		 * the child totals (feed_totals): 3 data in the job file's
		 * layout, 4 rows totalled but not sent (copied raw), 2 end
		 * of series; 0, 3 and 4 are followed by the rows and the
		 * running total, 2 by the total */
		int64_t status;
		uint64_t good_rows;
		int64_t damaged;
		char reason[200];
	} feed_head;
	size_t feed_dead_file;  /* the child died reading this file */
	int feed_died;
	struct probers probe;   /* the first pass */
	/* The second pass started before the first ended: only inputs the
	 * first pass found whole are written, else mg_early_gate() makes it
	 * start over (see sh5_merge_job()). */
	int early;
	int pass1_state;        /* mg_pass1_done(): 0 not yet, else 1 +
				 * result */
	int in_child;           /* this is a checking child */
	struct scache {         /* series of stored totals, by signature */
		char key[2 * SH5_NAME_MAX + 2];
		uint64_t sig;
		struct sh5_series *s;
	} *sc;
	size_t nsc;
	struct writeback {      /* see mg_wb_start() */
		pthread_t th;
		pthread_mutex_t mu;
		pthread_cond_t cv;
		int fd;             /* its own descriptor of the output */
		unsigned kicks;
		int stop, running, want_fsync, fsynced, fsync_rc, fsync_errno;
	} wb;
};

/*
 * Early writeback of the output: a thread starts writing back what HDF5
 * wrote so far each time it is kicked (every eighth node), so that the
 * fsync before the rename has little left to wait for, and the work of
 * submitting it (ext4 allocates blocks then) is done beside the merge,
 * not in its way.  At the end it also runs that fsync while the merge
 * verifies the closed file (mg_wb_fsync(), then mg_wb_stop() for its result).
 * It works on its own descriptor of the output.
 */
static void *wb_main(void *arg)
{
	struct writeback *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->kicks && !w->stop && !w->want_fsync)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->kicks) {
			w->kicks = 0;
			pthread_mutex_unlock(&w->mu);
			sync_file_range(w->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
			pthread_mutex_lock(&w->mu);
			continue;
		}
		if (w->want_fsync) {
			int rc, e;

			pthread_mutex_unlock(&w->mu);
			rc = fsync(w->fd);
			e = errno;
			pthread_mutex_lock(&w->mu);
			w->fsync_rc = rc;
			w->fsync_errno = e;
			w->want_fsync = 0;
			w->fsynced = 1;
		}
		break;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void mg_wb_start(struct mstate *m)
{
	struct writeback *w = &m->wb;

	memset(w, 0, sizeof(*w));
	w->fd = m->out_fd >= 0 ? fcntl(m->out_fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (w->fd < 0)
		return;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (!(w->running = pthread_create(&w->th, NULL, wb_main, w) == 0)) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		close(w->fd);
		w->fd = -1;
	}
}

static void mg_wb_kick(struct mstate *m)
{
	struct writeback *w = &m->wb;

	if (!w->running) {
		if (m->out_fd >= 0)
			sync_file_range(m->out_fd, 0, 0,
					SYNC_FILE_RANGE_WRITE);
		return;
	}
	pthread_mutex_lock(&w->mu);
	w->kicks++;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* Ask for the fsync of the output (after its writeback is started). */
static void mg_wb_fsync(struct mstate *m)
{
	struct writeback *w = &m->wb;

	if (!w->running)
		return;
	pthread_mutex_lock(&w->mu);
	w->want_fsync = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* End the thread.  Returns the result of the fsync mg_wb_fsync() asked for
 * (errno set), -2 when none was done. */
static int mg_wb_stop(struct mstate *m)
{
	struct writeback *w = &m->wb;
	int rc = -2;

	if (!w->running)
		return -2;
	pthread_mutex_lock(&w->mu);
	w->stop = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	close(w->fd);
	w->fd = -1;
	w->running = 0;
	if (w->fsynced) {
		rc = w->fsync_rc;
		errno = w->fsync_errno;
	}
	return rc;
}

static void mg_report(struct mstate *m, int error, const char *file,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void mg_report(struct mstate *m, int error, const char *file,
		   const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (error)
		m->st->problems++;
	if (m->o->report)
		m->o->report(m->o->arg, error, file, msg);
}

static int mg_add_missing(struct mstate *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int mg_add_missing(struct mstate *m, const char *fmt, ...)
{
	char msg[512], **v;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mg_report(m, 1, m->o->dir, "%s", msg);
	if (!(v = realloc(m->missing, (m->nmissing + 1) * sizeof(*v))))
		return -1;
	m->missing = v;
	if (!(v[m->nmissing] = strdup(msg)))
		return -1;
	m->nmissing++;
	return 0;
}

static int mg_add_check(struct mstate *m, const char *path, uint64_t rows)
{
	struct check *v = realloc(m->checks, (m->nchecks + 1) * sizeof(*v));

	if (!v)
		return -1;
	m->checks = v;
	if (!(v[m->nchecks].path = strdup(path)))
		return -1;
	v[m->nchecks].rows = rows;
	m->nchecks++;
	return 0;
}

/* Write one total as a one-record dataset at path (relative to loc). */
static int mg_write_total(struct mstate *m, hid_t loc, const char *path,
		       const struct sh5_series *s, const void *total,
		       size_t count)
{
	if (sh5_total_write(loc, path, s, total, count, UINT64_MAX, -1) < 0)
		return mg_h5err(m->errp, "%s: cannot write totals %s",
			     m->o->output, path);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Pass 1: check each input. */

static int file_crc(const char *path, uint32_t *crc, uint64_t *size,
		    void *buf, size_t len, void **map, struct sh5_error *errp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint32_t c = 0;
	uint64_t total = 0;
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return sh5_errprintf(errp, "%s", strerror(errno));
	/* Mapped in a checking child (no copy out of the page cache),
	 * else read. */
	if (map && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size > 0 &&
	    (uint64_t)st.st_size < ((uint64_t)1 << 40)) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ,
			       MAP_PRIVATE | MAP_POPULATE, fd, 0);

		if (p != MAP_FAILED) {
			/* A file cut short while mapped raises SIGBUS: in
			 * the checking child only, which marks the file.
			 * The caller unmaps it (*size bytes). */
			c = sh5_crc32(0, p, (size_t)st.st_size);
			close(fd);
			*map = p;
			*crc = c;
			*size = (uint64_t)st.st_size;
			return 0;
		}
	}
	while ((n = read(fd, buf, len)) > 0) {
		c = sh5_crc32(c, buf, (size_t)n);
		total += (uint64_t)n;
	}
	if (n < 0) {
		sh5_errprintf(errp, "read error: %s", strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	*crc = c;
	*size = total;
	return 0;
}

/* Read every attribute of obj (what mg_copy_attrs() will do).  Returns the
 * number that cannot be read (mg_copy_attrs() leaves those out). */
static herr_t read_attr_cb(hid_t obj, const char *name, const H5A_info_t *ai,
			   void *data)
{
	hid_t a = -1, ft = -1, mt = -1, sp = -1;
	hssize_t n = -1;
	void *buf = NULL;
	int ok = 0;

	(void)ai;
	if ((a = H5Aopen(obj, name, H5P_DEFAULT)) >= 0 &&
	    (ft = H5Aget_type(a)) >= 0 && sh5_type_sane(ft) &&
	    (sp = H5Aget_space(a)) >= 0 &&
	    (mt = H5Tget_native_type(ft, H5T_DIR_ASCEND)) >= 0 &&
	    (n = H5Sget_select_npoints(sp)) >= 0 &&
	    (buf = calloc((size_t)(n ? n : 1), H5Tget_size(mt))) &&
	    H5Aread(a, mt, buf) >= 0) {
		ok = 1;
		if (H5Tdetect_class(mt, H5T_VLEN) > 0 ||
		    (H5Tget_class(mt) == H5T_STRING &&
		     H5Tis_variable_str(mt) > 0))
			H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, buf);
	}
	if (!ok)
		(*(unsigned *)data)++;
	free(buf);
	if (mt >= 0)
		H5Tclose(mt);
	if (sp >= 0)
		H5Sclose(sp);
	if (ft >= 0)
		H5Tclose(ft);
	if (a >= 0)
		H5Aclose(a);
	return 0;
}

static unsigned mg_read_attrs(hid_t obj)
{
	hsize_t idx = 0;
	unsigned bad = 0;

	if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, read_attr_cb,
			&bad) < 0)
		bad++;
	return bad;
}

/* First pass over one input: checksum, open, and read all the metadata
 * the second pass will read (attributes, object headers, chunk indexes,
 * other objects), so that damage to it is known before anything is
 * written.  Damaged records are found as the second pass reads them.
 * Fills f; reports nothing (it runs in a child process). */
static int whole_ok(struct sh5_nodestep *ns, struct finfo *f,
		    const unsigned char *map);
static int mg_early_gate(struct mstate *m, size_t i);

static void mg_check_file(struct mstate *m, struct finfo *f, char *user,
		       char *cluster)
{
	struct sh5_error err = { "" };
	struct sh5_nodestep *ns;
	void *map = NULL;
	size_t i;
	int whole;

	f->status = "skipped";
	f->node_index = f->ntasks = f->nnodes = f->step_tasks = -1;
	f->max_task = -1;
	if (file_crc(f->in->path, &f->crc, &f->size, m->buf, m->buf_bytes,
		     m->in_child ? &map : NULL, &err) < 0) {
		snprintf(f->reason, sizeof(f->reason), "%s", err.text);
		return;
	}
	ns = sh5_nodestep_open(f->in->path, f->in->node, m->o->job,
			       f->in->step_id, &err);
	if (!ns) {
		const char *r = err.text;
		size_t pl = strlen(f->in->path);

		/* The reason names the file; keep only the reason. */
		if (!strncmp(r, f->in->path, pl) && r[pl] == ':')
			r += pl + 2;
		snprintf(f->reason, sizeof(f->reason), "%s", r);
		if (map)
			munmap(map, (size_t)f->size);
		return;
	}
	f->usable = 1;
	f->status = "merged";
	f->kind = ns->kind;
	/* probe's value may be a mask of what it found (mergesync.c:
	 * measurements, events); any > 0 is a hit. */
	if (m->o->hooks && m->o->hooks->probe) {
		int hit = m->o->hooks->probe(m->o->hooks->arg, ns->node);

		f->probe_hit = hit > 0 ? hit : 0;
	}
	f->node_index = ns->node_index;
	f->ntasks = ns->ntasks;
	{
		long long v;

		if (sh5_attr_get_int(ns->node, "Start Time ns", &v) == 0) {
			f->has_start = 1;
			f->start_ns = v;
		}
	}
	f->nnodes = ns->nnodes;
	f->step_tasks = ns->step_tasks;
	if (ns->kind == SH5_NODESTEP_OURS && !user[0])
		sh5_attr_get_str(ns->node, "User", user, 64);
	if (ns->kind == SH5_NODESTEP_OURS && !cluster[0])
		sh5_attr_get_str(ns->node, "Cluster", cluster, 64);
	if ((f->lost_objects = mg_read_attrs(ns->node)))
		snprintf(f->reason, sizeof(f->reason), "%u unreadable "
			 "attribute%s of /%s", f->lost_objects,
			 f->lost_objects == 1 ? "" : "s", ns->node_name);
	/* A whole copy's datasets are all read (attributes, every chunk
	 * checksummed) by whole_ok(): not again below. */
	whole = whole_ok(ns, f, map);
	for (i = 0; i < ns->nseries; i++) {
		struct sh5_ns_series *e = &ns->series[i];
		struct sh5_cursor c;
		hid_t d;

		f->samples += e->nrows;
		if (e->series->ops == sh5_series_ops_lookup("Tasks", "0")) {
			char *end;
			long t;

			errno = 0;
			t = strtol(e->series->name, &end, 10);
			/* A task id beyond INT_MAX is no task of Slurm's. */
			if (!errno && !*end && t <= INT_MAX && t > f->max_task)
				f->max_task = t;
		}
		/* A whole copy's datasets were all read by whole_ok(). */
		if (whole)
			continue;
		if ((d = H5Dopen2(ns->node, e->path, H5P_DEFAULT)) < 0) {
			f->lost += e->nrows;
			if (!f->reason[0])
				snprintf(f->reason, sizeof(f->reason),
					 "%.60s: cannot open", e->path);
			continue;
		}
		if (mg_read_attrs(d)) {
			f->lost_objects++;
			if (!f->reason[0])
				snprintf(f->reason, sizeof(f->reason),
					 "%.60s: unreadable attributes",
					 e->path);
		}
		if (!ns->salvaged) {
			hsize_t nchunks = 0;
			hid_t dcpl = H5Dget_create_plist(d);

			/* Walk the chunk index (the metadata a damaged
			 * file may crash HDF5 with); the records themselves
			 * are checked as the second pass reads them. */
			if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED)
				H5Dget_num_chunks(d, H5S_ALL, &nchunks);
			if (dcpl >= 0)
				H5Pclose(dcpl);
		} else if (sh5_cursor_open(&c, d, e->series, ns->real_eof,
					   NULL) == 0) {
			if (c.damaged) {
				f->lost += sh5_cursor_lost(&c);
				if (!f->reason[0])
					snprintf(f->reason, sizeof(f->reason),
						 "%.60s: %.180s", e->path,
						 c.reason);
			}
			sh5_cursor_close(&c);
		}
		H5Dclose(d);
	}
	for (i = 0; i < ns->nother; i++) {
		H5O_info_t oi;

		if (H5Oget_info_by_name2(ns->node, ns->other[i], &oi,
					 H5O_INFO_BASIC, H5P_DEFAULT) < 0 ||
		    (oi.type == H5O_TYPE_DATASET &&
		     mg_copy_dataset(ns->node, ns->other[i], -1, &err) < 0)) {
			if (!f->reason[0])
				snprintf(f->reason, sizeof(f->reason),
					 "%.60s: unreadable object",
					 ns->other[i]);
			f->lost_objects++;
		}
	}
	if (ns->damage[0] || f->lost || f->lost_objects) {
		char tmp[256];

		f->status = "salvaged";
		snprintf(tmp, sizeof(tmp), "%.120s%s%.120s", ns->damage,
			 ns->damage[0] && f->reason[0] ? "; " : "", f->reason);
		snprintf(f->reason, sizeof(f->reason), "%s", tmp);
	} else if ((f->whole = whole)) {
		snprintf(f->node_name, sizeof(f->node_name), "%s",
			 ns->node_name);
	}
	sh5_nodestep_close(ns);
	if (map)
		munmap(map, (size_t)f->size);
}

/* The fields of s as sh5_series_same_fields() compares them (FNV-1a):
 * totals of series with equal signatures fold alike. */
static uint64_t series_sig(const struct sh5_series *s)
{
	uint64_t h = 14695981039346656037ull;
	size_t i;

#define SIG_MIX(p, n) do { \
		const unsigned char *q_ = (const unsigned char *)(p); \
		size_t n_ = (n); \
		while (n_--) { h ^= *q_++; h *= 1099511628211ull; } \
	} while (0)
	SIG_MIX(&s->ops, sizeof(s->ops));
	SIG_MIX(&s->nfields, sizeof(s->nfields));
	for (i = 0; i < s->nfields; i++) {
		SIG_MIX(s->fields[i].name, strlen(s->fields[i].name) + 1);
		SIG_MIX(&s->fields[i].type, sizeof(s->fields[i].type));
		SIG_MIX(&s->fields[i].kind, sizeof(s->fields[i].kind));
	}
#undef SIG_MIX
	return h;
}

/* Read the stored total at tpath (for series s) onto the end of f's blob;
 * *ofs, *len: where.  0 or -1. */
static int blob_total(struct finfo *f, hid_t node, const char *tpath,
		      const struct sh5_series *s, uint64_t *ofs, uint64_t *len)
{
	size_t n = s->ops->total_size(s);
	unsigned char *b = realloc(f->blob, f->blob_len + n);

	if (!b)
		return -1;
	f->blob = b;
	if (sh5_total_read(node, tpath, s, b + f->blob_len) < 0)
		return -1;
	*ofs = f->blob_len;
	*len = n;
	f->blob_len += n;
	return 0;
}

/* A uint64 attribute of the object at path (relative to loc), or
 * UINT64_MAX. */
static uint64_t attr_u64(hid_t loc, const char *path, const char *name)
{
	hid_t a = H5Aopen_by_name(loc, path, name, H5P_DEFAULT, H5P_DEFAULT);
	uint64_t v = UINT64_MAX;

	if (a >= 0) {
		if (H5Aread(a, H5T_NATIVE_UINT64, &v) < 0)
			v = UINT64_MAX;
		H5Aclose(a);
	}
	return v;
}

/*
 * Can the node group of ns be copied whole into the job file, without
 * decoding its records?  When the file is ours and intact, every series
 * dataset is chunked with the fletcher32 filter last and every stored
 * chunk passes it (checked on the raw chunk: no inflating), and the
 * writer's totals (Totals/<path>, Totals/AllTasks) are readable and cover
 * exactly the rows of the datasets.  Anything else goes the normal way
 * (records decoded, totalled, damage salvaged).  When it can, f->ents
 * lists the series and f->blob holds the totals the merge folds into the
 * step's (those of the series other than tasks, and AllTasks): read here,
 * in the checking child, so the merge need not open them.
 */
static int whole_ok(struct sh5_nodestep *ns, struct finfo *f,
		    const unsigned char *map)
{
	void *raw = NULL;
	size_t i, rlen = 0, ntasks = 0, first_task = SIZE_MAX;
	uint64_t task_rows = 0;
	int ok = 0;

	if (ns->kind != SH5_NODESTEP_OURS || !ns->has_totals ||
	    ns->salvaged || ns->damage[0])
		return 0;
	for (i = 0; i < ns->nother; i++) {
		H5O_info_t oi;

		if (H5Oget_info_by_name2(ns->node, ns->other[i], &oi,
					 H5O_INFO_BASIC, H5P_DEFAULT) < 0 ||
		    oi.type != H5O_TYPE_DATASET)
			return 0;
	}
	if (!(f->ents = calloc(ns->nseries ? ns->nseries : 1,
			       sizeof(*f->ents))))
		return 0;
	f->nents = ns->nseries;
	for (i = 0; i < ns->nseries; i++) {
		struct sh5_ns_series *e = &ns->series[i];
		const struct sh5_series *s = e->series;
		struct whole_ent *w = &f->ents[i];
		hid_t d = H5Dopen2(ns->node, e->path, H5P_DEFAULT);
		hid_t dcpl = d >= 0 ? H5Dget_create_plist(d) : -1;
		char tpath[2 * SH5_NAME_MAX + 16];
		hsize_t cr = 0, off[1];
		unsigned flags, cd[8];
		size_t ncd = 8;
		int nf, good, task = !strcmp(s->ops->name, "Task");

		snprintf(w->path, sizeof(w->path), "%s", e->path);
		w->rows = e->nrows;
		w->task = task;
		w->sig = series_sig(s);
		snprintf(tpath, sizeof(tpath), "Totals/%s", e->path);
		good = dcpl >= 0 && !mg_read_attrs(d) &&
		       H5Pget_layout(dcpl) == H5D_CHUNKED &&
		       H5Pget_chunk(dcpl, 1, &cr) == 1 && cr > 0 &&
		       (nf = H5Pget_nfilters(dcpl)) > 0 &&
		       H5Pget_filter2(dcpl, (unsigned)nf - 1, &flags, &ncd, cd,
				      0, NULL, NULL) == H5Z_FILTER_FLETCHER32 &&
		       /* Exactly the datasets under Tasks are tasks. */
		       task == !strcmp(e->parent, "Tasks") &&
		       attr_u64(ns->node, tpath, "Rows") == e->nrows &&
		       (task || blob_total(f, ns->node, tpath, s, &w->tofs,
					   &w->tlen) == 0);
		for (off[0] = 0; good && off[0] < e->nrows; off[0] += cr) {
			hsize_t size = 0;
			haddr_t addr = HADDR_UNDEF;
			unsigned fmask = 0;
			uint32_t mask = 0;

			if (H5Dget_chunk_info_by_coord(d, off, &fmask, &addr,
						       &size) < 0 ||
			    !size || fmask || addr == HADDR_UNDEF ||
			    addr > ns->size || size > ns->size - addr) {
				good = 0;
				break;
			}
			if (map) {
				/* The file is mapped (its CRC): no read. */
				good = addr + size <= f->size &&
				       sh5_fletcher32_ok(map + addr,
							 (size_t)size);
				continue;
			}
			if (size > rlen) {
				void *r = realloc(raw, (size_t)size);

				if (!r) {
					good = 0;
					break;
				}
				raw = r;
				rlen = (size_t)size;
			}
			good = H5Dread_chunk(d, H5P_DEFAULT, off, &mask,
					     raw) >= 0 && !mask &&
			       sh5_fletcher32_ok(raw, (size_t)size);
		}
		if (dcpl >= 0)
			H5Pclose(dcpl);
		if (d >= 0)
			H5Dclose(d);
		if (!good)
			goto out;
		if (task) {
			if (first_task == SIZE_MAX)
				first_task = i;
			ntasks++;
			task_rows += e->nrows;
		}
	}
	if (ntasks) {
		/* Every task in the writer's node total, kept with the first
		 * task. */
		struct whole_ent *w = &f->ents[first_task];
		hid_t d = H5Dopen2(ns->node, "Totals/AllTasks", H5P_DEFAULT);
		long long count = -1;

		if (d >= 0) {
			sh5_attr_get_int(d, "Series Count", &count);
			H5Dclose(d);
		}
		if (count != (long long)ntasks ||
		    attr_u64(ns->node, "Totals/AllTasks", "Rows") != task_rows ||
		    blob_total(f, ns->node, "Totals/AllTasks",
			       ns->series[first_task].series, &w->tofs,
			       &w->tlen) < 0)
			goto out;
	}
	ok = 1;
out:
	if (!ok) {
		free(f->ents);
		f->ents = NULL;
		f->nents = 0;
		free(f->blob);
		f->blob = NULL;
		f->blob_len = 0;
	}
	free(raw);
	return ok;
}

/* Report what the first pass found about one input. */
static void report_file(struct mstate *m, struct finfo *f)
{
	if (!f->usable)
		mg_report(m, 1, f->in->path, "%s", f->reason);
	else if (!strcmp(f->status, "salvaged"))
		mg_report(m, 1, f->in->path, "damaged: %s; %" PRIu64 " of %"
		       PRIu64 " samples lost, the rest salvaged", f->reason,
		       f->lost, f->samples);
}

/* The first pass runs in child processes: HDF5 1.10 can crash on some
 * damaged files (it trusts heap and index contents), and such a crash must
 * only mark that file as bad.  Child k of P (one per CPU, at most 4)
 * checks inputs k, k + P, k + 2P, ... and sends one message per input;
 * when a child dies, the input it was on is marked and a new child takes
 * the rest of its share. */
struct probe_msg {
	size_t idx;
	struct finfo f;
	char user[64], cluster[64];
};


static int spawn_prober(struct mstate *m, struct prober *p, size_t first,
			size_t stride)
{
	int pfd[2];
	pid_t pid;
	size_t i;

	if (pipe(pfd) < 0)
		return -1;
	if ((pid = fork()) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		mg_child_signals();
		close(pfd[0]);
		m->in_child = 1;
		for (i = first; i < m->nin; i += stride) {
			struct probe_msg msg;

			memset(&msg, 0, sizeof(msg));
			msg.idx = i;
			msg.f = m->fi[i];
			mg_check_file(m, &msg.f, msg.user, msg.cluster);
			if (sh5_fd_write_all(pfd[1], &msg, sizeof(msg)) < 0 ||
			    (msg.f.nents &&
			     sh5_fd_write_all(pfd[1], msg.f.ents, msg.f.nents *
					      sizeof(*msg.f.ents)) < 0) ||
			    (msg.f.blob_len &&
			     sh5_fd_write_all(pfd[1], msg.f.blob,
					      msg.f.blob_len) < 0))
				_exit(3);
			free(msg.f.ents);
			free(msg.f.blob);
		}
		_exit(0);
	}
	close(pfd[1]);
	p->pid = pid;
	p->fd = pfd[0];
	p->next = first;
	p->live = 1;
	p->since = mg_now_s();
	return 0;
}

/* Check inputs first, first + stride, ... in this process (no child
 * could be started for them). */
static void check_here(struct mstate *m, size_t first, size_t stride)
{
	size_t i;

	for (i = first; i < m->nin; i += stride) {
		mg_check_file(m, &m->fi[i], m->user, m->cluster);
		m->fi[i].probed = 1;
		m->probe.done++;
	}
}

/* Start the checking children: par of them (at most 4). */
static void mg_probe_start(struct mstate *m, size_t par)
{
	struct probers *ps = &m->probe;
	size_t i, k;

	if (par < 1)
		par = 1;
	if (par > 4)
		par = 4;
	if (par > m->nin)
		par = m->nin;
	ps->par = par;
	ps->done = 0;
	for (i = 0; i < m->nin; i++)
		m->fi[i].in = &m->in[i];
	for (k = 0; k < par; k++)
		if (spawn_prober(m, &ps->pr[k], k, par) < 0) {
			/* No child: check this share here. */
			ps->pr[k].live = 0;
			check_here(m, k, par);
		}
}

/* Take what the children sent (waiting up to a second for it). */
static void probe_poll(struct mstate *m)
{
	struct probers *ps = &m->probe;
	struct pollfd pf[4];
	size_t map[4], n = 0, i, k, par = ps->par;

	for (k = 0; k < par; k++)
		if (ps->pr[k].live) {
			pf[n].fd = ps->pr[k].fd;
			pf[n].events = POLLIN;
			map[n++] = k;
		}
	if (!n) {
		/* Nothing left to hear from (cannot happen while inputs
		 * are unchecked): mark the rest. */
		for (i = 0; i < m->nin; i++)
			if (!m->fi[i].probed) {
				m->fi[i].probed = 1;
				m->fi[i].usable = 0;
				m->fi[i].status = "skipped";
				snprintf(m->fi[i].reason,
					 sizeof(m->fi[i].reason),
					 "could not be checked");
				ps->done++;
			}
		return;
	}
	if (poll(pf, n, 1000) < 0)
		return;
	for (i = 0; i < n; i++) {
		struct prober *p = &ps->pr[map[i]];
		struct probe_msg msg;
		size_t off = 0;
		int st = 0, hung = 0;

		if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) {
			if (mg_now_s() - p->since < mg_read_timeout())
				continue;
			/* Stuck on this input: end it. */
			kill(p->pid, SIGKILL);
			hung = 1;
		}
		if (!hung) {
			while (off < sizeof(msg)) {
				ssize_t r = read(p->fd, (char *)&msg + off,
						 sizeof(msg) - off);

				if (r <= 0)
					break;
				off += (size_t)r;
			}
		}
		if (off == sizeof(msg) && msg.idx == p->next) {
			/* The series and totals of a whole input follow. */
			msg.f.ents = NULL;
			msg.f.blob = NULL;
			if ((msg.f.nents &&
			     (msg.f.nents > 1u << 20 ||
			      !(msg.f.ents = calloc(msg.f.nents,
						    sizeof(*msg.f.ents))) ||
			      sh5_fd_read_all(p->fd, msg.f.ents, msg.f.nents *
					      sizeof(*msg.f.ents)) < 0)) ||
			    (msg.f.blob_len &&
			     (msg.f.blob_len > 1u << 26 ||
			      !(msg.f.blob = malloc(msg.f.blob_len)) ||
			      sh5_fd_read_all(p->fd, msg.f.blob,
					      msg.f.blob_len) < 0))) {
				/* A short message: the child died; taken
				 * as the normal way's problem. */
				free(msg.f.ents);
				free(msg.f.blob);
				msg.f.ents = NULL;
				msg.f.blob = NULL;
				msg.f.nents = msg.f.blob_len = 0;
				msg.f.whole = 0;
			}
			m->fi[msg.idx] = msg.f;
			m->fi[msg.idx].probed = 1;
			if (!m->user[0])
				memcpy(m->user, msg.user, 64);
			if (!m->cluster[0])
				memcpy(m->cluster, msg.cluster, 64);
			p->next += par;
			p->since = mg_now_s();
			ps->done++;
			if (m->o->progress)
				m->o->progress(m->o->arg, 1, ps->done, m->nin);
			continue;
		}
		/* The child ended: done, or died on p->next. */
		close(p->fd);
		p->live = 0;
		waitpid(p->pid, &st, 0);
		if (p->next >= m->nin)
			continue;
		{
			struct finfo *f = &m->fi[p->next];

			f->usable = 0;
			f->status = "skipped";
			if (hung)
				snprintf(f->reason, sizeof(f->reason),
					 "corrupt: HDF5 does not finish "
					 "reading it (stopped after %d s)",
					 mg_read_timeout());
			else if (WIFSIGNALED(st))
				snprintf(f->reason, sizeof(f->reason),
					 "corrupt: reading it crashes "
					 "HDF5 (signal %d)", WTERMSIG(st));
			else
				snprintf(f->reason, sizeof(f->reason),
					 "could not be checked");
			f->probed = 1;
			ps->done++;
		}
		if (p->next + par < m->nin &&
		    spawn_prober(m, p, p->next + par, par) < 0)
			check_here(m, p->next + par, par);
	}
}

/* Wait until input idx is checked (idx == m->nin: all of them, and the
 * children are gone). */
static void mg_probe_until(struct mstate *m, size_t idx)
{
	struct probers *ps = &m->probe;
	size_t k;

	if (idx < m->nin) {
		while (!m->fi[idx].probed)
			probe_poll(m);
		return;
	}
	while (ps->done < m->nin)
		probe_poll(m);
	for (k = 0; k < ps->par; k++)
		if (ps->pr[k].live) {
			close(ps->pr[k].fd);
			waitpid(ps->pr[k].pid, NULL, 0);
			ps->pr[k].live = 0;
		}
}

/* One child checks the inputs from its current one on: replace it with
 * par children sharing them (the second pass started early had it alone,
 * leaving it a CPU). */
static void mg_probe_widen(struct mstate *m, size_t par)
{
	struct probers *ps = &m->probe;
	struct prober *p = &ps->pr[0];
	size_t from = p->next, k;

	if (par > 4)
		par = 4;
	if (ps->par != 1 || !p->live || par < 2 || from + 1 >= m->nin)
		return;
	kill(p->pid, SIGKILL);
	close(p->fd);
	waitpid(p->pid, NULL, 0);
	p->live = 0;
	if (par > m->nin - from)
		par = m->nin - from;
	ps->par = par;
	for (k = 0; k < par; k++)
		if (spawn_prober(m, &ps->pr[k], from + k, par) < 0) {
			ps->pr[k].live = 0;
			check_here(m, from + k, par);
		}
}

/* Stop the children still checking (the merge ended early). */
static void mg_probe_stop(struct mstate *m)
{
	struct probers *ps = &m->probe;
	size_t k;

	for (k = 0; k < ps->par; k++)
		if (ps->pr[k].live) {
			kill(ps->pr[k].pid, SIGKILL);
			close(ps->pr[k].fd);
			waitpid(ps->pr[k].pid, NULL, 0);
			ps->pr[k].live = 0;
		}
}

/* Findings per step that no single file shows: missing nodes or tasks,
 * empty steps. */
static int check_step(struct mstate *m, size_t lo, size_t hi)
{
	const char *step = m->in[lo].step;
	size_t i, usable = 0;
	uint64_t samples = 0;
	long max_task = -1, tasks = 0, max_index = -1, nnodes = -1;
	long step_tasks = -1;
	int tasks_known = 1;
	char *seen = NULL;
	const char *st_from = NULL, *nn_from = NULL; /* who said so */

	for (i = lo; i < hi; i++) {
		struct finfo *f = &m->fi[i];

		if (!f->usable)
			continue;
		usable++;
		samples += f->samples;
		if (f->max_task > max_task)
			max_task = f->max_task;
		if (f->ntasks >= 0)
			tasks += f->ntasks;
		else
			tasks_known = 0;
		if (f->node_index > max_index)
			max_index = f->node_index;
		if (f->nnodes > nnodes) {
			nnodes = f->nnodes;
			nn_from = f->in->file;
		}
		if (f->step_tasks > step_tasks) {
			step_tasks = f->step_tasks;
			st_from = f->in->file;
		}
	}
	if (!usable)
		return mg_add_missing(m, "step %s: no usable node-step file",
				      step);
	if (!samples && mg_add_missing(m, "step %s: empty step (no samples in "
				    "%zu node-step file%s)", step, usable,
				    usable == 1 ? "" : "s") < 0)
		return -1;
	/* Node indexes: 0 .. max(index, Number of Nodes - 1). */
	if (nnodes - 1 > max_index && strcmp(step, "batch") &&
	    strcmp(step, "interactive"))
		max_index = nnodes - 1;
	else
		nn_from = NULL;
	if (max_index >= 0 && max_index < 1000000 &&
	    (seen = calloc((size_t)max_index + 1, 1))) {
		long k, first = -1;

		for (i = lo; i < hi; i++)
			if (m->fi[i].usable && m->fi[i].node_index >= 0)
				seen[m->fi[i].node_index] = 1;
		for (k = 0; k <= max_index + 1; k++) {
			if (k <= max_index && !seen[k]) {
				if (first < 0)
					first = k;
				continue;
			}
			if (first < 0)
				continue;
			if (mg_add_missing(m, "step %s: node index%s "
					"%ld%s%.0ld missing (no node-step file%s%s%s)",
					step, k - 1 > first ? "es" : "", first,
					k - 1 > first ? "-" : "",
					k - 1 > first ? k - 1 : 0,
					nn_from ? "; per " : "",
					nn_from ? nn_from : "",
					nn_from ? "'s Number of Nodes" :
					"") < 0) {
				free(seen);
				return -1;
			}
			first = -1;
		}
		free(seen);
	}
	/* Tasks: the nodes present run `tasks` tasks; a higher task id,
	 * or our files' "Step Tasks", means tasks of a missing node. */
	/* (Slurm gives the batch step the job's task count.) */
	if (tasks_known && step_tasks > max_task + 1 &&
	    strspn(step, "0123456789") == strlen(step))
		max_task = step_tasks - 1;
	else
		st_from = NULL;
	if (tasks_known && max_task + 1 > tasks &&
	    mg_add_missing(m, "step %s: %ld task%s missing (the step runs %ld%s%s"
			"%s, the nodes present %ld)", step,
			max_task + 1 - tasks, max_task + 1 - tasks == 1 ? "" :
			"s", max_task + 1, st_from ? " according to the Step Tasks of " :
			"", st_from ? st_from : "", "", tasks) < 0)
		return -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Pass 2: write. */

/* ------------------------------------------------------------------ */
/* The second pass's reader process.  HDF5 reading and decoding (inflate
 * included) run in a child while this process writes: two CPUs work, and
 * a crash of HDF5 on a damaged input ends only the child (the series is
 * cut there and a new child goes on with the next file). */

static size_t mg_rows_per_buffer(const struct mstate *m,
			      const struct sh5_series *s)
{
	size_t rows = m->buf_bytes / s->ops->record_size(s);

	if (rows > CHUNK_ROWS_MAX)
		rows -= rows % CHUNK_ROWS_MAX;
	return rows ? rows : 1;
}

/* Can the chunks of din be copied raw into a dataset of file type ft?
 * Filtered (else the plain path is as fast), same type. */
static int mg_raw_copyable(hid_t din, hid_t ft)
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

/* Send one block of n records of series (fi, si) with the given status. */
static void feed_put(int fd, struct feed_head *h, int64_t status,
		     const void *p, size_t n, size_t size)
{
	h->status = status;
	h->rows = n;
	if (sh5_fd_write_all(fd, h, sizeof(*h)) < 0 || (n && sh5_fd_write_all(fd, p, n * size)
					       < 0))
		_exit(3);
}

static void feeder_child(struct mstate *m, int fd, size_t from)
{
	size_t fi, si;
	void *total = NULL, *pbuf = NULL;
	size_t total_len = 0, pbuf_len = 0;

	mg_child_signals();
	for (fi = from; fi < m->nin; fi++) {
		struct finfo *f = &m->fi[fi];
		struct sh5_nodestep *ns;

		/* Files copied whole are not read (without sync). */
		if (!f->usable || (f->whole && m->feed_totals))
			continue;
		ns = sh5_nodestep_open(f->in->path, f->in->node, m->o->job,
				       f->in->step_id, NULL);
		for (si = 0; ns && si < ns->nseries; si++) {
			struct sh5_ns_series *e = &ns->series[si];
			const struct sh5_series *s = e->series;
			const struct sh5_series_ops *ops = s->ops;
			struct feed_head h;
			struct sh5_cursor c;
			struct sh5_recmap *map = NULL;
			size_t rows = mg_rows_per_buffer(m, s), n, fsize = 0;
			size_t rs = ops->record_size(s), ts = 0;
			hid_t d = H5Dopen2(ns->node, e->path, H5P_DEFAULT), ft;
			int raw = 0;

			memset(&h, 0, sizeof(h));
			h.file = fi;
			h.series = si;
			if (d < 0 || sh5_cursor_open(&c, d, s,
						     ns->salvaged ?
						     ns->real_eof : 0,
						     NULL) < 0) {
				if (d >= 0)
					H5Dclose(d);
				feed_put(fd, &h, -1, NULL, 0, 0);
				continue;
			}
			if (m->feed_totals) {
				/* Totals here; records the parent copies
				 * raw are not sent, the others packed in
				 * the job file's layout as mg_write_series()
				 * would pack them. */
				ts = ops->total_size(s);
				if (ts > total_len) {
					free(total);
					if (!(total = malloc(ts)))
						_exit(3);
					total_len = ts;
				}
				ops->total_init(s, total);
				raw = raw_series(ns, s, d, &c);
				if (!raw && (ft = ops->file_type(s)) >= 0) {
					fsize = H5Tget_size(ft);
					if (fsize <= rs)
						map = sh5_recmap_build(c.mtype,
								       ft);
					H5Tclose(ft);
				}
				if (map && rows * fsize > pbuf_len) {
					free(pbuf);
					if (!(pbuf = malloc(rows * fsize)))
						_exit(3);
					pbuf_len = rows * fsize;
				}
			}
			while ((n = sh5_cursor_read(&c, m->buf, rows)) > 0) {
				if (!m->feed_totals) {
					feed_put(fd, &h, 0, m->buf, n, rs);
					continue;
				}
				ops->total_add(s, total, m->buf, n);
				if (raw) {
					feed_put(fd, &h, 4, NULL, n, 0);
				} else if (map) {
					sh5_recmap_apply(map, m->buf, pbuf, n);
					feed_put(fd, &h, 3, pbuf, n, fsize);
				} else {
					feed_put(fd, &h, 0, m->buf, n, rs);
				}
				/* The running total follows every block: a
				 * crash later keeps the total of what was
				 * sent. */
				if (sh5_fd_write_all(fd, total, ts) < 0)
					_exit(3);
			}
			sh5_recmap_free(map);
			h.good_rows = c.good_rows;
			h.damaged = c.damaged;
			snprintf(h.reason, sizeof(h.reason), "%s", c.reason);
			sh5_cursor_close(&c);
			H5Dclose(d);
			if (m->feed_totals)
				feed_put(fd, &h, 2, NULL, 0, 0);
			else
				feed_put(fd, &h, 1, NULL, 0, 0);
			if (m->feed_totals && sh5_fd_write_all(fd, total, ts) < 0)
				_exit(3);
		}
		sh5_nodestep_close(ns);
	}
	_exit(0);
}

static void mg_feeder_start(struct mstate *m, size_t from)
{
	int pfd[2];
	pid_t pid;

	m->feed_fd = -1;
	m->feed_have = 0;
	/* Also on one CPU: the child is what keeps a crash of HDF5 from
	 * ending the merge.  SH5MERGE_NO_FORK: all in this process (for
	 * comparisons in tests; loses that protection). */
	if (getenv("SH5MERGE_NO_FORK") || pipe(pfd) < 0)
		return;
	if ((pid = fork()) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return;
	}
	if (pid == 0) {
		close(pfd[0]);
		feeder_child(m, pfd[1], from);
	}
	close(pfd[1]);
#ifdef F_SETPIPE_SZ
	fcntl(pfd[0], F_SETPIPE_SZ, 1 << 20);
#endif
	m->feed_pid = pid;
	m->feed_fd = pfd[0];
}

static void mg_feeder_stop(struct mstate *m)
{
	if (m->feed_fd < 0)
		return;
	close(m->feed_fd);
	m->feed_fd = -1;
	kill(m->feed_pid, SIGKILL);
	waitpid(m->feed_pid, NULL, 0);
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
	if (WIFSIGNALED(st))
		snprintf(c->reason, sizeof(c->reason), "reading it crashes "
			 "HDF5 (signal %d)", WTERMSIG(st));
	else
		snprintf(c->reason, sizeof(c->reason), "the reading process "
			 "failed");
	c->good_rows = c->pos;
	mg_feeder_start(m, fi + 1);
}

/* Flags of mg_feed_read(). */
#define FEED_PACKED  1  /* the rows are in the job file's layout */
#define FEED_TOTALED 2  /* the child totals them: do not total_add them */
#define FEED_NODATA  4  /* the rows were only totalled (nothing in buf):
			 * the parent copies the chunks raw */

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
		if (h->status == 0 || h->status == 3)
			len = (size_t)h->rows * (h->status == 0 ?
				c->s->ops->record_size(c->s) : 1);
		else if (h->status == 2 || h->status == 4)
			len = 0;
		else
			return 0;
		if (h->status == 3) {
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

/* Next block of series si of file fi into buf (at most max records),
 * like sh5_cursor_read() on the local cursor c, whose position and
 * damage fields it keeps up to date.  *how gets FEED_ flags: without
 * FEED_PACKED the records are in the ops' layout.  When the child totals
 * (m->feed_totals), its running total of the series (the rows sent so
 * far) is stored in total with every block (FEED_TOTALED).  local: the
 * records must be read in this process (they are synchronized). */
static size_t mg_feed_read(struct mstate *m, size_t fi, size_t si,
			struct sh5_cursor *c, void *buf, size_t max,
			void *total, int local, int *how)
{
	struct feed_head *h = &m->feed_head;
	size_t rs = c->s->ops->record_size(c->s);

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
	if (m->feed_local && m->feed_local_file == fi &&
	    m->feed_local_series == si)
		return sh5_cursor_read(c, buf, max);
	if (m->feed_fd < 0)
		return sh5_cursor_read(c, buf, max);
	if (local && m->feed_totals) {
		m->feed_local = 1;
		m->feed_local_file = fi;
		m->feed_local_series = si;
		feed_skip(m, fi, si, c);
		return sh5_cursor_read(c, buf, max);
	}
	for (;;) {
		if (!m->feed_have) {
			struct pollfd pf = { m->feed_fd, POLLIN, 0 };

			/* HDF5 may loop forever on a damaged file. */
			if (poll(&pf, 1, mg_read_timeout() * 1000) == 0) {
				kill(m->feed_pid, SIGKILL);
				feeder_died(m, fi, c);
				snprintf(c->reason, sizeof(c->reason), "HDF5 "
					 "does not finish reading it (stopped "
					 "after %d s)", mg_read_timeout());
				return 0;
			}
			if (sh5_fd_read_all(m->feed_fd, h, sizeof(*h)) < 0) {
				feeder_died(m, fi, c);
				return 0;
			}
			m->feed_have = 1;
		}
		if (h->file != fi || h->series != si) {
			/* Out of step (a series or file skipped here): go
			 * on without the child. */
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
		if (h->status == 1 || h->status == 2) {
			if (h->status == 2 &&
			    sh5_fd_read_all(m->feed_fd, total,
				    c->s->ops->total_size(c->s)) < 0) {
				feeder_died(m, fi, c);
				return 0;
			}
			if (h->damaged) {
				c->damaged = 1;
				snprintf(c->reason, sizeof(c->reason), "%s",
					 h->reason);
			}
			c->good_rows = c->pos;
			return 0;
		}
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
		if (h->rows > max || sh5_fd_read_all(m->feed_fd, buf,
					     (size_t)h->rows * rs) < 0 ||
		    (m->feed_totals &&
		     sh5_fd_read_all(m->feed_fd, total,
			     c->s->ops->total_size(c->s)) < 0))
			goto bad;
		c->pos += h->rows;
		return (size_t)h->rows;
	}
bad:
	feeder_died(m, fi, c);
	return 0;
}

/* Copy the stored chunks holding rows [0, rows) from din to dout. */
static int copy_chunks(hid_t din, hid_t dout, hsize_t cr, uint64_t rows,
		       void **buf, size_t *len)
{
	hsize_t off[1];

	for (off[0] = 0; off[0] < rows; off[0] += cr) {
		hsize_t size = 0;
		uint32_t filters = 0;

		if (H5Dget_chunk_storage_size(din, off, &size) < 0 || !size)
			return -1;
		if (size > *len) {
			void *nb = realloc(*buf, (size_t)size);

			if (!nb)
				return -1;
			*buf = nb;
			*len = (size_t)size;
		}
		if (H5Dread_chunk(din, H5P_DEFAULT, off, &filters, *buf) < 0 ||
		    H5Dwrite_chunk(dout, H5P_DEFAULT, filters, off,
				   (size_t)size, *buf) < 0)
			return -1;
	}
	return 0;
}

static int mg_write_series(struct mstate *m, struct sh5_nodestep *ns,
			struct sh5_ns_series *e, hid_t gout, const char *gpath,
			struct finfo *f, void *total, int sync)
{
	const struct sh5_series *s = e->series;
	const struct sh5_series_ops *ops = s->ops;
	struct sh5_cursor c;
	struct sh5_error err = { "" };
	hid_t din = -1, dout = -1, ft = -1, sp = -1, dcpl = -1, lcpl = -1,
	      ms = -1, fsp = -1;
	hsize_t dims[1], maxd[1] = { H5S_UNLIMITED }, chunk[1];
	size_t rows_per_buf = m->buf_bytes / ops->record_size(s);
	uint64_t done = 0;
	char full[512];
	int rc = -1, copen = 0;
	struct sh5_recmap *map = NULL;
	void *wbuf = NULL;
	size_t wbuf_len = 0;
	hid_t dapl = -1;
	int raw;

	rows_per_buf = mg_rows_per_buffer(m, s);
	ops->total_init(s, total);
	if ((din = H5Dopen2(ns->node, e->path, H5P_DEFAULT)) < 0 ||
	    sh5_cursor_open(&c, din, s, ns->salvaged ? ns->real_eof : 0,
			    &err) < 0) {
		sh5_errprintf_h5(&err, "cannot open");
		mg_report(m, 1, f->in->path, "%s: %s; series left out", e->path,
		       err.text);
		f->lost += e->nrows;
		if (din >= 0)
			H5Dclose(din);
		return 0;
	}
	copen = 1;
	dims[0] = c.good_rows;
	chunk[0] = c.good_rows < 1 ? 1 :
		   c.good_rows > CHUNK_ROWS_MAX ? CHUNK_ROWS_MAX : c.good_rows;
	if ((ft = ops->file_type(s)) < 0 ||
	    (sp = H5Screate_simple(1, dims, maxd)) < 0 ||
	    (lcpl = mg_lcpl_intermediate()) < 0)
		goto h5fail;
	/* Compressed chunks of an intact input already in our file type
	 * are copied as they are (raw): no recompression, and the job file
	 * stays as small as the inputs.  The records are still decoded,
	 * for the totals and to find damage. */
	raw = !ns->salvaged && c.chunk_rows && mg_raw_copyable(din, ft);
	if (raw) {
		if ((dcpl = H5Dget_create_plist(din)) < 0)
			goto h5fail;
	} else if ((dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 ||
		   H5Pset_chunk(dcpl, 1, chunk) < 0 ||
		   /* Synchronized series cannot be copied raw: compress
		    * them as the plugin does. */
		   (sync && (H5Pset_shuffle(dcpl) < 0 ||
			     H5Pset_deflate(dcpl, 4) < 0))) {
		goto h5fail;
	}
	/* No chunk cache: whole chunks go straight from our buffer to the
	 * file (a cache would calloc and copy each chunk first). */
	if ((dapl = H5Pcreate(H5P_DATASET_ACCESS)) < 0 ||
	    H5Pset_chunk_cache(dapl, 0, 0, 1.0) < 0)
		goto h5fail;
	dout = H5Dcreate2(gout, e->path, ft, sp, lcpl, dcpl, dapl);
	if (dout < 0 || sh5_series_write_attrs(s, dout, NULL) < 0)
		goto h5fail;
	if ((fsp = H5Dget_space(dout)) < 0)
		goto h5fail;
	/* Pack records into the file layout ourselves (HDF5's compound
	 * conversion is the slow part of a merge) and write them as they
	 * are; HDF5 converts only when no map applies. */
	if (!raw && (map = sh5_recmap_build(c.mtype, ft)) &&
	    !(wbuf = malloc(rows_per_buf * H5Tget_size(ft)))) {
		sh5_recmap_free(map);
		map = NULL;
	}
	for (;;) {
		int how;
		size_t n = mg_feed_read(m, (size_t)(f - m->fi),
				     (size_t)(e - ns->series), &c, m->buf,
				     rows_per_buf, total, sync, &how);
		hsize_t start[1] = { done }, cnt[1] = { n };

		if (!n)
			break;
		if (how & FEED_NODATA) {
			/* Totalled by the child, the chunks copied raw. */
			if (!raw) {
				sh5_errprintf(m->errp, "%s: %s: the reading "
					      "process is out of step",
					      f->in->path, e->path);
				m->write_failed = 1;
				goto out;
			}
			done += n;
			continue;
		}
		if (sync)
			m->o->hooks->sync_rows(m->o->hooks->arg, s, m->buf, n);
		if (raw) {
			if (!(how & FEED_TOTALED))
				ops->total_add(s, total, m->buf, n);
			done += n;
			continue;
		}
		if (map && !(how & FEED_PACKED))
			sh5_recmap_apply(map, m->buf, wbuf, n);
		if ((ms = H5Screate_simple(1, cnt, NULL)) < 0 ||
		    H5Sselect_hyperslab(fsp, H5S_SELECT_SET, start, NULL, cnt,
					NULL) < 0 ||
		    H5Dwrite(dout, (how & FEED_PACKED) || map ? ft : c.mtype,
			     ms, fsp, H5P_DEFAULT,
			     (how & FEED_PACKED) ? m->buf :
			     map ? wbuf : m->buf) < 0)
			goto h5fail;
		H5Sclose(ms);
		ms = -1;
		if (!(how & FEED_TOTALED))
			ops->total_add(s, total, m->buf, n);
		done += n;
	}
	if (raw && copy_chunks(din, dout, c.chunk_rows, done, &wbuf,
			       &wbuf_len) < 0)
		goto h5fail;
	if (done < dims[0]) {
		dims[0] = done;
		if (H5Dset_extent(dout, dims) < 0)
			goto h5fail;
	}
	f->written += done;
	m->st->samples += done;
	if (c.damaged || done < e->nrows) {
		uint64_t lost = e->nrows - done;

		f->lost += lost;
		m->st->lost += lost;
		if (strcmp(f->status, "salvaged")) {
			/* Damage the first pass did not see. */
			f->status = "salvaged";
			snprintf(f->reason, sizeof(f->reason), "%.60s: %.180s",
				 e->path, c.reason);
			mg_report(m, 1, f->in->path, "damaged: %s: %s; %" PRIu64
			       " of %" PRIu64 " samples lost", e->path,
			       c.reason, lost, e->nrows);
		}
	}
	snprintf(full, sizeof(full), "%s/%s", gpath, e->path);
	if (mg_add_check(m, full, done) < 0) {
		sh5_errprintf(m->errp, "out of memory");
		goto out;
	}
	rc = 0;
	goto out;
h5fail:
	mg_h5err(m->errp, "%s: cannot write %s/%s", m->o->output,
			 gpath, e->path);
	m->write_failed = 1;
out:
	sh5_recmap_free(map);
	free(wbuf);
	if (dapl >= 0)
		H5Pclose(dapl);
	if (ms >= 0)
		H5Sclose(ms);
	if (fsp >= 0)
		H5Sclose(fsp);
	if (dout >= 0)
		H5Dclose(dout);
	if (lcpl >= 0)
		H5Pclose(lcpl);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (sp >= 0)
		H5Sclose(sp);
	if (ft >= 0)
		H5Tclose(ft);
	if (copen)
		sh5_cursor_close(&c);
	H5Dclose(din);
	return rc;
}

/* Fold the stored total of entry e (sent by the checking child) into
 * the step's totals.  The series it needs is built once per key and
 * signature, from the first input that has it.  -1 on error (errp set). */
static int fold_stored(struct mstate *m, struct finfo *f, hid_t in,
		       const struct whole_ent *e, struct sh5_totacc **sacc,
		       size_t *nsacc)
{
	const char *key = e->task ? "AllTasks" : e->path;
	const struct sh5_series *s = NULL;
	size_t i;
	int fr;

	for (i = 0; i < m->nsc && !s; i++)
		if (m->sc[i].sig == e->sig && !strcmp(m->sc[i].key, key))
			s = m->sc[i].s;
	if (!s) {
		const char *slash = strrchr(e->path, '/');
		char parent[SH5_NAME_MAX] = "";
		struct scache *v = realloc(m->sc, (m->nsc + 1) * sizeof(*v));
		struct sh5_series *ns = NULL;
		hid_t d;

		if (!v)
			goto oom;
		m->sc = v;
		if (slash)
			snprintf(parent, sizeof(parent), "%.*s",
				 (int)(slash - e->path), e->path);
		if ((d = H5Dopen2(in, e->path, H5P_DEFAULT)) >= 0) {
			ns = sh5_series_from_dataset(parent, slash ? slash + 1 :
						     e->path, d, NULL);
			H5Dclose(d);
		}
		if (!ns)
			return mg_h5err(m->errp, "%s: cannot read the series "
					"%s", f->in->path, e->path);
		v += m->nsc++;
		snprintf(v->key, sizeof(v->key), "%s", key);
		v->sig = e->sig;
		v->s = ns;
		s = ns;
	}
	if (e->tofs > f->blob_len || e->tlen > f->blob_len - e->tofs ||
	    s->ops->total_size(s) != e->tlen) {
		errno = EPROTO;
		return sh5_errprintf(m->errp, "%s: %s: the checking process "
				     "sent a total of the wrong size",
				     f->in->path, key);
	}
	if ((fr = sh5_totacc_fold(sacc, nsacc, key, s,
				  f->blob + e->tofs)) < 0)
		goto oom;
	if (fr > 0)
		mg_report(m, 0, f->in->path, "%s fields differ from other "
			  "nodes: left out of the step total",
			  e->task ? "task" : e->path);
	return 0;
oom:
	errno = ENOMEM;
	return sh5_errprintf(m->errp, "out of memory");
}

/*
 * The node group of an input found intact by whole_ok() (checksummed
 * chunks, the writer's totals matching its datasets), without
 * synchronization: copied as it is with H5Ocopy (series, their stored
 * chunks, the writer's Totals, ClockOffsets, attributes), as sh5util
 * copies node groups.  Only the step totals are folded here, from the
 * stored ones.  Returns 0, -1 on an error (merge failed), or 1 when
 * nothing was written and the node must go the normal way.
 */
/*
 * Make sure `bytes` more can be written to the output before H5Ocopy():
 * HDF5 (1.10 to 1.14) crashes inside H5Ocopy() when a write fails (a full
 * disk, a file size limit), so the room is reserved first: blocks past
 * the end (fallocate, keeping the size), else a look at the free space;
 * and the file size limit.  0, or -1 with errno set (ENOSPC, EFBIG).
 */
static int reserve_room(struct mstate *m, off_t bytes)
{
	struct statvfs vs;
	struct rlimit rl;
	struct stat st;
	off_t end;

	if (m->out_wfd < 0 || fstat(m->out_wfd, &st) < 0)
		return 0; /* nothing to go by: let HDF5 try */
	end = st.st_size + bytes;
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (rlim_t)end > rl.rlim_cur) {
		errno = EFBIG;
		return -1;
	}
	if (fallocate(m->out_wfd, FALLOC_FL_KEEP_SIZE, st.st_size, bytes) == 0)
		return 0;
	if (errno == ENOSPC || errno == EFBIG || errno == EDQUOT)
		return -1;
	if (fstatvfs(m->out_wfd, &vs) == 0 &&
	    (uint64_t)vs.f_bavail * vs.f_frsize < (uint64_t)bytes) {
		errno = ENOSPC;
		return -1;
	}
	return 0;
}

static int write_node_whole(struct mstate *m, hid_t nodes, const char *step,
			    struct finfo *f, struct sh5_totacc **sacc,
			    size_t *nsacc, uint32_t *ntasks, int64_t *start_ns)
{
	const struct sh5_merge_hooks *hk = m->o->hooks;
	const char *node = f->node_name;
	char gpath[256];
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fid = -1, in = -1, g = -1;
	size_t i;
	int rc = -1, r;

	snprintf(gpath, sizeof(gpath), "/Steps/%s/Nodes/%s", step, node);
#ifdef HAVE_H5PSET_FILE_LOCKING
	if (fapl >= 0)
		H5Pset_file_locking(fapl, 0, 1);
#endif
	if (fapl < 0 ||
	    (fid = H5Fopen(f->in->path, H5F_ACC_RDONLY, fapl)) < 0 ||
	    (in = H5Gopen2(fid, node, H5P_DEFAULT)) < 0) {
		rc = 1; /* changed since the first pass */
		goto out;
	}
	/* The copy is at most the input's size; its metadata, a margin. */
	if (reserve_room(m, (off_t)f->size + (off_t)f->size / 8 +
			 (1 << 20)) < 0) {
		sh5_errprintf(m->errp, "%s: cannot write %s: %s",
			      m->o->output, gpath, strerror(errno));
		goto fail;
	}
	if (H5Ocopy(fid, node, nodes, node, H5P_DEFAULT, H5P_DEFAULT) < 0) {
		H5Ldelete(nodes, node, H5P_DEFAULT);
		rc = 1;
		goto out;
	}
	if ((g = H5Gopen2(nodes, node, H5P_DEFAULT)) < 0)
		goto h5fail;
	if (hk && hk->node_begin &&
	    (r = hk->node_begin(hk->arg, f->in, in, g, m->errp)) != 0) {
		if (r < 0)
			goto fail;
		/* Synchronized after all: rewritten record by record. */
		H5Gclose(g);
		g = -1;
		if (H5Ldelete(nodes, node, H5P_DEFAULT) < 0)
			goto h5fail;
		rc = 1;
		goto out;
	}
	for (i = 0; i < f->nents; i++) {
		const struct whole_ent *e = &f->ents[i];
		char full[512];

		f->written += e->rows;
		m->st->samples += e->rows;
		snprintf(full, sizeof(full), "%s/%s", gpath, e->path);
		if (mg_add_check(m, full, e->rows) < 0) {
			sh5_errprintf(m->errp, "out of memory");
			goto fail;
		}
		/* Tasks are folded through the node's AllTasks, kept with
		 * the first. */
		if (e->tlen && fold_stored(m, f, in, e, sacc, nsacc) < 0)
			goto fail;
	}
	m->st->whole++;
	/* Read by the checking child. */
	if (f->ntasks >= 0)
		*ntasks += (uint32_t)f->ntasks;
	if (f->has_start && f->start_ns < *start_ns)
		*start_ns = f->start_ns;
	if (hk && hk->node_end && hk->node_end(hk->arg, g, m->errp) < 0)
		goto fail;
	m->st->nodes++;
	rc = 0;
	goto out;
h5fail:
	mg_h5err(m->errp, "%s: cannot write %s", m->o->output, gpath);
fail:
	m->write_failed = 1;
	rc = -1;
out:
	if (g >= 0)
		H5Gclose(g);
	if (in >= 0)
		H5Gclose(in);
	if (fid >= 0)
		H5Fclose(fid);
	if (fapl >= 0)
		H5Pclose(fapl);
	return rc;
}

static int write_node(struct mstate *m, hid_t nodes, const char *step,
		      struct finfo *f, struct sh5_totacc **sacc, size_t *nsacc,
		      uint32_t *ntasks, int64_t *start_ns)
{
	struct sh5_error err = { "" };
	struct sh5_nodestep *ns;
	struct sh5_totacc *nacc = NULL;
	size_t nnacc = 0, i;
	hid_t g = -1, ocpy = -1, lcpl = -1;
	char gpath[256];
	void *total = NULL;
	long long v;
	int rc = -1, sync = 0;
	const struct sh5_merge_hooks *hk = m->o->hooks;

	/* What is lost is counted again from what is written (the first
	 * pass's count was for its report). */
	f->lost = 0;
	if (f->whole && m->feed_totals) {
		int r = write_node_whole(m, nodes, step, f, sacc, nsacc,
					 ntasks, start_ns);

		if (r <= 0)
			return r;
		/* Not copied after all: the normal way (after the whole
		 * first pass). */
		f->whole = 0;
		if (m->early)
			return 1;
	}
	ns = sh5_nodestep_open(f->in->path, f->in->node, m->o->job,
			       f->in->step_id, &err);
	if (!ns) {
		/* Changed since the first pass. */
		f->usable = 0;
		f->status = "skipped";
		snprintf(f->reason, sizeof(f->reason), "%s", err.text);
		mg_report(m, 1, f->in->path, "%s", err.text);
		return 0;
	}
	snprintf(gpath, sizeof(gpath), "/Steps/%s/Nodes/%s", step,
		 ns->node_name);
	if ((g = mg_make_group(nodes, ns->node_name)) < 0) {
		mg_h5err(m->errp, "%s: cannot create %s", m->o->output,
				 gpath);
		m->write_failed = 1;
		goto out;
	}
	mg_copy_attrs(ns->node, g);
	if (hk && hk->node_begin &&
	    (sync = hk->node_begin(hk->arg, f->in, ns->node, g,
				   m->errp)) < 0) {
		m->write_failed = 1;
		goto out;
	}
	sync = sync > 0 && hk->sync_rows;
	if (sh5_attr_get_int(ns->node, "Number of Tasks", &v) == 0)
		*ntasks += (uint32_t)v;
	if (sh5_attr_get_int(ns->node, "Start Time ns", &v) == 0 &&
	    v < *start_ns)
		*start_ns = v;
	for (i = 0; i < ns->nseries; i++) {
		struct sh5_ns_series *e = &ns->series[i];
		const struct sh5_series *s = e->series;
		char tpath[2 * SH5_NAME_MAX + 16];
		int is_task = !strcmp(s->ops->name, "Task");
		void *t2;
		int fr;

		if (!(t2 = realloc(total, s->ops->total_size(s))))
			goto oom;
		total = t2;
		/* With sync the series gains SyncTimeNs (memory, file type,
		 * attributes, totals); the rows hook fills it. */
		if (sync)
			e->series->has_sync_ns = 1;
		if (mg_write_series(m, ns, e, g, gpath, f, total, sync) < 0)
			goto out;
		snprintf(tpath, sizeof(tpath), "Totals/%s", e->path);
		if (mg_write_total(m, g, tpath, s, total, 1) < 0) {
			m->write_failed = 1;
			goto out;
		}
		fr = sh5_totacc_fold(&nacc, &nnacc, is_task ? "AllTasks" : e->path,
			      s, total);
		if (fr < 0)
			goto oom;
		if (fr > 0)
			mg_report(m, 0, f->in->path, "%s: fields differ from "
				  "the node's other tasks: left out of the "
				  "node total", e->path);
		if (!is_task) {
			fr = sh5_totacc_fold(sacc, nsacc, e->path, s, total);
			if (fr < 0)
				goto oom;
			if (fr > 0)
				mg_report(m, 0, f->in->path, "%s: fields "
					  "differ from other nodes: left out "
					  "of the step total", e->path);
		}
	}
	for (i = 0; i < nnacc; i++) {
		char tpath[2 * SH5_NAME_MAX + 16];

		if (strcmp(nacc[i].key, "AllTasks"))
			continue;
		snprintf(tpath, sizeof(tpath), "Totals/%s", nacc[i].key);
		if (mg_write_total(m, g, tpath, nacc[i].s, nacc[i].total,
				nacc[i].count) < 0) {
			m->write_failed = 1;
			goto out;
		}
		if (sh5_totacc_fold(sacc, nsacc, "AllTasks", nacc[i].s,
			     nacc[i].total) > 0)
			mg_report(m, 0, f->in->path, "task fields differ from "
			       "other nodes: left out of the step total");
	}
	/* Objects that are not series (ClockOffsets, ...): datasets copied
	 * by value; groups (none in our files) with H5Ocopy, but never from
	 * a damaged file (H5Ocopy crashes on some damaged objects). */
	ocpy = H5Pcreate(H5P_OBJECT_COPY);
	lcpl = mg_lcpl_intermediate();
	/* Application events: the group with its attributes, then its
	 * datasets as others below. */
	if (ns->has_events) {
		hid_t es = H5Gopen2(ns->node, "Events", H5P_DEFAULT);
		hid_t ed = es >= 0 ? mg_make_group(g, "Events") : -1;

		if (es >= 0 && ed >= 0)
			mg_copy_attrs(es, ed);
		else
			mg_report(m, 1, f->in->path, "Events: cannot copy the "
			       "group");
		if (ed >= 0)
			H5Gclose(ed);
		if (es >= 0)
			H5Gclose(es);
	}
	for (i = 0; i < ns->nother; i++) {
		H5O_info_t oi;
		int bad = 0;

		err.text[0] = '\0';
		if (H5Oget_info_by_name2(ns->node, ns->other[i], &oi,
					 H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
			sh5_errprintf_h5(&err, "unreadable object header");
			bad = 1;
		} else if (oi.type == H5O_TYPE_DATASET) {
			bad = mg_copy_dataset(ns->node, ns->other[i], g,
					      &err) < 0;
		} else if (ns->salvaged || ns->damage[0]) {
			sh5_errprintf(&err, "in a damaged file");
			bad = 1;
		} else if (H5Ocopy(ns->node, ns->other[i], g, ns->other[i],
				   ocpy, lcpl) < 0) {
			sh5_errprintf_h5(&err, "cannot copy");
			bad = 1;
		}
		if (!bad)
			continue;
		mg_report(m, 1, f->in->path, "%s: left out (%s)", ns->other[i],
		       err.text);
		if (strcmp(f->status, "salvaged")) {
			f->status = "salvaged";
			snprintf(f->reason, sizeof(f->reason),
				 "%.60s: unreadable object", ns->other[i]);
		}
	}
	if (hk && hk->node_end && hk->node_end(hk->arg, g, m->errp) < 0) {
		m->write_failed = 1;
		goto out;
	}
	m->st->nodes++;
	rc = 0;
	goto out;
oom:
	errno = ENOMEM;
	sh5_errprintf(m->errp, "out of memory");
out:
	if (ocpy >= 0)
		H5Pclose(ocpy);
	if (lcpl >= 0)
		H5Pclose(lcpl);
	free(total);
	sh5_totacc_free(nacc, nnacc);
	if (g >= 0)
		H5Gclose(g);
	sh5_nodestep_close(ns);
	return rc;
}

static int mg_write_step(struct mstate *m, hid_t fout, size_t lo, size_t hi,
		      size_t *done)
{
	const char *step = m->in[lo].step;
	char path[128];
	hid_t sg = -1, nodes = -1;
	struct sh5_totacc *sacc = NULL;
	size_t nsacc = 0, i, nnodes = 0;
	uint32_t ntasks = 0;
	int64_t start_ns = INT64_MAX;
	int rc = -1;

	snprintf(path, sizeof(path), "/Steps/%s", step);
	for (i = lo; i < hi; i++) {
		if (m->early && mg_early_gate(m, i)) {
			rc = 1;
			goto out;
		}
		/* The step's group with its first usable node. */
		if (m->fi[i].usable && sg < 0 &&
		    ((sg = mg_make_group(fout, path)) < 0 ||
		     (nodes = mg_make_group(sg, "Nodes")) < 0)) {
			mg_h5err(m->errp, "%s: cannot create %s", m->o->output,
			      path);
			goto out;
		}
		if (m->fi[i].usable) {
			int r = write_node(m, nodes, step, &m->fi[i], &sacc,
					   &nsacc, &ntasks, &start_ns);

			if (r) {
				rc = r;
				goto out;
			}
			nnodes += m->fi[i].usable;
		}
		++*done;
		if (m->o->progress)
			m->o->progress(m->o->arg, 2, *done, m->nin);
		/* Every few nodes (each kick is a system call in the
		 * writeback thread). */
		if (!(*done % 8))
			mg_wb_kick(m);
	}
	if (sg < 0) {
		rc = 0;
		goto out;
	}
	for (i = 0; i < nsacc; i++) {
		char tpath[2 * SH5_NAME_MAX + 16];

		snprintf(tpath, sizeof(tpath), "Totals/%s", sacc[i].key);
		if (mg_write_total(m, sg, tpath, sacc[i].s, sacc[i].total,
				sacc[i].count) < 0)
			goto out;
	}
	if (sh5_h5attr_put_int(sg, "Number of Nodes", (int)nnodes) < 0 ||
	    sh5_h5attr_put_str(sg, "Step ID", step) < 0 ||
	    sh5_h5attr_put_u32(sg, "Number of Tasks", ntasks) < 0 ||
	    (start_ns != INT64_MAX &&
	     sh5_h5attr_put_i64(sg, "Start Time ns", start_ns) < 0)) {
		mg_h5err(m->errp, "%s: cannot write attributes of %s",
				 m->o->output, path);
		goto out;
	}
	m->nsteps_written++;
	m->st->steps++;
	rc = 0;
out:
	if (rc < 0)
		m->write_failed = 1;
	sh5_totacc_free(sacc, nsacc);
	if (nodes >= 0)
		H5Gclose(nodes);
	if (sg >= 0)
		H5Gclose(sg);
	return rc;
}

struct input_rec {
	const char *file, *step, *node, *kind, *status, *reason;
	uint64_t size, samples, written, lost;
	uint32_t crc32;
};

static int mg_write_merge_record(struct mstate *m, hid_t fout, int partial)
{
	hid_t g = -1, st = -1, ct = -1, sp = -1, d = -1;
	struct input_rec *r = NULL;
	hsize_t dim[1];
	char now[32];
	time_t t = time(NULL);
	struct tm tm;
	size_t i;
	int rc = -1;

	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if ((g = mg_make_group(fout, "Merge")) < 0 ||
	    sh5_h5attr_put_str(g, "sh5merge Version", PACKAGE_VERSION) < 0 ||
	    sh5_h5attr_put_str(g, "Merge Time", now) < 0 ||
	    sh5_h5attr_put_str(g, "Profile Directory", m->o->dir) < 0 ||
	    sh5_h5attr_put_str(g, "Options", m->o->options ? m->o->options : "") < 0 ||
	    sh5_h5attr_put_int(g, "Partial", partial) < 0 ||
	    sh5_h5attr_put_int(g, "Number of Problems", (int)m->st->problems) < 0 ||
	    sh5_h5attr_put_str(g, "Checksum", "CRC-32 (zlib) of the whole file") < 0)
		goto out;
	st = H5Tcopy(H5T_C_S1);
	H5Tset_size(st, H5T_VARIABLE);
	H5Tset_cset(st, H5T_CSET_UTF8);
	ct = H5Tcreate(H5T_COMPOUND, sizeof(struct input_rec));
#define S(n, mem) H5Tinsert(ct, n, HOFFSET(struct input_rec, mem), st)
#define U(n, mem, t) H5Tinsert(ct, n, HOFFSET(struct input_rec, mem), t)
	if (S("File", file) < 0 || S("Step", step) < 0 || S("Node", node) < 0 ||
	    S("Format", kind) < 0 || U("Size", size, H5T_NATIVE_UINT64) < 0 ||
	    U("CRC32", crc32, H5T_NATIVE_UINT32) < 0 ||
	    U("Samples", samples, H5T_NATIVE_UINT64) < 0 ||
	    U("Merged", written, H5T_NATIVE_UINT64) < 0 ||
	    U("Lost", lost, H5T_NATIVE_UINT64) < 0 ||
	    S("Status", status) < 0 || S("Reason", reason) < 0)
		goto out;
#undef S
#undef U
	if (!(r = calloc(m->nin ? m->nin : 1, sizeof(*r))))
		goto out;
	for (i = 0; i < m->nin; i++) {
		struct finfo *f = &m->fi[i];

		r[i].file = f->in->path;
		r[i].step = f->in->step;
		r[i].node = f->in->node;
		r[i].kind = !f->usable && !f->kind ? "unknown" :
			    f->kind == SH5_NODESTEP_OURS ? "sh5" : "stock";
		r[i].status = f->status ? f->status : "skipped";
		r[i].reason = f->reason;
		r[i].size = f->size;
		r[i].crc32 = f->crc;
		r[i].samples = f->samples;
		r[i].written = f->written;
		r[i].lost = f->usable ? f->lost : f->samples;
	}
	dim[0] = m->nin;
	if ((sp = H5Screate_simple(1, dim, NULL)) < 0 ||
	    (d = H5Dcreate2(g, "Inputs", ct, sp, H5P_DEFAULT, H5P_DEFAULT,
			    H5P_DEFAULT)) < 0 ||
	    (m->nin && H5Dwrite(d, ct, H5S_ALL, H5S_ALL, H5P_DEFAULT, r) < 0))
		goto out;
	H5Dclose(d);
	H5Sclose(sp);
	d = sp = -1;
	dim[0] = m->nmissing;
	if ((sp = H5Screate_simple(1, dim, NULL)) < 0 ||
	    (d = H5Dcreate2(g, "Missing", st, sp, H5P_DEFAULT, H5P_DEFAULT,
			    H5P_DEFAULT)) < 0 ||
	    (m->nmissing && H5Dwrite(d, st, H5S_ALL, H5S_ALL, H5P_DEFAULT,
				     m->missing) < 0))
		goto out;
	rc = 0;
out:
	if (rc < 0)
		mg_h5err(m->errp, "%s: cannot write /Merge",
				 m->o->output);
	free(r);
	if (d >= 0)
		H5Dclose(d);
	if (sp >= 0)
		H5Sclose(sp);
	if (ct >= 0)
		H5Tclose(ct);
	if (st >= 0)
		H5Tclose(st);
	if (g >= 0)
		H5Gclose(g);
	return rc;
}

/* Reopen the written file and check every dataset's row count.  The
 * checks come node by node: each node group is opened once. */
static int mg_verify(struct mstate *m, const char *tmp)
{
	hid_t f = H5Fopen(tmp, H5F_ACC_RDONLY, H5P_DEFAULT), g = -1;
	char gname[512] = "";
	long long v;
	size_t i;
	int rc = -1;

	if (f < 0)
		return mg_h5err(m->errp, "%s: verification: cannot reopen the "
			     "written file", tmp);
	if (sh5_attr_get_int(f, "Number of Steps", &v) < 0 ||
	    v != (long long)m->nsteps_written) {
		sh5_errprintf(m->errp, "%s: verification: wrong Number of "
			      "Steps", tmp);
		goto out;
	}
	for (i = 0; i < m->nchecks; i++) {
		const char *path = m->checks[i].path, *rel = path;
		const char *node = strstr(path, "/Nodes/");
		size_t glen = 0;
		hid_t d, sp;
		hsize_t dims[1] = { 0 };
		uint64_t n;

		/* /Steps/<s>/Nodes/<n>/<rel> */
		if (node && (rel = strchr(node + 7, '/')))
			glen = (size_t)(rel++ - path);
		else
			rel = path;
		if (glen && (glen >= sizeof(gname) ||
			     strncmp(gname, path, glen) || gname[glen])) {
			if (g >= 0)
				H5Gclose(g);
			g = -1;
			if (glen < sizeof(gname)) {
				memcpy(gname, path, glen);
				gname[glen] = '\0';
				g = H5Gopen2(f, gname, H5P_DEFAULT);
			}
		}
		d = H5Dopen2(glen && g >= 0 ? g : f, glen && g >= 0 ? rel : path,
			     H5P_DEFAULT);
		sp = d >= 0 ? H5Dget_space(d) : -1;
		if (sp < 0 || H5Sget_simple_extent_dims(sp, dims, NULL) != 1) {
			sh5_errprintf(m->errp, "%s: verification: %s missing",
				      tmp, path);
			if (sp >= 0)
				H5Sclose(sp);
			if (d >= 0)
				H5Dclose(d);
			goto out;
		}
		n = dims[0];
		H5Sclose(sp);
		H5Dclose(d);
		if (n != m->checks[i].rows) {
			sh5_errprintf(m->errp, "%s: verification: %s has %"
				      PRIu64 " rows, %" PRIu64 " written", tmp,
				      path, n, m->checks[i].rows);
			goto out;
		}
	}
	rc = 0;
out:
	if (g >= 0)
		H5Gclose(g);
	H5Fclose(f);
	return rc;
}

static int fsync_path(const char *path, int dir)
{
	int fd = open(path, (dir ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

static char *temp_name(const char *out, char **dir_out)
{
	char *a = strdup(out), *b = strdup(out), *dir, *base, *t = NULL;
	size_t len;

	if (!a || !b)
		goto out;
	dir = dirname(a);
	base = basename(b);
	len = strlen(dir) + strlen(base) + 40;
	if ((t = malloc(len)))
		snprintf(t, len, "%s/.%s.tmp.%ld", dir, base, (long)getpid());
	if (dir_out)
		*dir_out = strdup(dir);
out:
	free(a);
	free(b);
	return t;
}

static void mg_mstate_free(struct mstate *m)
{
	size_t i;

	for (i = 0; i < m->nmissing; i++)
		free(m->missing[i]);
	free(m->missing);
	for (i = 0; i < m->nchecks; i++)
		free(m->checks[i].path);
	free(m->checks);
	for (i = 0; m->fi && i < m->nin; i++) {
		free(m->fi[i].ents);
		free(m->fi[i].blob);
	}
	for (i = 0; i < m->nsc; i++)
		sh5_series_destroy(m->sc[i].s);
	free(m->sc);
	free(m->fi);
	free(m->buf);
	sh5_inputs_free(m->in, m->nin);
}

/*
 * After the whole first pass: its reports, the findings per step, the
 * synchronization decision (hooks->checked).  Returns whether series may
 * be synchronized (0 or 1), or -1 with errp set.  Once per merge.
 */
static int mg_pass1_done(struct mstate *m)
{
	const struct sh5_merge_hooks *hk = m->o->hooks;
	size_t i, lo;
	int sync_maybe, any = 0;

	if (m->pass1_state)
		return m->pass1_state - 1;
	mg_probe_until(m, m->nin);
	for (i = 0; i < m->nin; i++)
		report_file(m, &m->fi[i]);
	for (lo = 0; lo < m->nin; lo = i) {
		for (i = lo; i < m->nin && !strcmp(m->in[i].step, m->in[lo].step);
		     i++)
			;
		if (check_step(m, lo, i) < 0) {
			errno = ENOMEM;
			return sh5_errprintf(m->errp, "out of memory");
		}
	}
	m->st->skipped = 0;
	for (i = 0; i < m->nin; i++)
		if (!m->fi[i].usable)
			m->st->skipped++;
	sync_maybe = hk && hk->sync_rows && !hk->never_sync;
	if (hk && hk->checked) {
		for (i = 0; i < m->nin; i++)
			any |= m->fi[i].usable ? m->fi[i].probe_hit : 0;
		if ((sync_maybe = hk->checked(hk->arg, any, m->errp)) < 0)
			return -1;
		sync_maybe = sync_maybe && hk->sync_rows;
	}
	m->pass1_state = sync_maybe + 1;
	return sync_maybe;
}

/*
 * Before input i is written while the first pass still runs (m->early):
 * wait for its check.  0 to go on; 1 when the second pass must start
 * over the normal way (the input is not whole, or may be synchronized).
 */
static int mg_early_gate(struct mstate *m, size_t i)
{
	const struct sh5_merge_hooks *hk = m->o->hooks;
	struct finfo *f = &m->fi[i];

	mg_probe_until(m, i);
	if (!f->usable || !f->whole)
		return 1;
	if (f->probe_hit && hk && hk->sync_rows && !hk->never_sync)
		return 1;
	return 0;
}

/* Forget what a second pass abandoned by mg_early_gate() wrote. */
static void pass2_reset(struct mstate *m)
{
	size_t i;

	for (i = 0; i < m->nin; i++)
		m->fi[i].written = 0;
	for (i = 0; i < m->nchecks; i++)
		free(m->checks[i].path);
	free(m->checks);
	m->checks = NULL;
	m->nchecks = 0;
	m->nsteps_written = 0;
	m->write_failed = 0;
	m->st->steps = m->st->nodes = m->st->whole = 0;
	m->st->samples = 0;
	m->st->merged = 0;
}

/*
 * Write the job file to tmp and close it (again: tmp is the temporary of
 * an abandoned early pass, overwritten).  *partial: problems were found.
 * Returns 0, -1 on failure (errp set; tmp may exist), or 1 when a second
 * pass started early must start over (nothing kept; tmp may exist).
 */
static int pass2(struct mstate *m, const char *tmp, hid_t fapl, int *partial,
		 int again)
{
	const struct sh5_merge_opts *o = m->o;
	struct sh5_merge_stats *stats = m->st;
	hid_t fout, sg;
	size_t i, lo, done = 0;
	int rc = -1, r;

	/* again: the temporary of an abandoned early pass, ours. */
	fout = H5Fcreate(tmp, again ? H5F_ACC_TRUNC : H5F_ACC_EXCL,
			 H5P_DEFAULT, fapl);
	if (fout < 0)
		return mg_h5err(m->errp, "%s: cannot create", tmp);
	if (o->temp_path && !again)
		o->temp_path(o->arg, tmp);
	m->out_fd = open(tmp, O_RDONLY | O_CLOEXEC);
	m->out_wfd = open(tmp, O_WRONLY | O_CLOEXEC);
	mg_wb_start(m);
	if ((sg = mg_make_group(fout, "Steps")) < 0) {
		mg_h5err(m->errp, "%s: cannot create /Steps", tmp);
		goto out;
	}
	H5Gclose(sg);
	for (lo = 0; lo < m->nin; lo = i) {
		for (i = lo; i < m->nin && !strcmp(m->in[i].step, m->in[lo].step);
		     i++)
			;
		if ((r = mg_write_step(m, fout, lo, i, &done)) != 0) {
			rc = r > 0 ? 1 : -1;
			goto out;
		}
	}
	if (m->early) {
		/* All written: the first pass must agree (a problem it found
		 * is kept as it would be after it, with --allow-partial). */
		if ((r = mg_pass1_done(m)) != 0 ||
		    (stats->problems && !o->allow_partial)) {
			rc = r < 0 ? -1 : 1;
			goto out;
		}
	}
	for (i = 0; i < m->nin; i++)
		if (m->fi[i].usable)
			stats->merged++;
	stats->skipped = m->nin - stats->merged;
	*partial = stats->problems > 0;
	if (sh5_h5attr_put_int(fout, "sh5 Format Version", 1) < 0 ||
	    sh5_h5attr_put_u32(fout, "Job ID", o->job) < 0 ||
	    sh5_h5attr_put_int(fout, "Number of Steps", (int)m->nsteps_written) < 0 ||
	    (m->user[0] && sh5_h5attr_put_str(fout, "User", m->user) < 0) ||
	    (m->cluster[0] && sh5_h5attr_put_str(fout, "Cluster", m->cluster) < 0)) {
		mg_h5err(m->errp, "%s: cannot write the root attributes", tmp);
		goto out;
	}
	if (mg_write_merge_record(m, fout, *partial) < 0)
		goto out;
	if (o->hooks && o->hooks->finish &&
	    o->hooks->finish(o->hooks->arg, fout, m->errp) < 0)
		goto out;
	rc = 0;
out:
	if (m->out_fd >= 0) {
		close(m->out_fd);
		m->out_fd = -1;
	}
	if (m->out_wfd >= 0) {
		close(m->out_wfd);
		m->out_wfd = -1;
	}
	if (H5Fclose(fout) < 0 && rc == 0)
		rc = mg_h5err(m->errp, "%s: cannot close (disk full?)", tmp);
	if (rc == 0)
		mg_wb_kick(m); /* what the close wrote */
	else
		mg_wb_stop(m);
	return rc;
}

int sh5_merge_job(const struct sh5_merge_opts *o,
		  struct sh5_merge_stats *stats, struct sh5_error *errp)
{
	struct mstate m;
	struct sh5_merge_stats dummy;
	struct stat sb;
	char *tmp = NULL, *outdir = NULL;
	hid_t fapl = -1;
	size_t i;
	long ncpu;
	int rc = -1, partial = 0, sync_maybe, restart = 0;

	memset(&m, 0, sizeof(m));
	m.feed_fd = -1;
	m.out_fd = -1;
	m.out_wfd = -1;
	if (!stats)
		stats = &dummy;
	memset(stats, 0, sizeof(*stats));
	m.o = o;
	m.st = stats;
	m.errp = errp;
	m.buf_bytes = o->buffer_bytes ? o->buffer_bytes : SH5_MERGE_BUFFER;
	/* HDF5 callocs a 1 MiB conversion buffer (and as much background)
	 * for every converting write: far too much for one-record totals. */
	m.dxpl = H5Pcreate(H5P_DATASET_XFER);
	if (m.dxpl >= 0)
		H5Pset_buffer(m.dxpl, 64 * 1024, NULL, NULL);
	if (m.buf_bytes < 4096)
		m.buf_bytes = 4096;
	if (!o->force && lstat(o->output, &sb) == 0) {
		errno = EEXIST;
		return sh5_errprintf(errp, "%s: exists (use --force to "
				     "overwrite it)", o->output);
	}
	if (sh5_merge_discover(o->dir, o->job, o->steps, o->nsteps, &m.in,
			       &m.nin, errp) < 0)
		return -1;
	stats->inputs = m.nin;
	if (!m.nin) {
		errno = ENOENT;
		sh5_errprintf(errp, "%s: no node-step files of job %" PRIu32
			      "%s", o->dir, o->job,
			      o->nsteps ? " for the selected steps" : "");
		goto out;
	}
	if (!(m.fi = calloc(m.nin, sizeof(*m.fi))) ||
	    !(m.buf = malloc(m.buf_bytes))) {
		errno = ENOMEM;
		sh5_errprintf(errp, "out of memory");
		goto out;
	}
	/* Steps asked for but absent. */
	for (i = 0; i < o->nsteps; i++) {
		char b[32];
		size_t k;
		int found = 0;

		sh5_step_name(o->steps[i], b, sizeof(b));
		for (k = 0; k < m.nin && !found; k++)
			found = !strcmp(m.in[k].step, b);
		if (!found && mg_add_missing(&m, "step %s: no node-step "
					     "files", b) < 0)
			goto oom;
	}

	if (!(tmp = temp_name(o->output, &outdir)) || !outdir)
		goto oom;
	fapl = H5Pcreate(H5P_FILE_ACCESS);
#ifdef HAVE_H5PSET_FILE_LOCKING
	H5Pset_file_locking(fapl, 0, 1);
#endif
	/* Pass 1 checks every input in child processes.  When the inputs
	 * look like whole copies (ours, intact, with the writer's totals:
	 * whole_ok()) the second pass does not wait for it: it copies each
	 * node group as soon as its input is checked, and starts over the
	 * normal way, after the whole first pass, as soon as an input is
	 * not such a copy or the first pass finds a problem. */
	m.early = !getenv("SH5MERGE_NO_EARLY") &&
		  (!o->hooks || !o->hooks->sync_rows || o->hooks->never_sync ||
		   o->hooks->sync_if_hit);
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 1)
		ncpu = 1;
	/* Early, one checking child (it keeps ahead of the copying); the
	 * others have the CPUs. */
	mg_probe_start(&m, m.early ? 1 : (size_t)ncpu);
	/* Not even the first input is whole (stock files): no early pass. */
	if (m.early && mg_early_gate(&m, 0)) {
		m.early = 0;
		mg_probe_widen(&m, (size_t)ncpu);
	}
	if (m.early) {
		m.feed_totals = 1;
		rc = pass2(&m, tmp, fapl, &partial, 0);
		if (rc == 0)
			goto written;
		if (rc < 0)
			goto fail;
		/* Start over, in the same temporary file (there is one from
		 * now until the rename). */
		restart = 1;
		pass2_reset(&m);
		if (o->hooks && o->hooks->restart)
			o->hooks->restart(o->hooks->arg);
		mg_probe_widen(&m, (size_t)ncpu);
	}
	m.early = 0;
	rc = -1;
	if ((sync_maybe = mg_pass1_done(&m)) < 0)
		goto stop;
	if (stats->skipped == m.nin) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: none of the %zu node-step files of "
			      "job %" PRIu32 " is usable", o->dir, m.nin, o->job);
		goto stop;
	}
	if (stats->problems && !o->allow_partial) {
		rc = 1;
		goto stop;
	}

	/* Pass 2.  The reader process starts before the output exists (it
	 * must not share it).  It totals the series copied raw itself unless
	 * their records may be synchronized (then they are read here). */
	m.feed_totals = !sync_maybe;
	mg_feeder_start(&m, 0);
	if (pass2(&m, tmp, fapl, &partial, restart) < 0)
		goto fail;
written:
	if (partial && !o->allow_partial) {
		rc = 1;
		goto fail_quiet;
	}
	/* The fsync runs beside the verification. */
	mg_wb_fsync(&m);
	if (mg_verify(&m, tmp) < 0)
		goto fail;
	if ((rc = mg_wb_stop(&m)) == -2)
		rc = fsync_path(tmp, 0);
	if (rc < 0) {
		rc = -1;
		sh5_errprintf(errp, "%s: fsync: %s", tmp, strerror(errno));
		goto fail;
	}
	rc = -1;
	if (o->force) {
		if (rename(tmp, o->output) < 0) {
			sh5_errprintf(errp, "%s: rename: %s", o->output,
				      strerror(errno));
			goto fail;
		}
	} else {
		/* link() never replaces an output that appeared meanwhile. */
		if (link(tmp, o->output) < 0) {
			sh5_errprintf(errp, "%s: %s", o->output,
				      errno == EEXIST ? "exists (use --force "
				      "to overwrite it)" : strerror(errno));
			goto fail;
		}
		unlink(tmp);
	}
	if (o->temp_path)
		o->temp_path(o->arg, NULL);
	fsync_path(outdir, 1);
	rc = partial ? 1 : 0;

	if (o->remove_inputs) {
		for (i = 0; i < m.nin; i++) {
			struct finfo *f = &m.fi[i];

			if (!f->usable || strcmp(f->status, "merged"))
				continue;
			if (stat(f->in->path, &sb) < 0 ||
			    (uint64_t)sb.st_size != f->size) {
				mg_report(&m, 0, f->in->path, "changed during "
					  "the merge: kept");
				continue;
			}
			if (unlink(f->in->path) < 0)
				mg_report(&m, 0, f->in->path, "cannot remove: "
					  "%s", strerror(errno));
			else
				stats->removed++;
		}
	}
	goto out;
oom:
	errno = ENOMEM;
	sh5_errprintf(errp, "out of memory");
	goto out;
stop:
	/* Stopped by the first pass: only an abandoned early pass left a
	 * temporary. */
	if (!restart)
		goto out;
	goto fail_quiet;
fail:
	rc = -1;
fail_quiet:
	if (tmp) {
		unlink(tmp);
		if (o->temp_path)
			o->temp_path(o->arg, NULL);
	}
out:
	mg_wb_stop(&m);
	mg_probe_stop(&m);
	mg_feeder_stop(&m);
	if (m.out_fd >= 0)
		close(m.out_fd);
	if (fapl >= 0)
		H5Pclose(fapl);
	free(tmp);
	free(outdir);
	if (m.dxpl >= 0)
		H5Pclose(m.dxpl);
	mg_mstate_free(&m);
	return rc;
}

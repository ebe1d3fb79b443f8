/* mergejob.c - the job driver of a merge: both passes, verification, the
 * rename (see merge.h, merge_int.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/h5attr.h"
#include "merge/merge_int.h"


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

/* The root attributes, /Merge and the finish hook.  0, or -1. */
static int pass2_finish(struct mstate *m, hid_t fout, const char *tmp,
			int partial)
{
	const struct sh5_merge_opts *o = m->o;

	if (sh5_h5attr_put_int(fout, "sh5 Format Version", 1) < 0 ||
	    sh5_h5attr_put_u32(fout, "Job ID", o->job) < 0 ||
	    sh5_h5attr_put_int(fout, "Number of Steps",
			       (int)m->nsteps_written) < 0 ||
	    (m->user[0] && sh5_h5attr_put_str(fout, "User", m->user) < 0) ||
	    (m->cluster[0] &&
	     sh5_h5attr_put_str(fout, "Cluster", m->cluster) < 0))
		return mg_h5err(m->errp, "%s: cannot write the root "
				"attributes", tmp);
	if (mg_write_merge_record(m, fout, partial) < 0)
		return -1;
	if (o->hooks && o->hooks->finish &&
	    o->hooks->finish(o->hooks->arg, fout, m->errp) < 0)
		return -1;
	return 0;
}

/* Free the blocks reserved past the end of the file fd (truncated to
 * its own size).  0, or -1 with errno set. */
static int trim_room(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -1;
	return ftruncate(fd, st.st_size);
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

	/* again: the temporary of an abandoned early pass, ours: removed
	 * and created anew, never truncated by its name (in a directory
	 * others can write, a symlink may have been put in its place). */
	if (again && unlink(tmp) < 0 && errno != ENOENT)
		return sh5_errprintf(m->errp, "%s: cannot remove: %s", tmp,
				     strerror(errno));
	fout = H5Fcreate(tmp, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
	if (fout < 0)
		return mg_h5err(m->errp, "%s: cannot create", tmp);
	if (o->temp_path && !again)
		o->temp_path(o->arg, tmp);
	m->out_fd = open(tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	m->out_wfd = open(tmp, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	mg_wb_start(m);
	if ((sg = mg_make_group(fout, "Steps")) < 0) {
		mg_h5err(m->errp, "%s: cannot create /Steps", tmp);
		goto out;
	}
	H5Gclose(sg);
	for (lo = 0; lo < m->nin; lo = i) {
		for (i = lo; i < m->nin &&
		     !strcmp(m->in[i].step, m->in[lo].step); i++)
			;
		if ((r = mg_write_step(m, fout, lo, i, &done)) != 0) {
			rc = r > 0 ? 1 : -1;
			goto out;
		}
	}
	if (m->onepass)
		mg_op_start(m, m->nin); /* past the inputs */
	if (m->onefeed && (r = mg_onefeed_end(m)) != 0) {
		rc = r < 0 ? -1 : 1;
		goto out;
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
	rc = pass2_finish(m, fout, tmp, *partial);
out:
	if (m->out_fd >= 0) {
		close(m->out_fd);
		m->out_fd = -1;
	}
	if (H5Fclose(fout) < 0 && rc == 0)
		rc = mg_h5err(m->errp, "%s: cannot close (disk full?)", tmp);
	if (m->out_wfd >= 0) {
		/* Blocks reserved past the end freed (reserve_room()). */
		if (rc == 0 && m->reserved_end && trim_room(m->out_wfd) < 0)
			rc = sh5_errprintf(m->errp, "%s: cannot trim: %s", tmp,
					   strerror(errno));
		close(m->out_wfd);
		m->out_wfd = -1;
		m->reserved_end = 0;
	}
	if (rc == 0)
		mg_wb_kick(m); /* what the close wrote */
	else
		mg_wb_stop(m);
	return rc;
}

/* The state of a merge before anything is found or allocated. */
static void mstate_init(struct mstate *m, const struct sh5_merge_opts *o,
			struct sh5_merge_stats *stats, struct sh5_error *errp)
{
	memset(m, 0, sizeof(*m));
	m->feed_fd = -1;
	m->feed_credit = -1;
	m->out_fd = -1;
	m->out_wfd = -1;
	m->op_fd = -1;
	m->dir_uid = -1;
	memset(stats, 0, sizeof(*stats));
	m->o = o;
	m->st = stats;
	m->errp = errp;
	m->buf_bytes = o->buffer_bytes ? o->buffer_bytes : SH5_MERGE_BUFFER;
	/* HDF5 callocs a 1 MiB conversion buffer (and as much background)
	 * for every converting write: far too much for one-record totals. */
	m->dxpl = H5Pcreate(H5P_DATASET_XFER);
	if (m->dxpl >= 0)
		H5Pset_buffer(m->dxpl, 64 * 1024, NULL, NULL);
	if (m->buf_bytes < 4096)
		m->buf_bytes = 4096;
}

/* The output may be written, the inputs are found, the steps asked for
 * but absent are noted.  0, or -1 with errp set. */
static int inputs_prepare(struct mstate *m)
{
	const struct sh5_merge_opts *o = m->o;
	struct stat sb;
	size_t i;

	if (!o->force && lstat(o->output, &sb) == 0) {
		errno = EEXIST;
		return sh5_errprintf(m->errp, "%s: exists (use --force to "
				     "overwrite it)", o->output);
	}
	if (sh5_merge_discover(o->dir, o->job, o->steps, o->nsteps, &m->in,
			       &m->nin, m->errp) < 0)
		return -1;
	m->st->inputs = m->nin;
	if (!m->nin) {
		errno = ENOENT;
		return sh5_errprintf(m->errp, "%s: no node-step files of job %"
				     PRIu32 "%s", o->dir, o->job,
				     o->nsteps ? " for the selected steps" :
				     "");
	}
	if (!(m->fi = calloc(m->nin, sizeof(*m->fi))) ||
	    !(m->buf = malloc(m->buf_bytes)) || mg_stamp_inputs(m) < 0)
		goto oom;
	/* Steps asked for but absent. */
	for (i = 0; i < o->nsteps; i++) {
		char b[32];
		size_t k;
		int found = 0;

		sh5_step_name(o->steps[i], b, sizeof(b));
		for (k = 0; k < m->nin && !found; k++)
			found = !strcmp(m->in[k].step, b);
		if (!found && mg_add_missing(m, "step %s: no node-step "
					     "files", b) < 0)
			goto oom;
	}
	return 0;
oom:
	errno = ENOMEM;
	return sh5_errprintf(m->errp, "out of memory");
}

/* The second pass started before the first ended (m->early).  0: the
 * job file is written; -1: failed; 1: it must start over (done here:
 * its state forgotten, the first pass widened). */
static int early_pass(struct mstate *m, const char *tmp, hid_t fapl,
		      int *partial, long ncpu)
{
	const struct sh5_merge_opts *o = m->o;
	int rc;

	m->feed_totals = 1;
	rc = pass2(m, tmp, fapl, partial, 0);
	if (rc <= 0)
		return rc;
	/* Start over, in the same temporary file (there is one from now
	 * until the rename). */
	pass2_reset(m);
	if (o->hooks && o->hooks->restart)
		o->hooks->restart(o->hooks->arg);
	mg_probe_widen(m, (size_t)ncpu);
	return 1;
}

/* Verify the written tmp and fsync it.  0, or -1 (errp set). */
static int seal(struct mstate *m, const char *tmp)
{
	int rc;

	/* The fsync runs beside the verification. */
	mg_wb_fsync(m);
	if (mg_verify(m, tmp) < 0)
		return -1;
	if ((rc = mg_wb_stop(m)) == -2)
		rc = fsync_path(tmp, 0);
	if (rc < 0)
		return sh5_errprintf(m->errp, "%s: fsync: %s", tmp,
				     strerror(errno));
	return 0;
}

/*
 * The early pass in one child process that checks each input just before
 * it copies it (one HDF5 open per input): it writes, verifies and fsyncs
 * tmp; this process follows it (mg_op_wait()) and keeps its pass, or
 * starts over the normal way when it finds an input that is not whole, a
 * problem, or dies or hangs on an input (which is then marked: a crash
 * of HDF5 ends only the child).  0, -1, 1 as early_pass(); 2 when no
 * child could be started.
 */
static int onepass_run(struct mstate *m, const char *tmp, hid_t fapl,
		       int *partial)
{
	const struct sh5_merge_opts *o = m->o;
	size_t i;
	int pfd[2], rc;
	pid_t pid;
	void *at;

	if (getenv("SH5MERGE_TWO_PASS"))
		return 2;
	at = mmap(NULL, sizeof(*m->op_at), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (at == MAP_FAILED)
		return 2;
	if (pipe(pfd) < 0) {
		munmap(at, sizeof(*m->op_at));
		return 2;
	}
	m->op_at = at;
	*m->op_at = UINT64_MAX;
	/* Named before the child creates it: the signal handlers remove
	 * it. */
	if (o->temp_path)
		o->temp_path(o->arg, tmp);
	if ((pid = fork()) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		munmap(at, sizeof(*m->op_at));
		m->op_at = NULL;
		return 2;
	}
	if (pid == 0) {
		close(pfd[0]);
		mg_child_signals();
		m->onepass = 1;
		m->in_child = 1;
		m->op_fd = pfd[1];
		m->feed_totals = 1;
		for (i = 0; i < m->nin; i++)
			m->fi[i].in = &m->in[i];
		rc = pass2(m, tmp, fapl, partial, 0);
		if (rc == 0 && seal(m, tmp) < 0)
			rc = -1;
		mg_op_end(m, rc, *partial);
	}
	close(pfd[1]);
	rc = mg_op_wait(m, pfd[0], pid, partial);
	munmap(at, sizeof(*m->op_at));
	m->op_at = NULL;
	m->sealed = rc == 0;
	return rc;
}

/*
 * The normal way with the one-pass feeder (onefeed.c): the reader child
 * checks each input just before it reads it, the job file is written as
 * the checks come in.  0: written to tmp (again: tmp exists, ours);
 * -1: failed (errp set); 1: the normal way must follow (what this pass
 * wrote forgotten, the inputs it checked kept as checked).
 */
static int onefeed_run(struct mstate *m, const char *tmp, hid_t fapl,
		       int *partial, int again, size_t ncpu)
{
	const struct sh5_merge_opts *o = m->o;
	uint64_t lost = m->st->lost;
	size_t i;
	int rc;

	if (getenv("SH5MERGE_NO_ONEFEED"))
		return 1;
	/* No checking children: the inputs the one-pass child crashed or
	 * hung on are checked already. */
	m->probe.par = 0;
	m->probe.done = 0;
	for (i = 0; i < m->nin; i++) {
		m->fi[i].in = &m->in[i];
		m->probe.done += m->fi[i].probed;
	}
	m->onefeed = 1;
	m->defer = 1;
	m->feed_totals = 1;
	mg_feeder_start(m, 0);
	if (m->feed_fd < 0) {
		rc = 1; /* no child: the normal way */
	} else {
		rc = pass2(m, tmp, fapl, partial, again);
	}
	mg_feeder_stop(m);
	m->onefeed = 0;
	if (rc < 0)
		rc = mg_onefeed_failed(m, ncpu);
	mg_onefeed_drop(m);
	if (rc == 1) {
		pass2_reset(m);
		m->st->lost = lost;
		if (o->hooks && o->hooks->restart)
			o->hooks->restart(o->hooks->arg);
	}
	return rc;
}

/*
 * Both passes.  0: the job file is written to tmp; -1: failed (errp
 * set); 1: stopped by the problems the first pass found.  *drop: tmp
 * must be removed (it may exist).
 */
static int run_passes(struct mstate *m, const char *tmp, hid_t fapl,
		      int *partial, int *drop)
{
	const struct sh5_merge_opts *o = m->o;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int r, sync_maybe, restart = 0;

	if (ncpu < 1)
		ncpu = 1;
	*drop = 1;
	/* Pass 1 checks every input in child processes.  When the inputs
	 * look like whole copies (ours, intact, with the writer's totals:
	 * whole_ok()) the second pass does not wait for it: it copies each
	 * node group as soon as its input is checked, and starts over the
	 * normal way, after the whole first pass, as soon as an input is
	 * not such a copy or the first pass finds a problem. */
	m->early = !getenv("SH5MERGE_NO_EARLY") &&
		   (!o->hooks || !o->hooks->sync_rows || o->hooks->never_sync ||
		    o->hooks->sync_if_hit);
	if (m->early && (r = onepass_run(m, tmp, fapl, partial)) != 2) {
		if (r <= 0)
			return r;
		/* Start over, in the same temporary file: each input
		 * checked by the reader child just before it is read; then,
		 * if that cannot be kept, the checking children (for the
		 * inputs it did not check) and the reader as before. */
		restart = 1;
		m->early = 0;
		if ((r = onefeed_run(m, tmp, fapl, partial, 1,
				     (size_t)ncpu)) <= 0)
			return r;
		mg_probe_start(m, (size_t)ncpu);
	}
	/* Early, one checking child (it keeps ahead of the copying); the
	 * others have the CPUs. */
	if (!restart)
		mg_probe_start(m, m->early ? 1 : (size_t)ncpu);
	/* Not even the first input is whole (stock files): no early pass. */
	if (m->early && mg_early_gate(m, 0)) {
		m->early = 0;
		mg_probe_widen(m, (size_t)ncpu);
	}
	if (m->early) {
		if ((r = early_pass(m, tmp, fapl, partial, ncpu)) <= 0)
			return r;
		restart = 1;
	}
	m->early = 0;
	/* Stopped by the first pass: only an abandoned early pass left a
	 * temporary. */
	*drop = restart;
	if ((sync_maybe = mg_pass1_done(m)) < 0)
		return -1;
	if (m->st->skipped == m->nin) {
		errno = EINVAL;
		return sh5_errprintf(m->errp, "%s: none of the %zu node-step "
				     "files of job %" PRIu32 " is usable",
				     o->dir, m->nin, o->job);
	}
	if (m->st->problems && !o->allow_partial)
		return 1;
	/* Pass 2.  The reader process starts before the output exists (it
	 * must not share it).  It totals the series copied raw itself unless
	 * their records may be synchronized (then they are read here). */
	*drop = 1;
	m->feed_totals = !sync_maybe;
	mg_feeder_start(m, 0);
	return pass2(m, tmp, fapl, partial, restart) < 0 ? -1 : 0;
}

/* Give the sealed tmp its name.  partial ? 1 : 0, or -1 (errp set; tmp
 * is the caller's to remove). */
static int place(struct mstate *m, const char *tmp, const char *outdir,
		 int partial)
{
	const struct sh5_merge_opts *o = m->o;

	if (o->force) {
		if (rename(tmp, o->output) < 0)
			return sh5_errprintf(m->errp, "%s: rename: %s",
					     o->output, strerror(errno));
	} else {
		/* link() never replaces an output that appeared meanwhile. */
		if (link(tmp, o->output) < 0)
			return sh5_errprintf(m->errp, "%s: %s", o->output,
					     errno == EEXIST ? "exists (use "
					     "--force to overwrite it)" :
					     strerror(errno));
		unlink(tmp);
	}
	if (o->temp_path)
		o->temp_path(o->arg, NULL);
	fsync_path(outdir, 1);
	return partial ? 1 : 0;
}

/* Verify, fsync and name tmp: seal() then place(). */
static int publish(struct mstate *m, const char *tmp, const char *outdir,
		   int partial)
{
	if (seal(m, tmp) < 0)
		return -1;
	return place(m, tmp, outdir, partial);
}

/* An input changed while it was read: what was read of it may be
 * neither what it held nor what it holds now, so the job file is not
 * named.  Each such input reported; -1 (errp set), or 0. */
static int inputs_changed(struct mstate *m)
{
	char why[160];
	size_t i, n = 0, first = 0;

	for (i = 0; i < m->nin; i++) {
		if (!mg_changed(m, i, why, sizeof(why)))
			continue;
		if (!n++)
			first = i;
		/* Not mg_report(), which holds back reports about it. */
		m->st->problems++;
		if (m->o->report)
			m->o->report(m->o->arg, 2, m->in[i].path, why);
	}
	if (!n)
		return 0;
	errno = ESTALE;
	return sh5_errprintf(m->errp, "%s: %zu input%s changed while being "
			     "read (first %s): no job file written; merge "
			     "again once the inputs are complete",
			     m->o->output, n, n == 1 ? "" : "s",
			     m->in[first].path);
}

/* --remove-inputs: the inputs merged whole and unchanged since they
 * were listed (the stamp: identity, size, modification and inode change
 * times), so that a file rewritten or replaced after it was read is
 * kept. */
static void remove_inputs(struct mstate *m)
{
	static const char pre[] = "changed while being read ";
	char why[160];
	size_t i;

	mg_test_hold("--remove-inputs");
	for (i = 0; i < m->nin; i++) {
		struct finfo *f = &m->fi[i];
		const char *w = why;

		if (!f->usable || strcmp(f->status, "merged"))
			continue;
		if (!m->stamp || !m->stamp[i].ok) {
			mg_report(m, 0, f->in->path, "not removed: no record "
				  "of it before the merge");
			continue;
		}
		if (mg_changed(m, i, why, sizeof(why))) {
			if (!strncmp(why, pre, sizeof(pre) - 1))
				w += sizeof(pre) - 1;
			mg_report(m, 0, f->in->path, "not removed: it changed "
				  "during the merge %s", w);
			continue;
		}
		if (unlink(f->in->path) < 0)
			mg_report(m, 0, f->in->path, "cannot remove: %s",
				  strerror(errno));
		else
			m->st->removed++;
	}
}

int sh5_merge_job(const struct sh5_merge_opts *o,
		  struct sh5_merge_stats *stats, struct sh5_error *errp)
{
	struct mstate m;
	struct sh5_merge_stats dummy;
	char *tmp = NULL, *outdir = NULL;
	hid_t fapl = -1;
	int rc = -1, partial = 0, drop = 0;

	mstate_init(&m, o, stats ? stats : &dummy, errp);
	if (inputs_prepare(&m) < 0)
		goto out;
	if (!(tmp = temp_name(o->output, &outdir)) || !outdir) {
		errno = ENOMEM;
		sh5_errprintf(errp, "out of memory");
		goto out;
	}
	fapl = H5Pcreate(H5P_FILE_ACCESS);
#ifdef HAVE_H5PSET_FILE_LOCKING
	H5Pset_file_locking(fapl, 0, 1);
#endif
	rc = run_passes(&m, tmp, fapl, &partial, &drop);
	if (inputs_changed(&m) < 0) {
		rc = -1;
		drop = 1;
	} else if (rc == 0 && partial && !o->allow_partial) {
		rc = 1;
		drop = 1;
	} else if (rc == 0) {
		rc = m.sealed ? place(&m, tmp, outdir, partial) :
		     publish(&m, tmp, outdir, partial);
		drop = rc < 0;
		if (rc >= 0 && o->remove_inputs)
			remove_inputs(&m);
	}
	if (drop) {
		unlink(tmp);
		if (o->temp_path)
			o->temp_path(o->arg, NULL);
	}
out:
	mg_wb_stop(&m);
	mg_probe_stop(&m);
	mg_feeder_stop(&m);
	mg_feed_ring_free(&m);
	if (m.out_fd >= 0)
		close(m.out_fd);
	if (fapl >= 0)
		H5Pclose(fapl);
	free(tmp);
	free(outdir);
	if (m.dxpl >= 0)
		H5Pclose(m.dxpl);
	mg_onefeed_drop(&m);
	mg_mstate_free(&m);
	return rc;
}

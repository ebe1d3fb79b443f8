/* node_write.c - one node group and one step of the job file (see
 * merge_int.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/h5attr.h"
#include "common/outfile.h"
#include "profile/totals.h"
#include "merge/merge_int.h"

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

/* Blocks reserved past the output's end at a time (one fallocate per
 * this much, not per node; the rest is trimmed by mg_trim_room()). */
#define RESERVE_AHEAD ((off_t)32 << 20)

/*
 * Make sure `bytes` more can be written to the output before H5Ocopy():
 * HDF5 (1.10 to 1.14) crashes inside H5Ocopy() when a write fails (a full
 * disk, a file size limit), so the room is reserved first: blocks past
 * the end (fallocate, keeping the size; RESERVE_AHEAD at a time when
 * there is room for it), else a look at the free space; and the file size
 * limit.  0, or -1 with errno set (ENOSPC, EFBIG).
 */
static int reserve_room(struct mstate *m, off_t bytes)
{
	struct statvfs vs;
	struct rlimit rl;
	struct stat st;
	off_t end, ahead = bytes;

	if (m->out_wfd < 0 || fstat(m->out_wfd, &st) < 0)
		return 0; /* nothing to go by: let HDF5 try */
	end = st.st_size + bytes;
	if (end <= m->reserved_end)
		return 0; /* reserved before */
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (rlim_t)end > rl.rlim_cur) {
		errno = EFBIG;
		return -1;
	}
	if (ahead < RESERVE_AHEAD && (rl.rlim_cur == RLIM_INFINITY ||
				      (rlim_t)(st.st_size + RESERVE_AHEAD) <=
				      rl.rlim_cur))
		ahead = RESERVE_AHEAD;
	if (ahead > bytes &&
	    fallocate(m->out_wfd, FALLOC_FL_KEEP_SIZE, st.st_size, ahead) == 0) {
		m->reserved_end = st.st_size + ahead;
		return 0;
	}
	if (fallocate(m->out_wfd, FALLOC_FL_KEEP_SIZE, st.st_size, bytes) == 0) {
		m->reserved_end = end;
		return 0;
	}
	if (errno == ENOSPC || errno == EFBIG || errno == EDQUOT)
		return -1;
	if (fstatvfs(m->out_wfd, &vs) == 0 &&
	    (uint64_t)vs.f_bavail * vs.f_frsize < (uint64_t)bytes) {
		errno = ENOSPC;
		return -1;
	}
	return 0;
}

/* The series of a whole copy noted (rows, the checks) and its stored
 * totals folded into the step's.  0, or -1 (errp set). */
static int whole_fold(struct mstate *m, struct finfo *f, hid_t in,
		      const char *gpath, struct sh5_totacc **sacc,
		      size_t *nsacc)
{
	size_t i;

	for (i = 0; i < f->nents; i++) {
		const struct whole_ent *e = &f->ents[i];
		char full[512];

		f->written += e->rows;
		m->st->samples += e->rows;
		snprintf(full, sizeof(full), "%s/%s", gpath, e->path);
		if (mg_add_check(m, full, e->rows) < 0)
			return sh5_errprintf(m->errp, "out of memory");
		/* Tasks are folded through the node's AllTasks, kept with
		 * the first. */
		if (e->tlen && fold_stored(m, f, in, e, sacc, nsacc) < 0)
			return -1;
	}
	return 0;
}

/* Open the input of f and its node group for the copy.  0, or -1 (both
 * left closed). */
static int whole_open(struct finfo *f, hid_t *fid, hid_t *in)
{
	struct sh5_error err = { "" };
	struct stat st;
	char fdname[40];
	const char *name;
	hid_t fapl;
	int fd;

	*fid = *in = -1;
	/* The entry checked, and HDF5 opening what was checked (not a
	 * FIFO or another file renamed over it since). */
	if ((fd = sh5_infile_open_entry(f->in->path, &st, &err)) < 0)
		return -1;
	name = sh5_fd_name(fd, fdname, sizeof(fdname));
	if ((fapl = H5Pcreate(H5P_FILE_ACCESS)) < 0) {
		close(fd);
		return -1;
	}
#ifdef HAVE_H5PSET_FILE_LOCKING
	H5Pset_file_locking(fapl, 0, 1);
#endif
	*fid = H5Fopen(name ? name : f->in->path, H5F_ACC_RDONLY, fapl);
	H5Pclose(fapl);
	close(fd);
	if (*fid >= 0 && (*in = H5Gopen2(*fid, f->node_name,
					 H5P_DEFAULT)) < 0) {
		H5Fclose(*fid);
		*fid = -1;
	}
	return *in >= 0 ? 0 : -1;
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
static int write_node_whole(struct mstate *m, hid_t nodes, const char *step,
			    struct finfo *f, struct sh5_totacc **sacc,
			    size_t *nsacc, uint32_t *ntasks, int64_t *start_ns)
{
	const struct sh5_merge_hooks *hk = m->o->hooks;
	const char *node = f->node_name;
	struct sh5_nodestep *held = NULL;
	char gpath[256];
	hid_t fid = -1, in = -1, g = -1;
	int rc = -1, r;

	snprintf(gpath, sizeof(gpath), "/Steps/%s/Nodes/%s", step, node);
	if (m->held && m->held_idx == (size_t)(f - m->fi)) {
		/* The one-pass child's check left it open. */
		held = m->held;
		fid = held->file;
		in = held->node;
	} else if (whole_open(f, &fid, &in) < 0) {
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
	if (whole_fold(m, f, in, gpath, sacc, nsacc) < 0)
		goto fail;
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
	if (held) {
		mg_held_close(m);
	} else {
		if (in >= 0)
			H5Gclose(in);
		if (fid >= 0)
			H5Fclose(fid);
	}
	return rc;
}

/* Fold a node's series total into the node's (nacc) and, but a task's,
 * the step's totals (sacc).  0, or -1 out of memory. */
static int node_fold(struct mstate *m, struct finfo *f,
		     const struct sh5_ns_series *e, const void *total,
		     struct sh5_totacc **nacc, size_t *nnacc,
		     struct sh5_totacc **sacc, size_t *nsacc)
{
	const struct sh5_series *s = e->series;
	int is_task = !strcmp(s->ops->name, "Task");
	int fr;

	fr = sh5_totacc_fold(nacc, nnacc, is_task ? "AllTasks" : e->path,
			     s, total);
	if (fr < 0)
		return -1;
	if (fr > 0)
		mg_report(m, 0, f->in->path, "%s: fields differ from "
			  "the node's other tasks: left out of the "
			  "node total", e->path);
	if (!is_task) {
		fr = sh5_totacc_fold(sacc, nsacc, e->path, s, total);
		if (fr < 0)
			return -1;
		if (fr > 0)
			mg_report(m, 0, f->in->path, "%s: fields "
				  "differ from other nodes: left out "
				  "of the step total", e->path);
	}
	return 0;
}

/* Every series of ns into node group g, with its total; the totals
 * folded (node_fold()).  0, or -1 (errp set). */
static int node_series(struct mstate *m, struct sh5_nodestep *ns, hid_t g,
		       const char *gpath, struct finfo *f, int sync,
		       struct sh5_totacc **nacc, size_t *nnacc,
		       struct sh5_totacc **sacc, size_t *nsacc)
{
	void *total = NULL;
	size_t i;
	int rc = -1;

	for (i = 0; i < ns->nseries; i++) {
		struct sh5_ns_series *e = &ns->series[i];
		const struct sh5_series *s = e->series;
		char tpath[2 * SH5_NAME_MAX + 16];
		void *t2;

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
		if (node_fold(m, f, e, total, nacc, nnacc, sacc, nsacc) < 0)
			goto oom;
	}
	rc = 0;
	goto out;
oom:
	errno = ENOMEM;
	sh5_errprintf(m->errp, "out of memory");
out:
	free(total);
	return rc;
}

/* The node's task total (AllTasks) written and folded into the step's.
 * 0, or -1 (errp set). */
static int node_alltasks(struct mstate *m, hid_t g, struct finfo *f,
			 struct sh5_totacc *nacc, size_t nnacc,
			 struct sh5_totacc **sacc, size_t *nsacc)
{
	size_t i;

	for (i = 0; i < nnacc; i++) {
		char tpath[2 * SH5_NAME_MAX + 16];

		if (strcmp(nacc[i].key, "AllTasks"))
			continue;
		snprintf(tpath, sizeof(tpath), "Totals/%s", nacc[i].key);
		if (mg_write_total(m, g, tpath, nacc[i].s, nacc[i].total,
				   nacc[i].count) < 0) {
			m->write_failed = 1;
			return -1;
		}
		if (sh5_totacc_fold(sacc, nsacc, "AllTasks", nacc[i].s,
				    nacc[i].total) > 0)
			mg_report(m, 0, f->in->path, "task fields differ from "
				  "other nodes: left out of the step total");
	}
	return 0;
}

/* One object that is not a series into g.  0, or -1 (err set). */
static int node_other(struct sh5_nodestep *ns, const char *name, hid_t g,
		      hid_t ocpy, hid_t lcpl, struct sh5_error *err)
{
	H5O_info_t oi;

	if (H5Oget_info_by_name2(ns->node, name, &oi, H5O_INFO_BASIC,
				 H5P_DEFAULT) < 0)
		return sh5_errprintf_h5(err, "unreadable object header");
	if (oi.type == H5O_TYPE_DATASET)
		return mg_copy_dataset(ns->node, name, g, err);
	if (ns->salvaged || ns->damage[0])
		return sh5_errprintf(err, "in a damaged file");
	if (H5Ocopy(ns->node, name, g, name, ocpy, lcpl) < 0)
		return sh5_errprintf_h5(err, "cannot copy");
	return 0;
}

/* Objects that are not series (ClockOffsets, ...): datasets copied by
 * value; groups (none in our files) with H5Ocopy, but never from a
 * damaged file (H5Ocopy crashes on some damaged objects).  Application
 * events: the group with its attributes, then its datasets as others. */
static void node_others(struct mstate *m, struct sh5_nodestep *ns, hid_t g,
			struct finfo *f)
{
	struct sh5_error err = { "" };
	hid_t ocpy = H5Pcreate(H5P_OBJECT_COPY);
	hid_t lcpl = mg_lcpl_intermediate();
	size_t i;

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
		err.text[0] = '\0';
		if (node_other(ns, ns->other[i], g, ocpy, lcpl, &err) == 0)
			continue;
		mg_report(m, 1, f->in->path, "%s: left out (%s)", ns->other[i],
			  err.text);
		if (strcmp(f->status, "salvaged")) {
			f->status = "salvaged";
			snprintf(f->reason, sizeof(f->reason),
				 "%.60s: unreadable object", ns->other[i]);
		}
	}
	if (ocpy >= 0)
		H5Pclose(ocpy);
	if (lcpl >= 0)
		H5Pclose(lcpl);
}

static int write_node(struct mstate *m, hid_t nodes, const char *step,
		      struct finfo *f, struct sh5_totacc **sacc, size_t *nsacc,
		      uint32_t *ntasks, int64_t *start_ns)
{
	struct sh5_error err = { "" };
	struct sh5_nodestep *ns;
	struct sh5_totacc *nacc = NULL;
	size_t nnacc = 0;
	hid_t g = -1;
	char gpath[256];
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
	if (node_series(m, ns, g, gpath, f, sync, &nacc, &nnacc, sacc,
			nsacc) < 0 ||
	    node_alltasks(m, g, f, nacc, nnacc, sacc, nsacc) < 0)
		goto out;
	node_others(m, ns, g, f);
	if (hk && hk->node_end && hk->node_end(hk->arg, g, m->errp) < 0) {
		m->write_failed = 1;
		goto out;
	}
	m->st->nodes++;
	rc = 0;
out:
	sh5_totacc_free(nacc, nnacc);
	if (g >= 0)
		H5Gclose(g);
	sh5_nodestep_close(ns);
	return rc;
}

int mg_write_step(struct mstate *m, hid_t fout, size_t lo, size_t hi,
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
		if ((m->early && mg_early_gate(m, i)) ||
		    (m->onefeed && mg_onefeed_gate(m, i))) {
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

/* evabsorb.c - see evabsorb.h */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events/evabsorb.h"
#include "profile/layout.h"
#include "common/sort.h"

#define DEFAULT_MAX_FILES 4096

int sh5_evabsorb_open_dir(const char *dir, const char *user, uid_t uid,
			  struct sh5_error *errp)
{
	int dfd = -1, udfd = -1, saved;
	struct stat st;

	if (!dir || dir[0] != '/' || !sh5_layout_user_ok(user)) {
		errno = EINVAL;
		return sh5_errprintf(errp, "invalid directory '%s/%s'",
				     dir ? dir : "", user ? user : "");
	}
	/* The configured directory is the admin's (symlinks allowed), the
	 * user's below it is not. */
	if ((dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC)) < 0) {
		sh5_errprintf(errp, "cannot open %s: %s", dir,
			      strerror(errno));
		goto error;
	}
	udfd = sh5_layout_open_user_dir(dfd, dir, user, errp);
	if (udfd < 0)
		goto error;
	if (fstat(udfd, &st) < 0 || st.st_uid != uid) {
		errno = EPERM;
		sh5_errprintf(errp, "%s/%s is not owned by uid %u: refused",
			      dir, user, (unsigned)uid);
		goto error;
	}
	close(dfd);
	return udfd;
error:
	saved = errno;
	if (udfd >= 0)
		close(udfd);
	if (dfd >= 0)
		close(dfd);
	errno = saved;
	return -1;
}

/* List the matching names into *out (sorted by task, pid, name). */
static int cmp_file(const void *a, const void *b)
{
	const struct sh5_evabsorb_file *x = a, *y = b;

	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int list_files(const struct sh5_evabsorb_params *p,
		      struct sh5_evabsorb_file **out, size_t *nout,
		      size_t *ignored, struct sh5_error *errp)
{
	size_t max = p->max_files ? p->max_files : DEFAULT_MAX_FILES;
	struct sh5_evabsorb_file *v = NULL, *nv;
	size_t n = 0, cap = 0;
	struct dirent *de;
	uint32_t task, pid;
	DIR *d = NULL;
	int fd;

	*ignored = 0;
	/* A descriptor of its own: readdir moves the offset. */
	fd = openat(p->dirfd, ".", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		sh5_errprintf(errp, "cannot list the spill directory: %s",
			      strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((errno = 0, de = readdir(d))) {
		if (strlen(de->d_name) >= sizeof(v->name) ||
		    sh5_evspill_name_parse(de->d_name, p->prefix, &task,
					   &pid) < 0)
			continue;
		if (n == max) {
			(*ignored)++;
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			if (!(nv = realloc(v, cap * sizeof(*v)))) {
				sh5_errprintf(errp, "out of memory");
				goto error;
			}
			v = nv;
		}
		memset(&v[n], 0, sizeof(v[n]));
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		v[n].task = task;
		v[n].pid = pid;
		n++;
	}
	if (errno) {
		sh5_errprintf(errp, "cannot list the spill directory: %s",
			      strerror(errno));
		goto error;
	}
	closedir(d);
	if (n)
		sh5_qsort(v, n, sizeof(*v), cmp_file);
	*out = v;
	*nout = n;
	return 0;
error:
	closedir(d);
	free(v);
	return -1;
}

int sh5_evabsorb_pending(const struct sh5_evabsorb_params *p,
			 struct sh5_error *errp)
{
	struct dirent *de;
	uint32_t task, pid;
	DIR *d;
	int fd, found = 0;

	if (!p || !p->prefix) {
		errno = EINVAL;
		return sh5_errprintf(errp, "invalid spill parameters");
	}
	fd = openat(p->dirfd, ".", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		sh5_errprintf(errp, "cannot list the spill directory: %s",
			      strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while (!found && (errno = 0, de = readdir(d)))
		found = strlen(de->d_name) < sizeof(((struct
			sh5_evabsorb_file *)0)->name) &&
			sh5_evspill_name_parse(de->d_name, p->prefix, &task,
					       &pid) == 0;
	if (!found && errno) {
		sh5_errprintf(errp, "cannot list the spill directory: %s",
			      strerror(errno));
		closedir(d);
		return -1;
	}
	closedir(d);
	return found;
}

/* The reader's callbacks: the task's dataset begins at the first. */
struct ctx {
	struct sh5_evstore *es;
	struct sh5_evabsorb_file *f;
	int begun;
	int store_failed;	/* a write to the HDF5 file failed */
};

static int begin(struct ctx *c, struct sh5_error *errp)
{
	if (c->begun)
		return 0;
	if (sh5_evstore_task_begin(c->es, c->f->task, errp) < 0) {
		if (errno != EEXIST)
			c->store_failed = 1;
		return -1;
	}
	c->begun = 1;
	return 0;
}

static int cb_region(void *arg, uint32_t id, uint16_t flags,
		     const char *name, struct sh5_error *errp)
{
	struct ctx *c = arg;

	if (begin(c, errp) < 0)
		return -1;
	if (sh5_evstore_region(c->es, id, flags, name, errp) < 0) {
		c->store_failed = 1;
		return -1;
	}
	return 0;
}

static int cb_comm(void *arg, uint32_t local, uint64_t global, int32_t size,
		   int32_t myrank, const int32_t *members,
		   struct sh5_error *errp)
{
	struct ctx *c = arg;

	if (begin(c, errp) < 0)
		return -1;
	if (sh5_evstore_comm(c->es, local, global, size, myrank, members,
			     errp) < 0) {
		c->store_failed = 1;
		return -1;
	}
	return 0;
}

static int cb_events(void *arg, const struct sh5ev_rec *recs, size_t n,
		     struct sh5_error *errp)
{
	struct ctx *c = arg;

	if (begin(c, errp) < 0)
		return -1;
	if (sh5_evstore_events(c->es, recs, n, errp) < 0) {
		c->store_failed = 1;
		return -1;
	}
	return 0;
}

static int in_tasks(const struct sh5_evabsorb_params *p, uint32_t task)
{
	size_t i;

	if (!p->tasks)
		return 1;
	for (i = 0; i < p->ntasks; i++)
		if (p->tasks[i] == task)
			return 1;
	return 0;
}

/* Absorb one file; returns -1 only when writing the HDF5 file failed. */
static int absorb_one(const struct sh5_evabsorb_params *p,
		      struct sh5_evstore *es, struct sh5_evabsorb_file *f,
		      dev_t dir_dev)
{
	struct ctx c = { .es = es, .f = f };
	struct sh5_evspill_cb cb = { .region = cb_region, .comm = cb_comm,
				     .events = cb_events, .arg = &c };
	struct sh5_error err = { "" };
	struct sh5_fsids ids;
	struct stat st;
	int rc;

	f->status = SH5_EVABSORB_REFUSED;
	if (!in_tasks(p, f->task)) {
		snprintf(f->reason, sizeof(f->reason), "task %" PRIu32 " is "
			 "not a task of this node-step", f->task);
		return 0;
	}
	/* Nothing mounted over the name (a FUSE file could block reads):
	 * the reader checks the rest on the descriptor it opens. */
	if (fstatat(p->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev != dir_dev) {
		snprintf(f->reason, sizeof(f->reason), "on another file "
			 "system than its directory (a mount point)");
		return 0;
	}
	sh5_layout_fsids_user(&ids, p->uid, p->gid);
	rc = sh5_evspill_read(p->dirfd, f->name, p->uid, p->max_bytes, &cb,
			      &f->info, &err);
	sh5_layout_fsids_root(&ids);
	if (rc < 0) {
		snprintf(f->reason, sizeof(f->reason), "%s", err.text);
		sh5_evstore_task_abort(es);
		if (c.store_failed) {
			f->status = SH5_EVABSORB_FAILED;
			return -1;
		}
		return 0;
	}
	if (f->info.task != f->task || f->info.pid != f->pid ||
	    strncmp(f->info.prefix, p->prefix, sizeof(f->info.prefix))) {
		snprintf(f->reason, sizeof(f->reason), "its header is of task "
			 "%" PRIu32 " pid %" PRIu32 " of another step or node, "
			 "not of its name", f->info.task, f->info.pid);
		sh5_evstore_task_abort(es);
		return 0;
	}
	/* A file of nothing but a header still tells what happened. */
	if (begin(&c, &err) < 0) {
		snprintf(f->reason, sizeof(f->reason), "%s", err.text);
		if (c.store_failed) {
			f->status = SH5_EVABSORB_FAILED;
			return -1;
		}
		return 0;
	}
	f->records = sh5_evstore_task_records(es);
	if (sh5_evstore_task_end(es, &f->info, f->name, &err) < 0 ||
	    sh5_evstore_flush(es, &err) < 0) {
		snprintf(f->reason, sizeof(f->reason), "%s", err.text);
		f->status = SH5_EVABSORB_FAILED;
		f->records = 0;
		return -1;
	}
	f->status = SH5_EVABSORB_KEPT;
	if (f->info.truncated) {
		snprintf(f->reason, sizeof(f->reason), "not read beyond the "
			 "cap of %" PRIu64 " bytes", p->max_bytes);
		return 0;
	}
	sh5_layout_fsids_user(&ids, p->uid, p->gid);
	rc = unlinkat(p->dirfd, f->name, 0);
	sh5_layout_fsids_root(&ids);
	if (rc < 0)
		snprintf(f->reason, sizeof(f->reason), "cannot remove it: %s",
			 strerror(errno));
	else
		f->status = SH5_EVABSORB_REMOVED;
	return 0;
}

int sh5_evabsorb(const struct sh5_evabsorb_params *p, struct sh5_evstore *es,
		 struct sh5_evabsorb_file **files, size_t *nfiles,
		 size_t *ignored, struct sh5_error *errp)
{
	struct sh5_evabsorb_file *v = NULL;
	size_t n = 0, i, ign = 0;
	struct stat st;
	int failed = 0;

	*files = NULL;
	*nfiles = 0;
	if (ignored)
		*ignored = 0;
	if (!p || !p->prefix || !es || fstat(p->dirfd, &st) < 0) {
		errno = EINVAL;
		return sh5_errprintf(errp, "invalid spill directory or "
				     "parameters");
	}
	if (list_files(p, &v, &n, &ign, errp) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (failed) {
			v[i].status = SH5_EVABSORB_FAILED;
			snprintf(v[i].reason, sizeof(v[i].reason), "not read: "
				 "writing the events of an earlier file "
				 "failed");
			continue;
		}
		if (absorb_one(p, es, &v[i], st.st_dev) < 0)
			failed = 1;
	}
	*files = v;
	*nfiles = n;
	if (ignored)
		*ignored = ign;
	return 0;
}

/* Append to buf at *pos (snprintf semantics, never past len). */
static void add(char *buf, size_t len, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void add(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*pos >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		*pos += (size_t)n < len - *pos ? (size_t)n : len - *pos - 1;
}

void sh5_evabsorb_describe(const struct sh5_evabsorb_file *f, char *buf,
			   size_t len)
{
	const struct sh5_evspill_info *in = &f->info;
	size_t pos = 0;
	const char *sep = " (";

	if (!len)
		return;
	buf[0] = '\0';
	if (f->status == SH5_EVABSORB_REFUSED ||
	    f->status == SH5_EVABSORB_FAILED) {
		const char *why = f->reason;
		size_t n = strlen(f->name);

		/* The reader's reasons begin with the name: say it once. */
		if (!strncmp(why, f->name, n) && !strncmp(why + n, ": ", 2))
			why += n + 2;
		add(buf, len, &pos, "%s: %s: %s; kept", f->name,
		    f->status == SH5_EVABSORB_REFUSED ? "refused" :
							"not absorbed", why);
		return;
	}
	add(buf, len, &pos, "%s: task %" PRIu32 ": %" PRIu64 " events "
	    "absorbed from %" PRIu32 " blocks", f->name, f->task, f->records,
	    in->blocks);
	if (in->blocks_bad) {
		add(buf, len, &pos, "%s%" PRIu32 " blocks dropped", sep,
		    in->blocks_bad);
		sep = ", ";
	}
	if (in->torn_tail) {
		add(buf, len, &pos, "%storn tail dropped", sep);
		sep = ", ";
	}
	if (in->unwritten) {
		add(buf, len, &pos, "%sunfinished last block dropped", sep);
		sep = ", ";
	}
	if (in->rejected) {
		add(buf, len, &pos, "%s%" PRIu64 " records rejected", sep,
		    in->rejected);
		sep = ", ";
	}
	if (in->lost) {
		add(buf, len, &pos, "%s%" PRIu64 " events lost by the task",
		    sep, in->lost);
		sep = ", ";
	}
	if (in->truncated) {
		add(buf, len, &pos, "%struncated at the cap", sep);
		sep = ", ";
	}
	if (in->first_problem[0])
		add(buf, len, &pos, "%sfirst: %s", sep, in->first_problem);
	if (sep[0] == ',' || in->first_problem[0])
		add(buf, len, &pos, ")");
	if (f->status == SH5_EVABSORB_REMOVED)
		add(buf, len, &pos, ", removed");
	else
		add(buf, len, &pos, "; kept: %s", f->reason);
}

int sh5_evabsorb_notable(const struct sh5_evabsorb_file *f)
{
	const struct sh5_evspill_info *in = &f->info;

	return f->status != SH5_EVABSORB_REMOVED || in->blocks_bad ||
	       in->torn_tail || in->unwritten || in->rejected || in->lost ||
	       in->truncated ||
	       in->first_problem[0];
}

/*
 * evabsorb.h - absorbing a node-step's spill files into its node-step
 * file (run as root by the plugin at step end, after the tasks ended).
 *
 * The spill files of a node-step are the names "<prefix>.<task>.<pid>"
 * SH5EV_SUFFIX in the user's profile directory.  Each is untrusted: it
 * is read through sh5_evspill_read() (which refuses symlinks, FIFOs,
 * devices, files of another owner or with other links, bad headers and
 * other format versions, and drops bad blocks and records), as the job's
 * user (filesystem uid and gid switched for the calling thread when
 * running as root), into Events/<task> of the node group (evstore.h).
 * A file is removed only after its events were written and the file
 * flushed; a file refused, or not wholly absorbed, is kept.
 */
#ifndef SH5_EVABSORB_H
#define SH5_EVABSORB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "events/evspill.h"
#include "events/evstore.h"

/* What happened to one spill file. */
enum sh5_evabsorb_status {
	SH5_EVABSORB_REMOVED = 0, /* absorbed, then removed */
	SH5_EVABSORB_KEPT,	  /* absorbed, file kept (reason says why:
				   * not read to its end, or unlink failed) */
	SH5_EVABSORB_REFUSED,	  /* nothing absorbed, file kept */
	SH5_EVABSORB_FAILED,	  /* writing failed: nothing of it in the
				   * HDF5 file, spill file kept */
};

struct sh5_evabsorb_file {
	char name[256];		/* as found in the directory */
	uint32_t task, pid;	/* from the name */
	enum sh5_evabsorb_status status;
	uint64_t records;	/* event records written */
	struct sh5_evspill_info info; /* from the reader (zero if not read) */
	char reason[256];	/* why refused, failed or kept; "" */
};

struct sh5_evabsorb_params {
	int dirfd;		/* the user's directory (open_dir below) */
	const char *prefix;	/* "<job>_<step>_<node>" */
	uid_t uid;		/* the job's user: owner of every file */
	gid_t gid;
	uint64_t max_bytes;	/* per file (0: no cap) */
	const uint32_t *tasks;	/* global ids of the node-step's tasks: */
	size_t ntasks;		/* files of others are refused; NULL: any */
	size_t max_files;	/* names considered at most (0: 4096) */
};

/*
 * Open directory <dir>/<user> for absorbing: O_DIRECTORY|O_NOFOLLOW
 * (never through a symlink), owned by uid.  Returns an fd (O_CLOEXEC;
 * the caller closes it) or -1 with errno and errp naming the directory
 * (ENOENT when it does not exist: no spill files).
 */
int sh5_evabsorb_open_dir(const char *dir, const char *user, uid_t uid,
			  struct sh5_error *errp);

/*
 * Are there spill files of p->prefix in p->dirfd?  One directory scan,
 * nothing opened: lets a step whose tasks wrote no events skip
 * sh5_evabsorb() and the event store altogether.  1 yes, 0 no, -1 with
 * errp set when the directory cannot be listed.
 */
int sh5_evabsorb_pending(const struct sh5_evabsorb_params *p,
			 struct sh5_error *errp);

/*
 * Absorb the spill files of p->prefix in p->dirfd into es, one file at a
 * time in the order of (task, pid), flushing the HDF5 file after each.
 * A second file of a task already absorbed (its dataset exists) is
 * refused.  After a failed write the remaining files are not read
 * (status FAILED).  *files (malloc'd, the caller frees it) gets one
 * entry per file considered, *nfiles their number; *ignored (may be
 * NULL) counts matching names beyond max_files, left alone.  Returns 0,
 * or -1 with errp set when the directory cannot be listed or memory is
 * short (*files NULL then).
 */
int sh5_evabsorb(const struct sh5_evabsorb_params *p, struct sh5_evstore *es,
		 struct sh5_evabsorb_file **files, size_t *nfiles,
		 size_t *ignored, struct sh5_error *errp);

/* One line for the log: "<name>: task T: N events absorbed (what was
 * dropped), removed" or "<name>: refused: <reason>; kept". */
void sh5_evabsorb_describe(const struct sh5_evabsorb_file *f, char *buf,
			   size_t len);

/* 1 when the line of f is worth more than a debug message: something
 * dropped, refused, failed or kept. */
int sh5_evabsorb_notable(const struct sh5_evabsorb_file *f);

#endif /* SH5_EVABSORB_H */

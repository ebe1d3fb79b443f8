/*
 * layout.h - names and safe creation of node-step files.
 *
 * Node-step files live in <dir>/<user>/<job>_<step>_<node>.h5 (see
 * doc/format.md).  The user directory is 0700 and the file 0600, both
 * owned by the job's user; neither is ever reached through a symlink
 * (CVE-2023-41914 was the stock plugin following one as root).
 */
#ifndef SH5_LAYOUT_H
#define SH5_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

#define SH5_FORMAT_VERSION 1

/* Slurm's special step ids (slurm.h; stable since 20.11). */
#define SH5_STEP_PENDING 0xfffffffdu
#define SH5_STEP_EXTERN 0xfffffffcu
#define SH5_STEP_BATCH 0xfffffffbu
#define SH5_STEP_INTERACTIVE 0xfffffffau

/*
 * Readable step name: "batch", "extern", "interactive", "pending" or the
 * decimal number.  Writes into buf (at least 16 bytes); returns buf.
 */
char *sh5_layout_step_name(uint32_t step_id, char *buf, size_t len);

/* Parse a step name back; 0 or -1 (EINVAL). */
int sh5_layout_step_parse(const char *name, uint32_t *step_id);

/*
 * File name "<job>_<step>_<node>.h5" into buf.  Returns 0, or -1 with
 * errno ENAMETOOLONG / EINVAL (node containing '/').
 */
int sh5_layout_file_name(uint32_t job_id, uint32_t step_id,
			 const char *node, char *buf, size_t len);

/* The calling thread's filesystem ids, switched to a job user's while it
 * touches that user's files (Linux: per thread; only when running as
 * root, a no-op otherwise). */
struct sh5_fsids {
	int switched;
};
void sh5_layout_fsids_user(struct sh5_fsids *s, uid_t uid, gid_t gid);
/* Back to root; keeps errno. */
void sh5_layout_fsids_root(struct sh5_fsids *s);

/*
 * Open <dir>/<user> (already checked: user is a plain name) relative to
 * dfd, the opened dir: a directory, never through a symlink.  Returns an
 * O_DIRECTORY fd or -1 with errno and errp naming the path and the reason
 * (a symlink or a non-directory is refused as such).  The owner is the
 * caller's to check.
 */
int sh5_layout_open_user_dir(int dfd, const char *dir, const char *user,
			     struct sh5_error *errp);

/* 1 when user can name a directory below the profile directory (not
 * empty, no '/', not "." or ".."), else 0. */
int sh5_layout_user_ok(const char *user);

/*
 * Create <dir>/<user>/<fname> safely and return an open read-write fd
 * (O_CLOEXEC) on it; the caller closes it.
 *  - dir is created (0755) if missing, its parent must exist;
 *  - <user> is created 0700 and chowned to uid:gid if missing; an existing
 *    one must be a real directory (not a symlink) owned by uid;
 *  - the file is created with O_EXCL|O_NOFOLLOW, mode 0600, as the user
 *    (the calling thread's filesystem uid is switched while creating it,
 *    so root-squashed NFS works too) and owned by uid:gid.  An existing
 *    regular file owned by uid (a requeued job) is replaced; a symlink or
 *    anything else there is refused.
 * Returns fd >= 0, or -1 with errno and errp naming the path and reason.
 */
int sh5_layout_open_node_file(const char *dir, const char *user, uid_t uid,
			      gid_t gid, const char *fname,
			      struct sh5_error *errp);

#endif /* SH5_LAYOUT_H */

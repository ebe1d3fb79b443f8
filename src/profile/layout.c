/* layout.c - see layout.h */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/layout.h"

static const struct {
	uint32_t id;
	const char *name;
} special_steps[] = {
	{ SH5_STEP_BATCH, "batch" },
	{ SH5_STEP_EXTERN, "extern" },
	{ SH5_STEP_INTERACTIVE, "interactive" },
	{ SH5_STEP_PENDING, "pending" },
};

char *sh5_layout_step_name(uint32_t step_id, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(special_steps) / sizeof(special_steps[0]); i++)
		if (special_steps[i].id == step_id) {
			snprintf(buf, len, "%s", special_steps[i].name);
			return buf;
		}
	snprintf(buf, len, "%" PRIu32, step_id);
	return buf;
}

int sh5_layout_step_parse(const char *name, uint32_t *step_id)
{
	size_t i;
	char *end;
	unsigned long v;

	for (i = 0; i < sizeof(special_steps) / sizeof(special_steps[0]); i++)
		if (!strcmp(name, special_steps[i].name)) {
			*step_id = special_steps[i].id;
			return 0;
		}
	errno = 0;
	v = strtoul(name, &end, 10);
	if (!name[0] || *end || errno || v >= SH5_STEP_INTERACTIVE ||
	    name[0] == '-' || name[0] == '+') {
		errno = EINVAL;
		return -1;
	}
	*step_id = (uint32_t)v;
	return 0;
}

int sh5_layout_file_name(uint32_t job_id, uint32_t step_id,
			 const char *node, char *buf, size_t len)
{
	char step[16];
	int n;

	if (!node || !node[0] || strchr(node, '/')) {
		errno = EINVAL;
		return -1;
	}
	n = snprintf(buf, len, "%" PRIu32 "_%s_%s.h5", job_id,
		     sh5_layout_step_name(step_id, step, sizeof(step)), node);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

void sh5_layout_fsids_user(struct sh5_fsids *s, uid_t uid, gid_t gid)
{
	s->switched = geteuid() == 0;
	if (s->switched) {
		setfsgid(gid);
		setfsuid(uid);
	}
}

void sh5_layout_fsids_root(struct sh5_fsids *s)
{
	int saved = errno;

	if (s->switched) {
		setfsuid(0);
		setfsgid(0);
	}
	errno = saved;
}

int sh5_layout_user_ok(const char *user)
{
	return user && user[0] && !strchr(user, '/') && strcmp(user, ".") &&
	       strcmp(user, "..");
}

int sh5_layout_open_user_dir(int dfd, const char *dir, const char *user,
			     struct sh5_error *errp)
{
	int udfd = openat(dfd, user, O_DIRECTORY | O_RDONLY | O_NOFOLLOW |
					     O_CLOEXEC);

	if (udfd < 0)
		sh5_errprintf(errp, "cannot open %s/%s: %s%s", dir, user,
			      strerror(errno),
			      errno == ELOOP || errno == ENOTDIR ?
				      " (a symlink or not a directory: "
				      "refused)" : "");
	return udfd;
}

/* Create the file in udfd as fsuid uid (when we may switch). */
static int create_as_user(int udfd, const char *fname, uid_t uid, gid_t gid)
{
	struct sh5_fsids ids;
	int fd;

	sh5_layout_fsids_user(&ids, uid, gid);
	fd = openat(udfd, fname,
		    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	sh5_layout_fsids_root(&ids);
	return fd;
}

/* Open the profile directory dir, creating its last component if missing
 * (the admin's directory: symlinks there are allowed); -1 on error. */
static int open_profile_dir(const char *dir, struct sh5_error *errp)
{
	int dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);

	if (dfd < 0 && errno == ENOENT) {
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return sh5_errprintf(errp, "cannot create %s: %s", dir,
					     strerror(errno));
		dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	}
	if (dfd < 0)
		sh5_errprintf(errp, "cannot open %s: %s", dir, strerror(errno));
	return dfd;
}

/* Make dir/user (in dfd) for uid:gid unless it exists; *made set if we
 * made it.  -1 on error. */
static int make_user_dir(int dfd, const char *dir, const char *user,
			 uid_t uid, gid_t gid, int *made,
			 struct sh5_error *errp)
{
	if (mkdirat(dfd, user, 0700) == 0) {
		*made = 1;
		if (fchownat(dfd, user, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 &&
		    geteuid() == 0)
			return sh5_errprintf(errp, "cannot chown %s/%s: %s",
					     dir, user, strerror(errno));
	} else if (errno != EEXIST) {
		return sh5_errprintf(errp, "cannot create %s/%s: %s", dir,
				     user, strerror(errno));
	}
	return 0;
}

/* Refuse the user directory udfd unless uid owns it; -1 (EPERM) then. */
static int check_user_dir(int udfd, const char *dir, const char *user,
			  uid_t uid, int made, struct sh5_error *errp)
{
	struct stat st;
	int tries;

	/* Another step of the user starting at the same moment (another
	 * node on a shared directory, or this one) may have made the
	 * directory and not yet given it to the user: ours until then.
	 * Wait a little (at most 0.2 s) for it, never for anyone else's. */
	for (tries = 0; !made && tries < 100 && fstat(udfd, &st) == 0 &&
	     st.st_uid != uid && st.st_uid == geteuid() && geteuid() == 0;
	     tries++)
		usleep(2000);
	if (fstat(udfd, &st) < 0 || st.st_uid != uid) {
		errno = EPERM;
		return sh5_errprintf(errp, "%s/%s is not owned by uid %u: "
				     "refused", dir, user, (unsigned)uid);
	}
	return 0;
}

/* Create fname in the user directory udfd, replacing only a regular file
 * of the user's own (a requeued or restarted job); the fd or -1. */
static int create_node_file(int udfd, const char *dir, const char *user,
			    const char *fname, uid_t uid, gid_t gid,
			    struct sh5_error *errp)
{
	struct stat st;
	int tries, fd = -1;

	for (tries = 0; tries < 2; tries++) {
		fd = create_as_user(udfd, fname, uid, gid);
		if (fd >= 0 || errno != EEXIST)
			break;
		/* Something is there: replace only a regular file of the
		 * user's own (a requeued or restarted job). */
		if (fstatat(udfd, fname, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISREG(st.st_mode) || st.st_uid != uid) {
			errno = EEXIST;
			return sh5_errprintf(errp, "%s/%s/%s exists and is %s: "
					     "refused", dir, user, fname,
					     S_ISLNK(st.st_mode) ? "a symlink" :
					     !S_ISREG(st.st_mode) ?
						     "not a regular file" :
						     "owned by another user");
		}
		if (unlinkat(udfd, fname, 0) < 0)
			return sh5_errprintf(errp, "cannot replace %s/%s/%s: "
					     "%s", dir, user, fname,
					     strerror(errno));
	}
	if (fd < 0)
		sh5_errprintf(errp, "cannot create %s/%s/%s: %s", dir, user,
			      fname, strerror(errno));
	return fd;
}

int sh5_layout_open_node_file(const char *dir, const char *user, uid_t uid,
			      gid_t gid, const char *fname,
			      struct sh5_error *errp)
{
	int dfd = -1, udfd = -1, fd = -1, made = 0;
	struct stat st;

	if (!dir || dir[0] != '/') {
		errno = EINVAL;
		return sh5_errprintf(errp, "profile directory '%s' is not an "
				     "absolute path", dir ? dir : "");
	}
	if (!sh5_layout_user_ok(user)) {
		errno = EINVAL;
		return sh5_errprintf(errp, "invalid user name '%s'",
				     user ? user : "");
	}
	if ((dfd = open_profile_dir(dir, errp)) < 0 ||
	    make_user_dir(dfd, dir, user, uid, gid, &made, errp) < 0 ||
	    (udfd = sh5_layout_open_user_dir(dfd, dir, user, errp)) < 0 ||
	    check_user_dir(udfd, dir, user, uid, made, errp) < 0 ||
	    (fd = create_node_file(udfd, dir, user, fname, uid, gid,
				   errp)) < 0)
		goto error;
	/* Created as the user when we could switch; make sure either way. */
	if (fstat(fd, &st) == 0 && st.st_uid != uid && geteuid() == 0 &&
	    fchown(fd, uid, gid) < 0) {
		sh5_errprintf(errp, "cannot chown %s/%s/%s: %s", dir, user,
			      fname, strerror(errno));
		goto error;
	}
	fchmod(fd, 0600);
	close(udfd);
	close(dfd);
	return fd;
error:
	{
		int saved = errno;

		if (fd >= 0)
			close(fd);
		if (udfd >= 0)
			close(udfd);
		if (dfd >= 0)
			close(dfd);
		errno = saved;
	}
	return -1;
}

/* outfile.c - see outfile.h */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/outfile.h"

/* A path short enough to leave room for the reason in a sh5_error: long
 * paths keep their head and tail around "...". */
static const char *shown(const char *path, char *buf, size_t len)
{
	size_t n = strlen(path);

	if (n < 120 || len < 110)
		return path;
	snprintf(buf, len, "%.40s...%s", path, path + n - 60);
	return buf;
}

static const char *kind_of(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

int sh5_infile_check(const char *path, struct sh5_error *errp)
{
	char b[128];
	struct stat st;

	if (!path || !path[0]) {
		errno = EINVAL;
		return sh5_errprintf(errp, "empty input file name");
	}
	if (stat(path, &st) < 0)
		return sh5_errprintf(errp, "%s: %s", shown(path, b, sizeof(b)),
				     strerror(errno));
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		return sh5_errprintf(errp, "%s: is %s, not a regular file",
				     shown(path, b, sizeof(b)),
				     kind_of(st.st_mode));
	}
	if (access(path, R_OK) < 0)
		return sh5_errprintf(errp, "%s: %s", shown(path, b, sizeof(b)),
				     strerror(errno));
	return 0;
}

int sh5_infile_open_entry(const char *path, struct stat *st,
			  struct sh5_error *errp)
{
	char b[128];
	struct stat lst;
	int fd, e;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
			O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		if (e == ELOOP && lstat(path, &lst) == 0 &&
		    S_ISLNK(lst.st_mode)) {
			errno = ELOOP;
			return sh5_errprintf(errp, "%s: is a symbolic link "
					     "(not followed)",
					     shown(path, b, sizeof(b)));
		}
		errno = e;
		return sh5_errprintf(errp, "%s: %s", shown(path, b, sizeof(b)),
				     strerror(e));
	}
	if (fstat(fd, st) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return sh5_errprintf(errp, "%s: %s", shown(path, b, sizeof(b)),
				     strerror(e));
	}
	if (!S_ISREG(st->st_mode)) {
		e = S_ISDIR(st->st_mode) ? EISDIR : EINVAL;
		close(fd);
		errno = e;
		return sh5_errprintf(errp, "%s: is %s, not a regular file",
				     shown(path, b, sizeof(b)),
				     kind_of(st->st_mode));
	}
	return fd;
}

const char *sh5_fd_name(int fd, char *buf, size_t len)
{
	static int have_proc = -1;

	if (have_proc < 0)
		have_proc = access("/proc/self/fd", X_OK) == 0;
	if (!have_proc || fd < 0 ||
	    (size_t)snprintf(buf, len, "/proc/self/fd/%d", fd) >= len)
		return NULL;
	return buf;
}

int sh5_outfile_same(const char *path, const char *const *inputs, size_t n)
{
	struct stat a, b;
	size_t i;

	if (!path || !strcmp(path, "-") || stat(path, &a) < 0)
		return 0;
	for (i = 0; i < n; i++)
		if (inputs[i] && stat(inputs[i], &b) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return 1;
	return 0;
}

static void reset(struct sh5_outfile *o)
{
	free(o->path);
	free(o->tmp);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}

/* Does path go through a symbolic link into /proc (/dev/stdout ->
 * /proc/self/fd/1, /dev/fd/N)?  Renaming over such a name would
 * replace the link, not write the file behind it. */
static int links_to_proc(const char *path)
{
	char lnk[PATH_MAX];
	ssize_t n;

	if (!strncmp(path, "/proc/", 6) || !strncmp(path, "/dev/fd/", 8))
		return 1;
	if ((n = readlink(path, lnk, sizeof(lnk) - 1)) <= 0)
		return 0;
	lnk[n] = '\0';
	return !strncmp(lnk, "/proc/", 6) || !strncmp(lnk, "/dev/fd/", 8);
}

/* Is path the file of our standard output (/dev/stdout, /dev/fd/1,
 * /proc/self/fd/1, or the same file by any name while stdout is not a
 * terminal)? */
static int is_our_stdout(const char *path)
{
	struct stat a, b;

	if (stat(path, &a) < 0 || fstat(STDOUT_FILENO, &b) < 0)
		return 0;
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return 0;
	/* Only through a /proc link: a regular file that happens to be
	 * our stdout by its own name keeps the rename discipline. */
	return !S_ISREG(a.st_mode) || links_to_proc(path);
}

/* The file a dangling symbolic link names (one level), relative to the
 * link's directory; NULL if none. */
static char *dangling_target(const char *path)
{
	char lnk[PATH_MAX], *t;
	const char *slash = strrchr(path, '/');
	ssize_t n = readlink(path, lnk, sizeof(lnk) - 1);
	size_t dl;

	if (n <= 0)
		return NULL;
	lnk[n] = '\0';
	dl = slash && lnk[0] != '/' ? (size_t)(slash - path) + 1 : 0;
	if (!(t = malloc(dl + (size_t)n + 1)))
		return NULL;
	memcpy(t, path, dl);
	memcpy(t + dl, lnk, (size_t)n + 1);
	return t;
}

/* Outputs written in place: our standard output, a device or FIFO, a
 * file behind /dev/fd/N.  1 when path is one (o->fd open), 0 when it is
 * to be replaced through a temporary file, -1 with errp set (a
 * directory, or it cannot be opened). */
static int open_in_place(struct sh5_outfile *o, const char *path,
			 struct sh5_error *errp)
{
	char b[128];
	struct stat st;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		return sh5_errprintf(errp, "%s: is a directory",
				     shown(path, b, sizeof(b)));
	}
	if (is_our_stdout(path)) {
		/* /dev/stdout, /proc/self/fd/1: our standard output. */
		o->is_stdout = 1;
		o->fd = STDOUT_FILENO;
		return 1;
	}
	if (stat(path, &st) == 0 && (!S_ISREG(st.st_mode) ||
				     links_to_proc(path))) {
		/* A device or FIFO, or a file behind /dev/fd/N: written in
		 * place, never replaced (a rename would replace the link). */
		o->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY |
			     (S_ISREG(st.st_mode) ? O_TRUNC : 0));
		if (o->fd < 0)
			return sh5_errprintf(errp, "%s: %s",
					     shown(path, b, sizeof(b)),
					     strerror(errno));
		return 1;
	}
	return 0;
}

/* The temporary file o->tmp beside path (open as o->fd, mode 0666 less
 * the umask).  0, or -1 with errno and errp set. */
static int open_tmp(struct sh5_outfile *o, const char *path,
		    struct sh5_error *errp)
{
	char b[128];
	const char *base, *slash;
	mode_t um;
	size_t dl, len;

	slash = strrchr(path, '/');
	base = slash ? slash + 1 : path;
	dl = slash ? (size_t)(slash - path) + 1 : 0;
	if (!base[0]) {
		errno = EISDIR;
		return sh5_errprintf(errp, "%s: names a directory",
				     shown(path, b, sizeof(b)));
	}
	len = dl + strlen(base) + 16;
	if (!(o->tmp = malloc(len))) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "%s: out of memory",
				     shown(path, b, sizeof(b)));
	}
	snprintf(o->tmp, len, "%.*s.%s.tmp.XXXXXX", (int)dl, path, base);
	if ((o->fd = mkostemp(o->tmp, O_CLOEXEC)) < 0) {
		sh5_errprintf(errp, "%s: cannot create a temporary file "
			      "beside it: %s", shown(path, b, sizeof(b)),
			      strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	um = umask(0);
	umask(um);
	if (fchmod(o->fd, 0666 & ~um) < 0)
		return sh5_errprintf(errp, "%s: %s", o->tmp, strerror(errno));
	return 0;
}

int sh5_outfile_open(struct sh5_outfile *o, const char *path,
		     const char *const *inputs, size_t n,
		     struct sh5_error *errp)
{
	char b[128];
	int rc;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	if (!path || !path[0]) {
		errno = EINVAL;
		return sh5_errprintf(errp, "empty output file name");
	}
	if (sh5_outfile_same(path, inputs, n)) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: is also an input; refusing to "
				     "overwrite it", shown(path, b, sizeof(b)));
	}
	if (!(o->path = strdup(path))) {
		errno = ENOMEM;
		sh5_errprintf(errp, "%s: out of memory",
			      shown(path, b, sizeof(b)));
		goto error;
	}
	if (!strcmp(path, "-")) {
		o->is_stdout = 1;
		o->fd = STDOUT_FILENO;
		return 0;
	}
	if ((rc = open_in_place(o, path, errp)) < 0)
		goto error;
	if (rc)
		return 0;
	{
		/* A symbolic link to a file: the file is replaced, not the
		 * link. */
		struct stat lst;
		char *real;

		if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) &&
		    ((real = realpath(path, NULL)) ||
		     (real = dangling_target(path)))) {
			free(o->path);
			o->path = real;
			path = real;
		}
	}
	if (open_tmp(o, path, errp) < 0)
		goto error;
	return 0;
error:
	sh5_outfile_abort(o);
	return -1;
}

FILE *sh5_outfile_fp(struct sh5_outfile *o)
{
	if (o->fp)
		return o->fp;
	if (o->is_stdout)
		return o->fp = stdout;
	if (o->fd < 0) {
		errno = EBADF;
		return NULL;
	}
	return o->fp = fdopen(o->fd, "w");
}

int sh5_outfile_commit(struct sh5_outfile *o, struct sh5_error *errp)
{
	char b[128];
	const char *what = "write failed";
	int e = 0;

	if (o->fp && fflush(o->fp) != 0)
		e = errno ? errno : EIO;
	if (!e && o->tmp && fsync(o->fd) < 0)
		e = errno;
	if (o->is_stdout) {
		o->fp = NULL;
		o->fd = -1;
	} else if (o->fp) {
		if (fclose(o->fp) != 0 && !e)
			e = errno ? errno : EIO;
		o->fp = NULL;
		o->fd = -1;
	} else if (o->fd >= 0) {
		if (close(o->fd) < 0 && !e)
			e = errno;
		o->fd = -1;
	}
	if (!e && o->tmp && rename(o->tmp, o->path) < 0) {
		e = errno;
		what = "cannot rename the temporary file over it";
	}
	if (e) {
		sh5_errprintf(errp, "%s: %s: %s", shown(o->path, b, sizeof(b)),
			      what, strerror(e));
		sh5_outfile_abort(o);
		errno = e;
		return -1;
	}
	if (o->tmp) {
		/* The rename is durable once the directory is synced. */
		char *dir = strdup(o->path), *s;
		int dfd;

		if (dir) {
			s = strrchr(dir, '/');
			if (s)
				s[s == dir ? 1 : 0] = '\0';
			dfd = open(s ? dir : ".", O_RDONLY | O_DIRECTORY |
				   O_CLOEXEC);
			if (dfd >= 0) {
				fsync(dfd);
				close(dfd);
			}
			free(dir);
		}
	}
	reset(o);
	return 0;
}

void sh5_outfile_abort(struct sh5_outfile *o)
{
	int e = errno;

	if (!o)
		return;
	if (o->fp && !o->is_stdout)
		fclose(o->fp);
	else if (o->fd >= 0 && !o->is_stdout)
		close(o->fd);
	if (o->tmp)
		unlink(o->tmp);
	reset(o);
	errno = e;
}

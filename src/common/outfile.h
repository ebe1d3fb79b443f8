/*
 * outfile.h - one output discipline for every command, and the checks
 * every input gets before HDF5 or a parser opens it.
 *
 * An output is written to a temporary file beside its target
 * (".NAME.tmp.XXXXXX", same directory, so the rename is atomic) and
 * renamed over the target only after it is complete and synced.  A
 * target that exists and is not a regular file (a character device such
 * as /dev/null or /dev/full, a FIFO, /dev/stdout) is written in place and
 * never renamed over; "-" is standard output.  An output that is the same
 * file as one of the inputs is refused before anything is opened for
 * writing.  Any failure removes the temporary file; errors name the
 * output and give strerror(errno).
 */
#ifndef SH5_OUTFILE_H
#define SH5_OUTFILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/error.h"

struct sh5_outfile {
	char *path;	/* the target, as given (owned) */
	char *tmp;	/* the temporary file; NULL when writing in place */
	int fd;		/* -1 when closed */
	FILE *fp;	/* stdio over fd, NULL until sh5_outfile_fp() */
	int is_stdout;
};

/*
 * Check that path is a readable regular file before anything parses it:
 * a FIFO, a device, a directory, a dangling link or a symlink loop gets
 * an error at once ("PATH: is a FIFO, not a regular file").  0, or -1
 * with errno set and errp filled (the text names path).
 */
int sh5_infile_check(const char *path, struct sh5_error *errp);

/*
 * Open an input that was found by listing a directory the job's user can
 * write (a node-step file in a profile directory): the entry itself,
 * read-only, never what a symlink names, without blocking on a FIFO or a
 * device, and only a regular file.  *st receives its fstat.  The
 * descriptor (close-on-exec), or -1 with errno set and errp filled
 * ("PATH: is a symbolic link (not followed)", "PATH: is a FIFO, not a
 * regular file", "PATH: No such file or directory").
 */
int sh5_infile_open_entry(const char *path, struct stat *st,
			  struct sh5_error *errp);

/*
 * A name that opens exactly the file fd is open on ("/proc/self/fd/N"),
 * for a library that opens files by name (HDF5): what it opens is the
 * file fd was checked on, whatever has been renamed over its path since.
 * buf, or NULL when /proc is not mounted (the caller then opens by path
 * and relies on comparing the file's identity afterwards).
 */
const char *sh5_fd_name(int fd, char *buf, size_t len);

/*
 * Does path name the same file as any of inputs[0..n)?  1 yes, 0 no (or
 * path does not exist).  NULL entries are skipped.
 */
int sh5_outfile_same(const char *path, const char *const *inputs, size_t n);

/*
 * Open the output path: refuses (EEXIST... errno EINVAL) an output that
 * is one of inputs[0..n); "-" is stdout; an existing non-regular target
 * is opened in place (O_WRONLY, no truncation); otherwise a temporary
 * file is created beside it with mode 0666 & ~umask.  0, or -1 with errno
 * set and errp filled (the text names path).  o is valid for
 * sh5_outfile_abort() after either result.
 */
int sh5_outfile_open(struct sh5_outfile *o, const char *path,
		     const char *const *inputs, size_t n,
		     struct sh5_error *errp);

/* A stdio stream over the output (created once, owned by o).  NULL with
 * errno set on failure. */
FILE *sh5_outfile_fp(struct sh5_outfile *o);

/*
 * Finish: flush, fsync a regular file, close, rename the temporary file
 * over the target and sync its directory.  0, or -1 with errno set and
 * errp filled ("PATH: write failed: No space left on device"); on failure
 * the temporary file is removed.  o is released either way.
 */
int sh5_outfile_commit(struct sh5_outfile *o, struct sh5_error *errp);

/* Give up: close and remove the temporary file (the target is untouched).
 * NULL-safe, idempotent; keeps errno. */
void sh5_outfile_abort(struct sh5_outfile *o);

#endif /* SH5_OUTFILE_H */

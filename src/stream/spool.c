/* spool.c - the on-disk spool of a stream: owner lock, scans that
 * adopt dead owners' files and enforce the bound, spool files written and
 * read back (see stream.h, stream_int.h). */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stream/stream_int.h"

/* ------------------------------------------------------------- spool */

/*
 * Spool I/O and slurmstepd's privilege switches.  slurmstepd (real uid 0)
 * sets the effective uid of every thread to the job user for moments
 * (glibc broadcasts seteuid), and the kernel moves the filesystem uid
 * with it: a spool operation of the sender would then be refused
 * (EACCES) in the root-owned 0700 spool directory.  Before each spool
 * operation the sender sets its own filesystem ids back to the real ones
 * (setfsuid acts on the calling thread only); a switch that lands between
 * that and the operation still fails it, so every caller treats a failure
 * as transient: the batch stays in memory and the operation is tried
 * again SPOOL_RETRY_NS later.
 */

static int (*fault_hook)(const char *op, const char *path);

void sh5_stream_test_fault(int (*hook)(const char *op, const char *path))
{
	__atomic_store_n(&fault_hook, hook, __ATOMIC_SEQ_CST);
}

/* Prepare a spool operation; 1 (errno set) when a test fault refuses it. */
static int sp_enter(const char *op, const char *path)
{
	int (*hook)(const char *, const char *) =
		__atomic_load_n(&fault_hook, __ATOMIC_SEQ_CST);
	int e;

	if (getuid() == 0 && geteuid() != 0) {
		setfsgid(getgid());
		setfsuid(0);
	}
	if (hook && (e = hook(op, path)) != 0) {
		errno = e;
		return 1;
	}
	return 0;
}

static int sp_open(const char *path, int flags, mode_t mode)
{
	return sp_enter("open", path) ? -1 : open(path, flags, mode);
}

static int sp_rename(const char *from, const char *to)
{
	return sp_enter("rename", to) ? -1 : rename(from, to);
}

int sp_unlink(const char *path)
{
	return sp_enter("unlink", path) ? -1 : unlink(path);
}

static int sp_mkdir(const char *path, mode_t mode)
{
	return sp_enter("mkdir", path) ? -1 : mkdir(path, mode);
}

static DIR *sp_opendir(const char *path)
{
	return sp_enter("opendir", path) ? NULL : opendir(path);
}

/* Parse "<ts>-<owner>-<tag>-<n>.<ext>".  0 ok, -1 not a spool file. */
int spool_name_parse(const char *name, struct spool_name *sn)
{
	const char *p = name, *q;
	char *end;
	size_t l;

	if (!isdigit((unsigned char)*p))
		return -1;
	errno = 0;
	sn->ts = strtoll(p, &end, 10);
	if (errno || *end != '-' || end - p != 20)
		return -1;
	p = end + 1;
	q = strchr(p, '-');
	if (!q || q == p || (size_t)(q - p) >= sizeof(sn->owner))
		return -1;
	memcpy(sn->owner, p, (size_t)(q - p));
	sn->owner[q - p] = '\0';
	p = q + 1;
	q = strrchr(p, '-');
	if (!q || q == p || (size_t)(q - p) >= sizeof(sn->tag))
		return -1;
	memcpy(sn->tag, p, (size_t)(q - p));
	sn->tag[q - p] = '\0';
	p = q + 1;
	if (!isdigit((unsigned char)*p))
		return -1;
	sn->n = strtoull(p, &end, 10);
	if (*end != '.')
		return -1;
	l = strlen(end + 1);
	if (l == 0 || l >= sizeof(sn->ext))
		return -1;
	memcpy(sn->ext, end + 1, l + 1);
	return 0;
}

int path_in(const struct sh5_stream *s, char *out, size_t size,
	    const char *name)
{
	int n = snprintf(out, size, "%s/%s", s->spool_dir, name);

	return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

/* A failing spool operation: note the error, try again later. */
void spool_failed(struct sh5_stream *s, int e)
{
	s->spool_retry_at = mono_ns() + SPOOL_RETRY_NS;
	set_error(s, EK_SPOOL + e, "spool %s: %s", s->spool_dir, strerror(e));
	errno = e;
}

/* Create the spool directory (last component) when missing and take the
 * owner lock "<owner>.lock" (made under a temporary name, renamed into
 * place once locked).  Replaces a lock whose file vanished.  0 or -1. */
int lock_create(struct sh5_stream *s)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	struct stat sb;
	int fd, e;

	if (sp_mkdir(s->spool_dir, 0700) < 0 && errno != EEXIST)
		return -1;
	if (sp_enter("stat", s->spool_dir) || stat(s->spool_dir, &sb) < 0)
		return -1;
	if (!S_ISDIR(sb.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.lock", s->spool_dir, s->owner) >=
		    (int)sizeof(tmp) ||
	    snprintf(path, sizeof(path), "%s/%s.lock", s->spool_dir,
		     s->owner) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	sp_unlink(tmp); /* a leftover of an earlier failed attempt */
	fd = sp_open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX) < 0 || sp_rename(tmp, path) < 0) {
		e = errno;
		close(fd);
		sp_unlink(tmp);
		errno = e;
		return -1;
	}
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	s->lock_fd = fd;
	/* what was known of the directory may be stale: look again */
	s->next_scan = 0;
	return 0;
}

/*
 * Is the spool usable now?  It is when the directory holds our lock file;
 * otherwise (never created, or the directory vanished) it is created
 * again, at most every SPOOL_RETRY_NS.  1 yes, 0 no (errno set).
 */
static int spool_ready(struct sh5_stream *s)
{
	struct stat sb;

	if (!s->spool_dir) {
		errno = ENOENT;
		return 0;
	}
	if (s->lock_fd >= 0 && fstat(s->lock_fd, &sb) == 0 && sb.st_nlink > 0)
		return 1;
	if (mono_ns() < s->spool_retry_at) {
		errno = EAGAIN;
		return 0;
	}
	if (lock_create(s) == 0)
		return 1;
	spool_failed(s, errno);
	return 0;
}

/* Is the owner of a lock file gone?  When it is and fdp is not NULL,
 * *fdp keeps the lock (close it after adopting).  1 dead, 0 alive (or
 * unknown now). */
static int owner_dead(struct sh5_stream *s, const char *owner, int *fdp)
{
	char path[PATH_MAX], name[80];
	int fd;

	snprintf(name, sizeof(name), "%s.lock", owner);
	if (path_in(s, path, sizeof(path), name) < 0)
		return 0;
	fd = sp_open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return errno == ENOENT;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return 0;
	}
	if (fdp)
		*fdp = fd;
	else
		close(fd);
	return 1;
}

/* Was this (delivered) spool file's removal postponed? */
int undeleted(const struct sh5_stream *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nundel; i++)
		if (!strcmp(s->undel[i], name))
			return 1;
	return 0;
}

/* Remove delivered spool files whose removal failed before. */
void undel_retry(struct sh5_stream *s)
{
	char path[PATH_MAX];
	size_t i = 0;

	while (i < s->nundel) {
		if (path_in(s, path, sizeof(path), s->undel[i]) < 0 ||
		    sp_unlink(path) == 0 || errno == ENOENT) {
			memmove(s->undel[i], s->undel[i + 1],
				(s->nundel - i - 1) * sizeof(s->undel[0]));
			s->nundel--;
		} else {
			i++;
		}
	}
}

struct dead_owner {
	char owner[48];
	int dead;
	int fd;
};

/* What a scan of the spool directory found. */
struct scan {
	struct dead_owner owners[16]; /* owners of other files, looked up */
	size_t nowners;
	uint64_t total;	   /* bytes of all spool files */
	size_t own;	   /* files of this stream (adopted ones included) */
	char oldest[256];  /* the oldest of them */
};

/* Is this owner of spool files gone?  Looked up once per scan, for 16
 * owners at most (later ones count as alive until the next scan). */
static int scan_owner_dead(struct sh5_stream *s, struct scan *sc,
			   const char *owner)
{
	size_t i;

	for (i = 0; i < sc->nowners; i++)
		if (!strcmp(sc->owners[i].owner, owner))
			break;
	if (i == sc->nowners) {
		if (sc->nowners == 16)
			return 0;
		snprintf(sc->owners[i].owner, sizeof(sc->owners[i].owner),
			 "%s", owner);
		sc->owners[i].fd = -1;
		sc->owners[i].dead = owner_dead(s, owner, &sc->owners[i].fd);
		sc->nowners++;
	}
	return sc->owners[i].dead;
}

/* Adopt spool file path (parsed as sn) when its owner is gone: rename it
 * to a name of this stream, returned in name.  0 adopted, -1 not. */
static int scan_adopt(struct sh5_stream *s, struct scan *sc,
		      const char *path, const struct spool_name *sn,
		      char *name, size_t size)
{
	char path2[PATH_MAX];
	int len;

	if (!scan_owner_dead(s, sc, sn->owner))
		return -1;
	len = snprintf(name, size, "%020" PRId64 "-%s-%s_%s-%" PRIu64 ".%s",
		       sn->ts, s->owner, sn->owner, sn->tag, sn->n, sn->ext);
	if (len < 0 || (size_t)len >= size ||
	    path_in(s, path2, sizeof(path2), name) < 0)
		return -1;
	if (sp_rename(path, path2) < 0) {
		/* gone (another stream adopted it) or refused for now:
		 * look again soon */
		if (errno != ENOENT)
			s->next_scan = mono_ns() + SPOOL_RETRY_NS;
		return -1;
	}
	return 0;
}

/* One directory entry of a scan: a temporary file is removed when its
 * writer is gone, a spool file counted (and adopted, or kept as own). */
static void scan_entry(struct sh5_stream *s, struct scan *sc,
		       const char *dname)
{
	char path[PATH_MAX], name[256];
	struct spool_name sn;
	struct stat sb;
	int len, tmpfile = dname[0] == '.';

	if (spool_name_parse(dname + tmpfile, &sn) < 0)
		return;
	if (path_in(s, path, sizeof(path), dname) < 0 ||
	    lstat(path, &sb) < 0 || !S_ISREG(sb.st_mode))
		return;
	if (tmpfile) {
		/* a write that failed half-way (its batch was kept in
		 * memory): remove it when its writer is gone or is this
		 * stream (not writing now) */
		if (!strcmp(sn.owner, s->owner) ||
		    owner_dead(s, sn.owner, NULL))
			sp_unlink(path);
		return;
	}
	sc->total += (uint64_t)sb.st_size;
	if (strcmp(sn.ext, s->ext))
		return;
	if (strcmp(sn.owner, s->owner)) {
		if (scan_adopt(s, sc, path, &sn, name, sizeof(name)) < 0)
			return;
	} else {
		len = snprintf(name, sizeof(name), "%s", dname);
		if (len < 0 || (size_t)len >= sizeof(name))
			return;
		if (undeleted(s, name))
			return; /* delivered already */
	}
	sc->own++;
	if (!sc->oldest[0] || strcmp(name, sc->oldest) < 0)
		snprintf(sc->oldest, sizeof(sc->oldest), "%s", name);
}

/* After a scan: remove the lock files of the dead owners adopted from
 * and release them. */
static void scan_release(struct sh5_stream *s, struct scan *sc)
{
	char path[PATH_MAX], name[256];
	size_t i;
	int len;

	for (i = 0; i < sc->nowners; i++) {
		if (sc->owners[i].fd < 0)
			continue;
		len = snprintf(name, sizeof(name), "%s.lock",
			       sc->owners[i].owner);
		if (len > 0 && (size_t)len < sizeof(name) &&
		    path_in(s, path, sizeof(path), name) == 0)
			sp_unlink(path);
		close(sc->owners[i].fd);
	}
}

/* Enforce the bound: delete the oldest spool files (any owner) until
 * evict more bytes fit under it. */
static void spool_evict(struct sh5_stream *s, uint64_t evict)
{
	char path[PATH_MAX];
	struct spool_name sn;
	struct dirent *de;
	struct stat sb;
	DIR *d;

	while (evict && s->spool_bytes + evict > s->spool_max) {
		char victim[256] = "";

		d = sp_opendir(s->spool_dir);
		if (!d)
			return;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.' ||
			    spool_name_parse(de->d_name, &sn) < 0 ||
			    undeleted(s, de->d_name))
				continue;
			if (!victim[0] || strcmp(de->d_name, victim) < 0)
				snprintf(victim, sizeof(victim), "%s",
					 de->d_name);
		}
		closedir(d);
		if (!victim[0] || spool_name_parse(victim, &sn) < 0 ||
		    path_in(s, path, sizeof(path), victim) < 0)
			return;
		if (lstat(path, &sb) < 0 || sp_unlink(path) < 0)
			return;
		s->spool_bytes -= (uint64_t)sb.st_size < s->spool_bytes ?
					  (uint64_t)sb.st_size :
					  s->spool_bytes;
		pthread_mutex_lock(&s->lock);
		s->st.dropped_spool += sn.n;
		pthread_mutex_unlock(&s->lock);
		if (!strcmp(sn.owner, s->owner) && s->own_files)
			s->own_files--;
		if (!strcmp(victim, s->oldest)) {
			/* find the new oldest own file */
			spool_scan(s, 0);
		}
	}
}

/*
 * Scan the spool directory: adopt files of dead owners (same format),
 * remove their lock files and the temporary files of dead owners and of
 * this stream, count this stream's files and bytes of all spool files,
 * remember the oldest own file.  With evict > 0, afterwards delete
 * oldest spool files until evict more bytes fit under the bound.  When
 * the directory cannot be read, what was known stays (tried again soon).
 */
void spool_scan(struct sh5_stream *s, uint64_t evict)
{
	struct scan sc;
	struct dirent *de;
	DIR *d;

	if (!spool_ready(s)) {
		s->next_scan = mono_ns() + SPOOL_RETRY_NS;
		return;
	}
	s->next_scan = mono_ns() + SCAN_PERIOD_NS;
	undel_retry(s);
	d = sp_opendir(s->spool_dir);
	if (!d) {
		s->next_scan = mono_ns() + SPOOL_RETRY_NS;
		spool_failed(s, errno);
		return;
	}
	memset(&sc, 0, sizeof(sc));
	while ((de = readdir(d)))
		scan_entry(s, &sc, de->d_name);
	closedir(d);
	scan_release(s, &sc);
	s->own_files = sc.own;
	s->spool_bytes = sc.total;
	memcpy(s->oldest, sc.oldest, sizeof(sc.oldest));
	spool_evict(s, evict);
}

/* Write batch b as a spool file.  0 ok (b->held cleared), -1 (errno set,
 * error noted, retried not before spool_retry_at): b is untouched, the
 * caller keeps it. */
int spool_write(struct sh5_stream *s, struct batch *b)
{
	char name[256], path[PATH_MAX], tmp[PATH_MAX];
	size_t off = 0;
	ssize_t w;
	int fd, e;

	if (!spool_ready(s))
		return -1;
	if (b->b.len > s->spool_max) {
		set_error(s, EK_SPOOL + EFBIG,
			  "spool %s: batch of %zu bytes exceeds the bound",
			  s->spool_dir, b->b.len);
		s->spool_retry_at = mono_ns() + SPOOL_RETRY_NS;
		errno = EFBIG;
		return -1;
	}
	if (s->spool_bytes + b->b.len > s->spool_max)
		spool_scan(s, b->b.len);
	snprintf(name, sizeof(name), "%020" PRId64 "-%s-%010" PRIu64 "-%" PRIu64
		 ".%s", b->ts, s->owner, ++s->seq, b->n, s->ext);
	if (path_in(s, path, sizeof(path), name) < 0) {
		errno = ENAMETOOLONG;
		goto error;
	}
	snprintf(tmp, sizeof(tmp), "%s/.%s", s->spool_dir, name);
	fd = sp_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		goto error;
	while (off < b->b.len) {
		w = write(fd, b->b.p + off, b->b.len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			goto error_fd;
		}
		off += (size_t)w;
	}
	if (close(fd) < 0) {
		fd = -1;
		goto error_fd;
	}
	fd = -1;
	if (sp_rename(tmp, path) < 0)
		goto error_fd;
	s->spool_bytes += b->b.len;
	s->own_files++;
	if (!s->oldest[0] || strcmp(name, s->oldest) < 0)
		snprintf(s->oldest, sizeof(s->oldest), "%s", name);
	pthread_mutex_lock(&s->lock);
	s->st.spooled += b->n;
	pthread_mutex_unlock(&s->lock);
	b->held = 0;
	b->b.len = 0;
	return 0;
error_fd:
	e = errno;
	if (fd >= 0)
		close(fd);
	/* may fail too; then the next scan removes it */
	sp_unlink(tmp);
	errno = e;
error:
	spool_failed(s, errno);
	return -1;
}

/* At close: spool_write() tried again until the hard deadline. */
int spool_write_final(struct sh5_stream *s, struct batch *b)
{
	struct timespec pause = { 0, FINAL_RETRY_NS };
	int64_t end;

	pthread_mutex_lock(&s->lock);
	end = s->hard_end;
	pthread_mutex_unlock(&s->lock);
	if (!s->spool_dir)
		return -1;
	while (mono_ns() < end) {
		s->spool_retry_at = 0;
		if (spool_write(s, b) == 0)
			return 0;
		if (mono_ns() + FINAL_RETRY_NS >= end)
			break;
		nanosleep(&pause, NULL);
	}
	return -1;
}

void spool_close(struct sh5_stream *s)
{
	char path[PATH_MAX], name[80];

	if (s->lock_fd < 0)
		return;
	snprintf(name, sizeof(name), "%s.lock", s->owner);
	if (path_in(s, path, sizeof(path), name) == 0)
		sp_unlink(path);
	close(s->lock_fd);
	s->lock_fd = -1;
}

/* Read spool file name into s->rd.  0, or -1 with errno: ENOENT it is
 * gone, EFBIG too large, EACCES/EPERM/... refused for now. */
int spool_read(struct sh5_stream *s, const char *name)
{
	char path[PATH_MAX];
	struct stat sb;
	ssize_t r;
	int fd, e;

	s->rd.len = 0;
	if (path_in(s, path, sizeof(path), name) < 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = sp_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) < 0)
		goto error;
	if (sb.st_size > MAX_SPOOL_FILE) {
		errno = EFBIG;
		goto error;
	}
	if (buf_reserve(&s->rd, (size_t)sb.st_size) < 0) {
		errno = ENOMEM;
		goto error;
	}
	while ((r = read(fd, s->rd.p + s->rd.len,
			 s->rd.cap - s->rd.len - 1)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto error;
		s->rd.len += (size_t)r;
		if (s->rd.len + 1 >= s->rd.cap &&
		    buf_reserve(&s->rd, 4096) < 0) {
			errno = ENOMEM;
			goto error;
		}
	}
	close(fd);
	return 0;
error:
	e = errno;
	close(fd);
	s->rd.len = 0;
	errno = e;
	return -1;
}

/* dwrite.c - see dwrite.h */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dwrite.h"

struct sh5_dwrite {
	int fd;
	int flags;         /* fd's status flags before O_DIRECT */
	int direct;        /* O_DIRECT set on fd (the writer clears it) */
	char *blk[2];
	size_t cap;
	int cur;           /* the block the caller fills */
	off_t off;         /* the file offset of blk[cur][0] (aligned) */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* The job in flight, under mu: busy until written. */
	const char *jp;
	size_t jlen;
	off_t joff;
	int busy, quit;
	int err;           /* errno of the first failed write */
};

/* len bytes of p at off: direct while fd allows it, then the ordinary
 * way (a file system or a length O_DIRECT refuses).  0, or an errno. */
static int put(struct sh5_dwrite *w, const char *p, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pwrite(w->fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL && w->direct) {
			if (fcntl(w->fd, F_SETFL, w->flags) < 0)
				return errno;
			w->direct = 0;
			continue;
		}
		if (n < 0)
			return errno;
		if (n == 0)
			return EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static void *writer(void *arg)
{
	struct sh5_dwrite *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->busy && !w->quit)
			pthread_cond_wait(&w->cv, &w->mu);
		if (!w->busy)
			break;
		if (!w->err) {
			const char *p = w->jp;
			size_t len = w->jlen;
			off_t off = w->joff;
			int e;

			pthread_mutex_unlock(&w->mu);
			e = put(w, p, len, off);
			pthread_mutex_lock(&w->mu);
			if (e && !w->err)
				w->err = e;
		}
		w->busy = 0;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Wait until no write is in flight (mu held). */
static void wait_idle(struct sh5_dwrite *w)
{
	while (w->busy)
		pthread_cond_wait(&w->cv, &w->mu);
}

/* The bytes of fd before pos from its last aligned offset into b; a
 * hole or the end of the file reads as zeros.  0, or -1 with errno. */
static int read_head(int fd, char *b, size_t head, off_t base)
{
	size_t got = 0;

	while (got < head) {
		ssize_t n = pread(fd, b + got, head - got, base + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	memset(b + got, 0, head - got);
	return 0;
}

static void release(struct sh5_dwrite *w)
{
	free(w->blk[0]);
	free(w->blk[1]);
	free(w);
}

struct sh5_dwrite *sh5_dwrite_start(int fd, size_t cap, char **buf,
				    size_t *len)
{
	struct sh5_dwrite *w;
	struct stat st;
	sigset_t all, old;
	off_t pos;
	size_t head;
	int e, flags;

	if (fstat(fd, &st) < 0 || (flags = fcntl(fd, F_GETFL)) < 0 ||
	    (pos = lseek(fd, 0, SEEK_CUR)) < 0)
		return NULL;
	/* Appending ignores pwrite's offset; a read-only or write-only
	 * descriptor could not read the partial block back. */
	if (cap <= SH5_DWRITE_ALIGN || !S_ISREG(st.st_mode) ||
	    (flags & O_APPEND) || (flags & O_ACCMODE) != O_RDWR) {
		errno = EINVAL;
		return NULL;
	}
	if (!(w = calloc(1, sizeof(*w))))
		return NULL;
	w->fd = fd;
	w->flags = flags;
	w->cap = cap;
	head = (size_t)(pos % SH5_DWRITE_ALIGN);
	w->off = pos - (off_t)head;
	if ((e = posix_memalign((void **)&w->blk[0], SH5_DWRITE_ALIGN,
				cap)) != 0 ||
	    (e = posix_memalign((void **)&w->blk[1], SH5_DWRITE_ALIGN,
				cap)) != 0) {
		release(w);
		errno = e;
		return NULL;
	}
	if (read_head(fd, w->blk[0], head, w->off) < 0)
		goto error;
	if (fcntl(fd, F_SETFL, flags | O_DIRECT) < 0)
		goto error;
	w->direct = 1;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	/* The writer takes no signals: they stay the caller's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&w->th, NULL, writer, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		fcntl(fd, F_SETFL, flags);
		release(w);
		errno = e;
		return NULL;
	}
	*buf = w->blk[0];
	*len = head;
	return w;
error:
	e = errno;
	release(w);
	errno = e;
	return NULL;
}

int sh5_dwrite_submit(struct sh5_dwrite *w, char **buf, size_t *len)
{
	size_t whole = *len - *len % SH5_DWRITE_ALIGN, rest = *len - whole;
	char *next = w->blk[!w->cur];
	int e;

	pthread_mutex_lock(&w->mu);
	/* The other block is free once the write in flight (its own) has
	 * ended. */
	wait_idle(w);
	if (whole && !w->err) {
		memcpy(next, *buf + whole, rest);
		w->jp = *buf;
		w->jlen = whole;
		w->joff = w->off;
		w->busy = 1;
		pthread_cond_broadcast(&w->cv);
		w->off += (off_t)whole;
		w->cur = !w->cur;
		*buf = next;
		*len = rest;
	}
	e = w->err;
	pthread_mutex_unlock(&w->mu);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

int sh5_dwrite_finish(struct sh5_dwrite *w, const char *buf, size_t len)
{
	size_t whole;
	int e;

	if (!w)
		return 0;
	whole = len - len % SH5_DWRITE_ALIGN;
	pthread_mutex_lock(&w->mu);
	wait_idle(w);
	w->quit = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	e = w->err;
	/* The last aligned blocks directly, the partial one the ordinary
	 * way (O_DIRECT cannot write it). */
	if (!e && whole)
		e = put(w, buf, whole, w->off);
	if (w->direct && fcntl(w->fd, F_SETFL, w->flags) < 0 && !e)
		e = errno;
	w->direct = 0;
	if (!e)
		e = put(w, buf + whole, len - whole, w->off + (off_t)whole);
	if (lseek(w->fd, w->off + (off_t)len, SEEK_SET) < 0 && !e)
		e = errno;
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	release(w);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

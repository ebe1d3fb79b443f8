/*
 * evlog_write.c - the event log's spill file and blocks: created at the
 * first full block, blocks sealed and written with pwrite() by the
 * recording thread or a writer thread (or only sealed when mapped).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "events/evlog_int.h"

/* ---------------------------------------------------------------- file */

static int write_all(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	ssize_t w;

	while (len > 0) {
		w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static int create_file(void)
{
	struct sh5ev_file_header h;
	struct statfs sfs;
	int fd;

	fd = open(L.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0)
		return -1;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SH5EV_MAGIC, sizeof(h.magic));
	h.byte_order = SH5EV_BYTE_ORDER;
	h.version = SH5EV_FORMAT_VERSION;
	h.header_size = SH5EV_HEADER_SIZE;
	h.block_size = L.block_size;
	h.rec_size = SH5EV_REC_SIZE;
	h.task = L.task;
	h.pid = (uint32_t)L.pid;
	h.flags = L.use_map ? SH5EV_HF_AHEAD : 0;
	h.created_ns = gettime_ns();
	snprintf(h.prefix, sizeof(h.prefix), "%s", L.prefix);
	snprintf(h.lib_version, sizeof(h.lib_version), "%s", PACKAGE_VERSION);
	h.checksum = sh5ev_checksum(&h, offsetof(struct sh5ev_file_header,
						 checksum));
	if (write_all(fd, &h, sizeof(h)) < 0) {
		int e = errno;

		close(fd);
		unlink(L.path);
		errno = e;
		return -1;
	}
	L.fd = fd;
	L.zero_fill = !(fstatfs(fd, &sfs) == 0 &&
			(unsigned long)sfs.f_type == TMPFS_MAGIC_);
	return 0;
}

/* Finish a block whose header holds seq and nrec: zero the unused tail,
 * checksum, and the magic last (a mapped block killed before has none). */
static void seal_block(unsigned char *blk)
{
	struct sh5ev_block_header *bh = (struct sh5ev_block_header *)blk;
	size_t used = (size_t)bh->nrec * SH5EV_REC_SIZE;
	unsigned char *recs = blk + SH5EV_BLOCK_HEADER_SIZE;

	memset(recs + used, 0,
	       (size_t)L.block_size - SH5EV_BLOCK_HEADER_SIZE - used);
	bh->checksum = sh5ev_checksum(recs, used);
	__atomic_signal_fence(__ATOMIC_RELEASE);
	bh->magic = SH5EV_BLOCK_MAGIC;
}

/* Seal a block and write it at its offset.  Either thread. */
static int put_block(unsigned char *blk)
{
	struct sh5ev_block_header *bh = (struct sh5ev_block_header *)blk;
	off_t off = (off_t)SH5EV_HEADER_SIZE + (off_t)bh->seq * L.block_size;
	size_t len = L.block_size, done = 0;
	ssize_t w;

	seal_block(blk);
	while (done < len) {
		w = pwrite(L.fd, blk + done, len - done, off + (off_t)done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		done += (size_t)w;
	}
	__atomic_fetch_add(&L.blocks, 1, __ATOMIC_RELAXED);
	return 0;
}

/* The writer thread: writes queued blocks in order until told to quit
 * with none left.  After a failure it drops (counts) the rest. */
static void *writer(void *arg)
{
	uint32_t done = __atomic_load_n(&L.done, __ATOMIC_RELAXED);
	unsigned char *blk;
	int e;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&L.mu);
		while (__atomic_load_n(&L.queued, __ATOMIC_ACQUIRE) == done &&
		       !L.quit)
			pthread_cond_wait(&L.cv, &L.mu);
		if (__atomic_load_n(&L.queued, __ATOMIC_ACQUIRE) == done) {
			pthread_mutex_unlock(&L.mu);
			return NULL;
		}
		pthread_mutex_unlock(&L.mu);
		blk = L.ring[done % RING];
		if (__atomic_load_n(&L.werr, __ATOMIC_RELAXED) ||
		    put_block(blk) < 0) {
			e = errno;
			if (!__atomic_load_n(&L.werr, __ATOMIC_RELAXED)) {
				report(L.path, strerror(e));
				__atomic_store_n(&L.werr, e ? e : EIO,
						 __ATOMIC_RELEASE);
			}
			__atomic_fetch_add(&L.lost_async,
				((struct sh5ev_block_header *)blk)->nrec,
				__ATOMIC_RELAXED);
		}
		__atomic_store_n(&L.done, ++done, __ATOMIC_RELEASE);
	}
}

/* Start the writer with every signal blocked (signals stay with the
 * application's threads).  On failure blocks are written inline. */
static void start_writer(void)
{
	sigset_t all, old;

	L.use_thread = 0;
	sigfillset(&all);
	if (pthread_sigmask(SIG_SETMASK, &all, &old) != 0)
		return;
	if (pthread_create(&L.thread, NULL, writer, NULL) == 0)
		L.thread_on = 1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Drain the queue and join the writer. */
void stop_writer(void)
{
	if (!L.thread_on)
		return;
	pthread_mutex_lock(&L.mu);
	L.quit = 1;
	pthread_cond_signal(&L.cv);
	pthread_mutex_unlock(&L.mu);
	pthread_join(L.thread, NULL);
	L.thread_on = 0;
}

/* Hand the current block (n records) to the writer, or write it here
 * when the ring is full or there is no writer (a mapped block is only
 * sealed: it is in the file already), and, when more, start the next
 * one.  Returns -1 after stopping (reported) on failure. */
int write_block(int more)
{
	struct sh5ev_block_header *bh = (struct sh5ev_block_header *)L.block;
	uint32_t q;

	if (!__atomic_load_n(&g_recording, __ATOMIC_RELAXED) ||
	    getpid() != L.pid) {
		/* closed under us, or a child made without fork(): never
		 * write into the parent's file */
		stop();
		return -1;
	}
	if (__atomic_load_n(&L.werr, __ATOMIC_ACQUIRE)) {
		/* the writer failed and reported it */
		L.lost_err += L.n;
		L.n = 0;
		stop();
		return -1;
	}
	if (L.fd < 0 && create_file() < 0)
		goto error;
	bh->seq = L.seq;
	bh->nrec = L.n;
	bh->cont = L.cont;
	bh->last_ns = L.last_ns;
	if (L.use_thread && !L.thread_on)
		start_writer();
	q = __atomic_load_n(&L.queued, __ATOMIC_RELAXED);
	if (is_mapped(L.block)) {
		seal_block(L.block);
		__atomic_fetch_add(&L.blocks, 1, __ATOMIC_RELAXED);
	} else if (L.thread_on &&
	    q + 1 - __atomic_load_n(&L.done, __ATOMIC_ACQUIRE) < RING) {
		/* the next slot is free: queue this block */
		pthread_mutex_lock(&L.mu);
		__atomic_store_n(&L.queued, q + 1, __ATOMIC_RELEASE);
		pthread_cond_signal(&L.cv);
		pthread_mutex_unlock(&L.mu);
		L.slot = (L.slot + 1) % RING;
		L.block = L.ring[L.slot];
		L.recs = (struct sh5ev_rec *)(L.block +
					      SH5EV_BLOCK_HEADER_SIZE);
	} else if (put_block(L.block) < 0) {
		goto error;
	}
	L.seq++;
	L.n = 0;
	L.cont = 0;
	L.last_ns = 0;
	L.limit = (uint64_t)L.seq + 1 >= L.max_blocks ? L.cap - 1 : L.cap;
	if (more)
		next_block();
	return 0;
error:
	report(L.path, strerror(errno));
	L.lost_err += L.n;
	L.n = 0;
	stop();
	return -1;
}

/* The block reached its limit: write it, or, in the last block the cap
 * allows, stop taking records (one slot stays free for LOST). */
void block_full(void)
{
	if ((uint64_t)L.seq + 1 >= L.max_blocks) {
		L.capped = 1;
		tl_on = 0;
		return;
	}
	write_block(1);
}

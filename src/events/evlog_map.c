/*
 * evlog_map.c - the event log's mapped window: the file extended,
 * zeroed, mapped and faulted in ahead, a window of blocks at a time.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "events/evlog_int.h"

/* ---------------------------------------------------------------- map */

void map_drop(void)
{
	if (L.map)
		munmap(L.map, L.map_len);
	L.map = NULL;
}

#define ZEROS (256u << 10)
static unsigned char g_zeros[ZEROS];	/* never written: .bss */

/*
 * Write zeros over [lo, hi) of the file.  On a disk file system the
 * page cache then holds the window's pages (large folios, no read), and
 * faulting them in is cheap: 2.8-2.9 ms per 16 MiB in all instead of
 * 6.9-7.5 ms for faulting fallocate()d space in (ext4, this VM).  Not on
 * tmpfs, where fallocate() made the pages already (copying zeros over
 * them costs more).
 */
static int zero_fill(uint64_t lo, uint64_t hi)
{
	size_t len;
	ssize_t w;

	while (lo < hi) {
		len = hi - lo < ZEROS ? (size_t)(hi - lo) : ZEROS;
		w = pwrite(L.fd, g_zeros, len, (off_t)lo);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		lo += (uint64_t)w;
	}
	return 0;
}

/*
 * Fault the whole window in now, writable: the page cache's cost of the
 * window (with zero_fill() about 0.7 us per 4 KiB page on ext4 here) is
 * paid once per window rather than as page faults spread over the
 * records, so one batch of events per window carries it.  Without
 * MADV_POPULATE_WRITE (Linux < 5.14) a store of 0 into each page from
 * byte from on (the new blocks: fresh zeros; the first page may hold the
 * end of the previous block, left alone); any other failure leaves the
 * faults to the stores.
 */
static void populate(unsigned char *p, uint64_t len, uint64_t from,
		     uint64_t ps)
{
	uint64_t i;

#ifdef MADV_POPULATE_WRITE
	if (madvise(p, len, MADV_POPULATE_WRITE) == 0 || errno != EINVAL)
		return;
#endif
	for (i = from; i < len; i += ps)
		__atomic_store_n(&p[i], 0, __ATOMIC_RELAXED);
}

/*
 * Blocks of the next window: WINDOW_FIRST, then twice the last one up to
 * WINDOW_BYTES, or half of it (not below WINDOW_FIRST) when it took more
 * than WINDOW_SLOW to fill, so that what is made ahead is a few seconds'
 * worth of events: the kernel writes dirty pages back after 30 s by
 * default, and zeros written back before the records would double the
 * disk's writes for a slow producer.
 */
static uint64_t window_size(void)
{
	uint64_t first = WINDOW_FIRST / L.block_size;
	uint64_t max = WINDOW_BYTES / L.block_size, nb;
	struct timespec ts;
	int64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (L.window == 0)
		nb = first;
	else if (now - L.window_ns > WINDOW_SLOW)
		nb = L.window / 2 > first ? L.window / 2 : first;
	else
		nb = L.window * 2 < max ? L.window * 2 : max;
	if (nb < WINDOW_MIN)
		nb = WINDOW_MIN;
	L.window = nb;
	L.window_ns = now;
	return nb;
}

/*
 * Extend the file over the blocks from L.seq on (window_size(): from
 * 1 MiB to 16 MiB, so that a process recording little pays little;
 * never past the cap) with fallocate() -- the space is reserved, so a
 * store into the mapping cannot fail for want of it (SIGBUS) -- write
 * its zeros (zero_fill()), map it shared in place of the previous
 * window and fault it in (populate()).  -1: not here (no fallocate() on
 * this file system, no space, no
 * mapping); the blocks are then written with pwrite().
 */
static int map_window(void)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t nb, end, lo, hi, off, len;
	void *p;
	int rc;

	nb = window_size();
	end = L.seq + nb < L.max_blocks ? L.seq + nb : L.max_blocks;
	if (L.seq >= end || ps == 0 || (ps & (ps - 1)))
		return -1;
	lo = SH5EV_HEADER_SIZE + (uint64_t)L.seq * L.block_size;
	hi = SH5EV_HEADER_SIZE + end * L.block_size;
	do
		rc = fallocate(L.fd, 0, (off_t)lo, (off_t)(hi - lo));
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -1;
	L.extended = 1;
	if (L.zero_fill && zero_fill(lo, hi) < 0)
		return -1;
	off = lo & ~(ps - 1);
	len = ((hi + ps - 1) & ~(ps - 1)) - off;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, L.fd,
		 (off_t)off);
	if (p == MAP_FAILED)
		return -1;
	populate(p, len, lo - off, ps);
	map_drop();
	L.map = p;
	L.map_len = len;
	L.map_off = off;
	L.map_end = end;
	return 0;
}

/* Where the records of block L.seq go: its place in the mapped file (a
 * new window when past this one), or the memory block. */
void next_block(void)
{
	if (L.use_map && L.fd >= 0 && (!L.map || L.seq >= L.map_end) &&
	    map_window() < 0) {
		map_drop();
		L.use_map = 0;	/* pwrite() from now on */
	}
	if (L.use_map && L.map)
		L.block = L.map + (SH5EV_HEADER_SIZE +
				   (uint64_t)L.seq * L.block_size - L.map_off);
	else
		L.block = L.ring[L.slot];
	L.recs = (struct sh5ev_rec *)(L.block + SH5EV_BLOCK_HEADER_SIZE);
}

int is_mapped(const unsigned char *blk)
{
	return L.map && blk >= L.map && blk < L.map + L.map_len;
}

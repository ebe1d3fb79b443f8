/*
 * evlog.c - the task-side event log (see evlog.h, doc/events.md).
 *
 * Runs inside the user's MPI processes: libc only, no allocation or
 * system call on the hot path, nothing that can abort.  One process-wide
 * log.  By default (SH5_EVENTS_WRITER=map) the blocks after the first
 * are filled in place in a shared mapping of the file, extended and
 * faulted in ahead a window at a time, and finished by writing their
 * header (see map_window()).  Otherwise, and for block 0, the block
 * being filled lives in memory and is written whole, with one pwrite()
 * at its own offset, when full, by the recording thread
 * (SH5_EVENTS_WRITER=sync) or, with SH5_EVENTS_WRITER=thread,
 * by a writer thread that takes full blocks from a ring of RING blocks
 * (started at the first full block, joined at close); the recording
 * thread never waits for it: when the ring is full, or the thread could
 * not be started, it writes the block itself.
 *
 * Threads: the thread that opens the log owns it (tl_owner); only its
 * calls append records (tl_on, cleared when recording stops or the
 * file reached its cap).  Other threads only bump an atomic counter of
 * lost records.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "events/evlog.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define TLS __thread __attribute__((tls_model("initial-exec")))

#define MAX_DEFAULT (1ull << 30)
#define RING 4			/* blocks: the one being filled + queued */
#define REGIONS_MAX (1u << 20)	/* what the reader accepts */
#define WINDOW_FIRST (1u << 20) /* file extended and mapped this far, */
#define WINDOW_BYTES (16u << 20) /* doubling up to this */
#define WINDOW_MIN 4		/* blocks, at least */
#define WINDOW_SLOW 5000000000ll /* a window filled slower: halve */
#define TMPFS_MAGIC_ 0x01021994	/* statfs f_type, <linux/magic.h> */

struct region {
	char *name;		/* NULL: free slot */
	uint32_t hash;
	uint32_t id;
	uint16_t flags;
};

struct evlog {
	/* hot */
	struct sh5ev_rec *recs;	/* records of the current block */
	uint32_t n;		/* records used */
	uint32_t limit;		/* block is full at n == limit */
	int64_t last_ns;	/* time of the block's last event */
	uint64_t recorded;
	uint64_t lost_cap;	/* owner's records after the cap */

	/* cold */
	unsigned char *block;	/* block_size bytes: ring[slot] */
	unsigned char *ring[RING];
	uint32_t slot;		/* of the block being filled */
	uint32_t queued;	/* atomic: blocks handed to the writer */
	uint32_t done;		/* atomic: of those, written (or dropped) */
	int use_thread;		/* 1: start a writer at the first block */
	int use_map;		/* 1: blocks after the first are mapped */
	int extended;		/* the file was extended ahead */
	unsigned char *map;	/* MAP_SHARED window of the file */
	size_t map_len;
	uint64_t map_off;	/* file offset of map (page aligned) */
	uint64_t map_end;	/* first block after the window */
	uint64_t window;	/* blocks of the last window */
	int64_t window_ns;	/* when it was made (CLOCK_MONOTONIC) */
	int zero_fill;		/* write the window's zeros (not tmpfs) */
	int thread_on;		/* the writer runs (joined at close) */
	int quit;		/* under mu: writer, drain and return */
	int werr;		/* atomic: errno of the writer's failure */
	uint64_t lost_async;	/* atomic: records of blocks it dropped */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t block_size;
	uint32_t cap;		/* records per block */
	uint32_t cont;		/* leading payload records of the block */
	uint32_t seq;		/* of the current block */
	uint64_t max_blocks;	/* blocks the size cap allows (>= 1) */
	uint64_t blocks;	/* written */
	uint64_t lost_err;	/* records in blocks that failed to write */
	int capped;
	int fd;			/* -1 until the first block is written */
	pid_t pid;
	uint32_t task;
	char prefix[128];
	char path[PATH_MAX];

	struct region *regions;	/* open addressing, power-of-two size */
	uint32_t nregions;
	uint32_t region_slots;
	uint32_t phase;
};

static struct evlog L = { .fd = -1, .mu = PTHREAD_MUTEX_INITIALIZER,
			   .cv = PTHREAD_COND_INITIALIZER };
static int g_result;		/* sh5_evlog_open()'s answer */
static int g_recording;		/* 1 from open until stop/close/fork */
static int g_reported;
static uint64_t g_lost_other;	/* atomic: calls from other threads */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static TLS int tl_on;		/* owner thread, recording, not capped */
static TLS int tl_owner;	/* owner thread */

/* ---------------------------------------------------------------- misc */

/* Report once on stderr (write(2): no stdio locks, safe at exit). */
static void report(const char *what, const char *reason)
{
	char buf[PATH_MAX + 256];
	int len;

	if (g_reported)
		return;
	g_reported = 1;
	len = snprintf(buf, sizeof(buf), "sh5ev: %s: %s\n", what, reason);
	if (len < 0)
		return;
	if ((size_t)len >= sizeof(buf))
		len = sizeof(buf) - 1;
	if (write(STDERR_FILENO, buf, (size_t)len) < 0)
		return;
}

/* Recording stops for good (error, close, forked child). */
static void stop(void)
{
	__atomic_store_n(&g_recording, 0, __ATOMIC_RELAXED);
	tl_on = 0;
}

static int64_t gettime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The owner thread's clock: CLOCK_REALTIME extrapolated from the TSC.
 * Only where the kernel itself keeps time with the TSC (clocksource
 * "tsc": invariant and synchronized across CPUs, checked by the kernel),
 * so the two differ only by the rate.  An anchor (TSC, CLOCK_REALTIME)
 * pair is taken at least every millisecond (ANCHOR_NS); in between,
 * time is anchor + ticks * rate, the rate measured between anchors at
 * least 1 ms and at most about 20 s apart.  Error: the rate's error
 * (anchor jitter ~50 ns over the base) times 1 ms: <= 50 ns in the
 * first milliseconds, a few ns after a second; an NTP frequency change
 * of d ppm adds d ns at most.  Never goes back by less than a window
 * (an overshoot is absorbed at the next anchor); a step of the real
 * clock is taken as is.  Before the first rate and where the TSC is not
 * usable: clock_gettime().
 */
#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_TSC 1
#define ANCHOR_NS 1000000
#define BASE_NS 10000000000ll

struct tscclock {
	uint64_t t0;		/* anchor: TSC */
	int64_t ns0;		/* anchor: ns */
	uint64_t win;		/* ticks after t0 that are extrapolated */
	uint64_t mult;		/* ns per tick << 32; 0: no rate yet */
	uint64_t bt[2];		/* rate bases: TSC, ns (older, newer) */
	int64_t bns[2];
	int usable;
};

static struct tscclock C;

static inline uint64_t rdtsc(void)
{
	return __builtin_ia32_rdtsc();
}

/* A (TSC, ns) pair taken close together; -1 when it was not. */
static int tsc_pair(uint64_t *t, int64_t *ns)
{
	uint64_t a, b, w = UINT64_MAX;
	int64_t x;
	int i;

	for (i = 0; i < 3; i++) {	/* the narrowest of 3 */
		a = rdtsc();
		x = gettime_ns();
		b = rdtsc();
		if (b >= a && b - a < w) {
			w = b - a;
			*t = a + w / 2;
			*ns = x;
		}
	}
	return w < 20000 ? 0 : -1;	/* ~5 us at 4 GHz: preempted */
}

static void tsc_init(void)
{
	char buf[16];
	ssize_t n;
	int fd;

	memset(&C, 0, sizeof(C));
	fd = open("/sys/devices/system/clocksource/clocksource0/"
		  "current_clocksource", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n != 4 || memcmp(buf, "tsc\n", 4) != 0)
		return;
	if (tsc_pair(&C.bt[0], &C.bns[0]) < 0)
		return;
	C.bt[1] = C.bt[0];
	C.bns[1] = C.bns[0];
	C.usable = 1;
}

/* Out of the window (or no rate yet): a new anchor. */
static int64_t __attribute__((noinline)) tsc_anchor(uint64_t now)
{
	uint64_t t, dt;
	int64_t ns, dns, ext = 0;
	unsigned __int128 m;

	if (tsc_pair(&t, &ns) < 0)
		return gettime_ns();
	if (C.mult) {
		/* where the old window would put t; values handed out so far
		 * were at most that */
		ext = C.ns0 + (int64_t)(((unsigned __int128)(t - C.t0) *
					 C.mult) >> 32);
	}
	dt = t - C.bt[0];
	dns = ns - C.bns[0];
	if (t > C.bt[0] && dns >= ANCHOR_NS) {
		m = ((unsigned __int128)(uint64_t)dns << 32) / dt;
		if (C.mult && (m > C.mult + (C.mult >> 10) ||
			       m < C.mult - (C.mult >> 10))) {
			/* > 0.1 % off: the real clock was stepped; start the
			 * rate bases again, keep the rate */
			C.bt[0] = C.bt[1] = t;
			C.bns[0] = C.bns[1] = ns;
			ext = 0;
		} else {
			C.mult = (uint64_t)m;
		}
	}
	if (ns - C.bns[1] >= BASE_NS) {
		C.bt[0] = C.bt[1];
		C.bns[0] = C.bns[1];
		C.bt[1] = t;
		C.bns[1] = ns;
	}
	if (!C.mult)
		return ns;	/* the next call anchors again */
	if (ext > ns && ext - ns < ANCHOR_NS)
		ns = ext;
	C.t0 = t;
	C.ns0 = ns;
	C.win = (uint64_t)(((unsigned __int128)ANCHOR_NS << 32) / C.mult);
	(void)now;
	return C.ns0 + (int64_t)(((now > t ? now - t : 0) * C.mult) >> 32);
}
#endif

int64_t sh5_evlog_now(void)
{
#ifdef HAVE_TSC
	if (likely(tl_owner) && likely(C.usable)) {
		uint64_t d = rdtsc() - C.t0;

		if (likely(d < C.win))
			return C.ns0 + (int64_t)((d * C.mult) >> 32);
		return tsc_anchor(C.t0 + d);
	}
#endif
	return gettime_ns();
}

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
static void stop_writer(void)
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

/* ---------------------------------------------------------------- map */

static void map_drop(void)
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
static void next_block(void)
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

static int is_mapped(const unsigned char *blk)
{
	return L.map && blk >= L.map && blk < L.map + L.map_len;
}

/* Hand the current block (n records) to the writer, or write it here
 * when the ring is full or there is no writer (a mapped block is only
 * sealed: it is in the file already), and, when more, start the next
 * one.  Returns -1 after stopping (reported) on failure. */
static int write_block(int more)
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
static void block_full(void)
{
	if ((uint64_t)L.seq + 1 >= L.max_blocks) {
		L.capped = 1;
		tl_on = 0;
		return;
	}
	write_block(1);
}

/* ---------------------------------------------------------------- open */

/* A size: decimal digits with an optional k/K, m/M or g/G (binary)
 * suffix.  Returns -1 when not one. */
static int parse_size(const char *s, uint64_t *v)
{
	unsigned long long x;
	char *end;
	int shift = 0;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end || x > (UINT64_MAX >> shift))
		return -1;
	*v = (uint64_t)x << shift;
	return 0;
}

static int config(void)
{
	const char *dir = getenv(SH5EV_ENV_DIR);
	const char *prefix = getenv(SH5EV_ENV_PREFIX);
	const char *s;
	char cwd[PATH_MAX];
	uint64_t v, bs;
	int len;

	if (!dir || !*dir)
		return 0;
	if (!prefix || !*prefix)
		prefix = "events";
	if (strlen(prefix) >= sizeof(L.prefix) || strchr(prefix, '/') ||
	    prefix[0] == '.') {
		report(SH5EV_ENV_PREFIX, "not a file name prefix");
		return -1;
	}
	snprintf(L.prefix, sizeof(L.prefix), "%s", prefix);
	L.task = 0;
	s = getenv(SH5EV_ENV_TASK);
	if (s && *s) {
		if (parse_size(s, &v) < 0 || v > UINT32_MAX) {
			report(SH5EV_ENV_TASK, "not a task number");
			return -1;
		}
		L.task = (uint32_t)v;
	}
	bs = SH5EV_BLOCK_DEFAULT;
	s = getenv(SH5EV_ENV_BUFFER);
	if (s && *s) {
		if (parse_size(s, &v) < 0) {
			report(SH5EV_ENV_BUFFER, "not a size in bytes");
			return -1;
		}
		for (bs = SH5EV_BLOCK_MIN; bs < v && bs < SH5EV_BLOCK_MAX;)
			bs <<= 1;
	}
	L.block_size = (uint32_t)bs;
	L.cap = sh5ev_block_capacity(L.block_size);
	v = MAX_DEFAULT;
	s = getenv(SH5EV_ENV_MAX);
	if (s && *s && parse_size(s, &v) < 0) {
		report(SH5EV_ENV_MAX, "not a size in bytes");
		return -1;
	}
	/* 0: no cap; otherwise at least one block */
	L.max_blocks = v ? (v > SH5EV_HEADER_SIZE ?
			    (v - SH5EV_HEADER_SIZE) / bs : 0) : UINT32_MAX;
	if (L.max_blocks < 1)
		L.max_blocks = 1;
	if (L.max_blocks > UINT32_MAX)
		L.max_blocks = UINT32_MAX;
	s = getenv(SH5EV_ENV_WRITER);
	if (s && *s && strcmp(s, "thread") != 0 && strcmp(s, "sync") != 0 &&
	    strcmp(s, "map") != 0) {
		report(SH5EV_ENV_WRITER,
		       "not \"map\", \"sync\" or \"thread\"");
		return -1;
	}
	L.use_thread = s && strcmp(s, "thread") == 0;
	L.use_map = !s || !*s || strcmp(s, "map") == 0;
	L.pid = getpid();
	/* the file is made later: a relative directory is taken from the
	 * working directory of now, not of then */
	cwd[0] = '\0';
	if (dir[0] != '/' && !getcwd(cwd, sizeof(cwd))) {
		report(SH5EV_ENV_DIR, strerror(errno));
		return -1;
	}
	len = snprintf(L.path, sizeof(L.path), "%s%s%s/%s.%u.%ld%s", cwd,
		       cwd[0] ? "/" : "", dir, L.prefix, L.task, (long)L.pid,
		       SH5EV_SUFFIX);
	if (len < 0 || (size_t)len >= sizeof(L.path)) {
		report(SH5EV_ENV_DIR, "path too long");
		return -1;
	}
	return 1;
}

/* A forked child never writes into its parent's file. */
static void atfork_child(void)
{
	stop();
	tl_owner = 0;
	L.thread_on = 0;	/* the writer stayed in the parent */
	L.use_thread = 0;
	L.use_map = 0;
	L.extended = 0;		/* the parent's file: never truncated here */
	map_drop();
	if (L.fd >= 0)
		close(L.fd);
	L.fd = -1;
}

static void open_once(void)
{
	int rc = config(), i;

	if (rc <= 0)
		return;
	for (i = 0; i < (L.use_thread ? RING : 1); i++) {
		L.ring[i] = aligned_alloc(64, L.block_size);
		if (!L.ring[i]) {
			report(L.path, strerror(errno));
			return;
		}
		memset(L.ring[i], 0, L.block_size);
	}
	L.block = L.ring[0];
	L.recs = (struct sh5ev_rec *)(L.block + SH5EV_BLOCK_HEADER_SIZE);
	L.limit = L.max_blocks == 1 ? L.cap - 1 : L.cap;
	if (pthread_atfork(NULL, NULL, atfork_child) != 0 ||
	    atexit(sh5_evlog_close) != 0) {
		report(L.path, "cannot register fork and exit handlers");
		return;
	}
#ifdef HAVE_TSC
	tsc_init();
#endif
	tl_owner = 1;
	tl_on = 1;
	g_result = 1;
	__atomic_store_n(&g_recording, 1, __ATOMIC_RELEASE);
}

int sh5_evlog_open(void)
{
	pthread_once(&g_once, open_once);
	return g_result;
}

int sh5_evlog_on(void)
{
	return tl_on;
}

/* ---------------------------------------------------------------- put */

/* Not on the owner's fast path: count what is not recorded. */
static void __attribute__((noinline)) put_lost(void)
{
	if (!__atomic_load_n(&g_recording, __ATOMIC_RELAXED))
		return;
	if (tl_owner)
		L.lost_cap++;
	else
		__atomic_fetch_add(&g_lost_other, 1, __ATOMIC_RELAXED);
}

static inline __attribute__((always_inline)) void
put_inline(const struct sh5ev_rec *r)
{
	if (likely(tl_on)) {
		L.recs[L.n] = *r;
		L.last_ns = r->time_ns;
		L.recorded++;
		if (unlikely(++L.n == L.limit))
			block_full();
	} else {
		put_lost();
	}
}

void sh5_evlog_put(const struct sh5ev_rec *r)
{
	put_inline(r);
}

void sh5_evlog_event(uint8_t kind, uint8_t op, uint16_t flags, uint32_t id,
		     int32_t peer, int32_t tag, uint64_t bytes,
		     int64_t time_ns)
{
	struct sh5ev_rec r;

	if (unlikely(!tl_on)) {
		put_lost();
		return;
	}
	r.time_ns = time_ns ? time_ns : sh5_evlog_now();
	r.kind = kind;
	r.op = op;
	r.flags = flags;
	r.id = id;
	r.peer = peer;
	r.tag = tag;
	r.bytes = bytes;
	r.value = 0;
	put_inline(&r);
}

/* ---------------------------------------------------------------- defs */

/* Append a definition record and its payload (len bytes, zero padded to
 * whole records), only if all of it fits under the cap. */
static void put_def(const struct sh5ev_rec *head, const void *payload,
		    size_t len)
{
	const unsigned char *p = payload;
	uint64_t k = 1 + (len + SH5EV_REC_SIZE - 1) / SH5EV_REC_SIZE;
	uint64_t room;
	unsigned char rec[SH5EV_REC_SIZE];
	size_t chunk;

	if (!tl_on) {
		put_lost();
		return;
	}
	room = (L.max_blocks - L.seq) * L.cap - 1 - L.n;
	if (k > room) {
		L.capped = 1;
		tl_on = 0;
		L.lost_cap++;
		return;
	}
	memcpy(&L.recs[L.n], head, SH5EV_REC_SIZE);
	if (++L.n == L.limit)
		block_full();
	while (len > 0 && tl_on) {
		chunk = len < SH5EV_REC_SIZE ? len : SH5EV_REC_SIZE;
		memset(rec, 0, sizeof(rec));
		memcpy(rec, p, chunk);
		if (L.n == L.cont)
			L.cont++;	/* continues into this block */
		memcpy(&L.recs[L.n], rec, SH5EV_REC_SIZE);
		if (++L.n == L.limit)
			block_full();
		p += chunk;
		len -= chunk;
	}
}

static uint32_t hash_name(const char *s, uint16_t flags)
{
	uint32_t h = 2166136261u ^ flags;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static int regions_grow(void)
{
	uint32_t slots = L.region_slots ? L.region_slots * 2 : 64;
	struct region *t = calloc(slots, sizeof(*t));
	uint32_t i, j;

	if (!t)
		return -1;
	for (i = 0; i < L.region_slots; i++) {
		if (!L.regions[i].name)
			continue;
		for (j = L.regions[i].hash & (slots - 1); t[j].name;
		     j = (j + 1) & (slots - 1))
			;
		t[j] = L.regions[i];
	}
	free(L.regions);
	L.regions = t;
	L.region_slots = slots;
	return 0;
}

int32_t sh5_evlog_region(const char *name, uint16_t flags)
{
	struct sh5ev_rec r;
	struct region *e;
	uint32_t h, j;
	size_t len;

	if (!tl_owner || !__atomic_load_n(&g_recording, __ATOMIC_RELAXED) ||
	    !name)
		return -1;
	len = strnlen(name, SH5EV_NAME_MAX + 1);
	if (len == 0 || len > SH5EV_NAME_MAX) {
		report(L.path, len ? "region name longer than 127 bytes"
				   : "empty region name");
		return -1;
	}
	h = hash_name(name, flags);
	if (L.region_slots) {
		for (j = h & (L.region_slots - 1); L.regions[j].name;
		     j = (j + 1) & (L.region_slots - 1)) {
			e = &L.regions[j];
			if (e->hash == h && e->flags == flags &&
			    strcmp(e->name, name) == 0)
				return (int32_t)e->id;
		}
	}
	if (L.nregions >= REGIONS_MAX) {
		report(L.path, "too many regions");
		return -1;
	}
	if ((L.nregions + 1) * 2 > L.region_slots && regions_grow() < 0) {
		report(L.path, strerror(errno));
		return -1;
	}
	for (j = h & (L.region_slots - 1); L.regions[j].name;
	     j = (j + 1) & (L.region_slots - 1))
		;
	e = &L.regions[j];
	e->name = strdup(name);
	if (!e->name) {
		report(L.path, strerror(errno));
		return -1;
	}
	e->hash = h;
	e->flags = flags;
	e->id = L.nregions++;

	memset(&r, 0, sizeof(r));
	r.time_ns = sh5_evlog_now();
	r.kind = SH5EV_K_DEFREGION;
	r.flags = flags;
	r.id = e->id;
	r.bytes = len;
	put_def(&r, name, len);
	return (int32_t)e->id;
}

void sh5_evlog_comm(uint32_t local, uint64_t global, int32_t size,
		    int32_t myrank, const int32_t *members)
{
	struct sh5ev_rec r;

	if (local < 2 || size < 1 || myrank < 0 || myrank >= size) {
		put_lost();
		return;
	}
	memset(&r, 0, sizeof(r));
	r.time_ns = sh5_evlog_now();
	r.kind = SH5EV_K_DEFCOMM;
	r.flags = members ? SH5EV_F_MEMBERS : 0;
	r.id = local;
	r.peer = size;
	r.tag = myrank;
	r.bytes = global;
	put_def(&r, members, members ? (size_t)size * sizeof(int32_t) : 0);
}

/* ---------------------------------------------------------------- phase */

uint32_t sh5_evlog_phase(int32_t level, uint16_t flags)
{
	if (!tl_owner || !__atomic_load_n(&g_recording, __ATOMIC_RELAXED)) {
		put_lost();
		return 0;
	}
	L.phase++;
	sh5_evlog_event(SH5EV_K_PHASE, 0, flags, L.phase, 0, level, 0, 0);
	return L.phase;
}

uint32_t sh5_evlog_current_phase(void)
{
	return L.phase;
}

/* ---------------------------------------------------------------- close */

void sh5_evlog_close(void)
{
	uint64_t lost;
	struct sh5ev_rec r;

	if (!__atomic_load_n(&g_recording, __ATOMIC_ACQUIRE))
		return;
	if (getpid() == L.pid)
		stop_writer();	/* every queued block written first */
	L.use_thread = 0;
	if (__atomic_load_n(&L.werr, __ATOMIC_ACQUIRE)) {
		L.lost_err += L.n;	/* reported by the writer */
		L.n = 0;
	}
	lost = L.lost_cap + L.lost_err + L.lost_async +
	       __atomic_load_n(&g_lost_other, __ATOMIC_RELAXED);
	if (lost > 0 && L.n < L.cap) {
		memset(&r, 0, sizeof(r));
		r.time_ns = sh5_evlog_now();
		if (r.time_ns < L.last_ns)
			r.time_ns = L.last_ns;
		r.kind = SH5EV_K_LOST;
		r.bytes = lost;
		L.recs[L.n++] = r;
		L.last_ns = r.time_ns;
	}
	if (L.n > 0)
		write_block(0);
	stop();
	if (L.map && getpid() == L.pid)
		map_drop();
	/* the space extended ahead and not used goes */
	if (L.extended && L.fd >= 0 && getpid() == L.pid &&
	    ftruncate(L.fd, (off_t)SH5EV_HEADER_SIZE +
				(off_t)L.seq * L.block_size) < 0)
		report(L.path, strerror(errno));
	if (L.fd >= 0 && close(L.fd) < 0)
		report(L.path, strerror(errno));
	L.fd = -1;
}

void sh5_evlog_stats(struct sh5_evlog_stats *st)
{
	st->recorded = L.recorded;
	st->lost = L.lost_cap + L.lost_err +
		   __atomic_load_n(&L.lost_async, __ATOMIC_RELAXED) +
		   __atomic_load_n(&g_lost_other, __ATOMIC_RELAXED);
	st->blocks = __atomic_load_n(&L.blocks, __ATOMIC_RELAXED);
}

/*
 * test_evlog.c - the task-side event log (evlog.c, sh5ev.c) written and
 * read back through the spill reader: round trips over block sizes,
 * definitions across blocks, the size cap, the writer thread (forks,
 * kill -9, other threads, errors: test_evlog_proc.c; the clock:
 * test_evclock.c).
 * Each test runs in a forked child of its own (a fresh log).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <dirent.h>

#include "events/sh5ev.h"
#include "evtest.h"

#define T0 1700000000000000000ll

/* ------------------------------------------------------------ round trip */

struct want {
	struct evtest_got g;	/* what was written, in order */
	uint32_t next_comm;
};

static void want_region(struct want *w, const char *name, uint16_t flags)
{
	struct evtest_region *r;
	int32_t id = sh5_evlog_region(name, flags);

	ck_assert_int_ge(id, 0);
	w->g.regions = realloc(w->g.regions,
			       (w->g.nregions + 1) * sizeof(*r));
	r = &w->g.regions[w->g.nregions++];
	r->id = (uint32_t)id;
	r->flags = flags;
	snprintf(r->name, sizeof(r->name), "%s", name);
}

static void want_comm(struct want *w, int32_t size, int with_members)
{
	struct evtest_comm *c;
	int32_t i;

	w->g.comms = realloc(w->g.comms, (w->g.ncomms + 1) * sizeof(*c));
	c = &w->g.comms[w->g.ncomms++];
	c->local = w->next_comm++;
	c->global = (uint64_t)7 << 32 | c->local;
	c->size = size;
	c->rank = size - 1;
	c->members = NULL;
	if (with_members) {
		c->members = malloc((size_t)size * sizeof(int32_t));
		for (i = 0; i < size; i++)
			c->members[i] = i * 3 + 1;
	}
	sh5_evlog_comm(c->local, c->global, c->size, c->rank, c->members);
}

static void want_event(struct want *w, struct sh5ev_rec *r)
{
	sh5_evlog_put(r);
	if ((w->g.nevents & (w->g.nevents - 1)) == 0)
		w->g.events = realloc(w->g.events, 2 * (w->g.nevents + 1) *
						   sizeof(*r));
	ck_assert_ptr_nonnull(w->g.events);
	w->g.events[w->g.nevents++] = *r;
}

/* n events of every kind, with regions and communicators (names up to
 * 127 bytes, up to 700 members) defined along the way. */
static void write_mix(struct want *w, size_t n, uint64_t seed)
{
	char name[SH5EV_NAME_MAX + 1];
	struct sh5ev_rec r;
	size_t i, len;
	uint64_t x;

	w->next_comm = 2;
	for (i = 0; i < n; i++) {
		x = evtest_rand(&seed);
		if (i % 97 == 0) {
			/* unique, 1..127 bytes, with spaces */
			len = 1 + x % SH5EV_NAME_MAX;
			snprintf(name, sizeof(name), "r%zu ", i);
			if (len < strlen(name))
				len = strlen(name);
			memset(name + strlen(name), 'a' + (int)(i % 26),
			       len - strlen(name));
			name[len] = '\0';
			want_region(w, name, i % 2 ? SH5EV_F_MPI : 0);
		}
		if (i % 301 == 0)
			want_comm(w, 1 + (int32_t)(x % 700), i % 2 == 0);
		memset(&r, 0, sizeof(r));
		r.time_ns = T0 + (int64_t)i * 10;
		r.kind = (uint8_t)(SH5EV_K_ENTER + i % 9);
		switch (r.kind) {
		case SH5EV_K_ENTER:
		case SH5EV_K_EXIT:
			r.id = w->g.regions[x % w->g.nregions].id;
			break;
		case SH5EV_K_SEND:
		case SH5EV_K_RECV:
			r.id = (uint32_t)(x % w->next_comm);
			r.peer = (int32_t)(x % 1000);
			r.tag = (int32_t)(x >> 40);
			r.bytes = x >> 20;
			r.flags = SH5EV_F_NONBLOCKING;
			break;
		case SH5EV_K_CBEGIN:
		case SH5EV_K_CEND:
			r.id = (uint32_t)(x % w->next_comm);
			r.op = (uint8_t)(1 + x % (SH5EV_OP_COUNT - 1));
			r.peer = -1;
			r.bytes = x >> 30;
			break;
		case SH5EV_K_OBJECT:
			r.id = 2;
			r.bytes = x;
			r.value = (double)(x % 1000) / 7.0;
			break;
		case SH5EV_K_RANK:
			r.id = 1000;
			r.peer = 999;
			break;
		case SH5EV_K_PHASE:
			r.id = (uint32_t)i;
			r.tag = -1;
			r.flags = SH5EV_F_PCONTROL;
			break;
		}
		want_event(w, &r);
	}
}

static void assert_same(const struct evtest_got *got,
			const struct evtest_got *want)
{
	size_t i;

	ck_assert_uint_eq(got->nregions, want->nregions);
	for (i = 0; i < want->nregions; i++) {
		ck_assert_uint_eq(got->regions[i].id, want->regions[i].id);
		ck_assert_uint_eq(got->regions[i].flags,
				  want->regions[i].flags);
		ck_assert_str_eq(got->regions[i].name, want->regions[i].name);
	}
	ck_assert_uint_eq(got->ncomms, want->ncomms);
	for (i = 0; i < want->ncomms; i++) {
		const struct evtest_comm *a = &got->comms[i];
		const struct evtest_comm *b = &want->comms[i];

		ck_assert_uint_eq(a->local, b->local);
		ck_assert_uint_eq(a->global, b->global);
		ck_assert_int_eq(a->size, b->size);
		ck_assert_int_eq(a->rank, b->rank);
		ck_assert_int_eq(!a->members, !b->members);
		if (b->members)
			ck_assert_mem_eq(a->members, b->members,
					 (size_t)b->size * sizeof(int32_t));
	}
	ck_assert_uint_eq(got->nevents, want->nevents);
	for (i = 0; i < want->nevents; i++)
		ck_assert_msg(memcmp(&got->events[i], &want->events[i],
				     sizeof(struct sh5ev_rec)) == 0,
			      "event %zu differs", i);
}

static const struct {
	const char *buffer;	/* SH5_EVENTS_BUFFER */
	uint32_t block_size;	/* what it becomes */
	size_t n;		/* events */
} sizes[] = {
	{ "4096", 4096, 20000 },   { "1", 4096, 3000 },
	{ "5000", 8192, 20000 },   { "16k", 16384, 20000 },
	{ NULL, 65536, 50000 },    { "1M", 1 << 20, 60000 },
	{ "100M", 16 << 20, 1000 }, { "4097", 8192, 1 },
};

START_TEST(test_evlog_roundtrip_block_sizes)
{
	struct sh5_evspill_info info;
	struct sh5_evlog_stats st;
	struct sh5_error err = { "" };
	struct evtest_got got;
	struct want w = { { 0 }, 0 };
	char name[256];
	struct stat sb;

	evtest_start(sizes[_i].buffer, NULL);
	write_mix(&w, sizes[_i].n, 42 + (uint64_t)_i);
	sh5_evlog_close();
	ck_assert_int_eq(sh5_evlog_on(), 0);
	sh5_evlog_stats(&st);
	ck_assert_uint_eq(st.recorded, sizes[_i].n);
	ck_assert_uint_eq(st.lost, 0);

	ck_assert_int_eq(evtest_files(name), 1);
	ck_assert_int_eq(stat(evtest_path(name), &sb), 0);
	ck_assert_uint_eq(sb.st_mode & 07777, 0600);
	ck_assert_uint_eq((uint64_t)sb.st_size,
			  SH5EV_HEADER_SIZE + st.blocks * sizes[_i].block_size);
	ck_assert_msg(evtest_read(name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(info.block_size, sizes[_i].block_size);
	ck_assert_uint_eq(info.task, 3);
	ck_assert_uint_eq(info.pid, (uint32_t)getpid());
	ck_assert_str_eq(info.prefix, "t");
	ck_assert_str_eq(info.lib_version, PACKAGE_VERSION);
	ck_assert_uint_eq(info.blocks, st.blocks);
	ck_assert_uint_eq(info.blocks_bad, 0);
	ck_assert_int_eq(info.torn_tail, 0);
	ck_assert_int_eq(info.truncated, 0);
	ck_assert_uint_eq(info.rejected, 0);
	ck_assert_uint_eq(info.events, sizes[_i].n);
	ck_assert_str_eq(info.first_problem, "");
	assert_same(&got, &w.g);
	evtest_got_free(&got);
	evtest_got_free(&w.g);
}
END_TEST

/* A communicator of 100 members defined two records before the end of
 * block 0 continues into block 1, whose header says so (cont). */
START_TEST(test_evlog_definition_crosses_block)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct sh5ev_block_header bh;
	struct evtest_got got;
	uint32_t cap = sh5ev_block_capacity(4096), i;
	int32_t members[100];
	char name[256];
	int fd;

	evtest_start("4096", NULL);
	for (i = 0; i < cap - 2; i++)
		sh5_evlog_event(SH5EV_K_PHASE, 0, 0, i, 0, -1, 0, T0 + i);
	for (i = 0; i < 100; i++)
		members[i] = (int32_t)(99 - i);
	sh5_evlog_comm(2, 99, 100, 5, members);
	sh5_evlog_event(SH5EV_K_SEND, 0, 0, 2, 4, 1, 8, T0 + cap);
	sh5_evlog_close();

	ck_assert_int_eq(evtest_files(name), 1);
	fd = open(evtest_path(name), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &bh, sizeof(bh), SH5EV_HEADER_SIZE),
			 sizeof(bh));
	ck_assert_uint_eq(bh.cont, 0);
	ck_assert_uint_eq(bh.nrec, cap);
	ck_assert_int_eq(bh.last_ns, T0 + cap - 3);
	ck_assert_int_eq(pread(fd, &bh, sizeof(bh), SH5EV_HEADER_SIZE + 4096),
			 sizeof(bh));
	close(fd);
	ck_assert_uint_eq(bh.seq, 1);
	ck_assert_uint_eq(bh.cont, sh5ev_member_recs(100) - 1);
	ck_assert_uint_eq(bh.nrec, sh5ev_member_recs(100) - 1 + 1);

	ck_assert_msg(evtest_read(name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(info.rejected, 0);
	ck_assert_uint_eq(got.ncomms, 1);
	ck_assert_int_eq(got.comms[0].size, 100);
	ck_assert_int_eq(got.comms[0].rank, 5);
	ck_assert_uint_eq(got.comms[0].global, 99);
	ck_assert_mem_eq(got.comms[0].members, members, sizeof(members));
	ck_assert_uint_eq(got.nevents, cap - 2 + 1);
	ck_assert_uint_eq(got.events[cap - 2].kind, SH5EV_K_SEND);
	evtest_got_free(&got);
}
END_TEST

/* -------------------------------------------------------------- API */

START_TEST(test_evlog_public_api)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	char name[256], big[SH5EV_NAME_MAX + 2];
	int a, b;

	/* the public API opens the log itself */
	setenv("SH5_EVENTS_DIR", evtest_dir, 1);
	unsetenv("SH5_EVENTS_PREFIX");
	unsetenv("SLURM_PROCID");
	unsetenv("SH5_EVENTS_BUFFER");
	unsetenv("SH5_EVENTS_MAX");
	sh5_ev_phase();
	a = sh5_ev_region("solve");
	b = sh5_ev_region("exchange");
	ck_assert_int_ge(a, 0);
	ck_assert_int_ne(a, b);
	ck_assert_int_eq(sh5_ev_region("solve"), a);
	ck_assert_int_eq(sh5_evlog_region("solve", SH5EV_F_MPI) >= 0, 1);
	ck_assert_int_ne(sh5_evlog_region("solve", SH5EV_F_MPI), a);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(sh5_ev_region(big), -1);
	ck_assert_int_eq(sh5_ev_region(""), -1);
	big[SH5EV_NAME_MAX] = '\0';
	ck_assert_int_ge(sh5_ev_region(big), 0);
	sh5_ev_enter(a);
	sh5_ev_enter(-1);
	sh5_ev_object(12345, 0.25);
	sh5_ev_exit(a);
	ck_assert_uint_eq(sh5_evlog_current_phase(), 1);
	sh5_evlog_close();

	ck_assert_int_eq(evtest_files(name), 1);
	ck_assert_int_eq(strncmp(name, "events.0.", 9), 0);
	ck_assert_msg(evtest_read(name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(got.nregions, 4);
	ck_assert_str_eq(got.regions[0].name, "solve");
	ck_assert_str_eq(got.regions[1].name, "exchange");
	ck_assert_uint_eq(got.regions[2].flags, SH5EV_F_MPI);
	ck_assert_str_eq(got.regions[3].name, big);
	ck_assert_uint_eq(got.nevents, 4);
	ck_assert_uint_eq(got.events[0].kind, SH5EV_K_PHASE);
	ck_assert_uint_eq(got.events[0].id, 1);
	ck_assert_int_eq(got.events[0].tag, -1);
	ck_assert_uint_eq(got.events[1].kind, SH5EV_K_ENTER);
	ck_assert_uint_eq(got.events[1].id, (uint32_t)a);
	ck_assert_uint_eq(got.events[2].kind, SH5EV_K_OBJECT);
	ck_assert_uint_eq(got.events[2].id, 1);
	ck_assert_uint_eq(got.events[2].bytes, 12345);
	ck_assert(got.events[2].value == 0.25);
	ck_assert_uint_eq(got.events[3].kind, SH5EV_K_EXIT);
	ck_assert_int_le(got.events[0].time_ns, got.events[3].time_ns);
	ck_assert_int_gt(got.events[0].time_ns, T0);
	evtest_got_free(&got);
}
END_TEST

START_TEST(test_evlog_off_without_dir)
{
	unsetenv("SH5_EVENTS_DIR");
	ck_assert_int_eq(sh5_evlog_open(), 0);
	ck_assert_int_eq(sh5_evlog_on(), 0);
	ck_assert_int_eq(sh5_ev_region("x"), -1);
	sh5_ev_enter(0);
	sh5_ev_phase();
	sh5_ev_object(1, 1.0);
	sh5_evlog_close();
	ck_assert_int_eq(evtest_files(NULL), 0);
}
END_TEST

START_TEST(test_evlog_no_file_when_nothing_recorded)
{
	struct sh5_evlog_stats st;

	evtest_start(NULL, NULL);
	sh5_evlog_close();
	sh5_evlog_close();
	sh5_evlog_stats(&st);
	ck_assert_uint_eq(st.recorded + st.lost + st.blocks, 0);
	ck_assert_int_eq(evtest_files(NULL), 0);
	/* after close, nothing is recorded and nothing breaks */
	sh5_ev_enter(0);
	ck_assert_int_eq(sh5_ev_region("late"), -1);
	ck_assert_int_eq(evtest_files(NULL), 0);
}
END_TEST

/* ---------------------------------------------------------------- cap */

/* Two blocks allowed: 2 * cap - 1 events fit, the rest are counted in a
 * LOST record at close; the file is exactly header + 2 blocks. */
START_TEST(test_evlog_cap_writes_lost)
{
	struct sh5_evspill_info info;
	struct sh5_evlog_stats st;
	struct sh5_error err = { "" };
	struct evtest_got got;
	uint32_t cap = sh5ev_block_capacity(4096), i;
	char name[256], max[32];
	struct stat sb;

	snprintf(max, sizeof(max), "%u", SH5EV_HEADER_SIZE + 2 * 4096 + 100);
	evtest_start("4096", max);
	for (i = 0; i < 1000; i++)
		sh5_evlog_event(SH5EV_K_PHASE, 0, 0, i, 0, -1, 0, T0 + i);
	sh5_evlog_stats(&st);
	ck_assert_uint_eq(st.recorded, 2 * cap - 1);
	ck_assert_uint_eq(st.lost, 1000 - (2 * cap - 1));
	sh5_evlog_close();

	ck_assert_int_eq(evtest_files(name), 1);
	ck_assert_int_eq(stat(evtest_path(name), &sb), 0);
	ck_assert_int_eq(sb.st_size, SH5EV_HEADER_SIZE + 2 * 4096);
	ck_assert_msg(evtest_read(name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(info.events, 2 * cap);
	ck_assert_uint_eq(info.lost, 1000 - (2 * cap - 1));
	ck_assert_uint_eq(got.events[2 * cap - 1].kind, SH5EV_K_LOST);
	ck_assert_uint_eq(got.events[2 * cap - 1].bytes, info.lost);
	ck_assert_uint_eq(got.events[2 * cap - 2].id, 2 * cap - 2);
	evtest_got_free(&got);
}
END_TEST

/* A definition that would not fit under the cap is not begun (never a
 * definition cut in half); what follows is lost. */
START_TEST(test_evlog_cap_definition_not_cut)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	uint32_t cap = sh5ev_block_capacity(4096), i;
	char name[256], max[32], big[SH5EV_NAME_MAX + 1];
	int32_t id;

	snprintf(max, sizeof(max), "%u", SH5EV_HEADER_SIZE + 4096);
	evtest_start("4096", max);
	for (i = 0; i < cap - 4; i++)
		sh5_evlog_event(SH5EV_K_PHASE, 0, 0, i, 0, -1, 0, T0 + i);
	memset(big, 'r', SH5EV_NAME_MAX);
	big[SH5EV_NAME_MAX] = '\0';
	id = sh5_evlog_region(big, 0);	/* 5 records: 3 left */
	ck_assert_int_ge(id, 0);
	sh5_evlog_event(SH5EV_K_ENTER, 0, 0, (uint32_t)id, 0, 0, 0, T0 + cap);
	sh5_evlog_close();

	ck_assert_int_eq(evtest_files(name), 1);
	ck_assert_msg(evtest_read(name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(got.nregions, 0);
	ck_assert_uint_eq(info.rejected, 0);
	ck_assert_uint_eq(info.events, cap - 4 + 1);
	ck_assert_uint_eq(info.lost, 2);
	evtest_got_free(&got);
}
END_TEST

/* ------------------------------------------------- writer thread */

static int count_threads(void)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* The threads of this process once a joined thread has left
 * /proc/self/task: pthread_join() returns when the thread has exited,
 * and the kernel removes its task entry a moment later (seen under load:
 * 2 right after the join).  Waits at most 2 s for want. */
static int count_threads_settled(int want)
{
	int i, n = count_threads();

	for (i = 0; i < 200 && n != want; i++) {
		usleep(10000);
		n = count_threads();
	}
	return n;
}

/* SH5_EVENTS_WRITER=thread: the same file as the default, and no thread
 * left after close. */
START_TEST(test_evlog_writer_thread_roundtrip)
{
	struct sh5_evspill_info info;
	struct sh5_evlog_stats st;
	struct sh5_error err = { "" };
	struct evtest_got got;
	struct want w = { { 0 }, 0 };
	char name[256];

	setenv("SH5_EVENTS_WRITER", "thread", 1);
	ck_assert_int_eq(count_threads(), 1);
	evtest_start("4096", NULL);
	write_mix(&w, 20000, 7);
	ck_assert_int_eq(count_threads(), 2);	/* the writer */
	sh5_evlog_close();
	ck_assert_int_eq(count_threads_settled(1), 1);	/* joined */
	sh5_evlog_stats(&st);
	ck_assert_uint_eq(st.recorded, 20000);
	ck_assert_uint_eq(st.lost, 0);
	ck_assert_int_eq(evtest_files(name), 1);
	ck_assert_msg(evtest_read(name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(info.blocks, st.blocks);
	ck_assert_uint_eq(info.blocks_bad, 0);
	ck_assert_int_eq(info.torn_tail, 0);
	ck_assert_uint_eq(info.events, 20000);
	assert_same(&got, &w.g);
	evtest_got_free(&got);
	evtest_got_free(&w.g);
}
END_TEST

/* With the writer thread a kill -9 loses the current block and at most
 * the 3 queued ones; what was written is intact (a queued block passed
 * by one written inline reads as a bad block). */
START_TEST(test_evlog_writer_thread_kill9)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	uint32_t cap = sh5ev_block_capacity(4096);
	char name[256];
	pid_t pid;
	int i, status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		setenv("SH5_EVENTS_WRITER", "thread", 1);
		evtest_start("4096", NULL);
		for (i = 0; i < 1000; i++)
			sh5_evlog_event(SH5EV_K_PHASE, 0, 0, (uint32_t)i, 0,
					-1, 0, T0 + i);
		raise(SIGKILL);
		_exit(3);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_assert_int_eq(evtest_files(name), 1);
	ck_assert_msg(evtest_read(name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_ge(info.blocks, 1000 / cap - 3);
	ck_assert_uint_le(info.blocks_bad, 3);
	ck_assert_uint_eq(got.nevents, info.blocks * cap);
	for (i = 1; i < (int)got.nevents; i++)
		ck_assert_uint_gt(got.events[i].id, got.events[i - 1].id);
	evtest_got_free(&got);
}
END_TEST

static Suite *evlog_suite(void)
{
	Suite *s = suite_create("evlog");
	TCase *tc = tcase_create("evlog");

	tcase_add_checked_fixture(tc, evtest_setup, evtest_teardown);
	tcase_add_loop_test(tc, test_evlog_roundtrip_block_sizes, 0,
			    sizeof(sizes) / sizeof(sizes[0]));
	tcase_add_test(tc, test_evlog_definition_crosses_block);
	tcase_add_test(tc, test_evlog_public_api);
	tcase_add_test(tc, test_evlog_off_without_dir);
	tcase_add_test(tc, test_evlog_no_file_when_nothing_recorded);
	tcase_add_test(tc, test_evlog_cap_writes_lost);
	tcase_add_test(tc, test_evlog_cap_definition_not_cut);
	tcase_add_test(tc, test_evlog_writer_thread_roundtrip);
	tcase_add_test(tc, test_evlog_writer_thread_kill9);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(evlog_suite());
	int failed;

	/* one log per process: each test needs a fresh child */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

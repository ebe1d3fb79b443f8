/*
 * test_evspill.c - the spill-file reader on damaged and hostile files:
 * torn tails, damaged blocks, definitions cut by a dropped block, bad
 * headers and versions, symlinks, FIFOs, other owners, hard links, the
 * size limit, invalid records, file names, and random damage.
 * Files are made with the real writer (evlog.c), then altered.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "evtest.h"

#define T0 1700000000000000000ll
#define BS 4096u
#define CAP ((BS - SH5EV_BLOCK_HEADER_SIZE) / SH5EV_REC_SIZE)

static char g_name[256];

/* A file of one region ("r", 2 records) then n ENTER events of it, in
 * 4 KiB blocks: block 0 holds CAP - 2 events, the others CAP. */
static void write_simple(uint32_t n)
{
	int32_t r;
	uint32_t i;

	evtest_start("4096", NULL);
	r = sh5_evlog_region("r", 0);
	ck_assert_int_eq(r, 0);
	for (i = 0; i < n; i++)
		sh5_evlog_event(SH5EV_K_ENTER, 0, 0, 0, 0, 0, i, T0 + i);
	sh5_evlog_close();
	ck_assert_int_eq(evtest_files(g_name), 1);
}

static void flip(const char *name, off_t off)
{
	unsigned char c;
	int fd = open(evtest_path(name), O_RDWR);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &c, 1, off), 1);
	c ^= 0x40;
	ck_assert_int_eq(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

static off_t block_off(uint32_t b)
{
	return SH5EV_HEADER_SIZE + (off_t)b * BS;
}

START_TEST(test_evspill_torn_tail)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;

	write_simple(1000);
	ck_assert_int_eq(truncate(evtest_path(g_name), block_off(4) + 1000), 0);
	ck_assert_msg(evtest_read(g_name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_int_eq(info.torn_tail, 1);
	ck_assert_uint_eq(info.blocks, 4);
	ck_assert_uint_eq(info.blocks_bad, 0);
	ck_assert_uint_eq(info.events, 4 * CAP - 2);
	ck_assert_uint_eq(got.nevents, 4 * CAP - 2);
	ck_assert_uint_eq(got.events[4 * CAP - 3].bytes, 4 * CAP - 3);
	ck_assert_ptr_nonnull(strstr(info.first_problem, "torn"));
	evtest_got_free(&got);
}
END_TEST

/* A byte flipped in a block's records, header magic or sequence: that
 * block is dropped, the others kept. */
START_TEST(test_evspill_damaged_block_dropped)
{
	static const off_t where[] = { 100, 0, 4, 8, 16, BS - 10 };
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	uint32_t i;

	write_simple(1000);	/* 1002 records: 9 full blocks + 93 */
	flip(g_name, block_off(2) + where[_i]);
	ck_assert_msg(evtest_read(g_name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	if (where[_i] == BS - 10) {	/* padding: not covered, harmless */
		ck_assert_uint_eq(info.blocks_bad, 0);
		ck_assert_uint_eq(info.events, 1000);
		evtest_got_free(&got);
		return;
	}
	ck_assert_uint_eq(info.blocks_bad, 1);
	ck_assert_uint_eq(info.blocks, 9);
	ck_assert_uint_eq(info.events, 1000 - CAP);
	ck_assert_uint_eq(info.rejected, 0);
	ck_assert_ptr_nonnull(strstr(info.first_problem, "block 2"));
	for (i = 0; i < got.nevents; i++)
		ck_assert_uint_eq(got.events[i].bytes,
				  i < 2 * CAP - 2 ? i : i + CAP);
	evtest_got_free(&got);
}
END_TEST

static void patch_header(const char *name, size_t off, const void *bytes,
			 size_t len, int fix);

/* A block of magic 0 (block 3's header zeroed): in a file flagged
 * SH5EV_HF_AHEAD (the default writer's) the unwritten end: reading stops
 * there, nothing counted bad; without the flag (version 1, or the
 * pwrite writers) a bad block, dropped, and reading goes on. */
START_TEST(test_evspill_zero_block)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	unsigned char zero[SH5EV_BLOCK_HEADER_SIZE] = { 0 };
	uint32_t v;

	write_simple(1000);	/* 1002 records: 9 full blocks + 93 */
	if (_i == 1) {
		v = 0;
		patch_header(g_name, offsetof(struct sh5ev_file_header, flags),
			     &v, 4, 1);
	}
	patch_header(g_name, (size_t)block_off(3), zero, sizeof(zero), 0);
	ck_assert_msg(evtest_read(g_name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	if (_i == 0) {
		ck_assert_uint_eq(info.flags, SH5EV_HF_AHEAD);
		ck_assert_uint_eq(info.blocks, 3);
		ck_assert_uint_eq(info.blocks_bad, 0);
		ck_assert_uint_eq(info.unwritten, 7 * BS);
		ck_assert_uint_eq(got.nevents, 3 * CAP - 2);
		ck_assert_ptr_nonnull(strstr(info.first_problem,
					     "unfinished block 3"));
	} else {
		ck_assert_uint_eq(info.flags, 0);
		ck_assert_uint_eq(info.blocks, 9);
		ck_assert_uint_eq(info.blocks_bad, 1);
		ck_assert_uint_eq(info.unwritten, 0);
		ck_assert_uint_eq(got.nevents, 1000 - CAP);
	}
	evtest_got_free(&got);
}
END_TEST

/* A region whose 127-byte name (4 payload records) begins in block 0 and
 * ends in block 1, then 150 ENTERs of it.  Dropping block 0 drops the
 * definition: block 1's leading payload is skipped (cont) and the ENTERs
 * are rejected as undefined; dropping block 1 cuts the definition. */
START_TEST(test_evspill_definition_cut_by_dropped_block)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	char name[SH5EV_NAME_MAX + 1];
	uint32_t i, bad = (uint32_t)_i;
	int32_t r;

	evtest_start("4096", NULL);
	for (i = 0; i < CAP - 2; i++)
		sh5_evlog_event(SH5EV_K_OBJECT, 0, 0, 0, 0, 0, i, T0 + i);
	memset(name, 'n', SH5EV_NAME_MAX);
	name[SH5EV_NAME_MAX] = '\0';
	r = sh5_evlog_region(name, 0);	/* CAP-2, CAP-1 | 0, 1, 2 */
	for (i = 0; i < 150; i++)
		sh5_evlog_event(SH5EV_K_ENTER, 0, 0, (uint32_t)r, 0, 0, 0,
				T0 + CAP + i);
	sh5_evlog_close();
	ck_assert_int_eq(evtest_files(g_name), 1);
	flip(g_name, block_off(bad) + SH5EV_BLOCK_HEADER_SIZE + 50);

	ck_assert_msg(evtest_read(g_name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(info.blocks_bad, 1);
	ck_assert_uint_eq(got.nregions, 0);
	if (bad == 0) {
		ck_assert_uint_eq(info.events, 0);
		ck_assert_uint_eq(info.rejected, 150);
	} else {
		/* block 1: 3 payload + CAP - 3 ENTERs; block 2: the rest */
		ck_assert_uint_eq(info.events, CAP - 2);
		ck_assert_uint_eq(info.rejected, 1 + 150 - (CAP - 3));
	}
	evtest_got_free(&got);
}
END_TEST

/* ------------------------------------------------------------ header */

static void patch_header(const char *name, size_t off, const void *bytes,
			 size_t len, int fix)
{
	int fd = open(evtest_path(name), O_RDWR);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, bytes, len, (off_t)off), (ssize_t)len);
	close(fd);
	if (fix)
		evtest_fix_header(evtest_path(name));
}

START_TEST(test_evspill_bad_header)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	uint32_t v;

	write_simple(10);
	switch (_i) {
	case 0:
		patch_header(g_name, 0, "X", 1, 1);
		ck_assert_int_eq(evtest_read(g_name, 0, &got, &info, &err), -1);
		ck_assert_int_eq(errno, EBADMSG);
		ck_assert_ptr_nonnull(strstr(err.text, "magic"));
		break;
	case 1:
		v = 3;
		patch_header(g_name, offsetof(struct sh5ev_file_header,
					      version), &v, 4, 1);
		ck_assert_int_eq(evtest_read(g_name, 0, &got, &info, &err), -1);
		ck_assert_int_eq(errno, EPROTONOSUPPORT);
		ck_assert_ptr_nonnull(strstr(err.text, "version 3"));
		ck_assert_ptr_nonnull(strstr(err.text, "versions 1 to 2"));
		break;
	case 2:
		v = 0x04030201;
		patch_header(g_name, offsetof(struct sh5ev_file_header,
					      byte_order), &v, 4, 1);
		ck_assert_int_eq(evtest_read(g_name, 0, &got, &info, &err), -1);
		ck_assert_int_eq(errno, EPROTONOSUPPORT);
		ck_assert_ptr_nonnull(strstr(err.text, "byte order"));
		break;
	case 3:
		patch_header(g_name, 100, "?", 1, 0);
		ck_assert_int_eq(evtest_read(g_name, 0, &got, &info, &err), -1);
		ck_assert_ptr_nonnull(strstr(err.text, "checksum"));
		break;
	case 4:
		v = 3000;
		patch_header(g_name, offsetof(struct sh5ev_file_header,
					      block_size), &v, 4, 1);
		ck_assert_int_eq(evtest_read(g_name, 0, &got, &info, &err), -1);
		ck_assert_ptr_nonnull(strstr(err.text, "block size 3000"));
		break;
	case 5:
		v = 1u << 31;
		patch_header(g_name, offsetof(struct sh5ev_file_header,
					      block_size), &v, 4, 1);
		ck_assert_int_eq(evtest_read(g_name, 0, &got, &info, &err), -1);
		break;
	case 6:
		ck_assert_int_eq(truncate(evtest_path(g_name), 255), 0);
		ck_assert_int_eq(evtest_read(g_name, 0, &got, &info, &err), -1);
		ck_assert_ptr_nonnull(strstr(err.text, "too short"));
		break;
	case 7:	/* a prefix without its NUL */
		patch_header(g_name, offsetof(struct sh5ev_file_header, prefix),
			     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 128, 1);
		ck_assert_int_eq(evtest_read(g_name, 0, &got, &info, &err), -1);
		break;
	}
	ck_assert_ptr_nonnull(strstr(err.text, g_name));
	ck_assert_uint_eq(got.nevents + got.nregions, 0);
}
END_TEST

/* --------------------------------------------------------- file checks */

START_TEST(test_evspill_refuses_links_fifos_owners)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	char path[512];
	int dfd;

	write_simple(10);
	snprintf(path, sizeof(path), "%s", evtest_path(g_name));

	ck_assert_int_eq(symlink(path, evtest_path("link.sh5ev")), 0);
	ck_assert_int_eq(evtest_read("link.sh5ev", 0, &got, &info, &err), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_ptr_nonnull(strstr(err.text, "symbolic link"));

	ck_assert_int_eq(mkfifo(evtest_path("fifo.sh5ev"), 0600), 0);
	ck_assert_int_eq(evtest_read("fifo.sh5ev", 0, &got, &info, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "not a regular file"));

	ck_assert_int_eq(mkdir(evtest_path("dir.sh5ev"), 0700), 0);
	ck_assert_int_eq(evtest_read("dir.sh5ev", 0, &got, &info, &err), -1);
	ck_assert_int_eq(rmdir(evtest_path("dir.sh5ev")), 0);

	ck_assert_int_eq(evtest_read("missing.sh5ev", 0, &got, &info, &err),
			 -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(evtest_read("../x.sh5ev", 0, &got, &info, &err), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(evtest_read("..", 0, &got, &info, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.text, "not a plain file name"));

	ck_assert_int_eq(link(path, evtest_path("hard.sh5ev")), 0);
	ck_assert_int_eq(evtest_read(g_name, 0, &got, &info, &err), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_ptr_nonnull(strstr(err.text, "2 links"));
	ck_assert_int_eq(unlink(evtest_path("hard.sh5ev")), 0);
	ck_assert_int_eq(evtest_read(g_name, 0, &got, &info, &err), 0);
	evtest_got_free(&got);

	if (getuid() != 0)
		return;	/* chown needs root */
	ck_assert_int_eq(chown(path, 65534, 65534), 0);
	ck_assert_int_eq(evtest_read(g_name, 0, &got, &info, &err), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_ptr_nonnull(strstr(err.text, "owned by uid 65534"));
	dfd = open(evtest_dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(sh5_evspill_read(dfd, g_name, 65534, 0, NULL, &info,
					  &err), 0);
	ck_assert_uint_eq(info.events, 10);
	close(dfd);
}
END_TEST

START_TEST(test_evspill_max_bytes)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;

	write_simple(1000);
	ck_assert_msg(evtest_read(g_name, block_off(3) + 100, &got, &info,
				  &err) == 0, "%s", err.text);
	ck_assert_int_eq(info.truncated, 1);
	ck_assert_int_eq(info.torn_tail, 0);
	ck_assert_uint_eq(info.blocks, 3);
	ck_assert_uint_eq(info.events, 3 * CAP - 2);
	ck_assert_uint_eq(info.file_bytes, block_off(10));
	evtest_got_free(&got);
	ck_assert_int_eq(evtest_read(g_name, 10, &got, &info, &err), 0);
	ck_assert_uint_eq(info.blocks, 0);
	ck_assert_int_eq(info.truncated, 1);
	evtest_got_free(&got);
}
END_TEST

/* ------------------------------------------------------------ records */

START_TEST(test_evspill_invalid_records_rejected)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	struct sh5ev_rec bad;
	int32_t r;

	evtest_start(NULL, NULL);
	r = sh5_evlog_region("a", 0);
	sh5_evlog_event(SH5EV_K_ENTER, 0, 0, (uint32_t)r, 0, 0, 0, T0 + 100);
	sh5_evlog_event(SH5EV_K_ENTER, 0, 0, 77, 0, 0, 0, T0 + 101);
	sh5_evlog_event(SH5EV_K_ENTER, 0, 0, (uint32_t)r, 0, 0, 0, T0 + 50);
	memset(&bad, 0, sizeof(bad));
	bad.time_ns = T0 + 102;
	sh5_evlog_put(&bad);			/* kind 0 */
	bad.kind = 99;
	sh5_evlog_put(&bad);
	bad.kind = SH5EV_K_PHASE;
	bad.flags = 0x8000;
	sh5_evlog_put(&bad);
	sh5_evlog_event(SH5EV_K_CBEGIN, 0, 0, 0, -1, 0, 0, T0 + 103);
	sh5_evlog_event(SH5EV_K_CBEGIN, SH5EV_OP_COUNT, 0, 0, -1, 0, 0,
			T0 + 103);
	sh5_evlog_event(SH5EV_K_SEND, 0, 0, 5, 1, 0, 0, T0 + 104);
	sh5_evlog_event(SH5EV_K_SEND, 0, 0, 0, -3, 0, 0, T0 + 104);
	sh5_evlog_event(SH5EV_K_RANK, 0, 0, 4, 5, 0, 0, T0 + 104);
	/* valid ones */
	sh5_evlog_event(SH5EV_K_SEND, 0, 0, 1, 3, 0, 8, T0 + 105);
	sh5_evlog_event(SH5EV_K_CEND, SH5EV_OP_ALLREDUCE, 0, 0, -1, 0, 8,
			T0 + 106);
	sh5_evlog_event(SH5EV_K_EXIT, 0, 0, (uint32_t)r, 0, 0, 0, T0 + 200);
	sh5_evlog_close();
	ck_assert_int_eq(evtest_files(g_name), 1);

	ck_assert_msg(evtest_read(g_name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(info.rejected, 10);
	ck_assert_uint_eq(info.events, 4);
	ck_assert_uint_eq(got.events[0].time_ns, T0 + 100);
	ck_assert_uint_eq(got.events[1].kind, SH5EV_K_SEND);
	ck_assert_uint_eq(got.events[2].op, SH5EV_OP_ALLREDUCE);
	ck_assert_uint_eq(got.events[3].kind, SH5EV_K_EXIT);
	ck_assert_str_eq(info.first_problem,
			 "block 0 record 3: undefined region");
	evtest_got_free(&got);
}
END_TEST

/* Definitions that are themselves wrong: defined twice, comm id 0/1,
 * bad size/rank, negative member, unprintable name bytes. */
START_TEST(test_evspill_invalid_definitions)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	struct sh5ev_rec d;
	int32_t m[3] = { 0, -5, 2 }, ok[2] = { 4, 6 };

	evtest_start(NULL, NULL);
	ck_assert_int_eq(sh5_evlog_region("a\tb\x7f", 0), 0);
	memset(&d, 0, sizeof(d));
	d.kind = SH5EV_K_DEFREGION;	/* region 0 again, name "zz" */
	d.bytes = 2;
	sh5_evlog_put(&d);
	memset(&d, 0, sizeof(d));
	memcpy(&d, "zz", 2);
	sh5_evlog_put(&d);
	memset(&d, 0, sizeof(d));
	d.kind = SH5EV_K_DEFCOMM;	/* local id 1 */
	d.id = 1;
	d.peer = 1;
	sh5_evlog_put(&d);
	d.id = 3;			/* rank 2 of 2 */
	d.peer = 2;
	d.tag = 2;
	sh5_evlog_put(&d);
	sh5_evlog_comm(4, 4, 3, 0, m);	/* a negative member */
	sh5_evlog_comm(5, 5, 2, 1, ok);
	sh5_evlog_comm(5, 5, 2, 1, ok);	/* twice */
	sh5_evlog_event(SH5EV_K_SEND, 0, 0, 4, 1, 0, 0, T0 + 1);
	sh5_evlog_event(SH5EV_K_SEND, 0, 0, 5, 1, 0, 0, T0 + 2);
	sh5_evlog_close();
	ck_assert_int_eq(evtest_files(g_name), 1);

	ck_assert_msg(evtest_read(g_name, 0, &got, &info, &err) == 0, "%s",
		      err.text);
	ck_assert_uint_eq(got.nregions, 1);
	ck_assert_str_eq(got.regions[0].name, "a?b?");
	ck_assert_uint_eq(got.ncomms, 1);
	ck_assert_uint_eq(got.comms[0].local, 5);
	ck_assert_mem_eq(got.comms[0].members, ok, sizeof(ok));
	ck_assert_uint_eq(info.events, 1);
	ck_assert_uint_eq(info.rejected, 6);
	evtest_got_free(&got);
}
END_TEST

START_TEST(test_evspill_name_parse)
{
	static const struct {
		const char *name;
		int ok;
		uint32_t task, pid;
	} t[] = {
		{ "12_0_n1.3.4567.sh5ev", 0, 3, 4567 },
		{ "12_0_n1.0.1.sh5ev", 0, 0, 1 },
		{ "12_0_n1.4294967295.4294967295.sh5ev", 0, 4294967295u,
		  4294967295u },
		{ "12_0_n1.4294967296.1.sh5ev", -1, 0, 0 },
		{ "12_0_n1.03.1.sh5ev", -1, 0, 0 },
		{ "12_0_n1.3.1.sh5ev.tmp", -1, 0, 0 },
		{ "12_0_n1.3.1.sh5e", -1, 0, 0 },
		{ "12_0_n1..1.sh5ev", -1, 0, 0 },
		{ "12_0_n1.-3.1.sh5ev", -1, 0, 0 },
		{ "12_0_n1.3.sh5ev", -1, 0, 0 },
		{ "12_0_n2.3.1.sh5ev", -1, 0, 0 },
		{ "12_0_n1x3.1.sh5ev", -1, 0, 0 },
		{ "12_0_n1.3.1.2.sh5ev", -1, 0, 0 },
		{ "12_0_n1", -1, 0, 0 },
		{ "", -1, 0, 0 },
	};
	uint32_t task, pid;
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		task = pid = 7;
		ck_assert_msg(sh5_evspill_name_parse(t[i].name, "12_0_n1",
						     &task, &pid) == t[i].ok,
			      "%s", t[i].name);
		if (t[i].ok == 0) {
			ck_assert_uint_eq(task, t[i].task);
			ck_assert_uint_eq(pid, t[i].pid);
		}
	}
}
END_TEST

/* ------------------------------------------------------------- damage */

/* Random bytes of random records overwritten, checksums then made
 * right so the damage reaches the record checks (or left wrong); the
 * reader never fails, crashes or passes on more than it was given. */
START_TEST(test_evspill_random_damage)
{
	struct sh5_evspill_info info;
	struct sh5_error err = { "" };
	struct evtest_got got;
	char copy[] = "damaged.sh5ev";
	uint64_t seed = 1234 + (uint64_t)_i, x;
	struct stat sb;
	unsigned char *buf;
	int fd, round, k;
	int32_t members[40];

	evtest_start("4096", NULL);
	for (k = 0; k < 40; k++)
		members[k] = k;
	for (k = 0; k < 3000; k++) {
		if (k % 200 == 0) {
			char name[32];

			snprintf(name, sizeof(name), "region %d", k);
			sh5_evlog_region(name, 0);
			sh5_evlog_comm(2 + (uint32_t)k / 200, 1, 40, 1,
				       members);
		}
		sh5_evlog_event((uint8_t)(SH5EV_K_ENTER + k % 2), 0, 0,
				(uint32_t)(k / 200), 0, 0, 0, T0 + k);
	}
	sh5_evlog_close();
	ck_assert_int_eq(evtest_files(g_name), 1);
	ck_assert_int_eq(stat(evtest_path(g_name), &sb), 0);
	buf = malloc((size_t)sb.st_size);
	fd = open(evtest_path(g_name), O_RDONLY);
	ck_assert_int_eq(read(fd, buf, (size_t)sb.st_size), sb.st_size);
	close(fd);

	for (round = 0; round < 40; round++) {
		unsigned char *m = malloc((size_t)sb.st_size);
		off_t size = sb.st_size;

		memcpy(m, buf, (size_t)size);
		for (k = 0; k < 1 + round % 8; k++) {
			x = evtest_rand(&seed);
			m[SH5EV_HEADER_SIZE +
			  x % (uint64_t)(size - SH5EV_HEADER_SIZE)] =
				(unsigned char)(x >> 56);
		}
		if (round % 5 == 4)
			size -= (off_t)(evtest_rand(&seed) % 5000);
		fd = open(evtest_path(copy), O_WRONLY | O_CREAT | O_TRUNC,
			  0600);
		ck_assert_int_eq(write(fd, m, (size_t)size), size);
		close(fd);
		free(m);
		if (round % 2 == 0)
			evtest_fix_blocks(evtest_path(copy));
		ck_assert_msg(evtest_read(copy, 0, &got, &info, &err) == 0,
			      "%s", err.text);
		ck_assert_uint_le(info.events + info.rejected,
				  (uint64_t)(size / SH5EV_REC_SIZE));
		ck_assert_uint_eq(got.nevents, info.events);
		ck_assert_uint_le(got.nregions, 15);
		ck_assert_uint_le(got.ncomms, 15);
		for (k = 1; k < (int)got.nevents; k++)
			ck_assert_int_le(got.events[k - 1].time_ns,
					 got.events[k].time_ns);
		evtest_got_free(&got);
	}
	free(buf);
}
END_TEST

static Suite *evspill_suite(void)
{
	Suite *s = suite_create("evspill");
	TCase *tc = tcase_create("evspill");

	tcase_add_checked_fixture(tc, evtest_setup, evtest_teardown);
	tcase_add_test(tc, test_evspill_torn_tail);
	tcase_add_loop_test(tc, test_evspill_zero_block, 0, 2);
	tcase_add_loop_test(tc, test_evspill_damaged_block_dropped, 0, 6);
	tcase_add_loop_test(tc, test_evspill_definition_cut_by_dropped_block,
			    0, 2);
	tcase_add_loop_test(tc, test_evspill_bad_header, 0, 8);
	tcase_add_test(tc, test_evspill_refuses_links_fifos_owners);
	tcase_add_test(tc, test_evspill_max_bytes);
	tcase_add_test(tc, test_evspill_invalid_records_rejected);
	tcase_add_test(tc, test_evspill_invalid_definitions);
	tcase_add_test(tc, test_evspill_name_parse);
	tcase_add_loop_test(tc, test_evspill_random_damage, 0, 5);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(evspill_suite());
	int failed;

	/* one log per process: each test needs a fresh child */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

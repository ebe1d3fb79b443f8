/* test_seal.c - seals of node-step files: a sealed file verifies, any
 * flipped byte, a cut, another key or another identity does not; key
 * files are refused unless private, regular and long enough. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "profile/seal.h"

static char dir[] = "/tmp/sh5-test-seal.XXXXXX";

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	strcpy(dir, "/tmp/sh5-test-seal.XXXXXX");
}

/* Write n bytes of b (mode) at dir/name into path. */
static void put_file(const char *name, const void *b, size_t n, mode_t mode,
		     char *path, size_t plen)
{
	int fd;

	snprintf(path, plen, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, n), (ssize_t)n);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

static void load_key(const char *name, unsigned char fill,
		     struct sh5_seal_key *k)
{
	unsigned char b[48];
	char path[256];
	struct sh5_error err = { "" };

	memset(b, fill, sizeof(b));
	put_file(name, b, sizeof(b), 0600, path, sizeof(path));
	ck_assert_msg(sh5_seal_key_load(path, getuid(), k, &err) == 0, "%s",
		      err.text);
}

/* A file of n pseudo-random bytes sealed with k for id; its bytes (with
 * the trailer) in *out, their number in *size. */
static void sealed_file(size_t n, const struct sh5_seal_key *k,
			const struct sh5_seal_id *id, unsigned char **out,
			uint64_t *size)
{
	unsigned char *b = malloc(n + SH5_SEAL_TRAILER);
	struct sh5_error err = { "" };
	char path[256];
	size_t i;
	int fd;

	ck_assert_ptr_nonnull(b);
	for (i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 2654435761u >> 13);
	put_file("data.h5", b, n, 0600, path, sizeof(path));
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(sh5_seal_fd(fd, k, id, &err) == 0, "%s", err.text);
	/* Sealed twice: refused, the file unchanged. */
	ck_assert_int_eq(sh5_seal_fd(fd, k, id, &err), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_int_eq(pread(fd, b, n + SH5_SEAL_TRAILER, 0),
			 (ssize_t)(n + SH5_SEAL_TRAILER));
	ck_assert_int_eq(lseek(fd, 0, SEEK_END),
			 (off_t)(n + SH5_SEAL_TRAILER));
	close(fd);
	*out = b;
	*size = n + SH5_SEAL_TRAILER;
}

static const struct sh5_seal_id ident = { 42, "0", "node1",
					  "42_0_node1.h5" };

START_TEST(test_seal_verifies)
{
	static const size_t sizes[] = { 0, 1, 4096, 300001 };
	struct sh5_seal_key k;
	unsigned char *b;
	uint64_t size, len = 0;
	uint32_t crc = 0;

	load_key("key", 7, &k);
	sealed_file(sizes[_i], &k, &ident, &b, &size);
	ck_assert_int_eq(sh5_seal_check(b, size, &k, &ident, &len, &crc),
			 SH5_SEAL_OK);
	ck_assert_uint_eq(len, sizes[_i]);
	/* The CRC of the whole file, trailer included. */
	ck_assert_uint_eq(crc, (uint32_t)crc32(0, b, (uInt)size));
	free(b);
}
END_TEST

START_TEST(test_seal_flipped_byte)
{
	struct sh5_seal_key k;
	unsigned char *b;
	uint64_t size, len, pos, step;
	uint32_t crc;

	load_key("key", 7, &k);
	sealed_file(20000, &k, &ident, &b, &size);
	/* Every byte of the trailer and every 97th of the data. */
	for (pos = 0; pos < size; pos += step) {
		enum sh5_seal_state s;

		step = pos + 97 < size - SH5_SEAL_TRAILER ? 97 : 1;
		b[pos] ^= 0x01;
		s = sh5_seal_check(b, size, &k, &ident, &len, &crc);
		ck_assert_msg(s != SH5_SEAL_OK, "byte %llu flipped: verifies",
			      (unsigned long long)pos);
		b[pos] ^= 0x01;
	}
	ck_assert_int_eq(sh5_seal_check(b, size, &k, &ident, &len, &crc),
			 SH5_SEAL_OK);
	free(b);
}
END_TEST

START_TEST(test_seal_truncated_or_extended)
{
	struct sh5_seal_key k;
	unsigned char *b, *c;
	uint64_t size, len, n;
	uint32_t crc;

	load_key("key", 7, &k);
	sealed_file(5000, &k, &ident, &b, &size);
	for (n = 1; n <= SH5_SEAL_TRAILER + 1; n += 8)
		ck_assert_int_eq(sh5_seal_check(b, size - n, &k, &ident, &len,
						&crc), SH5_SEAL_NONE);
	/* Bytes appended after the trailer: no trailer at the end. */
	c = calloc(1, size + 16);
	ck_assert_ptr_nonnull(c);
	memcpy(c, b, size);
	ck_assert_int_eq(sh5_seal_check(c, size + 16, &k, &ident, &len, &crc),
			 SH5_SEAL_NONE);
	/* A trailer cut out of another file and put at the end of this
	 * one's first half: it covers other bytes. */
	memcpy(c + 2000, b + size - SH5_SEAL_TRAILER, SH5_SEAL_TRAILER);
	ck_assert_int_eq(sh5_seal_check(c, 2000 + SH5_SEAL_TRAILER, &k, &ident,
					&len, &crc), SH5_SEAL_NONE);
	free(c);
	free(b);
}
END_TEST

START_TEST(test_seal_other_key)
{
	struct sh5_seal_key k, other;
	unsigned char *b;
	uint64_t size, len;
	uint32_t crc;

	load_key("key", 7, &k);
	load_key("key2", 8, &other);
	ck_assert_mem_ne(k.id, other.id, sizeof(k.id));
	sealed_file(5000, &k, &ident, &b, &size);
	ck_assert_int_eq(sh5_seal_check(b, size, &other, &ident, &len, &crc),
			 SH5_SEAL_OTHER_KEY);
	/* The other key's id written in: the MAC still does not match. */
	memcpy(b + size - SH5_SEAL_TRAILER + 32, other.id, sizeof(other.id));
	ck_assert_int_eq(sh5_seal_check(b, size, &other, &ident, &len, &crc),
			 SH5_SEAL_MISMATCH);
	free(b);
}
END_TEST

START_TEST(test_seal_wrong_identity)
{
	const struct sh5_seal_id ids[] = {
		{ 43, "0", "node1", "42_0_node1.h5" },
		{ 42, "1", "node1", "42_0_node1.h5" },
		{ 42, "0", "node2", "42_0_node1.h5" },
		{ 42, "0", "node1", "42_0_node2.h5" },
		/* the same bytes moved between the strings */
		{ 42, "0n", "ode1", "42_0_node1.h5" },
	};
	struct sh5_seal_key k;
	unsigned char *b;
	uint64_t size, len;
	uint32_t crc;

	load_key("key", 7, &k);
	sealed_file(5000, &k, &ident, &b, &size);
	ck_assert_int_eq(sh5_seal_check(b, size, &k, &ids[_i], &len, &crc),
			 SH5_SEAL_MISMATCH);
	free(b);
}
END_TEST

/* The key at path is refused with errno e and a reason matching why. */
static void refused(const char *path, uid_t owner, int e, const char *why)
{
	struct sh5_error err = { "" };
	struct sh5_seal_key k;

	ck_assert_int_eq(sh5_seal_key_load(path, owner, &k, &err), -1);
	ck_assert_int_eq(errno, e);
	ck_assert_msg(strstr(err.text, why) && strstr(err.text, path),
		      "reason: %s", err.text);
}

START_TEST(test_seal_key_refusals)
{
	unsigned char b[64];
	char path[256], link[256];

	memset(b, 3, sizeof(b));
	put_file("k644", b, 48, 0644, path, sizeof(path));
	refused(path, getuid(), EPERM, "readable or writable by group or "
		"others");
	put_file("k620", b, 48, 0620, path, sizeof(path));
	refused(path, getuid(), EPERM, "group or others");
	put_file("k604", b, 48, 0604, path, sizeof(path));
	refused(path, getuid(), EPERM, "group or others");
	put_file("kshort", b, SH5_SEAL_KEY_MIN - 1, 0600, path, sizeof(path));
	refused(path, getuid(), EPERM, "too short");
	put_file("kok", b, SH5_SEAL_KEY_MIN, 0600, path, sizeof(path));
	refused(path, getuid() + 1, EPERM, "not owned by");
	snprintf(link, sizeof(link), "%s/klink", dir);
	ck_assert_int_eq(symlink(path, link), 0);
	refused(link, getuid(), EPERM, "symbolic link");
	refused(dir, getuid(), EPERM, "not a regular file");
	snprintf(path, sizeof(path), "%s/missing", dir);
	refused(path, getuid(), ENOENT, "No such file");
}
END_TEST

static Suite *seal_suite(void)
{
	Suite *s = suite_create("seal");
	TCase *tc = tcase_create("seal");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_seal_verifies, 0, 4);
	tcase_add_test(tc, test_seal_flipped_byte);
	tcase_add_test(tc, test_seal_truncated_or_extended);
	tcase_add_test(tc, test_seal_other_key);
	tcase_add_loop_test(tc, test_seal_wrong_identity, 0, 5);
	tcase_add_test(tc, test_seal_key_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(seal_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

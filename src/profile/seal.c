/* seal.c - the seal of a closed node-step file (seal.h; the trailer is
 * described in doc/format.md "The seal"). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/gcm.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>

#include "common/checksum.h"
#include "profile/seal.h"

/* Offsets in the trailer (little-endian numbers). */
#define T_MAGIC   0   /* 8 bytes */
#define T_VERSION 8   /* u32: 1 */
#define T_SIZE    12  /* u32: SH5_SEAL_TRAILER */
#define T_LEN     16  /* u64: bytes covered (the trailer's offset) */
#define T_CRC     24  /* u32: CRC-32 of the covered bytes */
#define T_FLAGS   28  /* u32: 0 */
#define T_KEYID   32  /* 8 bytes */
#define T_NONCE   40  /* 12 bytes, random per file */
#define T_MACED   64  /* the bytes above are MACed too; zero to here */
#define T_TAG     64  /* 16 bytes: the GMAC tag */

static const unsigned char magic[8] = { 0x89, 'S', 'H', '5',
					'S', 'E', 'A', 'L' };

static void put_le(unsigned char *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* SHA-256 of label (with its NUL) and the n bytes at p, into out. */
static void derive(const char *label, const void *p, size_t n,
		   unsigned char out[32])
{
	struct sha256_ctx c;

	sha256_init(&c);
	sha256_update(&c, strlen(label) + 1, (const uint8_t *)label);
	sha256_update(&c, n, p);
	sha256_digest(&c, SHA256_DIGEST_SIZE, out);
}

/* Why a key file of mode st is refused, or NULL. */
static const char *key_refusal(const struct stat *st, uid_t owner)
{
	if (!S_ISREG(st->st_mode))
		return "not a regular file";
	if (st->st_uid != owner)
		return owner ? "not owned by the user who reads it" :
			       "not owned by root";
	if (st->st_mode & (S_IRWXG | S_IRWXO))
		return "readable or writable by group or others (anyone "
		       "who can read it can forge seals)";
	if (st->st_size < SH5_SEAL_KEY_MIN)
		return "too short (at least 32 bytes)";
	if (st->st_size > SH5_SEAL_KEY_MAX)
		return "too long (at most 4096 bytes)";
	return NULL;
}

int sh5_seal_key_load(const char *path, uid_t owner,
		      struct sh5_seal_key *key, struct sh5_error *errp)
{
	unsigned char buf[SH5_SEAL_KEY_MAX], id[32];
	const char *why;
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0 && errno == ELOOP) {
		errno = EPERM;
		return sh5_errprintf(errp, "%s: a symbolic link", path);
	}
	if (fd < 0)
		return sh5_errprintf(errp, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		sh5_errprintf(errp, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if ((why = key_refusal(&st, owner))) {
		close(fd);
		errno = EPERM;
		return sh5_errprintf(errp, "%s: %s", path, why);
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n != (ssize_t)st.st_size) {
		explicit_bzero(buf, sizeof(buf));
		errno = EIO;
		return sh5_errprintf(errp, "%s: cannot read it whole", path);
	}
	derive("sh5 seal mac key", buf, (size_t)n, key->mac);
	derive("sh5 seal key id", buf, (size_t)n, id);
	explicit_bzero(buf, sizeof(buf));
	memcpy(key->id, id, sizeof(key->id));
	return 0;
}

/* A GMAC (AES-256-GCM over associated data only) in progress: nettle
 * takes associated data in whole blocks but the last, so the bytes of a
 * partial block wait in pend. */
struct mac {
	struct gcm_aes256_ctx gcm;
	uint8_t pend[GCM_BLOCK_SIZE];
	size_t npend;
};

static void mac_add(struct mac *m, const void *data, size_t n)
{
	const uint8_t *p = data;
	size_t whole;

	if (m->npend) {
		size_t take = GCM_BLOCK_SIZE - m->npend;

		if (take > n)
			take = n;
		memcpy(m->pend + m->npend, p, take);
		m->npend += take;
		p += take;
		n -= take;
		if (m->npend < GCM_BLOCK_SIZE)
			return;
		gcm_aes256_update(&m->gcm, GCM_BLOCK_SIZE, m->pend);
		m->npend = 0;
	}
	whole = n - n % GCM_BLOCK_SIZE;
	if (whole)
		gcm_aes256_update(&m->gcm, whole, p);
	memcpy(m->pend, p + whole, n - whole);
	m->npend = n - whole;
}

/* Start m: keyed by key with the trailer t's nonce, the identity fed. */
static void mac_begin(struct mac *m, const struct sh5_seal_key *key,
		      const struct sh5_seal_id *id, const unsigned char *t)
{
	static const char label[] = "sh5 seal 1";
	unsigned char job[4];

	gcm_aes256_set_key(&m->gcm, key->mac);
	gcm_aes256_set_iv(&m->gcm, 12, t + T_NONCE);
	m->npend = 0;
	put_le(job, id->job, 4);
	mac_add(m, label, sizeof(label));
	mac_add(m, job, 4);
	mac_add(m, id->step, strlen(id->step) + 1);
	mac_add(m, id->node, strlen(id->node) + 1);
	mac_add(m, id->file, strlen(id->file) + 1);
}

/* The file's bytes were fed to m: the trailer's fields, then the tag
 * into tag; m cleared. */
static void mac_end(struct mac *m, const unsigned char *t,
		    unsigned char tag[16])
{
	mac_add(m, t, T_MACED);
	if (m->npend)
		gcm_aes256_update(&m->gcm, m->npend, m->pend);
	gcm_aes256_digest(&m->gcm, GCM_DIGEST_SIZE, tag);
	explicit_bzero(m, sizeof(*m));
}

int sh5_seal_peek(const unsigned char *t, uint64_t size)
{
	static const unsigned char zero[T_MACED - T_NONCE - 12];

	return size >= SH5_SEAL_TRAILER &&
	       !memcmp(t + T_MAGIC, magic, sizeof(magic)) &&
	       get_le(t + T_VERSION, 4) == 1 &&
	       get_le(t + T_SIZE, 4) == SH5_SEAL_TRAILER &&
	       get_le(t + T_LEN, 8) == size - SH5_SEAL_TRAILER &&
	       get_le(t + T_FLAGS, 4) == 0 &&
	       !memcmp(t + T_NONCE + 12, zero, sizeof(zero));
}

/* Feed [0, size) of fd to c and its CRC into *crc.  0 or -1 (errno). */
static int feed_fd(int fd, uint64_t size, struct mac *c, uint32_t *crc)
{
	size_t bl = 256 * 1024;
	unsigned char *b = malloc(bl);
	uint64_t off = 0;
	uint32_t cr = 0;

	if (!b)
		return -1;
	while (off < size) {
		size_t want = size - off < bl ? (size_t)(size - off) : bl;
		ssize_t n = pread(fd, b, want, (off_t)off);

		if (n <= 0) {
			if (n == 0)
				errno = EIO; /* shorter than it was */
			if (n < 0 && errno == EINTR)
				continue;
			free(b);
			return -1;
		}
		cr = sh5_crc32(cr, b, (size_t)n);
		mac_add(c, b, (size_t)n);
		off += (uint64_t)n;
	}
	free(b);
	*crc = cr;
	return 0;
}

int sh5_seal_fd(int fd, const struct sh5_seal_key *key,
		const struct sh5_seal_id *id, struct sh5_error *errp)
{
	unsigned char t[SH5_SEAL_TRAILER];
	struct mac c;
	struct stat st;
	uint64_t size;
	uint32_t crc = 0;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return sh5_errprintf(errp, "cannot seal: not a regular file");
	size = (uint64_t)st.st_size;
	if (size >= SH5_SEAL_TRAILER &&
	    pread(fd, t, sizeof(t), (off_t)(size - sizeof(t))) ==
		    (ssize_t)sizeof(t) && sh5_seal_peek(t, size)) {
		errno = EEXIST;
		return sh5_errprintf(errp, "cannot seal: sealed already");
	}
	memset(t, 0, sizeof(t));
	memcpy(t + T_MAGIC, magic, sizeof(magic));
	put_le(t + T_VERSION, 1, 4);
	put_le(t + T_SIZE, SH5_SEAL_TRAILER, 4);
	put_le(t + T_LEN, size, 8);
	memcpy(t + T_KEYID, key->id, sizeof(key->id));
	/* The kernel's random bytes (a user-space DRBG would cost its
	 * set-up in every slurmstepd). */
	if (getrandom(t + T_NONCE, 12, 0) != 12) {
		errno = EIO;
		return sh5_errprintf(errp, "cannot seal: no random bytes");
	}
	mac_begin(&c, key, id, t);
	if (feed_fd(fd, size, &c, &crc) < 0) {
		int e = errno;

		explicit_bzero(&c, sizeof(c));
		errno = e;
		return sh5_errprintf(errp, "cannot seal: reading it: %s",
				     strerror(errno));
	}
	put_le(t + T_CRC, crc, 4);
	mac_end(&c, t, t + T_TAG);
	if (pwrite(fd, t, sizeof(t), (off_t)size) != (ssize_t)sizeof(t)) {
		if (errno == 0)
			errno = ENOSPC;
		return sh5_errprintf(errp, "cannot seal: writing the "
				     "trailer: %s", strerror(errno));
	}
	return 0;
}

enum sh5_seal_state sh5_seal_check(const unsigned char *buf, uint64_t size,
				   const struct sh5_seal_key *key,
				   const struct sh5_seal_id *id,
				   uint64_t *len, uint32_t *crc)
{
	const unsigned char *t;
	unsigned char tag[16];
	struct mac c;
	uint64_t n;

	if (size < SH5_SEAL_TRAILER)
		return SH5_SEAL_NONE;
	t = buf + size - SH5_SEAL_TRAILER;
	if (!sh5_seal_peek(t, size))
		return SH5_SEAL_NONE;
	if (memcmp(t + T_KEYID, key->id, sizeof(key->id)))
		return SH5_SEAL_OTHER_KEY;
	n = size - SH5_SEAL_TRAILER;
	mac_begin(&c, key, id, t);
	mac_add(&c, buf, (size_t)n);
	mac_end(&c, t, tag);
	/* In constant time. */
	if (!memeql_sec(tag, t + T_TAG, 16))
		return SH5_SEAL_MISMATCH;
	*len = n;
	*crc = sh5_crc32((uint32_t)get_le(t + T_CRC, 4), t, SH5_SEAL_TRAILER);
	return SH5_SEAL_OK;
}

const char *sh5_seal_state_name(enum sh5_seal_state s)
{
	switch (s) {
	case SH5_SEAL_OK:
		return "sealed";
	case SH5_SEAL_NONE:
		return "not sealed";
	case SH5_SEAL_OTHER_KEY:
		return "sealed with another key";
	case SH5_SEAL_MISMATCH:
		return "seal does not match";
	}
	return "?";
}

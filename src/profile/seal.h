/*
 * seal.h - the seal of a closed node-step file: a MAC (AES-256-GMAC,
 * nettle) with a site key over the file's bytes and its
 * identity, in a fixed-size trailer appended after HDF5's end of file
 * (doc/format.md "The seal").  The plugin seals each node-step file it
 * closed; sh5merge copies a file whose seal verifies without checking it
 * again (doc/security.md "Sealed node-step files").
 */
#ifndef SH5_PROFILE_SEAL_H
#define SH5_PROFILE_SEAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

/* The key file used when none is named (by both the plugin and
 * sh5merge), if it exists. */
#define SH5_SEAL_KEY_DEFAULT "/etc/slurm/sh5_seal.key"
/* Bytes of the trailer, and the least and most bytes of a key file. */
#define SH5_SEAL_TRAILER 80
#define SH5_SEAL_KEY_MIN 32
#define SH5_SEAL_KEY_MAX 4096

/* A loaded key: the MAC key and the key id (both derived from the key
 * file's bytes with SHA-256; the id says which key sealed a file). */
struct sh5_seal_key {
	unsigned char mac[32];
	unsigned char id[8];
};

/* What a seal binds the file to: the node-step file of job `job`, step
 * `step` (as in the file name: "0", "batch"), node `node`, named `file`
 * (the base name). */
struct sh5_seal_id {
	uint32_t job;
	const char *step;
	const char *node;
	const char *file;
};

/*
 * Load the key file at path: it must be a regular file (not through a
 * symlink) owned by uid `owner` (0: root), not readable or writable by
 * group or others, of SH5_SEAL_KEY_MIN to SH5_SEAL_KEY_MAX bytes.
 * Returns 0 with *key set, or -1 with errno (ENOENT when it does not
 * exist, EPERM when it is refused) and errp naming the file and why.
 */
int sh5_seal_key_load(const char *path, uid_t owner,
		      struct sh5_seal_key *key, struct sh5_error *errp);

/*
 * Seal the file open on fd (read and written at offsets, its position
 * untouched): its bytes [0, size) MACed with key and id, the trailer
 * written at size.  A file that already ends in a trailer is refused.
 * Returns 0, or -1 with errno and errp set (the file may then hold a
 * partial trailer, which verifies as unsealed).
 */
int sh5_seal_fd(int fd, const struct sh5_seal_key *key,
		const struct sh5_seal_id *id, struct sh5_error *errp);

/* What sh5_seal_check() found. */
enum sh5_seal_state {
	SH5_SEAL_OK = 0,      /* sealed by key for id, unchanged */
	SH5_SEAL_NONE,        /* no trailer (or a malformed one) */
	SH5_SEAL_OTHER_KEY,   /* sealed by another key */
	SH5_SEAL_MISMATCH     /* the MAC does not match: changed since it
			       * was sealed, or not the file id names */
};

/*
 * The trailer at the end of the size bytes at buf (a whole file): parsed
 * and, when it names key, its MAC checked (in constant time) over
 * buf[0, *len) and id.  On SH5_SEAL_OK, *len is the length it covers
 * (the HDF5 file: the trailer starts there) and *crc the CRC-32 of all
 * size bytes (the trailer's CRC of the covered bytes, extended over the
 * trailer).  The trailer alone (the last SH5_SEAL_TRAILER bytes) says
 * whether there is one: sh5_seal_peek().
 */
enum sh5_seal_state sh5_seal_check(const unsigned char *buf, uint64_t size,
				   const struct sh5_seal_key *key,
				   const struct sh5_seal_id *id,
				   uint64_t *len, uint32_t *crc);

/* 1 when t (the last SH5_SEAL_TRAILER bytes of a file of size bytes) is a
 * trailer of this version covering the bytes before it, else 0. */
int sh5_seal_peek(const unsigned char *t, uint64_t size);

/* The name of a state, for reports ("sealed", "not sealed", ...). */
const char *sh5_seal_state_name(enum sh5_seal_state s);

#endif

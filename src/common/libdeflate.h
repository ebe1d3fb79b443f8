/* libdeflate.h - libdeflate's functions, looked up at run time.
 *
 * libdeflate (Debian libdeflate0) compresses, decompresses and computes
 * CRC-32 several times faster than zlib.  sh5 does not link it: the
 * shared library is opened once, when installed, and every user falls
 * back to zlib where a member below is NULL.  No build dependency, and a
 * plugin that loads into slurmstepd without it.
 */
#ifndef SH5_COMMON_LIBDEFLATE_H
#define SH5_COMMON_LIBDEFLATE_H

#include <stddef.h>
#include <stdint.h>

struct libdeflate_compressor;
struct libdeflate_decompressor;

/* Each group of members is all set or all NULL. */
struct sh5_libdeflate {
	uint32_t (*crc32)(uint32_t crc, const void *data, size_t len);

	struct libdeflate_compressor *(*alloc_compressor)(int level);
	size_t (*zlib_compress)(struct libdeflate_compressor *c,
				const void *in, size_t inlen, void *out,
				size_t outlen);
	void (*free_compressor)(struct libdeflate_compressor *c);

	struct libdeflate_decompressor *(*alloc_decompressor)(void);
	int (*zlib_decompress)(struct libdeflate_decompressor *d,
			       const void *in, size_t inlen, void *out,
			       size_t outlen, size_t *actual);
	void (*free_decompressor)(struct libdeflate_decompressor *d);
};

/* The functions of libdeflate.so.0, looked up on the first call (thread
 * safe); all NULL when the library is not installed or the environment
 * sets SH5_NO_LIBDEFLATE.  Never NULL; lives as long as the process. */
const struct sh5_libdeflate *sh5_libdeflate(void);

#endif

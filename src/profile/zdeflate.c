/* zdeflate.c - see zdeflate.h */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <zlib.h>

#include "common/libdeflate.h"
#include "profile/zdeflate.h"

struct sh5_zdeflate {
	int level;
	struct libdeflate_compressor *c;
};

struct sh5_zdeflate *sh5_zdeflate_create(int level)
{
	struct sh5_zdeflate *z = calloc(1, sizeof(*z));

	if (!z)
		return NULL;
	z->level = level < 1 ? 1 : level > 9 ? 9 : level;
	return z;
}

size_t sh5_zdeflate_bound(size_t len)
{
	/* Both libraries stay within zlib's bound (stored blocks at
	 * worst: 5 bytes per 64 KiB block with libdeflate). */
	return compressBound(len) + 5 * (len / 65535 + 1) + 16;
}

int sh5_zdeflate(struct sh5_zdeflate *z, void *dst, size_t *dlen,
		 const void *src, size_t len)
{
	const struct sh5_libdeflate *ldf = sh5_libdeflate();
	uLongf out = *dlen;

	if (ldf->alloc_compressor && !z->c)
		z->c = ldf->alloc_compressor(z->level);
	if (z->c) {
		size_t n = ldf->zlib_compress(z->c, src, len, dst, *dlen);

		if (!n) {
			errno = ENOBUFS;
			return -1;
		}
		*dlen = n;
		return 0;
	}
	if (compress2(dst, &out, src, len, z->level) != Z_OK) {
		errno = ENOBUFS;
		return -1;
	}
	*dlen = out;
	return 0;
}

void sh5_zdeflate_destroy(struct sh5_zdeflate *z)
{
	if (!z)
		return;
	if (z->c)
		sh5_libdeflate()->free_compressor(z->c);
	free(z);
}

/* zdeflate.c - see zdeflate.h */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <zlib.h>

#include "profile/zdeflate.h"

struct libdeflate_compressor;

static struct {
	struct libdeflate_compressor *(*alloc)(int);
	size_t (*zlib_compress)(struct libdeflate_compressor *, const void *,
				size_t, void *, size_t);
	void (*free)(struct libdeflate_compressor *);
} ldf;
static pthread_once_t ldf_once = PTHREAD_ONCE_INIT;

static void ldf_init(void)
{
	void *h;

	if (getenv("SH5_NO_LIBDEFLATE") ||
	    !(h = dlopen("libdeflate.so.0", RTLD_NOW | RTLD_LOCAL)))
		return;
	*(void **)&ldf.alloc = dlsym(h, "libdeflate_alloc_compressor");
	*(void **)&ldf.zlib_compress = dlsym(h, "libdeflate_zlib_compress");
	*(void **)&ldf.free = dlsym(h, "libdeflate_free_compressor");
	if (!ldf.alloc || !ldf.zlib_compress || !ldf.free) {
		ldf.alloc = NULL;
		dlclose(h);
	}
}

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
	uLongf out = *dlen;

	pthread_once(&ldf_once, ldf_init);
	if (ldf.alloc && !z->c)
		z->c = ldf.alloc(z->level);
	if (z->c) {
		size_t n = ldf.zlib_compress(z->c, src, len, dst, *dlen);

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
		ldf.free(z->c);
	free(z);
}

/* libdeflate.c - see libdeflate.h */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/libdeflate.h"

static struct sh5_libdeflate ldf;
static pthread_once_t ldf_once = PTHREAD_ONCE_INIT;

static void ldf_init(void)
{
	struct sh5_libdeflate *l = &ldf;
	void *h;

	if (getenv("SH5_NO_LIBDEFLATE") ||
	    !(h = dlopen("libdeflate.so.0", RTLD_NOW | RTLD_LOCAL)))
		return;
	*(void **)&l->crc32 = dlsym(h, "libdeflate_crc32");
	*(void **)&l->alloc_compressor =
		dlsym(h, "libdeflate_alloc_compressor");
	*(void **)&l->zlib_compress = dlsym(h, "libdeflate_zlib_compress");
	*(void **)&l->free_compressor =
		dlsym(h, "libdeflate_free_compressor");
	*(void **)&l->alloc_decompressor =
		dlsym(h, "libdeflate_alloc_decompressor");
	*(void **)&l->zlib_decompress =
		dlsym(h, "libdeflate_zlib_decompress");
	*(void **)&l->free_decompressor =
		dlsym(h, "libdeflate_free_decompressor");
	if (!l->alloc_compressor || !l->zlib_compress ||
	    !l->free_compressor) {
		l->alloc_compressor = NULL;
		l->zlib_compress = NULL;
		l->free_compressor = NULL;
	}
	if (!l->alloc_decompressor || !l->zlib_decompress ||
	    !l->free_decompressor) {
		l->alloc_decompressor = NULL;
		l->zlib_decompress = NULL;
		l->free_decompressor = NULL;
	}
	if (!l->crc32 && !l->alloc_compressor && !l->alloc_decompressor)
		dlclose(h);
}

const struct sh5_libdeflate *sh5_libdeflate(void)
{
	pthread_once(&ldf_once, ldf_init);
	return &ldf;
}

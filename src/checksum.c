/* checksum.c - see checksum.h */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include <zlib.h>

#include "checksum.h"

/* libdeflate's CRC-32 (carry-less multiplication where the CPU has it)
 * is several times faster than zlib's; looked up at run time like its
 * decompressor (reader.c), zlib otherwise. */
static uint32_t (*ldf_crc32)(uint32_t, const void *, size_t);
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	void *h;

	if (getenv("SH5_NO_LIBDEFLATE") ||
	    !(h = dlopen("libdeflate.so.0", RTLD_NOW | RTLD_LOCAL)))
		return;
	*(void **)&ldf_crc32 = dlsym(h, "libdeflate_crc32");
}

uint32_t sh5_crc32(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;

	pthread_once(&crc_once, crc_init);
	if (ldf_crc32)
		return ldf_crc32(crc, data, len);
	while (len) {
		uInt n = len > (1u << 30) ? 1u << 30 : (uInt)len;

		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

uint32_t sh5_fletcher32(const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t words = len / 2;
	uint32_t a = 0, b = 0;

	/* 360 words at most between reductions: b cannot overflow. */
	while (words) {
		size_t n = words > 360 ? 360 : words;

		words -= n;
		do {
			a += (uint32_t)((p[0] << 8) | p[1]);
			b += a;
			p += 2;
		} while (--n);
		a = (a & 0xffff) + (a >> 16);
		b = (b & 0xffff) + (b >> 16);
	}
	if (len & 1) {
		a += (uint32_t)p[0] << 8;
		b += a;
		a = (a & 0xffff) + (a >> 16);
		b = (b & 0xffff) + (b >> 16);
	}
	a = (a & 0xffff) + (a >> 16);
	b = (b & 0xffff) + (b >> 16);
	return (b << 16) | a;
}

int sh5_fletcher32_ok(const void *chunk, size_t len)
{
	const unsigned char *p = chunk;
	uint32_t want, got, swapped;

	if (len < 4)
		return 0;
	p += len - 4;
	want = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
	got = sh5_fletcher32(chunk, len - 4);
	swapped = (got & 0xff) << 24 | (got & 0xff00) << 8 |
		  (got & 0xff0000) >> 8 | got >> 24;
	return want == got || want == swapped;
}

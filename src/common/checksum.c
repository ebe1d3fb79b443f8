/* checksum.c - see checksum.h */
#include "config.h"


#include <zlib.h>

#include "common/checksum.h"
#include "common/libdeflate.h"

/* libdeflate's CRC-32 (carry-less multiplication where the CPU has it)
 * is several times faster than zlib's; zlib where it is not installed. */
uint32_t sh5_crc32(uint32_t crc, const void *data, size_t len)
{
	const struct sh5_libdeflate *ldf = sh5_libdeflate();
	const unsigned char *p = data;

	if (ldf->crc32)
		return ldf->crc32(crc, data, len);
	while (len) {
		uInt n = len > (1u << 30) ? 1u << 30 : (uInt)len;

		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

/*
 * HDF5's algorithm folds both sums every 360 words (so that the second
 * cannot overflow 32 bits).  Within such a block the sums after it are
 * exact integers: a + S and b + n a + W, where S is the sum of the block's
 * words and W the sum of word i (from 0) times n - i; computed so (a loop
 * the compiler vectorizes), the results are bit for bit HDF5's.
 */
#if defined(__GNUC__) && !defined(__clang__)
/* -O2 does not vectorize the block loop; this is twice as fast. */
__attribute__((optimize("O3")))
#endif
static void fl_words(uint32_t *pa, uint32_t *pb, const unsigned char *p,
		     size_t words)
{
	uint32_t a = *pa, b = *pb;

	while (words) {
		uint32_t n = words > 360 ? 360 : (uint32_t)words, i;
		uint32_t sum = 0, wsum = 0;

		for (i = 0; i < n; i++) {
			uint32_t w = (uint32_t)p[2 * i] << 8 | p[2 * i + 1];

			sum += w;
			wsum += (n - i) * w;
		}
		b += n * a + wsum;
		a += sum;
		p += 2 * n;
		words -= n;
		a = (a & 0xffff) + (a >> 16);
		b = (b & 0xffff) + (b >> 16);
	}
	*pa = a;
	*pb = b;
}

void sh5_fletcher32_advance(struct sh5_fletcher32_state *st,
			    const void *buf, size_t len)
{
	size_t blocks = len > st->done ? (len - st->done) / 720 : 0;

	fl_words(&st->a, &st->b, (const unsigned char *)buf + st->done,
		 blocks * 360);
	st->done += blocks * 720;
}

uint32_t sh5_fletcher32_finish(const struct sh5_fletcher32_state *st,
			       const void *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)buf + st->done;
	uint32_t a = st->a, b = st->b;

	len -= st->done;
	fl_words(&a, &b, p, len / 2);
	p += len / 2 * 2;
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

uint32_t sh5_fletcher32(const void *data, size_t len)
{
	struct sh5_fletcher32_state st = { 0, 0, 0 };

	return sh5_fletcher32_finish(&st, data, len);
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

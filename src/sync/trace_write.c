/* trace_write.c - the writer (trace_int.h) */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "sync/trace_int.h"
#include "common/outfile.h"

/* --------------------------------------------------------------- write */

struct obuf {
	int fd;			/* -1: memory */
	char *buf;
	size_t len, cap;
	const char *name;	/* the output, for write errors */
	int werr;		/* a write to fd failed */
	size_t total;		/* bytes written to fd */
};

static int obuf_flush(struct obuf *o)
{
	size_t off = 0;
	ssize_t w;

	if (o->fd < 0)
		return 0;
	while (off < o->len) {
		w = write(o->fd, o->buf + off, o->len - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			o->werr = 1;
			return -1;
		}
		off += (size_t)w;
	}
	o->total += o->len;
	o->len = 0;
	return 0;
}

/* Room for n more bytes at o->buf + o->len (flushing to the file, or
 * growing).  Returns 0, or -1 with errno set. */
static int obuf_room(struct obuf *o, size_t n)
{
	size_t nc;
	char *nb;

	if (o->len + n <= o->cap)
		return 0;
	if (o->fd >= 0 && obuf_flush(o) < 0)
		return -1;
	if (o->len + n <= o->cap)
		return 0;
	for (nc = o->cap ? o->cap : 4096; nc < o->len + n; nc *= 2)
		;
	nb = realloc(o->buf, nc);
	if (!nb)
		return -1;
	o->buf = nb;
	o->cap = nc;
	return 0;
}

static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233"
	"34353637383940414243444546474849505152535455565758596061626364656667"
	"6869707172737475767778798081828384858687888990919293949596979899";

/* Exactly eight digits of v < 10^8, without a table (SWAR): the two
 * halves of four digits in 32-bit lanes, split into pairs in 16-bit
 * lanes, then into digits in bytes (little-endian: the first digit is
 * the lowest byte).  Exact: x * 5243 >> 19 is x / 100 for x < 10^4,
 * x * 103 >> 10 is x / 10 for x < 100. */
static inline void put8(char *o, uint32_t v)
{
	uint64_t x = (v / 10000) | ((uint64_t)(v % 10000) << 32), q;

	q = ((x * 5243) >> 19) & 0x0000007F0000007FULL;
	x = q | ((x - q * 100) << 16);
	q = ((x * 103) >> 10) & 0x000F000F000F000FULL;
	x = q | ((x - q * 10) << 8);
	x += 0x3030303030303030ULL;
	memcpy(o, &x, 8);
}

#ifdef __SSE2__
/* The 16 digits of v < 10^16 at o (SSE2: both halves of eight digits
 * at once, W. Mula's method). */
static inline void put16(char *o, uint64_t v)
{
	const __m128i div = _mm_setr_epi16(8389, 5243, 13108, (short)32768,
					   8389, 5243, 13108, (short)32768);
	const __m128i shf = _mm_setr_epi16(1 << 7, 1 << 11, 1 << 13,
					   (short)(1 << 15), 1 << 7, 1 << 11,
					   1 << 13, (short)(1 << 15));
	__m128i x, q, r, w, a, b;

	x = _mm_set_epi64x((long long)(v % 100000000u),
			   (long long)(v / 100000000u));
	/* each half divmod 10^4: x * ceil(2^45 / 10^4) >> 45 */
	q = _mm_srli_epi64(_mm_mul_epu32(x, _mm_set1_epi32((int)0xd1b71759)),
			   45);
	r = _mm_sub_epi32(x, _mm_mul_epu32(q, _mm_set1_epi32(10000)));
	/* words: q0 r0 0 0 q1 r1 0 0, times 4 */
	w = _mm_slli_epi16(_mm_or_si128(q, _mm_slli_epi32(r, 16)), 2);
	a = _mm_unpacklo_epi16(w, w);
	b = _mm_unpackhi_epi16(w, w);
	a = _mm_unpacklo_epi32(a, a);	/* q0 x4, r0 x4 */
	b = _mm_unpacklo_epi32(b, b);
	/* prefixes of 1 .. 4 digits of each, then the digits */
	a = _mm_mulhi_epu16(_mm_mulhi_epu16(a, div), shf);
	b = _mm_mulhi_epu16(_mm_mulhi_epu16(b, div), shf);
	a = _mm_sub_epi16(a, _mm_slli_epi64(_mm_mullo_epi16(a,
				_mm_set1_epi16(10)), 16));
	b = _mm_sub_epi16(b, _mm_slli_epi64(_mm_mullo_epi16(b,
				_mm_set1_epi16(10)), 16));
	_mm_storeu_si128((__m128i *)o, _mm_add_epi8(_mm_packus_epi16(a, b),
						    _mm_set1_epi8('0')));
}
#else
static inline void put16(char *o, uint64_t v)
{
	put8(o, (uint32_t)(v / 100000000u));
	put8(o + 8, (uint32_t)(v % 100000000u));
}
#endif

/* Decimal digits of v < 10^8, no leading zeros. */
static inline size_t put_small(char *o, uint32_t v)
{
	char tmp[8];
	size_t n = sizeof(tmp);

	while (v >= 100) {
		unsigned r = (v % 100) * 2;

		v /= 100;
		tmp[--n] = digit_pairs[r + 1];
		tmp[--n] = digit_pairs[r];
	}
	if (v >= 10) {
		tmp[--n] = digit_pairs[v * 2 + 1];
		tmp[--n] = digit_pairs[v * 2];
	} else {
		tmp[--n] = (char)('0' + v);
	}
	memcpy(o, tmp + n, sizeof(tmp) - n);
	return sizeof(tmp) - n;
}

static inline size_t fmt_i64(char *out, int64_t v)
{
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	size_t i = 0;

	if (v < 0)
		out[i++] = '-';
	if (u < 100000000u)
		return i + put_small(out + i, (uint32_t)u);
	if (u >= 10000000000000000ULL) {
		i += put_small(out + i, (uint32_t)(u / 10000000000000000ULL));
		put16(out + i, u % 10000000000000000ULL);
		return i + 16;
	}
	i += put_small(out + i, (uint32_t)(u / 100000000u));
	put8(out + i, (uint32_t)(u % 100000000u));
	return i + 8;
}

/* The first ',' or '\n' from q on (there is a '\n' before end); eight
 * bytes at a time while eight are left. */
static inline const char *comma_or_nl(const char *q, const char *end)
{
	for (; end - q >= 8; q += 8) {
		uint64_t v, x, y, m;

		memcpy(&v, q, 8);
		x = v ^ 0x2C2C2C2C2C2C2C2CULL;
		y = v ^ 0x0A0A0A0A0A0A0A0AULL;
		/* exact per-byte zero tests */
		x = ~(((x & 0x7F7F7F7F7F7F7F7FULL) + 0x7F7F7F7F7F7F7F7FULL) |
		      x);
		y = ~(((y & 0x7F7F7F7F7F7F7F7FULL) + 0x7F7F7F7F7F7F7F7FULL) |
		      y);
		m = (x | y) & 0x8080808080808080ULL;
		if (m)
			return q + (__builtin_ctzll(m) >> 3);
	}
	while (*q != ',' && *q != '\n')
		q++;
	return q;
}

/* The start of the line after the one at q (there is a '\n' before
 * end); eight bytes at a time while eight are left. */
static inline const char *next_line(const char *q, const char *end)
{
	for (; end - q >= 8; q += 8) {
		uint64_t v, y;

		memcpy(&v, q, 8);
		y = v ^ 0x0A0A0A0A0A0A0A0AULL;
		y = ~(((y & 0x7F7F7F7F7F7F7F7FULL) + 0x7F7F7F7F7F7F7F7FULL) |
		      y) & 0x8080808080808080ULL;
		if (y)
			return q + (__builtin_ctzll(y) >> 3) + 1;
	}
	while (*q != '\n')
		q++;
	return q + 1;
}

/* Write v over the len bytes at f when its decimal form has exactly that
 * length (the common case: 19 digits, nanoseconds since 1970).  Returns
 * 1 when written, 0 when the lengths differ (nothing written). */
static inline int put_time_over(char *f, size_t len, int64_t v)
{
	char tmp[24];
	uint64_t hi;

	if (len == 19 && v >= 1000000000000000000LL) {
		hi = (uint64_t)v / 10000000000000000ULL;	/* 100 .. 922 */
		put16(f + 3, (uint64_t)v % 10000000000000000ULL);
		f[0] = (char)('0' + hi / 100);
		memcpy(f + 1, digit_pairs + 2 * (hi % 100), 2);
		return 1;
	}
	if (fmt_i64(tmp, v) != len)
		return 0;
	memcpy(f, tmp, len);
	return 1;
}

/* Where write_src() is: the lines done, the next line that is not an
 * event line (t->other[oi], or every line after the last), the next
 * event.  Lines 1 .. t->nlines not in t->other are the t->nev event
 * lines, so k stays below t->nev on an event line. */
struct wcur {
	uint32_t line, skip;
	size_t oi, k;
};

static inline void wcur_init(const struct sh5_trace *t, struct wcur *c)
{
	c->line = 0;
	c->oi = 0;
	c->k = 0;
	c->skip = t->nother ? t->other[0] : (uint32_t)t->nlines + 1;
}

/* The next line: 1 when it is an event line. */
static inline int wcur_line(const struct sh5_trace *t, struct wcur *c)
{
	if (++c->line != c->skip)
		return 1;
	c->oi++;
	c->skip = c->oi < t->nother ? t->other[c->oi] :
		  c->line > t->nlines ? c->line + 1 : (uint32_t)t->nlines + 1;
	return 0;
}

/* The lines p[0..n) copied to o one by one, the time field (between the
 * first two commas) of every event line replaced.  Returns 0, 1 when an
 * event line lacks its commas (the input changed), -1 with errno set. */
static int write_lines(const struct sh5_trace *t, const char *p, size_t n,
		       const int64_t *times, struct wcur *c, struct obuf *o)
{
	const char *end = p + n, *c1, *c2, *nl;
	size_t ln;
	char *w;

	for (; p < end; p = nl) {
		if (!wcur_line(t, c)) {
			nl = next_line(p, end);
			ln = (size_t)(nl - p);
			if (obuf_room(o, ln) < 0)
				return -1;
			memcpy(o->buf + o->len, p, ln);
			o->len += ln;
			continue;
		}
		c1 = comma_or_nl(p, end);
		c2 = *c1 == ',' ? comma_or_nl(c1 + 1, end) : c1;
		if (*c2 != ',')
			return 1;
		nl = next_line(c2, end);
		if (obuf_room(o, (size_t)(nl - p) + 24) < 0)
			return -1;
		w = o->buf + o->len;
		memcpy(w, p, (size_t)(c1 + 1 - p));
		w += c1 + 1 - p;
		w += fmt_i64(w, times[c->k]);
		memcpy(w, c2, (size_t)(nl - c2));
		w += nl - c2;
		o->len = (size_t)(w - o->buf);
		c->k++;
	}
	return 0;
}

/* n bytes at p to the output: through the buffer, or (a file output)
 * straight from p after what the buffer holds.  0, or -1 with errno
 * set. */
static int obuf_put(struct obuf *o, const char *p, size_t n)
{
	ssize_t w;

	if (o->fd < 0 || n < 4096) {
		if (obuf_room(o, n) < 0)
			return -1;
		memcpy(o->buf + o->len, p, n);
		o->len += n;
		return 0;
	}
	if (obuf_flush(o) < 0)
		return -1;
	while (n) {
		w = write(o->fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			o->werr = 1;
			return -1;
		}
		p += w;
		n -= (size_t)w;
		o->total += (size_t)w;
	}
	return 0;
}

#ifdef __SSE2__
/* The ',' and '\n' bits of the 16 bytes at q, at bit i on. */
static inline void marks16(const char *q, unsigned i, uint64_t *c,
			   uint64_t *n)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(q + i));

	*c |= (uint64_t)(unsigned)_mm_movemask_epi8(
		_mm_cmpeq_epi8(v, _mm_set1_epi8(','))) << i;
	*n |= (uint64_t)(unsigned)_mm_movemask_epi8(
		_mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))) << i;
}

/* Bit i set in *commas (*nls) when q[i] is ',' ('\n'), for the 64 bytes
 * at q (all readable). */
static inline void marks64(const char *q, uint64_t *commas, uint64_t *nls)
{
	uint64_t c = 0, n = 0;

	/* unrolled by hand (gcc -O2 keeps the loop) */
	marks16(q, 0, &c, &n);
	marks16(q, 16, &c, &n);
	marks16(q, 32, &c, &n);
	marks16(q, 48, &c, &n);
	*commas = c;
	*nls = n;
}
#endif

#ifdef __SSE2__
/* Bits of the 16 bytes at q equal to ch. */
static inline unsigned eq16(const char *q, char ch)
{
	return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
		_mm_loadu_si128((const __m128i *)q), _mm_set1_epi8(ch)));
}

/* time_field() for the common event line (64 bytes of the block left):
 * a location of one or two digits, ',', 19 bytes without ',' or '\n',
 * ',', and the line's end within 32 bytes; NULL for any other shape. */
static inline char *time_field19(char *q, char *end, char **c1, char **nl)
{
	char *a;
	unsigned m;

	if (end - q < 64 || (unsigned)((unsigned char)q[0] - '0') > 9)
		return NULL;
	if (q[1] == ',')
		a = q + 1;
	else if (q[2] == ',' && (unsigned)((unsigned char)q[1] - '0') <= 9)
		a = q + 2;
	else
		return NULL;
	/* a + 1 .. a + 19 (two overlapping loads), then the second comma */
	if (a[20] != ',' || eq16(a + 1, ',') | eq16(a + 1, '\n') |
	    eq16(a + 4, ',') | eq16(a + 4, '\n'))
		return NULL;
	m = eq16(a + 21, '\n') | eq16(a + 37, '\n') << 16;
	if (!m)
		return NULL;
	*c1 = a;
	*nl = a + 21 + __builtin_ctz(m) + 1;
	return a + 20;
}
#endif

/* The event line at q (a '\n' before end): its time field from *c1 + 1
 * to the second comma (returned), its end in *nl (after the '\n');
 * NULL when the line has no two commas. */
static inline char *time_field(char *q, char *end, char **c1, char **nl)
{
	char *c2;

#ifdef __SSE2__
	if ((c2 = time_field19(q, end, c1, nl)))
		return c2;
	if (end - q >= 64) {
		uint64_t cm, nm;

		marks64(q, &cm, &nm);
		if (nm) {
			nm &= -nm;	/* the first '\n' */
			cm &= nm - 1;	/* commas before it */
			*nl = q + __builtin_ctzll(nm) + 1;
			if (!cm || !(cm & (cm - 1)))
				return NULL;
			*c1 = q + __builtin_ctzll(cm);
			cm &= cm - 1;
			return q + __builtin_ctzll(cm);
		}
	}
#endif
	*c1 = (char *)comma_or_nl(q, end);
	c2 = **c1 == ',' ? (char *)comma_or_nl(*c1 + 1, end) : *c1;
	if (*c2 != ',')
		return NULL;
	*nl = (char *)next_line(c2, end);
	return c2;
}

/* The same for a block of whole lines that may be changed in place
 * (the source's buffer), faster: each new time is written over the old
 * one and the block goes out in one piece; from the first line whose new
 * time has another length on, line by line. */
static int write_block(const struct sh5_trace *t, char *p, size_t n,
		       const int64_t *times, struct wcur *c, struct obuf *o)
{
	char *end = p + n, *q, *c1, *c2, *nl;

	for (q = p; q < end;) {
		if (c->line + 1 == c->skip) {
			wcur_line(t, c);
			q = (char *)next_line(q, end);
			continue;
		}
		c2 = time_field(q, end, &c1, &nl);
		if (!c2 || !put_time_over(c1 + 1, (size_t)(c2 - c1 - 1),
					  times[c->k])) {
			if (obuf_put(o, p, (size_t)(q - p)) < 0)
				return -1;
			return write_lines(t, q, (size_t)(end - q), times, c,
					   o);
		}
		c->line++;
		c->k++;
		q = nl;
	}
	return obuf_put(o, p, n);
}

/* Copy the input to o with the time field (between the first two
 * commas) of every event line replaced. */
static int write_src(const struct sh5_trace *t, struct csrc *src,
		     const int64_t *times, struct obuf *o, const char *name,
		     struct sh5_error *errp)
{
	struct wcur c;
	const char *p;
	size_t n;
	int r, w, virt;

	wcur_init(t, &c);
	while ((r = trace_csrc_next(src, &p, &n, &virt)) > 0) {
		/* an fd source's blocks are in its own buffer; the last
		 * line with its '\n' added goes through o's buffer */
		w = src->fd >= 0 && !virt ?
		    write_block(t, (char *)p, n, times, &c, o) :
		    write_lines(t, p, n, times, &c, o);
		if (w < 0)
			goto syserr;
		if (w > 0) {
			errno = EINVAL;
			return sh5_errprintf(errp, "%s:%u: input changed "
					     "while synchronizing", name,
					     c.line);
		}
		if (virt)
			o->len--;	/* the '\n' added to the last line */
	}
	if (r < 0)
		goto syserr;
	if (c.k != t->nev) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: input changed while "
				     "synchronizing", name);
	}
	return 0;
syserr:
	if (o->werr)
		return sh5_errprintf(errp, "%s: write failed: %s",
				     o->name ? o->name : "output",
				     strerror(errno));
	return sh5_errprintf(errp, "%s: %s", name, strerror(errno));
}

int sh5_trace_write(const struct sh5_trace *t, const char *in_path,
		    const int64_t *times, const char *out_path,
		    struct sh5_error *errp)
{
	struct sh5_outfile out = { .fd = -1 };
	struct csrc src;
	struct obuf o;
	struct stat st;
	int rc = -1, saved, prealloc = 0;

	memset(&o, 0, sizeof(o));
	o.fd = -1;
	if (trace_csrc_open(&src, in_path, CSRC_WCHUNK) < 0)
		return sh5_errprintf(errp, "%s: %s", in_path, strerror(errno));
	o.cap = CSRC_WCHUNK;
	o.buf = malloc(o.cap);
	if (!o.buf) {
		sh5_errprintf(errp, "%s: %s", out_path, strerror(errno));
		goto out;
	}
	if (sh5_outfile_open(&out, out_path, &in_path, 1, errp) < 0)
		goto out;
	o.fd = out.fd;
	o.name = strcmp(out_path, "-") ? out_path : "stdout";
	if (out.tmp && fstat(src.fd, &st) == 0 && st.st_size > 0)
		prealloc = fallocate(o.fd, 0, 0, st.st_size) == 0;
	if (write_src(t, &src, times, &o, in_path, errp) < 0)
		goto out;
	if (obuf_flush(&o) < 0 ||
	    (prealloc && ftruncate(o.fd, (off_t)o.total) < 0)) {
		sh5_errprintf(errp, "%s: write failed: %s", o.name,
			      strerror(errno));
		goto out;
	}
	if (sh5_outfile_commit(&out, errp) < 0)
		goto out;
	rc = 0;
out:
	saved = errno;
	sh5_outfile_abort(&out);
	trace_csrc_close(&src);
	free(o.buf);
	errno = saved;
	return rc;
}

int sh5_trace_write_mem(const struct sh5_trace *t, const char *in,
			size_t inlen, const int64_t *times, char **out,
			size_t *outlen, struct sh5_error *errp)
{
	struct csrc src;
	struct obuf o;
	int rc;

	memset(&o, 0, sizeof(o));
	o.fd = -1;
	trace_csrc_mem(&src, in, inlen);
	rc = write_src(t, &src, times, &o, "(memory)", errp);
	trace_csrc_close(&src);
	if (rc < 0) {
		free(o.buf);
		return -1;
	}
	if (obuf_room(&o, 1) < 0) {	/* NUL for convenience */
		free(o.buf);
		return sh5_errprintf(errp, "(memory): %s", strerror(errno));
	}
	o.buf[o.len++] = '\0';
	*out = o.buf;
	*outlen = o.len - 1;
	return 0;
}

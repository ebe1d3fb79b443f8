/* json.c - see json.h */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/csvfmt.h"
#include "common/json.h"
#include "common/runstats.h"
#include "common/yajl.h"

#define BUF_SIZE (64 * 1024)
#define KEY_DEPTH 8

struct sh5_json {
	yajl_gen g;
	const struct sh5_yajl *y; /* yajl's functions (common/yajl.h) */
	FILE *f;
	int (*write)(void *arg, const void *buf, size_t len);
	void *arg;
	char *buf;
	size_t len;
	uint64_t bytes;
	int failed;
	struct sh5_error err;
	char name[160];		/* the output, for errors ("json" if unset) */
	char keys[KEY_DEPTH][48]; /* the key at each depth, for errors */
	char labels[KEY_DEPTH][96]; /* last "key=string" at each depth */
	int depth;
	int in_key;
};

void sh5_json_set_name(struct sh5_json *j, const char *name)
{
	if (j)
		snprintf(j->name, sizeof(j->name), "%s", name ? name : "");
}

static int fail(struct sh5_json *j, int errnum, const char *what)
{
	if (!j->failed) {
		j->failed = 1;
		errno = errnum;
		if (errnum == EDOM && j->depth > 0) {
			char path[KEY_DEPTH * 150] = "";
			size_t len = 0;
			int d;

			for (d = 0; d < j->depth && d < KEY_DEPTH; d++) {
				if (j->labels[d][0] && len < sizeof(path))
					len += (size_t)snprintf(path + len,
						sizeof(path) - len, "[%s]",
						j->labels[d]);
				if (j->keys[d][0] && len < sizeof(path))
					len += (size_t)snprintf(path + len,
						sizeof(path) - len, "%s%s",
						len ? "." : "", j->keys[d]);
			}
			sh5_errprintf(&j->err, "%s: %s (at %s)",
				      j->name[0] ? j->name : "json", what,
				      path[0] ? path : "top level");
		} else if (errnum == EDOM || errnum == EINVAL)
			sh5_errprintf(&j->err, "%s: %s",
				      j->name[0] ? j->name : "json", what);
		else
			sh5_errprintf(&j->err, "%s: %s: %s",
				      j->name[0] ? j->name : "json", what,
				      strerror(errnum));
	}
	errno = errnum;
	return -1;
}

static int sink(struct sh5_json *j, const void *buf, size_t len)
{
	if (len == 0)
		return 0;
	if (j->f) {
		if (fwrite(buf, 1, len, j->f) != len)
			return fail(j, errno ? errno : EIO,
				    "write failed");
	} else if (j->write(j->arg, buf, len) < 0) {
		return fail(j, errno ? errno : EIO, "write failed");
	}
	j->bytes += len;
	return 0;
}

static int drain(struct sh5_json *j)
{
	int rc = sink(j, j->buf, j->len);

	j->len = 0;
	return rc;
}

/* yajl's print callback: append to our buffer, drain when it fills. */
static void print_cb(void *ctx, const char *str, size_t len)
{
	struct sh5_json *j = ctx;

	if (j->failed)
		return;
	if (j->len + len > BUF_SIZE) {
		if (drain(j) < 0)
			return;
		if (len > BUF_SIZE) {
			sink(j, str, len);
			return;
		}
	}
	memcpy(j->buf + j->len, str, len);
	j->len += len;
}

static struct sh5_json *create(FILE *f,
			       int (*write)(void *, const void *, size_t),
			       void *arg, int flags, struct sh5_error *errp)
{
	struct sh5_json *j = calloc(1, sizeof(*j));
	const char *why;

	if (!j)
		goto error;
	j->f = f;
	j->write = write;
	j->arg = arg;
	j->buf = malloc(BUF_SIZE);
	if (!j->buf)
		goto error;
	if (!(j->y = sh5_yajl(&why))) {
		sh5_json_destroy(j);
		errno = ENOENT;
		sh5_errprintf(errp, "json: cannot create writer: %s", why);
		return NULL;
	}
	j->g = j->y->alloc(NULL);
	if (!j->g)
		goto error;
	if (!j->y->config(j->g, yajl_gen_print_callback, print_cb, j))
		goto error;
	if (flags & SH5_JSON_PRETTY) {
		j->y->config(j->g, yajl_gen_beautify, 1);
		j->y->config(j->g, yajl_gen_indent_string, "    ");
	}
	return j;
error:
	sh5_json_destroy(j);
	errno = ENOMEM;
	sh5_errprintf(errp, "json: cannot create writer: out of memory");
	return NULL;
}

struct sh5_json *sh5_json_create_file(FILE *f, int flags,
				      struct sh5_error *errp)
{
	if (!f) {
		errno = EINVAL;
		sh5_errprintf(errp, "json: no output file");
		return NULL;
	}
	return create(f, NULL, NULL, flags, errp);
}

struct sh5_json *sh5_json_create_cb(int (*write)(void *arg, const void *buf,
						 size_t len),
				    void *arg, int flags,
				    struct sh5_error *errp)
{
	if (!write) {
		errno = EINVAL;
		sh5_errprintf(errp, "json: no write callback");
		return NULL;
	}
	return create(NULL, write, arg, flags, errp);
}

void sh5_json_destroy(struct sh5_json *j)
{
	if (!j)
		return;
	if (j->g)
		j->y->free(j->g);
	free(j->buf);
	free(j);
}

static int check(struct sh5_json *j, yajl_gen_status st)
{
	if (j->failed)
		return -1;
	switch (st) {
	case yajl_gen_status_ok:
		return 0;
	case yajl_gen_keys_must_be_strings:
		return fail(j, EINVAL, "a key must be a string");
	case yajl_gen_in_error_state:
		return fail(j, EINVAL, "writer in error state");
	case yajl_gen_generation_complete:
		return fail(j, EINVAL, "value after the end of the document");
	case yajl_max_depth_exceeded:
		return fail(j, EINVAL, "nesting too deep");
	case yajl_gen_invalid_number:
		return fail(j, EDOM, "invalid number");
	case yajl_gen_invalid_string:
		return fail(j, EINVAL, "invalid UTF-8 string");
	default:
		return fail(j, EINVAL, "generator error");
	}
}

/* Key path bookkeeping for error texts. */
static void enter(struct sh5_json *j)
{
	if (j->depth < KEY_DEPTH) {
		j->keys[j->depth][0] = '\0';
		j->labels[j->depth][0] = '\0';
	}
	j->depth++;
}

static void leave(struct sh5_json *j)
{
	if (j->depth > 0)
		j->depth--;
}

int sh5_json_object_open(struct sh5_json *j)
{
	if (j->failed)
		return -1;
	enter(j);
	return check(j, j->y->map_open(j->g));
}

int sh5_json_object_close(struct sh5_json *j)
{
	if (j->failed)
		return -1;
	leave(j);
	return check(j, j->y->map_close(j->g));
}

int sh5_json_array_open(struct sh5_json *j)
{
	if (j->failed)
		return -1;
	enter(j);
	return check(j, j->y->array_open(j->g));
}

int sh5_json_array_close(struct sh5_json *j)
{
	if (j->failed)
		return -1;
	leave(j);
	return check(j, j->y->array_close(j->g));
}

int sh5_json_string(struct sh5_json *j, const char *s)
{
	if (j->failed)
		return -1;
	if (!s)
		return check(j, j->y->null(j->g));
	if (!j->in_key && j->depth > 0 && j->depth <= KEY_DEPTH &&
	    j->keys[j->depth - 1][0]) {
		/* "%.40s=%.50s" (at most 91 bytes and a NUL: fits), without
		 * snprintf's cost (every string value) */
		char *l = j->labels[j->depth - 1];
		size_t nk = strnlen(j->keys[j->depth - 1], 40),
		       ns = strnlen(s, 50);

		memcpy(l, j->keys[j->depth - 1], nk);
		l[nk] = '=';
		memcpy(l + nk + 1, s, ns);
		l[nk + 1 + ns] = '\0';
	}
	return check(j, j->y->string(j->g, (const unsigned char *)s,
					strlen(s)));
}

int sh5_json_key(struct sh5_json *j, const char *key)
{
	int rc;

	if (key && j->depth > 0 && j->depth <= KEY_DEPTH) {
		/* what snprintf "%s" would keep, without its cost (a key
		 * per value of every object) */
		size_t n = strnlen(key, sizeof(j->keys[0]) - 1);

		memcpy(j->keys[j->depth - 1], key, n);
		j->keys[j->depth - 1][n] = '\0';
	}
	j->in_key = 1;
	rc = sh5_json_string(j, key);
	j->in_key = 0;
	return rc;
}

int sh5_json_int(struct sh5_json *j, int64_t v)
{
	char b[SH5_FMT_MAX];
	size_t n;

	if (j->failed)
		return -1;
	/* yajl_gen_integer's text ("%lld") without its sprintf */
	n = sh5_fmt_i64(b, v);
	return check(j, j->y->number(j->g, b, n));
}

int sh5_json_uint(struct sh5_json *j, uint64_t v)
{
	char b[SH5_FMT_MAX];

	if (j->failed)
		return -1;
	/* the decimal digits, as "%lld" (<= INT64_MAX) or "%llu" print them */
	return check(j, j->y->number(j->g, b, sh5_fmt_u64(b, v)));
}

/* ------------------------------------------------------------ doubles
 *
 * Shortest round-trip formatting with the Grisu2 algorithm (Loitsch,
 * "Printing floating-point numbers quickly and accurately with
 * integers", PLDI 2010): the digits generated always read back to the
 * same double; in rare cases they are one digit longer than the
 * shortest.  It replaces snprintf("%.17g") + strtod checks, which cost
 * most of the export time.  The table holds 10^k, k = -348..340 step 8,
 * as normalized 64-bit significands with binary exponents, computed with
 * exact rational arithmetic and rounded to nearest.
 */
struct diyfp {
	uint64_t f;
	int e;
};

static const struct diyfp pow10_cache[] = {
{ 0xfa8fd5a0081c0288ULL, -1220 }, /* 1e-348 */
	{ 0xbaaee17fa23ebf76ULL, -1193 }, /* 1e-340 */
	{ 0x8b16fb203055ac76ULL, -1166 }, /* 1e-332 */
	{ 0xcf42894a5dce35eaULL, -1140 }, /* 1e-324 */
	{ 0x9a6bb0aa55653b2dULL, -1113 }, /* 1e-316 */
	{ 0xe61acf033d1a45dfULL, -1087 }, /* 1e-308 */
	{ 0xab70fe17c79ac6caULL, -1060 }, /* 1e-300 */
	{ 0xff77b1fcbebcdc4fULL, -1034 }, /* 1e-292 */
	{ 0xbe5691ef416bd60cULL, -1007 }, /* 1e-284 */
	{ 0x8dd01fad907ffc3cULL, -980 }, /* 1e-276 */
	{ 0xd3515c2831559a83ULL, -954 }, /* 1e-268 */
	{ 0x9d71ac8fada6c9b5ULL, -927 }, /* 1e-260 */
	{ 0xea9c227723ee8bcbULL, -901 }, /* 1e-252 */
	{ 0xaecc49914078536dULL, -874 }, /* 1e-244 */
	{ 0x823c12795db6ce57ULL, -847 }, /* 1e-236 */
	{ 0xc21094364dfb5637ULL, -821 }, /* 1e-228 */
	{ 0x9096ea6f3848984fULL, -794 }, /* 1e-220 */
	{ 0xd77485cb25823ac7ULL, -768 }, /* 1e-212 */
	{ 0xa086cfcd97bf97f4ULL, -741 }, /* 1e-204 */
	{ 0xef340a98172aace5ULL, -715 }, /* 1e-196 */
	{ 0xb23867fb2a35b28eULL, -688 }, /* 1e-188 */
	{ 0x84c8d4dfd2c63f3bULL, -661 }, /* 1e-180 */
	{ 0xc5dd44271ad3cdbaULL, -635 }, /* 1e-172 */
	{ 0x936b9fcebb25c996ULL, -608 }, /* 1e-164 */
	{ 0xdbac6c247d62a584ULL, -582 }, /* 1e-156 */
	{ 0xa3ab66580d5fdaf6ULL, -555 }, /* 1e-148 */
	{ 0xf3e2f893dec3f126ULL, -529 }, /* 1e-140 */
	{ 0xb5b5ada8aaff80b8ULL, -502 }, /* 1e-132 */
	{ 0x87625f056c7c4a8bULL, -475 }, /* 1e-124 */
	{ 0xc9bcff6034c13053ULL, -449 }, /* 1e-116 */
	{ 0x964e858c91ba2655ULL, -422 }, /* 1e-108 */
	{ 0xdff9772470297ebdULL, -396 }, /* 1e-100 */
	{ 0xa6dfbd9fb8e5b88fULL, -369 }, /* 1e-92 */
	{ 0xf8a95fcf88747d94ULL, -343 }, /* 1e-84 */
	{ 0xb94470938fa89bcfULL, -316 }, /* 1e-76 */
	{ 0x8a08f0f8bf0f156bULL, -289 }, /* 1e-68 */
	{ 0xcdb02555653131b6ULL, -263 }, /* 1e-60 */
	{ 0x993fe2c6d07b7facULL, -236 }, /* 1e-52 */
	{ 0xe45c10c42a2b3b06ULL, -210 }, /* 1e-44 */
	{ 0xaa242499697392d3ULL, -183 }, /* 1e-36 */
	{ 0xfd87b5f28300ca0eULL, -157 }, /* 1e-28 */
	{ 0xbce5086492111aebULL, -130 }, /* 1e-20 */
	{ 0x8cbccc096f5088ccULL, -103 }, /* 1e-12 */
	{ 0xd1b71758e219652cULL, -77 }, /* 1e-4 */
	{ 0x9c40000000000000ULL, -50 }, /* 1e4 */
	{ 0xe8d4a51000000000ULL, -24 }, /* 1e12 */
	{ 0xad78ebc5ac620000ULL, 3 }, /* 1e20 */
	{ 0x813f3978f8940984ULL, 30 }, /* 1e28 */
	{ 0xc097ce7bc90715b3ULL, 56 }, /* 1e36 */
	{ 0x8f7e32ce7bea5c70ULL, 83 }, /* 1e44 */
	{ 0xd5d238a4abe98068ULL, 109 }, /* 1e52 */
	{ 0x9f4f2726179a2245ULL, 136 }, /* 1e60 */
	{ 0xed63a231d4c4fb27ULL, 162 }, /* 1e68 */
	{ 0xb0de65388cc8ada8ULL, 189 }, /* 1e76 */
	{ 0x83c7088e1aab65dbULL, 216 }, /* 1e84 */
	{ 0xc45d1df942711d9aULL, 242 }, /* 1e92 */
	{ 0x924d692ca61be758ULL, 269 }, /* 1e100 */
	{ 0xda01ee641a708deaULL, 295 }, /* 1e108 */
	{ 0xa26da3999aef774aULL, 322 }, /* 1e116 */
	{ 0xf209787bb47d6b85ULL, 348 }, /* 1e124 */
	{ 0xb454e4a179dd1877ULL, 375 }, /* 1e132 */
	{ 0x865b86925b9bc5c2ULL, 402 }, /* 1e140 */
	{ 0xc83553c5c8965d3dULL, 428 }, /* 1e148 */
	{ 0x952ab45cfa97a0b3ULL, 455 }, /* 1e156 */
	{ 0xde469fbd99a05fe3ULL, 481 }, /* 1e164 */
	{ 0xa59bc234db398c25ULL, 508 }, /* 1e172 */
	{ 0xf6c69a72a3989f5cULL, 534 }, /* 1e180 */
	{ 0xb7dcbf5354e9beceULL, 561 }, /* 1e188 */
	{ 0x88fcf317f22241e2ULL, 588 }, /* 1e196 */
	{ 0xcc20ce9bd35c78a5ULL, 614 }, /* 1e204 */
	{ 0x98165af37b2153dfULL, 641 }, /* 1e212 */
	{ 0xe2a0b5dc971f303aULL, 667 }, /* 1e220 */
	{ 0xa8d9d1535ce3b396ULL, 694 }, /* 1e228 */
	{ 0xfb9b7cd9a4a7443cULL, 720 }, /* 1e236 */
	{ 0xbb764c4ca7a44410ULL, 747 }, /* 1e244 */
	{ 0x8bab8eefb6409c1aULL, 774 }, /* 1e252 */
	{ 0xd01fef10a657842cULL, 800 }, /* 1e260 */
	{ 0x9b10a4e5e9913129ULL, 827 }, /* 1e268 */
	{ 0xe7109bfba19c0c9dULL, 853 }, /* 1e276 */
	{ 0xac2820d9623bf429ULL, 880 }, /* 1e284 */
	{ 0x80444b5e7aa7cf85ULL, 907 }, /* 1e292 */
	{ 0xbf21e44003acdd2dULL, 933 }, /* 1e300 */
	{ 0x8e679c2f5e44ff8fULL, 960 }, /* 1e308 */
	{ 0xd433179d9c8cb841ULL, 986 }, /* 1e316 */
	{ 0x9e19db92b4e31ba9ULL, 1013 }, /* 1e324 */
	{ 0xeb96bf6ebadf77d9ULL, 1039 }, /* 1e332 */
	{ 0xaf87023b9bf0ee6bULL, 1066 }, /* 1e340 */
};

#define POW10_FIRST (-348)
#define POW10_STEP 8

static struct diyfp diy_mul(struct diyfp a, struct diyfp b)
{
	unsigned __int128 p = (unsigned __int128)a.f * b.f;
	struct diyfp r;

	r.f = (uint64_t)(p >> 64) + (((uint64_t)p >> 63) & 1);
	r.e = a.e + b.e + 64;
	return r;
}

static struct diyfp diy_normalize(struct diyfp x)
{
	int s = __builtin_clzll(x.f);

	x.f <<= s;
	x.e -= s;
	return x;
}

/* w, and the boundaries m- and m+ of v (> 0, finite), normalized with the
 * exponent of m+. */
static void boundaries(double v, struct diyfp *w, struct diyfp *mm,
		       struct diyfp *mp)
{
	uint64_t bits, frac;
	int be;
	struct diyfp x, plus, minus;

	memcpy(&bits, &v, sizeof(bits));
	frac = bits & 0xfffffffffffffULL;
	be = (int)((bits >> 52) & 0x7ff);
	if (be) {
		x.f = frac | 0x10000000000000ULL;
		x.e = be - 1075;
	} else {
		x.f = frac;
		x.e = -1074;
	}
	plus.f = (x.f << 1) + 1;
	plus.e = x.e - 1;
	plus = diy_normalize(plus);
	if (frac == 0 && be > 1) {
		minus.f = (x.f << 2) - 1;
		minus.e = x.e - 2;
	} else {
		minus.f = (x.f << 1) - 1;
		minus.e = x.e - 1;
	}
	minus.f <<= minus.e - plus.e;
	minus.e = plus.e;
	*w = diy_normalize(x);
	*mp = plus;
	*mm = minus;
}

/* Cached power c = 10^k with -60 <= e(c) + e + 64 <= -32. */
static struct diyfp cached_power(int e, int *k)
{
	/* first guess from log10(2), then step to the right entry */
	int idx = (int)ceil((-60 - (e + 64)) * 0.30102999566398114);
	int n = (int)(sizeof(pow10_cache) / sizeof(pow10_cache[0]));

	idx = (idx - POW10_FIRST) / POW10_STEP;
	if (idx < 0)
		idx = 0;
	if (idx >= n)
		idx = n - 1;
	while (idx > 0 && pow10_cache[idx].e + e + 64 > -32)
		idx--;
	while (idx < n - 1 && pow10_cache[idx].e + e + 64 < -60)
		idx++;
	*k = POW10_FIRST + idx * POW10_STEP;
	return pow10_cache[idx];
}

static void grisu_round(char *buf, int len, uint64_t delta, uint64_t rest,
			uint64_t ten_kappa, uint64_t wp_w)
{
	while (rest < wp_w && delta - rest >= ten_kappa &&
	       (rest + ten_kappa < wp_w ||
		wp_w - rest > rest + ten_kappa - wp_w)) {
		buf[len - 1]--;
		rest += ten_kappa;
	}
}

static const uint32_t pow10_u32[] = { 1, 10, 100, 1000, 10000, 100000,
				      1000000, 10000000, 100000000,
				      1000000000 };

/* Digits of W within [Wp - delta, Wp]; *K receives the decimal exponent:
 * value = digits * 10^K. */
static int digit_gen(struct diyfp W, struct diyfp Wp, uint64_t delta,
		     char *buf, int *K)
{
	int shift = -Wp.e, kappa = 10, len = 0;
	uint64_t one = (uint64_t)1 << shift, wp_w = Wp.f - W.f;
	uint32_t p1 = (uint32_t)(Wp.f >> shift), d;
	uint64_t p2 = Wp.f & (one - 1), tmp, unit = 1;

	while (kappa > 0 && p1 < pow10_u32[kappa - 1])
		kappa--;
	while (kappa > 0) {
		d = p1 / pow10_u32[kappa - 1];
		p1 %= pow10_u32[kappa - 1];
		buf[len++] = (char)('0' + d);
		kappa--;
		tmp = ((uint64_t)p1 << shift) + p2;
		if (tmp <= delta) {
			*K += kappa;
			grisu_round(buf, len, delta, tmp,
				    (uint64_t)pow10_u32[kappa] << shift, wp_w);
			return len;
		}
	}
	for (;;) {
		p2 *= 10;
		delta *= 10;
		unit *= 10;
		d = (uint32_t)(p2 >> shift);
		buf[len++] = (char)('0' + d);
		p2 &= one - 1;
		kappa--;
		if (p2 < delta) {
			*K += kappa;
			grisu_round(buf, len, delta, p2, one, wp_w * unit);
			return len;
		}
	}
}

/* Shortest digits of v > 0 (finite): returns the count, *K the exponent. */
static int grisu2(double v, char *buf, int *K)
{
	struct diyfp w, mm, mp, c, W, Wm, Wp;
	int k;

	boundaries(v, &w, &mm, &mp);
	c = cached_power(mp.e, &k);
	W = diy_mul(w, c);
	Wp = diy_mul(mp, c);
	Wm = diy_mul(mm, c);
	Wm.f++;
	Wp.f--;
	*K = -k;
	return digit_gen(W, Wp, Wp.f - Wm.f, buf, K);
}

/* digits * 10^K as a JSON float, %g-like: fixed notation for decimal
 * exponents -4..16, else d.ddde+XX. */
static int format_digits(char *out, int neg, const char *d, int len, int K)
{
	int kk = len + K, n = 0, i, x;

	if (neg)
		out[n++] = '-';
	if (kk >= -3 && kk <= 17) {
		if (kk >= len) {
			memcpy(out + n, d, (size_t)len);
			n += len;
			for (i = len; i < kk; i++)
				out[n++] = '0';
			out[n++] = '.';
			out[n++] = '0';
		} else if (kk > 0) {
			memcpy(out + n, d, (size_t)kk);
			n += kk;
			out[n++] = '.';
			memcpy(out + n, d + kk, (size_t)(len - kk));
			n += len - kk;
		} else {
			out[n++] = '0';
			out[n++] = '.';
			for (i = kk; i < 0; i++)
				out[n++] = '0';
			memcpy(out + n, d, (size_t)len);
			n += len;
		}
	} else {
		out[n++] = d[0];
		if (len > 1) {
			out[n++] = '.';
			memcpy(out + n, d + 1, (size_t)(len - 1));
			n += len - 1;
		}
		x = kk - 1;
		out[n++] = 'e';
		out[n++] = x < 0 ? '-' : '+';
		if (x < 0)
			x = -x;
		if (x >= 100)
			out[n++] = (char)('0' + x / 100);
		out[n++] = (char)('0' + x / 10 % 10);
		out[n++] = (char)('0' + x % 10);
	}
	out[n] = '\0';
	return n;
}

/* Write the decimal digits of u (u < 2^63) backwards ending at end. */
static char *utoa_rev(char *end, uint64_t u)
{
	do {
		*--end = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	return end;
}

int sh5_json_format_double(char *buf, size_t size, double v)
{
	char tmp[40], digits[24], *p;
	size_t len;
	int n, K;

	if (!isfinite(v)) {
		errno = EDOM;
		return -1;
	}
	if (v == 0.0) {
		p = signbit(v) ? "-0.0" : "0.0";
		len = strlen(p);
		memcpy(tmp, p, len + 1);
	} else if (v == trunc(v) && fabs(v) < 9007199254740992.0) {
		/* integral values below 2^53 print exactly as digits */
		p = utoa_rev(tmp + sizeof(tmp) - 3, (uint64_t)fabs(v));
		if (v < 0)
			*--p = '-';
		memcpy(tmp + sizeof(tmp) - 3, ".0", 3);
		len = (size_t)(tmp + sizeof(tmp) - 1 - p);
		memmove(tmp, p, len + 1);
	} else {
		n = grisu2(fabs(v), digits, &K);
		len = (size_t)format_digits(tmp, v < 0, digits, n, K);
	}
	if (len + 1 > size) {
		errno = ERANGE;
		return -1;
	}
	memcpy(buf, tmp, len + 1);
	return (int)len;
}

int sh5_json_double(struct sh5_json *j, double v)
{
	char b[40];
	int n;

	if (j->failed)
		return -1;
	n = sh5_json_format_double(b, sizeof(b), v);
	if (n < 0)
		return fail(j, EDOM, "NaN or infinity has no JSON form");
	return check(j, j->y->number(j->g, b, (size_t)n));
}

int sh5_json_bool(struct sh5_json *j, int v)
{
	return j->failed ? -1 : check(j, j->y->bool_(j->g, v != 0));
}

int sh5_json_null(struct sh5_json *j)
{
	return j->failed ? -1 : check(j, j->y->null(j->g));
}

int sh5_json_kv_string(struct sh5_json *j, const char *key, const char *s)
{
	if (sh5_json_key(j, key) < 0)
		return -1;
	return sh5_json_string(j, s);
}

int sh5_json_kv_int(struct sh5_json *j, const char *key, int64_t v)
{
	if (sh5_json_key(j, key) < 0)
		return -1;
	return sh5_json_int(j, v);
}

int sh5_json_kv_uint(struct sh5_json *j, const char *key, uint64_t v)
{
	if (sh5_json_key(j, key) < 0)
		return -1;
	return sh5_json_uint(j, v);
}

int sh5_json_kv_double(struct sh5_json *j, const char *key, double v)
{
	if (sh5_json_key(j, key) < 0)
		return -1;
	return sh5_json_double(j, v);
}

int sh5_json_kv_bool(struct sh5_json *j, const char *key, int v)
{
	if (sh5_json_key(j, key) < 0)
		return -1;
	return sh5_json_bool(j, v);
}

int sh5_json_runstats(struct sh5_json *j, const struct sh5_runstats *rs)
{
	sh5_json_object_open(j);
	sh5_json_kv_double(j, "count", (double)sh5_runstats_count(rs));
	sh5_json_kv_double(j, "accumulate", sh5_runstats_accumulate(rs));
	sh5_json_kv_double(j, "minimum", sh5_runstats_min(rs));
	sh5_json_kv_double(j, "maximum", sh5_runstats_max(rs));
	sh5_json_kv_double(j, "mean", sh5_runstats_mean(rs));
	sh5_json_kv_double(j, "stddev", sh5_runstats_stddev(rs));
	sh5_json_kv_double(j, "skewness", sh5_runstats_skewness(rs));
	sh5_json_kv_double(j, "kurtosis", sh5_runstats_kurtosis(rs));
	return sh5_json_object_close(j);
}

int sh5_json_flush(struct sh5_json *j, struct sh5_error *errp)
{
	if (!j->failed)
		drain(j);
	if (!j->failed && j->f && fflush(j->f) != 0)
		fail(j, errno ? errno : EIO, "write failed");
	if (j->failed) {
		if (errp)
			*errp = j->err;
		return -1;
	}
	return 0;
}

int sh5_json_finish(struct sh5_json *j, struct sh5_error *errp)
{
	/* yajl reports completion only when asked for another value. */
	if (!j->failed &&
	    j->y->map_open(j->g) != yajl_gen_generation_complete)
		fail(j, EINVAL, "document incomplete");
	return sh5_json_flush(j, errp);
}

uint64_t sh5_json_bytes(const struct sh5_json *j)
{
	return j->bytes;
}

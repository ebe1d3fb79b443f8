/* json.c - see json.h */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_gen.h>

#include "json.h"
#include "runstats.h"

#define BUF_SIZE (64 * 1024)

struct sh5_json {
	yajl_gen g;
	FILE *f;
	int (*write)(void *arg, const void *buf, size_t len);
	void *arg;
	char *buf;
	size_t len;
	uint64_t bytes;
	int failed;
	struct sh5_error err;
};

static int fail(struct sh5_json *j, int errnum, const char *what)
{
	if (!j->failed) {
		j->failed = 1;
		errno = errnum;
		sh5_errprintf(&j->err, "json: %s", what);
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

	if (!j)
		goto error;
	j->f = f;
	j->write = write;
	j->arg = arg;
	j->buf = malloc(BUF_SIZE);
	if (!j->buf)
		goto error;
	j->g = yajl_gen_alloc(NULL);
	if (!j->g)
		goto error;
	if (!yajl_gen_config(j->g, yajl_gen_print_callback, print_cb, j))
		goto error;
	if (flags & SH5_JSON_PRETTY) {
		yajl_gen_config(j->g, yajl_gen_beautify, 1);
		yajl_gen_config(j->g, yajl_gen_indent_string, "    ");
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
		yajl_gen_free(j->g);
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

int sh5_json_object_open(struct sh5_json *j)
{
	return j->failed ? -1 : check(j, yajl_gen_map_open(j->g));
}

int sh5_json_object_close(struct sh5_json *j)
{
	return j->failed ? -1 : check(j, yajl_gen_map_close(j->g));
}

int sh5_json_array_open(struct sh5_json *j)
{
	return j->failed ? -1 : check(j, yajl_gen_array_open(j->g));
}

int sh5_json_array_close(struct sh5_json *j)
{
	return j->failed ? -1 : check(j, yajl_gen_array_close(j->g));
}

int sh5_json_string(struct sh5_json *j, const char *s)
{
	if (j->failed)
		return -1;
	if (!s)
		return check(j, yajl_gen_null(j->g));
	return check(j, yajl_gen_string(j->g, (const unsigned char *)s,
					strlen(s)));
}

int sh5_json_key(struct sh5_json *j, const char *key)
{
	return sh5_json_string(j, key);
}

int sh5_json_int(struct sh5_json *j, int64_t v)
{
	return j->failed ? -1 : check(j, yajl_gen_integer(j->g, v));
}

int sh5_json_uint(struct sh5_json *j, uint64_t v)
{
	char b[24];
	int n;

	if (j->failed)
		return -1;
	if (v <= INT64_MAX)
		return check(j, yajl_gen_integer(j->g, (long long)v));
	n = snprintf(b, sizeof(b), "%" PRIu64, v);
	return check(j, yajl_gen_number(j->g, b, (size_t)n));
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
	char tmp[32], *p;
	int n;
	size_t len;

	if (!isfinite(v)) {
		errno = EDOM;
		return -1;
	}
	/* Fast path: integral values below 2^53 print exactly as digits. */
	if (v == trunc(v) && fabs(v) < 9007199254740992.0 &&
	    !(v == 0.0 && signbit(v))) {
		p = utoa_rev(tmp + sizeof(tmp) - 2, (uint64_t)fabs(v));
		if (v < 0)
			*--p = '-';
		tmp[sizeof(tmp) - 2] = '.';
		tmp[sizeof(tmp) - 1] = '0';
		len = (size_t)(tmp + sizeof(tmp) - p);
		if (len + 1 > size) {
			errno = ERANGE;
			return -1;
		}
		memcpy(buf, p, len);
		buf[len] = '\0';
		return (int)len;
	}
	n = snprintf(buf, size, "%.15g", v);
	if (n < 0 || (size_t)n >= size) {
		errno = ERANGE;
		return -1;
	}
	if (strtod(buf, NULL) != v) {
		n = snprintf(buf, size, "%.17g", v);
		if (n < 0 || (size_t)n >= size) {
			errno = ERANGE;
			return -1;
		}
	}
	/* %g prints "1e+20" (a float already) but "-0" or "12345678901234567"
	 * (integers to JSON): give those a ".0". */
	if (!strpbrk(buf, ".eE")) {
		if ((size_t)n + 3 > size) {
			errno = ERANGE;
			return -1;
		}
		memcpy(buf + n, ".0", 3);
		n += 2;
	}
	return n;
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
	return check(j, yajl_gen_number(j->g, b, (size_t)n));
}

int sh5_json_bool(struct sh5_json *j, int v)
{
	return j->failed ? -1 : check(j, yajl_gen_bool(j->g, v != 0));
}

int sh5_json_null(struct sh5_json *j)
{
	return j->failed ? -1 : check(j, yajl_gen_null(j->g));
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
	    yajl_gen_map_open(j->g) != yajl_gen_generation_complete)
		fail(j, EINVAL, "document incomplete");
	return sh5_json_flush(j, errp);
}

uint64_t sh5_json_bytes(const struct sh5_json *j)
{
	return j->bytes;
}

/*
 * json.h - streaming JSON writer.
 *
 * A thin layer over yajl's generator that writes as it goes: tokens are
 * collected in a fixed buffer (64 KiB) and handed to the sink (a FILE *
 * or a write callback) whenever it fills, so memory stays bounded
 * whatever the size of the document.  No tree is ever built.
 *
 * Doubles are always written as JSON floats: with a decimal point or an
 * exponent ("1.0", never "1"), in the shortest of %.15g/%.17g that reads
 * back to the same double.  JSON has no NaN or infinity: writing one is
 * an error (EDOM).
 *
 * Errors are sticky: the first failure (yajl state error, sink failure,
 * non-finite double) is kept, every later call returns -1 at once, and
 * sh5_json_finish() reports it.  So callers may check each call or only
 * the final one.
 */
#ifndef SH5_JSON_H
#define SH5_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"

struct sh5_json;
struct sh5_runstats;

/* Flags for the create functions. */
#define SH5_JSON_PRETTY 0x1 /* indent (4 spaces) and newlines */

/*
 * Create a writer that writes to f (not closed by the writer) or calls
 * write(arg, buf, len) with each full buffer; write returns 0 on success
 * or -1 with errno set.  Returns NULL (errno ENOMEM) on failure.  Free
 * with sh5_json_destroy().
 */
struct sh5_json *sh5_json_create_file(FILE *f, int flags,
				      struct sh5_error *errp);
struct sh5_json *sh5_json_create_cb(int (*write)(void *arg, const void *buf,
						 size_t len),
				    void *arg, int flags,
				    struct sh5_error *errp);

/* Name the output in error texts ("NAME: write failed: No space left on
 * device"); without a name they begin with "json".  A non-finite double's
 * error also names the last key written.  The name is copied. */
void sh5_json_set_name(struct sh5_json *j, const char *name);

/* Free the writer (NULL-safe).  Buffered output not yet flushed with
 * sh5_json_finish() or sh5_json_flush() is discarded. */
void sh5_json_destroy(struct sh5_json *j);

/* Tokens.  Each returns 0, or -1 after any error (see the sticky rule). */
int sh5_json_object_open(struct sh5_json *j);
int sh5_json_object_close(struct sh5_json *j);
int sh5_json_array_open(struct sh5_json *j);
int sh5_json_array_close(struct sh5_json *j);
int sh5_json_key(struct sh5_json *j, const char *key);
int sh5_json_string(struct sh5_json *j, const char *s);
int sh5_json_int(struct sh5_json *j, int64_t v);
int sh5_json_uint(struct sh5_json *j, uint64_t v);
int sh5_json_double(struct sh5_json *j, double v);
int sh5_json_bool(struct sh5_json *j, int v);
int sh5_json_null(struct sh5_json *j);

/* Key and value in one call. */
int sh5_json_kv_string(struct sh5_json *j, const char *key, const char *s);
int sh5_json_kv_int(struct sh5_json *j, const char *key, int64_t v);
int sh5_json_kv_uint(struct sh5_json *j, const char *key, uint64_t v);
int sh5_json_kv_double(struct sh5_json *j, const char *key, double v);
int sh5_json_kv_bool(struct sh5_json *j, const char *key, int v);

/*
 * Write rs as Chimbuko's RunStats object: exactly the keys count,
 * accumulate, minimum, maximum, mean, stddev, skewness, kurtosis, in that
 * order, all doubles (count too).
 */
int sh5_json_runstats(struct sh5_json *j, const struct sh5_runstats *rs);

/* Hand everything buffered to the sink (and fflush a FILE sink). */
int sh5_json_flush(struct sh5_json *j, struct sh5_error *errp);

/*
 * Flush and check that one complete top-level value was written.
 * Returns 0, or -1 with the first error of the writer's life in errp.
 */
int sh5_json_finish(struct sh5_json *j, struct sh5_error *errp);

/* Bytes handed to the sink so far (after flushes). */
uint64_t sh5_json_bytes(const struct sh5_json *j);

/*
 * Format v as a JSON float into buf (size >= 32) the way the writer does.
 * Returns the length, or -1 (errno EDOM) for NaN and infinities.
 */
int sh5_json_format_double(char *buf, size_t size, double v);

#endif /* SH5_JSON_H */

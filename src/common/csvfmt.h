/*
 * csvfmt.h - fast decimal formatting for CSV output.
 *
 * printf's %g costs several hundred nanoseconds per number; CSV extraction
 * of millions of rows formats tens of millions of numbers.  These write
 * into a caller's buffer of at least SH5_FMT_MAX bytes and return the
 * length (no terminating NUL is counted; one is written).  Bytes after
 * the NUL, up to SH5_FMT_MAX, may be overwritten (digits are stored
 * eight at a time).  Every double is written so that strtod()
 * reads back exactly the same value.
 */
#ifndef SH5_CSVFMT_H
#define SH5_CSVFMT_H

#include <stddef.h>
#include <stdint.h>

#define SH5_FMT_MAX 32 /* buffer size enough for any number */

size_t sh5_fmt_u64(char *buf, uint64_t v);
size_t sh5_fmt_i64(char *buf, int64_t v);
/* Fixed notation with at most 6 decimals when that reads back exactly,
 * else "%.17g". */
size_t sh5_fmt_double(char *buf, double v);
/* The first implementation of sh5_fmt_double (a search over 0..9
 * decimals with floating-point checks, then 15 or 17 significant digits
 * after log10): the same output, slower; the reference the fast one is
 * tested against, and its fallback outside 2^-8 <= |v| < 2^19. */
size_t sh5_fmt_double_ref(char *buf, double v);

#endif /* SH5_CSVFMT_H */

/* recmap.c - see recmap.h */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/recmap.h"

/* ------------------------------------------------------------------ */
/* Record maps. */

struct sh5_recmap {
	size_t src_size, dst_size, n;
	/* n runs of members adjacent in both layouts: len bytes (a
	 * multiple of 8) from src_off to dst_off. */
	size_t *src_off, *dst_off, *len;
	/* The 8-byte slots of dst no member fills, zeroed per record
	 * (cheaper than clearing whole records); nzero == SIZE_MAX: dst is
	 * not made of 8-byte slots, clear it all. */
	size_t nzero, *zero_off;
};

void sh5_recmap_free(struct sh5_recmap *m)
{
	if (!m)
		return;
	free(m->src_off);
	free(m->dst_off);
	free(m->len);
	free(m->zero_off);
	free(m);
}

/* Fill m->zero_off with the slots of dst no member of the map fills.
 * 0, or -1 out of memory. */
static int recmap_holes(struct sh5_recmap *m)
{
	size_t slots = m->dst_size / 8, i, k;

	m->nzero = 0;
	if (m->dst_size % 8) {
		m->nzero = SIZE_MAX;
		return 0;
	}
	if (!(m->zero_off = calloc(slots ? slots : 1, sizeof(size_t))))
		return -1;
	for (i = 0; i < slots; i++) {
		for (k = 0; k < m->n; k++)
			if (m->dst_off[k] == i * 8)
				break;
		if (k == m->n)
			m->zero_off[m->nzero++] = i * 8;
	}
	return 0;
}

/* Merge members that follow each other in both layouts into runs (a
 * whole record of 8-byte fields is one or two copies, not ten). */
static void recmap_runs(struct sh5_recmap *m)
{
	size_t k, r = 0;

	for (k = 0; k < m->n; k++) {
		if (r && m->src_off[k] == m->src_off[r - 1] + m->len[r - 1] &&
		    m->dst_off[k] == m->dst_off[r - 1] + m->len[r - 1]) {
			m->len[r - 1] += 8;
			continue;
		}
		m->src_off[r] = m->src_off[k];
		m->dst_off[r] = m->dst_off[k];
		m->len[r] = 8;
		r++;
	}
	m->n = r;
}

struct sh5_recmap *sh5_recmap_build(hid_t src, hid_t dst)
{
	struct sh5_recmap *m = calloc(1, sizeof(*m));
	int ns = H5Tget_nmembers(src), i;

	if (!m || ns <= 0 || H5Tget_class(src) != H5T_COMPOUND ||
	    H5Tget_class(dst) != H5T_COMPOUND)
		goto fail;
	m->src_size = H5Tget_size(src);
	m->dst_size = H5Tget_size(dst);
	if (!(m->src_off = calloc((size_t)ns, sizeof(size_t))) ||
	    !(m->dst_off = calloc((size_t)ns, sizeof(size_t))) ||
	    !(m->len = calloc((size_t)ns, sizeof(size_t))))
		goto fail;
	for (i = 0; i < ns; i++) {
		char *name = H5Tget_member_name(src, (unsigned)i);
		int j = name ? H5Tget_member_index(dst, name) : -1;
		hid_t a = -1, b = -1;
		int ok;

		H5free_memory(name);
		if (j < 0)
			continue;
		a = H5Tget_member_type(src, (unsigned)i);
		b = H5Tget_member_type(dst, (unsigned)j);
		ok = a >= 0 && b >= 0 && H5Tget_size(a) == 8 &&
		     H5Tget_size(b) == 8 &&
		     H5Tget_class(a) == H5Tget_class(b) &&
		     (H5Tget_class(a) == H5T_INTEGER ||
		      H5Tget_class(a) == H5T_FLOAT) &&
		     H5Tget_order(a) == H5Tget_order(b) &&
		     H5Tget_order(a) == H5Tget_order(H5T_NATIVE_UINT64);
		if (ok && H5Tget_class(a) == H5T_FLOAT)
			ok = H5Tequal(a, b) > 0;
		if (a >= 0)
			H5Tclose(a);
		if (b >= 0)
			H5Tclose(b);
		if (!ok)
			goto fail;
		m->src_off[m->n] = H5Tget_member_offset(src, (unsigned)i);
		m->dst_off[m->n] = H5Tget_member_offset(dst, (unsigned)j);
		m->n++;
	}
	if (recmap_holes(m) < 0)
		goto fail;
	recmap_runs(m);
	return m;
fail:
	sh5_recmap_free(m);
	return NULL;
}

/* len bytes (a multiple of 8), 32 at a time. */
static inline void copy_run(unsigned char *d, const unsigned char *s,
			    size_t len)
{
	for (; len >= 32; d += 32, s += 32, len -= 32)
		memcpy(d, s, 32);
	if (len >= 16) {
		memcpy(d, s, 16);
		d += 16;
		s += 16;
		len -= 16;
	}
	if (len)
		memcpy(d, s, 8);
}

/* The map's runs and holes in locals: stores through the byte pointers
 * could alias the map's own arrays, which the compiler would then
 * reload for every record. */
#define LOCAL_RUNS 8

void sh5_recmap_apply(const struct sh5_recmap *m, const void *src, void *dst,
		      size_t n)
{
	const unsigned char *s = src;
	unsigned char *d = dst;
	size_t so[LOCAL_RUNS], dof[LOCAL_RUNS], len[LOCAL_RUNS];
	size_t zo[LOCAL_RUNS];
	size_t runs = m->n, nz = m->nzero, ss = m->src_size, ds = m->dst_size;
	size_t r, k;
	const uint64_t zero = 0;

	if (nz == SIZE_MAX) {
		memset(dst, 0, n * ds);
		nz = 0;
	}
	if (runs > LOCAL_RUNS || nz > LOCAL_RUNS) {
		for (r = 0; r < n; r++, s += ss, d += ds) {
			for (k = 0; k < nz; k++)
				memset(d + m->zero_off[k], 0, 8);
			for (k = 0; k < runs; k++)
				copy_run(d + m->dst_off[k], s + m->src_off[k],
					 m->len[k]);
		}
		return;
	}
	for (k = 0; k < runs; k++) {
		so[k] = m->src_off[k];
		dof[k] = m->dst_off[k];
		len[k] = m->len[k];
	}
	for (k = 0; k < nz; k++)
		zo[k] = m->zero_off[k];
	for (r = 0; r < n; r++, s += ss, d += ds) {
		for (k = 0; k < nz; k++)
			memcpy(d + zo[k], &zero, 8);
		for (k = 0; k < runs; k++)
			copy_run(d + dof[k], s + so[k], len[k]);
	}
}

struct sh5_recmap *sh5_recmap_dup(const struct sh5_recmap *m)
{
	struct sh5_recmap *d = calloc(1, sizeof(*d));
	size_t nz = m->nzero == SIZE_MAX ? 0 : m->nzero;

	if (!d)
		return NULL;
	*d = *m;
	d->src_off = malloc((m->n ? m->n : 1) * sizeof(size_t));
	d->dst_off = malloc((m->n ? m->n : 1) * sizeof(size_t));
	d->len = malloc((m->n ? m->n : 1) * sizeof(size_t));
	d->zero_off = m->zero_off ? malloc((nz ? nz : 1) *
					   sizeof(size_t)) : NULL;
	if (!d->src_off || !d->dst_off || !d->len ||
	    (m->zero_off && !d->zero_off)) {
		sh5_recmap_free(d);
		return NULL;
	}
	memcpy(d->src_off, m->src_off, m->n * sizeof(size_t));
	memcpy(d->dst_off, m->dst_off, m->n * sizeof(size_t));
	memcpy(d->len, m->len, m->n * sizeof(size_t));
	if (m->zero_off)
		memcpy(d->zero_off, m->zero_off, nz * sizeof(size_t));
	return d;
}

int sh5_recmap_is_shift(const struct sh5_recmap *m, size_t at, size_t gap)
{
	return m && m->n == 2 && m->src_size > at &&
	       m->src_off[0] == 0 && m->dst_off[0] == 0 && m->len[0] == at &&
	       m->src_off[1] == at && m->dst_off[1] == at + gap &&
	       m->len[1] == m->src_size - at;
}

/* cursor.c - see cursor.h */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/checksum.h"
#include "common/libdeflate.h"
#include "common/timeconv.h"
#include "profile/cursor.h"
#include "profile/h5check.h"
#include "profile/recmap.h"

/* ------------------------------------------------------------------ */
/* Cursors. */

struct sh5_series *sh5_reader_series(hid_t dset, const char *parent,
				     const char *name, struct sh5_error *errp)
{
	return sh5_series_from_dataset(parent, name, dset, errp);
}

static void cursor_damage(struct sh5_cursor *c, uint64_t at,
			  const char *fmt, const char *what)
{
	if (at < c->good_rows)
		c->good_rows = at;
	if (!c->damaged) {
		c->damaged = 1;
		snprintf(c->reason, sizeof(c->reason), fmt, what);
	}
}

/* Check the chunks of rows [from, nrows): each must be allocated and lie
 * inside real_eof (when set).  Sets good_rows at the first bad one. */
static void check_chunks(struct sh5_cursor *c)
{
	hsize_t off[1];
	uint64_t r;

	for (r = 0; r < c->nrows; r += c->chunk_rows) {
		unsigned mask = 0;
		haddr_t addr = HADDR_UNDEF;
		hsize_t size = 0;

		off[0] = r;
		if (H5Dget_chunk_info_by_coord(c->dset, off, &mask, &addr,
					       &size) < 0) {
			cursor_damage(c, r, "%s", "chunk index unreadable");
			return;
		}
		if (addr == HADDR_UNDEF) {
			cursor_damage(c, r, "%s", "chunk never written "
				      "(writer stopped before flushing)");
			return;
		}
		if (c->real_eof && addr + size > c->real_eof) {
			cursor_damage(c, r, "%s", "chunk beyond the end of "
				      "the truncated file");
			return;
		}
	}
}

/* Filters we decode ourselves, in this order, each optional: shuffle,
 * deflate, fletcher32 (as our writer stores them). */
static int pipeline_ok(struct sh5_cursor *c, hid_t dcpl)
{
	int nf = H5Pget_nfilters(dcpl), i, next = 0;

	if (nf < 0 || nf > 3)
		return 0;
	for (i = 0; i < nf; i++) {
		unsigned flags, cd[8];
		size_t ncd = 8;
		char name[64];
		H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags,
						 &ncd, cd, sizeof(name), name,
						 NULL);

		if (id == H5Z_FILTER_SHUFFLE && next <= 0) {
			c->f_shuffle = i;
			next = 1;
		} else if (id == H5Z_FILTER_DEFLATE && next <= 1) {
			c->f_deflate = i;
			next = 2;
		} else if (id == H5Z_FILTER_FLETCHER32 && next <= 2) {
			c->f_fletcher = i;
			next = 3;
		} else {
			return 0;
		}
	}
	return 1;
}

/* Native types and record maps of the file types seen so far: a job
 * file has thousands of series of a few types, and building a map costs
 * as much as formatting a few hundred rows.  Bounded (MAP_CACHE types),
 * shared by all threads, kept until exit. */
#define MAP_CACHE 8
static struct {
	hid_t ftype, mtype;     /* copies of the keys */
	hid_t rtype;            /* H5Tget_native_type(ftype) */
	struct sh5_recmap *map; /* rtype -> mtype, or NULL: none */
} map_cache[MAP_CACHE];
static size_t map_cached;
static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;

/* c->rtype and c->map for file type ft and c->mtype from the cache.
 * 1 found (c->rtype, c->map set as sh5_cursor_open wants them), 0 not. */
static int map_lookup(struct sh5_cursor *c, hid_t ft)
{
	size_t i;

	for (i = 0; i < map_cached; i++) {
		if (H5Tequal(ft, map_cache[i].ftype) <= 0 ||
		    H5Tequal(c->mtype, map_cache[i].mtype) <= 0)
			continue;
		if (!map_cache[i].map)
			return 1; /* no map: rtype stays -1 */
		c->map = sh5_recmap_dup(map_cache[i].map);
		c->rtype = c->map ? H5Tcopy(map_cache[i].rtype) : -1;
		if (c->map && c->rtype < 0) {
			sh5_recmap_free(c->map);
			c->map = NULL;
		}
		return c->map != NULL;
	}
	return 0;
}

/* Remember what c found for file type ft (when there is room). */
static void map_remember(const struct sh5_cursor *c, hid_t ft)
{
	size_t i = map_cached;

	if (i == MAP_CACHE)
		return;
	map_cache[i].ftype = H5Tcopy(ft);
	map_cache[i].mtype = H5Tcopy(c->mtype);
	map_cache[i].rtype = c->map ? H5Tcopy(c->rtype) : -1;
	map_cache[i].map = c->map ? sh5_recmap_dup(c->map) : NULL;
	if (map_cache[i].ftype < 0 || map_cache[i].mtype < 0 ||
	    (c->map && (map_cache[i].rtype < 0 || !map_cache[i].map))) {
		if (map_cache[i].ftype >= 0)
			H5Tclose(map_cache[i].ftype);
		if (map_cache[i].mtype >= 0)
			H5Tclose(map_cache[i].mtype);
		if (map_cache[i].rtype >= 0)
			H5Tclose(map_cache[i].rtype);
		sh5_recmap_free(map_cache[i].map);
		return;
	}
	map_cached++;
}

/* c->rtype (the file type in native layout) and c->map (its records into
 * c->mtype's), or rtype -1 when no map can be built. */
static void native_map(struct sh5_cursor *c, hid_t dset)
{
	hid_t ft = H5Dget_type(dset);

	if (ft < 0)
		return;
	pthread_mutex_lock(&map_lock);
	if (map_lookup(c, ft)) {
		pthread_mutex_unlock(&map_lock);
		H5Tclose(ft);
		return;
	}
	c->rtype = H5Tget_native_type(ft, H5T_DIR_ASCEND);
	if (c->rtype >= 0 &&
	    !(c->map = sh5_recmap_build(c->rtype, c->mtype))) {
		H5Tclose(c->rtype);
		c->rtype = -1;
	}
	map_remember(c, ft);
	pthread_mutex_unlock(&map_lock);
	H5Tclose(ft);
}

/* The dataset's part of a cursor whose types and map are set: rows,
 * chunking, filters (direct reads), chunk checks.  0 or -1. */
static int cursor_dataset(struct sh5_cursor *c, hid_t dset,
			  struct sh5_error *errp)
{
	hid_t dcpl;
	hsize_t cdims[1];

	c->dset = dset;
	if ((c->fspace = H5Dget_space(dset)) < 0)
		return sh5_errprintf_h5(errp, "%s: cannot read the dataspace",
					c->s->name);
	c->nrows = 0;
	if (H5Sget_simple_extent_ndims(c->fspace) == 1 &&
	    H5Sget_simple_extent_dims(c->fspace, cdims, NULL) == 1)
		c->nrows = cdims[0];
	c->good_rows = c->nrows;
	c->chunk_rows = 0;
	c->direct = 0;
	dcpl = H5Dget_create_plist(dset);
	if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED &&
	    H5Pget_chunk(dcpl, 1, cdims) == 1 && cdims[0] > 0)
		c->chunk_rows = cdims[0];
	c->f_shuffle = c->f_deflate = c->f_fletcher = -1;
	if (dcpl >= 0 && c->chunk_rows && c->map && c->native &&
	    pipeline_ok(c, dcpl))
		c->direct = 1;
	c->flat = c->flat_type && c->direct;
	if (dcpl >= 0)
		H5Pclose(dcpl);
	/* Chunk addresses are checked only for files cut short: a lookup
	 * walks the chunk index, too slow for every chunk of every file.
	 * Chunks of intact files that were never written read as zeros and
	 * are caught by sh5_cursor_read(). */
	if (c->chunk_rows && c->nrows && c->real_eof)
		check_chunks(c);
	return 0;
}

int sh5_cursor_open(struct sh5_cursor *c, hid_t dset,
		    const struct sh5_series *s, uint64_t real_eof,
		    struct sh5_error *errp)
{
	memset(c, 0, sizeof(*c));
	c->dset = dset;
	c->s = s;
	c->real_eof = real_eof;
	c->fspace = -1;
	c->rtype = -1;
	if ((c->mtype = s->ops->mem_type(s)) < 0)
		return sh5_errprintf_h5(errp, "%s: cannot build the memory "
					"type", s->name);
	native_map(c, dset);
	if (c->map) {
		/* Chunks stored in rtype's layout can be read as they
		 * are. */
		hid_t ft = H5Dget_type(dset);

		c->native = ft >= 0 && H5Tequal(ft, c->rtype) > 0 &&
			    H5Tget_size(ft) == H5Tget_size(c->rtype);
		if (ft >= 0)
			H5Tclose(ft);
		c->flat_type = c->native && !s->has_time_ns &&
			       !s->has_sync_ns &&
			       H5Tget_size(c->rtype) == 16 + 8 * s->nfields &&
			       sh5_recmap_is_shift(c->map, 16, 8);
	}
	if (cursor_dataset(c, dset, errp) < 0)
		goto error;
	return 0;
error:
	sh5_cursor_close(c);
	return -1;
}

int sh5_cursor_next(struct sh5_cursor *c, hid_t dset,
		    const struct sh5_series *s, struct sh5_error *errp)
{
	if (c->fspace >= 0)
		H5Sclose(c->fspace);
	c->fspace = -1;
	c->s = s;
	c->pos = 0;
	c->damaged = 0;
	c->reason[0] = '\0';
	if (cursor_dataset(c, dset, errp) < 0) {
		sh5_cursor_close(c);
		return -1;
	}
	return 0;
}

/* Direct chunk reads: the stock plugin's chunks hold 10 records, and
 * HDF5's per-chunk selection work dominates a normal read of them.
 * Unfiltered chunks whose records are already in the native layout are
 * read as they are and copied into the ops' layout. */
static int grow(void **p, size_t *len, size_t want)
{
	void *n;

	if (*len >= want)
		return 0;
	if (!(n = realloc(*p, want)))
		return -1;
	*p = n;
	*len = want;
	return 0;
}

/* libdeflate decompresses zlib streams two to three times faster than
 * zlib; used when the shared library is installed (common/libdeflate.h),
 * else zlib.  A decompressor holds state: one per thread (extract reads
 * in two). */
static pthread_once_t ldf_once = PTHREAD_ONCE_INIT;
static pthread_key_t ldf_key;
static int ldf_ok;	/* libdeflate's decompressor and the key are there */

static void ldf_free(void *d)
{
	sh5_libdeflate()->free_decompressor(d);
}

static void ldf_init(void)
{
	ldf_ok = sh5_libdeflate()->zlib_decompress &&
		 pthread_key_create(&ldf_key, ldf_free) == 0;
}

/* This thread's libdeflate decompressor, or NULL (use zlib). */
static struct libdeflate_decompressor *ldf_get(void)
{
	const struct sh5_libdeflate *ldf = sh5_libdeflate();
	struct libdeflate_decompressor *d;

	pthread_once(&ldf_once, ldf_init);
	if (!ldf_ok)
		return NULL;
	if (!(d = pthread_getspecific(ldf_key)) &&
	    (d = ldf->alloc_decompressor()) &&
	    pthread_setspecific(ldf_key, d) != 0) {
		ldf->free_decompressor(d);
		d = NULL;
	}
	return d;
}

static int inflate_to(void *dst, size_t bytes, const void *src, size_t len)
{
	struct libdeflate_decompressor *d = ldf_get();
	uLongf got = bytes;

	if (d) {
		size_t out = 0;

		return sh5_libdeflate()->zlib_decompress(d, src, len, dst,
							 bytes, &out) == 0 &&
				       out == bytes ? 0 : -1;
	}
	return uncompress(dst, &got, src, len) == Z_OK && got == bytes ? 0 : -1;
}

/* Undo HDF5's byte shuffle: byte j of element i is at src[j * n + i].
 * Blocks of 8 elements x 8 bytes are transposed in SSE2 registers (a
 * byte-by-byte loop costs as much as inflating the chunk); the edges
 * byte by byte. */
static void unshuffle_bytes(unsigned char *out, const unsigned char *src,
			    size_t n, size_t esz)
{
	size_t i = 0, j, k;

#ifdef __SSE2__
	for (; i + 8 <= n; i += 8) {
		for (j = 0; j + 8 <= esz; j += 8) {
			const unsigned char *p = src + j * n + i;
			unsigned char *o = out + i * esz + j;
			__m128i r[8], a[4], b[4], c[4];
			int t;

			for (t = 0; t < 8; t++)
				r[t] = _mm_loadl_epi64((const __m128i *)
						       (const void *)(p + t * n));
			for (t = 0; t < 4; t++)
				a[t] = _mm_unpacklo_epi8(r[2 * t], r[2 * t + 1]);
			b[0] = _mm_unpacklo_epi16(a[0], a[1]);
			b[1] = _mm_unpackhi_epi16(a[0], a[1]);
			b[2] = _mm_unpacklo_epi16(a[2], a[3]);
			b[3] = _mm_unpackhi_epi16(a[2], a[3]);
			c[0] = _mm_unpacklo_epi32(b[0], b[2]);
			c[1] = _mm_unpackhi_epi32(b[0], b[2]);
			c[2] = _mm_unpacklo_epi32(b[1], b[3]);
			c[3] = _mm_unpackhi_epi32(b[1], b[3]);
			for (t = 0; t < 4; t++) {
				_mm_storel_epi64((__m128i *)(void *)
						 (o + 2 * t * esz), c[t]);
				_mm_storel_epi64((__m128i *)(void *)
						 (o + (2 * t + 1) * esz),
						 _mm_unpackhi_epi64(c[t], c[t]));
			}
		}
		for (; j < esz; j++)
			for (k = i; k < i + 8; k++)
				out[k * esz + j] = src[j * n + k];
	}
#endif
	for (j = 0; j < esz; j++)
		for (k = i; k < n; k++)
			out[k * esz + j] = src[j * n + k];
}

/* Decode one stored chunk (bytes in c->zbuf, filter mask) into out, which
 * holds bytes of records: inflate (zlib, as HDF5's deflate filter
 * writes it), then undo the byte shuffle.  0 or -1. */
static int decode_chunk(struct sh5_cursor *c, size_t stored, uint32_t mask,
			unsigned char *out, size_t bytes, size_t esz)
{
	int inflate_it = c->f_deflate >= 0 && !(mask & (1u << c->f_deflate));
	int unshuffle = c->f_shuffle >= 0 && !(mask & (1u << c->f_shuffle)) &&
			esz > 1;
	unsigned char *src = c->zbuf;
	size_t n = bytes / esz;

	if (c->f_fletcher >= 0 && !(mask & (1u << c->f_fletcher))) {
		if (!sh5_fletcher32_ok(src, stored))
			return -1;
		stored -= 4;
	}

	if (inflate_it) {
		unsigned char *dst;

		if (unshuffle && grow(&c->tbuf, &c->tlen, bytes) < 0)
			return -1;
		dst = unshuffle ? c->tbuf : out;
		if (inflate_to(dst, bytes, src, stored) < 0)
			return -1;
		src = dst;
	} else if (stored != bytes) {
		return -1;
	} else if (!unshuffle) {
		memcpy(out, src, bytes);
		return 0;
	}
	if (unshuffle)
		unshuffle_bytes(out, src, n, esz);
	return 0;
}

/* Direct chunk reads: the stock plugin's chunks hold 10 records, and
 * HDF5's per-chunk selection work dominates a normal read of them; our
 * compressed chunks go faster decoded here than through HDF5's filter
 * pipeline.  Chunks whose records are already in the native layout are
 * read as stored, decoded, and copied into the ops' layout. */
static int read_chunks(struct sh5_cursor *c, uint64_t at, size_t n,
		       const unsigned char **recs)
{
	size_t rsz = H5Tget_size(c->rtype), cr = (size_t)c->chunk_rows;
	uint64_t first = at - at % cr, end = at + n, off;
	size_t need = (size_t)((end - first + cr - 1) / cr) * cr;
	unsigned char *p;
	int filtered = c->f_deflate >= 0 || c->f_shuffle >= 0 ||
		       c->f_fletcher >= 0;

	if (c->raw_rows < need) {
		void *nr = realloc(c->raw, need * rsz);

		if (!nr)
			return -1;
		c->raw = nr;
		c->raw_rows = need;
	}
	for (off = first, p = c->raw; off < end; off += cr, p += cr * rsz) {
		hsize_t o[1] = { off }, stored = 0;
		uint32_t filters = 0;

		if (!filtered) {
			/* Unfiltered: a chunk is exactly cr records; one
			 * never written fails here and the normal read
			 * handles it. */
			if (H5Dread_chunk(c->dset, H5P_DEFAULT, o, &filters,
					  p) < 0 || filters)
				return -1;
			continue;
		}
		if (H5Dget_chunk_storage_size(c->dset, o, &stored) < 0 ||
		    !stored || stored > (hsize_t)cr * rsz * 2 + 1024 ||
		    grow(&c->zbuf, &c->zlen, (size_t)stored) < 0 ||
		    H5Dread_chunk(c->dset, H5P_DEFAULT, o, &filters,
				  c->zbuf) < 0 ||
		    decode_chunk(c, (size_t)stored, filters, p, cr * rsz,
				 rsz) < 0)
			return -1;
	}
	*recs = (const unsigned char *)c->raw + (size_t)(at - first) * rsz;
	return 0;
}

static int read_direct(struct sh5_cursor *c, void *buf, uint64_t at,
		       size_t n)
{
	const unsigned char *recs;

	if (read_chunks(c, at, n, &recs) < 0)
		return -1;
	sh5_recmap_apply(c->map, recs, buf, n);
	return 0;
}

static int read_rows(struct sh5_cursor *c, void *buf, uint64_t at,
		     size_t n)
{
	hsize_t start[1] = { at }, count[1] = { n };
	hid_t ms;
	herr_t rc;

	if (c->direct && read_direct(c, buf, at, n) == 0)
		return 0;
	if ((ms = H5Screate_simple(1, count, NULL)) < 0)
		return -1;
	rc = H5Sselect_hyperslab(c->fspace, H5S_SELECT_SET, start, NULL,
				 count, NULL);
	if (rc >= 0 && c->map && c->raw_rows < n) {
		void *nr = realloc(c->raw, n * H5Tget_size(c->rtype));

		if (nr) {
			c->raw = nr;
			c->raw_rows = n;
		}
	}
	if (rc >= 0 && c->map && c->raw_rows >= n) {
		/* Fast path: the file's records as they are, then a copy
		 * into the ops' layout. */
		rc = H5Dread(c->dset, c->rtype, ms, c->fspace, H5P_DEFAULT,
			     c->raw);
		if (rc >= 0)
			sh5_recmap_apply(c->map, c->raw, buf, n);
	} else if (rc >= 0) {
		/* Slots the file does not carry keep the buffer's values
		 * through HDF5's conversion: start from zeros. */
		memset(buf, 0, n * c->s->ops->record_size(c->s));
		rc = H5Dread(c->dset, c->mtype, ms, c->fspace, H5P_DEFAULT,
			     buf);
	}
	H5Sclose(ms);
	return rc < 0 ? -1 : 0;
}

size_t sh5_cursor_read(struct sh5_cursor *c, void *buf, size_t max)
{
	const struct sh5_series *s = c->s;
	size_t n, r, slots = sh5_record_slots(s);
	union sh5_value *v;

	if (c->pos >= c->good_rows || !max)
		return 0;
	n = c->good_rows - c->pos < max ? (size_t)(c->good_rows - c->pos) :
					   max;
	if (read_rows(c, buf, c->pos, n) < 0) {
		/* Find the first unreadable chunk; keep what precedes. */
		size_t step = c->chunk_rows ? (size_t)c->chunk_rows : 1, got = 0;
		uint64_t at = c->pos;

		if (at % step)
			step = (size_t)(step - at % step);
		while (got < n) {
			size_t k = n - got < step ? n - got : step;

			if (read_rows(c, (union sh5_value *)buf + got * slots,
				      at, k) < 0)
				break;
			got += k;
			at += k;
			step = c->chunk_rows ? (size_t)c->chunk_rows : 1;
		}
		cursor_damage(c, at, "%s", "unreadable chunk (corrupt data)");
		n = got;
	}
	/* A zero EpochTime is no sample: the fill value of a chunk that was
	 * never written.  The series ends there. */
	for (r = 0, v = buf; r < n; r++, v += slots) {
		if (!v[1].u && !v[0].u) {
			cursor_damage(c, c->pos + r, "%s", "zero-filled records "
				      "(chunk never written: the writer "
				      "stopped before flushing it)");
			n = r;
			break;
		}
		/* A time in ns must fit int64 (until 2262). */
		if (!s->has_time_ns && v[1].u > SH5_EPOCH_S_MAX) {
			cursor_damage(c, c->pos + r, "%s", "EpochTime out of "
				      "range (after the year 2262)");
			n = r;
			break;
		}
		if (!s->has_time_ns)
			v[2].i = sh5_epoch_to_ns(v[1].u);
	}
	c->pos += n;
	return n;
}

size_t sh5_cursor_read_flat(struct sh5_cursor *c, const void **recs,
			    size_t max)
{
	size_t n, r, rsz;
	const unsigned char *p;

	if (!c->flat || c->pos >= c->good_rows || !max)
		return 0;
	n = c->good_rows - c->pos < max ? (size_t)(c->good_rows - c->pos) :
					   max;
	if (read_chunks(c, c->pos, n, &p) < 0) {
		c->flat = 0; /* sh5_cursor_read finds what is wrong */
		return 0;
	}
	rsz = H5Tget_size(c->rtype);
	/* sh5_cursor_read's checks (flat_type: no EpochTimeNs). */
	for (r = 0; r < n; r++) {
		uint64_t t[2];

		memcpy(t, p + r * rsz, sizeof(t));
		if (!t[1] && !t[0]) {
			cursor_damage(c, c->pos + r, "%s", "zero-filled records "
				      "(chunk never written: the writer "
				      "stopped before flushing it)");
			n = r;
			break;
		}
		if (t[1] > SH5_EPOCH_S_MAX) {
			cursor_damage(c, c->pos + r, "%s", "EpochTime out of "
				      "range (after the year 2262)");
			n = r;
			break;
		}
	}
	*recs = p;
	c->pos += n;
	return n;
}

uint64_t sh5_cursor_lost(const struct sh5_cursor *c)
{
	return c->nrows - c->good_rows;
}

void sh5_cursor_close(struct sh5_cursor *c)
{
	if (c->mtype > 0)
		H5Tclose(c->mtype);
	if (c->fspace >= 0)
		H5Sclose(c->fspace);
	if (c->rtype >= 0)
		H5Tclose(c->rtype);
	sh5_recmap_free(c->map);
	free(c->raw);
	free(c->zbuf);
	free(c->tbuf);
	c->zbuf = c->tbuf = NULL;
	c->zlen = c->tlen = 0;
	c->map = NULL;
	c->raw = NULL;
	c->raw_rows = 0;
	c->rtype = -1;
	c->mtype = -1;
	c->fspace = -1;
}

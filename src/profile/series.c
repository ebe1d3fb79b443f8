/* series.c - see series.h */
#include "config.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/csvfmt.h"
#include "profile/series.h"
#include "common/timeconv.h"
#include "profile/series_int.h"

/* ------------------------------------------------------------------ */
/* What each series type knows about its fields (Slurm's gather plugins:
 * jobacct_gather common, acct_gather_energy, _filesystem, _interconnect).
 * Task gained GPUMemMB and GPUUtilization in 23.02. */

#define F(n, t, k, u) { n, t, k, u }

static const struct sh5_field task_known[] = {
	F("CPUFrequency", SH5_FT_U64, SH5_FK_LEVEL, "kHz"),
	F("CPUTime", SH5_FT_DOUBLE, SH5_FK_DELTA, "s"),
	F("CPUUtilization", SH5_FT_DOUBLE, SH5_FK_LEVEL, "%"),
	F("GPUMemMB", SH5_FT_U64, SH5_FK_LEVEL, "MiB"),
	F("GPUUtilization", SH5_FT_DOUBLE, SH5_FK_LEVEL, "%"),
	F("RSS", SH5_FT_U64, SH5_FK_LEVEL, "KiB"),
	F("VMSize", SH5_FT_U64, SH5_FK_LEVEL, "KiB"),
	F("Pages", SH5_FT_U64, SH5_FK_LEVEL, "pages"),
	F("ReadMB", SH5_FT_DOUBLE, SH5_FK_DELTA, "MiB"),
	F("WriteMB", SH5_FT_DOUBLE, SH5_FK_DELTA, "MiB"),
};
static const struct sh5_field energy_known[] = {
	F("Power", SH5_FT_U64, SH5_FK_LEVEL, "W"),
	F("CPUFrequency", SH5_FT_U64, SH5_FK_LEVEL, "kHz"),
};
static const struct sh5_field fs_known[] = {
	F("Reads", SH5_FT_U64, SH5_FK_DELTA, "count"),
	F("ReadMB", SH5_FT_DOUBLE, SH5_FK_DELTA, "MiB"),
	F("Writes", SH5_FT_U64, SH5_FK_DELTA, "count"),
	F("WriteMB", SH5_FT_DOUBLE, SH5_FK_DELTA, "MiB"),
};
static const struct sh5_field net_known[] = {
	F("PacketsIn", SH5_FT_U64, SH5_FK_DELTA, "packets"),
	F("PacketsOut", SH5_FT_U64, SH5_FK_DELTA, "packets"),
	F("InMB", SH5_FT_DOUBLE, SH5_FK_DELTA, "MiB"),
	F("OutMB", SH5_FT_DOUBLE, SH5_FK_DELTA, "MiB"),
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ */
/* Shared record handling. */

static size_t rec_size(const struct sh5_series *s)
{
	return sh5_record_slots(s) * sizeof(union sh5_value);
}

static hid_t field_h5type(enum sh5_ftype t, int file)
{
	if (t == SH5_FT_DOUBLE)
		return file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE;
	return file ? H5T_STD_U64LE : H5T_NATIVE_UINT64;
}

/* Memory type: every member at its slot; SyncTimeNs only if present. */
static hid_t mem_type(const struct sh5_series *s)
{
	hid_t t = H5Tcreate(H5T_COMPOUND, rec_size(s));
	size_t i, w = sizeof(union sh5_value);

	if (t < 0)
		return -1;
	if (H5Tinsert(t, "ElapsedTime", 0, H5T_NATIVE_UINT64) < 0 ||
	    H5Tinsert(t, "EpochTime", w, H5T_NATIVE_UINT64) < 0)
		goto error;
	for (i = 0; i < s->nfields; i++)
		if (H5Tinsert(t, s->fields[i].name, (SH5_TIME_SLOTS + i) * w,
			      field_h5type(s->fields[i].type, 0)) < 0)
			goto error;
	if (s->has_time_ns &&
	    H5Tinsert(t, "EpochTimeNs", 2 * w, H5T_NATIVE_INT64) < 0)
		goto error;
	if (s->has_sync_ns &&
	    H5Tinsert(t, "SyncTimeNs", SH5_SLOT_SYNC(s) * w,
		      H5T_NATIVE_INT64) < 0)
		goto error;
	return t;
error:
	H5Tclose(t);
	return -1;
}

/* File type: packed, little-endian, stock member order first.  The ns
 * time members are stored unsigned: sh5util's extraction knows only
 * uint64 and double members (and no sample predates 1970). */
static hid_t file_type(const struct sh5_series *s)
{
	size_t size = 16 + 8 * s->nfields + (s->has_time_ns ? 8 : 0) +
		      (s->has_sync_ns ? 8 : 0);
	size_t off = 0, i;
	hid_t t = H5Tcreate(H5T_COMPOUND, size);

	if (t < 0)
		return -1;
	if (H5Tinsert(t, "ElapsedTime", off, H5T_STD_U64LE) < 0)
		goto error;
	off += 8;
	if (H5Tinsert(t, "EpochTime", off, H5T_STD_U64LE) < 0)
		goto error;
	off += 8;
	for (i = 0; i < s->nfields; i++, off += 8)
		if (H5Tinsert(t, s->fields[i].name, off,
			      field_h5type(s->fields[i].type, 1)) < 0)
			goto error;
	if (s->has_time_ns) {
		if (H5Tinsert(t, "EpochTimeNs", off, H5T_STD_U64LE) < 0)
			goto error;
		off += 8;
	}
	if (s->has_sync_ns &&
	    H5Tinsert(t, "SyncTimeNs", off, H5T_STD_U64LE) < 0)
		goto error;
	return t;
error:
	H5Tclose(t);
	return -1;
}

double sh5_record_field(const struct sh5_series *s, const void *recs,
			size_t row, size_t i)
{
	const union sh5_value *v = (const union sh5_value *)recs +
				   row * sh5_record_slots(s) +
				   SH5_TIME_SLOTS + i;

	return s->fields[i].type == SH5_FT_DOUBLE ? v->d : (double)v->u;
}

/* ------------------------------------------------------------------ */
/* Totals. */

static size_t total_size(const struct sh5_series *s)
{
	return sizeof(struct sh5_total_head) +
	       s->nfields * sizeof(struct sh5_total_field);
}

static const char *const stat_names[] = { "Min", "Max", "Mean", "Sum" };

/* Build a totals type; file != 0 packs it and leaves out level sums. */
static hid_t totals_type(const struct sh5_series *s, int file)
{
	size_t msize = total_size(s);
	size_t fsize = 24, off, i, k;
	char name[SH5_NAME_MAX + 8];
	hid_t t;

	for (i = 0; i < s->nfields; i++)
		fsize += (s->fields[i].kind == SH5_FK_DELTA ? 4 : 3) * 8;
	t = H5Tcreate(H5T_COMPOUND, file ? fsize : msize);
	if (t < 0)
		return -1;
	if (H5Tinsert(t, "Samples", 0, file ? H5T_STD_U64LE : H5T_NATIVE_UINT64) < 0 ||
	    H5Tinsert(t, "FirstTimeNs", 8, file ? H5T_STD_I64LE : H5T_NATIVE_INT64) < 0 ||
	    H5Tinsert(t, "LastTimeNs", 16, file ? H5T_STD_I64LE : H5T_NATIVE_INT64) < 0)
		goto error;
	off = 24;
	for (i = 0; i < s->nfields; i++) {
		for (k = 0; k < 4; k++) {
			if (k == 3 && s->fields[i].kind != SH5_FK_DELTA)
				continue;
			snprintf(name, sizeof(name), "%s.%s", s->fields[i].name,
				 stat_names[k]);
			if (!file)
				off = sizeof(struct sh5_total_head) +
				      i * sizeof(struct sh5_total_field) +
				      k * sizeof(double);
			if (H5Tinsert(t, name, off, file ? H5T_IEEE_F64LE :
							 H5T_NATIVE_DOUBLE) < 0)
				goto error;
			if (file)
				off += 8;
		}
	}
	return t;
error:
	H5Tclose(t);
	return -1;
}

static hid_t total_mem_type(const struct sh5_series *s)
{
	return totals_type(s, 0);
}

static hid_t total_file_type(const struct sh5_series *s)
{
	return totals_type(s, 1);
}

static void total_init(const struct sh5_series *s, void *total)
{
	struct sh5_total_head *h = sh5_total_head(total);
	size_t i;

	memset(total, 0, total_size(s));
	h->first_ns = INT64_MAX;
	h->last_ns = INT64_MIN;
	for (i = 0; i < s->nfields; i++) {
		sh5_total_field(total, i)->min = HUGE_VAL;
		sh5_total_field(total, i)->max = -HUGE_VAL;
	}
}

/* Time of a record: the corrected time when present, else ours, else
 * Slurm's whole seconds. */
static int64_t rec_time_ns(const struct sh5_series *s, const void *recs,
			   size_t row)
{
	const union sh5_value *v = (const union sh5_value *)recs +
				   row * sh5_record_slots(s);

	if (s->has_sync_ns)
		return v[SH5_SLOT_SYNC(s)].i;
	if (s->has_time_ns)
		return v[2].i;
	return sh5_epoch_to_ns(v[1].u);
}

static void total_add(const struct sh5_series *s, void *total,
		      const void *recs, size_t n)
{
	struct sh5_total_head *h = sh5_total_head(total);
	size_t r, i;

	for (r = 0; r < n; r++) {
		int64_t t = rec_time_ns(s, recs, r);

		if (t < h->first_ns)
			h->first_ns = t;
		if (t > h->last_ns)
			h->last_ns = t;
		for (i = 0; i < s->nfields; i++) {
			struct sh5_total_field *f = sh5_total_field(total, i);
			double x = sh5_record_field(s, recs, r, i);

			if (x < f->min)
				f->min = x;
			if (x > f->max)
				f->max = x;
			f->sum += x;
		}
	}
	h->samples += n;
	for (i = 0; i < s->nfields; i++) {
		struct sh5_total_field *f = sh5_total_field(total, i);

		f->mean = h->samples ? f->sum / (double)h->samples : 0.0;
	}
}

static void total_merge(const struct sh5_series *s, void *dst,
			const void *src)
{
	struct sh5_total_head *d = sh5_total_head(dst);
	const struct sh5_total_head *h = src;
	uint64_t dn = d->samples, gn = h->samples;
	size_t i;

	if (!gn)
		return;
	if (h->first_ns < d->first_ns)
		d->first_ns = h->first_ns;
	if (h->last_ns > d->last_ns)
		d->last_ns = h->last_ns;
	d->samples += gn;
	for (i = 0; i < s->nfields; i++) {
		struct sh5_total_field *f = sh5_total_field(dst, i);
		const struct sh5_total_field *g =
			sh5_total_field((void *)src, i);

		if (g->min < f->min)
			f->min = g->min;
		if (g->max > f->max)
			f->max = g->max;
		f->sum += g->sum;
		/* Weighted by samples, not sum / samples: a total read back
		 * from a file has no sum for level fields. */
		f->mean = (f->mean * (double)dn + g->mean * (double)gn) /
			  (double)d->samples;
	}
}

/* ------------------------------------------------------------------ */
/* CSV. */

static int extract_series(const struct sh5_series *s, FILE *f, int header,
			  const char *prefix, const void *recs, size_t n)
{
	size_t r, i;

	if (header) {
		fprintf(f, "%sElapsedTime,EpochTime,EpochTimeNs", prefix);
		if (s->has_sync_ns)
			fputs(",SyncTimeNs", f);
		for (i = 0; i < s->nfields; i++)
			fprintf(f, ",%s", s->fields[i].name);
		fputc('\n', f);
		return ferror(f) ? -1 : 0;
	}
	for (r = 0; r < n; r++) {
		const union sh5_value *v = (const union sh5_value *)recs +
					   r * sh5_record_slots(s);
		/* Hand-formatted: printf is the bottleneck of extraction. */
		char line[4096];
		size_t len = 0, plen = strlen(prefix);

		if (plen + (s->nfields + 4) * (SH5_FMT_MAX + 1) + 2 >
		    sizeof(line)) {
			fprintf(f, "%s%" PRIu64 ",%" PRIu64 ",%" PRId64, prefix,
				v[0].u, v[1].u,
				s->has_time_ns ? v[2].i :
						 sh5_epoch_to_ns(v[1].u));
			if (s->has_sync_ns)
				fprintf(f, ",%" PRId64, v[SH5_SLOT_SYNC(s)].i);
			for (i = 0; i < s->nfields; i++) {
				if (s->fields[i].type == SH5_FT_DOUBLE)
					fprintf(f, ",%.17g",
						v[SH5_TIME_SLOTS + i].d);
				else
					fprintf(f, ",%" PRIu64,
						v[SH5_TIME_SLOTS + i].u);
			}
			fputc('\n', f);
			continue;
		}
		memcpy(line, prefix, plen);
		len = plen;
		len += sh5_fmt_u64(line + len, v[0].u);
		line[len++] = ',';
		len += sh5_fmt_u64(line + len, v[1].u);
		line[len++] = ',';
		len += sh5_fmt_i64(line + len, s->has_time_ns ? v[2].i :
				   sh5_epoch_to_ns(v[1].u));
		if (s->has_sync_ns) {
			line[len++] = ',';
			len += sh5_fmt_i64(line + len, v[SH5_SLOT_SYNC(s)].i);
		}
		for (i = 0; i < s->nfields; i++) {
			line[len++] = ',';
			if (s->fields[i].type == SH5_FT_DOUBLE)
				len += sh5_fmt_double(line + len,
						      v[SH5_TIME_SLOTS + i].d);
			else
				len += sh5_fmt_u64(line + len,
						   v[SH5_TIME_SLOTS + i].u);
		}
		line[len++] = '\n';
		fwrite(line, 1, len, f);
	}
	return ferror(f) ? -1 : 0;
}

static int extract_totals(const struct sh5_series *s, FILE *f, int header,
			  const char *prefix, const void *total)
{
	const struct sh5_total_head *h = total;
	size_t i, k;

	fputs(prefix, f);
	if (header)
		fputs("Samples,FirstTimeNs,LastTimeNs", f);
	else
		fprintf(f, "%" PRIu64 ",%" PRId64 ",%" PRId64, h->samples,
			h->samples ? h->first_ns : 0,
			h->samples ? h->last_ns : 0);
	for (i = 0; i < s->nfields; i++) {
		/* The header needs no total (it may be NULL). */
		const struct sh5_total_field *t = header ? NULL :
			sh5_total_field((void *)total, i);
		const double vals[4] = { t ? t->min : 0, t ? t->max : 0,
					 t ? t->mean : 0, t ? t->sum : 0 };

		for (k = 0; k < 4; k++) {
			if (k == 3 && s->fields[i].kind != SH5_FK_DELTA)
				continue;
			char num[SH5_FMT_MAX];

			if (header) {
				fprintf(f, ",%s.%s", s->fields[i].name,
					stat_names[k]);
				continue;
			}
			fputc(',', f);
			fwrite(num, 1, sh5_fmt_double(num, h->samples ?
						      vals[k] : 0.0), f);
		}
	}
	fputc('\n', f);
	return ferror(f) ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* The tables. */

#define OPS(var, nm, grp, kn, nk)                                       \
	static const struct sh5_series_ops var = {                     \
		.name = nm, .group = grp, .known = kn, .nknown = nk,    \
		.record_size = rec_size, .mem_type = mem_type,          \
		.file_type = file_type, .total_size = total_size,       \
		.total_mem_type = total_mem_type,                       \
		.total_file_type = total_file_type,                     \
		.total_init = total_init, .total_add = total_add,       \
		.total_merge = total_merge,                             \
		.extract_series = extract_series,                       \
		.extract_totals = extract_totals,                       \
	}

OPS(task_ops, "Task", "Tasks", task_known, NELEM(task_known));
OPS(energy_ops, "Energy", NULL, energy_known, NELEM(energy_known));
OPS(fs_ops, "Filesystem", NULL, fs_known, NELEM(fs_known));
OPS(net_ops, "Network", NULL, net_known, NELEM(net_known));
OPS(generic_ops, "Generic", NULL, NULL, 0);

const struct sh5_series_ops *const sh5_series_all_ops[] = {
	&task_ops, &energy_ops, &fs_ops, &net_ops, &generic_ops, NULL,
};

const struct sh5_series_ops *sh5_series_ops_lookup(const char *parent,
						   const char *name)
{
	if (parent && !strcmp(parent, "Tasks"))
		return &task_ops;
	if (parent && parent[0])
		return &generic_ops;
	if (!name)
		return &generic_ops;
	if (!strcmp(name, "Energy"))
		return &energy_ops;
	if (!strcmp(name, "Filesystem"))
		return &fs_ops;
	if (!strcmp(name, "Network"))
		return &net_ops;
	return &generic_ops;
}

/* ------------------------------------------------------------------ */
/* Construction. */

int sh5_series_reserved_name(const char *n)
{
	return !strcmp(n, "ElapsedTime") || !strcmp(n, "EpochTime") ||
	       !strcmp(n, "EpochTimeNs") || !strcmp(n, "SyncTimeNs");
}

void sh5_series_apply_known(struct sh5_series *s)
{
	size_t i, k;

	for (i = 0; i < s->nfields; i++) {
		s->fields[i].kind = SH5_FK_LEVEL;
		s->fields[i].unit[0] = '\0';
		for (k = 0; k < s->ops->nknown; k++) {
			if (strcmp(s->fields[i].name, s->ops->known[k].name))
				continue;
			s->fields[i].kind = s->ops->known[k].kind;
			snprintf(s->fields[i].unit, sizeof(s->fields[i].unit),
				 "%s", s->ops->known[k].unit);
		}
	}
}

struct sh5_series *sh5_series_alloc(const char *parent, const char *name,
				    size_t n, struct sh5_error *errp)
{
	struct sh5_series *s;

	if (!name || !name[0] || strlen(name) >= SH5_NAME_MAX ||
	    strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) {
		errno = EINVAL;
		sh5_errprintf(errp, "series name '%s' is empty, too long or "
			      "not a plain name",
			      name ? name : "");
		return NULL;
	}
	if (!(s = calloc(1, sizeof(*s))) ||
	    (n && !(s->fields = calloc(n, sizeof(*s->fields))))) {
		free(s);
		sh5_errprintf(errp, "series %s: out of memory", name);
		return NULL;
	}
	s->ops = sh5_series_ops_lookup(parent, name);
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->nfields = n;
	s->has_time_ns = 1;
	return s;
}

struct sh5_series *sh5_series_dup(const struct sh5_series *t,
				  const char *parent, const char *name,
				  struct sh5_error *errp)
{
	struct sh5_series *s = sh5_series_alloc(parent, name, t->nfields,
						errp);

	if (!s)
		return NULL;
	if (s->ops != t->ops) {
		sh5_series_destroy(s);
		errno = EINVAL;
		sh5_errprintf(errp, "series %s: not of the kind of %s", name,
			      t->name);
		return NULL;
	}
	if (t->nfields)
		memcpy(s->fields, t->fields, t->nfields * sizeof(*s->fields));
	s->has_time_ns = t->has_time_ns;
	s->has_sync_ns = t->has_sync_ns;
	return s;
}

struct sh5_series *sh5_series_create(const char *parent, const char *name,
				     const char *const *field_names,
				     const enum sh5_ftype *types, size_t n,
				     struct sh5_error *errp)
{
	struct sh5_series *s = sh5_series_alloc(parent, name, n, errp);
	size_t i, j;

	if (!s)
		return NULL;
	for (i = 0; i < n; i++) {
		const char *fn = field_names[i];

		if (!fn || !fn[0] || strlen(fn) >= SH5_NAME_MAX ||
		    sh5_series_reserved_name(fn) || strchr(fn, '.') ||
		    (types[i] != SH5_FT_U64 && types[i] != SH5_FT_DOUBLE)) {
			sh5_errprintf(errp, "series %s: invalid field %zu '%s'",
				      name, i, fn ? fn : "(null)");
			goto einval;
		}
		for (j = 0; j < i; j++)
			if (!strcmp(fn, s->fields[j].name)) {
				sh5_errprintf(errp, "series %s: duplicate "
					      "field '%s'", name, fn);
				goto einval;
			}
		snprintf(s->fields[i].name, SH5_NAME_MAX, "%s", fn);
		s->fields[i].type = types[i];
	}
	sh5_series_apply_known(s);
	return s;
einval:
	sh5_series_destroy(s);
	errno = EINVAL;
	return NULL;
}

void sh5_series_destroy(struct sh5_series *s)
{
	if (!s)
		return;
	free(s->fields);
	free(s);
}

int sh5_series_field_index(const struct sh5_series *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nfields; i++)
		if (!strcmp(s->fields[i].name, name))
			return (int)i;
	return -1;
}

const char *sh5_fkind_name(enum sh5_fkind k)
{
	return k == SH5_FK_DELTA ? "delta" : "level";
}

int sh5_fkind_from_name(const char *name, enum sh5_fkind *out)
{
	if (!strcmp(name, "delta"))
		*out = SH5_FK_DELTA;
	else if (!strcmp(name, "level"))
		*out = SH5_FK_LEVEL;
	else
		return -1;
	return 0;
}

/* lbdata.c - see lbdata.h */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <brotli/encode.h>

#include "export/evlb.h"
#include "merge/jobread.h"
#include "common/json.h"
#include "export/lbdata.h"

#define BROTLI_QUALITY 8
#define BROTLI_WINDOW 20
#define OUTBUF_SIZE (64 * 1024)
#define COLLECTION_ID 1

enum { ST_PHASES, ST_TASKS, ST_COMMS };

struct sh5_lbdata_file {
	FILE *fp;
	char *tmp;		/* temporary path */
	struct sh5_json *j;
	BrotliEncoderState *enc;
	uint8_t *out;		/* brotli output buffer */
	int state;
	int nphases;
	uint64_t disk_bytes;
	struct sh5_error err;	/* sink failure */
};

/* ------------------------------------------------------------ sinks */

static int brotli_run(struct sh5_lbdata_file *f, const uint8_t *in,
		      size_t len, BrotliEncoderOperation op)
{
	size_t avail_in = len, avail_out, made;
	const uint8_t *next_in = in;
	uint8_t *next_out;

	for (;;) {
		avail_out = OUTBUF_SIZE;
		next_out = f->out;
		if (!BrotliEncoderCompressStream(f->enc, op, &avail_in,
						 &next_in, &avail_out,
						 &next_out, NULL)) {
			errno = EIO;
			return -1;
		}
		made = OUTBUF_SIZE - avail_out;
		if (made && fwrite(f->out, 1, made, f->fp) != made)
			return -1;
		f->disk_bytes += made;
		if (op == BROTLI_OPERATION_FINISH) {
			if (BrotliEncoderIsFinished(f->enc))
				return 0;
		} else if (avail_in == 0 &&
			   !BrotliEncoderHasMoreOutput(f->enc)) {
			return 0;
		}
	}
}

static int sink_brotli(void *arg, const void *buf, size_t len)
{
	return brotli_run(arg, buf, len, BROTLI_OPERATION_PROCESS);
}

static int sink_plain(void *arg, const void *buf, size_t len)
{
	struct sh5_lbdata_file *f = arg;

	if (fwrite(buf, 1, len, f->fp) != len)
		return -1;
	f->disk_bytes += len;
	return 0;
}

/* ------------------------------------------------------------ writing */

static char *part_path(const char *dir, const char *stem, int64_t rank,
		       int part)
{
	size_t n = strlen(dir) + strlen(stem) + 48;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s%s.%" PRId64 ".json%s", dir,
			 part ? "." : "", stem, rank, part ? ".part" : "");
	return p;
}

/* "key": {"list": [], "range": []} (metadata.phases' required members). */
static void empty_list_range(struct sh5_json *j, const char *key)
{
	sh5_json_key(j, key);
	sh5_json_object_open(j);
	sh5_json_key(j, "list");
	sh5_json_array_open(j);
	sh5_json_array_close(j);
	sh5_json_key(j, "range");
	sh5_json_array_open(j);
	sh5_json_array_close(j);
	sh5_json_object_close(j);
}

static int write_kvs(struct sh5_json *j, size_t n,
		     const struct sh5_lbdata_kv *kv)
{
	size_t i;

	for (i = 0; i < n; i++) {
		sh5_json_key(j, kv[i].key);
		switch (kv[i].kind) {
		case SH5_LBDATA_KV_DOUBLE:
			sh5_json_double(j, kv[i].d);
			break;
		case SH5_LBDATA_KV_INT:
			sh5_json_int(j, kv[i].i);
			break;
		default:
			sh5_json_string(j, kv[i].s);
			break;
		}
	}
	return 0;
}

struct sh5_lbdata_file *sh5_lbdata_file_open(const char *dir, const char *stem,
					     const struct sh5_lbdata_meta *meta,
					     enum sh5_lbdata_compress compress,
					     struct sh5_error *errp)
{
	struct sh5_lbdata_file *f = calloc(1, sizeof(*f));
	struct sh5_json *j;

	if (!f)
		goto nomem;
	f->tmp = part_path(dir, stem ? stem : "data", meta->rank, 1);
	if (!f->tmp)
		goto nomem;
	f->fp = fopen(f->tmp, "w");
	if (!f->fp) {
		sh5_errprintf(errp, "%s: %s", f->tmp, strerror(errno));
		goto error;
	}
	if (compress == SH5_LBDATA_BROTLI) {
		f->enc = BrotliEncoderCreateInstance(NULL, NULL, NULL);
		f->out = malloc(OUTBUF_SIZE);
		if (!f->enc || !f->out)
			goto nomem;
		BrotliEncoderSetParameter(f->enc, BROTLI_PARAM_QUALITY,
					  BROTLI_QUALITY);
		BrotliEncoderSetParameter(f->enc, BROTLI_PARAM_LGWIN,
					  BROTLI_WINDOW);
		f->j = sh5_json_create_cb(sink_brotli, f, 0, errp);
	} else {
		f->j = sh5_json_create_cb(sink_plain, f, 0, errp);
	}
	if (!f->j)
		goto error;
	j = f->j;
	{
		/* Errors name the file the user asked for. */
		char *final = part_path(dir, stem ? stem : "data",
					meta->rank, 0);

		sh5_json_set_name(j, final ? final : f->tmp);
		free(final);
	}
	sh5_json_object_open(j);
	sh5_json_kv_string(j, "type", "LBDatafile");
	sh5_json_key(j, "metadata");
	sh5_json_object_open(j);
	sh5_json_kv_string(j, "type", "LBDatafile");
	sh5_json_kv_int(j, "rank", meta->rank);
	if (meta->has_shared_node) {
		sh5_json_key(j, "shared_node");
		sh5_json_object_open(j);
		sh5_json_kv_int(j, "id", meta->node_id);
		sh5_json_kv_int(j, "size", meta->node_size);
		sh5_json_kv_int(j, "rank", meta->node_rank);
		sh5_json_kv_int(j, "num_nodes", meta->num_nodes);
		sh5_json_object_close(j);
	}
	sh5_json_key(j, "phases");
	sh5_json_object_open(j);
	if (meta->phase_count >= 0)
		sh5_json_kv_int(j, "count", meta->phase_count);
	empty_list_range(j, "skipped");
	empty_list_range(j, "identical_to_previous");
	sh5_json_object_close(j);
	if (meta->nattrs) {
		sh5_json_key(j, "attributes");
		sh5_json_object_open(j);
		write_kvs(j, meta->nattrs, meta->attrs);
		sh5_json_object_close(j);
	}
	sh5_json_object_close(j);
	sh5_json_key(j, "phases");
	if (sh5_json_array_open(j) < 0) {
		sh5_json_flush(j, errp);
		goto error;
	}
	f->state = ST_PHASES;
	return f;
nomem:
	errno = ENOMEM;
	sh5_errprintf(errp, "lbdata: out of memory");
error:
	sh5_lbdata_file_abort(f);
	return NULL;
}

/* Check an entity against the schema's rules (validate_ids and types). */
static int check_entity(const struct sh5_lbdata_entity *e, int task,
			struct sh5_error *errp)
{
	errno = EINVAL;
	if (e->id < 0 && e->seq_id < 0)
		return sh5_errprintf(errp, "lbdata: entity needs an id or "
				     "a seq_id");
	if (e->migratable > 0 && e->seq_id >= 0 && e->collection_id < 0)
		return sh5_errprintf(errp, "lbdata: migratable entity %" PRId64
				     " needs a collection_id", e->seq_id);
	if (task && e->home < 0)
		return sh5_errprintf(errp, "lbdata: task entity needs a home");
	if (task && e->migratable < 0)
		return sh5_errprintf(errp, "lbdata: task entity needs "
				     "migratable");
	errno = 0;
	return 0;
}

static void write_entity(struct sh5_json *j, const struct sh5_lbdata_entity *e)
{
	sh5_json_object_open(j);
	sh5_json_kv_string(j, "type", e->type ? e->type : "object");
	if (e->id >= 0)
		sh5_json_kv_int(j, "id", e->id);
	if (e->seq_id >= 0)
		sh5_json_kv_int(j, "seq_id", e->seq_id);
	if (e->collection_id >= 0)
		sh5_json_kv_int(j, "collection_id", e->collection_id);
	if (e->home >= 0)
		sh5_json_kv_int(j, "home", e->home);
	if (e->migratable >= 0)
		sh5_json_kv_bool(j, "migratable", e->migratable);
	sh5_json_object_close(j);
}

/* Close whatever the current phase has open. */
static void end_phase(struct sh5_lbdata_file *f)
{
	if (f->state == ST_TASKS || f->state == ST_COMMS) {
		sh5_json_array_close(f->j);
		sh5_json_object_close(f->j);
	}
	f->state = ST_PHASES;
}

static int json_failed(struct sh5_lbdata_file *f, int rc,
		       struct sh5_error *errp)
{
	if (rc < 0)
		sh5_json_flush(f->j, errp);
	return rc < 0 ? -1 : 0;
}

int sh5_lbdata_file_phase(struct sh5_lbdata_file *f, int64_t id,
			  size_t nuser, const struct sh5_lbdata_kv *user,
			  struct sh5_error *errp)
{
	struct sh5_json *j = f->j;

	end_phase(f);
	sh5_json_object_open(j);
	sh5_json_kv_int(j, "id", id);
	if (nuser) {
		sh5_json_key(j, "user_defined");
		sh5_json_object_open(j);
		write_kvs(j, nuser, user);
		sh5_json_object_close(j);
	}
	sh5_json_key(j, "tasks");
	f->state = ST_TASKS;
	f->nphases++;
	return json_failed(f, sh5_json_array_open(j), errp);
}

int sh5_lbdata_file_task(struct sh5_lbdata_file *f,
			 const struct sh5_lbdata_task *t,
			 struct sh5_error *errp)
{
	struct sh5_json *j = f->j;
	size_t i;

	if (f->state != ST_TASKS) {
		errno = EINVAL;
		return sh5_errprintf(errp, "lbdata: task outside the tasks "
				     "of a phase");
	}
	if (check_entity(&t->entity, 1, errp) < 0)
		return -1;
	if (!isfinite(t->time) || t->node < 0) {
		errno = EINVAL;
		return sh5_errprintf(errp, "lbdata: task %" PRId64 ": bad "
				     "time or node", t->entity.seq_id);
	}
	sh5_json_object_open(j);
	sh5_json_key(j, "entity");
	write_entity(j, &t->entity);
	sh5_json_kv_int(j, "node", t->node);
	sh5_json_kv_string(j, "resource", t->resource ? t->resource : "cpu");
	sh5_json_kv_double(j, "time", t->time);
	if (t->nsubphases) {
		sh5_json_key(j, "subphases");
		sh5_json_array_open(j);
		for (i = 0; i < t->nsubphases; i++) {
			sh5_json_object_open(j);
			sh5_json_kv_int(j, "id", (int64_t)i);
			sh5_json_kv_double(j, "time", t->subphases[i]);
			sh5_json_object_close(j);
		}
		sh5_json_array_close(j);
	}
	if (t->nuser) {
		sh5_json_key(j, "user_defined");
		sh5_json_object_open(j);
		write_kvs(j, t->nuser, t->user);
		sh5_json_object_close(j);
	}
	return json_failed(f, sh5_json_object_close(j), errp);
}

int sh5_lbdata_file_comm(struct sh5_lbdata_file *f,
			 const struct sh5_lbdata_comm *c,
			 struct sh5_error *errp)
{
	struct sh5_json *j = f->j;

	if (f->state == ST_PHASES) {
		errno = EINVAL;
		return sh5_errprintf(errp, "lbdata: communication outside "
				     "a phase");
	}
	if (!c->type || !c->type[0] || c->messages < 0 ||
	    !isfinite(c->bytes)) {
		errno = EINVAL;
		return sh5_errprintf(errp, "lbdata: communication needs a "
				     "type, messages >= 0 and finite bytes");
	}
	if (check_entity(&c->from, 0, errp) < 0 ||
	    check_entity(&c->to, 0, errp) < 0)
		return -1;
	if (f->state == ST_TASKS) {
		sh5_json_array_close(j);
		sh5_json_key(j, "communications");
		sh5_json_array_open(j);
		f->state = ST_COMMS;
	}
	sh5_json_object_open(j);
	sh5_json_kv_string(j, "type", c->type);
	sh5_json_key(j, "from");
	write_entity(j, &c->from);
	sh5_json_key(j, "to");
	write_entity(j, &c->to);
	sh5_json_kv_int(j, "messages", c->messages);
	sh5_json_kv_double(j, "bytes", c->bytes);
	return json_failed(f, sh5_json_object_close(j), errp);
}

static void file_free(struct sh5_lbdata_file *f, int unlink_tmp)
{
	if (f->fp)
		fclose(f->fp);
	if (unlink_tmp && f->tmp)
		unlink(f->tmp);
	sh5_json_destroy(f->j);
	if (f->enc)
		BrotliEncoderDestroyInstance(f->enc);
	free(f->out);
	free(f->tmp);
	free(f);
}

int sh5_lbdata_file_close(struct sh5_lbdata_file *f, uint64_t *json_bytes,
			  uint64_t *file_bytes, struct sh5_error *errp)
{
	int saved;

	end_phase(f);
	sh5_json_array_close(f->j);
	sh5_json_object_close(f->j);
	if (sh5_json_finish(f->j, errp) < 0) {
		/* name the file: the sink only knows "write failed" */
		saved = errno;
		sh5_errprintf(errp, "%s: %s", f->tmp, strerror(saved));
		goto error;
	}
	if (f->enc && brotli_run(f, NULL, 0, BROTLI_OPERATION_FINISH) < 0) {
		sh5_errprintf(errp, "%s: brotli: %s", f->tmp, strerror(errno));
		goto error;
	}
	if (fflush(f->fp) != 0 || ferror(f->fp)) {
		sh5_errprintf(errp, "%s: %s", f->tmp, strerror(errno));
		goto error;
	}
	if (fclose(f->fp) != 0) {
		f->fp = NULL;
		sh5_errprintf(errp, "%s: %s", f->tmp, strerror(errno));
		goto error;
	}
	f->fp = NULL;
	if (json_bytes)
		*json_bytes = sh5_json_bytes(f->j);
	if (file_bytes)
		*file_bytes = f->disk_bytes;
	file_free(f, 0);
	return 0;
error:
	file_free(f, 1);
	return -1;
}

void sh5_lbdata_file_abort(struct sh5_lbdata_file *f)
{
	if (f)
		file_free(f, 1);
}

int sh5_lbdata_commit(const char *dir, const char *stem, int64_t rank,
		      int commit, struct sh5_error *errp)
{
	char *tmp = part_path(dir, stem ? stem : "data", rank, 1);
	char *dst = part_path(dir, stem ? stem : "data", rank, 0);
	int rc = 0;

	if (!tmp || !dst) {
		errno = ENOMEM;
		rc = sh5_errprintf(errp, "lbdata: out of memory");
	} else if (commit) {
		if (rename(tmp, dst) < 0)
			rc = sh5_errprintf(errp, "%s: %s", dst, strerror(errno));
	} else if (unlink(tmp) < 0 && errno != ENOENT) {
		rc = sh5_errprintf(errp, "%s: %s", tmp, strerror(errno));
	}
	free(tmp);
	free(dst);
	return rc;
}

static void unlink_final(const char *dir, const char *stem, int64_t rank)
{
	char *p = part_path(dir, stem, rank, 0);

	if (p)
		unlink(p);
	free(p);
}

/* ------------------------------------------------------------ exporter */

/* Per phase accumulators of the task being read. */
enum { D_CPU, D_READ, D_WRITE, ND };	/* delta fields, spread over time */

struct acc {
	double d[ND];
	double rss_max, vm_max, util_sum;
	int64_t n;
};

struct exporter {
	const struct sh5_lbdata_opts *o;
	struct sh5_lbdata_summary *sum;
	const char *stem;
	char job_id[64];
	/* pass 1 */
	int64_t t0, tend;
	int have_time;
	int64_t maxrank;
	size_t nnodes;
	/* pass 2 */
	int64_t lns;		/* phase length in ns */
	int64_t nphases;
	struct acc *acc;
	double *node_load;	/* per phase, current node */
	double *rank_sum, *rank_max, *node_sum, *node_max;
	int64_t *rank_arg, *node_arg;
	char (*node_names)[64];
	unsigned char *seen;
	int fcpu, fread, fwrite, frss, fvm, futil;
	int64_t prev_t;
	int have_prev;
	int64_t ntasks;
	uint64_t samples, json_bytes, file_bytes;
	/* application events of the step (NULL: none): phases from
	 * marks or windows, tasks, objects, communications */
	struct sh5_evlb *evm;
	const struct sh5_evlb_rank *er;	/* of the series being read */
};

/* Marks mode: the phases of a task are its own (evm bounds). */
static int marks(const struct exporter *x)
{
	return x->evm && x->evm->marks;
}

/* Start of phase k (its lower, open bound). */
static int64_t phase_start(const struct exporter *x, int64_t k)
{
	if (marks(x))
		return x->er ? x->er->bound[k] :
			       k == 0 ? INT64_MIN : INT64_MAX;
	return x->t0 + k * x->lns;
}

static int p1_series(void *arg, const struct sh5_jobread_series *s,
		     struct sh5_error *errp)
{
	struct exporter *x = arg;

	(void)errp;
	if (s->task < 0)
		return 1;
	if (s->task > x->maxrank)
		x->maxrank = s->task;
	if (s->nsamples) {
		if (!x->have_time || s->t_first_ns < x->t0)
			x->t0 = s->t_first_ns;
		if (!x->have_time || s->t_last_ns > x->tend)
			x->tend = s->t_last_ns;
		x->have_time = 1;
	}
	return 1;
}

static int p1_step(void *arg, const struct sh5_jobread_step *st,
		   struct sh5_error *errp)
{
	struct exporter *x = arg;

	(void)errp;
	x->nnodes = st->nnodes;
	snprintf(x->job_id, sizeof(x->job_id), "%s", st->job_id);
	return 0;
}

/* Phase holding time t: intervals (start, end], the first one closed. */
static int64_t phase_of(const struct exporter *x, int64_t t)
{
	int64_t off = t - x->t0, k;

	if (marks(x))
		return sh5_evlb_phase_at(x->evm, x->er, t);
	if (off <= 0)
		return 0;
	k = (off - 1) / x->lns;
	return k >= x->nphases ? x->nphases - 1 : k;
}

/* Spread a delta d measured over (a, b] across the phases it overlaps. */
static void spread(struct exporter *x, int64_t a, int64_t b, double d,
		   int which)
{
	int64_t ka, kb, k, lo, hi;
	double total = (double)(b - a);

	if (b <= a) {
		x->acc[phase_of(x, b)].d[which] += d;
		return;
	}
	ka = phase_of(x, a + 1);
	kb = phase_of(x, b);
	if (ka == kb) {
		x->acc[kb].d[which] += d;
		return;
	}
	for (k = ka; k <= kb; k++) {
		lo = k == ka ? a : phase_start(x, k);
		hi = k == kb ? b : phase_start(x, k + 1);
		if (hi > lo)
			x->acc[k].d[which] += d * (double)(hi - lo) / total;
	}
}

static int p2_node(void *arg, const struct sh5_jobread_step *st,
		   const struct sh5_jobread_node *nd, struct sh5_error *errp)
{
	struct exporter *x = arg;

	(void)st;
	(void)errp;
	(void)nd;
	if (x->node_load)
		memset(x->node_load, 0, (size_t)x->nphases * sizeof(double));
	return 0;
}

static int p2_series(void *arg, const struct sh5_jobread_series *s,
		     struct sh5_error *errp)
{
	struct exporter *x = arg;
	int64_t k;

	if (s->task < 0)
		return 1;
	if (s->task > x->maxrank || x->seen[s->task]) {
		errno = EINVAL;
		return sh5_errprintf(errp, "step %s: task %" PRId64 " appears "
				     "twice", s->step->name, s->task);
	}
	x->seen[s->task] = 1;
	for (k = 0; k < x->nphases; k++)
		memset(&x->acc[k], 0, sizeof(x->acc[k]));
	x->fcpu = sh5_jobread_field(s, "CPUTime");
	x->fread = sh5_jobread_field(s, "ReadMB");
	x->fwrite = sh5_jobread_field(s, "WriteMB");
	x->frss = sh5_jobread_field(s, "RSS");
	x->fvm = sh5_jobread_field(s, "VMSize");
	x->futil = sh5_jobread_field(s, "CPUUtilization");
	x->have_prev = 0;
	x->er = x->evm ? sh5_evlb_rank(x->evm, s->task) : NULL;
	return 0;
}

static double fin(double v)
{
	return isfinite(v) ? v : 0.0;
}

static int p2_chunk(void *arg, const struct sh5_jobread_series *s,
		    const struct sh5_jobread_chunk *c, struct sh5_error *errp)
{
	struct exporter *x = arg;
	size_t i, nf = s->nfields;
	int64_t t, a;
	struct acc *p;
	const double *v;

	(void)errp;
	for (i = 0; i < c->n; i++) {
		t = c->time_ns[i];
		v = c->values + i * nf;
		a = x->have_prev ? x->prev_t : t;
		if (x->fcpu >= 0)
			spread(x, a, t, fin(v[x->fcpu]),
			       D_CPU);
		if (x->fread >= 0)
			spread(x, a, t, fin(v[x->fread]),
			       D_READ);
		if (x->fwrite >= 0)
			spread(x, a, t, fin(v[x->fwrite]),
			       D_WRITE);
		p = &x->acc[phase_of(x, t)];
		if (x->frss >= 0 && fin(v[x->frss]) > p->rss_max)
			p->rss_max = v[x->frss];
		if (x->fvm >= 0 && fin(v[x->fvm]) > p->vm_max)
			p->vm_max = v[x->fvm];
		if (x->futil >= 0)
			p->util_sum += fin(v[x->futil]);
		p->n++;
		x->prev_t = t;
		x->have_prev = 1;
	}
	x->samples += c->n;
	return 0;
}

static void fill_attrs(const struct exporter *x, const char *step,
		       const char *node_name, struct sh5_lbdata_kv *kv,
		       size_t *n)
{
	size_t i = 0;

	kv[i].key = "producer";
	kv[i].kind = SH5_LBDATA_KV_STRING;
	kv[i++].s = "sh5merge lbdata " PACKAGE_VERSION;
	kv[i].key = "job_id";
	kv[i].kind = SH5_LBDATA_KV_STRING;
	kv[i++].s = x->job_id;
	kv[i].key = "step";
	kv[i].kind = SH5_LBDATA_KV_STRING;
	kv[i++].s = step;
	kv[i].key = "phase_length";
	kv[i].kind = SH5_LBDATA_KV_DOUBLE;
	kv[i++].d = marks(x) ? 0.0 : (double)x->lns / 1e9;
	if (x->evm) {	/* application events (none: as before) */
		kv[i].key = "phases_from";
		kv[i].kind = SH5_LBDATA_KV_STRING;
		kv[i++].s = marks(x) ? "marks" : "windows";
		kv[i].key = "events";
		kv[i].kind = SH5_LBDATA_KV_INT;
		kv[i++].i = 1;
	}
	if (node_name) {
		kv[i].key = "node_name";
		kv[i].kind = SH5_LBDATA_KV_STRING;
		kv[i++].s = node_name;
	}
	*n = i;
}

static int write_phase_head(struct exporter *x, struct sh5_lbdata_file *f,
			    int64_t k, struct sh5_error *errp)
{
	struct sh5_lbdata_kv kv[2];

	if (marks(x))	/* the bounds differ from rank to rank */
		return sh5_lbdata_file_phase(f, k, 0, NULL, errp);
	kv[0].key = "start_time";
	kv[0].kind = SH5_LBDATA_KV_DOUBLE;
	kv[0].d = (double)(x->t0 + k * x->lns) / 1e9;
	kv[1].key = "end_time";
	kv[1].kind = SH5_LBDATA_KV_DOUBLE;
	kv[1].d = (double)(x->t0 + (k + 1) * x->lns) / 1e9;
	return sh5_lbdata_file_phase(f, k, 2, kv, errp);
}

static int close_counted(struct exporter *x, struct sh5_lbdata_file *f,
			 struct sh5_error *errp)
{
	uint64_t jb = 0, fb = 0;

	if (sh5_lbdata_file_close(f, &jb, &fb, errp) < 0)
		return -1;
	x->json_bytes += jb;
	x->file_bytes += fb;
	return 0;
}

/* The task of a rank in phase k: with events, the rank's entity, its
 * objects and the communications its file holds (export/evlb.h). */
static int write_task(struct exporter *x, struct sh5_lbdata_file *f,
		      const struct sh5_lbdata_task *t, int64_t k,
		      struct sh5_error *errp)
{
	if (x->evm)
		return sh5_evlb_write_phase(x->evm, t->entity.seq_id, k, f, t,
					    errp);
	return sh5_lbdata_file_task(f, t, errp);
}

static int p2_series_end(void *arg, const struct sh5_jobread_series *s,
			 struct sh5_error *errp)
{
	struct exporter *x = arg;
	struct sh5_lbdata_meta m;
	struct sh5_lbdata_kv attrs[7], user[9];
	struct sh5_lbdata_task t;
	struct sh5_lbdata_file *f;
	const struct acc *p;
	int64_t k;
	size_t i;

	memset(&m, 0, sizeof(m));
	m.rank = s->task;
	m.has_shared_node = 1;
	m.node_id = s->node->index;
	m.node_size = (int64_t)s->node->ntasks;
	m.node_rank = (int64_t)s->local_rank;
	m.num_nodes = (int64_t)x->nnodes;
	m.phase_count = x->nphases;
	fill_attrs(x, s->step->name, s->node->name, attrs, &m.nattrs);
	m.attrs = attrs;
	f = sh5_lbdata_file_open(x->o->dir, x->stem, &m, x->o->compress,
				 errp);
	if (!f)
		return -1;
	memset(&t, 0, sizeof(t));
	t.entity.type = "object";
	t.entity.id = -1;
	t.entity.seq_id = s->task;
	t.entity.collection_id = COLLECTION_ID;
	t.entity.home = s->node->index;
	t.entity.migratable = x->o->migratable ? 1 : 0;
	t.node = s->node->index;
	t.resource = "cpu";
	t.user = user;
	for (k = 0; k < x->nphases; k++) {
		p = &x->acc[k];
		i = 0;
		user[i].key = "task_footprint_bytes";
		user[i].kind = SH5_LBDATA_KV_DOUBLE;
		user[i++].d = p->rss_max * 1024.0;
		user[i].key = "rss_max_kib";
		user[i].kind = SH5_LBDATA_KV_DOUBLE;
		user[i++].d = p->rss_max;
		user[i].key = "vmsize_max_kib";
		user[i].kind = SH5_LBDATA_KV_DOUBLE;
		user[i++].d = p->vm_max;
		user[i].key = "read_mb";
		user[i].kind = SH5_LBDATA_KV_DOUBLE;
		user[i++].d = p->d[D_READ];
		user[i].key = "write_mb";
		user[i].kind = SH5_LBDATA_KV_DOUBLE;
		user[i++].d = p->d[D_WRITE];
		user[i].key = "cpu_utilization_mean";
		user[i].kind = SH5_LBDATA_KV_DOUBLE;
		user[i++].d = p->n ? p->util_sum / (double)p->n : 0.0;
		user[i].key = "samples";
		user[i].kind = SH5_LBDATA_KV_INT;
		user[i++].i = p->n;
		if (x->evm) {
			user[i].key = "cpu_time";
			user[i].kind = SH5_LBDATA_KV_DOUBLE;
			user[i++].d = p->d[D_CPU];
		}
		t.nuser = i;
		t.time = p->d[D_CPU];
		if (write_phase_head(x, f, k, errp) < 0 ||
		    write_task(x, f, &t, k, errp) < 0) {
			sh5_lbdata_file_abort(f);
			return -1;
		}
		if (x->rank_sum) {
			double load = x->evm ? sh5_evlb_rank_load(x->evm,
						s->task, k, p->d[D_CPU]) :
					       p->d[D_CPU];

			x->rank_sum[k] += load;
			if (load > x->rank_max[k] || x->rank_arg[k] < 0) {
				x->rank_max[k] = load;
				x->rank_arg[k] = s->task;
			}
			x->node_load[k] += load;
		}
	}
	x->ntasks++;
	return close_counted(x, f, errp);
}

static int p2_node_end(void *arg, const struct sh5_jobread_step *st,
		       const struct sh5_jobread_node *nd,
		       struct sh5_error *errp)
{
	struct exporter *x = arg;
	int64_t k;

	(void)st;
	(void)errp;
	if (!x->node_load)
		return 0;
	for (k = 0; k < x->nphases; k++) {
		x->node_sum[k] += x->node_load[k];
		if (x->node_arg[k] < 0 || x->node_load[k] > x->node_max[k]) {
			x->node_max[k] = x->node_load[k];
			x->node_arg[k] = nd->index;
			snprintf(x->node_names[k], sizeof(x->node_names[k]),
				 "%s", nd->name);
		}
	}
	return 0;
}

/* A rank without data (gap in the task ids): same phases, no tasks. */
static int write_empty_rank(struct exporter *x, const char *step,
			    int64_t rank, struct sh5_error *errp)
{
	struct sh5_lbdata_meta m;
	struct sh5_lbdata_kv attrs[7];
	struct sh5_lbdata_file *f;
	const struct sh5_evlb_rank *er = sh5_evlb_rank(x->evm, rank);
	struct sh5_lbdata_task t;
	int64_t k;

	memset(&m, 0, sizeof(m));
	m.rank = rank;
	m.phase_count = x->nphases;
	fill_attrs(x, step, NULL, attrs, &m.nattrs);
	m.attrs = attrs;
	f = sh5_lbdata_file_open(x->o->dir, x->stem, &m, x->o->compress,
				 errp);
	if (!f)
		return -1;
	memset(&t, 0, sizeof(t));
	t.entity.type = "object";
	t.entity.id = -1;
	t.entity.seq_id = rank;
	t.entity.collection_id = COLLECTION_ID;
	t.entity.home = er ? er->node : 0;
	t.entity.migratable = x->o->migratable ? 1 : 0;
	t.node = t.entity.home;
	t.resource = "cpu";
	for (k = 0; k < x->nphases; k++) {
		if (write_phase_head(x, f, k, errp) < 0 ||
		    (er && write_task(x, f, &t, k, errp) < 0)) {
			sh5_lbdata_file_abort(f);
			return -1;
		}
	}
	return close_counted(x, f, errp);
}

static void exporter_free(struct exporter *x)
{
	free(x->acc);
	free(x->node_load);
	free(x->rank_sum);
	free(x->rank_max);
	free(x->node_sum);
	free(x->node_max);
	free(x->rank_arg);
	free(x->node_arg);
	free(x->node_names);
	free(x->seen);
}

void sh5_lbdata_summary_free(struct sh5_lbdata_summary *sum)
{
	if (!sum)
		return;
	free(sum->phases);
	sum->phases = NULL;
}

static int alloc_pass2(struct exporter *x)
{
	size_t np = (size_t)x->nphases;
	int64_t k;

	x->acc = calloc(np, sizeof(*x->acc));
	x->seen = calloc((size_t)x->maxrank + 1, 1);
	if (!x->acc || !x->seen)
		return -1;
	if (!x->o->summary)
		return 0;
	x->node_load = calloc(np, sizeof(double));
	x->rank_sum = calloc(np, sizeof(double));
	x->rank_max = calloc(np, sizeof(double));
	x->node_sum = calloc(np, sizeof(double));
	x->node_max = calloc(np, sizeof(double));
	x->rank_arg = calloc(np, sizeof(int64_t));
	x->node_arg = calloc(np, sizeof(int64_t));
	x->node_names = calloc(np, sizeof(*x->node_names));
	if (!x->node_load || !x->rank_sum || !x->rank_max || !x->node_sum ||
	    !x->node_max || !x->rank_arg || !x->node_arg || !x->node_names)
		return -1;
	for (k = 0; k < x->nphases; k++)
		x->rank_arg[k] = x->node_arg[k] = -1;
	return 0;
}

int sh5_lbdata_export(const char *path, const struct sh5_lbdata_opts *opts,
		      struct sh5_lbdata_summary *sum, struct sh5_error *errp)
{
	static const struct sh5_jobread_ops pass1 = {
		.step_begin = p1_step,
		.series_begin = p1_series,
	};
	static const struct sh5_jobread_ops pass2 = {
		.node_begin = p2_node,
		.series_begin = p2_series,
		.chunk = p2_chunk,
		.series_end = p2_series_end,
		.node_end = p2_node_end,
	};
	struct exporter x;
	struct sh5_jobread *jr;
	struct sh5_evstep *evs = NULL;
	const char *const *steps;
	const char *step;
	size_t nsteps;
	int64_t r, k;
	int64_t renamed = 0;
	int rc = -1, written = 0;

	memset(&x, 0, sizeof(x));
	x.o = opts;
	x.stem = opts->stem ? opts->stem : "data";
	x.maxrank = -1;
	if (sum)
		memset(sum, 0, sizeof(*sum));
	jr = sh5_jobread_open(path, errp);
	if (!jr)
		return -1;
	if (sh5_jobread_steps(jr, &steps, &nsteps, errp) < 0)
		goto out;
	if (opts->step) {
		step = opts->step;
	} else if (nsteps) {
		step = steps[0];
	} else {
		errno = ENOENT;
		sh5_errprintf(errp, "%s: no steps", path);
		goto out;
	}
	if (sh5_jobread_walk(jr, step, &pass1, &x, errp) < 0)
		goto out;
	evs = sh5_evlb_read_step(path, step, errp);
	if (!evs)
		goto out;
	if (evs->ntasks && evs->tasks[evs->ntasks - 1].task > x.maxrank)
		x.maxrank = evs->tasks[evs->ntasks - 1].task;
	if (evs->ntasks && !x.have_time)
		x.have_time = sh5_evlb_span(evs, &x.t0, &x.tend);
	if (x.maxrank < 0) {
		errno = ENOENT;
		sh5_errprintf(errp, "%s: step %s has no Task series", path,
			      step);
		goto out;
	}
	if (!x.have_time)
		x.t0 = x.tend = 0;
	{
		int64_t span;

		/* Hostile times: the span must fit int64. */
		if (__builtin_sub_overflow(x.tend, x.t0, &span)) {
			errno = ERANGE;
			sh5_errprintf(errp, "%s: step %s: time span out of "
				      "range", path, step);
			goto out;
		}
		/* A length past 126 years is one phase (no unchecked
		 * float-to-integer conversion). */
		if (opts->phase_length > 0 &&
		    opts->phase_length * 1e9 < 4e18) {
			x.lns = (int64_t)llround(opts->phase_length * 1e9);
			if (x.lns < 1)
				x.lns = 1;
		} else if (opts->phase_length > 0) {
			x.lns = INT64_C(4000000000000000000);
		} else {
			x.lns = span > 0 ? span : 1000000000;
		}
		x.nphases = span > 0 ? (span - 1) / x.lns + 1 : 1;
	}
	/* (with phase marks the windows are not used) */
	if (x.nphases > SH5_LBDATA_MAX_PHASES &&
	    !(evs->ntasks && sh5_evlb_has_marks(evs))) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: step %s: phase length %g s gives %"
			      PRId64 " phases (at most %d)", path, step,
			      opts->phase_length, x.nphases,
			      SH5_LBDATA_MAX_PHASES);
		goto out;
	}
	if (evs->ntasks) {
		struct sh5_evlb_windows w = { x.t0, x.lns, x.nphases };

		x.evm = sh5_evlb_build(evs, &w, SH5_LBDATA_MAX_PHASES, errp);
		if (!x.evm) {
			char text[sizeof(errp->text)];

			if (errp) {
				snprintf(text, sizeof(text), "%s", errp->text);
				sh5_errprintf(errp, "%s: step %s: %s", path,
					      step, text);
			}
			goto out;
		}
		x.nphases = x.evm->nphases;
	}
	if (alloc_pass2(&x) < 0) {
		errno = ENOMEM;
		sh5_errprintf(errp, "%s: out of memory (%" PRId64 " phases)",
			      path, x.nphases);
		goto out;
	}
	written = 1;
	if (sh5_jobread_walk(jr, step, &pass2, &x, errp) < 0)
		goto out;
	for (r = 0; r <= x.maxrank; r++)
		if (!x.seen[r] && write_empty_rank(&x, step, r, errp) < 0)
			goto out;
	for (renamed = 0; renamed <= x.maxrank; renamed++)
		if (sh5_lbdata_commit(opts->dir, x.stem, renamed, 1, errp) < 0)
			goto out;
	written = 0;
	if (sum) {
		snprintf(sum->step, sizeof(sum->step), "%s", step);
		sum->nranks = x.maxrank + 1;
		sum->ntasks = x.ntasks;
		sum->nnodes = x.nnodes;
		sum->nphases = x.nphases;
		sum->phase_length = (double)x.lns / 1e9;
		sum->samples = x.samples;
		if (x.evm) {
			sum->events = 1;
			sum->marks = x.evm->marks;
			sum->comm_edges = x.evm->nedges;
			sum->p2p_matched = x.evm->p2p_matched;
			sum->unmatched = x.evm->unmatched_sends +
					 x.evm->unmatched_recvs;
			sum->objects = x.evm->nobjects;
		}
		sum->json_bytes = x.json_bytes;
		sum->file_bytes = x.file_bytes;
		if (opts->summary) {
			sum->phases = calloc((size_t)x.nphases,
					     sizeof(*sum->phases));
			if (!sum->phases) {
				errno = ENOMEM;
				sh5_errprintf(errp, "out of memory");
				goto out;
			}
			for (k = 0; k < x.nphases; k++) {
				struct sh5_lbdata_phase_summary *p =
					&sum->phases[k];

				p->id = k;
				p->start = (double)(x.t0 + k * x.lns) / 1e9;
				p->end = (double)(x.t0 + (k + 1) * x.lns) /
					 1e9;
				p->rank_max = x.rank_max[k];
				p->rank_avg = x.rank_sum[k] /
					      (double)(x.maxrank + 1);
				p->rank_argmax = x.rank_arg[k];
				p->node_max = x.node_max[k];
				p->node_avg = x.nnodes ?
						      x.node_sum[k] /
							      (double)x.nnodes :
						      0.0;
				p->node_argmax = x.node_arg[k];
				snprintf(p->node_name, sizeof(p->node_name),
					 "%s", x.node_names[k]);
			}
		}
	}
	rc = 0;
out:
	if (written) {
		/* leave nothing behind: the temporaries, and the files
		 * already renamed when a rename failed midway */
		for (r = 0; r <= x.maxrank; r++)
			sh5_lbdata_commit(opts->dir, x.stem, r, 0, NULL);
		for (r = 0; r < renamed; r++)
			unlink_final(opts->dir, x.stem, r);
	}
	exporter_free(&x);
	sh5_evlb_free(x.evm);
	sh5_evstep_free(evs);
	sh5_jobread_close(jr);
	return rc;
}

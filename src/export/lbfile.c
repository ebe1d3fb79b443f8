/* lbfile.c - see lbfile.h */
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

#include "common/json.h"
#include "export/lbfile.h"

#define BROTLI_QUALITY 8
#define BROTLI_WINDOW 20
#define OUTBUF_SIZE (64 * 1024)

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

/* The JSON writer of f, through brotli or plain. */
static int open_writer(struct sh5_lbdata_file *f,
		       enum sh5_lbdata_compress compress,
		       struct sh5_error *errp)
{
	if (compress == SH5_LBDATA_BROTLI) {
		f->enc = BrotliEncoderCreateInstance(NULL, NULL, NULL);
		f->out = malloc(OUTBUF_SIZE);
		if (!f->enc || !f->out) {
			errno = ENOMEM;
			sh5_errprintf(errp, "lbdata: out of memory");
			return -1;
		}
		BrotliEncoderSetParameter(f->enc, BROTLI_PARAM_QUALITY,
					  BROTLI_QUALITY);
		BrotliEncoderSetParameter(f->enc, BROTLI_PARAM_LGWIN,
					  BROTLI_WINDOW);
		f->j = sh5_json_create_cb(sink_brotli, f, 0, errp);
	} else {
		f->j = sh5_json_create_cb(sink_plain, f, 0, errp);
	}
	return f->j ? 0 : -1;
}

/* The top-level "type" and the metadata, then the "phases" key. */
static void write_head(struct sh5_json *j, const struct sh5_lbdata_meta *meta)
{
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
	if (open_writer(f, compress, errp) < 0)
		goto error;
	j = f->j;
	{
		/* Errors name the file the user asked for. */
		char *final = part_path(dir, stem ? stem : "data",
					meta->rank, 0);

		sh5_json_set_name(j, final ? final : f->tmp);
		free(final);
	}
	write_head(j, meta);
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

void sh5_lbdata_unlink_final(const char *dir, const char *stem, int64_t rank)
{
	char *p = part_path(dir, stem, rank, 0);

	if (p)
		unlink(p);
	free(p);
}

/* test_lbdata.c - LBDatafile writer against the schema rules of vt's
 * JSON_data_files_validator (re-implemented here from the schema text),
 * brotli round trip, temporary names. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <brotli/decode.h>
#include <check.h>
#include <yajl/yajl_tree.h>

#include "export/lbdata.h"

static char dir[] = "/tmp/test_lbdata.XXXXXX";

/* ------------------------------------------------------ the validator */

struct vstate {
	char why[256];
};

static int bad(struct vstate *st, const char *what, const char *where)
{
	if (!st->why[0])
		snprintf(st->why, sizeof(st->why), "%s: %s", where, what);
	return -1;
}

/* Python's json gives int for "1" and float for "1.0"/"1e3": judge the
 * text of the number, as the schema's int/float checks do. */
static int is_int(yajl_val v)
{
	return YAJL_IS_NUMBER(v) && !strpbrk(YAJL_GET_NUMBER(v), ".eE");
}

static int is_float(yajl_val v)
{
	return YAJL_IS_NUMBER(v) && strpbrk(YAJL_GET_NUMBER(v), ".eE");
}

static int is_bool(yajl_val v)
{
	return YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v);
}

/* v is the string s (yajl's macro trips gcc's nonnull analysis). */
static int str_is(yajl_val v, const char *s)
{
	const char *t = YAJL_IS_STRING(v) ? v->u.string : NULL;

	return t && !strcmp(t, s);
}

static yajl_val get(yajl_val obj, const char *key)
{
	size_t i;

	for (i = 0; i < YAJL_GET_OBJECT(obj)->len; i++)
		if (!strcmp(YAJL_GET_OBJECT(obj)->keys[i], key))
			return YAJL_GET_OBJECT(obj)->values[i];
	return NULL;
}

/* Every key of obj must be in allowed (Schema rejects extra keys). */
static int only_keys(struct vstate *st, yajl_val obj, const char *const *allowed,
		     const char *where)
{
	size_t i, k;

	if (!YAJL_IS_OBJECT(obj))
		return bad(st, "not an object", where);
	for (i = 0; i < YAJL_GET_OBJECT(obj)->len; i++) {
		for (k = 0; allowed[k]; k++)
			if (!strcmp(YAJL_GET_OBJECT(obj)->keys[i], allowed[k]))
				break;
		if (!allowed[k])
			return bad(st, YAJL_GET_OBJECT(obj)->keys[i],
				   "unexpected key");
	}
	return 0;
}

static int int_list(yajl_val v)
{
	size_t i;

	if (!YAJL_IS_ARRAY(v))
		return 0;
	for (i = 0; i < YAJL_GET_ARRAY(v)->len; i++)
		if (!is_int(YAJL_GET_ARRAY(v)->values[i]))
			return 0;
	return 1;
}

static int list_range(struct vstate *st, yajl_val v, const char *where)
{
	static const char *const keys[] = { "list", "range", NULL };
	yajl_val l, r;
	size_t i;

	if (!v || only_keys(st, v, keys, where) < 0)
		return bad(st, "missing or bad", where);
	l = get(v, "list");
	r = get(v, "range");
	if (!l || !int_list(l) || !r || !YAJL_IS_ARRAY(r))
		return bad(st, "list [int] and range [[int]] required", where);
	for (i = 0; i < YAJL_GET_ARRAY(r)->len; i++)
		if (!int_list(YAJL_GET_ARRAY(r)->values[i]))
			return bad(st, "range not [[int]]", where);
	return 0;
}

/* validate_ids() plus the entity's field types; task entities also need
 * home, type and migratable. */
static int entity(struct vstate *st, yajl_val e, int task)
{
	static const char *const keys[] = { "collection_id", "home", "id",
					    "seq_id", "index", "type",
					    "migratable", "objgroup_id",
					    NULL };
	static const char *const ints[] = { "collection_id", "home", "id",
					    "seq_id", "objgroup_id", NULL };
	yajl_val v;
	size_t k;

	if (only_keys(st, e, keys, "entity") < 0)
		return -1;
	for (k = 0; ints[k]; k++)
		if ((v = get(e, ints[k])) && !is_int(v))
			return bad(st, ints[k], "entity: not an int");
	if (!(v = get(e, "type")) || !YAJL_IS_STRING(v))
		return bad(st, "type", "entity: missing string");
	if ((v = get(e, "migratable")) && !is_bool(v))
		return bad(st, "migratable", "entity: not a bool");
	if (task && (!get(e, "home") || !get(e, "migratable")))
		return bad(st, "home/migratable", "task entity: missing");
	if (!get(e, "seq_id") && !get(e, "id"))
		return bad(st, "id or seq_id", "entity: missing");
	if ((v = get(e, "migratable")) && YAJL_IS_TRUE(v) &&
	    get(e, "seq_id") && !get(e, "collection_id"))
		return bad(st, "collection_id", "migratable entity: missing");
	return 0;
}

static int task(struct vstate *st, yajl_val t)
{
	static const char *const keys[] = { "entity", "node", "resource",
					    "subphases", "time",
					    "user_defined", "attributes",
					    NULL };
	static const char *const skeys[] = { "id", "time", NULL };
	yajl_val v, sp;
	size_t i;

	if (only_keys(st, t, keys, "task") < 0)
		return -1;
	if (!(v = get(t, "entity")) || entity(st, v, 1) < 0)
		return bad(st, "entity", "task");
	if (!(v = get(t, "node")) || !is_int(v))
		return bad(st, "node", "task: missing int");
	if (!(v = get(t, "resource")) || !YAJL_IS_STRING(v))
		return bad(st, "resource", "task: missing string");
	if (!(v = get(t, "time")) || !is_float(v))
		return bad(st, "time", "task: missing float");
	if ((v = get(t, "user_defined")) && !YAJL_IS_OBJECT(v))
		return bad(st, "user_defined", "task: not a dict");
	if ((v = get(t, "subphases"))) {
		if (!YAJL_IS_ARRAY(v))
			return bad(st, "subphases", "task: not a list");
		for (i = 0; i < YAJL_GET_ARRAY(v)->len; i++) {
			sp = YAJL_GET_ARRAY(v)->values[i];
			if (only_keys(st, sp, skeys, "subphase") < 0 ||
			    !get(sp, "id") || !is_int(get(sp, "id")) ||
			    !get(sp, "time") || !is_float(get(sp, "time")))
				return bad(st, "id int, time float",
					   "subphase");
		}
	}
	return 0;
}

static int comm(struct vstate *st, yajl_val c)
{
	static const char *const keys[] = { "type", "to", "messages",
					    "from", "bytes", NULL };
	yajl_val v;

	if (only_keys(st, c, keys, "communication") < 0)
		return -1;
	if (!(v = get(c, "type")) || !YAJL_IS_STRING(v))
		return bad(st, "type", "communication");
	if (!(v = get(c, "messages")) || !is_int(v))
		return bad(st, "messages", "communication: not an int");
	if (!(v = get(c, "bytes")) || !is_float(v))
		return bad(st, "bytes", "communication: not a float");
	if (!(v = get(c, "from")) || entity(st, v, 0) < 0)
		return bad(st, "from", "communication");
	if (!(v = get(c, "to")) || entity(st, v, 0) < 0)
		return bad(st, "to", "communication");
	return 0;
}

/* The whole LBDatafile schema, plus LBAF's need for a "type". */
static int validate(struct vstate *st, yajl_val doc)
{
	static const char *const top[] = { "type", "metadata", "phases",
					   NULL };
	static const char *const meta[] = { "type", "rank", "shared_node",
					     "phases", "attributes", NULL };
	static const char *const shn[] = { "id", "size", "rank",
					   "num_nodes", NULL };
	static const char *const mph[] = { "count", "skipped",
					   "identical_to_previous", NULL };
	static const char *const ph[] = { "id", "tasks", "communications",
					  "user_defined", "lb_iterations",
					  NULL };
	yajl_val m, v, phases, p, a;
	size_t i, k;

	if (only_keys(st, doc, top, "top") < 0)
		return -1;
	if ((v = get(doc, "type")) && !str_is(v, "LBDatafile"))
		return bad(st, "'LBDatafile' must be chosen.", "type");
	if ((m = get(doc, "metadata"))) {
		if (only_keys(st, m, meta, "metadata") < 0)
			return -1;
		if ((v = get(m, "type")) && !str_is(v, "LBDatafile"))
			return bad(st, "'LBDatafile' must be chosen.",
				   "metadata.type");
		if ((v = get(m, "rank")) && !is_int(v))
			return bad(st, "rank", "metadata: not an int");
		if ((v = get(m, "shared_node"))) {
			if (only_keys(st, v, shn, "shared_node") < 0)
				return -1;
			for (k = 0; shn[k]; k++)
				if (!get(v, shn[k]) || !is_int(get(v, shn[k])))
					return bad(st, shn[k], "shared_node");
		}
		if ((v = get(m, "phases"))) {
			if (only_keys(st, v, mph, "metadata.phases") < 0)
				return -1;
			if (get(v, "count") && !is_int(get(v, "count")))
				return bad(st, "count", "metadata.phases");
			if (list_range(st, get(v, "skipped"), "skipped") < 0 ||
			    list_range(st, get(v, "identical_to_previous"),
				       "identical_to_previous") < 0)
				return -1;
		}
		if ((v = get(m, "attributes")) && !YAJL_IS_OBJECT(v))
			return bad(st, "attributes", "metadata: not a dict");
	}
	if (!get(doc, "type") && !(m && get(m, "type")))
		return bad(st, "type", "LBAF needs a type");
	phases = get(doc, "phases");
	if (!phases || !YAJL_IS_ARRAY(phases))
		return bad(st, "phases", "missing list");
	for (i = 0; i < YAJL_GET_ARRAY(phases)->len; i++) {
		p = YAJL_GET_ARRAY(phases)->values[i];
		if (only_keys(st, p, ph, "phase") < 0)
			return -1;
		if (!(v = get(p, "id")) || !is_int(v))
			return bad(st, "id", "phase: missing int");
		if (!(a = get(p, "tasks")) || !YAJL_IS_ARRAY(a))
			return bad(st, "tasks", "phase: missing list");
		for (k = 0; k < YAJL_GET_ARRAY(a)->len; k++)
			if (task(st, YAJL_GET_ARRAY(a)->values[k]) < 0)
				return -1;
		if ((a = get(p, "communications"))) {
			if (!YAJL_IS_ARRAY(a))
				return bad(st, "communications", "phase");
			for (k = 0; k < YAJL_GET_ARRAY(a)->len; k++)
				if (comm(st, YAJL_GET_ARRAY(a)->values[k]) < 0)
					return -1;
		}
		if ((v = get(p, "user_defined")) && !YAJL_IS_OBJECT(v))
			return bad(st, "user_defined", "phase: not a dict");
	}
	return 0;
}

static int validate_text(const char *text, char *why, size_t size)
{
	struct vstate st = { "" };
	char ebuf[256];
	yajl_val doc = yajl_tree_parse(text, ebuf, sizeof(ebuf));
	int rc;

	if (!doc) {
		snprintf(why, size, "parse: %s", ebuf);
		return -1;
	}
	rc = validate(&st, doc);
	snprintf(why, size, "%s", st.why);
	yajl_tree_free(doc);
	return rc;
}

/* ------------------------------------------------------ helpers */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static char *path_of(const char *stem, int rank)
{
	static char p[256];

	snprintf(p, sizeof(p), "%s/%s.%d.json", dir, stem, rank);
	return p;
}

static char *unbrotli(const char *in, size_t inlen, size_t *outlen)
{
	BrotliDecoderState *d = BrotliDecoderCreateInstance(NULL, NULL, NULL);
	size_t cap = 1 << 16, len = 0, avail_in = inlen, avail_out;
	const uint8_t *next_in = (const uint8_t *)in;
	uint8_t *next_out;
	char *out = malloc(cap + 1);
	BrotliDecoderResult r;

	for (;;) {
		if (cap - len < 4096) {
			cap *= 2;
			out = realloc(out, cap + 1);
		}
		avail_out = cap - len;
		next_out = (uint8_t *)out + len;
		r = BrotliDecoderDecompressStream(d, &avail_in, &next_in,
						  &avail_out, &next_out, NULL);
		len = (size_t)((char *)next_out - out);
		if (r == BROTLI_DECODER_RESULT_SUCCESS)
			break;
		ck_assert_msg(r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT,
			      "brotli decode failed (%d)", (int)r);
	}
	ck_assert_uint_eq(avail_in, 0);	/* one stream, nothing after it */
	BrotliDecoderDestroyInstance(d);
	out[len] = '\0';
	*outlen = len;
	return out;
}

static struct sh5_lbdata_task make_task(int64_t seq, int64_t node, double t)
{
	struct sh5_lbdata_task k;

	memset(&k, 0, sizeof(k));
	k.entity.type = "object";
	k.entity.id = -1;
	k.entity.seq_id = seq;
	k.entity.collection_id = 1;
	k.entity.home = node;
	k.entity.migratable = 1;
	k.node = node;
	k.time = t;
	return k;
}

static struct sh5_lbdata_meta make_meta(int64_t rank)
{
	struct sh5_lbdata_meta m;

	memset(&m, 0, sizeof(m));
	m.rank = rank;
	m.has_shared_node = 1;
	m.node_id = rank / 2;
	m.node_size = 2;
	m.node_rank = rank % 2;
	m.num_nodes = 2;
	m.phase_count = 3;
	return m;
}

/* Write rank `rank` with 3 phases, ntasks tasks per phase (integral
 * times on purpose), a communication in phase 1, an empty phase 2. */
static void write_rank(const char *stem, int64_t rank, int ntasks,
		       enum sh5_lbdata_compress comp)
{
	struct sh5_error err = { "" };
	struct sh5_lbdata_meta m = make_meta(rank);
	struct sh5_lbdata_kv user[3], attrs[1];
	struct sh5_lbdata_file *f;
	struct sh5_lbdata_task t;
	struct sh5_lbdata_comm c;
	double sub[2] = { 1.0, 2.0 };
	int64_t p;
	int i;

	attrs[0].key = "job_id";
	attrs[0].kind = SH5_LBDATA_KV_STRING;
	attrs[0].s = "42";
	m.nattrs = 1;
	m.attrs = attrs;
	f = sh5_lbdata_file_open(dir, stem, &m, comp, &err);
	ck_assert_msg(f != NULL, "%s", err.text);
	for (p = 0; p < 3; p++) {
		ck_assert_int_eq(sh5_lbdata_file_phase(f, p, 0, NULL, &err), 0);
		if (p == 2)
			continue;	/* empty tasks array */
		for (i = 0; i < ntasks; i++) {
			t = make_task(rank * 1000 + i, rank / 2, (double)(i + p));
			user[0].key = "task_footprint_bytes";
			user[0].kind = SH5_LBDATA_KV_DOUBLE;
			user[0].d = 4096;
			user[1].key = "samples";
			user[1].kind = SH5_LBDATA_KV_INT;
			user[1].i = 3;
			user[2].key = "node_name";
			user[2].kind = SH5_LBDATA_KV_STRING;
			user[2].s = "cn001";
			t.nuser = 3;
			t.user = user;
			if (i == 0) {
				t.nsubphases = 2;
				t.subphases = sub;
			}
			ck_assert_msg(sh5_lbdata_file_task(f, &t, &err) == 0,
				      "%s", err.text);
		}
		if (p == 1) {
			memset(&c, 0, sizeof(c));
			c.type = "SendRecv";
			c.from = make_task(rank * 1000, 0, 0).entity;
			c.to = make_task(rank * 1000 + 1, 0, 0).entity;
			c.messages = 26;
			c.bytes = 1456;		/* integral: must come out 1456.0 */
			ck_assert_msg(sh5_lbdata_file_comm(f, &c, &err) == 0,
				      "%s", err.text);
			c.type = "NodeToCollection";
			c.from.type = "node";
			c.from.seq_id = -1;
			c.from.id = rank;
			c.from.home = -1;
			c.from.collection_id = -1;
			c.from.migratable = -1;
			ck_assert_msg(sh5_lbdata_file_comm(f, &c, &err) == 0,
				      "%s", err.text);
		}
	}
	ck_assert_msg(sh5_lbdata_file_close(f, NULL, NULL, &err) == 0, "%s",
		      err.text);
}

/* ------------------------------------------------------ tests */

/* The validator itself rejects what vt's validator rejects. */
START_TEST(test_lbdata_validator_rejects_bad)
{
	static const char *const badv[] = {
		/* integer time */
		"{\"type\":\"LBDatafile\",\"phases\":[{\"id\":0,\"tasks\":[{\"entity\":{\"type\":\"object\",\"seq_id\":1,\"collection_id\":1,\"home\":0,\"migratable\":true},\"node\":0,\"resource\":\"cpu\",\"time\":1}]}]}",
		/* no id nor seq_id */
		"{\"type\":\"LBDatafile\",\"phases\":[{\"id\":0,\"tasks\":[{\"entity\":{\"type\":\"object\",\"home\":0,\"migratable\":false},\"node\":0,\"resource\":\"cpu\",\"time\":1.0}]}]}",
		/* migratable seq_id without collection_id */
		"{\"type\":\"LBDatafile\",\"phases\":[{\"id\":0,\"tasks\":[{\"entity\":{\"type\":\"object\",\"seq_id\":1,\"home\":0,\"migratable\":true},\"node\":0,\"resource\":\"cpu\",\"time\":1.0}]}]}",
		/* extra key in a task */
		"{\"type\":\"LBDatafile\",\"phases\":[{\"id\":0,\"tasks\":[{\"entity\":{\"type\":\"object\",\"seq_id\":1,\"collection_id\":1,\"home\":0,\"migratable\":true},\"node\":0,\"resource\":\"cpu\",\"time\":1.0,\"load\":2.0}]}]}",
		/* shared_node incomplete */
		"{\"type\":\"LBDatafile\",\"metadata\":{\"shared_node\":{\"id\":0,\"size\":1,\"rank\":0}},\"phases\":[]}",
		/* integer bytes */
		"{\"type\":\"LBDatafile\",\"phases\":[{\"id\":0,\"tasks\":[],\"communications\":[{\"type\":\"SendRecv\",\"from\":{\"type\":\"object\",\"id\":1},\"to\":{\"type\":\"object\",\"id\":2},\"messages\":1,\"bytes\":8}]}]}",
		/* no type anywhere (LBAF hangs) */
		"{\"phases\":[]}",
		/* wrong type */
		"{\"type\":\"LBData\",\"phases\":[]}",
		NULL,
	};
	char why[300];
	int i;

	ck_assert_int_eq(validate_text("{\"type\":\"LBDatafile\",\"phases\":[]}",
				       why, sizeof(why)), 0);
	for (i = 0; badv[i]; i++)
		ck_assert_msg(validate_text(badv[i], why, sizeof(why)) < 0,
			      "accepted bad document %d", i);
}
END_TEST

START_TEST(test_lbdata_file_valid_schema)
{
	char why[300], *text;
	size_t len;
	int r;

	for (r = 0; r < 4; r++) {
		write_rank("data", r, r == 3 ? 0 : 3, SH5_LBDATA_PLAIN);
		ck_assert_msg(sh5_lbdata_commit(dir, "data", r, 1, NULL) == 0,
			      "commit");
	}
	for (r = 0; r < 4; r++) {
		text = slurp(path_of("data", r), &len);
		ck_assert_msg(validate_text(text, why, sizeof(why)) == 0,
			      "rank %d: %s", r, why);
		/* integral floats kept float typing */
		if (r != 3) {
			ck_assert_ptr_nonnull(strstr(text, "\"time\":0.0"));
			ck_assert_ptr_nonnull(strstr(text, "\"bytes\":1456.0"));
			ck_assert_ptr_nonnull(strstr(text,
				"\"task_footprint_bytes\":4096.0"));
		}
		ck_assert_ptr_nonnull(strstr(text,
			"\"shared_node\":{\"id\":"));
		free(text);
	}
}
END_TEST

/* Every rank, with or without tasks, lists the same phase ids in order. */
START_TEST(test_lbdata_same_phases_every_rank)
{
	char ebuf[128], *text;
	const char *pp[] = { "phases", NULL };
	size_t len, i;
	yajl_val doc, phases;
	int r;

	for (r = 0; r < 3; r++) {
		write_rank("same", r, r, SH5_LBDATA_PLAIN);
		sh5_lbdata_commit(dir, "same", r, 1, NULL);
	}
	for (r = 0; r < 3; r++) {
		text = slurp(path_of("same", r), &len);
		doc = yajl_tree_parse(text, ebuf, sizeof(ebuf));
		ck_assert_ptr_nonnull(doc);
		phases = yajl_tree_get(doc, pp, yajl_t_array);
		ck_assert_ptr_nonnull(phases);
		ck_assert_uint_eq(YAJL_GET_ARRAY(phases)->len, 3);
		for (i = 0; i < 3; i++) {
			yajl_val id = get(YAJL_GET_ARRAY(phases)->values[i],
					  "id");
			ck_assert_int_eq(YAJL_GET_INTEGER(id), (long long)i);
		}
		yajl_tree_free(doc);
		free(text);
	}
}
END_TEST

START_TEST(test_lbdata_writer_refuses_schema_breaks)
{
	struct sh5_error err = { "" };
	struct sh5_lbdata_meta m = make_meta(0);
	struct sh5_lbdata_file *f;
	struct sh5_lbdata_task t;
	struct sh5_lbdata_comm c;

	f = sh5_lbdata_file_open(dir, "refuse", &m, SH5_LBDATA_PLAIN, &err);
	ck_assert_ptr_nonnull(f);
	/* task outside a phase */
	t = make_task(1, 0, 1.0);
	ck_assert_int_eq(sh5_lbdata_file_task(f, &t, &err), -1);
	ck_assert_int_eq(sh5_lbdata_file_phase(f, 0, 0, NULL, &err), 0);
	t.entity.collection_id = -1;	/* migratable + seq_id needs it */
	ck_assert_int_eq(sh5_lbdata_file_task(f, &t, &err), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_nonnull(strstr(err.text, "collection_id"));
	t = make_task(1, 0, 1.0);
	t.entity.seq_id = -1;		/* no id at all */
	ck_assert_int_eq(sh5_lbdata_file_task(f, &t, &err), -1);
	t = make_task(1, 0, NAN);	/* time must be a finite float */
	ck_assert_int_eq(sh5_lbdata_file_task(f, &t, &err), -1);
	t = make_task(1, 0, 1.0);
	t.entity.home = -1;		/* task entity needs home */
	ck_assert_int_eq(sh5_lbdata_file_task(f, &t, &err), -1);
	t = make_task(1, 0, 1.0);
	ck_assert_int_eq(sh5_lbdata_file_task(f, &t, &err), 0);
	memset(&c, 0, sizeof(c));
	c.type = "SendRecv";
	c.from = make_task(1, 0, 0).entity;
	c.to = make_task(2, 0, 0).entity;
	c.to.id = -1;
	c.to.seq_id = -1;		/* endpoint without id */
	c.bytes = 1;
	ck_assert_int_eq(sh5_lbdata_file_comm(f, &c, &err), -1);
	c.to = make_task(2, 0, 0).entity;
	ck_assert_int_eq(sh5_lbdata_file_comm(f, &c, &err), 0);
	/* a task after the phase's communications is refused */
	ck_assert_int_eq(sh5_lbdata_file_task(f, &t, &err), -1);
	/* refused calls did not corrupt the document */
	ck_assert_msg(sh5_lbdata_file_close(f, NULL, NULL, &err) == 0, "%s",
		      err.text);
	ck_assert_int_eq(sh5_lbdata_commit(dir, "refuse", 0, 1, &err), 0);
	{
		char why[300], *text;
		size_t len;

		text = slurp(path_of("refuse", 0), &len);
		ck_assert_msg(validate_text(text, why, sizeof(why)) == 0, "%s",
			      why);
		free(text);
	}
}
END_TEST

/* Brotli: one stream over the whole file, decompressing to exactly the
 * plain file; big enough to cross the writer's buffers many times. */
START_TEST(test_lbdata_brotli_roundtrip)
{
	char *plain, *comp, *dec, why[300];
	size_t plen, clen, dlen;

	write_rank("plain", 0, 2000, SH5_LBDATA_PLAIN);
	write_rank("br", 0, 2000, SH5_LBDATA_BROTLI);
	sh5_lbdata_commit(dir, "plain", 0, 1, NULL);
	sh5_lbdata_commit(dir, "br", 0, 1, NULL);
	plain = slurp(path_of("plain", 0), &plen);
	comp = slurp(path_of("br", 0), &clen);
	ck_assert_uint_gt(plen, 200000);
	ck_assert_uint_lt(clen, plen / 4);
	ck_assert(comp[0] != '{');	/* readers sniff the first byte */
	/* stream header WBITS: 4 bits (lgwin - 17) << 1 | 1 = 0111 for a
	 * 2^20 window, vt's setting */
	ck_assert_int_eq(comp[0] & 0x0f, 0x07);
	dec = unbrotli(comp, clen, &dlen);
	ck_assert_uint_eq(dlen, plen);
	ck_assert(memcmp(dec, plain, plen) == 0);
	ck_assert_msg(validate_text(dec, why, sizeof(why)) == 0, "%s", why);
	free(plain);
	free(comp);
	free(dec);
}
END_TEST

/* Files appear under their name only on commit; abort leaves nothing. */
START_TEST(test_lbdata_temporary_names)
{
	struct sh5_error err = { "" };
	struct sh5_lbdata_meta m = make_meta(5);
	struct sh5_lbdata_file *f;
	char part[256];

	snprintf(part, sizeof(part), "%s/.tmpn.5.json.part", dir);
	write_rank("tmpn", 5, 1, SH5_LBDATA_PLAIN);
	ck_assert_int_eq(access(path_of("tmpn", 5), F_OK), -1);
	ck_assert_int_eq(access(part, F_OK), 0);
	ck_assert_int_eq(sh5_lbdata_commit(dir, "tmpn", 5, 1, &err), 0);
	ck_assert_int_eq(access(path_of("tmpn", 5), F_OK), 0);
	ck_assert_int_eq(access(part, F_OK), -1);
	/* abort */
	m.rank = 6;
	f = sh5_lbdata_file_open(dir, "tmpn", &m, SH5_LBDATA_BROTLI, &err);
	ck_assert_ptr_nonnull(f);
	sh5_lbdata_file_abort(f);
	snprintf(part, sizeof(part), "%s/.tmpn.6.json.part", dir);
	ck_assert_int_eq(access(part, F_OK), -1);
	/* uncommitted temporaries can be dropped */
	write_rank("tmpn", 7, 1, SH5_LBDATA_PLAIN);
	ck_assert_int_eq(sh5_lbdata_commit(dir, "tmpn", 7, 0, &err), 0);
	snprintf(part, sizeof(part), "%s/.tmpn.7.json.part", dir);
	ck_assert_int_eq(access(part, F_OK), -1);
	ck_assert_int_eq(access(path_of("tmpn", 7), F_OK), -1);
	/* open in a missing directory fails with the path in the message */
	ck_assert_ptr_null(sh5_lbdata_file_open("/nonexistent/dir", "x", &m,
						SH5_LBDATA_PLAIN, &err));
	ck_assert_ptr_nonnull(strstr(err.text, "/nonexistent/dir"));
}
END_TEST

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
}

static Suite *lbdata_suite(void)
{
	Suite *s = suite_create("lbdata");
	TCase *tc = tcase_create("writer");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_lbdata_validator_rejects_bad);
	tcase_add_test(tc, test_lbdata_file_valid_schema);
	tcase_add_test(tc, test_lbdata_same_phases_every_rank);
	tcase_add_test(tc, test_lbdata_writer_refuses_schema_breaks);
	tcase_add_test(tc, test_lbdata_brotli_roundtrip);
	tcase_add_test(tc, test_lbdata_temporary_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(lbdata_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

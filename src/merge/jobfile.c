/* jobfile.c - see jobfile.h */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge/jobfile.h"
#include "merge/merge.h"
#include "common/sort.h"

struct lw {
	struct sh5_jf_entry *v;
	size_t n, cap;
	struct sh5_jf_entry cur;
	int oom;
	int depth;
};

static int push(struct lw *w)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 256;
		struct sh5_jf_entry *nv = realloc(w->v, cap * sizeof(*nv));

		if (!nv) {
			w->oom = 1;
			return -1;
		}
		w->v = nv;
		w->cap = cap;
	}
	w->v[w->n++] = w->cur;
	return 0;
}

static herr_t node_cb(hid_t g, const char *name, const H5L_info_t *li,
		      void *data)
{
	struct lw *w = data;
	H5O_info_t oi;

	(void)li;
	if (strlen(name) >= SH5_NAME_MAX ||
	    H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
		return 0;
	if (oi.type == H5O_TYPE_DATASET) {
		snprintf(w->cur.name, sizeof(w->cur.name), "%s", name);
		if (w->cur.parent[0])
			snprintf(w->cur.path, sizeof(w->cur.path), "%s/%s",
				 w->cur.parent, name);
		else
			snprintf(w->cur.path, sizeof(w->cur.path), "%s", name);
		return push(w) < 0 ? -1 : 0;
	}
	/* Totals and the application events are not series. */
	if (oi.type == H5O_TYPE_GROUP && w->depth == 0 &&
	    strcmp(name, "Totals") && strcmp(name, "Events")) {
		herr_t rc;

		snprintf(w->cur.parent, sizeof(w->cur.parent), "%s", name);
		w->depth = 1;
		rc = H5Literate_by_name(g, name, H5_INDEX_NAME, H5_ITER_INC,
					NULL, node_cb, w, H5P_DEFAULT);
		w->depth = 0;
		w->cur.parent[0] = '\0';
		return w->oom ? -1 : (rc < 0 ? 0 : 0);
	}
	return 0;
}

static herr_t nodes_cb(hid_t g, const char *name, const H5L_info_t *li,
		       void *data)
{
	struct lw *w = data;

	(void)li;
	if (strlen(name) >= SH5_NAME_MAX)
		return 0;
	snprintf(w->cur.node, sizeof(w->cur.node), "%s", name);
	w->cur.parent[0] = '\0';
	H5Literate_by_name(g, name, H5_INDEX_NAME, H5_ITER_INC, NULL, node_cb,
			   w, H5P_DEFAULT);
	return w->oom ? -1 : 0;
}

static herr_t steps_cb(hid_t g, const char *name, const H5L_info_t *li,
		       void *data)
{
	struct lw *w = data;
	char path[128];

	(void)li;
	if (strlen(name) >= sizeof(w->cur.step))
		return 0;
	snprintf(w->cur.step, sizeof(w->cur.step), "%s", name);
	snprintf(path, sizeof(path), "%s/Nodes", name);
	if (H5Lexists(g, name, H5P_DEFAULT) <= 0 ||
	    H5Lexists(g, path, H5P_DEFAULT) <= 0)
		return 0;
	H5Literate_by_name(g, path, H5_INDEX_NAME, H5_ITER_INC, NULL,
			   nodes_cb, w, H5P_DEFAULT);
	return w->oom ? -1 : 0;
}

static int entry_cmp(const void *pa, const void *pb)
{
	const struct sh5_jf_entry *a = pa, *b = pb;
	int c;

	if ((c = sh5_step_cmp(a->step, b->step)))
		return c;
	if ((c = sh5_natural_cmp(a->node, b->node)))
		return c;
	/* Node series (no parent) after the tasks. */
	if (!a->parent[0] != !b->parent[0])
		return a->parent[0] ? -1 : 1;
	if ((c = strcmp(a->parent, b->parent)))
		return c;
	return sh5_natural_cmp(a->name, b->name);
}

int sh5_jobfile_list(hid_t file, const char *fname,
		     struct sh5_jf_entry **out, size_t *n,
		     struct sh5_error *errp)
{
	struct lw w;
	H5O_info_t oi;
	herr_t rc;

	memset(&w, 0, sizeof(w));
	*out = NULL;
	*n = 0;
	if (H5Lexists(file, "Steps", H5P_DEFAULT) <= 0) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: not a job file (no /Steps)",
				     fname);
	}
	if (H5Oget_info_by_name2(file, "Steps", &oi, H5O_INFO_BASIC,
				 H5P_DEFAULT) < 0 ||
	    oi.type != H5O_TYPE_GROUP) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: not a job file (/Steps is not "
				     "a group)", fname);
	}
	rc = H5Literate_by_name(file, "Steps", H5_INDEX_NAME, H5_ITER_INC,
				NULL, steps_cb, &w, H5P_DEFAULT);
	if (w.oom) {
		free(w.v);
		errno = ENOMEM;
		return sh5_errprintf(errp, "%s: out of memory", fname);
	}
	if (rc < 0) {
		free(w.v);
		errno = EIO;
		return sh5_errprintf(errp, "%s: cannot list /Steps", fname);
	}
	if (w.n > 1)
		sh5_qsort(w.v, w.n, sizeof(*w.v), entry_cmp);
	*out = w.v;
	*n = w.n;
	return 0;
}

void sh5_jobfile_node_path(const struct sh5_jf_entry *e, char *buf,
			   size_t len)
{
	snprintf(buf, len, "/Steps/%s/Nodes/%s", e->step, e->node);
}

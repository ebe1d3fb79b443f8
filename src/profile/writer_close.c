/* writer_close.c - the writer's totals and close (writer.h) */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "profile/totals.h"
#include "profile/writer.h"
#include "profile/writer_int.h"

/* The file type of the totals of series s: committed to the file
 * (anonymously: no link) once per kind of series and shared, so that each
 * total's object header refers to it instead of holding a copy (2.5 KiB
 * for a task).  -1 when it cannot be (the total then holds its own). */
static hid_t total_type(struct sh5_writer *w, const struct sh5_series *s,
			const struct sh5_series **kinds, hid_t *types,
			size_t *nkinds)
{
	size_t i;
	hid_t t;

	for (i = 0; i < *nkinds; i++)
		if (sh5_series_same_fields(kinds[i], s))
			return types[i];
	if ((t = s->ops->total_file_type(s)) < 0)
		return -1;
	if (H5Tcommit_anon(w->file, t, H5P_DEFAULT, H5P_DEFAULT) < 0) {
		H5Tclose(t);
		return -1;
	}
	kinds[*nkinds] = s;
	types[(*nkinds)++] = t;
	return t;
}

/* The group Totals/<parent> (in g) for the total of t, kept open in *pg
 * (named *pname) for the next total of the same parent; created with
 * gcpl when missing.  g itself for a series of the node group. */
static hid_t total_parent(hid_t g, hid_t gcpl, const struct table *t,
			  hid_t *pg, const char **pname)
{
	if (!t->parent[0])
		return g;
	if (*pg >= 0 && !strcmp(*pname, t->parent))
		return *pg;
	if (*pg >= 0)
		H5Gclose(*pg);
	*pname = t->parent;
	*pg = H5Lexists(g, t->parent, H5P_DEFAULT) > 0 ?
		      H5Gopen2(g, t->parent, H5P_DEFAULT) :
		      H5Gcreate2(g, t->parent, H5P_DEFAULT, gcpl, H5P_DEFAULT);
	return *pg;
}

/*
 * /<node>/Totals: the total of every series dataset as sh5merge writes it
 * in a job file (Totals/<path>, and Totals/AllTasks over the tasks), each
 * with the number of records it covers ("Rows").  sh5merge uses them
 * instead of decoding the series when they match the datasets.  io_lock
 * held, after a successful final flush.
 */
static int write_totals(struct sh5_writer *w, struct sh5_error *errp)
{
	struct sh5_totacc *all = NULL;
	size_t nall = 0, i, nkinds = 0;
	uint64_t task_rows = 0;
	const struct sh5_series **kinds = calloc(w->ntables + 1,
						 sizeof(*kinds));
	hid_t *types = calloc(w->ntables + 1, sizeof(*types));
	hid_t gcpl = -1, g = -1, pg = -1, loc;
	const char *pname = NULL;
	struct sh5_total_out o;
	int rc = -1, fr, oinit = 0;

	if (!kinds || !types) {
		sh5_errprintf(errp, "%s: out of memory", w->path);
		goto out;
	}
	/* Totals and its subgroups keep their few links in the group's
	 * object header (HDF5 1.8 groups: tracking the creation order asks
	 * for them), not in a B-tree and heap of their own: 1.6 KiB less.
	 * No modification times (nothing reads them): one message less to
	 * append to each header. */
	if ((gcpl = H5Pcreate(H5P_GROUP_CREATE)) < 0 ||
	    H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED) < 0 ||
	    H5Pset_obj_track_times(gcpl, 0) < 0 ||
	    (g = H5Gcreate2(w->node_grp, "Totals", H5P_DEFAULT, gcpl,
			    H5P_DEFAULT)) < 0)
		goto h5error;
	if (sh5_total_out_init(&o) < 0)
		goto h5error;
	oinit = 1;
	for (i = 0; i < w->ntables; i++) {
		struct table *t = w->tables[i];

		if (!t->series || t->dset < 0)
			continue;
		if ((loc = total_parent(g, gcpl, t, &pg, &pname)) < 0 ||
		    sh5_total_put(&o, loc, t->name, t->series, t->total, 1,
				  t->rows, total_type(w, t->series, kinds,
						      types, &nkinds)) < 0)
			goto h5error;
		if (strcmp(t->series->ops->name, "Task"))
			continue;
		/* Tasks whose fields differ from the first task's are left
		 * out (and their rows): sh5merge then sees Series Count
		 * short and totals the node itself. */
		if ((fr = sh5_totacc_fold(&all, &nall, "AllTasks", t->series,
					  t->total)) < 0) {
			sh5_errprintf(errp, "%s: out of memory", w->path);
			goto out;
		}
		if (!fr)
			task_rows += t->rows;
	}
	if (nall && sh5_total_put(&o, g, "AllTasks",
				  all[0].s, all[0].total, all[0].count,
				  task_rows, total_type(w, all[0].s, kinds,
							types, &nkinds)) < 0)
		goto h5error;
	rc = 0;
	goto out;
h5error:
	sh5_errprintf_h5(errp, "%s: cannot write the totals", w->path);
out:
	if (oinit)
		sh5_total_out_fini(&o);
	if (pg >= 0)
		H5Gclose(pg);
	if (g >= 0)
		H5Gclose(g);
	if (gcpl >= 0)
		H5Pclose(gcpl);
	for (i = 0; types && i < nkinds; i++)
		H5Tclose(types[i]);
	free(kinds);
	free(types);
	sh5_totacc_free(all, nall);
	return rc;
}

int sh5_writer_close(struct sh5_writer *w, struct sh5_error *errp)
{
	size_t i;
	int rc = 0;

	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	w->closed = 1;
	pthread_mutex_unlock(&w->lock);
	if (!w->failed)
		rc = sh5_writer_flush(w, errp);
	pthread_mutex_lock(&w->io_lock);
	if (!rc && !w->failed && write_totals(w, errp) < 0)
		rc = -1;
	for (i = 0; i < w->ntables; i++) {
		if (w->tables[i]->dset >= 0)
			H5Dclose(w->tables[i]->dset);
		sh5_series_destroy(w->tables[i]->series);
		free(w->tables[i]->total);
		free(w->tables[i]->buf);
		free(w->tables[i]->cur);
		sh5_zinc_destroy(w->tables[i]->zi);
		free(w->tables[i]);
	}
	free(w->tables);
	for (i = 0; i < w->nkinds; i++)
		H5Tclose(w->ktypes[i]);
	free(w->kinds);
	free(w->ktypes);
	if (w->gcpl >= 0)
		H5Pclose(w->gcpl);
	if (w->dcpl >= 0)
		H5Pclose(w->dcpl);
	if (w->pgrp >= 0)
		H5Gclose(w->pgrp);
	sh5_zdeflate_destroy(w->zd);
	for (i = 0; i < w->nanames; i++)
		free(w->anames[i]);
	free(w->anames);
	if (w->scalar >= 0)
		H5Sclose(w->scalar);
	if (w->node_grp >= 0)
		H5Gclose(w->node_grp);
	if (w->file >= 0 && H5Fclose(w->file) < 0 && !rc)
		rc = sh5_errprintf_h5(errp, "%s: cannot close", w->path);
	if (w->fd >= 0)
		close(w->fd); /* deferred and never created: failed */
	pthread_mutex_unlock(&w->io_lock);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->io_lock);
	free(w);
	return rc;
}

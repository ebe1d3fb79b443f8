/*
 * merge_integ.h - the options of `sh5merge merge` that reach beyond the
 * merge itself: timestamp synchronization (--sync, src/sync/mergesync.h) and
 * the exports in the same run (--lbdata, --counters, src/export/mergeexport.h).
 * cmd_merge.c parses its own options and hands these over.
 */
#ifndef SH5MERGE_MERGE_INTEG_H
#define SH5MERGE_MERGE_INTEG_H

#include <getopt.h>
#include <stdio.h>

#include "merge/merge.h"
#include "export/mergeexport.h"
#include "sync/mergesync.h"

/* getopt_long codes of these options (all long-only). */
enum {
	MI_OPT_SYNC = 0x1000,
	MI_OPT_LBDATA,
	MI_OPT_PHASE,
	MI_OPT_COMPRESS,
	MI_OPT_STEM,
	MI_OPT_COUNTERS,
	MI_OPT_SIGMA,
};

/* Entries to put in the subcommand's option table. */
#define MERGE_INTEG_LONGOPTS                                              \
	{ "sync", required_argument, NULL, MI_OPT_SYNC },                 \
	{ "lbdata", required_argument, NULL, MI_OPT_LBDATA },             \
	{ "phase-length", required_argument, NULL, MI_OPT_PHASE },        \
	{ "compress", required_argument, NULL, MI_OPT_COMPRESS },         \
	{ "stem", required_argument, NULL, MI_OPT_STEM },                 \
	{ "counters", required_argument, NULL, MI_OPT_COUNTERS },         \
	{ "sigma", required_argument, NULL, MI_OPT_SIGMA }

struct merge_integ {
	enum sh5_sync_method sync;
	struct sh5_mergeexport_opts ex;
	int export_opts;	/* --phase-length etc. given */
	struct sh5_mergesync *ms;
	struct sh5_merge_hooks hooks;
};

void merge_integ_init(struct merge_integ *mi);
/* The options' help lines. */
void merge_integ_usage(FILE *f);
/* Take option c (one of MI_OPT_*).  0, or 2 after a usage message. */
int merge_integ_option(struct merge_integ *mi, int c, const char *arg);
/* Checks once the command line is read (njobs: jobs selected).  0, 1
 * (error printed: --sync clc) or 2 (usage printed). */
int merge_integ_check(struct merge_integ *mi, size_t njobs);
/* Before a job's merge: set o->hooks.  0 or 1 (error printed). */
int merge_integ_begin(struct merge_integ *mi, struct sh5_merge_opts *o,
		      void (*report)(void *, int, const char *, const char *),
		      void *arg);
/* After a job's merge (merged != 0: the job file is in place): print the
 * sync summary, run the exports.  0 or 1 (error printed). */
int merge_integ_end(struct merge_integ *mi, const struct sh5_merge_opts *o,
		    int merged);

/* For `sh5merge list`: the sync record of a job file (/Merge) and of a
 * node group, one line each on stdout; nothing when there is none. */
void merge_integ_list_job(hid_t file);
void merge_integ_list_node(hid_t node_group);

#endif

/* main.c - sh5merge: dispatch to a subcommand. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "commands.h"

int sh5merge_quiet;

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "merge", cmd_merge, "merge a job's node-step files into one job file" },
	{ "extract", cmd_extract, "extract series or totals of a job file to CSV" },
	{ "list", cmd_list, "list steps, nodes, series, fields of a job file" },
	{ "sync", cmd_sync, "synchronize the timestamps of an event trace" },
	{ "lbdata", cmd_lbdata, "export a job file as vt LBDatafile (VOM) JSON" },
	{ "counters", cmd_counters, "export counter statistics and anomalies as JSON" },
	{ "events", cmd_events, "write the application events of a step as an event trace" },
	{ "report", cmd_report, "write a self-contained HTML report of a job file" },
	{ "otf2", cmd_otf2, "write the application events as an OTF2 archive" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: sh5merge [-q] COMMAND [ARGS...]\n"
		   "       sh5merge COMMAND --help\n\nCommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(f, "\nOptions:\n  -q, --quiet   no progress output\n"
		   "  -V, --version print the version\n");
}

int main(int argc, char **argv)
{
	size_t i;

	while (argc > 1 && argv[1][0] == '-') {
		if (!strcmp(argv[1], "-q") || !strcmp(argv[1], "--quiet")) {
			sh5merge_quiet = 1;
		} else if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[1], "-V") ||
			   !strcmp(argv[1], "--version")) {
			printf("sh5merge %s\n", PACKAGE_VERSION);
			return 0;
		} else {
			fprintf(stderr, "sh5merge: unknown option %s\n", argv[1]);
			usage(stderr);
			return 2;
		}
		argc--;
		argv++;
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		if (!commands[i].fn) {
			fprintf(stderr, "sh5merge: %s: not built into this "
				"sh5merge\n", argv[1]);
			return 1;
		}
		return commands[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "sh5merge: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}

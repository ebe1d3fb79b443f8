/*
 * commands.h - sh5merge subcommands.
 *
 * Each subcommand lives in its own file (sh5merge/cmd_<name>.c) and has
 * the signature of main(): argv[0] is the subcommand name.  It returns
 * the process exit status: 0 ok, 1 error, 2 usage.  Messages go to
 * stderr as "sh5merge: FILE: reason".
 */
#ifndef SH5MERGE_COMMANDS_H
#define SH5MERGE_COMMANDS_H

/* Declared weak so that the dispatcher links while a subcommand's file
 * is not part of the build yet; main() reports such a command as
 * unavailable instead of crashing. */
#define SH5_CMD(name) \
	int cmd_##name(int argc, char **argv) __attribute__((weak))

SH5_CMD(merge);
SH5_CMD(extract);
SH5_CMD(list);
SH5_CMD(sync);
SH5_CMD(lbdata);
SH5_CMD(counters);
SH5_CMD(events);
SH5_CMD(report);
SH5_CMD(otf2);

/* Program-wide options parsed before the subcommand. */
extern int sh5merge_quiet;

#endif

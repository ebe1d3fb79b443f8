/* ready.c - are the node-step files of a job complete?  (ready.h) */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fdio.h"
#include "merge/merge.h"
#include "merge/ready.h"
#include "profile/reader.h"

/* Files of one step: how many found, how many nodes the step runs on
 * (0: no file says). */
struct step_count {
	char step[32];
	size_t files;
	int nnodes;
};

static struct step_count *step_slot(struct step_count *v, size_t *n,
				    const char *step)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp(v[i].step, step))
			return &v[i];
	snprintf(v[*n].step, sizeof(v[*n].step), "%s", step);
	return &v[(*n)++];
}

/* The check itself (in the child): fills r. */
static void check_files(const struct sh5_input *in, size_t n, uint32_t job,
			struct sh5_ready *r)
{
	struct step_count *sc = calloc(n ? n : 1, sizeof(*sc));
	size_t nsc = 0, i;

	r->files = n;
	r->complete = 0;
	r->why[0] = '\0';
	if (!sc) {
		snprintf(r->why, sizeof(r->why), "out of memory");
		return;
	}
	for (i = 0; i < n; i++) {
		struct sh5_error err = { "" };
		struct sh5_nodestep *ns;
		struct step_count *s = step_slot(sc, &nsc, in[i].step);

		s->files++;
		ns = sh5_nodestep_open(in[i].path, in[i].node, job,
				       in[i].step_id, &err);
		if (!ns) {
			if (!r->why[0])
				snprintf(r->why, sizeof(r->why), "%s",
					 err.text);
			continue;
		}
		if (ns->nnodes > s->nnodes)
			s->nnodes = ns->nnodes;
		if (ns->kind == SH5_NODESTEP_OURS && !ns->has_totals) {
			if (!r->why[0])
				snprintf(r->why, sizeof(r->why), "%s: not "
					 "closed by its writer yet (no /%s/"
					 "Totals)", in[i].path,
					 ns->node_name);
		} else {
			r->complete++;
		}
		sh5_nodestep_close(ns);
	}
	for (i = 0; i < nsc && !r->why[0]; i++)
		if (sc[i].nnodes > 0 && sc[i].files < (size_t)sc[i].nnodes)
			snprintf(r->why, sizeof(r->why), "step %s: %zu of %d "
				 "node files", sc[i].step, sc[i].files,
				 sc[i].nnodes);
	free(sc);
}

int sh5_merge_ready(const char *dir, uint32_t job,
		    const char *const *steps, size_t nsteps,
		    struct sh5_ready *r, struct sh5_error *errp)
{
	struct sh5_input *in = NULL;
	struct sh5_ready got;
	size_t n = 0;
	int fd[2] = { -1, -1 }, st = 0;
	int rd;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if (sh5_merge_discover(dir, job, steps, nsteps, &in, &n, errp) < 0)
		return -1;
	r->files = n;
	if (n == 0) {
		snprintf(r->why, sizeof(r->why), "%s: no node-step files of "
			 "job %lu", dir, (unsigned long)job);
		return 0;
	}
	if (pipe(fd) < 0 || (pid = fork()) < 0) {
		sh5_errprintf(errp, "%s: cannot start the check: %s", dir,
			      strerror(errno));
		if (fd[0] >= 0) {
			close(fd[0]);
			close(fd[1]);
		}
		sh5_inputs_free(in, n);
		return -1;
	}
	if (pid == 0) {
		close(fd[0]);
		check_files(in, n, job, &got);
		_exit(sh5_fd_write_all(fd[1], &got, sizeof(got)) < 0 ? 1 : 0);
	}
	close(fd[1]);
	rd = sh5_fd_read_all(fd[0], &got, sizeof(got));
	close(fd[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	sh5_inputs_free(in, n);
	if (rd < 0 || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0) {
		snprintf(r->why, sizeof(r->why), "%s: checking the files of "
			 "job %lu failed (%s)", dir, (unsigned long)job,
			 WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) :
			 "no answer");
		return 0;
	}
	got.why[sizeof(got.why) - 1] = '\0';
	*r = got;
	return r->why[0] ? 0 : 1;
}

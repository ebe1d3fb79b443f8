/*
 * sh5_seal.h - the plugin's seals of node-step files (src/profile/seal.h):
 * the key of ProfileSH5SealKey, the file's descriptor and identity kept
 * from node_step_start, the seal once the writer closed the file.
 */
#ifndef SH5_PLUGIN_SEAL_H
#define SH5_PLUGIN_SEAL_H

/* At node_step_start, fd the node-step file just created (duplicated:
 * the caller still closes fd; -1: no file to seal), named fname, of
 * job's step on this node.  Loads the key (a refused key is logged, the
 * file is then not sealed).  Include after Slurm's headers. */
void seal_step_start(int fd, stepd_step_rec_t *job, const char *fname);
/* The writer closed the file: sealed when ok (the close succeeded;
 * failures logged, never fatal), else left unsealed.  The descriptor is
 * closed; safe to call more than once. */
void seal_step_closed(int ok);

#endif

/*
 * init.c - MPI_Init, MPI_Init_thread, MPI_Finalize, MPI_Pcontrol.
 *
 * MPI_Init opens the event log (which records only when SH5_EVENTS_DIR
 * is set), writes ENTER "MPI_Init" with the time before PMPI_Init, then
 * after it a RANK record (world rank, world size) and EXIT.  The ranks
 * agree with one PMPI_Allreduce on MPI_COMM_WORLD whether any of them
 * records (sh5mpi_sync).  MPI_Finalize closes the log after
 * PMPI_Finalize.  MPI_Pcontrol(level) starts a new phase.
 */
#include "config.h"

#include "wrap.h"

/* Before PMPI_Init*: open the log, ENTER with the time before. */
static int init_begin(enum sh5mpi_fn f)
{
	if (!sh5_evlog_open() || !sh5_evlog_on())
		return 0;
	sh5mpi_enter(f);
	return 1;
}

/* After a successful PMPI_Init*: tables, agreement, RANK, EXIT. */
static void init_end(enum sh5mpi_fn f, int on)
{
	int any = 0;

	if (PMPI_Comm_rank(MPI_COMM_WORLD, &sh5mpi_world_rank) !=
		    MPI_SUCCESS ||
	    PMPI_Comm_size(MPI_COMM_WORLD, &sh5mpi_world_size) !=
		    MPI_SUCCESS)
		return;
	/* Every rank joins this whether it records or not. */
	if (PMPI_Allreduce(&on, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) ==
	    MPI_SUCCESS)
		sh5mpi_sync = any;
	if (sh5mpi_sync && sh5mpi_comm_init() < 0)
		sh5mpi_sync = 0; /* out of memory: record no messages */
	if (!on)
		return;
	sh5_evlog_event(SH5EV_K_RANK, 0, 0, (uint32_t)sh5mpi_world_size,
			sh5mpi_world_rank, 0, 0, 0);
	sh5mpi_exit(f);
}

int MPI_Init(int *argc, char ***argv)
{
	int on = init_begin(SH5MPI_Init);
	int ret = PMPI_Init(argc, argv);

	if (ret == MPI_SUCCESS)
		init_end(SH5MPI_Init, on);
	return ret;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int on = init_begin(SH5MPI_Init_thread);
	int ret = PMPI_Init_thread(argc, argv, required, provided);

	if (ret == MPI_SUCCESS) {
		sh5mpi_locking = *provided == MPI_THREAD_MULTIPLE;
		init_end(SH5MPI_Init_thread, on);
	}
	return ret;
}

int MPI_Finalize(void)
{
	int on = sh5_evlog_on(), ret;

	if (on)
		sh5mpi_enter(SH5MPI_Finalize);
	/* The tables hold an MPI group: free them while MPI still works. */
	sh5mpi_req_fini();
	sh5mpi_comm_fini();
	sh5mpi_sync = 0;
	ret = PMPI_Finalize();
	if (on)
		sh5mpi_exit(SH5MPI_Finalize);
	sh5_evlog_close();
	return ret;
}

int MPI_Pcontrol(const int level, ...)
{
	int ret;

	if (!sh5_evlog_on())
		return PMPI_Pcontrol(level);
	sh5mpi_enter(SH5MPI_Pcontrol);
	sh5_evlog_phase(level, SH5EV_F_PCONTROL);
	ret = PMPI_Pcontrol(level);
	sh5mpi_exit(SH5MPI_Pcontrol);
	return ret;
}

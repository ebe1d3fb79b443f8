/*
 * util.c - what every wrapper file uses: the state MPI_Init sets (world
 * rank and size, sh5mpi_sync, sh5mpi_locking), the region ids of the
 * wrapped calls and the size of a message (wrap.h).  Calls nothing else
 * here.
 */
#include "config.h"

#include "wrap.h"

int sh5mpi_world_rank;
int sh5mpi_world_size = 1;
int sh5mpi_sync;
int sh5mpi_locking;

static const char *const names[SH5MPI_NFN] = {
#define SH5MPI_NAME(name) "MPI_" #name,
	SH5MPI_CALLS(SH5MPI_NAME)
#undef SH5MPI_NAME
};

/* Region id + 1 of each call, 0 before its first use. */
static int32_t region_ids[SH5MPI_NFN];

int32_t sh5mpi_region(enum sh5mpi_fn f)
{
	int32_t id;

	if (region_ids[f])
		return region_ids[f] - 1;
	id = sh5_evlog_region(names[f], SH5EV_F_MPI);
	if (id < 0)
		return -1;
	region_ids[f] = id + 1;
	return id;
}

uint64_t sh5mpi_bytes(int count, MPI_Datatype type)
{
	int size = 0;

	if (count <= 0 || PMPI_Type_size(type, &size) != MPI_SUCCESS ||
	    size <= 0)
		return 0;
	return (uint64_t)count * (uint64_t)size;
}

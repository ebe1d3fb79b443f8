/*
 * msg.c - the SEND and RECV records of point-to-point messages, written
 * by the send and receive wrappers (p2p.c) and by the completion of a
 * receive request (reqtab.c).
 */
#include "config.h"

#include "wrap.h"

void sh5mpi_p2p_send(struct sh5mpi_comm *c, int dest, int tag, int count,
		     MPI_Datatype type, uint16_t flags)
{
	int32_t w = sh5mpi_comm_world(c, dest);

	if (w < 0)
		return;
	sh5_evlog_event(SH5EV_K_SEND, 0, flags, c->local, w, tag,
			sh5mpi_bytes(count, type), 0);
}

void sh5mpi_p2p_recv(struct sh5mpi_comm *c, const MPI_Status *status,
		     uint16_t flags)
{
	int cancelled = 0, n = 0;
	int32_t w;

	if (status->MPI_SOURCE == MPI_PROC_NULL)
		return;
	if (PMPI_Test_cancelled(status, &cancelled) == MPI_SUCCESS &&
	    cancelled)
		return;
	w = sh5mpi_comm_world(c, status->MPI_SOURCE);
	if (w < 0)
		return;
	/*
	 * Bytes: the count in MPI_BYTE, which is what count x type size of
	 * the receive's type gives, without needing that type (the
	 * application may have freed it since MPI_Irecv).
	 */
	if (PMPI_Get_count(status, MPI_BYTE, &n) != MPI_SUCCESS ||
	    n == MPI_UNDEFINED || n < 0)
		n = 0;
	sh5_evlog_event(SH5EV_K_RECV, 0, flags, c->local, w, status->MPI_TAG,
			(uint64_t)n, 0);
}

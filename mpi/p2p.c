/*
 * p2p.c - point-to-point calls.
 *
 * SEND at the start of every send (blocking or not) with the destination
 * as world rank, the tag and count x type size bytes; RECV when a receive
 * completes (here for the blocking ones, in req.c for MPI_Irecv) with the
 * source and tag of its status (so MPI_ANY_SOURCE and MPI_ANY_TAG are
 * resolved; the flags say they were used) and the bytes received.
 * Nothing is written for MPI_PROC_NULL peers, nor on communicators the
 * library does not record (comm.c).
 */
#include "config.h"

#include "wrap.h"

/* Flags of a receive posted with source and tag. */
static uint16_t recv_flags(int source, int tag)
{
	return (uint16_t)((source == MPI_ANY_SOURCE ? SH5EV_F_ANY_SOURCE : 0) |
			  (tag == MPI_ANY_TAG ? SH5EV_F_ANY_TAG : 0));
}

/* SEND of a send to dest on comm, if recorded. */
static void send_start(MPI_Comm comm, int dest, int tag, int count,
		       MPI_Datatype type, uint16_t flags)
{
	struct sh5mpi_comm *c;

	if (dest == MPI_PROC_NULL || !(c = sh5mpi_comm_find(comm)))
		return;
	sh5mpi_p2p_send(c, dest, tag, count, type, flags);
}

/* A blocking send call. */
#define SEND(fn, call)                                                      \
	do {                                                                \
		int ret_;                                                   \
		if (!sh5_evlog_on())                                        \
			return call;                                        \
		sh5mpi_enter(SH5MPI_##fn);                                  \
		send_start(comm, dest, tag, count, datatype, 0);            \
		ret_ = call;                                                \
		sh5mpi_exit(SH5MPI_##fn);                                   \
		return ret_;                                                \
	} while (0)

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest,
	     int tag, MPI_Comm comm)
{
	SEND(Send, PMPI_Send(buf, count, datatype, dest, tag, comm));
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest,
	      int tag, MPI_Comm comm)
{
	SEND(Bsend, PMPI_Bsend(buf, count, datatype, dest, tag, comm));
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest,
	      int tag, MPI_Comm comm)
{
	SEND(Ssend, PMPI_Ssend(buf, count, datatype, dest, tag, comm));
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest,
	      int tag, MPI_Comm comm)
{
	SEND(Rsend, PMPI_Rsend(buf, count, datatype, dest, tag, comm));
}

/* A non-blocking send call. */
#define ISEND(fn, call)                                                     \
	do {                                                                \
		int ret_;                                                   \
		if (!sh5_evlog_on())                                        \
			return call;                                        \
		sh5mpi_enter(SH5MPI_##fn);                                  \
		send_start(comm, dest, tag, count, datatype,                \
			   SH5EV_F_NONBLOCKING);                            \
		ret_ = call;                                                \
		if (ret_ == MPI_SUCCESS)                                    \
			sh5mpi_req_forget(*request);                        \
		sh5mpi_exit(SH5MPI_##fn);                                   \
		return ret_;                                                \
	} while (0)

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest,
	      int tag, MPI_Comm comm, MPI_Request *request)
{
	ISEND(Isend,
	      PMPI_Isend(buf, count, datatype, dest, tag, comm, request));
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest,
	       int tag, MPI_Comm comm, MPI_Request *request)
{
	ISEND(Ibsend,
	      PMPI_Ibsend(buf, count, datatype, dest, tag, comm, request));
}

int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest,
	       int tag, MPI_Comm comm, MPI_Request *request)
{
	ISEND(Issend,
	      PMPI_Issend(buf, count, datatype, dest, tag, comm, request));
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest,
	       int tag, MPI_Comm comm, MPI_Request *request)
{
	ISEND(Irsend,
	      PMPI_Irsend(buf, count, datatype, dest, tag, comm, request));
}

/* RECV of a completed blocking receive on comm. */
static void recv_done(MPI_Comm comm, int source, int tag,
		      const MPI_Status *st)
{
	struct sh5mpi_comm *c;

	if (source == MPI_PROC_NULL || !(c = sh5mpi_comm_find(comm)))
		return;
	sh5mpi_p2p_recv(c, st, recv_flags(source, tag));
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source,
	     int tag, MPI_Comm comm, MPI_Status *status)
{
	MPI_Status own, *st = status == MPI_STATUS_IGNORE ? &own : status;
	int ret;

	if (!sh5_evlog_on())
		return PMPI_Recv(buf, count, datatype, source, tag, comm,
				 status);
	sh5mpi_enter(SH5MPI_Recv);
	ret = PMPI_Recv(buf, count, datatype, source, tag, comm, st);
	if (ret == MPI_SUCCESS)
		recv_done(comm, source, tag, st);
	sh5mpi_exit(SH5MPI_Recv);
	return ret;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source,
	      int tag, MPI_Comm comm, MPI_Request *request)
{
	struct sh5mpi_comm *c;
	int ret;

	if (!sh5_evlog_on())
		return PMPI_Irecv(buf, count, datatype, source, tag, comm,
				  request);
	sh5mpi_enter(SH5MPI_Irecv);
	ret = PMPI_Irecv(buf, count, datatype, source, tag, comm, request);
	if (ret == MPI_SUCCESS && source != MPI_PROC_NULL &&
	    (c = sh5mpi_comm_find(comm)) != NULL)
		sh5mpi_req_recv(*request, c,
				SH5EV_F_NONBLOCKING |
					recv_flags(source, tag));
	sh5mpi_exit(SH5MPI_Irecv);
	return ret;
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		 int dest, int sendtag, void *recvbuf, int recvcount,
		 MPI_Datatype recvtype, int source, int recvtag,
		 MPI_Comm comm, MPI_Status *status)
{
	MPI_Status own, *st = status == MPI_STATUS_IGNORE ? &own : status;
	int ret;

	if (!sh5_evlog_on())
		return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest,
				     sendtag, recvbuf, recvcount, recvtype,
				     source, recvtag, comm, status);
	sh5mpi_enter(SH5MPI_Sendrecv);
	send_start(comm, dest, sendtag, sendcount, sendtype, 0);
	ret = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag,
			    recvbuf, recvcount, recvtype, source, recvtag,
			    comm, st);
	if (ret == MPI_SUCCESS)
		recv_done(comm, source, recvtag, st);
	sh5mpi_exit(SH5MPI_Sendrecv);
	return ret;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype,
			 int dest, int sendtag, int source, int recvtag,
			 MPI_Comm comm, MPI_Status *status)
{
	MPI_Status own, *st = status == MPI_STATUS_IGNORE ? &own : status;
	int ret;

	if (!sh5_evlog_on())
		return PMPI_Sendrecv_replace(buf, count, datatype, dest,
					     sendtag, source, recvtag, comm,
					     status);
	sh5mpi_enter(SH5MPI_Sendrecv_replace);
	send_start(comm, dest, sendtag, count, datatype, 0);
	ret = PMPI_Sendrecv_replace(buf, count, datatype, dest, sendtag,
				    source, recvtag, comm, st);
	if (ret == MPI_SUCCESS)
		recv_done(comm, source, recvtag, st);
	sh5mpi_exit(SH5MPI_Sendrecv_replace);
	return ret;
}

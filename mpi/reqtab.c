/*
 * reqtab.c - the receive-request table (wrap.h): a SEND is written when
 * a send starts, so only receive requests are remembered: handle ->
 * local id of the communicator (held until the request completes) and
 * the flags of the RECV to write (NONBLOCKING, ANY_SOURCE, ANY_TAG).
 * The completion calls (req.c) report each remembered request they
 * complete here, which writes its RECV (msg.c).
 */
#include "config.h"

#include "wrap.h"

static struct sh5mpi_map reqs;	/* request -> local << 16 | flags */

void sh5mpi_req_recv(MPI_Request req, struct sh5mpi_comm *c, uint16_t flags)
{
	uint64_t key = SH5MPI_KEY(req);

	if (req == MPI_REQUEST_NULL)
		return;
	/* A stale entry (completed by a call not seen here). */
	sh5mpi_req_forget(req);
	if (sh5mpi_map_put(&reqs, key, (uint64_t)c->local << 16 | flags) < 0)
		return;
	sh5mpi_comm_hold(c);
}

void sh5mpi_req_forget(MPI_Request req)
{
	uint64_t v;
	struct sh5mpi_comm *c;

	if (reqs.n && sh5mpi_map_del(&reqs, SH5MPI_KEY(req), &v) &&
	    (c = sh5mpi_comm_by_local((uint32_t)(v >> 16))) != NULL)
		sh5mpi_comm_release(c);
}

void sh5mpi_req_fini(void)
{
	sh5mpi_map_clear(&reqs);
}

int sh5mpi_req_known(MPI_Request req)
{
	uint64_t v;

	return reqs.n && sh5mpi_map_get(&reqs, SH5MPI_KEY(req), &v);
}

int sh5mpi_req_any_known(int count, const MPI_Request *r)
{
	int i;

	if (!reqs.n)
		return 0;
	for (i = 0; i < count; i++)
		if (sh5mpi_req_known(r[i]))
			return 1;
	return 0;
}

void sh5mpi_req_completed(MPI_Request req, const MPI_Status *status)
{
	uint64_t v;
	struct sh5mpi_comm *c;

	if (!sh5mpi_map_del(&reqs, SH5MPI_KEY(req), &v))
		return;
	c = sh5mpi_comm_by_local((uint32_t)(v >> 16));
	if (!c)
		return;
	sh5mpi_p2p_recv(c, status, (uint16_t)(v & 0xffff));
	sh5mpi_comm_release(c);
}

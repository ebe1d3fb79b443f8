/*
 * coll.c - blocking collective operations on intracommunicators.
 *
 * CBEGIN at entry and CEND at exit, both with the operation, the local
 * id of the communicator, the root as world rank (-1 for unrooted
 * operations) and the bytes of this rank: the size of its send buffer
 * plus that of its receive buffer, each counted where the standard says
 * it is significant (the send buffer of MPI_Scatter only at the root,
 * the receive buffer of MPI_Gather only at the root, ...); an
 * MPI_IN_PLACE buffer is counted once.  Collectives on communicators the
 * library does not record (intercommunicators among them) get ENTER and
 * EXIT only.
 */
#include "config.h"

#include "wrap.h"

/* Sum of counts[0..n-1] x type size. */
static uint64_t vbytes(const int counts[], int n, MPI_Datatype type)
{
	uint64_t sum = 0;
	int i;

	if (!counts)
		return 0;
	for (i = 0; i < n; i++)
		sum += sh5mpi_bytes(counts[i], type);
	return sum;
}

/* The recorded communicator, its rank and size; NULL when not recorded. */
static struct sh5mpi_comm *coll_comm(MPI_Comm comm)
{
	return sh5mpi_comm_find(comm);
}

/* Root as world rank. */
static int32_t world_root(struct sh5mpi_comm *c, int root)
{
	return sh5mpi_comm_world(c, root);
}

static void cbegin(struct sh5mpi_comm *c, uint8_t op, int32_t root,
		   uint64_t bytes)
{
	if (c)
		sh5_evlog_event(SH5EV_K_CBEGIN, op, 0, c->local, root, 0, bytes,
				0);
}

static void cend(struct sh5mpi_comm *c, uint8_t op, int32_t root,
		 uint64_t bytes)
{
	if (c)
		sh5_evlog_event(SH5EV_K_CEND, op, 0, c->local, root, 0, bytes,
				0);
}

/*
 * The body of every wrapper: pass through when not recording; else
 * ENTER, find the communicator, compute root and bytes (the statement
 * `calc`, which sets root_ and bytes_ from c_), CBEGIN, the call, CEND,
 * EXIT.
 */
#define COLL(fn, op, call, calc)                                            \
	do {                                                                \
		struct sh5mpi_comm *c_;                                     \
		int32_t root_ = -1;                                         \
		uint64_t bytes_ = 0;                                        \
		int ret_;                                                   \
		if (!sh5_evlog_on())                                        \
			return call;                                        \
		sh5mpi_enter(SH5MPI_##fn);                                  \
		c_ = coll_comm(comm);                                       \
		if (c_) {                                                   \
			calc;                                               \
		}                                                           \
		cbegin(c_, op, root_, bytes_);                              \
		ret_ = call;                                                \
		cend(c_, op, root_, bytes_);                                \
		sh5mpi_exit(SH5MPI_##fn);                                   \
		return ret_;                                                \
	} while (0)

#define IN_PLACE(buf) ((buf) == MPI_IN_PLACE)

int MPI_Barrier(MPI_Comm comm)
{
	COLL(Barrier, SH5EV_OP_BARRIER, PMPI_Barrier(comm), (void)0);
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root,
	      MPI_Comm comm)
{
	COLL(Bcast, SH5EV_OP_BCAST,
	     PMPI_Bcast(buffer, count, datatype, root, comm),
	     root_ = world_root(c_, root);
	     bytes_ = sh5mpi_bytes(count, datatype));
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
		MPI_Comm comm)
{
	COLL(Scatter, SH5EV_OP_SCATTER,
	     PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount,
			  recvtype, root, comm),
	     root_ = world_root(c_, root);
	     if (c_->rank == root) {
		     bytes_ = sh5mpi_bytes(sendcount, sendtype) *
			      (uint64_t)c_->size;
		     if (!IN_PLACE(recvbuf))
			     bytes_ += sh5mpi_bytes(recvcount, recvtype);
	     } else bytes_ = sh5mpi_bytes(recvcount, recvtype));
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[],
		 const int displs[], MPI_Datatype sendtype, void *recvbuf,
		 int recvcount, MPI_Datatype recvtype, int root,
		 MPI_Comm comm)
{
	COLL(Scatterv, SH5EV_OP_SCATTER,
	     PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf,
			   recvcount, recvtype, root, comm),
	     root_ = world_root(c_, root);
	     if (c_->rank == root) {
		     bytes_ = vbytes(sendcounts, c_->size, sendtype);
		     if (!IN_PLACE(recvbuf))
			     bytes_ += sh5mpi_bytes(recvcount, recvtype);
	     } else bytes_ = sh5mpi_bytes(recvcount, recvtype));
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
	       void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
	       MPI_Comm comm)
{
	COLL(Gather, SH5EV_OP_GATHER,
	     PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
			 recvtype, root, comm),
	     root_ = world_root(c_, root);
	     if (c_->rank == root) {
		     bytes_ = sh5mpi_bytes(recvcount, recvtype) *
			      (uint64_t)c_->size;
		     if (!IN_PLACE(sendbuf))
			     bytes_ += sh5mpi_bytes(sendcount, sendtype);
	     } else bytes_ = sh5mpi_bytes(sendcount, sendtype));
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		void *recvbuf, const int recvcounts[], const int displs[],
		MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	COLL(Gatherv, SH5EV_OP_GATHER,
	     PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
			  displs, recvtype, root, comm),
	     root_ = world_root(c_, root);
	     if (c_->rank == root) {
		     bytes_ = vbytes(recvcounts, c_->size, recvtype);
		     if (!IN_PLACE(sendbuf))
			     bytes_ += sh5mpi_bytes(sendcount, sendtype);
	     } else bytes_ = sh5mpi_bytes(sendcount, sendtype));
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count,
	       MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
	COLL(Reduce, SH5EV_OP_REDUCE,
	     PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm),
	     root_ = world_root(c_, root);
	     bytes_ = sh5mpi_bytes(count, datatype);
	     if (c_->rank == root && !IN_PLACE(sendbuf))
		     bytes_ *= 2);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
		  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	COLL(Allreduce, SH5EV_OP_ALLREDUCE,
	     PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm),
	     bytes_ = sh5mpi_bytes(count, datatype);
	     if (!IN_PLACE(sendbuf))
		     bytes_ *= 2);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		  void *recvbuf, int recvcount, MPI_Datatype recvtype,
		  MPI_Comm comm)
{
	COLL(Allgather, SH5EV_OP_ALLGATHER,
	     PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
			    recvtype, comm),
	     bytes_ = sh5mpi_bytes(recvcount, recvtype) * (uint64_t)c_->size;
	     if (!IN_PLACE(sendbuf))
		     bytes_ += sh5mpi_bytes(sendcount, sendtype));
}

int MPI_Allgatherv(const void *sendbuf, int sendcount,
		   MPI_Datatype sendtype, void *recvbuf,
		   const int recvcounts[], const int displs[],
		   MPI_Datatype recvtype, MPI_Comm comm)
{
	COLL(Allgatherv, SH5EV_OP_ALLGATHER,
	     PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf,
			     recvcounts, displs, recvtype, comm),
	     bytes_ = vbytes(recvcounts, c_->size, recvtype);
	     if (!IN_PLACE(sendbuf))
		     bytes_ += sh5mpi_bytes(sendcount, sendtype));
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		 void *recvbuf, int recvcount, MPI_Datatype recvtype,
		 MPI_Comm comm)
{
	COLL(Alltoall, SH5EV_OP_ALLTOALL,
	     PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
			   recvtype, comm),
	     bytes_ = sh5mpi_bytes(recvcount, recvtype) * (uint64_t)c_->size;
	     if (!IN_PLACE(sendbuf))
		     bytes_ += sh5mpi_bytes(sendcount, sendtype) *
			       (uint64_t)c_->size);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[],
		  const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
		  const int recvcounts[], const int rdispls[],
		  MPI_Datatype recvtype, MPI_Comm comm)
{
	COLL(Alltoallv, SH5EV_OP_ALLTOALL,
	     PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
			    recvcounts, rdispls, recvtype, comm),
	     bytes_ = vbytes(recvcounts, c_->size, recvtype);
	     if (!IN_PLACE(sendbuf))
		     bytes_ += vbytes(sendcounts, c_->size, sendtype));
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf,
		       const int recvcounts[], MPI_Datatype datatype,
		       MPI_Op op, MPI_Comm comm)
{
	COLL(Reduce_scatter, SH5EV_OP_REDUCE_SCATTER,
	     PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op,
				 comm),
	     if (IN_PLACE(sendbuf))
		     bytes_ = vbytes(recvcounts, c_->size, datatype);
	     else bytes_ = vbytes(recvcounts, c_->size, datatype) +
			   sh5mpi_bytes(recvcounts[c_->rank], datatype));
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count,
	     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	COLL(Scan, SH5EV_OP_SCAN,
	     PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm),
	     bytes_ = sh5mpi_bytes(count, datatype);
	     if (!IN_PLACE(sendbuf))
		     bytes_ *= 2);
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count,
	       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	COLL(Exscan, SH5EV_OP_EXSCAN,
	     PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm),
	     bytes_ = sh5mpi_bytes(count, datatype);
	     if (!IN_PLACE(sendbuf))
		     bytes_ *= 2);
}

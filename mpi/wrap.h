/*
 * wrap.h - internals shared by the MPI interposition library libsh5mpi
 * (the files of mpi/): the list of wrapped calls, their region ids
 * (util.c), the communicator table (comm.c), the receive-request table
 * (reqtab.c) and the handle map both use (handles.c).
 *
 * libsh5mpi is loaded into an unmodified MPI program with LD_PRELOAD;
 * each wrapper records events through the event log (events/evlog.h) and
 * calls the real function through the PMPI profiling interface.  It
 * never changes arguments, results or statuses the application sees.
 * Only MPI_* and sh5_ev_* symbols are exported (mk/mpi.am); everything
 * here is internal (prefix sh5mpi_).
 *
 * Layers, lowest first: util.c and handles.c (call nothing here), comm.c,
 * msg.c (SEND/RECV records), reqtab.c (receive requests), then the
 * wrapper files init.c, p2p.c, req.c, coll.c.
 */
#ifndef SH5_MPI_WRAP_H
#define SH5_MPI_WRAP_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "events/evlog.h"

/*
 * The one list of wrapped calls, by family (doc/mpi.md copies it; the
 * test checks it).  X(Name) wraps MPI_Name; its region is "MPI_Name",
 * defined with SH5EV_F_MPI at its first use.
 */
#define SH5MPI_CALLS_INIT(X)                                                \
	X(Init) X(Init_thread) X(Finalize) X(Pcontrol)
#define SH5MPI_CALLS_COMM(X)                                                \
	X(Comm_dup) X(Comm_dup_with_info) X(Comm_split) X(Comm_split_type)  \
	X(Comm_create) X(Comm_create_group) X(Cart_create) X(Cart_sub)      \
	X(Graph_create) X(Dist_graph_create)                                \
	X(Dist_graph_create_adjacent) X(Intercomm_merge) X(Comm_free)
#define SH5MPI_CALLS_P2P(X)                                                 \
	X(Send) X(Bsend) X(Ssend) X(Rsend) X(Recv) X(Isend) X(Ibsend)       \
	X(Issend) X(Irsend) X(Irecv) X(Sendrecv) X(Sendrecv_replace)
#define SH5MPI_CALLS_REQ(X)                                                 \
	X(Wait) X(Waitall) X(Waitany) X(Waitsome) X(Test) X(Testall)        \
	X(Testany) X(Testsome) X(Request_free)
#define SH5MPI_CALLS_COLL(X)                                                \
	X(Barrier) X(Bcast) X(Scatter) X(Scatterv) X(Gather) X(Gatherv)     \
	X(Reduce) X(Allreduce) X(Allgather) X(Allgatherv) X(Alltoall)       \
	X(Alltoallv) X(Reduce_scatter) X(Scan) X(Exscan)
#define SH5MPI_CALLS(X)                                                     \
	SH5MPI_CALLS_INIT(X) SH5MPI_CALLS_COMM(X) SH5MPI_CALLS_P2P(X)       \
	SH5MPI_CALLS_REQ(X) SH5MPI_CALLS_COLL(X)

enum sh5mpi_fn {
#define SH5MPI_ENUM(name) SH5MPI_##name,
	SH5MPI_CALLS(SH5MPI_ENUM)
#undef SH5MPI_ENUM
	SH5MPI_NFN
};

/* ------------------------------------------------------------ util.c */

/* Set by MPI_Init (init.c): my rank in and the size of MPI_COMM_WORLD
 * (valid after MPI_Init). */
extern int sh5mpi_world_rank;
extern int sh5mpi_world_size;

/*
 * 1 when some rank of MPI_COMM_WORLD records events (agreed by all ranks
 * in MPI_Init): then every rank takes part in the broadcast that agrees
 * a new communicator's global id, whether it records or not, so ranks
 * whose recording failed or stopped never leave the others waiting.
 */
extern int sh5mpi_sync;

/* 1 when MPI_Init_thread gave MPI_THREAD_MULTIPLE: the communicator
 * table is then locked. */
extern int sh5mpi_locking;

/*
 * Region id of wrapped call f ("MPI_<Name>", defined at its first use),
 * or -1 when not recording.  Call only while sh5_evlog_on().
 */
int32_t sh5mpi_region(enum sh5mpi_fn f);

/* ENTER / EXIT of f's region, now. */
static inline void sh5mpi_enter(enum sh5mpi_fn f)
{
	int32_t id = sh5mpi_region(f);

	if (id >= 0)
		sh5_evlog_event(SH5EV_K_ENTER, 0, 0, (uint32_t)id, 0, 0, 0, 0);
}
static inline void sh5mpi_exit(enum sh5mpi_fn f)
{
	int32_t id = sh5mpi_region(f);

	if (id >= 0)
		sh5_evlog_event(SH5EV_K_EXIT, 0, 0, (uint32_t)id, 0, 0, 0, 0);
}

/* Bytes of count elements of type (0 when the size is unknown). */
uint64_t sh5mpi_bytes(int count, MPI_Datatype type);

/* --------------------------------------------------------- handles.c */

/*
 * A map from MPI handles (communicators, requests; as 64-bit keys, 0 is
 * never a key) to 64-bit values: open addressing, linear probing,
 * deletion by backward shift.  Zero-initialised is an empty map.
 */
struct sh5mpi_map {
	uint64_t *keys;
	uint64_t *vals;
	size_t cap;	/* power of two, or 0 */
	size_t n;
};

/* The key of an MPI handle (a pointer in OpenMPI, an int in MPICH). */
#define SH5MPI_KEY(h) sh5mpi_key(&(h), sizeof(h))
uint64_t sh5mpi_key(const void *handle, size_t size);

/* 1 and *val when key is present, else 0. */
int sh5mpi_map_get(const struct sh5mpi_map *m, uint64_t key, uint64_t *val);
/* Insert or replace; 0, or -1 when out of memory (map unchanged). */
int sh5mpi_map_put(struct sh5mpi_map *m, uint64_t key, uint64_t val);
/* Remove key: 1 and *val (val may be NULL) when it was present, else 0. */
int sh5mpi_map_del(struct sh5mpi_map *m, uint64_t key, uint64_t *val);
/* Free the arrays; the map is empty again. */
void sh5mpi_map_clear(struct sh5mpi_map *m);

/* ------------------------------------------------------------ comm.c */

/*
 * A communicator known to the library: local id, size, my rank, and the
 * world rank of every rank (world == NULL: the identity, MPI_COMM_WORLD).
 * Entries of freed communicators live on while receive requests on them
 * are pending (refs).
 */
struct sh5mpi_comm {
	uint32_t local;
	int size;
	int rank;
	int *world;
	uint32_t refs;
	unsigned freed : 1;
	unsigned defined : 1;	/* DEFCOMM written (or world/self) */
};

/* Set up MPI_COMM_WORLD (local 0) and MPI_COMM_SELF (local 1); called by
 * MPI_Init after PMPI_Init.  0, or -1 when out of memory. */
int sh5mpi_comm_init(void);
/* Drop every table; called by MPI_Finalize before PMPI_Finalize. */
void sh5mpi_comm_fini(void);

/*
 * The entry of comm, or NULL when it is not recorded (an
 * intercommunicator, one made by a call the library does not wrap, or
 * one whose definition was not written).
 */
struct sh5mpi_comm *sh5mpi_comm_find(MPI_Comm comm);

/* The entry with local id `local` (pending requests hold it), or NULL. */
struct sh5mpi_comm *sh5mpi_comm_by_local(uint32_t local);

/* World rank of comm rank `rank` of c, or -1 when out of range. */
static inline int32_t sh5mpi_comm_world(const struct sh5mpi_comm *c,
					int rank)
{
	if (rank < 0 || rank >= c->size)
		return -1;
	return c->world ? c->world[rank] : rank;
}

/* A pending receive request holds / releases c. */
void sh5mpi_comm_hold(struct sh5mpi_comm *c);
void sh5mpi_comm_release(struct sh5mpi_comm *c);

/* ---------------------------------------------------------- reqtab.c */

/* Remember the receive request req posted on c with flags
 * (SH5EV_F_NONBLOCKING | ANY_SOURCE | ANY_TAG). */
void sh5mpi_req_recv(MPI_Request req, struct sh5mpi_comm *c, uint16_t flags);

/* Forget req if remembered (a handle a send call just returned may be
 * that of a receive completed by a call not wrapped here). */
void sh5mpi_req_forget(MPI_Request req);

/* Forget every request; called by MPI_Finalize. */
void sh5mpi_req_fini(void);

/* 1 when req is a remembered receive request, else 0. */
int sh5mpi_req_known(MPI_Request req);

/* 1 when one of the count requests r[] is remembered, else 0. */
int sh5mpi_req_any_known(int count, const MPI_Request *r);

/* The request with handle req (saved before the call) completed with
 * status: write its RECV (sh5mpi_p2p_recv()), forget it. */
void sh5mpi_req_completed(MPI_Request req, const MPI_Status *status);

/* ------------------------------------------------------------- msg.c */

/* Write the SEND of count x type to comm rank dest of c (not PROC_NULL). */
void sh5mpi_p2p_send(struct sh5mpi_comm *c, int dest, int tag, int count,
		     MPI_Datatype type, uint16_t flags);

/* Write the RECV a completed receive on c reports in status, unless it
 * came from MPI_PROC_NULL or was cancelled. */
void sh5mpi_p2p_recv(struct sh5mpi_comm *c, const MPI_Status *status,
		     uint16_t flags);

#endif /* SH5_MPI_WRAP_H */

/*
 * comm.c - the communicator table and the wrappers of the calls that make
 * and free intracommunicators.
 *
 * MPI_COMM_WORLD is local id 0 (global id 0), MPI_COMM_SELF local id 1
 * (global id (world rank + 1) << 32); every other communicator gets the
 * next local id when a wrapped constructor returns it.  Its global id
 * ((world rank of its rank 0) + 1) << 32 | n, n counting the
 * communicators that process was rank 0 of, is broadcast from its rank 0
 * with PMPI_Bcast on the new communicator (by every member whenever some
 * rank records: sh5mpi_sync), and its ranks are translated to world ranks
 * with PMPI_Group_translate_ranks.  A DEFCOMM record defines it; only its
 * rank 0 writes the members.  Intercommunicators are not recorded.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "wrap.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct sh5mpi_map by_handle;	/* handle -> local id */
static struct sh5mpi_comm **by_local;	/* local id -> entry or NULL */
static uint32_t nlocal;			/* local ids given */
static uint32_t cap_local;
static uint32_t nmade;			/* comms I was rank 0 of */
static MPI_Group world_group = MPI_GROUP_NULL;
static struct sh5mpi_comm world_comm, self_comm;
static int self_world;

static void do_lock(void)
{
	if (sh5mpi_locking)
		pthread_mutex_lock(&lock);
}

static void do_unlock(void)
{
	if (sh5mpi_locking)
		pthread_mutex_unlock(&lock);
}

static void destroy(struct sh5mpi_comm *c)
{
	if (c == &world_comm || c == &self_comm)
		return;
	if (c->local < nlocal)
		by_local[c->local] = NULL;
	free(c->world);
	free(c);
}

/* Give c the next local id; 0, or -1 when out of memory. */
static int add_local(struct sh5mpi_comm *c)
{
	if (nlocal == cap_local) {
		uint32_t cap = cap_local ? cap_local * 2 : 16;
		struct sh5mpi_comm **p = realloc(by_local, cap * sizeof(*p));

		if (!p)
			return -1;
		by_local = p;
		cap_local = cap;
	}
	c->local = nlocal;
	by_local[nlocal++] = c;
	return 0;
}

int sh5mpi_comm_init(void)
{
	world_comm = (struct sh5mpi_comm){ .size = sh5mpi_world_size,
					   .rank = sh5mpi_world_rank,
					   .defined = 1 };
	self_world = sh5mpi_world_rank;
	self_comm = (struct sh5mpi_comm){ .size = 1, .world = &self_world,
					  .defined = 1 };
	if (add_local(&world_comm) < 0 || add_local(&self_comm) < 0)
		return -1;
	if (PMPI_Comm_group(MPI_COMM_WORLD, &world_group) != MPI_SUCCESS)
		return -1;
	return 0;
}

void sh5mpi_comm_fini(void)
{
	uint32_t i;

	for (i = 2; i < nlocal; i++)
		if (by_local[i])
			destroy(by_local[i]);
	free(by_local);
	by_local = NULL;
	nlocal = cap_local = 0;
	sh5mpi_map_clear(&by_handle);
	if (world_group != MPI_GROUP_NULL)
		PMPI_Group_free(&world_group);
}

struct sh5mpi_comm *sh5mpi_comm_find(MPI_Comm comm)
{
	struct sh5mpi_comm *c = NULL;
	uint64_t local;

	if (comm == MPI_COMM_WORLD)
		return nlocal ? &world_comm : NULL;
	if (comm == MPI_COMM_SELF)
		return nlocal ? &self_comm : NULL;
	do_lock();
	if (sh5mpi_map_get(&by_handle, SH5MPI_KEY(comm), &local) &&
	    local < nlocal)
		c = by_local[local];
	do_unlock();
	return c && c->defined ? c : NULL;
}

struct sh5mpi_comm *sh5mpi_comm_by_local(uint32_t local)
{
	struct sh5mpi_comm *c = NULL;

	do_lock();
	if (local < nlocal)
		c = by_local[local];
	do_unlock();
	return c;
}

void sh5mpi_comm_hold(struct sh5mpi_comm *c)
{
	do_lock();
	c->refs++;
	do_unlock();
}

void sh5mpi_comm_release(struct sh5mpi_comm *c)
{
	do_lock();
	if (c->refs > 0 && --c->refs == 0 && c->freed)
		destroy(c);
	do_unlock();
}

/* comm rank -> world rank of every rank of nc; NULL when out of memory
 * or MPI fails. */
static int *translate(MPI_Comm nc, int size)
{
	MPI_Group g = MPI_GROUP_NULL;
	int *ranks = malloc((size_t)size * sizeof(int));
	int *world = malloc((size_t)size * sizeof(int));
	int i;

	if (!ranks || !world)
		goto error;
	for (i = 0; i < size; i++)
		ranks[i] = i;
	if (PMPI_Comm_group(nc, &g) != MPI_SUCCESS ||
	    PMPI_Group_translate_ranks(g, size, ranks, world_group, world) !=
		    MPI_SUCCESS)
		goto error;
	PMPI_Group_free(&g);
	free(ranks);
	return world;
error:
	if (g != MPI_GROUP_NULL)
		PMPI_Group_free(&g);
	free(ranks);
	free(world);
	return NULL;
}

/*
 * A wrapped constructor returned nc (maybe MPI_COMM_NULL) to this rank:
 * agree its global id with the other members, enter it in the table and
 * define it.  Called by every member when sh5mpi_sync.
 */
static void created(MPI_Comm nc)
{
	struct sh5mpi_comm *c = NULL, *old;
	uint64_t global = 0, prev;
	int inter = 1, rank, size;

	if (nc == MPI_COMM_NULL ||
	    PMPI_Comm_test_inter(nc, &inter) != MPI_SUCCESS || inter ||
	    PMPI_Comm_rank(nc, &rank) != MPI_SUCCESS ||
	    PMPI_Comm_size(nc, &size) != MPI_SUCCESS)
		return;
	if (rank == 0) {
		do_lock();
		global = (uint64_t)(sh5mpi_world_rank + 1) << 32 | ++nmade;
		do_unlock();
	}
	if (PMPI_Bcast(&global, 1, MPI_UINT64_T, 0, nc) != MPI_SUCCESS)
		return;
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->size = size;
	c->rank = rank;
	c->world = translate(nc, size);
	if (!c->world) {
		free(c);
		return;
	}
	do_lock();
	/* A handle of a communicator freed by a call not wrapped here. */
	if (sh5mpi_map_get(&by_handle, SH5MPI_KEY(nc), &prev) &&
	    prev < nlocal && (old = by_local[prev]) != NULL) {
		old->freed = 1;
		if (old->refs == 0)
			destroy(old);
	}
	if (add_local(c) < 0 ||
	    sh5mpi_map_put(&by_handle, SH5MPI_KEY(nc), c->local) < 0) {
		if (by_local && c->local < nlocal && by_local[c->local] == c)
			by_local[c->local] = NULL;
		free(c->world);
		free(c);
		do_unlock();
		return;
	}
	do_unlock();
	if (sh5_evlog_on()) {
		sh5_evlog_comm(c->local, global, size, rank,
			       rank == 0 ? (const int32_t *)c->world : NULL);
		c->defined = 1;
	}
}

/* Before MPI_Comm_free: take comm out of the table. */
static void freeing(MPI_Comm comm)
{
	uint64_t local;
	struct sh5mpi_comm *c;

	if (comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF)
		return;
	do_lock();
	if (sh5mpi_map_del(&by_handle, SH5MPI_KEY(comm), &local) &&
	    local < nlocal && (c = by_local[local]) != NULL) {
		c->freed = 1;
		if (c->refs == 0)
			destroy(c);
	}
	do_unlock();
}

/*
 * The wrappers: ENTER, the real call, the agreement (collective over the
 * new communicator, by every member whenever sh5mpi_sync), EXIT.
 */
#define MAKE(fn, call, out)                                                 \
	do {                                                                \
		int on_ = sh5_evlog_on(), ret_;                             \
		if (!sh5mpi_sync)                                           \
			return call;                                        \
		if (on_)                                                    \
			sh5mpi_enter(SH5MPI_##fn);                          \
		ret_ = call;                                                \
		if (ret_ == MPI_SUCCESS)                                    \
			created(*(out));                                    \
		if (on_)                                                    \
			sh5mpi_exit(SH5MPI_##fn);                           \
		return ret_;                                                \
	} while (0)

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
	MAKE(Comm_dup, PMPI_Comm_dup(comm, newcomm), newcomm);
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
	MAKE(Comm_dup_with_info, PMPI_Comm_dup_with_info(comm, info, newcomm),
	     newcomm);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
	MAKE(Comm_split, PMPI_Comm_split(comm, color, key, newcomm), newcomm);
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key,
			MPI_Info info, MPI_Comm *newcomm)
{
	MAKE(Comm_split_type,
	     PMPI_Comm_split_type(comm, split_type, key, info, newcomm),
	     newcomm);
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
	MAKE(Comm_create, PMPI_Comm_create(comm, group, newcomm), newcomm);
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag,
			  MPI_Comm *newcomm)
{
	MAKE(Comm_create_group,
	     PMPI_Comm_create_group(comm, group, tag, newcomm), newcomm);
}

int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[],
		    const int periods[], int reorder, MPI_Comm *comm_cart)
{
	MAKE(Cart_create,
	     PMPI_Cart_create(comm_old, ndims, dims, periods, reorder,
			      comm_cart),
	     comm_cart);
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
	MAKE(Cart_sub, PMPI_Cart_sub(comm, remain_dims, newcomm), newcomm);
}

int MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[],
		     const int edges[], int reorder, MPI_Comm *comm_graph)
{
	MAKE(Graph_create,
	     PMPI_Graph_create(comm_old, nnodes, index, edges, reorder,
			       comm_graph),
	     comm_graph);
}

int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int nodes[],
			  const int degrees[], const int targets[],
			  const int weights[], MPI_Info info, int reorder,
			  MPI_Comm *newcomm)
{
	MAKE(Dist_graph_create,
	     PMPI_Dist_graph_create(comm_old, n, nodes, degrees, targets,
				    weights, info, reorder, newcomm),
	     newcomm);
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree,
				   const int sources[],
				   const int sourceweights[], int outdegree,
				   const int destinations[],
				   const int destweights[], MPI_Info info,
				   int reorder, MPI_Comm *comm_dist_graph)
{
	MAKE(Dist_graph_create_adjacent,
	     PMPI_Dist_graph_create_adjacent(comm_old, indegree, sources,
					     sourceweights, outdegree,
					     destinations, destweights, info,
					     reorder, comm_dist_graph),
	     comm_dist_graph);
}

int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
	MAKE(Intercomm_merge,
	     PMPI_Intercomm_merge(intercomm, high, newintracomm),
	     newintracomm);
}

int MPI_Comm_free(MPI_Comm *comm)
{
	int on = sh5_evlog_on(), ret;

	if (!sh5mpi_sync)
		return PMPI_Comm_free(comm);
	if (on)
		sh5mpi_enter(SH5MPI_Comm_free);
	freeing(*comm);
	ret = PMPI_Comm_free(comm);
	if (on)
		sh5mpi_exit(SH5MPI_Comm_free);
	return ret;
}

/*
 * sh5_mpithreads.c - MPI from two threads (MPI_THREAD_MULTIPLE), for
 * tests/tools/mpi_preload.sh: libsh5mpi records only the calls of the
 * thread that called MPI_Init_thread, and the communicators made from the
 * other thread (collective with the same thread on the other ranks) leave
 * no one waiting.
 *
 *     sh5_mpithreads ITERATIONS
 *
 * Each thread, ITERATIONS times on its own duplicate of MPI_COMM_WORLD:
 * MPI_Comm_dup, MPI_Allreduce, MPI_Sendrecv around the ring, a wildcard
 * MPI_Irecv + MPI_Send + MPI_Wait, MPI_Comm_free.  Rank 0 prints
 * "sh5_mpithreads: ranks N sum S" (or "... no MPI_THREAD_MULTIPLE", exit
 * 77 everywhere).  Exit 0, 1 on a wrong result, 2 on usage.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

static int rank, size, iters;

struct job {
	MPI_Comm comm;
	long sum;
};

static void *work(void *arg)
{
	struct job *j = arg;
	MPI_Comm d;
	MPI_Request r;
	int i, v, w;

	for (i = 0; i < iters; i++) {
		MPI_Comm_dup(j->comm, &d);
		v = rank + i;
		MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_SUM, d);
		j->sum += w;
		MPI_Sendrecv(&v, 1, MPI_INT, (rank + 1) % size, 1, &w, 1,
			     MPI_INT, (rank + size - 1) % size, 1, d,
			     MPI_STATUS_IGNORE);
		j->sum += w;
		MPI_Irecv(&w, 1, MPI_INT, MPI_ANY_SOURCE, 2, d, &r);
		MPI_Send(&v, 1, MPI_INT, (rank + 1) % size, 2, d);
		MPI_Wait(&r, MPI_STATUS_IGNORE);
		j->sum += w;
		MPI_Comm_free(&d);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct job a = { 0 }, b = { 0 };
	pthread_t t;
	long sum, total;
	char *end;
	int p;

	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &p);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 2 || (iters = (int)strtol(argv[1], &end, 10)) < 1 ||
	    *end) {
		if (rank == 0)
			fprintf(stderr, "usage: sh5_mpithreads ITERATIONS\n");
		MPI_Finalize();
		return 2;
	}
	if (p != MPI_THREAD_MULTIPLE) {
		if (rank == 0)
			printf("sh5_mpithreads: no MPI_THREAD_MULTIPLE\n");
		MPI_Finalize();
		return 77;
	}
	MPI_Comm_dup(MPI_COMM_WORLD, &a.comm);
	MPI_Comm_dup(MPI_COMM_WORLD, &b.comm);
	if (pthread_create(&t, NULL, work, &b) != 0) {
		fprintf(stderr, "sh5_mpithreads: cannot start a thread\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	work(&a);
	pthread_join(t, NULL);
	if (a.sum != b.sum) {
		fprintf(stderr, "sh5_mpithreads: the threads disagree\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	sum = a.sum + b.sum;
	MPI_Reduce(&sum, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("sh5_mpithreads: ranks %d sum %ld\n", size, total);
	MPI_Comm_free(&a.comm);
	MPI_Comm_free(&b.comm);
	MPI_Finalize();
	return 0;
}

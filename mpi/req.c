/*
 * req.c - the completion calls.
 *
 * Receive requests are remembered in the request table (reqtab.c:
 * handle -> communicator and the flags of the RECV to write).  The wait
 * and test calls write a RECV for every remembered request they
 * complete, with source, tag and size from its status; when the
 * application passes MPI_STATUS(ES)_IGNORE, our own status array is
 * passed instead (only when a remembered request is among those given).
 * Statuses the application asked for are only read.  Persistent
 * requests (MPI_Recv_init + MPI_Start) are not recorded.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "wrap.h"

/* Arrays up to this many requests live on the stack. */
#define STACK_REQS 32

/* Saved copies of count handles: in stack (STACK_REQS) or malloc'd. */
static MPI_Request *save(MPI_Request *stack, int count,
			 const MPI_Request *r)
{
	MPI_Request *s = stack;

	if (count > STACK_REQS) {
		s = malloc((size_t)count * sizeof(*s));
		if (!s)
			return NULL;
	}
	memcpy(s, r, (size_t)count * sizeof(*s));
	return s;
}

static MPI_Status *statuses(MPI_Status *stack, int count, MPI_Status *given)
{
	if (given != MPI_STATUSES_IGNORE)
		return given;
	if (count <= STACK_REQS)
		return stack;
	return malloc((size_t)count * sizeof(MPI_Status));
}

static int ok_status(int ret, const MPI_Status *st)
{
	if (ret == MPI_SUCCESS)
		return 1;
	return ret == MPI_ERR_IN_STATUS && st->MPI_ERROR == MPI_SUCCESS;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
	MPI_Request saved = *request;
	MPI_Status own, *st = status == MPI_STATUS_IGNORE ? &own : status;
	int ret;

	if (!sh5_evlog_on())
		return PMPI_Wait(request, status);
	sh5mpi_enter(SH5MPI_Wait);
	if (!sh5mpi_req_known(saved)) {
		ret = PMPI_Wait(request, status);
	} else {
		ret = PMPI_Wait(request, st);
		if (ret == MPI_SUCCESS)
			sh5mpi_req_completed(saved, st);
	}
	sh5mpi_exit(SH5MPI_Wait);
	return ret;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
	MPI_Request saved = *request;
	MPI_Status own, *st = status == MPI_STATUS_IGNORE ? &own : status;
	int ret;

	if (!sh5_evlog_on())
		return PMPI_Test(request, flag, status);
	sh5mpi_enter(SH5MPI_Test);
	if (!sh5mpi_req_known(saved)) {
		ret = PMPI_Test(request, flag, status);
	} else {
		ret = PMPI_Test(request, flag, st);
		if (ret == MPI_SUCCESS && *flag)
			sh5mpi_req_completed(saved, st);
	}
	sh5mpi_exit(SH5MPI_Test);
	return ret;
}

/* Waitall and Testall: complete (when done) every request. */
static int all(enum sh5mpi_fn f, int count, MPI_Request reqv[], int *flag,
	       MPI_Status given[])
{
	MPI_Request sreq[STACK_REQS], *saved = NULL;
	MPI_Status sst[STACK_REQS], *st = NULL;
	int ret, i, done = 1;

	sh5mpi_enter(f);
	if (count <= 0 || !sh5mpi_req_any_known(count, reqv) ||
	    !(saved = save(sreq, count, reqv)) ||
	    !(st = statuses(sst, count, given))) {
		ret = f == SH5MPI_Waitall ? PMPI_Waitall(count, reqv, given) :
		      PMPI_Testall(count, reqv, flag, given);
		goto out;
	}
	ret = f == SH5MPI_Waitall ? PMPI_Waitall(count, reqv, st) :
	      PMPI_Testall(count, reqv, flag, st);
	if (f == SH5MPI_Testall)
		done = *flag;
	if ((ret == MPI_SUCCESS || ret == MPI_ERR_IN_STATUS) && done)
		for (i = 0; i < count; i++)
			if (ok_status(ret, &st[i]))
				sh5mpi_req_completed(saved[i], &st[i]);
out:
	if (saved && saved != sreq)
		free(saved);
	if (st && st != sst && st != given)
		free(st);
	sh5mpi_exit(f);
	return ret;
}

int MPI_Waitall(int count, MPI_Request array_of_requests[],
		MPI_Status array_of_statuses[])
{
	if (!sh5_evlog_on())
		return PMPI_Waitall(count, array_of_requests,
				    array_of_statuses);
	return all(SH5MPI_Waitall, count, array_of_requests, NULL,
		   array_of_statuses);
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
		MPI_Status array_of_statuses[])
{
	if (!sh5_evlog_on())
		return PMPI_Testall(count, array_of_requests, flag,
				    array_of_statuses);
	return all(SH5MPI_Testall, count, array_of_requests, flag,
		   array_of_statuses);
}

/* Waitany and Testany: one request, *index. */
static int any(enum sh5mpi_fn f, int count, MPI_Request reqv[], int *index,
	       int *flag, MPI_Status *status)
{
	MPI_Request sreq[STACK_REQS], *saved = NULL;
	MPI_Status own, *st = status == MPI_STATUS_IGNORE ? &own : status;
	int ret, done = 1;

	sh5mpi_enter(f);
	if (count <= 0 || !sh5mpi_req_any_known(count, reqv) ||
	    !(saved = save(sreq, count, reqv))) {
		ret = f == SH5MPI_Waitany ?
			      PMPI_Waitany(count, reqv, index, status) :
			      PMPI_Testany(count, reqv, index, flag, status);
		goto out;
	}
	ret = f == SH5MPI_Waitany ? PMPI_Waitany(count, reqv, index, st) :
	      PMPI_Testany(count, reqv, index, flag, st);
	if (f == SH5MPI_Testany)
		done = *flag;
	if (ret == MPI_SUCCESS && done && *index != MPI_UNDEFINED &&
	    *index >= 0 && *index < count)
		sh5mpi_req_completed(saved[*index], st);
out:
	if (saved && saved != sreq)
		free(saved);
	sh5mpi_exit(f);
	return ret;
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index,
		MPI_Status *status)
{
	if (!sh5_evlog_on())
		return PMPI_Waitany(count, array_of_requests, index, status);
	return any(SH5MPI_Waitany, count, array_of_requests, index, NULL,
		   status);
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int *index,
		int *flag, MPI_Status *status)
{
	if (!sh5_evlog_on())
		return PMPI_Testany(count, array_of_requests, index, flag,
				    status);
	return any(SH5MPI_Testany, count, array_of_requests, index, flag,
		   status);
}

/* Waitsome and Testsome: *outcount requests, indices[]. */
static int some(enum sh5mpi_fn f, int incount, MPI_Request reqv[],
		int *outcount, int indices[], MPI_Status given[])
{
	MPI_Request sreq[STACK_REQS], *saved = NULL;
	MPI_Status sst[STACK_REQS], *st = NULL;
	int ret, i;

	sh5mpi_enter(f);
	if (incount <= 0 || !sh5mpi_req_any_known(incount, reqv) ||
	    !(saved = save(sreq, incount, reqv)) ||
	    !(st = statuses(sst, incount, given))) {
		ret = f == SH5MPI_Waitsome ?
			      PMPI_Waitsome(incount, reqv, outcount, indices,
					    given) :
			      PMPI_Testsome(incount, reqv, outcount, indices,
					    given);
		goto out;
	}
	ret = f == SH5MPI_Waitsome ?
		      PMPI_Waitsome(incount, reqv, outcount, indices, st) :
		      PMPI_Testsome(incount, reqv, outcount, indices, st);
	if ((ret == MPI_SUCCESS || ret == MPI_ERR_IN_STATUS) &&
	    *outcount != MPI_UNDEFINED)
		for (i = 0; i < *outcount && i < incount; i++)
			if (indices[i] >= 0 && indices[i] < incount &&
			    ok_status(ret, &st[i]))
				sh5mpi_req_completed(saved[indices[i]], &st[i]);
out:
	if (saved && saved != sreq)
		free(saved);
	if (st && st != sst && st != given)
		free(st);
	sh5mpi_exit(f);
	return ret;
}

int MPI_Waitsome(int incount, MPI_Request array_of_requests[],
		 int *outcount, int array_of_indices[],
		 MPI_Status array_of_statuses[])
{
	if (!sh5_evlog_on())
		return PMPI_Waitsome(incount, array_of_requests, outcount,
				     array_of_indices, array_of_statuses);
	return some(SH5MPI_Waitsome, incount, array_of_requests, outcount,
		    array_of_indices, array_of_statuses);
}

int MPI_Testsome(int incount, MPI_Request array_of_requests[],
		 int *outcount, int array_of_indices[],
		 MPI_Status array_of_statuses[])
{
	if (!sh5_evlog_on())
		return PMPI_Testsome(incount, array_of_requests, outcount,
				     array_of_indices, array_of_statuses);
	return some(SH5MPI_Testsome, incount, array_of_requests, outcount,
		    array_of_indices, array_of_statuses);
}

int MPI_Request_free(MPI_Request *request)
{
	MPI_Request saved = *request;
	int ret;

	if (!sh5_evlog_on())
		return PMPI_Request_free(request);
	sh5mpi_enter(SH5MPI_Request_free);
	ret = PMPI_Request_free(request);
	/* The receive completes unseen: no RECV. */
	if (ret == MPI_SUCCESS)
		sh5mpi_req_forget(saved);
	sh5mpi_exit(SH5MPI_Request_free);
	return ret;
}

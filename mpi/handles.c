/*
 * handles.c - a small map from MPI handles to 64-bit values, for the
 * communicator and request tables (wrap.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "wrap.h"

uint64_t sh5mpi_key(const void *handle, size_t size)
{
	uint64_t k = 0;

	memcpy(&k, handle, size < sizeof(k) ? size : sizeof(k));
	return k;
}

static size_t slot_of(uint64_t key, size_t cap)
{
	/* Fibonacci hashing: handles are aligned pointers or small ints. */
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

int sh5mpi_map_get(const struct sh5mpi_map *m, uint64_t key, uint64_t *val)
{
	size_t i;

	if (m->cap == 0 || key == 0)
		return 0;
	for (i = slot_of(key, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key) {
			*val = m->vals[i];
			return 1;
		}
	return 0;
}

static int grow(struct sh5mpi_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64, i, j;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	uint64_t *vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -1;
	}
	for (i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		for (j = slot_of(m->keys[i], cap); keys[j]; j = (j + 1) &
							     (cap - 1))
			;
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

int sh5mpi_map_put(struct sh5mpi_map *m, uint64_t key, uint64_t val)
{
	size_t i;

	if (key == 0)
		return -1;
	/* Load at most 1/2: short probe sequences. */
	if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
		return -1;
	for (i = slot_of(key, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return 0;
		}
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 0;
}

int sh5mpi_map_del(struct sh5mpi_map *m, uint64_t key, uint64_t *val)
{
	size_t mask = m->cap - 1, i, j, k;

	if (m->cap == 0 || key == 0 || m->n == 0)
		return 0;
	for (i = slot_of(key, m->cap); m->keys[i]; i = (i + 1) & mask)
		if (m->keys[i] == key)
			break;
	if (!m->keys[i])
		return 0;
	if (val)
		*val = m->vals[i];
	/* Backward shift: move later members of the run into the hole when
	 * their home slot does not lie cyclically in (hole, their slot]. */
	j = i;
	for (;;) {
		m->keys[i] = 0;
		for (;;) {
			j = (j + 1) & mask;
			if (!m->keys[j])
				goto done;
			k = slot_of(m->keys[j], m->cap);
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		i = j;
	}
done:
	m->n--;
	return 1;
}

void sh5mpi_map_clear(struct sh5mpi_map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

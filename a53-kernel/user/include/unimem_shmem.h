/*
 * unimem_shmem.h: the OpenSHMEM core the unimem-c library implements in Rust (issue #25): the
 * standard routines it defines under their OpenSHMEM names, and the generic cores
 * (unimem_shmem_*) that the typed routines of <shmem.h> are written over (crt/shmem.c). Programs include <shmem.h>, which includes this.
 *
 * One PE per node (PE number = node number). Errors of the routines that return nothing (a
 * bad PE, an address that is not symmetric, a PE that is gone) end the program with a message
 * naming the call and the error.
 */
#ifndef UNIMEM_SHMEM_H
#define UNIMEM_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Library setup, exit and query (OpenSHMEM 1.5 section 9.1). shmem_init on PE 0 starts the
 * other PEs (the same program on nodes 1..N-1); a second call does nothing. */
void shmem_init(void);
void shmem_finalize(void);
int shmem_my_pe(void);
int shmem_n_pes(void);
/* Ends every PE of the job with status (0..255). */
void shmem_global_exit(int status) __attribute__((noreturn));
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
/* The local address of dest on pe when loads and stores reach it (this PE only), else NULL. */
void *shmem_ptr(const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);

/* The symmetric heap (collective: every PE makes the same calls in the same order). */
void *shmem_malloc(size_t size);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);

/* Contiguous RMA of bytes; ordering and completion. */
void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_quiet(void);
void shmem_fence(void);

/* Synchronisation of all PEs. */
void shmem_barrier_all(void);
void shmem_sync_all(void);

/* Distributed locks (a symmetric long, zero at first). */
void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

/* Signals. */
uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* The generic cores. op: 0 FETCH, 1 SET, 2 COMPARE_SWAP, 3 SWAP, 4 FETCH_ADD, 5 FETCH_AND,
 * 6 FETCH_OR, 7 FETCH_XOR; width 4 or 8 bytes; COMPARE_SWAP: value = new, compare = expected.
 * The old value, zero-extended. */
uint64_t unimem_shmem_atomic(int op, int width, void *dest, uint64_t value, uint64_t compare, int pe);
/* kind: width in bytes (1, 2, 4, 8) | 0x10 when signed; mode 0 ALL, 1 ANY, 2 SOME; block 1
 * waits, 0 tests; values NULL: every element against value, else n values of kind; status
 * NULL or n ints (non-zero: skipped); indices: out, for SOME. ALL: 1 when all met; ANY: the
 * index or SIZE_MAX; SOME: how many. */
size_t unimem_shmem_wait(int kind, int mode, int block, volatile void *ivars, size_t n, const int *status,
                         size_t *indices, int cmp, const void *values, uint64_t value);
/* sig_op 0 SET, 1 ADD; nbi 1 for the _nbi form. */
void unimem_shmem_put_signal(void *dest, const void *src, size_t nbytes, uint64_t *sig_addr, uint64_t signal,
                             int sig_op, int pe, int nbi);
/* Strided RMA: strides in elements, elem_size in bytes. */
void unimem_shmem_iput(void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                       size_t elem_size, int pe);
void unimem_shmem_iget(void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                       size_t elem_size, int pe);
/* Active sets: PEs start, start + stride, ... (size of them). 0, or non-zero on a bad set. */
int unimem_shmem_sync(int start, int stride, int size);
int unimem_shmem_barrier(int start, int stride, int size);
/* root: the root's index in the set; with_root 1: the root's dest is written too. */
int unimem_shmem_broadcast(void *dest, const void *src, size_t nbytes, int root, int with_root, int start,
                           int stride, int size);
int unimem_shmem_collect(void *dest, const void *src, size_t nbytes, int start, int stride, int size);
int unimem_shmem_fcollect(void *dest, const void *src, size_t nbytes, int start, int stride, int size);
int unimem_shmem_alltoall(void *dest, const void *src, size_t nbytes, int start, int stride, int size);
int unimem_shmem_alltoalls(void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                           size_t elem_size, int start, int stride, int size);
/* op: 0 AND, 1 OR, 2 XOR, 3 MAX, 4 MIN, 5 SUM, 6 PROD; type: width | class << 8 (0 signed,
 * 1 unsigned, 2 floating point, 3 complex). dest and src may be the same array. */
int unimem_shmem_reduce(int op, int type, void *dest, const void *src, size_t nreduce, int start, int stride,
                        int size);

#ifdef __cplusplus
}
#endif

#endif /* UNIMEM_SHMEM_H */

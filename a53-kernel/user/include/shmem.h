/*
 * shmem.h: OpenSHMEM 1.5 for C programs on Unimem (issue #25).
 *
 * One PE per node, PE number = node number; `cargo xtask run prog.c --nodes N` starts the
 * program on node 0 and shmem_init there starts PEs 1..N-1 (a53-kernel/user/crt/README.md,
 * "OpenSHMEM"). The core (setup, the symmetric heap, byte RMA, quiet and fence, barrier_all,
 * locks, signals, and the generic cores) is the unimem-c library's, in Rust
 * (<unimem_shmem.h>); the typed routines declared here, the teams, the contexts and the
 * deprecated names are the C runtime's, over that core (crt/shmem.c), built into every C
 * program and dropped at link when unused.
 *
 * What this implementation is:
 * - Teams are active sets (a start, a stride and a size in the world's PEs): SHMEM_TEAM_WORLD
 *   (every PE), SHMEM_TEAM_SHARED (this PE alone: no two PEs share memory), and the teams
 *   shmem_team_split_strided and shmem_team_split_2d make of them.
 * - One context underneath: shmem_ctx_create gives a context that is the default one under
 *   another handle; quiet and fence on any context complete every PE's operations.
 * - Threads: none. shmem_init_thread provides SHMEM_THREAD_SINGLE or SHMEM_THREAD_FUNNELED
 *   (what was asked, at most FUNNELED).
 * - pSync and pWrk arrays of the deprecated collectives are not used (the library keeps its own
 *   symmetric counters); programs may still declare and initialise them.
 * - The non-blocking fetching atomics complete before they return.
 * - An error (a bad PE, an address that is not symmetric, a PE that is gone, a bad active set
 *   in a routine that returns nothing, SHMEM_CTX_INVALID or SHMEM_TEAM_INVALID where a context
 *   or team must be) ends the program with a message naming the routine.
 *
 * aarch64: char is unsigned, long is 64 bits, long double is 128 bits (IEEE quad).
 */
#ifndef SHMEM_H
#define SHMEM_H

#include <stddef.h>
#include <stdint.h>
#include <unimem_shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- constants ---------------------------------------------------------------------------- */

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
/* What shmem_info_get_name gives (unimem_user::shmem::NAME, the core's). */
#define SHMEM_VENDOR_STRING "Unimem OpenSHMEM (unimem-user)"

#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

#define SHMEM_CTX_SERIALIZED 1
#define SHMEM_CTX_PRIVATE 2
#define SHMEM_CTX_NOSTORE 4

/* The comparisons of wait_until, test and signal_wait_until (the core's numbers). */
#define SHMEM_CMP_EQ 1
#define SHMEM_CMP_NE 2
#define SHMEM_CMP_GT 3
#define SHMEM_CMP_GE 4
#define SHMEM_CMP_LT 5
#define SHMEM_CMP_LE 6

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* shmem_team_config_t's members, for config_mask. */
#define SHMEM_TEAM_NUM_CONTEXTS 1

/* shmem_malloc_with_hints. */
#define SHMEM_MALLOC_ATOMICS_REMOTE 1
#define SHMEM_MALLOC_SIGNAL_REMOTE 2

/* The deprecated collectives' pSync and pWrk (not used here: any size works). */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 16
#define SHMEM_BCAST_SYNC_SIZE 16
#define SHMEM_BARRIER_SYNC_SIZE 16
#define SHMEM_REDUCE_SYNC_SIZE 16
#define SHMEM_COLLECT_SYNC_SIZE 16
#define SHMEM_ALLTOALL_SYNC_SIZE 16
#define SHMEM_ALLTOALLS_SYNC_SIZE 16
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 16

/* Deprecated spellings. */
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

/* ---- types and handles -------------------------------------------------------------------- */

typedef struct unimem_shmem_ctx *shmem_ctx_t;
typedef struct unimem_shmem_team *shmem_team_t;
typedef struct {
    int num_contexts;
} shmem_team_config_t;

/* The predefined handles (objects of crt/shmem.c). */
extern struct unimem_shmem_ctx unimem_shmem_ctx_default;
extern struct unimem_shmem_team unimem_shmem_team_world, unimem_shmem_team_shared;
#define SHMEM_CTX_DEFAULT (&unimem_shmem_ctx_default)
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)
#define SHMEM_TEAM_WORLD (&unimem_shmem_team_world)
#define SHMEM_TEAM_SHARED (&unimem_shmem_team_shared)
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)

/* ---- the type tables (OpenSHMEM 1.5, tables 5, 6, 7, 8, 10, 11) ----------------------------
 * Each calls X(TYPE, TYPENAME, CLASS, A): CLASS is the core's reduction class (0 signed
 * integer, 1 unsigned integer, 2 floating point, 3 complex), A is passed through. */

#define UNIMEM_SHMEM_RMA_TYPES(X, A)                                                              \
    X(float, float, 2, A) X(double, double, 2, A) X(long double, longdouble, 2, A) X(char, char, 1, A) \
    X(signed char, schar, 0, A) X(short, short, 0, A) X(int, int, 0, A) X(long, long, 0, A)          \
    X(long long, longlong, 0, A) X(unsigned char, uchar, 1, A) X(unsigned short, ushort, 1, A)       \
    X(unsigned int, uint, 1, A) X(unsigned long, ulong, 1, A) X(unsigned long long, ulonglong, 1, A) \
    X(int8_t, int8, 0, A) X(int16_t, int16, 0, A) X(int32_t, int32, 0, A) X(int64_t, int64, 0, A)    \
    X(uint8_t, uint8, 1, A) X(uint16_t, uint16, 1, A) X(uint32_t, uint32, 1, A)                      \
    X(uint64_t, uint64, 1, A) X(size_t, size, 1, A) X(ptrdiff_t, ptrdiff, 0, A)

/* The standard AMO types (fetch_add, inc, compare_swap, ...). */
#define UNIMEM_SHMEM_AMO_TYPES(X, A)                                                              \
    X(int, int, 0, A) X(long, long, 0, A) X(long long, longlong, 0, A) X(unsigned int, uint, 1, A)   \
    X(unsigned long, ulong, 1, A) X(unsigned long long, ulonglong, 1, A) X(int32_t, int32, 0, A)     \
    X(int64_t, int64, 0, A) X(uint32_t, uint32, 1, A) X(uint64_t, uint64, 1, A) X(size_t, size, 1, A) \
    X(ptrdiff_t, ptrdiff, 0, A)
/* The extended AMO types (fetch, set, swap) besides the standard ones. */
#define UNIMEM_SHMEM_AMO_EXTRA_TYPES(X, A) X(float, float, 2, A) X(double, double, 2, A)
#define UNIMEM_SHMEM_AMO_EXT_TYPES(X, A) UNIMEM_SHMEM_AMO_TYPES(X, A) UNIMEM_SHMEM_AMO_EXTRA_TYPES(X, A)
/* The bitwise AMO types. */
#define UNIMEM_SHMEM_AMO_BIT_TYPES(X, A)                                                          \
    X(unsigned int, uint, 1, A) X(unsigned long, ulong, 1, A) X(unsigned long long, ulonglong, 1, A) \
    X(int32_t, int32, 0, A) X(int64_t, int64, 0, A) X(uint32_t, uint32, 1, A) X(uint64_t, uint64, 1, A)
/* The point-to-point synchronisation types (wait_until, test). */
#define UNIMEM_SHMEM_P2P_TYPES(X, A)                                                              \
    X(short, short, 0, A) X(int, int, 0, A) X(long, long, 0, A) X(long long, longlong, 0, A)         \
    X(unsigned short, ushort, 1, A) X(unsigned int, uint, 1, A) X(unsigned long, ulong, 1, A)        \
    X(unsigned long long, ulonglong, 1, A) X(int32_t, int32, 0, A) X(int64_t, int64, 0, A)           \
    X(uint32_t, uint32, 1, A) X(uint64_t, uint64, 1, A) X(size_t, size, 1, A) X(ptrdiff_t, ptrdiff, 0, A)
/* The reduction types: bitwise (and, or, xor), ordered (max, min), arithmetic (sum, prod). */
#define UNIMEM_SHMEM_REDUCE_BIT_TYPES(X, A)                                                       \
    X(unsigned char, uchar, 1, A) X(unsigned short, ushort, 1, A) X(unsigned int, uint, 1, A)        \
    X(unsigned long, ulong, 1, A) X(unsigned long long, ulonglong, 1, A) X(int8_t, int8, 0, A)       \
    X(int16_t, int16, 0, A) X(int32_t, int32, 0, A) X(int64_t, int64, 0, A) X(uint8_t, uint8, 1, A)  \
    X(uint16_t, uint16, 1, A) X(uint32_t, uint32, 1, A) X(uint64_t, uint64, 1, A) X(size_t, size, 1, A)
#define UNIMEM_SHMEM_REDUCE_ORDERED_TYPES(X, A)                                                   \
    X(char, char, 1, A) X(signed char, schar, 0, A) X(short, short, 0, A) X(int, int, 0, A)          \
    X(long, long, 0, A) X(long long, longlong, 0, A) X(ptrdiff_t, ptrdiff, 0, A)                     \
    X(unsigned char, uchar, 1, A) X(unsigned short, ushort, 1, A) X(unsigned int, uint, 1, A)        \
    X(unsigned long, ulong, 1, A) X(unsigned long long, ulonglong, 1, A) X(int8_t, int8, 0, A)       \
    X(int16_t, int16, 0, A) X(int32_t, int32, 0, A) X(int64_t, int64, 0, A) X(uint8_t, uint8, 1, A)  \
    X(uint16_t, uint16, 1, A) X(uint32_t, uint32, 1, A) X(uint64_t, uint64, 1, A) X(size_t, size, 1, A) \
    X(float, float, 2, A) X(double, double, 2, A) X(long double, longdouble, 2, A)
#define UNIMEM_SHMEM_REDUCE_COMPLEX_TYPES(X, A)                                                   \
    X(double _Complex, complexd, 3, A) X(float _Complex, complexf, 3, A)
#define UNIMEM_SHMEM_REDUCE_ARITH_TYPES(X, A)                                                     \
    UNIMEM_SHMEM_REDUCE_ORDERED_TYPES(X, A) UNIMEM_SHMEM_REDUCE_COMPLEX_TYPES(X, A)
/* The deprecated shmem_TYPE_OP_to_all's types. */
#define UNIMEM_SHMEM_TO_ALL_BIT_TYPES(X, A)                                                       \
    X(short, short, 0, A) X(int, int, 0, A) X(long, long, 0, A) X(long long, longlong, 0, A)
#define UNIMEM_SHMEM_TO_ALL_ORDERED_TYPES(X, A)                                                   \
    UNIMEM_SHMEM_TO_ALL_BIT_TYPES(X, A) X(float, float, 2, A) X(double, double, 2, A)                \
    X(long double, longdouble, 2, A)
#define UNIMEM_SHMEM_TO_ALL_ARITH_TYPES(X, A)                                                     \
    UNIMEM_SHMEM_TO_ALL_ORDERED_TYPES(X, A) UNIMEM_SHMEM_REDUCE_COMPLEX_TYPES(X, A)
/* The deprecated atomics' types (shmem_TYPE_fadd, ...; swap, fetch and set have the extra). */
#define UNIMEM_SHMEM_OLD_AMO_TYPES(X, A) X(int, int, 0, A) X(long, long, 0, A) X(long long, longlong, 0, A)
#define UNIMEM_SHMEM_OLD_AMO_EXT_TYPES(X, A) UNIMEM_SHMEM_OLD_AMO_TYPES(X, A) UNIMEM_SHMEM_AMO_EXTRA_TYPES(X, A)
/* The deprecated shmem_TYPE_wait's types. */
#define UNIMEM_SHMEM_OLD_WAIT_TYPES(X, A) UNIMEM_SHMEM_TO_ALL_BIT_TYPES(X, A)
/* The sized RMA routines: X(BITS, BYTES, 0, A). */
#define UNIMEM_SHMEM_SIZES(X, A) X(8, 1, 0, A) X(16, 2, 0, A) X(32, 4, 0, A) X(64, 8, 0, A) X(128, 16, 0, A)

/* The reduction operations: X(OP, core number, 0, A). */
#define UNIMEM_SHMEM_BIT_OPS(X, A) X(and, 0, 0, A) X(or, 1, 0, A) X(xor, 2, 0, A)
#define UNIMEM_SHMEM_ORDERED_OPS(X, A) X(max, 3, 0, A) X(min, 4, 0, A)
#define UNIMEM_SHMEM_ARITH_OPS(X, A) X(sum, 5, 0, A) X(prod, 6, 0, A)

/* ---- the typed routines' prototypes, table by table --------------------------------------- */

#define UNIMEM_SHMEM_DECL_RMA(T, N, C, A)                                                         \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe);                       \
    void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);  \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe);                       \
    void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);  \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe);                   \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe);                   \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void shmem_##N##_p(T *dest, T value, int pe);                                                \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe);                           \
    T shmem_##N##_g(const T *source, int pe);                                                    \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);                               \
    void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, \
                              size_t nelems, int pe);                                            \
    void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, \
                              size_t nelems, int pe);                                            \
    void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,     \
                                uint64_t signal, int sig_op, int pe);                            \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,    \
                                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);    \
    void shmem_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems, uint64_t *sig_addr, \
                                    uint64_t signal, int sig_op, int pe);                        \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, \
                                        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems, int PE_root); \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems);         \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems);        \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems);        \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, \
                              size_t nelems);
UNIMEM_SHMEM_RMA_TYPES(UNIMEM_SHMEM_DECL_RMA, 0)

#define UNIMEM_SHMEM_DECL_SIZED(BITS, BYTES, C, A)                                                \
    void shmem_put##BITS(void *dest, const void *source, size_t nelems, int pe);                 \
    void shmem_ctx_put##BITS(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_get##BITS(void *dest, const void *source, size_t nelems, int pe);                 \
    void shmem_ctx_get##BITS(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_put##BITS##_nbi(void *dest, const void *source, size_t nelems, int pe);           \
    void shmem_ctx_put##BITS##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_get##BITS##_nbi(void *dest, const void *source, size_t nelems, int pe);           \
    void shmem_ctx_get##BITS##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_iput##BITS(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_iput##BITS(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                              size_t nelems, int pe);                                            \
    void shmem_iget##BITS(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_iget##BITS(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                              size_t nelems, int pe);                                            \
    void shmem_put##BITS##_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, \
                                  uint64_t signal, int sig_op, int pe);                          \
    void shmem_ctx_put##BITS##_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, \
                                      uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);  \
    void shmem_put##BITS##_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, \
                                      uint64_t signal, int sig_op, int pe);                      \
    void shmem_ctx_put##BITS##_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, \
                                          uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
UNIMEM_SHMEM_SIZES(UNIMEM_SHMEM_DECL_SIZED, 0)

/* Byte RMA on a context (the forms without one are the core's), and byte signals. */
void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                         int sig_op, int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe);
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                             int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                                 uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void shmem_ctx_quiet(shmem_ctx_t ctx);
void shmem_ctx_fence(shmem_ctx_t ctx);

/* Atomics: the extended types' fetch, set, swap; the standard types' the rest. */
#define UNIMEM_SHMEM_DECL_AMO_EXT(T, N, C, A)                                                     \
    T shmem_##N##_atomic_fetch(const T *source, int pe);                                         \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe);                    \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe);                        \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source, int pe);   \
    void shmem_##N##_atomic_set(T *dest, T value, int pe);                                       \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value, int pe);                  \
    T shmem_##N##_atomic_swap(T *dest, T value, int pe);                                         \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe);                    \
    void shmem_##N##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe);                        \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
UNIMEM_SHMEM_AMO_EXT_TYPES(UNIMEM_SHMEM_DECL_AMO_EXT, 0)

#define UNIMEM_SHMEM_DECL_AMO(T, N, C, A)                                                         \
    T shmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe);                         \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond, T value, int pe);    \
    void shmem_##N##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond, T value, int pe);        \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T cond, T value, int pe); \
    T shmem_##N##_atomic_fetch_inc(T *dest, int pe);                                             \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe);                        \
    void shmem_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe);                            \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch, T *dest, int pe);       \
    void shmem_##N##_atomic_inc(T *dest, int pe);                                                \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe);                           \
    T shmem_##N##_atomic_fetch_add(T *dest, T value, int pe);                                    \
    T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value, int pe);               \
    void shmem_##N##_atomic_fetch_add_nbi(T *fetch, T *dest, T value, int pe);                   \
    void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe); \
    void shmem_##N##_atomic_add(T *dest, T value, int pe);                                       \
    void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest, T value, int pe);
UNIMEM_SHMEM_AMO_TYPES(UNIMEM_SHMEM_DECL_AMO, 0)

#define UNIMEM_SHMEM_DECL_AMO_BIT_OP(T, N, OP)                                                    \
    T shmem_##N##_atomic_fetch_##OP(T *dest, T value, int pe);                                   \
    T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);              \
    void shmem_##N##_atomic_fetch_##OP##_nbi(T *fetch, T *dest, T value, int pe);                \
    void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe); \
    void shmem_##N##_atomic_##OP(T *dest, T value, int pe);                                      \
    void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);
#define UNIMEM_SHMEM_DECL_AMO_BIT(T, N, C, A)                                                     \
    UNIMEM_SHMEM_DECL_AMO_BIT_OP(T, N, and) UNIMEM_SHMEM_DECL_AMO_BIT_OP(T, N, or)               \
    UNIMEM_SHMEM_DECL_AMO_BIT_OP(T, N, xor)
UNIMEM_SHMEM_AMO_BIT_TYPES(UNIMEM_SHMEM_DECL_AMO_BIT, 0)

/* Point-to-point synchronisation. */
#define UNIMEM_SHMEM_DECL_P2P(T, N, C, A)                                                         \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value);                                  \
    void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, \
                                       T cmp_value);                                             \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status, int cmp,  \
                                           T *cmp_values);                                       \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems, const int *status, int cmp, \
                                             T *cmp_values);                                     \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices, const int *status, \
                                              int cmp, T *cmp_values);                           \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value);                                         \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value);  \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, \
                                 T cmp_value);                                                   \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values); \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values); \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, \
                                        T *cmp_values);
UNIMEM_SHMEM_P2P_TYPES(UNIMEM_SHMEM_DECL_P2P, 0)

/* Reductions over a team, and the deprecated ones over an active set. */
#define UNIMEM_SHMEM_DECL_REDUCE(OP, K, Z, T, N)                                                  \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);
#define UNIMEM_SHMEM_DECL_REDUCE_TYPE(T, N, C, OPS) OPS(UNIMEM_SHMEM_DECL_REDUCE_OP, (T, N))
#define UNIMEM_SHMEM_DECL_REDUCE_OP(OP, K, Z, TN) UNIMEM_SHMEM_DECL_REDUCE_ID(OP, K, Z, UNIMEM_SHMEM_UNPAREN TN)
#define UNIMEM_SHMEM_UNPAREN(...) __VA_ARGS__
#define UNIMEM_SHMEM_DECL_REDUCE_ID(...) UNIMEM_SHMEM_DECL_REDUCE(__VA_ARGS__)
UNIMEM_SHMEM_REDUCE_BIT_TYPES(UNIMEM_SHMEM_DECL_REDUCE_TYPE, UNIMEM_SHMEM_BIT_OPS)
UNIMEM_SHMEM_REDUCE_ORDERED_TYPES(UNIMEM_SHMEM_DECL_REDUCE_TYPE, UNIMEM_SHMEM_ORDERED_OPS)
UNIMEM_SHMEM_REDUCE_ARITH_TYPES(UNIMEM_SHMEM_DECL_REDUCE_TYPE, UNIMEM_SHMEM_ARITH_OPS)

#define UNIMEM_SHMEM_DECL_TO_ALL(OP, K, Z, T, N)                                                  \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int PE_start, int logPE_stride, \
                                   int PE_size, T *pWrk, long *pSync);
#define UNIMEM_SHMEM_DECL_TO_ALL_TYPE(T, N, C, OPS) OPS(UNIMEM_SHMEM_DECL_TO_ALL_OP, (T, N))
#define UNIMEM_SHMEM_DECL_TO_ALL_OP(OP, K, Z, TN) UNIMEM_SHMEM_DECL_TO_ALL_ID(OP, K, Z, UNIMEM_SHMEM_UNPAREN TN)
#define UNIMEM_SHMEM_DECL_TO_ALL_ID(...) UNIMEM_SHMEM_DECL_TO_ALL(__VA_ARGS__)
UNIMEM_SHMEM_TO_ALL_BIT_TYPES(UNIMEM_SHMEM_DECL_TO_ALL_TYPE, UNIMEM_SHMEM_BIT_OPS)
UNIMEM_SHMEM_TO_ALL_ORDERED_TYPES(UNIMEM_SHMEM_DECL_TO_ALL_TYPE, UNIMEM_SHMEM_ORDERED_OPS)
UNIMEM_SHMEM_TO_ALL_ARITH_TYPES(UNIMEM_SHMEM_DECL_TO_ALL_TYPE, UNIMEM_SHMEM_ARITH_OPS)

/* Byte collectives over a team. */
int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems);

/* The deprecated collectives over an active set (PE_start, 1 << logPE_stride, PE_size). */
#define UNIMEM_SHMEM_DECL_OLD_COLL(BITS)                                                          \
    void shmem_broadcast##BITS(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, \
                               int logPE_stride, int PE_size, long *pSync);                      \
    void shmem_collect##BITS(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, \
                             int PE_size, long *pSync);                                          \
    void shmem_fcollect##BITS(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, \
                              int PE_size, long *pSync);                                         \
    void shmem_alltoall##BITS(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, \
                              int PE_size, long *pSync);                                         \
    void shmem_alltoalls##BITS(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, \
                               int PE_start, int logPE_stride, int PE_size, long *pSync);
UNIMEM_SHMEM_DECL_OLD_COLL(32)
UNIMEM_SHMEM_DECL_OLD_COLL(64)
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
/* The deprecated shmem_sync(PE_start, logPE_stride, PE_size, pSync) (shmem_sync below picks it
 * by its number of arguments). */
void unimem_shmem_sync_active_set(int PE_start, int logPE_stride, int PE_size, long *pSync);

/* Teams. */
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config,
                        long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);
int shmem_team_sync(shmem_team_t team);
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);

/* Contexts. */
int shmem_ctx_create(long options, shmem_ctx_t *ctx);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* Threads (there are none: SINGLE or FUNNELED), hints, profiling. */
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void *shmem_malloc_with_hints(size_t size, long hints);
/* Profiling control: there is no profiling interface, so every level changes nothing. */
void shmem_pcontrol(const int level, ...);

/* Deprecated names. */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shrealloc(void *ptr, size_t size);
void *shmemalign(size_t alignment, size_t size);
/* The cache routines: memory is coherent here, so each does nothing, as OpenSHMEM says. */
void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);

#define UNIMEM_SHMEM_DECL_OLD_AMO(T, N, C, A)                                                     \
    T shmem_##N##_fadd(T *dest, T value, int pe);                                                \
    T shmem_##N##_finc(T *dest, int pe);                                                         \
    void shmem_##N##_add(T *dest, T value, int pe);                                              \
    void shmem_##N##_inc(T *dest, int pe);                                                       \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe);
UNIMEM_SHMEM_OLD_AMO_TYPES(UNIMEM_SHMEM_DECL_OLD_AMO, 0)
#define UNIMEM_SHMEM_DECL_OLD_AMO_EXT(T, N, C, A)                                                 \
    T shmem_##N##_swap(T *dest, T value, int pe);                                                \
    T shmem_##N##_fetch(const T *source, int pe);                                                \
    void shmem_##N##_set(T *dest, T value, int pe);
UNIMEM_SHMEM_OLD_AMO_EXT_TYPES(UNIMEM_SHMEM_DECL_OLD_AMO_EXT, 0)
#define UNIMEM_SHMEM_DECL_OLD_WAIT(T, N, C, A) void shmem_##N##_wait(T *ivar, T cmp_value);
UNIMEM_SHMEM_OLD_WAIT_TYPES(UNIMEM_SHMEM_DECL_OLD_WAIT, 0)

#ifdef __cplusplus
}
#endif

/* ---- the C11 generic routines ------------------------------------------------------------- */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L

/* The generic tables hold C's own types only (int32_t is int, int64_t is long, ...). */
#define UNIMEM_SHMEM_G_RMA_TYPES(X, A)                                                            \
    X(float, float, 2, A) X(double, double, 2, A) X(long double, longdouble, 2, A) X(char, char, 1, A) \
    X(signed char, schar, 0, A) X(short, short, 0, A) X(int, int, 0, A) X(long, long, 0, A)          \
    X(long long, longlong, 0, A) X(unsigned char, uchar, 1, A) X(unsigned short, ushort, 1, A)       \
    X(unsigned int, uint, 1, A) X(unsigned long, ulong, 1, A) X(unsigned long long, ulonglong, 1, A)
#define UNIMEM_SHMEM_G_AMO_TYPES(X, A)                                                            \
    X(int, int, 0, A) X(long, long, 0, A) X(long long, longlong, 0, A) X(unsigned int, uint, 1, A)   \
    X(unsigned long, ulong, 1, A) X(unsigned long long, ulonglong, 1, A)
#define UNIMEM_SHMEM_G_AMO_EXT_TYPES(X, A) UNIMEM_SHMEM_G_AMO_TYPES(X, A) UNIMEM_SHMEM_AMO_EXTRA_TYPES(X, A)
#define UNIMEM_SHMEM_G_AMO_BIT_TYPES(X, A)                                                        \
    X(unsigned int, uint, 1, A) X(unsigned long, ulong, 1, A) X(unsigned long long, ulonglong, 1, A) \
    X(int, int32, 0, A) X(long, int64, 0, A)
#define UNIMEM_SHMEM_G_P2P_TYPES(X, A)                                                            \
    X(short, short, 0, A) X(int, int, 0, A) X(long, long, 0, A) X(long long, longlong, 0, A)         \
    X(unsigned short, ushort, 1, A) X(unsigned int, uint, 1, A) X(unsigned long, ulong, 1, A)        \
    X(unsigned long long, ulonglong, 1, A)
#define UNIMEM_SHMEM_G_REDUCE_BIT_TYPES(X, A)                                                     \
    X(unsigned char, uchar, 1, A) X(unsigned short, ushort, 1, A) X(unsigned int, uint, 1, A)        \
    X(unsigned long, ulong, 1, A) X(unsigned long long, ulonglong, 1, A) X(signed char, int8, 0, A)  \
    X(short, int16, 0, A) X(int, int32, 0, A) X(long, int64, 0, A)
#define UNIMEM_SHMEM_G_REDUCE_ORDERED_TYPES(X, A)                                                 \
    X(char, char, 1, A) X(signed char, schar, 0, A) X(short, short, 0, A) X(int, int, 0, A)          \
    X(long, long, 0, A) X(long long, longlong, 0, A) X(unsigned char, uchar, 1, A)                   \
    X(unsigned short, ushort, 1, A) X(unsigned int, uint, 1, A) X(unsigned long, ulong, 1, A)        \
    X(unsigned long long, ulonglong, 1, A) X(float, float, 2, A) X(double, double, 2, A)             \
    X(long double, longdouble, 2, A)
#define UNIMEM_SHMEM_G_REDUCE_ARITH_TYPES(X, A)                                                   \
    UNIMEM_SHMEM_G_REDUCE_ORDERED_TYPES(X, A) UNIMEM_SHMEM_REDUCE_COMPLEX_TYPES(X, A)

#define UNIMEM_SHMEM_ARG1(a, ...) a
#define UNIMEM_SHMEM_ARG2(a, b, ...) b
/* One association: `TYPE *: shmem_TYPENAME_OP`, with a context, from a const pointer. */
#define UNIMEM_SHMEM_G(T, N, C, OP) T *: shmem_##N##_##OP,
#define UNIMEM_SHMEM_G_CTX(T, N, C, OP) T *: shmem_ctx_##N##_##OP,
#define UNIMEM_SHMEM_G_CONST(T, N, C, OP) T *: shmem_##N##_##OP, const T *: shmem_##N##_##OP,
#define UNIMEM_SHMEM_G_CTX_CONST(T, N, C, OP) T *: shmem_ctx_##N##_##OP, const T *: shmem_ctx_##N##_##OP,

/* A routine with a context form: picked by its first argument's type, or, when that is a
 * context, by its second's. A type without a routine does not compile. */
#define UNIMEM_SHMEM_GENERIC_CTX(TYPES, OP, ...)                                                  \
    _Generic(UNIMEM_SHMEM_ARG1(__VA_ARGS__, 0),                                                  \
        shmem_ctx_t: _Generic(UNIMEM_SHMEM_ARG2(__VA_ARGS__, 0, 0),                              \
            TYPES(UNIMEM_SHMEM_G_CTX, OP) default: 0),                                           \
        TYPES(UNIMEM_SHMEM_G, OP) struct unimem_shmem_no_such_type *: 0)(__VA_ARGS__)
#define UNIMEM_SHMEM_GENERIC_CTX_CONST(TYPES, OP, ...)                                            \
    _Generic(UNIMEM_SHMEM_ARG1(__VA_ARGS__, 0),                                                  \
        shmem_ctx_t: _Generic(UNIMEM_SHMEM_ARG2(__VA_ARGS__, 0, 0),                              \
            TYPES(UNIMEM_SHMEM_G_CTX_CONST, OP) default: 0),                                     \
        TYPES(UNIMEM_SHMEM_G_CONST, OP) struct unimem_shmem_no_such_type *: 0)(__VA_ARGS__)
/* A routine without one, picked by its first or its second argument's type. */
#define UNIMEM_SHMEM_GENERIC1(TYPES, OP, ...)                                                     \
    _Generic(UNIMEM_SHMEM_ARG1(__VA_ARGS__, 0), TYPES(UNIMEM_SHMEM_G, OP)                        \
        struct unimem_shmem_no_such_type *: 0)(__VA_ARGS__)
#define UNIMEM_SHMEM_GENERIC1_CONST(TYPES, OP, ...)                                               \
    _Generic(UNIMEM_SHMEM_ARG1(__VA_ARGS__, 0), TYPES(UNIMEM_SHMEM_G_CONST, OP)                  \
        struct unimem_shmem_no_such_type *: 0)(__VA_ARGS__)
#define UNIMEM_SHMEM_GENERIC2(TYPES, OP, ...)                                                     \
    _Generic(UNIMEM_SHMEM_ARG2(__VA_ARGS__, 0, 0), TYPES(UNIMEM_SHMEM_G, OP)                     \
        struct unimem_shmem_no_such_type *: 0)(__VA_ARGS__)

/* RMA. */
#define shmem_put(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_RMA_TYPES, put, __VA_ARGS__)
#define shmem_get(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_RMA_TYPES, get, __VA_ARGS__)
#define shmem_put_nbi(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_RMA_TYPES, put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_RMA_TYPES, get_nbi, __VA_ARGS__)
#define shmem_p(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_RMA_TYPES, p, __VA_ARGS__)
#define shmem_g(...) UNIMEM_SHMEM_GENERIC_CTX_CONST(UNIMEM_SHMEM_G_RMA_TYPES, g, __VA_ARGS__)
#define shmem_iput(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_RMA_TYPES, iput, __VA_ARGS__)
#define shmem_iget(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_RMA_TYPES, iget, __VA_ARGS__)
#define shmem_put_signal(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_RMA_TYPES, put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_RMA_TYPES, put_signal_nbi, __VA_ARGS__)

/* Atomics. */
#define shmem_atomic_fetch(...) UNIMEM_SHMEM_GENERIC_CTX_CONST(UNIMEM_SHMEM_G_AMO_EXT_TYPES, atomic_fetch, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_EXT_TYPES, atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_set(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_EXT_TYPES, atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_EXT_TYPES, atomic_swap, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_EXT_TYPES, atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap(...)                                                            \
    UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_TYPES, atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...)                                                        \
    UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_TYPES, atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_TYPES, atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...)                                                           \
    UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_TYPES, atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_inc(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_TYPES, atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_TYPES, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...)                                                           \
    UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_TYPES, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_add(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_TYPES, atomic_add, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_BIT_TYPES, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...)                                                           \
    UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_BIT_TYPES, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_and(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_BIT_TYPES, atomic_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_BIT_TYPES, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...)                                                            \
    UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_BIT_TYPES, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_or(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_BIT_TYPES, atomic_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_BIT_TYPES, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...)                                                           \
    UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_BIT_TYPES, atomic_fetch_xor_nbi, __VA_ARGS__)
#define shmem_atomic_xor(...) UNIMEM_SHMEM_GENERIC_CTX(UNIMEM_SHMEM_G_AMO_BIT_TYPES, atomic_xor, __VA_ARGS__)

/* Point-to-point synchronisation. */
#define shmem_wait_until(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, wait_until, __VA_ARGS__)
#define shmem_wait_until_all(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, wait_until_all, __VA_ARGS__)
#define shmem_wait_until_any(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, wait_until_any, __VA_ARGS__)
#define shmem_wait_until_some(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, wait_until_some, __VA_ARGS__)
#define shmem_wait_until_all_vector(...)                                                          \
    UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, wait_until_all_vector, __VA_ARGS__)
#define shmem_wait_until_any_vector(...)                                                          \
    UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, wait_until_any_vector, __VA_ARGS__)
#define shmem_wait_until_some_vector(...)                                                         \
    UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, wait_until_some_vector, __VA_ARGS__)
#define shmem_test(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, test, __VA_ARGS__)
#define shmem_test_all(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, test_all, __VA_ARGS__)
#define shmem_test_any(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, test_any, __VA_ARGS__)
#define shmem_test_some(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, test_some, __VA_ARGS__)
#define shmem_test_all_vector(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, test_all_vector, __VA_ARGS__)
#define shmem_test_any_vector(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, test_any_vector, __VA_ARGS__)
#define shmem_test_some_vector(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_G_P2P_TYPES, test_some_vector, __VA_ARGS__)

/* Collectives over a team, picked by dest (the second argument). */
#define shmem_and_reduce(...) UNIMEM_SHMEM_GENERIC2(UNIMEM_SHMEM_G_REDUCE_BIT_TYPES, and_reduce, __VA_ARGS__)
#define shmem_or_reduce(...) UNIMEM_SHMEM_GENERIC2(UNIMEM_SHMEM_G_REDUCE_BIT_TYPES, or_reduce, __VA_ARGS__)
#define shmem_xor_reduce(...) UNIMEM_SHMEM_GENERIC2(UNIMEM_SHMEM_G_REDUCE_BIT_TYPES, xor_reduce, __VA_ARGS__)
#define shmem_max_reduce(...) UNIMEM_SHMEM_GENERIC2(UNIMEM_SHMEM_G_REDUCE_ORDERED_TYPES, max_reduce, __VA_ARGS__)
#define shmem_min_reduce(...) UNIMEM_SHMEM_GENERIC2(UNIMEM_SHMEM_G_REDUCE_ORDERED_TYPES, min_reduce, __VA_ARGS__)
#define shmem_sum_reduce(...) UNIMEM_SHMEM_GENERIC2(UNIMEM_SHMEM_G_REDUCE_ARITH_TYPES, sum_reduce, __VA_ARGS__)
#define shmem_prod_reduce(...) UNIMEM_SHMEM_GENERIC2(UNIMEM_SHMEM_G_REDUCE_ARITH_TYPES, prod_reduce, __VA_ARGS__)
#define shmem_broadcast(...) UNIMEM_SHMEM_GENERIC2(UNIMEM_SHMEM_G_RMA_TYPES, broadcast, __VA_ARGS__)
#define shmem_collect(...) UNIMEM_SHMEM_GENERIC2(UNIMEM_SHMEM_G_RMA_TYPES, collect, __VA_ARGS__)
#define shmem_fcollect(...) UNIMEM_SHMEM_GENERIC2(UNIMEM_SHMEM_G_RMA_TYPES, fcollect, __VA_ARGS__)
#define shmem_alltoall(...) UNIMEM_SHMEM_GENERIC2(UNIMEM_SHMEM_G_RMA_TYPES, alltoall, __VA_ARGS__)
#define shmem_alltoalls(...) UNIMEM_SHMEM_GENERIC2(UNIMEM_SHMEM_G_RMA_TYPES, alltoalls, __VA_ARGS__)

/* The deprecated generic atomics and wait. */
#define shmem_fadd(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_OLD_AMO_TYPES, fadd, __VA_ARGS__)
#define shmem_finc(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_OLD_AMO_TYPES, finc, __VA_ARGS__)
#define shmem_add(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_OLD_AMO_TYPES, add, __VA_ARGS__)
#define shmem_inc(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_OLD_AMO_TYPES, inc, __VA_ARGS__)
#define shmem_cswap(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_OLD_AMO_TYPES, cswap, __VA_ARGS__)
#define shmem_swap(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_OLD_AMO_EXT_TYPES, swap, __VA_ARGS__)
#define shmem_fetch(...) UNIMEM_SHMEM_GENERIC1_CONST(UNIMEM_SHMEM_OLD_AMO_EXT_TYPES, fetch, __VA_ARGS__)
#define shmem_set(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_OLD_AMO_EXT_TYPES, set, __VA_ARGS__)
#define shmem_wait(...) UNIMEM_SHMEM_GENERIC1(UNIMEM_SHMEM_OLD_WAIT_TYPES, wait, __VA_ARGS__)

#endif /* C11 */

/* shmem_sync(team), or the deprecated shmem_sync(PE_start, logPE_stride, PE_size, pSync): by
 * the number of arguments. */
#define UNIMEM_SHMEM_PICK5(a, b, c, d, e, ...) e
#define shmem_sync(...)                                                                           \
    UNIMEM_SHMEM_PICK5(__VA_ARGS__, unimem_shmem_sync_active_set, 0, 0, shmem_team_sync, 0)(__VA_ARGS__)

#endif /* SHMEM_H */

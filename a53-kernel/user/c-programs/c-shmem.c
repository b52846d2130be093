/*
 * c-shmem: every routine of shmem.h, from C, each result checked, on every PE (one per node).
 *
 *   cargo xtask run c-shmem --nodes 4            every routine; each PE prints its verdict
 *   cargo xtask run c-shmem --nodes 2 -- MODE    one of the modes below
 *
 * The typed routines are reached family by family through the type tables of shmem.h (the
 * X-macros UNIMEM_SHMEM_*_TYPES, the same tables that declare them): one checking function per
 * type and family, each calling every routine of its family for that type, with and without a
 * context. Each PE operates on the next PE (me + 1 mod n) and checks what the previous one did
 * to it. The verdict line of each PE is "c-shmem PE k: N of M checks failed" and it exits with
 * N (at most 255).
 *
 * Modes (PE 0 reads its argument and gives it to the others after initialisation, so they
 * need not see the arguments):
 *   start-pes     the deprecated start-up: start_pes, _my_pe, _num_pes, shmalloc and friends
 *   global-exit   the last PE calls shmem_global_exit(7): every PE ends with status 7
 *   bad-ctx       PE 0 uses SHMEM_CTX_INVALID: "shmem_ctx_int_p: SHMEM_CTX_INVALID, exit
 *                 status 0x401"
 *   bad-put       PE 0 puts to an address that is not symmetric (a malloc'd one)
 *   bad-pe        PE 0 puts to PE n (out of range)
 *   bad-free      PE 0 calls shmem_free on a pointer malloc gave
 *   dead-barrier  the last PE exits with status 3, the others enter shmem_barrier_all
 * In the bad modes the library must end PE 0 with a message, and the others, waiting in
 * shmem_barrier_all, must end too (with the library's message that PE 0 is gone); "c-shmem PE
 * k: ... returned" is printed should a call return.
 */
#include "checks.h"

#include <complex.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Elements per array, and the most PEs (nodes) a run has. */
#define NEL 16
#define MAX_PES 8
/* The value PE p keeps at index i of its source arrays: small enough for every type. */
#define VAL(p, i) ((p) * 8 + (i) % 8 + 1)

static int me, npes, next, prev;
static shmem_ctx_t ctx;

/* Whether all `n` elements of `a` equal `expect` (an expression of i). */
#define ALL(n, a, expect)                                                                         \
    ({                                                                                           \
        int ok_ = 1;                                                                             \
        for (int i = 0; i < (n); i++)                                                            \
            ok_ &= (a)[i] == (expect);                                                           \
        ok_;                                                                                     \
    })
#define CLEAR(a) memset((a), 0, sizeof(a))

/* ---- RMA and collectives, per standard RMA type --------------------------------------------- */

#define RMA_FAMILY(T, N, C, A)                                                                    \
    static void rma_##N(void)                                                                    \
    {                                                                                            \
        static T src[NEL], dst[NEL], big[NEL * MAX_PES];                                          \
        static uint64_t sig;                                                                     \
        uint64_t signals = 0;                                                                    \
        for (int i = 0; i < NEL; i++)                                                            \
            src[i] = (T)VAL(me, i);                                                              \
        /* put, get and their context and non-blocking forms */                                  \
        CLEAR(dst);                                                                              \
        shmem_barrier_all();                                                                     \
        shmem_##N##_put(dst, src, NEL, next);                                                    \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_put", ALL(NEL, dst, (T)VAL(prev, i)));                               \
        CLEAR(dst);                                                                              \
        shmem_barrier_all();                                                                     \
        shmem_ctx_##N##_put(ctx, dst, src, NEL, next);                                           \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_ctx_" #N "_put", ALL(NEL, dst, (T)VAL(prev, i)));                           \
        CLEAR(dst);                                                                              \
        shmem_barrier_all();                                                                     \
        shmem_##N##_put_nbi(dst, src, NEL / 2, next);                                            \
        shmem_ctx_##N##_put_nbi(ctx, dst + NEL / 2, src + NEL / 2, NEL / 2, next);               \
        shmem_quiet();                                                                           \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_put_nbi", ALL(NEL, dst, (T)VAL(prev, i)));                           \
        CLEAR(dst);                                                                              \
        shmem_##N##_get(dst, src, NEL, next);                                                    \
        CHECK("shmem_" #N "_get", ALL(NEL, dst, (T)VAL(next, i)));                               \
        CLEAR(dst);                                                                              \
        shmem_ctx_##N##_get(ctx, dst, src, NEL, next);                                           \
        CHECK("shmem_ctx_" #N "_get", ALL(NEL, dst, (T)VAL(next, i)));                           \
        CLEAR(dst);                                                                              \
        shmem_##N##_get_nbi(dst, src, NEL / 2, next);                                            \
        shmem_ctx_##N##_get_nbi(ctx, dst + NEL / 2, src + NEL / 2, NEL / 2, next);               \
        shmem_ctx_quiet(ctx);                                                                    \
        CHECK("shmem_" #N "_get_nbi", ALL(NEL, dst, (T)VAL(next, i)));                           \
        /* p and g */                                                                            \
        CLEAR(dst);                                                                              \
        shmem_barrier_all();                                                                     \
        shmem_##N##_p(&dst[1], src[3], next);                                                    \
        shmem_ctx_##N##_p(ctx, &dst[2], src[4], next);                                           \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_p", dst[1] == (T)VAL(prev, 3) && dst[2] == (T)VAL(prev, 4));         \
        CHECK("shmem_" #N "_g", shmem_##N##_g(&src[5], next) == (T)VAL(next, 5));                \
        CHECK("shmem_ctx_" #N "_g", shmem_ctx_##N##_g(ctx, &src[6], next) == (T)VAL(next, 6));   \
        /* strided */                                                                            \
        CLEAR(dst);                                                                              \
        shmem_barrier_all();                                                                     \
        shmem_##N##_iput(dst, src, 2, 1, NEL / 2, next);                                         \
        shmem_ctx_##N##_iput(ctx, dst + 1, src + NEL / 2, 2, 1, NEL / 2, next);                  \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_iput",                                                               \
              ALL(NEL, dst, (T)(i % 2 == 0 ? VAL(prev, i / 2) : VAL(prev, NEL / 2 + i / 2))));   \
        CLEAR(dst);                                                                              \
        shmem_##N##_iget(dst, src, 1, 2, NEL / 2, next);                                         \
        CHECK("shmem_" #N "_iget", ALL(NEL / 2, dst, (T)VAL(next, 2 * i)));                      \
        CLEAR(dst);                                                                              \
        shmem_ctx_##N##_iget(ctx, dst, src + 1, 3, 2, NEL / 4, next);                            \
        CHECK("shmem_ctx_" #N "_iget", dst[0] == (T)VAL(next, 1) && dst[3] == (T)VAL(next, 3) &&   \
                                           dst[6] == (T)VAL(next, 5) && dst[9] == (T)VAL(next, 7) && \
                                           dst[1] == 0);                                         \
        /* signals: each put adds 1 to the next PE's sig */                                      \
        CLEAR(dst);                                                                              \
        sig = 0;                                                                                 \
        shmem_barrier_all();                                                                     \
        shmem_##N##_put_signal(dst, src, 4, &sig, 1, SHMEM_SIGNAL_ADD, next);                    \
        shmem_ctx_##N##_put_signal(ctx, dst + 4, src + 4, 4, &sig, 1, SHMEM_SIGNAL_ADD, next);   \
        shmem_##N##_put_signal_nbi(dst + 8, src + 8, 4, &sig, 1, SHMEM_SIGNAL_ADD, next);        \
        shmem_ctx_##N##_put_signal_nbi(ctx, dst + 12, src + 12, 4, &sig, 1, SHMEM_SIGNAL_ADD, next); \
        signals = shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 4);                                \
        CHECK("shmem_" #N "_put_signal", signals == 4 && ALL(NEL, dst, (T)VAL(prev, i)));        \
        CHECK("shmem_signal_fetch", shmem_signal_fetch(&sig) == 4);                              \
        shmem_barrier_all();                                                                     \
        /* team collectives over SHMEM_TEAM_WORLD */                                             \
        CLEAR(dst);                                                                              \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_broadcast", shmem_##N##_broadcast(SHMEM_TEAM_WORLD, dst, src, NEL, npes - 1) == 0); \
        CHECK("shmem_" #N "_broadcast: data", ALL(NEL, dst, (T)VAL(npes - 1, i)));              \
        CLEAR(big);                                                                              \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_collect", shmem_##N##_collect(SHMEM_TEAM_WORLD, big, src, me + 1) == 0); \
        for (int p = 0, at = 0; p < npes; at += p + 1, p++)                                      \
            CHECK("shmem_" #N "_collect: data", ALL(p + 1, big + at, (T)VAL(p, i)));              \
        CLEAR(big);                                                                              \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_fcollect", shmem_##N##_fcollect(SHMEM_TEAM_WORLD, big, src, NEL) == 0); \
        CHECK("shmem_" #N "_fcollect: data", ALL(NEL * npes, big, (T)VAL(i / NEL, i % NEL)));     \
        CLEAR(big);                                                                              \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_alltoall", shmem_##N##_alltoall(SHMEM_TEAM_WORLD, big, src, 2) == 0); \
        CHECK("shmem_" #N "_alltoall: data", ALL(2 * npes, big, (T)VAL(i / 2, me * 2 + i % 2)));  \
        CLEAR(big);                                                                              \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_alltoalls",                                                          \
              shmem_##N##_alltoalls(SHMEM_TEAM_WORLD, big, src, 2, 1, 1) == 0);                  \
        CHECK("shmem_" #N "_alltoalls: data", ALL(2 * npes, big, (T)(i % 2 ? 0 : VAL(i / 2, me)))); \
        shmem_barrier_all();                                                                     \
    }
UNIMEM_SHMEM_RMA_TYPES(RMA_FAMILY, 0)

/* The sized routines (putSIZE, ...), on bytes. */
#define SIZED_FAMILY(BITS, BYTES, C, A)                                                           \
    static void sized_##BITS(void)                                                               \
    {                                                                                            \
        static uint8_t src[NEL * BYTES], dst[NEL * BYTES];                                       \
        static uint64_t sig;                                                                     \
        for (int i = 0; i < NEL * BYTES; i++)                                                    \
            src[i] = (uint8_t)VAL(me, i);                                                        \
        CLEAR(dst);                                                                              \
        shmem_barrier_all();                                                                     \
        shmem_put##BITS(dst, src, NEL / 4, next);                                                \
        shmem_ctx_put##BITS(ctx, dst + NEL / 4 * BYTES, src + NEL / 4 * BYTES, NEL / 4, next);   \
        shmem_put##BITS##_nbi(dst + NEL / 2 * BYTES, src + NEL / 2 * BYTES, NEL / 4, next);      \
        shmem_ctx_put##BITS##_nbi(ctx, dst + 3 * NEL / 4 * BYTES, src + 3 * NEL / 4 * BYTES, NEL / 4, next); \
        shmem_quiet();                                                                           \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_put" #BITS, ALL(NEL * BYTES, dst, (uint8_t)VAL(prev, i)));                  \
        CLEAR(dst);                                                                              \
        shmem_get##BITS(dst, src, NEL / 4, next);                                                \
        shmem_ctx_get##BITS(ctx, dst + NEL / 4 * BYTES, src + NEL / 4 * BYTES, NEL / 4, next);   \
        shmem_get##BITS##_nbi(dst + NEL / 2 * BYTES, src + NEL / 2 * BYTES, NEL / 4, next);      \
        shmem_ctx_get##BITS##_nbi(ctx, dst + 3 * NEL / 4 * BYTES, src + 3 * NEL / 4 * BYTES, NEL / 4, next); \
        shmem_quiet();                                                                           \
        CHECK("shmem_get" #BITS, ALL(NEL * BYTES, dst, (uint8_t)VAL(next, i)));                  \
        CLEAR(dst);                                                                              \
        shmem_barrier_all();                                                                     \
        /* element k of the source to element 2k of the destination */                           \
        shmem_iput##BITS(dst, src, 2, 1, NEL / 4, next);                                         \
        shmem_ctx_iput##BITS(ctx, dst + BYTES, src + NEL / 4 * BYTES, 2, 1, NEL / 4, next);      \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_iput" #BITS,                                                                \
              ALL(NEL / 2 * BYTES, dst,                                                          \
                  (uint8_t)VAL(prev, (i / BYTES % 2 ? NEL / 4 * BYTES : 0) + i / BYTES / 2 * BYTES + i % BYTES))); \
        CLEAR(dst);                                                                              \
        shmem_iget##BITS(dst, src, 1, 2, NEL / 4, next);                                         \
        shmem_ctx_iget##BITS(ctx, dst + NEL / 4 * BYTES, src + BYTES, 1, 2, NEL / 4, next);      \
        CHECK("shmem_iget" #BITS,                                                                \
              ALL(NEL / 2 * BYTES, dst,                                                          \
                  (uint8_t)VAL(next, (i / BYTES % (NEL / 4)) * 2 * BYTES + (i / BYTES >= NEL / 4 ? BYTES : 0) + \
                                         i % BYTES)));                                           \
        CLEAR(dst);                                                                              \
        sig = 0;                                                                                 \
        shmem_barrier_all();                                                                     \
        shmem_put##BITS##_signal(dst, src, 1, &sig, 1, SHMEM_SIGNAL_ADD, next);                  \
        shmem_ctx_put##BITS##_signal(ctx, dst + BYTES, src + BYTES, 1, &sig, 1, SHMEM_SIGNAL_ADD, next); \
        shmem_put##BITS##_signal_nbi(dst + 2 * BYTES, src + 2 * BYTES, 1, &sig, 1, SHMEM_SIGNAL_ADD, next); \
        /* the adds before the set */                                                            \
        shmem_fence();                                                                           \
        shmem_ctx_put##BITS##_signal_nbi(ctx, dst + 3 * BYTES, src + 3 * BYTES, 1, &sig, 5, SHMEM_SIGNAL_SET, \
                                         next);                                                  \
        shmem_quiet();                                                                           \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_put" #BITS "_signal", sig == 5 && ALL(4 * BYTES, dst, (uint8_t)VAL(prev, i))); \
        shmem_barrier_all();                                                                     \
    }
UNIMEM_SHMEM_SIZES(SIZED_FAMILY, 0)

/* Byte RMA on a context, byte signals and byte collectives. */
static void bytes(void)
{
    static char src[64], dst[64 * MAX_PES];
    static uint64_t sig;
    for (int i = 0; i < 64; i++)
        src[i] = (char)VAL(me, i);
    CLEAR(dst);
    shmem_barrier_all();
    shmem_putmem(dst, src, 16, next);
    shmem_ctx_putmem(ctx, dst + 16, src + 16, 16, next);
    shmem_putmem_nbi(dst + 32, src + 32, 16, next);
    shmem_ctx_putmem_nbi(ctx, dst + 48, src + 48, 16, next);
    shmem_fence();
    shmem_ctx_fence(ctx);
    shmem_quiet();
    shmem_barrier_all();
    CHECK("shmem_putmem", ALL(64, dst, (char)VAL(prev, i)));
    CLEAR(dst);
    shmem_getmem(dst, src, 16, next);
    shmem_ctx_getmem(ctx, dst + 16, src + 16, 16, next);
    shmem_getmem_nbi(dst + 32, src + 32, 16, next);
    shmem_ctx_getmem_nbi(ctx, dst + 48, src + 48, 16, next);
    shmem_quiet();
    CHECK("shmem_getmem", ALL(64, dst, (char)VAL(next, i)));
    CLEAR(dst);
    sig = 0;
    shmem_barrier_all();
    shmem_putmem_signal(dst, src, 8, &sig, 1, SHMEM_SIGNAL_ADD, next);
    shmem_ctx_putmem_signal(ctx, dst + 8, src + 8, 8, &sig, 1, SHMEM_SIGNAL_ADD, next);
    shmem_putmem_signal_nbi(dst + 16, src + 16, 8, &sig, 1, SHMEM_SIGNAL_ADD, next);
    shmem_ctx_putmem_signal_nbi(ctx, dst + 24, src + 24, 8, &sig, 1, SHMEM_SIGNAL_ADD, next);
    CHECK("shmem_putmem_signal", shmem_signal_wait_until(&sig, SHMEM_CMP_GE, 4) == 4 && ALL(32, dst, (char)VAL(prev, i)));
    shmem_barrier_all();

    CLEAR(dst);
    shmem_barrier_all();
    CHECK("shmem_broadcastmem", shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, 64, 0) == 0);
    CHECK("shmem_broadcastmem: data", ALL(64, dst, (char)VAL(0, i)));
    CLEAR(dst);
    shmem_barrier_all();
    CHECK("shmem_collectmem", shmem_collectmem(SHMEM_TEAM_WORLD, dst, src, (size_t)me + 1) == 0);
    for (int p = 0, at = 0; p < npes; at += p + 1, p++)
        CHECK("shmem_collectmem: data", ALL(p + 1, dst + at, (char)VAL(p, i)));
    CLEAR(dst);
    shmem_barrier_all();
    CHECK("shmem_fcollectmem", shmem_fcollectmem(SHMEM_TEAM_WORLD, dst, src, 8) == 0);
    CHECK("shmem_fcollectmem: data", ALL(8 * npes, dst, (char)VAL(i / 8, i % 8)));
    CLEAR(dst);
    shmem_barrier_all();
    CHECK("shmem_alltoallmem", shmem_alltoallmem(SHMEM_TEAM_WORLD, dst, src, 4) == 0);
    CHECK("shmem_alltoallmem: data", ALL(4 * npes, dst, (char)VAL(i / 4, me * 4 + i % 4)));
    CLEAR(dst);
    shmem_barrier_all();
    CHECK("shmem_alltoallsmem", shmem_alltoallsmem(SHMEM_TEAM_WORLD, dst, src, 2, 1, 1) == 0);
    CHECK("shmem_alltoallsmem: data", ALL(2 * npes, dst, (char)(i % 2 ? 0 : VAL(i / 2, me))));
    shmem_barrier_all();
}

/* The deprecated collectives over active sets: all PEs, then the even ones (logPE_stride 1). */
static void old_collectives(void)
{
    static long psync[SHMEM_BCAST_SYNC_SIZE > SHMEM_COLLECT_SYNC_SIZE ? SHMEM_BCAST_SYNC_SIZE : SHMEM_COLLECT_SYNC_SIZE];
    static long psync_all[SHMEM_ALLTOALL_SYNC_SIZE], psync_alls[SHMEM_ALLTOALLS_SYNC_SIZE];
    static long psync_barrier[SHMEM_BARRIER_SYNC_SIZE];
    static uint32_t s32[NEL], d32[NEL * MAX_PES];
    static uint64_t s64[NEL], d64[NEL * MAX_PES];
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < NEL; i++) {
        s32[i] = (uint32_t)VAL(me, i);
        s64[i] = (uint64_t)VAL(me, i) << 32;
    }
    CLEAR(d32);
    CLEAR(d64);
    shmem_barrier_all();
    shmem_broadcast32(d32, s32, NEL, 0, 0, 0, npes, psync);
    shmem_barrier(0, 0, npes, psync_barrier);
    shmem_broadcast64(d64, s64, NEL, npes - 1, 0, 0, npes, psync);
    shmem_barrier(0, 0, npes, psync_barrier);
    /* the deprecated broadcast leaves the root's dest alone */
    CHECK("shmem_broadcast32", me == 0 ? ALL(NEL, d32, 0) : ALL(NEL, d32, (uint32_t)VAL(0, i)));
    CHECK("shmem_broadcast64", me == npes - 1 ? ALL(NEL, d64, 0) : ALL(NEL, d64, (uint64_t)VAL(npes - 1, i) << 32));
    CLEAR(d32);
    CLEAR(d64);
    shmem_barrier_all();
    shmem_collect32(d32, s32, (size_t)me + 1, 0, 0, npes, psync);
    shmem_sync(0, 0, npes, psync_barrier);
    shmem_collect64(d64, s64, (size_t)me + 1, 0, 0, npes, psync);
    shmem_sync(0, 0, npes, psync_barrier);
    for (int p = 0, at = 0; p < npes; at += p + 1, p++) {
        CHECK("shmem_collect32", ALL(p + 1, d32 + at, (uint32_t)VAL(p, i)));
        CHECK("shmem_collect64", ALL(p + 1, d64 + at, (uint64_t)VAL(p, i) << 32));
    }
    CLEAR(d32);
    CLEAR(d64);
    shmem_barrier_all();
    shmem_fcollect32(d32, s32, 2, 0, 0, npes, psync);
    shmem_barrier_all();
    shmem_fcollect64(d64, s64, 2, 0, 0, npes, psync);
    shmem_barrier_all();
    CHECK("shmem_fcollect32", ALL(2 * npes, d32, (uint32_t)VAL(i / 2, i % 2)));
    CHECK("shmem_fcollect64", ALL(2 * npes, d64, (uint64_t)VAL(i / 2, i % 2) << 32));
    CLEAR(d32);
    CLEAR(d64);
    shmem_barrier_all();
    shmem_alltoall32(d32, s32, 2, 0, 0, npes, psync_all);
    shmem_barrier_all();
    shmem_alltoall64(d64, s64, 2, 0, 0, npes, psync_all);
    shmem_barrier_all();
    CHECK("shmem_alltoall32", ALL(2 * npes, d32, (uint32_t)VAL(i / 2, me * 2 + i % 2)));
    CHECK("shmem_alltoall64", ALL(2 * npes, d64, (uint64_t)VAL(i / 2, me * 2 + i % 2) << 32));
    CLEAR(d32);
    CLEAR(d64);
    shmem_barrier_all();
    shmem_alltoalls32(d32, s32, 2, 1, 1, 0, 0, npes, psync_alls);
    shmem_barrier_all();
    shmem_alltoalls64(d64, s64, 2, 1, 1, 0, 0, npes, psync_alls);
    shmem_barrier_all();
    CHECK("shmem_alltoalls32", ALL(2 * npes, d32, (uint32_t)(i % 2 ? 0 : VAL(i / 2, me))));
    CHECK("shmem_alltoalls64", ALL(2 * npes, d64, (uint64_t)(i % 2 ? 0 : VAL(i / 2, me)) << 32));

    /* The even PEs alone: a barrier, a broadcast and a sum of theirs. */
    int evens = (npes + 1) / 2;
    static int isrc[4], idst[4], iwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static long psync_reduce[SHMEM_REDUCE_SYNC_SIZE];
    for (int i = 0; i < 4; i++)
        isrc[i] = me + i;
    CLEAR(d32);
    shmem_barrier_all();
    if (me % 2 == 0) {
        shmem_barrier(0, 1, evens, psync_barrier);
        shmem_broadcast32(d32, s32, 4, evens - 1, 0, 1, evens, psync);
        CHECK("shmem_broadcast32 on the even PEs",
              me == 2 * (evens - 1) ? ALL(4, d32, 0) : ALL(4, d32, (uint32_t)VAL(2 * (evens - 1), i)));
        shmem_int_sum_to_all(idst, isrc, 4, 0, 1, evens, iwrk, psync_reduce);
        int sum = 0;
        for (int p = 0; p < npes; p += 2)
            sum += p;
        CHECK("shmem_int_sum_to_all on the even PEs", ALL(4, idst, sum + evens * i));
        shmem_sync(0, 1, evens, psync_barrier);
    }
    shmem_barrier_all();
}

/* ---- atomics ---------------------------------------------------------------------------------- */

/* fetch, set, swap (the extended types): each PE on the next one's v. */
#define AMO_EXT_FAMILY(T, N, C, A)                                                                \
    static void amo_ext_##N(void)                                                                \
    {                                                                                            \
        static T v;                                                                              \
        T r = 0;                                                                                 \
        v = 0;                                                                                   \
        shmem_barrier_all();                                                                     \
        shmem_##N##_atomic_set(&v, (T)5, next);                                                  \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_atomic_set", v == (T)5);                                             \
        CHECK("shmem_" #N "_atomic_fetch", shmem_##N##_atomic_fetch(&v, next) == (T)5);          \
        shmem_barrier_all();                                                                     \
        shmem_ctx_##N##_atomic_set(ctx, &v, (T)6, next);                                         \
        shmem_fence();                                                                           \
        CHECK("shmem_ctx_" #N "_atomic_fetch", shmem_ctx_##N##_atomic_fetch(ctx, &v, next) == (T)6); \
        CHECK("shmem_" #N "_atomic_swap", shmem_##N##_atomic_swap(&v, (T)7, next) == (T)6);      \
        CHECK("shmem_ctx_" #N "_atomic_swap", shmem_ctx_##N##_atomic_swap(ctx, &v, (T)8, next) == (T)7); \
        shmem_##N##_atomic_swap_nbi(&r, &v, (T)9, next);                                         \
        shmem_quiet();                                                                           \
        CHECK("shmem_" #N "_atomic_swap_nbi", r == (T)8);                                        \
        shmem_ctx_##N##_atomic_swap_nbi(ctx, &r, &v, (T)10, next);                               \
        shmem_ctx_quiet(ctx);                                                                    \
        CHECK("shmem_ctx_" #N "_atomic_swap_nbi", r == (T)9);                                    \
        shmem_##N##_atomic_fetch_nbi(&r, &v, next);                                              \
        shmem_quiet();                                                                           \
        CHECK("shmem_" #N "_atomic_fetch_nbi", r == (T)10);                                      \
        r = 0;                                                                                   \
        shmem_ctx_##N##_atomic_fetch_nbi(ctx, &r, &v, next);                                     \
        shmem_quiet();                                                                           \
        CHECK("shmem_ctx_" #N "_atomic_fetch_nbi", r == (T)10);                                  \
        shmem_barrier_all();                                                                     \
        CHECK("the extended atomics' last value", v == (T)10);                                   \
        shmem_barrier_all();                                                                     \
    }
UNIMEM_SHMEM_AMO_EXT_TYPES(AMO_EXT_FAMILY, 0)

/* compare_swap, inc, add and their fetching and non-blocking forms (the standard types). */
#define AMO_FAMILY(T, N, C, A)                                                                    \
    static void amo_##N(void)                                                                    \
    {                                                                                            \
        static T v;                                                                              \
        T r = 0;                                                                                 \
        v = (T)6;                                                                                \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_atomic_fetch_add", shmem_##N##_atomic_fetch_add(&v, (T)2, next) == (T)6); \
        CHECK("shmem_ctx_" #N "_atomic_fetch_add", shmem_ctx_##N##_atomic_fetch_add(ctx, &v, (T)1, next) == (T)8); \
        shmem_##N##_atomic_add(&v, (T)3, next);                                                  \
        shmem_ctx_##N##_atomic_add(ctx, &v, (T)1, next);                                         \
        shmem_##N##_atomic_inc(&v, next);                                                        \
        shmem_ctx_##N##_atomic_inc(ctx, &v, next);                                               \
        shmem_fence();                                                                           \
        CHECK("shmem_" #N "_atomic_fetch_inc", shmem_##N##_atomic_fetch_inc(&v, next) == (T)15); \
        CHECK("shmem_ctx_" #N "_atomic_fetch_inc", shmem_ctx_##N##_atomic_fetch_inc(ctx, &v, next) == (T)16); \
        shmem_##N##_atomic_fetch_add_nbi(&r, &v, (T)1, next);                                    \
        shmem_quiet();                                                                           \
        CHECK("shmem_" #N "_atomic_fetch_add_nbi", r == (T)17);                                  \
        shmem_ctx_##N##_atomic_fetch_add_nbi(ctx, &r, &v, (T)1, next);                           \
        shmem_quiet();                                                                           \
        CHECK("shmem_ctx_" #N "_atomic_fetch_add_nbi", r == (T)18);                              \
        shmem_##N##_atomic_fetch_inc_nbi(&r, &v, next);                                          \
        shmem_quiet();                                                                           \
        CHECK("shmem_" #N "_atomic_fetch_inc_nbi", r == (T)19);                                  \
        shmem_ctx_##N##_atomic_fetch_inc_nbi(ctx, &r, &v, next);                                 \
        shmem_quiet();                                                                           \
        CHECK("shmem_ctx_" #N "_atomic_fetch_inc_nbi", r == (T)20);                              \
        CHECK("shmem_" #N "_atomic_compare_swap", shmem_##N##_atomic_compare_swap(&v, (T)21, (T)30, next) == (T)21); \
        CHECK("shmem_" #N "_atomic_compare_swap: no swap",                                       \
              shmem_##N##_atomic_compare_swap(&v, (T)99, (T)31, next) == (T)30);                 \
        CHECK("shmem_ctx_" #N "_atomic_compare_swap",                                            \
              shmem_ctx_##N##_atomic_compare_swap(ctx, &v, (T)30, (T)32, next) == (T)30);        \
        shmem_##N##_atomic_compare_swap_nbi(&r, &v, (T)32, (T)33, next);                         \
        shmem_quiet();                                                                           \
        CHECK("shmem_" #N "_atomic_compare_swap_nbi", r == (T)32);                               \
        shmem_ctx_##N##_atomic_compare_swap_nbi(ctx, &r, &v, (T)33, (T)34, next);                \
        shmem_quiet();                                                                           \
        CHECK("shmem_ctx_" #N "_atomic_compare_swap_nbi", r == (T)33);                           \
        shmem_barrier_all();                                                                     \
        CHECK("the standard atomics' last value", v == (T)34);                                   \
        shmem_barrier_all();                                                                     \
    }
UNIMEM_SHMEM_AMO_TYPES(AMO_FAMILY, 0)

/* and, or, xor and their fetching and non-blocking forms (the bitwise types). */
#define AMO_BIT_FAMILY(T, N, C, A)                                                                \
    static void amo_bit_##N(void)                                                                \
    {                                                                                            \
        static T v;                                                                              \
        T r = 0;                                                                                 \
        v = (T)0xF0;                                                                             \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_atomic_fetch_and", shmem_##N##_atomic_fetch_and(&v, (T)0x3C, next) == (T)0xF0); \
        CHECK("shmem_ctx_" #N "_atomic_fetch_and", shmem_ctx_##N##_atomic_fetch_and(ctx, &v, (T)0x3F, next) == (T)0x30); \
        shmem_##N##_atomic_and(&v, (T)0x1F, next);                                               \
        shmem_ctx_##N##_atomic_and(ctx, &v, (T)0xFF, next);                                      \
        shmem_fence();                                                                           \
        CHECK("shmem_" #N "_atomic_fetch_or", shmem_##N##_atomic_fetch_or(&v, (T)0x01, next) == (T)0x10); \
        CHECK("shmem_ctx_" #N "_atomic_fetch_or", shmem_ctx_##N##_atomic_fetch_or(ctx, &v, (T)0x02, next) == (T)0x11); \
        shmem_##N##_atomic_or(&v, (T)0x04, next);                                                \
        shmem_ctx_##N##_atomic_or(ctx, &v, (T)0x08, next);                                       \
        shmem_fence();                                                                           \
        CHECK("shmem_" #N "_atomic_fetch_xor", shmem_##N##_atomic_fetch_xor(&v, (T)0x0F, next) == (T)0x1F); \
        CHECK("shmem_ctx_" #N "_atomic_fetch_xor", shmem_ctx_##N##_atomic_fetch_xor(ctx, &v, (T)0x01, next) == (T)0x10); \
        shmem_##N##_atomic_xor(&v, (T)0x11, next);                                               \
        shmem_ctx_##N##_atomic_xor(ctx, &v, (T)0x80, next);                                      \
        shmem_fence();                                                                           \
        shmem_##N##_atomic_fetch_and_nbi(&r, &v, (T)0xC0, next);                                 \
        shmem_quiet();                                                                           \
        CHECK("shmem_" #N "_atomic_fetch_and_nbi", r == (T)0x80);                                \
        shmem_ctx_##N##_atomic_fetch_and_nbi(ctx, &r, &v, (T)0x80, next);                        \
        shmem_quiet();                                                                           \
        CHECK("shmem_ctx_" #N "_atomic_fetch_and_nbi", r == (T)0x80);                            \
        shmem_##N##_atomic_fetch_or_nbi(&r, &v, (T)0x01, next);                                  \
        shmem_quiet();                                                                           \
        CHECK("shmem_" #N "_atomic_fetch_or_nbi", r == (T)0x80);                                 \
        shmem_ctx_##N##_atomic_fetch_or_nbi(ctx, &r, &v, (T)0x02, next);                         \
        shmem_quiet();                                                                           \
        CHECK("shmem_ctx_" #N "_atomic_fetch_or_nbi", r == (T)0x81);                             \
        shmem_##N##_atomic_fetch_xor_nbi(&r, &v, (T)0x03, next);                                 \
        shmem_quiet();                                                                           \
        CHECK("shmem_" #N "_atomic_fetch_xor_nbi", r == (T)0x83);                                \
        shmem_ctx_##N##_atomic_fetch_xor_nbi(ctx, &r, &v, (T)0x80, next);                        \
        shmem_quiet();                                                                           \
        CHECK("shmem_ctx_" #N "_atomic_fetch_xor_nbi", r == (T)0x80);                            \
        shmem_barrier_all();                                                                     \
        CHECK("the bitwise atomics' last value", v == (T)0);                                     \
        shmem_barrier_all();                                                                     \
    }
UNIMEM_SHMEM_AMO_BIT_TYPES(AMO_BIT_FAMILY, 0)

/* The deprecated atomics. */
#define OLD_AMO_FAMILY(T, N, C, A)                                                                \
    static void old_amo_##N(void)                                                                \
    {                                                                                            \
        static T v;                                                                              \
        v = (T)1;                                                                                \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_fadd", shmem_##N##_fadd(&v, (T)2, next) == (T)1);                    \
        CHECK("shmem_" #N "_finc", shmem_##N##_finc(&v, next) == (T)3);                          \
        shmem_##N##_add(&v, (T)3, next);                                                         \
        shmem_##N##_inc(&v, next);                                                               \
        shmem_fence();                                                                           \
        CHECK("shmem_" #N "_cswap", shmem_##N##_cswap(&v, (T)8, (T)9, next) == (T)8);            \
        shmem_barrier_all();                                                                     \
        CHECK("the deprecated atomics' last value", v == (T)9);                                  \
        shmem_barrier_all();                                                                     \
    }
UNIMEM_SHMEM_OLD_AMO_TYPES(OLD_AMO_FAMILY, 0)
#define OLD_AMO_EXT_FAMILY(T, N, C, A)                                                            \
    static void old_amo_ext_##N(void)                                                            \
    {                                                                                            \
        static T v;                                                                              \
        v = (T)0;                                                                                \
        shmem_barrier_all();                                                                     \
        shmem_##N##_set(&v, (T)4, next);                                                         \
        shmem_fence();                                                                           \
        CHECK("shmem_" #N "_fetch", shmem_##N##_fetch(&v, next) == (T)4);                        \
        CHECK("shmem_" #N "_swap", shmem_##N##_swap(&v, (T)5, next) == (T)4);                    \
        shmem_barrier_all();                                                                     \
        CHECK("the deprecated extended atomics' last value", v == (T)5);                         \
        shmem_barrier_all();                                                                     \
    }
UNIMEM_SHMEM_OLD_AMO_EXT_TYPES(OLD_AMO_EXT_FAMILY, 0)

/* ---- point-to-point synchronisation ------------------------------------------------------------ */

#define P2P_FAMILY(T, N, C, A)                                                                    \
    static void p2p_##N(void)                                                                    \
    {                                                                                            \
        static T ivars[4], flag, neg;                                                            \
        T cmp[4] = {1, 2, 3, 4}, some[4] = {1, 0, 3, 0};                                         \
        int status[4] = {1, 1, 0, 0};                                                            \
        size_t idx[4] = {0};                                                                     \
        CLEAR(ivars);                                                                            \
        flag = 0;                                                                                \
        neg = (T)-1;                                                                             \
        shmem_barrier_all();                                                                     \
        /* real waits: the previous PE writes while this one waits */                            \
        shmem_##N##_p(&flag, (T)1, next);                                                        \
        shmem_##N##_wait_until(&flag, SHMEM_CMP_EQ, (T)1);                                       \
        for (int k = 0; k < 4; k++)                                                              \
            shmem_##N##_p(&ivars[k], (T)(k + 1), next);                                          \
        shmem_##N##_wait_until_all(ivars, 4, NULL, SHMEM_CMP_GT, (T)0);                          \
        CHECK("shmem_" #N "_wait_until_all", ALL(4, ivars, (T)(i + 1)));                         \
        CHECK("shmem_" #N "_wait_until_any", shmem_##N##_wait_until_any(ivars, 4, status, SHMEM_CMP_EQ, (T)3) == 2); \
        CHECK("shmem_" #N "_wait_until_some",                                                    \
              shmem_##N##_wait_until_some(ivars, 4, idx, NULL, SHMEM_CMP_GE, (T)2) == 3 && idx[0] == 1 && idx[2] == 3); \
        shmem_##N##_wait_until_all_vector(ivars, 4, NULL, SHMEM_CMP_EQ, cmp);                    \
        CHECK("shmem_" #N "_wait_until_any_vector",                                              \
              shmem_##N##_wait_until_any_vector(ivars, 4, status, SHMEM_CMP_LE, cmp) >= 2);      \
        CHECK("shmem_" #N "_wait_until_some_vector",                                             \
              shmem_##N##_wait_until_some_vector(ivars, 4, idx, NULL, SHMEM_CMP_EQ, some) == 2 && idx[1] == 2); \
        CHECK("shmem_" #N "_test", shmem_##N##_test(&flag, SHMEM_CMP_EQ, (T)1) == 1);            \
        CHECK("shmem_" #N "_test: NE", shmem_##N##_test(&flag, SHMEM_CMP_NE, (T)1) == 0);        \
        CHECK("shmem_" #N "_test: GT LT", shmem_##N##_test(&flag, SHMEM_CMP_GT, (T)0) == 1 &&     \
                                              shmem_##N##_test(&flag, SHMEM_CMP_LT, (T)1) == 0); \
        CHECK("shmem_" #N "_test: GE LE", shmem_##N##_test(&flag, SHMEM_CMP_GE, (T)2) == 0 &&     \
                                              shmem_##N##_test(&flag, SHMEM_CMP_LE, (T)1) == 1); \
        CHECK("shmem_" #N "_test: signed", shmem_##N##_test(&neg, SHMEM_CMP_LT, (T)0) == ((T)-1 < (T)0)); \
        CHECK("shmem_" #N "_test_all", shmem_##N##_test_all(ivars, 4, NULL, SHMEM_CMP_GT, (T)0) == 1 && \
                                           shmem_##N##_test_all(ivars, 4, NULL, SHMEM_CMP_GT, (T)1) == 0); \
        CHECK("shmem_" #N "_test_any", shmem_##N##_test_any(ivars, 4, NULL, SHMEM_CMP_EQ, (T)4) == 3 && \
                                           shmem_##N##_test_any(ivars, 4, NULL, SHMEM_CMP_EQ, (T)9) == SIZE_MAX); \
        CHECK("shmem_" #N "_test_some", shmem_##N##_test_some(ivars, 4, idx, NULL, SHMEM_CMP_LE, (T)2) == 2); \
        CHECK("shmem_" #N "_test_all_vector", shmem_##N##_test_all_vector(ivars, 4, NULL, SHMEM_CMP_EQ, cmp) == 1); \
        CHECK("shmem_" #N "_test_any_vector",                                                    \
              shmem_##N##_test_any_vector(ivars, 4, NULL, SHMEM_CMP_NE, cmp) == SIZE_MAX);       \
        CHECK("shmem_" #N "_test_some_vector",                                                   \
              shmem_##N##_test_some_vector(ivars, 4, idx, status, SHMEM_CMP_EQ, some) == 1 && idx[0] == 2); \
        shmem_barrier_all();                                                                     \
    }
UNIMEM_SHMEM_P2P_TYPES(P2P_FAMILY, 0)

#define OLD_WAIT_FAMILY(T, N, C, A)                                                               \
    static void old_wait_##N(void)                                                               \
    {                                                                                            \
        static T flag;                                                                           \
        flag = 0;                                                                                \
        shmem_barrier_all();                                                                     \
        shmem_##N##_p(&flag, (T)2, next);                                                        \
        shmem_##N##_wait(&flag, (T)0);                                                           \
        CHECK("shmem_" #N "_wait", flag == (T)2);                                                \
        shmem_barrier_all();                                                                     \
    }
UNIMEM_SHMEM_OLD_WAIT_TYPES(OLD_WAIT_FAMILY, 0)

/* ---- reductions -------------------------------------------------------------------------------- */

/* The value PE p reduces at index i, and how two combine, per operation. */
#define RV(T, p, i) ((T)(((p) + (i)) % 2 + 1))
#define COMBINE_and(T, a, b) ((T)((a) & (b)))
#define COMBINE_or(T, a, b) ((T)((a) | (b)))
#define COMBINE_xor(T, a, b) ((T)((a) ^ (b)))
#define COMBINE_max(T, a, b) ((a) > (b) ? (a) : (b))
#define COMBINE_min(T, a, b) ((a) < (b) ? (a) : (b))
#define COMBINE_sum(T, a, b) ((T)((a) + (b)))
#define COMBINE_prod(T, a, b) ((T)((a) * (b)))

#define REDUCE_CHECK(OP, K, Z, T, N, C)                                                           \
    static void reduce_##N##_##OP(void)                                                          \
    {                                                                                            \
        static T src[4], dst[4], wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];                             \
        static long psync[SHMEM_REDUCE_SYNC_SIZE];                                               \
        T expect[4];                                                                             \
        for (int i = 0; i < 4; i++) {                                                            \
            src[i] = RV(T, me, i);                                                               \
            expect[i] = RV(T, 0, i);                                                             \
            for (int p = 1; p < npes; p++)                                                       \
                expect[i] = COMBINE_##OP(T, expect[i], RV(T, p, i));                             \
        }                                                                                        \
        CLEAR(dst);                                                                              \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_" #OP "_reduce", shmem_##N##_##OP##_reduce(SHMEM_TEAM_WORLD, dst, src, 4) == 0); \
        CHECK("shmem_" #N "_" #OP "_reduce: data", ALL(4, dst, expect[i]));                       \
        shmem_barrier_all();                                                                     \
        CHECK("shmem_" #N "_" #OP "_reduce in place",                                            \
              shmem_##N##_##OP##_reduce(SHMEM_TEAM_WORLD, src, src, 4) == 0 && ALL(4, src, expect[i])); \
        shmem_barrier_all();                                                                     \
        (void)wrk;                                                                               \
        (void)psync;                                                                             \
    }
#define TO_ALL_CHECK(OP, K, Z, T, N, C)                                                           \
    static void to_all_##N##_##OP(void)                                                          \
    {                                                                                            \
        static T src[4], dst[4], wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 4];                         \
        static long psync[SHMEM_REDUCE_SYNC_SIZE];                                               \
        T expect[4];                                                                             \
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)                                         \
            psync[i] = SHMEM_SYNC_VALUE;                                                         \
        for (int i = 0; i < 4; i++) {                                                            \
            src[i] = RV(T, me, i);                                                               \
            expect[i] = RV(T, 0, i);                                                             \
            for (int p = 1; p < npes; p++)                                                       \
                expect[i] = COMBINE_##OP(T, expect[i], RV(T, p, i));                             \
        }                                                                                        \
        CLEAR(dst);                                                                              \
        shmem_barrier_all();                                                                     \
        shmem_##N##_##OP##_to_all(dst, src, 4, 0, 0, npes, wrk, psync);                          \
        CHECK("shmem_" #N "_" #OP "_to_all", ALL(4, dst, expect[i]));                            \
        shmem_barrier_all();                                                                     \
    }
#define CHECK_TYPE(T, N, C, OPS) OPS(CHECK_OP, (T, N, C))
#define CHECK_OP(OP, K, Z, TNC) CHECK_ID(OP, K, Z, UNIMEM_SHMEM_UNPAREN TNC)
#define CHECK_ID(...) REDUCE_CHECK(__VA_ARGS__)
UNIMEM_SHMEM_REDUCE_BIT_TYPES(CHECK_TYPE, UNIMEM_SHMEM_BIT_OPS)
UNIMEM_SHMEM_REDUCE_ORDERED_TYPES(CHECK_TYPE, UNIMEM_SHMEM_ORDERED_OPS)
UNIMEM_SHMEM_REDUCE_ARITH_TYPES(CHECK_TYPE, UNIMEM_SHMEM_ARITH_OPS)
#undef CHECK_ID
#define CHECK_ID(...) TO_ALL_CHECK(__VA_ARGS__)
UNIMEM_SHMEM_TO_ALL_BIT_TYPES(CHECK_TYPE, UNIMEM_SHMEM_BIT_OPS)
UNIMEM_SHMEM_TO_ALL_ORDERED_TYPES(CHECK_TYPE, UNIMEM_SHMEM_ORDERED_OPS)
UNIMEM_SHMEM_TO_ALL_ARITH_TYPES(CHECK_TYPE, UNIMEM_SHMEM_ARITH_OPS)

/* Calls every checking function a table made: CALL_TYPE(T, N, C, OPS) for reductions. */
#define CALL_REDUCE(OP, K, Z, TNC) CALL_REDUCE_ID(OP, UNIMEM_SHMEM_UNPAREN TNC)
#define CALL_REDUCE_ID(...) CALL_REDUCE_NAME(__VA_ARGS__)
#define CALL_REDUCE_NAME(OP, T, N, C) reduce_##N##_##OP();
#define CALL_REDUCE_TYPE(T, N, C, OPS) OPS(CALL_REDUCE, (T, N, C))
#define CALL_TO_ALL(OP, K, Z, TNC) CALL_TO_ALL_ID(OP, UNIMEM_SHMEM_UNPAREN TNC)
#define CALL_TO_ALL_ID(...) CALL_TO_ALL_NAME(__VA_ARGS__)
#define CALL_TO_ALL_NAME(OP, T, N, C) to_all_##N##_##OP();
#define CALL_TO_ALL_TYPE(T, N, C, OPS) OPS(CALL_TO_ALL, (T, N, C))

static void reductions(void)
{
    UNIMEM_SHMEM_REDUCE_BIT_TYPES(CALL_REDUCE_TYPE, UNIMEM_SHMEM_BIT_OPS)
    UNIMEM_SHMEM_REDUCE_ORDERED_TYPES(CALL_REDUCE_TYPE, UNIMEM_SHMEM_ORDERED_OPS)
    UNIMEM_SHMEM_REDUCE_ARITH_TYPES(CALL_REDUCE_TYPE, UNIMEM_SHMEM_ARITH_OPS)
    UNIMEM_SHMEM_TO_ALL_BIT_TYPES(CALL_TO_ALL_TYPE, UNIMEM_SHMEM_BIT_OPS)
    UNIMEM_SHMEM_TO_ALL_ORDERED_TYPES(CALL_TO_ALL_TYPE, UNIMEM_SHMEM_ORDERED_OPS)
    UNIMEM_SHMEM_TO_ALL_ARITH_TYPES(CALL_TO_ALL_TYPE, UNIMEM_SHMEM_ARITH_OPS)
}

/* ---- the C11 generic routines (a sample of each kind: they pick the typed ones above) ---------- */

static void generics(void)
{
    static long l[4], ld[4];
    static double d[4], dd[4];
    static int iv;
    static float fv;
    for (int i = 0; i < 4; i++) {
        l[i] = VAL(me, i);
        d[i] = VAL(me, i) + 0.5;
    }
    iv = 0;
    fv = 0;
    shmem_barrier_all();
    shmem_put(ld, l, 4, next);
    shmem_put(SHMEM_CTX_DEFAULT, &ld[0], &l[0], 1, next);
    shmem_barrier_all();
    CHECK("shmem_put (generic)", ALL(4, ld, (long)VAL(prev, i)));
    CHECK("shmem_g (generic)", shmem_g(&d[2], next) == VAL(next, 2) + 0.5);
    CHECK("shmem_g with a context (generic)", shmem_g(ctx, &l[3], next) == VAL(next, 3));
    CHECK("shmem_atomic_fetch_add (generic)", shmem_atomic_fetch_add(&iv, 2, next) == 0);
    CHECK("shmem_atomic_fetch_add with a context (generic)", shmem_atomic_fetch_add(ctx, &iv, 1, next) == 2);
    shmem_atomic_set(&fv, 1.5f, next);
    shmem_barrier_all();
    shmem_wait_until(&iv, SHMEM_CMP_EQ, 3);
    CHECK("shmem_atomic_set (generic, float)", fv == 1.5f);
    CHECK("shmem_test (generic)", shmem_test(&iv, SHMEM_CMP_EQ, 3));
    CHECK("shmem_sum_reduce (generic)", shmem_sum_reduce(SHMEM_TEAM_WORLD, ld, l, 4) == 0);
    shmem_barrier_all();
    CHECK("shmem_broadcast (generic)", shmem_broadcast(SHMEM_TEAM_WORLD, dd, d, 4, 0) == 0 && dd[1] == VAL(0, 1) + 0.5);
    CHECK("shmem_sync(team)", shmem_sync(SHMEM_TEAM_WORLD) == 0);
    shmem_barrier_all();
}

/* ---- setup, heap, locks, teams, contexts -------------------------------------------------------- */

static void setup_and_heap(int provided)
{
    int major = 0, minor = 0;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    CHECK("shmem_info_get_version", major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION);
    name[0] = 0;
    shmem_info_get_name(name);
    CHECK("shmem_info_get_name", name[0] != 0 && strlen(name) < SHMEM_MAX_NAME_LEN);
    CHECK("shmem_init_thread: no threads", provided == SHMEM_THREAD_FUNNELED);
    int queried = -1;
    shmem_query_thread(&queried);
    CHECK("shmem_query_thread", queried == SHMEM_THREAD_FUNNELED);
    CHECK("_my_pe, _num_pes", _my_pe() == me && _num_pes() == npes);
    CHECK("shmem_pe_accessible", shmem_pe_accessible(next) && shmem_pe_accessible(me) && !shmem_pe_accessible(npes));
    static int symmetric;
    CHECK("shmem_addr_accessible", shmem_addr_accessible(&symmetric, next));
    CHECK("shmem_ptr: this PE", shmem_ptr(&symmetric, me) == &symmetric);
    CHECK("shmem_ptr: another PE", npes == 1 || shmem_ptr(&symmetric, next) == NULL);
    shmem_pcontrol(1);
    shmem_pcontrol(2, "profiling has nothing to change");
    shmem_clear_cache_inv();
    shmem_set_cache_inv();
    shmem_clear_cache_line_inv(&symmetric);
    shmem_set_cache_line_inv(&symmetric);
    shmem_udcflush();
    shmem_udcflush_line(&symmetric);

    /* the symmetric heap: the same calls on every PE */
    long *a = shmem_malloc(8 * sizeof(long));
    CHECK("shmem_malloc", a != NULL && shmem_addr_accessible(a, next));
    for (int i = 0; i < 8; i++)
        a[i] = 0;
    shmem_barrier_all();
    long mine[8];
    for (int i = 0; i < 8; i++)
        mine[i] = VAL(me, i);
    shmem_long_put(a, mine, 8, next);
    shmem_barrier_all();
    CHECK("shmem_malloc'd memory takes a put", ALL(8, a, (long)VAL(prev, i)));
    a = shmem_realloc(a, 64 * sizeof(long));
    CHECK("shmem_realloc keeps the contents", a != NULL && ALL(8, a, (long)VAL(prev, i)));
    int *z = shmem_calloc(16, sizeof(int));
    CHECK("shmem_calloc", z != NULL && ALL(16, z, 0));
    void *aligned = shmem_align(4096, 100);
    CHECK("shmem_align", aligned != NULL && (uintptr_t)aligned % 4096 == 0);
    void *hinted = shmem_malloc_with_hints(64, SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
    CHECK("shmem_malloc_with_hints", hinted != NULL);
    shmem_barrier_all();
    shmem_free(hinted);
    shmem_free(aligned);
    shmem_free(z);
    shmem_free(a);
    shmem_free(NULL);
    shmem_barrier_all();
}

/* The deprecated heap names and start-up (mode start-pes). */
static void old_heap(void)
{
    int *a = shmalloc(4 * sizeof(int));
    CHECK("shmalloc", a != NULL);
    a = shrealloc(a, 64 * sizeof(int));
    CHECK("shrealloc", a != NULL);
    void *b = shmemalign(256, 32);
    CHECK("shmemalign", b != NULL && (uintptr_t)b % 256 == 0);
    a[0] = me;
    shmem_barrier_all();
    CHECK("shmalloc'd memory takes a g", shmem_int_g(a, next) == next);
    shmem_barrier_all();
    shfree(b);
    shfree(a);
}

static void locks(void)
{
    static long lock, counter;
    lock = 0;
    counter = 0;
    shmem_barrier_all();
    for (int k = 0; k < 10; k++) {
        shmem_set_lock(&lock);
        long c = shmem_long_g(&counter, 0);
        shmem_long_p(&counter, c + 1, 0);
        shmem_quiet();
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    if (me == 0) {
        CHECK("shmem_set_lock: the count", counter == 10L * npes);
        CHECK("shmem_test_lock: free", shmem_test_lock(&lock) == 0);
        CHECK("shmem_test_lock: held", shmem_test_lock(&lock) != 0);
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
}

static void teams(void)
{
    shmem_team_t world = SHMEM_TEAM_WORLD, shared = SHMEM_TEAM_SHARED;
    CHECK("shmem_team_my_pe", shmem_team_my_pe(world) == me && shmem_team_my_pe(shared) == 0);
    CHECK("shmem_team_n_pes", shmem_team_n_pes(world) == npes && shmem_team_n_pes(shared) == 1);
    CHECK("shmem_team_n_pes: invalid", shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1);
    CHECK("shmem_team_translate_pe", shmem_team_translate_pe(shared, 0, world) == me &&
                                         shmem_team_translate_pe(world, next, shared) == (next == me ? 0 : -1));
    shmem_team_config_t config = {.num_contexts = 2}, got = {0};
    CHECK("shmem_team_get_config: world", shmem_team_get_config(world, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0);

    /* the even PEs */
    shmem_team_t even = SHMEM_TEAM_INVALID;
    int evens = (npes + 1) / 2;
    CHECK("shmem_team_split_strided", shmem_team_split_strided(world, 0, 2, evens, &config, SHMEM_TEAM_NUM_CONTEXTS,
                                                               &even) == 0);
    if (me % 2 == 0) {
        CHECK("shmem_team_split_strided: a member", even != SHMEM_TEAM_INVALID && shmem_team_my_pe(even) == me / 2 &&
                                                        shmem_team_n_pes(even) == evens);
        CHECK("shmem_team_get_config", shmem_team_get_config(even, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 &&
                                           got.num_contexts == 2);
        CHECK("shmem_team_translate_pe: to the world", shmem_team_translate_pe(even, evens - 1, world) == 2 * (evens - 1));
        CHECK("shmem_team_sync", shmem_team_sync(even) == 0);
        static int x;
        CHECK("shmem_team_ptr", shmem_team_ptr(even, &x, me / 2) == &x);
        static int s, r;
        s = me;
        int sum = 0;
        for (int p = 0; p < npes; p += 2)
            sum += p;
        CHECK("shmem_int_sum_reduce on the even PEs", shmem_int_sum_reduce(even, &r, &s, 1) == 0 && r == sum);
        shmem_ctx_t team_ctx = SHMEM_CTX_INVALID;
        shmem_team_t of = SHMEM_TEAM_INVALID;
        CHECK("shmem_team_create_ctx", shmem_team_create_ctx(even, 0, &team_ctx) == 0 && team_ctx != SHMEM_CTX_INVALID);
        CHECK("shmem_ctx_get_team", shmem_ctx_get_team(team_ctx, &of) == 0 && of == even);
        /* on a team's context, PEs are numbered as the team numbers them */
        static int tx;
        tx = -1;
        shmem_team_sync(even);
        shmem_ctx_int_p(team_ctx, &tx, me, (me / 2 + 1) % evens);
        shmem_ctx_quiet(team_ctx);
        shmem_team_sync(even);
        CHECK("shmem_ctx_int_p on a team's context", tx == 2 * ((me / 2 + evens - 1) % evens));
        shmem_ctx_destroy(team_ctx);
        shmem_team_destroy(even);
    } else {
        CHECK("shmem_team_split_strided: not a member", even == SHMEM_TEAM_INVALID && shmem_team_my_pe(even) == -1);
    }
    shmem_barrier_all();

    /* every PE, counted from the last (stride -1): collectives in the team's order */
    shmem_team_t back = SHMEM_TEAM_INVALID;
    CHECK("shmem_team_split_strided: stride -1", shmem_team_split_strided(world, npes - 1, -1, npes, NULL, 0, &back) == 0);
    int mine = npes - 1 - me;
    CHECK("a team of stride -1: my_pe", shmem_team_my_pe(back) == mine && shmem_team_n_pes(back) == npes);
    static int bsrc[2 * MAX_PES], bdst[2 * MAX_PES * MAX_PES], bsum[2];
    for (int i = 0; i < 2 * MAX_PES; i++)
        bsrc[i] = VAL(mine, i);
    CLEAR(bdst);
    shmem_barrier_all();
    CHECK("shmem_int_broadcast, stride -1", shmem_int_broadcast(back, bdst, bsrc, 2, 0) == 0 && ALL(2, bdst, VAL(0, i)));
    CHECK("shmem_int_sum_reduce, stride -1", shmem_int_sum_reduce(back, bsum, bsrc, 2) == 0);
    int sum0 = 0;
    for (int t = 0; t < npes; t++)
        sum0 += VAL(t, 0);
    CHECK("shmem_int_sum_reduce, stride -1: data", bsum[0] == sum0);
    CLEAR(bdst);
    shmem_barrier_all();
    CHECK("shmem_int_fcollect, stride -1", shmem_int_fcollect(back, bdst, bsrc, 2) == 0 &&
                                               ALL(2 * npes, bdst, VAL(i / 2, i % 2)));
    CLEAR(bdst);
    shmem_barrier_all();
    CHECK("shmem_int_collect, stride -1", shmem_int_collect(back, bdst, bsrc, (size_t)mine + 1) == 0);
    for (int t = 0, at = 0; t < npes; at += t + 1, t++)
        CHECK("shmem_int_collect, stride -1: data", ALL(t + 1, bdst + at, VAL(t, i)));
    CLEAR(bdst);
    shmem_barrier_all();
    CHECK("shmem_int_alltoall, stride -1", shmem_int_alltoall(back, bdst, bsrc, 1) == 0 &&
                                               ALL(npes, bdst, VAL(i, mine)));
    CHECK("shmem_team_sync, stride -1", shmem_team_sync(back) == 0);
    shmem_team_destroy(back);
    shmem_barrier_all();

    /* a split that leaves the parent: refused on every PE */
    shmem_team_t none = world;
    CHECK("shmem_team_split_strided: out of the parent",
          shmem_team_split_strided(world, 0, 1, npes + 1, NULL, 0, &none) != 0 && none == SHMEM_TEAM_INVALID);

    /* rows of two */
    shmem_team_t xteam, yteam;
    CHECK("shmem_team_split_2d", shmem_team_split_2d(world, 2, NULL, 0, &xteam, NULL, 0, &yteam) == 0);
    CHECK("shmem_team_split_2d: x", shmem_team_my_pe(xteam) == me % 2 && shmem_team_n_pes(xteam) == (npes - me / 2 * 2 < 2 ? 1 : 2));
    CHECK("shmem_team_split_2d: y", shmem_team_my_pe(yteam) == me / 2 && shmem_team_n_pes(yteam) == (npes - me % 2 + 1) / 2);
    CHECK("shmem_team_sync: x", shmem_team_sync(xteam) == 0);
    shmem_team_destroy(xteam);
    shmem_team_destroy(yteam);
    shmem_team_destroy(SHMEM_TEAM_INVALID);
    shmem_barrier_all();

    /* contexts */
    shmem_ctx_t made = SHMEM_CTX_INVALID;
    shmem_team_t of = SHMEM_TEAM_INVALID;
    CHECK("shmem_ctx_create", shmem_ctx_create(SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED | SHMEM_CTX_NOSTORE, &made) == 0);
    CHECK("shmem_ctx_get_team: world", shmem_ctx_get_team(made, &of) == 0 && of == world);
    CHECK("shmem_ctx_get_team: the default", shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &of) == 0 && of == world);
    CHECK("shmem_ctx_get_team: invalid",
          shmem_ctx_get_team(SHMEM_CTX_INVALID, &of) != 0 && of == SHMEM_TEAM_INVALID);
    shmem_ctx_quiet(made);
    shmem_ctx_fence(made);
    shmem_ctx_destroy(made);
    shmem_barrier_all();
}

/* ---- modes ---------------------------------------------------------------------------------------- */

enum { FULL, START_PES, GLOBAL_EXIT, BAD_CTX, BAD_PUT, BAD_PE, BAD_FREE, DEAD_BARRIER };
static const char *const MODES[] = {"", "start-pes", "global-exit", "bad-ctx", "bad-put", "bad-pe", "bad-free",
                                    "dead-barrier"};

static int verdict_of_pe(void)
{
    char name[32];
    snprintf(name, sizeof name, "c-shmem PE %d", me);
    return verdict(name);
}

/* A bad call that must end the program: it says what comes, and what happened if it returns. */
#define MUST_END(what, call)                                                                      \
    do {                                                                                         \
        printf("c-shmem PE %d: next: %s\n", me, what);                                           \
        fflush(stdout);                                                                          \
        call;                                                                                    \
        printf("c-shmem PE %d: %s returned\n", me, what);                                        \
        return 1;                                                                                \
    } while (0)

int main(int argc, char **argv)
{
    int wanted = FULL;
    for (int m = 1; argc > 1 && m < (int)(sizeof MODES / sizeof MODES[0]); m++)
        if (strcmp(argv[1], MODES[m]) == 0)
            wanted = m;
    int provided = -1;
    if (wanted == START_PES)
        start_pes(0);
    else
        shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    next = (me + 1) % npes;
    prev = (me + npes - 1) % npes;
    ctx = SHMEM_CTX_DEFAULT;
    /* PE 0's mode, for every PE (the others may not have the arguments). */
    static int mode;
    mode = wanted;
    shmem_barrier_all();
    mode = shmem_int_g(&mode, 0);
    shmem_barrier_all();
    printf("c-shmem PE %d of %d: mode %s\n", me, npes, mode == FULL ? "all" : MODES[mode]);

    switch (mode) {
    case START_PES:
        CHECK("start_pes: _my_pe, _num_pes", _my_pe() == me && _num_pes() == npes && npes >= 1);
        old_heap();
        shmem_finalize();
        return verdict_of_pe();
    case GLOBAL_EXIT:
        if (me == npes - 1) {
            printf("c-shmem PE %d: shmem_global_exit(7)\n", me);
            fflush(stdout);
            shmem_global_exit(7);
        }
        for (;;)
            sleep(1);
    case BAD_CTX:
        if (me == 0) {
            static int x;
            MUST_END("shmem_ctx_int_p on SHMEM_CTX_INVALID", shmem_ctx_int_p(SHMEM_CTX_INVALID, &x, 1, next));
        }
        MUST_END("shmem_barrier_all with PE 0 gone", shmem_barrier_all());
    case BAD_PUT:
        if (me == 0) {
            char *private_buffer = malloc(64);
            static char src[8];
            MUST_END("shmem_putmem to a non-symmetric address", shmem_putmem(private_buffer, src, 8, next));
        }
        MUST_END("shmem_barrier_all with PE 0 gone", shmem_barrier_all());
    case BAD_PE:
        if (me == 0) {
            static int x;
            MUST_END("shmem_int_p to PE n_pes", shmem_int_p(&x, 1, npes));
        }
        MUST_END("shmem_barrier_all with PE 0 gone", shmem_barrier_all());
    case BAD_FREE:
        if (me == 0)
            MUST_END("shmem_free of a malloc'd pointer", shmem_free(malloc(16)));
        MUST_END("shmem_barrier_all with PE 0 gone", shmem_barrier_all());
    case DEAD_BARRIER:
        if (me == npes - 1) {
            printf("c-shmem PE %d: exits with status 3\n", me);
            exit(3);
        }
        MUST_END("shmem_barrier_all with a PE gone", shmem_barrier_all());
    }

    setup_and_heap(provided);
#define CALL_FAMILY(PREFIX) CALL_FAMILY_##PREFIX
#define CALL_RMA(T, N, C, A) rma_##N();
#define CALL_SIZED(BITS, BYTES, C, A) sized_##BITS();
#define CALL_AMO_EXT(T, N, C, A) amo_ext_##N();
#define CALL_AMO(T, N, C, A) amo_##N();
#define CALL_AMO_BIT(T, N, C, A) amo_bit_##N();
#define CALL_OLD_AMO(T, N, C, A) old_amo_##N();
#define CALL_OLD_AMO_EXT(T, N, C, A) old_amo_ext_##N();
#define CALL_P2P(T, N, C, A) p2p_##N();
#define CALL_OLD_WAIT(T, N, C, A) old_wait_##N();
    UNIMEM_SHMEM_RMA_TYPES(CALL_RMA, 0)
    UNIMEM_SHMEM_SIZES(CALL_SIZED, 0)
    bytes();
    old_collectives();
    UNIMEM_SHMEM_AMO_EXT_TYPES(CALL_AMO_EXT, 0)
    UNIMEM_SHMEM_AMO_TYPES(CALL_AMO, 0)
    UNIMEM_SHMEM_AMO_BIT_TYPES(CALL_AMO_BIT, 0)
    UNIMEM_SHMEM_OLD_AMO_TYPES(CALL_OLD_AMO, 0)
    UNIMEM_SHMEM_OLD_AMO_EXT_TYPES(CALL_OLD_AMO_EXT, 0)
    UNIMEM_SHMEM_P2P_TYPES(CALL_P2P, 0)
    UNIMEM_SHMEM_OLD_WAIT_TYPES(CALL_OLD_WAIT, 0)
    reductions();
    generics();
    locks();
    teams();
    shmem_barrier_all();
    shmem_sync_all();
    int failed_checks = verdict_of_pe();
    shmem_finalize();
    return failed_checks;
}

/*
 * The typed OpenSHMEM 1.5 routines (include/shmem.h) over the unimem-c library's core
 * (include/unimem_shmem.h): each routine is one call of a generic core with the type's width,
 * class or element size. Teams are active sets; contexts are the default context under another
 * handle. xtask compiles this file once into an archive that every C program links, with one
 * section per function: a program gets the routines it calls and nothing else (so a program
 * that does not use OpenSHMEM does not reach shmem_init, and is no OpenSHMEM program).
 */
#include <shmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unimem_error.h>
#include <unimem_sys.h>

_Static_assert((char)-1 > 0, "char is unsigned on aarch64 (the tables give it class 1)");
_Static_assert(sizeof(long) == 8 && sizeof(long double) == 16, "aarch64's long and long double");

/* ---- errors ------------------------------------------------------------------------------- */

/* Ends the program: the routine, what was wrong, and the status (UNIMEM_E_BAD_ARGUMENT). */
__attribute__((noreturn, format(printf, 2, 3))) static void fail(const char *routine, const char *fmt, ...);

#include <stdarg.h>

static void fail(const char *routine, const char *fmt, ...)
{
    char what[160];
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    printf("%s: %s, exit status %#x\n", routine, what, (unsigned)UNIMEM_E_BAD_ARGUMENT);
    fflush(stdout);
    unimem_sys_exit(UNIMEM_E_BAD_ARGUMENT);
}

/* ---- teams and contexts ------------------------------------------------------------------- */

/* A team: the world's PEs start, start + stride, ... (size of them). */
struct unimem_shmem_team {
    int start, stride, size;
    int num_contexts;
    /* 0 for the predefined teams, 1 for those shmem_team_split_* made (freed by destroy). */
    int made;
};

struct unimem_shmem_ctx {
    shmem_team_t team;
    long options;
};

struct unimem_shmem_team unimem_shmem_team_world, unimem_shmem_team_shared;
struct unimem_shmem_ctx unimem_shmem_ctx_default = {&unimem_shmem_team_world, 0};

/* The team behind a handle, the predefined ones filled in (they depend on shmem_init); NULL
 * for SHMEM_TEAM_INVALID. */
static shmem_team_t team_of(shmem_team_t team)
{
    if (team == &unimem_shmem_team_world) {
        team->start = 0;
        team->stride = 1;
        team->size = shmem_n_pes();
    } else if (team == &unimem_shmem_team_shared) {
        team->start = shmem_my_pe();
        team->stride = 1;
        team->size = 1;
    }
    return team;
}

/* The context's check: SHMEM_CTX_INVALID ends the program. */
static void valid_ctx(shmem_ctx_t ctx, const char *routine)
{
    if (ctx == SHMEM_CTX_INVALID) {
        fail(routine, "SHMEM_CTX_INVALID");
    }
}

/* The world's number of `pe`, a PE of the context's team (OpenSHMEM 1.5: a context made from
 * a team numbers the PEs as the team does); a PE outside the team ends the program. */
static int ctx_pe(shmem_ctx_t ctx, int pe, const char *routine);

/* The index of world PE `pe` in `team`, or -1. */
static int index_in(shmem_team_t team, int pe)
{
    if (team->stride == 0) {
        return team->size >= 1 && pe == team->start ? 0 : -1;
    }
    int offset = pe - team->start;
    if (offset % team->stride != 0) {
        return -1;
    }
    int index = offset / team->stride;
    return index >= 0 && index < team->size ? index : -1;
}

/* The world PE of index `index` of `team`. */
static int world_pe(shmem_team_t team, int index)
{
    return team->start + index * team->stride;
}

/* The core's active set of `team` (the core takes strides >= 0): a team of negative stride is
 * the same PEs counted from the other end, and says so (1; then the collectives whose result
 * depends on the order put it right). */
struct set {
    int start, stride, size, reversed;
};

static struct set core_set(shmem_team_t team)
{
    if (team->stride < 0 && team->size > 1) {
        return (struct set){world_pe(team, team->size - 1), -team->stride, team->size, 1};
    }
    return (struct set){team->start, team->size == 1 ? 1 : team->stride, team->size, 0};
}

/* Reverses the order of the `count` blocks of `block` bytes at `at` (in place). */
static void reverse_blocks(char *at, size_t block, int count)
{
    for (int i = 0, j = count - 1; i < j; i++, j--) {
        for (size_t b = 0; b < block; b++) {
            char t = at[(size_t)i * block + b];
            at[(size_t)i * block + b] = at[(size_t)j * block + b];
            at[(size_t)j * block + b] = t;
        }
    }
}

static int ctx_pe(shmem_ctx_t ctx, int pe, const char *routine)
{
    valid_ctx(ctx, routine);
    shmem_team_t team = team_of(ctx->team);
    if (team == &unimem_shmem_team_world) {
        return pe;
    }
    if (pe < 0 || pe >= team->size) {
        fail(routine, "PE %d is not in the context's team of %d PEs", pe, team->size);
    }
    return world_pe(team, pe);
}

int shmem_team_my_pe(shmem_team_t team)
{
    return team == SHMEM_TEAM_INVALID ? -1 : index_in(team_of(team), shmem_my_pe());
}

int shmem_team_n_pes(shmem_team_t team)
{
    return team == SHMEM_TEAM_INVALID ? -1 : team_of(team)->size;
}

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)
{
    if (team == SHMEM_TEAM_INVALID || config == NULL) {
        return -1;
    }
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS) {
        config->num_contexts = team->num_contexts;
    }
    return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)
{
    if (src_team == SHMEM_TEAM_INVALID || dest_team == SHMEM_TEAM_INVALID) {
        return -1;
    }
    shmem_team_t src = team_of(src_team);
    if (src_pe < 0 || src_pe >= src->size) {
        return -1;
    }
    return index_in(team_of(dest_team), world_pe(src, src_pe));
}

/* A new team of `parent`'s indices start, start + stride, ... (size), or NULL when they are
 * not all in the parent, or this PE is not one of them (`*bad` says which). */
static shmem_team_t new_team(shmem_team_t parent, int start, int stride, int size, const shmem_team_config_t *config,
                             long mask, int *bad)
{
    long last = (long)start + (long)stride * (size - 1);
    *bad = size < 1 || start < 0 || start >= parent->size || last < 0 || last >= parent->size ||
           (stride == 0 && size > 1);
    if (*bad) {
        return SHMEM_TEAM_INVALID;
    }
    struct unimem_shmem_team made = {
        .start = world_pe(parent, start),
        .stride = parent->stride * stride,
        .size = size,
        .num_contexts = config != NULL && (mask & SHMEM_TEAM_NUM_CONTEXTS) ? config->num_contexts : 0,
        .made = 1,
    };
    if (size == 1) {
        made.stride = 1;
    }
    if (index_in(&made, shmem_my_pe()) < 0) {
        return SHMEM_TEAM_INVALID;
    }
    shmem_team_t team = malloc(sizeof *team);
    if (team == NULL) {
        fail("shmem_team_split", "out of memory");
    }
    *team = made;
    return team;
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team_out)
{
    *new_team_out = SHMEM_TEAM_INVALID;
    if (parent_team == SHMEM_TEAM_INVALID) {
        return -1;
    }
    shmem_team_t parent = team_of(parent_team);
    if (index_in(parent, shmem_my_pe()) < 0) {
        return -1;
    }
    int bad;
    *new_team_out = new_team(parent, start, stride, size, config, config_mask, &bad);
    /* Collective over the parent: every member returns once all have made their part. */
    struct set set = core_set(parent);
    if (unimem_shmem_sync(set.start, set.stride, set.size) != 0) {
        fail("shmem_team_split_strided", "the parent team's synchronisation failed");
    }
    return bad ? -1 : 0;
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config,
                        long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team)
{
    *xaxis_team = SHMEM_TEAM_INVALID;
    *yaxis_team = SHMEM_TEAM_INVALID;
    if (parent_team == SHMEM_TEAM_INVALID || xrange < 1) {
        return -1;
    }
    shmem_team_t parent = team_of(parent_team);
    int me = index_in(parent, shmem_my_pe());
    if (me < 0) {
        return -1;
    }
    int n = parent->size;
    if (xrange > n) {
        xrange = n;
    }
    int x = me % xrange, y = me / xrange;
    int row = y * xrange;
    int xsize = n - row < xrange ? n - row : xrange;
    int ysize = (n - x + xrange - 1) / xrange;
    int xbad, ybad;
    *xaxis_team = new_team(parent, row, 1, xsize, xaxis_config, xaxis_mask, &xbad);
    *yaxis_team = new_team(parent, x, xrange, ysize, yaxis_config, yaxis_mask, &ybad);
    struct set set = core_set(parent);
    if (unimem_shmem_sync(set.start, set.stride, set.size) != 0) {
        fail("shmem_team_split_2d", "the parent team's synchronisation failed");
    }
    return xbad || ybad ? -1 : 0;
}

void shmem_team_destroy(shmem_team_t team)
{
    if (team == SHMEM_TEAM_INVALID) {
        return;
    }
    if (!team->made) {
        fail("shmem_team_destroy", "SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED cannot be destroyed");
    }
    free(team);
}

int shmem_team_sync(shmem_team_t team)
{
    if (team == SHMEM_TEAM_INVALID) {
        return -1;
    }
    struct set set = core_set(team_of(team));
    return unimem_shmem_sync(set.start, set.stride, set.size);
}

void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)
{
    if (team == SHMEM_TEAM_INVALID) {
        return NULL;
    }
    team = team_of(team);
    if (pe < 0 || pe >= team->size) {
        return NULL;
    }
    return shmem_ptr(dest, world_pe(team, pe));
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)
{
    *ctx = SHMEM_CTX_INVALID;
    if (team == SHMEM_TEAM_INVALID) {
        return -1;
    }
    shmem_ctx_t made = malloc(sizeof *made);
    if (made == NULL) {
        return -1;
    }
    made->team = team;
    made->options = options;
    *ctx = made;
    return 0;
}

int shmem_ctx_create(long options, shmem_ctx_t *ctx)
{
    return shmem_team_create_ctx(SHMEM_TEAM_WORLD, options, ctx);
}

void shmem_ctx_destroy(shmem_ctx_t ctx)
{
    if (ctx == SHMEM_CTX_INVALID) {
        return;
    }
    if (ctx == SHMEM_CTX_DEFAULT) {
        fail("shmem_ctx_destroy", "SHMEM_CTX_DEFAULT cannot be destroyed");
    }
    shmem_quiet();
    free(ctx);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)
{
    if (team == NULL) {
        return -1;
    }
    if (ctx == SHMEM_CTX_INVALID) {
        *team = SHMEM_TEAM_INVALID;
        return -1;
    }
    *team = ctx->team;
    return 0;
}

void shmem_ctx_quiet(shmem_ctx_t ctx)
{
    valid_ctx(ctx, "shmem_ctx_quiet");
    shmem_quiet();
}

void shmem_ctx_fence(shmem_ctx_t ctx)
{
    valid_ctx(ctx, "shmem_ctx_fence");
    shmem_fence();
}

/* ---- RMA ---------------------------------------------------------------------------------- */

void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    pe = ctx_pe(ctx, pe, "shmem_ctx_putmem");
    shmem_putmem(dest, source, nelems, pe);
}

void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    pe = ctx_pe(ctx, pe, "shmem_ctx_getmem");
    shmem_getmem(dest, source, nelems, pe);
}

void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    pe = ctx_pe(ctx, pe, "shmem_ctx_putmem_nbi");
    shmem_putmem_nbi(dest, source, nelems, pe);
}

void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe)
{
    pe = ctx_pe(ctx, pe, "shmem_ctx_getmem_nbi");
    shmem_getmem_nbi(dest, source, nelems, pe);
}

void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                         int sig_op, int pe)
{
    unimem_shmem_put_signal(dest, source, nelems, sig_addr, signal, sig_op, pe, 0);
}

void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe)
{
    pe = ctx_pe(ctx, pe, "shmem_ctx_putmem_signal");
    unimem_shmem_put_signal(dest, source, nelems, sig_addr, signal, sig_op, pe, 0);
}

void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                             int sig_op, int pe)
{
    unimem_shmem_put_signal(dest, source, nelems, sig_addr, signal, sig_op, pe, 1);
}

void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                                 uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    pe = ctx_pe(ctx, pe, "shmem_ctx_putmem_signal_nbi");
    unimem_shmem_put_signal(dest, source, nelems, sig_addr, signal, sig_op, pe, 1);
}

static int alltoalls(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                     size_t elem_size);

/* A routine NAME(PARAMS) and its context form shmem_ctx_...(ctx, PARAMS), both doing BODY; the
 * context form first turns `pe`, a PE of the context's team, into the world's number. */
#define WITH_CTX(RET, NAME, CTX_NAME, PARAMS, BODY)                                               \
    RET NAME PARAMS { BODY }                                                                     \
    RET CTX_NAME(shmem_ctx_t ctx, UNIMEM_SHMEM_UNPAREN PARAMS)                                   \
    {                                                                                            \
        pe = ctx_pe(ctx, pe, #CTX_NAME);                                                         \
        BODY                                                                                     \
    }

#define DEF_RMA(T, N, C, A)                                                                       \
    WITH_CTX(void, shmem_##N##_put, shmem_ctx_##N##_put, (T *dest, const T *source, size_t nelems, int pe), \
             shmem_putmem(dest, source, nelems * sizeof(T), pe);)                               \
    WITH_CTX(void, shmem_##N##_get, shmem_ctx_##N##_get, (T *dest, const T *source, size_t nelems, int pe), \
             shmem_getmem(dest, source, nelems * sizeof(T), pe);)                               \
    WITH_CTX(void, shmem_##N##_put_nbi, shmem_ctx_##N##_put_nbi,                                 \
             (T *dest, const T *source, size_t nelems, int pe),                                  \
             shmem_putmem_nbi(dest, source, nelems * sizeof(T), pe);)                           \
    WITH_CTX(void, shmem_##N##_get_nbi, shmem_ctx_##N##_get_nbi,                                 \
             (T *dest, const T *source, size_t nelems, int pe),                                  \
             shmem_getmem_nbi(dest, source, nelems * sizeof(T), pe);)                           \
    WITH_CTX(void, shmem_##N##_p, shmem_ctx_##N##_p, (T *dest, T value, int pe),                 \
             shmem_putmem(dest, &value, sizeof(T), pe);)                                        \
    WITH_CTX(T, shmem_##N##_g, shmem_ctx_##N##_g, (const T *source, int pe), T value;            \
             shmem_getmem(&value, source, sizeof(T), pe); return value;)                        \
    WITH_CTX(void, shmem_##N##_iput, shmem_ctx_##N##_iput,                                       \
             (T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe),    \
             unimem_shmem_iput(dest, source, dst, sst, nelems, sizeof(T), pe);)                 \
    WITH_CTX(void, shmem_##N##_iget, shmem_ctx_##N##_iget,                                       \
             (T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe),    \
             unimem_shmem_iget(dest, source, dst, sst, nelems, sizeof(T), pe);)                 \
    WITH_CTX(void, shmem_##N##_put_signal, shmem_ctx_##N##_put_signal,                           \
             (T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe), \
             unimem_shmem_put_signal(dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, pe, 0);) \
    WITH_CTX(void, shmem_##N##_put_signal_nbi, shmem_ctx_##N##_put_signal_nbi,                   \
             (T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe), \
             unimem_shmem_put_signal(dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, pe, 1);) \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems, int PE_root) \
    {                                                                                            \
        return shmem_broadcastmem(team, dest, source, nelems * sizeof(T), PE_root);              \
    }                                                                                            \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems)          \
    {                                                                                            \
        return shmem_collectmem(team, dest, source, nelems * sizeof(T));                         \
    }                                                                                            \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems)         \
    {                                                                                            \
        return shmem_fcollectmem(team, dest, source, nelems * sizeof(T));                        \
    }                                                                                            \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems)         \
    {                                                                                            \
        return shmem_alltoallmem(team, dest, source, nelems * sizeof(T));                        \
    }                                                                                            \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, \
                              size_t nelems)                                                     \
    {                                                                                            \
        if (team == SHMEM_TEAM_INVALID) {                                                        \
            return -1;                                                                           \
        }                                                                                        \
        return alltoalls(team, dest, source, dst, sst, nelems, sizeof(T));                      \
    }
UNIMEM_SHMEM_RMA_TYPES(DEF_RMA, 0)

#define DEF_SIZED(BITS, BYTES, C, A)                                                              \
    WITH_CTX(void, shmem_put##BITS, shmem_ctx_put##BITS, (void *dest, const void *source, size_t nelems, int pe), \
             shmem_putmem(dest, source, nelems * BYTES, pe);)                                   \
    WITH_CTX(void, shmem_get##BITS, shmem_ctx_get##BITS, (void *dest, const void *source, size_t nelems, int pe), \
             shmem_getmem(dest, source, nelems * BYTES, pe);)                                   \
    WITH_CTX(void, shmem_put##BITS##_nbi, shmem_ctx_put##BITS##_nbi,                             \
             (void *dest, const void *source, size_t nelems, int pe),                            \
             shmem_putmem_nbi(dest, source, nelems * BYTES, pe);)                               \
    WITH_CTX(void, shmem_get##BITS##_nbi, shmem_ctx_get##BITS##_nbi,                             \
             (void *dest, const void *source, size_t nelems, int pe),                            \
             shmem_getmem_nbi(dest, source, nelems * BYTES, pe);)                               \
    WITH_CTX(void, shmem_iput##BITS, shmem_ctx_iput##BITS,                                       \
             (void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe), \
             unimem_shmem_iput(dest, source, dst, sst, nelems, BYTES, pe);)                     \
    WITH_CTX(void, shmem_iget##BITS, shmem_ctx_iget##BITS,                                       \
             (void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe), \
             unimem_shmem_iget(dest, source, dst, sst, nelems, BYTES, pe);)                     \
    WITH_CTX(void, shmem_put##BITS##_signal, shmem_ctx_put##BITS##_signal,                       \
             (void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, \
              int pe),                                                                           \
             unimem_shmem_put_signal(dest, source, nelems * BYTES, sig_addr, signal, sig_op, pe, 0);) \
    WITH_CTX(void, shmem_put##BITS##_signal_nbi, shmem_ctx_put##BITS##_signal_nbi,               \
             (void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, \
              int pe),                                                                           \
             unimem_shmem_put_signal(dest, source, nelems * BYTES, sig_addr, signal, sig_op, pe, 1);)
UNIMEM_SHMEM_SIZES(DEF_SIZED, 0)

/* ---- atomics ------------------------------------------------------------------------------ */

enum { OP_FETCH, OP_SET, OP_COMPARE_SWAP, OP_SWAP, OP_FETCH_ADD, OP_FETCH_AND, OP_FETCH_OR, OP_FETCH_XOR };

/* The bits of a value of `width` bytes (4 or 8), zero-extended. */
static uint64_t bits(const void *value, size_t width)
{
    uint64_t b = 0;
    memcpy(&b, value, width);
    return b;
}

/* Applies op to the `width`-byte dest on pe; the old value into *old (NULL: dropped). */
static void amo(int op, void *dest, const void *value, const void *compare, void *old, size_t width, int pe)
{
    uint64_t v = value == NULL ? 0 : bits(value, width);
    uint64_t c = compare == NULL ? 0 : bits(compare, width);
    uint64_t result = unimem_shmem_atomic(op, (int)width, dest, v, c, pe);
    if (old != NULL) {
        memcpy(old, &result, width);
    }
}

#define DEF_AMO_EXT(T, N, C, A)                                                                   \
    WITH_CTX(T, shmem_##N##_atomic_fetch, shmem_ctx_##N##_atomic_fetch, (const T *source, int pe), T old; \
             amo(OP_FETCH, (void *)source, NULL, NULL, &old, sizeof(T), pe); return old;)        \
    WITH_CTX(void, shmem_##N##_atomic_fetch_nbi, shmem_ctx_##N##_atomic_fetch_nbi,               \
             (T *fetch, const T *source, int pe), amo(OP_FETCH, (void *)source, NULL, NULL, fetch, sizeof(T), pe);) \
    WITH_CTX(void, shmem_##N##_atomic_set, shmem_ctx_##N##_atomic_set, (T *dest, T value, int pe), \
             amo(OP_SET, dest, &value, NULL, NULL, sizeof(T), pe);)                              \
    WITH_CTX(T, shmem_##N##_atomic_swap, shmem_ctx_##N##_atomic_swap, (T *dest, T value, int pe), T old; \
             amo(OP_SWAP, dest, &value, NULL, &old, sizeof(T), pe); return old;)                 \
    WITH_CTX(void, shmem_##N##_atomic_swap_nbi, shmem_ctx_##N##_atomic_swap_nbi,                 \
             (T *fetch, T *dest, T value, int pe), amo(OP_SWAP, dest, &value, NULL, fetch, sizeof(T), pe);)
UNIMEM_SHMEM_AMO_EXT_TYPES(DEF_AMO_EXT, 0)

#define DEF_AMO(T, N, C, A)                                                                       \
    WITH_CTX(T, shmem_##N##_atomic_compare_swap, shmem_ctx_##N##_atomic_compare_swap,            \
             (T *dest, T cond, T value, int pe), T old;                                          \
             amo(OP_COMPARE_SWAP, dest, &value, &cond, &old, sizeof(T), pe); return old;)        \
    WITH_CTX(void, shmem_##N##_atomic_compare_swap_nbi, shmem_ctx_##N##_atomic_compare_swap_nbi, \
             (T *fetch, T *dest, T cond, T value, int pe),                                       \
             amo(OP_COMPARE_SWAP, dest, &value, &cond, fetch, sizeof(T), pe);)                   \
    WITH_CTX(T, shmem_##N##_atomic_fetch_inc, shmem_ctx_##N##_atomic_fetch_inc, (T *dest, int pe), T one = 1; \
             T old; amo(OP_FETCH_ADD, dest, &one, NULL, &old, sizeof(T), pe); return old;)       \
    WITH_CTX(void, shmem_##N##_atomic_fetch_inc_nbi, shmem_ctx_##N##_atomic_fetch_inc_nbi,       \
             (T *fetch, T *dest, int pe), T one = 1;                                             \
             amo(OP_FETCH_ADD, dest, &one, NULL, fetch, sizeof(T), pe);)                         \
    WITH_CTX(void, shmem_##N##_atomic_inc, shmem_ctx_##N##_atomic_inc, (T *dest, int pe), T one = 1; \
             amo(OP_FETCH_ADD, dest, &one, NULL, NULL, sizeof(T), pe);)                          \
    WITH_CTX(T, shmem_##N##_atomic_fetch_add, shmem_ctx_##N##_atomic_fetch_add, (T *dest, T value, int pe), \
             T old; amo(OP_FETCH_ADD, dest, &value, NULL, &old, sizeof(T), pe); return old;)     \
    WITH_CTX(void, shmem_##N##_atomic_fetch_add_nbi, shmem_ctx_##N##_atomic_fetch_add_nbi,       \
             (T *fetch, T *dest, T value, int pe), amo(OP_FETCH_ADD, dest, &value, NULL, fetch, sizeof(T), pe);) \
    WITH_CTX(void, shmem_##N##_atomic_add, shmem_ctx_##N##_atomic_add, (T *dest, T value, int pe), \
             amo(OP_FETCH_ADD, dest, &value, NULL, NULL, sizeof(T), pe);)
UNIMEM_SHMEM_AMO_TYPES(DEF_AMO, 0)

#define DEF_AMO_BIT_OP(T, N, OP, CODE)                                                            \
    WITH_CTX(T, shmem_##N##_atomic_fetch_##OP, shmem_ctx_##N##_atomic_fetch_##OP, (T *dest, T value, int pe), \
             T old; amo(CODE, dest, &value, NULL, &old, sizeof(T), pe); return old;)             \
    WITH_CTX(void, shmem_##N##_atomic_fetch_##OP##_nbi, shmem_ctx_##N##_atomic_fetch_##OP##_nbi, \
             (T *fetch, T *dest, T value, int pe), amo(CODE, dest, &value, NULL, fetch, sizeof(T), pe);) \
    WITH_CTX(void, shmem_##N##_atomic_##OP, shmem_ctx_##N##_atomic_##OP, (T *dest, T value, int pe), \
             amo(CODE, dest, &value, NULL, NULL, sizeof(T), pe);)
#define DEF_AMO_BIT(T, N, C, A)                                                                   \
    DEF_AMO_BIT_OP(T, N, and, OP_FETCH_AND) DEF_AMO_BIT_OP(T, N, or, OP_FETCH_OR)                \
    DEF_AMO_BIT_OP(T, N, xor, OP_FETCH_XOR)
UNIMEM_SHMEM_AMO_BIT_TYPES(DEF_AMO_BIT, 0)

/* The deprecated atomics, each the 1.5 routine it became. */
#define DEF_OLD_AMO(T, N, C, A)                                                                   \
    T shmem_##N##_fadd(T *dest, T value, int pe) { return shmem_##N##_atomic_fetch_add(dest, value, pe); } \
    T shmem_##N##_finc(T *dest, int pe) { return shmem_##N##_atomic_fetch_inc(dest, pe); }       \
    void shmem_##N##_add(T *dest, T value, int pe) { shmem_##N##_atomic_add(dest, value, pe); }  \
    void shmem_##N##_inc(T *dest, int pe) { shmem_##N##_atomic_inc(dest, pe); }                  \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe)                                        \
    {                                                                                            \
        return shmem_##N##_atomic_compare_swap(dest, cond, value, pe);                           \
    }
UNIMEM_SHMEM_OLD_AMO_TYPES(DEF_OLD_AMO, 0)
#define DEF_OLD_AMO_EXT(T, N, C, A)                                                               \
    T shmem_##N##_swap(T *dest, T value, int pe) { return shmem_##N##_atomic_swap(dest, value, pe); } \
    T shmem_##N##_fetch(const T *source, int pe) { return shmem_##N##_atomic_fetch(source, pe); } \
    void shmem_##N##_set(T *dest, T value, int pe) { shmem_##N##_atomic_set(dest, value, pe); }
UNIMEM_SHMEM_OLD_AMO_EXT_TYPES(DEF_OLD_AMO_EXT, 0)

/* ---- point-to-point synchronisation ------------------------------------------------------- */

enum { WAIT_ALL, WAIT_ANY, WAIT_SOME };

/* The core's kind of an integer type: its width, | 0x10 when signed. */
#define KIND(T, C) ((int)sizeof(T) | ((C) == 0 ? 0x10 : 0))

#define DEF_P2P(T, N, C, A)                                                                       \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value)                                   \
    {                                                                                            \
        unimem_shmem_wait(KIND(T, C), WAIT_ALL, 1, ivar, 1, NULL, NULL, cmp, NULL, (uint64_t)cmp_value); \
    }                                                                                            \
    void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value) \
    {                                                                                            \
        unimem_shmem_wait(KIND(T, C), WAIT_ALL, 1, ivars, nelems, status, NULL, cmp, NULL, (uint64_t)cmp_value); \
    }                                                                                            \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value) \
    {                                                                                            \
        return unimem_shmem_wait(KIND(T, C), WAIT_ANY, 1, ivars, nelems, status, NULL, cmp, NULL,  \
                                 (uint64_t)cmp_value);                                           \
    }                                                                                            \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, \
                                       T cmp_value)                                              \
    {                                                                                            \
        return unimem_shmem_wait(KIND(T, C), WAIT_SOME, 1, ivars, nelems, status, indices, cmp, NULL, \
                                 (uint64_t)cmp_value);                                           \
    }                                                                                            \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values) \
    {                                                                                            \
        unimem_shmem_wait(KIND(T, C), WAIT_ALL, 1, ivars, nelems, status, NULL, cmp, cmp_values, 0); \
    }                                                                                            \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems, const int *status, int cmp, \
                                             T *cmp_values)                                      \
    {                                                                                            \
        return unimem_shmem_wait(KIND(T, C), WAIT_ANY, 1, ivars, nelems, status, NULL, cmp, cmp_values, 0); \
    }                                                                                            \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices, const int *status, \
                                              int cmp, T *cmp_values)                            \
    {                                                                                            \
        return unimem_shmem_wait(KIND(T, C), WAIT_SOME, 1, ivars, nelems, status, indices, cmp, cmp_values, 0); \
    }                                                                                            \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value)                                          \
    {                                                                                            \
        return (int)unimem_shmem_wait(KIND(T, C), WAIT_ALL, 0, ivar, 1, NULL, NULL, cmp, NULL,     \
                                      (uint64_t)cmp_value);                                      \
    }                                                                                            \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value)   \
    {                                                                                            \
        return (int)unimem_shmem_wait(KIND(T, C), WAIT_ALL, 0, ivars, nelems, status, NULL, cmp, NULL, \
                                      (uint64_t)cmp_value);                                      \
    }                                                                                            \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value) \
    {                                                                                            \
        return unimem_shmem_wait(KIND(T, C), WAIT_ANY, 0, ivars, nelems, status, NULL, cmp, NULL,  \
                                 (uint64_t)cmp_value);                                           \
    }                                                                                            \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, \
                                 T cmp_value)                                                    \
    {                                                                                            \
        return unimem_shmem_wait(KIND(T, C), WAIT_SOME, 0, ivars, nelems, status, indices, cmp, NULL, \
                                 (uint64_t)cmp_value);                                           \
    }                                                                                            \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values) \
    {                                                                                            \
        return (int)unimem_shmem_wait(KIND(T, C), WAIT_ALL, 0, ivars, nelems, status, NULL, cmp, cmp_values, 0); \
    }                                                                                            \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values) \
    {                                                                                            \
        return unimem_shmem_wait(KIND(T, C), WAIT_ANY, 0, ivars, nelems, status, NULL, cmp, cmp_values, 0); \
    }                                                                                            \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, \
                                        T *cmp_values)                                           \
    {                                                                                            \
        return unimem_shmem_wait(KIND(T, C), WAIT_SOME, 0, ivars, nelems, status, indices, cmp, cmp_values, 0); \
    }
UNIMEM_SHMEM_P2P_TYPES(DEF_P2P, 0)

#define DEF_OLD_WAIT(T, N, C, A)                                                                  \
    void shmem_##N##_wait(T *ivar, T cmp_value) { shmem_##N##_wait_until(ivar, SHMEM_CMP_NE, cmp_value); }
UNIMEM_SHMEM_OLD_WAIT_TYPES(DEF_OLD_WAIT, 0)

/* ---- collectives -------------------------------------------------------------------------- */

/* The stride of a deprecated active set, or the end of the program. */
static int set_stride(const char *routine, int PE_start, int logPE_stride, int PE_size)
{
    if (logPE_stride < 0 || logPE_stride > 30) {
        fail(routine, "bad active set (PE_start %d, logPE_stride %d, PE_size %d)", PE_start, logPE_stride, PE_size);
    }
    return 1 << logPE_stride;
}

/* A deprecated collective's core call, which must succeed. */
#define ON_SET(ROUTINE, CALL)                                                                     \
    do {                                                                                         \
        int stride_ = set_stride(ROUTINE, PE_start, logPE_stride, PE_size);                      \
        (void)stride_;                                                                           \
        if ((CALL) != 0) {                                                                       \
            fail(ROUTINE, "bad active set (PE_start %d, logPE_stride %d, PE_size %d)", PE_start, logPE_stride, \
                 PE_size);                                                                       \
        }                                                                                        \
    } while (0)

/* The core reduces every type but long double (Rust has no 128-bit float): this layer does,
 * in C (libgcc's soft float), over the core's fcollect and sync. Each round gathers a chunk of
 * every PE's source into a symmetric scratch buffer (a static: the same address in every PE),
 * after a synchronisation of the set that makes sure nobody still reads the buffer. */
enum { OP_AND, OP_OR, OP_XOR, OP_MAX, OP_MIN, OP_SUM, OP_PROD };
#define LONGDOUBLE_TYPE ((int)sizeof(long double) | 2 << 8)
static long double longdouble_scratch[1024];

static int reduce_longdouble(int op, long double *dest, const long double *source, size_t nreduce, int start,
                             int stride, int size)
{
    if (size < 1 || op < OP_MAX) {
        return -1;
    }
    size_t chunk = sizeof longdouble_scratch / sizeof longdouble_scratch[0] / (size_t)size;
    if (chunk == 0) {
        return -1;
    }
    for (size_t done = 0; done < nreduce; done += chunk) {
        size_t n = nreduce - done < chunk ? nreduce - done : chunk;
        int rc = unimem_shmem_sync(start, stride, size);
        if (rc == 0) {
            rc = unimem_shmem_fcollect(longdouble_scratch, source + done, n * sizeof(long double), start, stride, size);
        }
        if (rc != 0) {
            return rc;
        }
        for (size_t i = 0; i < n; i++) {
            long double r = longdouble_scratch[i];
            for (int p = 1; p < size; p++) {
                long double v = longdouble_scratch[(size_t)p * n + i];
                switch (op) {
                case OP_MAX:
                    r = v > r ? v : r;
                    break;
                case OP_MIN:
                    r = v < r ? v : r;
                    break;
                case OP_SUM:
                    r += v;
                    break;
                default:
                    r *= v;
                    break;
                }
            }
            dest[done + i] = r;
        }
    }
    /* nobody reuses the scratch buffer before every PE has read it */
    return unimem_shmem_sync(start, stride, size);
}

/* A reduction: the core's, or this layer's for long double. */
static int reduce(int op, int type, void *dest, const void *source, size_t nreduce, int start, int stride, int size)
{
    if (type == LONGDOUBLE_TYPE) {
        return reduce_longdouble(op, dest, source, nreduce, start, stride, size);
    }
    return unimem_shmem_reduce(op, type, dest, source, nreduce, start, stride, size);
}

#define DEF_REDUCE(OP, K, Z, T, N, C)                                                             \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce)   \
    {                                                                                            \
        if (team == SHMEM_TEAM_INVALID) {                                                        \
            return -1;                                                                           \
        }                                                                                        \
        team = team_of(team);                                                                    \
        struct set set = core_set(team);                                                         \
        return reduce(K, (int)sizeof(T) | (C) << 8, dest, source, nreduce, set.start, set.stride, set.size); \
    }
#define DEF_REDUCE_TYPE(T, N, C, OPS) OPS(DEF_REDUCE_OP, (T, N, C))
#define DEF_REDUCE_OP(OP, K, Z, TNC) DEF_REDUCE_ID(OP, K, Z, UNIMEM_SHMEM_UNPAREN TNC)
#define DEF_REDUCE_ID(...) DEF_REDUCE(__VA_ARGS__)
UNIMEM_SHMEM_REDUCE_BIT_TYPES(DEF_REDUCE_TYPE, UNIMEM_SHMEM_BIT_OPS)
UNIMEM_SHMEM_REDUCE_ORDERED_TYPES(DEF_REDUCE_TYPE, UNIMEM_SHMEM_ORDERED_OPS)
UNIMEM_SHMEM_REDUCE_ARITH_TYPES(DEF_REDUCE_TYPE, UNIMEM_SHMEM_ARITH_OPS)

#define DEF_TO_ALL(OP, K, Z, T, N, C)                                                             \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int PE_start, int logPE_stride, \
                                   int PE_size, T *pWrk, long *pSync)                            \
    {                                                                                            \
        (void)pWrk;                                                                              \
        (void)pSync;                                                                             \
        if (nreduce < 0) {                                                                       \
            fail("shmem_" #N "_" #OP "_to_all", "nreduce %d", nreduce);                          \
        }                                                                                        \
        ON_SET("shmem_" #N "_" #OP "_to_all",                                                    \
               reduce(K, (int)sizeof(T) | (C) << 8, dest, source, (size_t)nreduce, PE_start, stride_, PE_size)); \
    }
#define DEF_TO_ALL_TYPE(T, N, C, OPS) OPS(DEF_TO_ALL_OP, (T, N, C))
#define DEF_TO_ALL_OP(OP, K, Z, TNC) DEF_TO_ALL_ID(OP, K, Z, UNIMEM_SHMEM_UNPAREN TNC)
#define DEF_TO_ALL_ID(...) DEF_TO_ALL(__VA_ARGS__)
UNIMEM_SHMEM_TO_ALL_BIT_TYPES(DEF_TO_ALL_TYPE, UNIMEM_SHMEM_BIT_OPS)
UNIMEM_SHMEM_TO_ALL_ORDERED_TYPES(DEF_TO_ALL_TYPE, UNIMEM_SHMEM_ORDERED_OPS)
UNIMEM_SHMEM_TO_ALL_ARITH_TYPES(DEF_TO_ALL_TYPE, UNIMEM_SHMEM_ARITH_OPS)

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root)
{
    if (team == SHMEM_TEAM_INVALID) {
        return -1;
    }
    struct set set = core_set(team_of(team));
    int root = set.reversed ? set.size - 1 - PE_root : PE_root;
    return unimem_shmem_broadcast(dest, source, nelems, root, 1, set.start, set.stride, set.size);
}

/* The PEs' byte counts of a collect over a reversed set (a symmetric scratch: a static). */
static size_t collect_sizes[1024];

int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    if (team == SHMEM_TEAM_INVALID) {
        return -1;
    }
    struct set set = core_set(team_of(team));
    if (!set.reversed) {
        return unimem_shmem_collect(dest, source, nelems, set.start, set.stride, set.size);
    }
    /* The core gathers in the world's order; the team's is the other way: every PE's count
     * first, then each block moved to its place. */
    if (set.size > (int)(sizeof collect_sizes / sizeof collect_sizes[0])) {
        return -1;
    }
    int rc = unimem_shmem_sync(set.start, set.stride, set.size);
    if (rc == 0) {
        rc = unimem_shmem_fcollect(collect_sizes, &nelems, sizeof nelems, set.start, set.stride, set.size);
    }
    if (rc == 0) {
        rc = unimem_shmem_collect(dest, source, nelems, set.start, set.stride, set.size);
    }
    if (rc != 0) {
        return rc;
    }
    size_t total = 0;
    for (int k = 0; k < set.size; k++) {
        total += collect_sizes[k];
    }
    char *copy = malloc(total ? total : 1);
    if (copy == NULL) {
        fail("shmem_collectmem", "out of memory");
    }
    memcpy(copy, dest, total);
    size_t to = 0;
    /* block k of the world's order starts after blocks 0..k-1; the team's order is k = size-1..0 */
    for (int k = set.size - 1; k >= 0; k--) {
        size_t from = 0;
        for (int j = 0; j < k; j++) {
            from += collect_sizes[j];
        }
        memcpy((char *)dest + to, copy + from, collect_sizes[k]);
        to += collect_sizes[k];
    }
    free(copy);
    /* nobody reuses collect_sizes before every PE has read it */
    return unimem_shmem_sync(set.start, set.stride, set.size);
}

int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    if (team == SHMEM_TEAM_INVALID) {
        return -1;
    }
    struct set set = core_set(team_of(team));
    int rc = unimem_shmem_fcollect(dest, source, nelems, set.start, set.stride, set.size);
    if (rc == 0 && set.reversed) {
        reverse_blocks(dest, nelems, set.size);
    }
    return rc;
}

int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    if (team == SHMEM_TEAM_INVALID) {
        return -1;
    }
    struct set set = core_set(team_of(team));
    if (!set.reversed) {
        return unimem_shmem_alltoall(dest, source, nelems, set.start, set.stride, set.size);
    }
    /* Block j goes to the team's PE j, the set's PE size-1-j; what PE t sends lands at the
     * set's index of t: both orders reversed. */
    char *reversed = malloc(nelems * (size_t)set.size + 1);
    if (reversed == NULL) {
        fail("shmem_alltoallmem", "out of memory");
    }
    memcpy(reversed, source, nelems * (size_t)set.size);
    reverse_blocks(reversed, nelems, set.size);
    int rc = unimem_shmem_alltoall(dest, reversed, nelems, set.start, set.stride, set.size);
    free(reversed);
    if (rc == 0) {
        reverse_blocks(dest, nelems, set.size);
    }
    return rc;
}

/* alltoalls over a team: over a team of negative stride it is refused (non-zero), with a line. */
static int alltoalls(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                     size_t elem_size)
{
    struct set set = core_set(team_of(team));
    if (set.reversed) {
        printf("shmem_alltoalls: a team of negative stride is not supported\n");
        return -1;
    }
    return unimem_shmem_alltoalls(dest, source, dst, sst, nelems, elem_size, set.start, set.stride, set.size);
}

int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems)
{
    if (team == SHMEM_TEAM_INVALID) {
        return -1;
    }
    return alltoalls(team, dest, source, dst, sst, nelems, 1);
}

#define DEF_OLD_COLL(BITS)                                                                        \
    void shmem_broadcast##BITS(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, \
                               int logPE_stride, int PE_size, long *pSync)                       \
    {                                                                                            \
        (void)pSync;                                                                             \
        ON_SET("shmem_broadcast" #BITS, unimem_shmem_broadcast(dest, source, nelems * (BITS / 8), PE_root, 0, \
                                                               PE_start, stride_, PE_size));     \
    }                                                                                            \
    void shmem_collect##BITS(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, \
                             int PE_size, long *pSync)                                           \
    {                                                                                            \
        (void)pSync;                                                                             \
        ON_SET("shmem_collect" #BITS,                                                            \
               unimem_shmem_collect(dest, source, nelems * (BITS / 8), PE_start, stride_, PE_size)); \
    }                                                                                            \
    void shmem_fcollect##BITS(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, \
                              int PE_size, long *pSync)                                          \
    {                                                                                            \
        (void)pSync;                                                                             \
        ON_SET("shmem_fcollect" #BITS,                                                           \
               unimem_shmem_fcollect(dest, source, nelems * (BITS / 8), PE_start, stride_, PE_size)); \
    }                                                                                            \
    void shmem_alltoall##BITS(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, \
                              int PE_size, long *pSync)                                          \
    {                                                                                            \
        (void)pSync;                                                                             \
        ON_SET("shmem_alltoall" #BITS,                                                           \
               unimem_shmem_alltoall(dest, source, nelems * (BITS / 8), PE_start, stride_, PE_size)); \
    }                                                                                            \
    void shmem_alltoalls##BITS(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, \
                               int PE_start, int logPE_stride, int PE_size, long *pSync)         \
    {                                                                                            \
        (void)pSync;                                                                             \
        ON_SET("shmem_alltoalls" #BITS, unimem_shmem_alltoalls(dest, source, dst, sst, nelems, BITS / 8, PE_start, \
                                                               stride_, PE_size));               \
    }
DEF_OLD_COLL(32)
DEF_OLD_COLL(64)

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    (void)pSync;
    ON_SET("shmem_barrier", unimem_shmem_barrier(PE_start, stride_, PE_size));
}

void unimem_shmem_sync_active_set(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    (void)pSync;
    ON_SET("shmem_sync", unimem_shmem_sync(PE_start, stride_, PE_size));
}

/* ---- threads, hints, profiling, deprecated names ------------------------------------------ */

static int thread_level = SHMEM_THREAD_SINGLE;

int shmem_init_thread(int requested, int *provided)
{
    shmem_init();
    thread_level = requested > SHMEM_THREAD_FUNNELED ? SHMEM_THREAD_FUNNELED : requested;
    if (thread_level < SHMEM_THREAD_SINGLE) {
        thread_level = SHMEM_THREAD_SINGLE;
    }
    if (provided != NULL) {
        *provided = thread_level;
    }
    return 0;
}

void shmem_query_thread(int *provided)
{
    *provided = thread_level;
}

void *shmem_malloc_with_hints(size_t size, long hints)
{
    /* Hints say how memory will be used; every symmetric allocation serves every use here. */
    (void)hints;
    return shmem_malloc(size);
}

void shmem_pcontrol(const int level, ...)
{
    (void)level;
}

void start_pes(int npes)
{
    (void)npes;
    shmem_init();
}

int _my_pe(void)
{
    return shmem_my_pe();
}

int _num_pes(void)
{
    return shmem_n_pes();
}

void *shmalloc(size_t size)
{
    return shmem_malloc(size);
}

void shfree(void *ptr)
{
    shmem_free(ptr);
}

void *shrealloc(void *ptr, size_t size)
{
    return shmem_realloc(ptr, size);
}

void *shmemalign(size_t alignment, size_t size)
{
    return shmem_align(alignment, size);
}

void shmem_clear_cache_inv(void)
{
}

void shmem_set_cache_inv(void)
{
}

void shmem_clear_cache_line_inv(void *dest)
{
    (void)dest;
}

void shmem_set_cache_line_inv(void *dest)
{
    (void)dest;
}

void shmem_udcflush(void)
{
}

void shmem_udcflush_line(void *dest)
{
    (void)dest;
}

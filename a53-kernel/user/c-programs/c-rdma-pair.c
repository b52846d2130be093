/*
 * c-rdma-pair: the C twin of the Rust `rdma-pair` sweep, through unim_dma.h alone: RDMA
 * writes and reads back between two processes of one protection domain on two nodes.
 *
 * Started without a thread argument (as `cargo xtask run` starts it), it is the initiator: it
 * starts itself on the next node with remoteFork (a remote spawn keeps the domain), and that
 * peer maps a buffer with unim_alloc_buf_l and sends its address in a notification, which the
 * initiator names with unim_attach_buf_r. For every size from 1 B to 1 MiB (each power of two
 * at offset 0, and an odd size at odd offsets) the initiator writes bytes there and reads them
 * back, each time into pages nothing has touched yet (the engine's page faults bring them
 * in), and compares a 64-bit FNV-1a hash of the bytes on both sides: its source's, what
 * landed at the peer (the peer hashes its buffer and answers; a notification carries 60 bits)
 * and what came back. Then a batch of small writes collected by unim_dma_poll, a wait that
 * runs out, a transfer that fails, and the refusals unim_dma.h documents. Each failed check
 * is printed; the verdict line is "c-rdma-pair: N of M checks failed", and the exit status N
 * (0: all held).
 *
 *   cargo xtask run c-rdma-pair --nodes 2 --on 0
 */
#include "checks.h"
#include "peers.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unim_dma.h>
#include <unimem.h>
#include <unimem_mailbox.h>
#include <unimem_sys.h>

#define MIB (1u << 20)
/* The peer's buffer, and this process's region for reads back: room for every transfer of
 * the sweep in memory of its own. */
#define REGION_BYTES (8u * MIB)
/* The kernel answers a fault of the engine by mapping the page's whole 16 KiB block
 * (docs/hw/pldma.md, "Fault handling"): each transfer's destination starts in a block of its
 * own, so none is resident before its transfer. */
#define BLOCK 16384u
/* Bytes checked on each side of what a read brought back: they must still be 0. */
#define GUARD 8u
/* How long a transfer may take before it counts as lost (the R5 ends a failing one long
 * before); how long the peer may take to start is peers.h's READY_US. */
#define TRANSFER_US 60000000ull
/* A VA no process maps (below the image, above the null page). */
#define UNMAPPED 0x100000ull

/* The peer's thread argument: its role, and the node of the initiator to answer. */
#define PEER_ROLE 0x9ee2ull
#define PEER_OF(node) ((PEER_ROLE << 16) | (uint64_t)(node))

/* Notifications. Peer to initiator: its buffer's address; the hash of a range; its verdict.
 * Initiator to peer: hash this range (offset in [31:0], length in [59:32]; length 0: done). */
#define OP_ADDRESS 8
#define OP_HASH 9
#define OP_VERDICT 10
#define OP_ASK 12
#define PAYLOAD_MASK ((1ull << UNIMEM_MAILBOX_PAYLOAD_BITS) - 1)

/* 64-bit FNV-1a. */
static uint64_t fnv1a(const uint8_t *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static int all_zero(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != 0)
            return 0;
    return 1;
}

/* A completion callback: counts the transfers it has seen end. */
static void count_end(void *counter)
{
    ++*(int *)counter;
}

/* ---- The peer ---- */

/* Maps its buffer, sends its address, hashes the ranges it is asked for until told it is
 * done; answers with its own failed checks. */
static int peer(uint64_t initiator)
{
    uint64_t me = getBoardPid();
    CHECK("the peer registers its opcode", unimem_mailbox_register(OP_ASK, 'r', 0) == UNIMEM_OK);
    CHECK("unim_dma_init at the peer", unim_dma_init((unim_node_id_t)me) == 0);
    unim_dma_buffer_t *buf = unim_alloc_buf_l(REGION_BYTES);
    const uint8_t *mem = buf == NULL ? NULL : unim_buf_get_memory(buf);
    CHECK("the peer's buffer and its memory", mem != NULL);
    unim_dma_buf_id_t id = unim_get_buf_id(buf);
    /* An address of 0 tells the initiator there is no buffer. */
    int told = tell(initiator, OP_ADDRESS, (uint64_t)(uintptr_t)mem);
    CHECK("sending the buffer's address", told);
    if (!told || mem == NULL)
        return failed;
    for (;;) {
        uint64_t ask = take(OP_ASK);
        uint64_t off = ask & 0xffffffffu, len = ask >> 32;
        if (ask == ~0ull || len == 0)
            break;
        uint64_t hash = off + len <= REGION_BYTES ? fnv1a(mem + off, len) : 0;
        tell(initiator, OP_HASH, hash & PAYLOAD_MASK);
    }
    unim_dma_cleanup(); /* frees the buffer */
    CHECK_ERROR("no buffer after unim_dma_cleanup", unim_get_buf(id) == NULL, UNIMEM_E_NOT_INITIALISED);
    tell(initiator, OP_VERDICT, (uint64_t)failed);
    return failed;
}

/* ---- The initiator ---- */

struct pair {
    uint64_t peer_node;
    unim_dma_buffer_t *src;    /* the source, a buffer of this process */
    const uint8_t *src_mem;    /* its memory */
    uint8_t *plain;            /* the same bytes in malloc'd memory, for _from_mem */
    unim_dma_buffer_t *remote; /* the peer's buffer */
    uint8_t *back;             /* a MAP region for reads back with _to_mem */
    uint64_t next;             /* the next free block of the peer's buffer and of back */
};

/* The peer's hash of len bytes at off of its buffer. */
static uint64_t peer_hash(struct pair *p, uint64_t off, uint64_t len)
{
    if (!tell(p->peer_node, OP_ASK, off | len << 32))
        return ~0ull;
    return take(OP_HASH);
}

/* Polls the transfer with unim_dma_status (which runs the callbacks that are due) until it
 * has ended; where it ended. */
static unim_dma_status_t poll_until_ended(unim_dma_transfer_id_t id)
{
    uint64_t give_up = unimem_sys_time_us() + TRANSFER_US;
    unim_dma_status_t s;
    while ((s = unim_dma_status(id)) == DMA_STARTED && unimem_sys_time_us() < give_up)
        unimem_sys_sleep_us(200);
    return s;
}

/* The bytes of one size: written to fresh blocks of the peer's buffer and read back into
 * fresh memory here, the two ways each: buffer to buffer (polled), from plain memory
 * (waited); back into a MAP region (_to_mem) or into a new buffer (buffer to buffer). */
static void one_size(struct pair *p, uint64_t len, uint64_t src_off, uint64_t dst_off, int odd)
{
    char what[64];
    snprintf(what, sizeof what, "%llu B at offsets %llu, %llu", (unsigned long long)len,
             (unsigned long long)src_off, (unsigned long long)dst_off);
    uint64_t block = p->next;
    p->next += (dst_off + len + GUARD + BLOCK - 1) / BLOCK * BLOCK;
    if (p->next > REGION_BYTES) {
        CHECK(what, !"room in the regions");
        return;
    }
    uint64_t at = block + dst_off;
    uint64_t want = fnv1a(p->src_mem + src_off, len);

    int ended = 0;
    unim_dma_transfer_id_t id;
    unim_dma_status_t s;
    if (!odd) {
        id = unim_dma_submit_transfer(p->src, p->remote, src_off, at, len, count_end, &ended);
        CHECK(what, id != 0);
        s = poll_until_ended(id);
    } else {
        id = unim_dma_submit_transfer_from_mem(p->plain, p->remote, src_off, at, len, count_end, &ended);
        CHECK(what, id != 0);
        s = unim_dma_wait(id, TRANSFER_US);
    }
    CHECK(what, s == DMA_COMPLETED && ended == 1);
    CHECK(what, unim_dma_status(id) == DMA_COMPLETED && ended == 1); /* it stays, run once */
    CHECK(what, peer_hash(p, at, len) == (want & PAYLOAD_MASK));

    const uint8_t *landed;
    uint64_t landed_at;
    unim_dma_buffer_t *into = NULL;
    if (!odd) {
        landed = p->back + block;
        landed_at = dst_off;
        id = unim_dma_submit_transfer_to_mem(p->remote, p->back, at, at, len, NULL, NULL);
    } else {
        into = unim_alloc_buf_l((uint32_t)(dst_off + len + GUARD));
        landed = into == NULL ? NULL : unim_buf_get_memory(into);
        landed_at = dst_off;
        id = landed == NULL ? 0 : unim_dma_submit_transfer(p->remote, into, at, dst_off, len, NULL, NULL);
    }
    CHECK(what, id != 0);
    if (id == 0)
        return;
    CHECK(what, unim_dma_wait(id, TRANSFER_US) == DMA_COMPLETED);
    CHECK(what, fnv1a(landed + landed_at, len) == want);
    CHECK(what, all_zero(landed, landed_at) && all_zero(landed + landed_at + len, GUARD));
    if (into != NULL) {
        unim_dma_buf_id_t bid = unim_get_buf_id(into);
        CHECK(what, bid != 0 && unim_get_buf(bid) == into);
        unim_free_buf(into);
        CHECK(what, unimem_last_error() == UNIMEM_OK);
        CHECK_ERROR(what, unim_get_buf(bid) == NULL, UNIMEM_E_NO_SUCH_BUFFER);
    }
}

/* Every power of two from 1 B to 1 MiB at offset 0, and an odd size between it and the next
 * (1 MiB - 13 for the last) at odd offsets. */
static void sweep(struct pair *p)
{
    int transfers = 0;
    for (unsigned k = 0; k <= 20; k++) {
        uint64_t power = 1ull << k;
        uint64_t odd = k == 0 ? 3 : k == 20 ? power - 13 : (power + power / 2) | 1;
        int before = failed;
        one_size(p, power, 0, 0, 0);
        one_size(p, odd, 1 + k % 7, 3 + k % 5, 1);
        transfers += 4;
        if (failed != before)
            printf("sizes %llu and %llu: %d checks failed\n", (unsigned long long)power, (unsigned long long)odd,
                   failed - before);
    }
    printf("%d transfers of 1 B to 1 MiB with node %llu, each into untouched pages: hashes compared\n", transfers,
           (unsigned long long)p->peer_node);
}

/* Sixteen small writes at once, their callbacks run by unim_dma_poll. */
static void polled(struct pair *p)
{
    enum { N = 16, SIZE = 64 };
    uint64_t base = p->next;
    p->next += BLOCK;
    int ended = 0;
    unim_dma_transfer_id_t ids[N];
    for (int i = 0; i < N; i++) {
        ids[i] = unim_dma_submit_transfer(p->src, p->remote, SIZE * i, base + SIZE * i, SIZE, count_end, &ended);
        CHECK("a small write", ids[i] != 0);
    }
    uint64_t give_up = unimem_sys_time_us() + TRANSFER_US;
    size_t ran = 0;
    while (ran < N && unimem_sys_time_us() < give_up) {
        size_t now = unim_dma_poll();
        ran += now;
        if (now == 0)
            unimem_sys_yield();
    }
    CHECK("unim_dma_poll ran every callback once", ran == N && ended == N && unim_dma_poll() == 0);
    for (int i = 0; i < N; i++)
        CHECK("a small write ended", unim_dma_status(ids[i]) == DMA_COMPLETED);
    CHECK("the small writes landed", peer_hash(p, base, N * SIZE) == (fnv1a(p->src_mem, N * SIZE) & PAYLOAD_MASK));
}

/* A wait that runs out leaves the transfer going on; a wait without a limit sees it end. */
static void timed_out_wait(struct pair *p)
{
    uint64_t block = p->next;
    p->next += MIB + BLOCK;
    CHECK("room in the peer's buffer", p->next <= REGION_BYTES);
    if (p->next > REGION_BYTES)
        return;
    unim_dma_transfer_id_t id = unim_dma_submit_transfer(p->src, p->remote, 0, block, MIB, NULL, NULL);
    CHECK("a 1 MiB write", id != 0);
    CHECK_ERROR("a wait of 1 us", unim_dma_wait(id, 1) == DMA_STARTED, UNIMEM_E_TIMEOUT);
    CHECK("a wait without a limit", unim_dma_wait(id, 0) == DMA_COMPLETED);
    CHECK("the write landed", peer_hash(p, block, MIB) == (fnv1a(p->src_mem, MIB) & PAYLOAD_MASK));
}

/* A transfer that fails, and what unim_dma.h says is refused. */
static void refusals(struct pair *p, uint64_t me, uint64_t address)
{
    unim_dma_node_t here = unim_dma_get_node((unim_node_id_t)me);
    unim_dma_node_t there = unim_dma_get_node((unim_node_id_t)p->peer_node);

    /* A write to an address the peer has not mapped fails; its callback runs all the same. */
    unim_dma_buffer_t *nowhere = unim_attach_buf_r(UNMAPPED, 4096, there);
    CHECK("a buffer object for unmapped memory", nowhere != NULL);
    int ended = 0;
    unim_dma_transfer_id_t id = unim_dma_submit_transfer(p->src, nowhere, 0, 0, 4096, count_end, &ended);
    CHECK("a write to unmapped memory is posted", id != 0);
    CHECK("a write to unmapped memory fails", unim_dma_wait(id, TRANSFER_US) == DMA_FAILED && ended == 1);
    CHECK("a failed transfer stays failed", unim_dma_status(id) == DMA_FAILED);

    CHECK_ERROR("no buffer allocated on another node", unim_alloc_buf_r(64, there) == NULL,
                UNIMEM_E_REMOTE_ALLOCATION);
    unim_dma_buffer_t *local = unim_alloc_buf_r(64, here);
    CHECK("unim_alloc_buf_r for this node", local != NULL && unim_buf_get_memory(local) != NULL);
    unim_free_buf(local);
    CHECK_ERROR("the memory of a buffer on another node", unim_buf_get_memory(p->remote) == NULL,
                UNIMEM_E_NOT_LOCAL);
    CHECK_ERROR("both ends remote", unim_dma_submit_transfer(nowhere, p->remote, 0, 0, 8, NULL, NULL) == 0,
                UNIMEM_E_BOTH_REMOTE);
    unim_free_buf(nowhere); /* forgets it: the memory is the peer's */
    CHECK("unim_free_buf of an attached buffer", unimem_last_error() == UNIMEM_OK);
    CHECK_ERROR("a freed buffer object", unim_get_buf_id(nowhere) == 0, UNIMEM_E_NO_SUCH_BUFFER);
    CHECK_ERROR("buffer id 0", unim_get_buf(0) == NULL, UNIMEM_E_NO_SUCH_BUFFER);
    CHECK_ERROR("a buffer id never given", unim_get_buf(0x5eed0000000ull) == NULL, UNIMEM_E_NO_SUCH_BUFFER);
    CHECK_ERROR("a NULL buffer object", unim_get_buf_id(NULL) == 0, UNIMEM_E_NULL);
    CHECK_ERROR("past the end of a buffer",
                unim_dma_submit_transfer(p->src, p->remote, 0, REGION_BYTES - 4, 8, NULL, NULL) == 0,
                UNIMEM_E_OUTSIDE_BUFFER);
    CHECK_ERROR("a transfer of 0 bytes", unim_dma_submit_transfer(p->src, p->remote, 0, 0, 0, NULL, NULL) == 0,
                UNIMEM_E_TRANSFER + UNIMEM_CQE_BAD_REQUEST);
    CHECK_ERROR("a buffer of 0 bytes", unim_alloc_buf_l(0) == NULL, UNIMEM_E_EMPTY_BUFFER);
    CHECK_ERROR("an attached buffer of 0 bytes", unim_attach_buf_r(address, 0, there) == NULL,
                UNIMEM_E_EMPTY_BUFFER);
    CHECK_ERROR("no such node", unim_dma_get_node((unim_node_id_t)getNumberBoards()) == NULL,
                UNIMEM_E_NO_SUCH_NODE);
    CHECK("a transfer id never given", unim_dma_status(0x5eed) == DMA_UNKNOWN);
}

static void initiator(void)
{
    uint64_t me = getBoardPid(), nodes = getNumberBoards();
    CHECK("two nodes at least (--nodes 2)", nodes >= 2);
    if (nodes < 2)
        return;
    struct pair p = { .peer_node = (me + 1) % nodes };

    /* Before unim_dma_init, and with another node's id. */
    CHECK_ERROR("a buffer before unim_dma_init", unim_alloc_buf_l(64) == NULL, UNIMEM_E_NOT_INITIALISED);
    CHECK_ERROR("unim_dma_init with another node's id", unim_dma_init((unim_node_id_t)p.peer_node) == -1,
                UNIMEM_E_NOT_THIS_NODE);
    CHECK("unim_dma_init", unim_dma_init((unim_node_id_t)me) == 0);

    CHECK("registering", unimem_mailbox_register(OP_ADDRESS, 'r', 0) == UNIMEM_OK &&
                             unimem_mailbox_register(OP_HASH, 'r', 0) == UNIMEM_OK &&
                             unimem_mailbox_register(OP_VERDICT, 'r', 0) == UNIMEM_OK);
    CHECK("remoteFork of the peer", remoteFork("c-rdma-pair", PEER_OF(me), p.peer_node) != 0);
    uint64_t address = take(OP_ADDRESS);
    CHECK("the peer's buffer", address != 0 && address != ~0ull);
    if (address == 0 || address == ~0ull)
        return;
    printf("the peer on node %llu has its buffer at %#llx\n", (unsigned long long)p.peer_node,
           (unsigned long long)address);

    unim_dma_node_t there = unim_dma_get_node((unim_node_id_t)p.peer_node);
    CHECK("the peer's node object", there != NULL);
    p.remote = unim_attach_buf_r(address, REGION_BYTES, there);
    p.src = unim_alloc_buf_l(MIB + 64);
    uint8_t *src = p.src == NULL ? NULL : unim_buf_get_memory(p.src);
    p.src_mem = src;
    p.plain = malloc(MIB + 64);
    int64_t back = unimem_sys_map(REGION_BYTES, UNIMEM_MAP_WRITABLE);
    CHECK("the buffers", p.remote != NULL && src != NULL && p.plain != NULL && back > 0);
    if (p.remote == NULL || src == NULL || p.plain == NULL || back <= 0)
        return;
    p.back = (uint8_t *)(uintptr_t)back;
    for (uint32_t i = 0; i < MIB + 64; i++)
        src[i] = (uint8_t)(((i * 0x9e3779b97f4a7c15ull) >> 56) ^ (i >> 9) ^ (i * 131));
    memcpy(p.plain, src, MIB + 64);
    unim_dma_buf_id_t src_id = unim_get_buf_id(p.src);
    CHECK("a buffer's id names it", src_id != 0 && unim_get_buf(src_id) == p.src);

    sweep(&p);
    polled(&p);
    timed_out_wait(&p);
    refusals(&p, me, address);

    /* The peer is done: it cleans up and answers with its own verdict. */
    CHECK("releasing the peer", tell(p.peer_node, OP_ASK, 0));
    uint64_t peer_failed = take(OP_VERDICT);
    CHECK("the peer's checks", peer_failed == 0);

    unim_dma_cleanup();
    CHECK_ERROR("a buffer after unim_dma_cleanup", unim_get_buf(src_id) == NULL, UNIMEM_E_NOT_INITIALISED);
    CHECK("unim_dma_init again", unim_dma_init((unim_node_id_t)me) == 0);
    CHECK_ERROR("cleanup freed the buffers", unim_get_buf(src_id) == NULL, UNIMEM_E_NO_SUCH_BUFFER);
    unim_dma_buffer_t *again = unim_alloc_buf_l(4096);
    CHECK("a buffer after init again", again != NULL && unim_get_buf_id(again) != src_id);
    unim_dma_cleanup();
}

int main(void)
{
    uint64_t arg = readThreadArgument();
    if (arg != _EMPTY_THREAD_ARGUMENT_ && arg >> 16 == PEER_ROLE)
        return peer(arg & 0xffff);
    initiator();
    return verdict("c-rdma-pair");
}

/*
 * c-active: Active Access (docs/hw/active-access.md) through unimem_active.h, the C twin of the
 * semantics phase of the Rust `active-aa`.
 *
 * Started without a thread argument (as `cargo xtask run` starts it), it is the initiator: it
 * starts itself on the next node with remoteFork (a remote spawn keeps the domain) as the
 * owner, which opens a log (unimem_active_open), marks pages of its own buffer
 * (unimem_assoc_page: an active put, put logging, get logging with data, get counting, one page
 * left plain), checks the refusals the header documents (an unmapped address, an unknown action,
 * a foreign IUID, a handler that is no IUID; a process of the job that does not hold the PD on
 * the node gets no IUID), and sends the buffer's address by notification. The initiator writes
 * and reads those pages with unim_dma.h; the owner then takes its log entry by entry
 * (unimem_active_next, unimem_active_pending) and checks each entry's header and data and its
 * memory (an active put not written, a logged put written). Then the active flush: the
 * initiator puts to the active put page and flushes (unimem_active_flush of the owner's
 * flushing page), which must not return before the owner's handler, asleep for FLUSH_DELAY_US,
 * has taken the put. Then the IUIDs: the initiator takes every one its node has left until
 * UNIMEM_SYS_BUSY, gives one back (unimem_active_close) and takes it again, and gives them all
 * back; the owner closes its log, after which its active put page is plain (a put is written).
 * Each failed check is printed; the verdict line is "c-active: N of M checks failed", and the
 * exit status N.
 *
 *   cargo xtask run c-active --nodes 2 --on 0
 */
#include "checks.h"
#include "peers.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unim_dma.h>
#include <unimem.h>
#include <unimem_active.h>
#include <unimem_mailbox.h>
#include <unimem_sys.h>

#define PAGE 4096u
#define PAGES 8u
#define TRANSFER_US 60000000ull
/* How long the owner waits for the entries it expects. */
#define DRAIN_US 10000000ull
/* A VA no process maps. */
#define UNMAPPED 0x100000ull

/* Thread arguments: the role in [31:16], the node to answer in [15:0] (and the IUID in [39:32]). */
#define OWNER_ROLE 0xac71ull
#define PEEK_ROLE 0xac72ull
#define ROLE_OF(role, node) ((role) << 16 | (uint64_t)(node))

/* Notifications. Owner to initiator: its buffer's address; its failed checks. Initiator to
 * owner: the accesses are done. Peek to owner: what was refused. */
#define OP_ADDRESS 8
#define OP_RESULT 10
#define OP_PHASE 9
#define OP_PEEK 12
/* The owner's log tells it of its entries here ('r': unimem_active_wait sleeps on it). */
#define OP_NOTICE 13
/* An opcode the owner never registers. */
#define OP_UNREGISTERED 14

/* The owner's pages. */
#define P_ACTIVE_PUT 0
#define P_PUT_LOG 1
#define P_GET_LOG 2
#define P_GET_COUNT 3
#define P_PLAIN 5
#define P_FLUSH 6
#define GETS 5

/* The initiator's phases (OP_PHASE). */
#define PHASE_CHECK 1
#define PHASE_FLUSH 2
#define PHASE_CLOSE 3
#define PHASE_DONE 4
/* How long the owner's handler sleeps before it takes the flushed put. */
#define FLUSH_DELAY_US 500000ull

/* The owner's memory at (page, offset), and what the initiator writes (never the same byte). */
static uint8_t pattern(uint64_t page, uint64_t i)
{
    return (uint8_t)(page * 37 + i * 131 + (i >> 8) * 7 + 1);
}
static uint8_t written(uint64_t page, uint64_t i)
{
    return pattern(page, i) ^ 0x5a;
}

/* ---- A log entry's header (docs/hw/active-access.md, "Log entry header") ---- */

struct header {
    uint8_t kind, flags, iuid, index;
    uint16_t node, len, tid, first_seq;
    uint64_t va;
};

static struct header parse(const uint8_t *e)
{
    struct header h;
    h.kind = e[0];
    h.flags = e[1];
    memcpy(&h.node, e + 2, 2);
    h.iuid = e[6];
    memcpy(&h.len, e + 8, 2);
    memcpy(&h.tid, e + 10, 2);
    memcpy(&h.first_seq, e + 12, 2);
    h.index = e[14];
    memcpy(&h.va, e + 16, 8);
    return h;
}

#define KIND_PUT 1
#define KIND_GET 2
#define FLAG_DATA 1
#define FLAG_WRITTEN 2

/* ---- The peek: a process of the job on the owner's node that does not hold the PD ---- */

static int peek(uint64_t owner, uint32_t iuid)
{
    uint32_t got = 0xffff;
    uint64_t open = unimem_active_open(&got);
    int64_t page = unimem_sys_map(PAGE, UNIMEM_MAP_WRITABLE);
    uint64_t mark = page > 0 ? unimem_assoc_page((void *)(uintptr_t)page, UNIMEM_ACTIVE_PUT_LOG, iuid) : 0;
    if (open != UNIMEM_E_SYSCALL + UNIMEM_SYS_NO_PD || mark == UNIMEM_OK)
        printf("peek: unimem_active_open %#llx, unimem_assoc_page %#llx\n", (unsigned long long)open,
               (unsigned long long)mark);
    tell(owner, OP_PEEK, (uint64_t)(open == UNIMEM_E_SYSCALL + UNIMEM_SYS_NO_PD) | (uint64_t)(mark != UNIMEM_OK) << 1);
    return 0;
}

/* ---- The owner ---- */

struct seen {
    int active_put, logged, get_data, unexpected, entries;
    uint64_t logged_va[2];
    uint16_t logged_len[2];
    /* (node, tid, first_seq, index) of the counted gets: a read retried after a lost packet is
     * logged again, and the key tells the copies apart. */
    uint64_t counted[16];
    int count;
};

static void classify(struct seen *s, const struct header *h, const uint8_t *data, uint64_t len, uint64_t base,
                     uint64_t initiator, uint32_t iuid)
{
    uint64_t k = (h->va - base) / PAGE, off = (h->va - base) % PAGE;
    int ok_origin = h->node == initiator && h->iuid == iuid;
    s->entries++;
    if (ok_origin && k == P_ACTIVE_PUT && h->kind == KIND_PUT && h->flags == FLAG_DATA && off == 16 && h->len == 40 &&
        len == 40) {
        int same = 1;
        for (uint64_t i = 0; i < 40; i++)
            same &= data[i] == written(P_ACTIVE_PUT, i);
        if (same) {
            s->active_put++;
            return;
        }
    }
    if (ok_origin && k == P_PUT_LOG && h->kind == KIND_PUT && h->flags == FLAG_WRITTEN && len == 0 && s->logged < 2) {
        s->logged_va[s->logged] = h->va;
        s->logged_len[s->logged] = h->len;
        s->logged++;
        return;
    }
    if (ok_origin && k == P_GET_LOG && h->kind == KIND_GET && (h->flags & FLAG_DATA) && off == 0x40 && h->len == 64 &&
        len == 64) {
        int same = 1;
        for (uint64_t i = 0; i < 64; i++)
            same &= data[i] == pattern(P_GET_LOG, 0x40 + i);
        if (same) {
            s->get_data++;
            return;
        }
    }
    if (ok_origin && k == P_GET_COUNT && h->kind == KIND_GET && !(h->flags & FLAG_DATA) && len == 0 && h->len == 8) {
        uint64_t key = (uint64_t)h->node << 48 | (uint64_t)h->tid << 32 | (uint64_t)h->first_seq << 16 | h->index;
        for (int i = 0; i < s->count; i++)
            if (s->counted[i] == key)
                return;
        if (s->count < 16)
            s->counted[s->count++] = key;
        return;
    }
    printf("unexpected entry: kind %u flags %u node %u iuid %u len %u va %#llx data %llu\n", h->kind, h->flags,
           h->node, h->iuid, h->len, (unsigned long long)h->va, (unsigned long long)len);
    s->unexpected++;
}

static int owner(uint64_t initiator)
{
    uint64_t me = getBoardPid();
    CHECK("the owner registers its opcodes", unimem_mailbox_register(OP_PHASE, 'r', 0) == UNIMEM_OK &&
                                                 unimem_mailbox_register(OP_PEEK, 'r', 0) == UNIMEM_OK);
    CHECK_RETURNS("unimem_active_open with NULL", unimem_active_open(NULL), UNIMEM_E_NULL, 1);
    uint32_t iuid = 0xffff;
    CHECK_RETURNS("unimem_active_open", unimem_active_open(&iuid), UNIMEM_OK, 1);
    CHECK("an IUID", iuid < UNIMEM_ACTIVE_IUIDS);
    int64_t mapped = unimem_sys_map(PAGES * PAGE, UNIMEM_MAP_WRITABLE);
    CHECK("the owner's buffer", mapped > 0);
    if (iuid >= UNIMEM_ACTIVE_IUIDS || mapped <= 0) {
        tell(initiator, OP_ADDRESS, 0);
        return failed;
    }
    uint8_t *buf = (uint8_t *)(uintptr_t)mapped;
    uint64_t base = (uint64_t)mapped;
    for (uint64_t i = 0; i < PAGES * PAGE; i++)
        buf[i] = pattern(i / PAGE, i % PAGE);

    uint64_t pending = 7;
    CHECK_RETURNS("an empty log", unimem_active_pending(iuid, &pending), UNIMEM_OK, 1);
    CHECK("an empty log has nothing pending", pending == 0);
    uint8_t entry[UNIMEM_ACTIVE_ENTRY_BYTES], data[UNIMEM_ACTIVE_MAX_DATA];
    uint64_t len = 7;
    CHECK_RETURNS("next of an empty log", unimem_active_next(iuid, entry, data, &len), UNIMEM_E_WOULD_BLOCK, 1);

    CHECK_RETURNS("an active put page", unimem_assoc_page(buf + P_ACTIVE_PUT * PAGE, UNIMEM_ACTIVE_PUT, iuid),
                  UNIMEM_OK, 1);
    CHECK_RETURNS("a put logging page", unimem_assoc_page(buf + P_PUT_LOG * PAGE, UNIMEM_ACTIVE_PUT_LOG, iuid),
                  UNIMEM_OK, 1);
    CHECK_RETURNS("a get logging page", unimem_assoc_page(buf + P_GET_LOG * PAGE, UNIMEM_ACTIVE_GET_LOG, iuid),
                  UNIMEM_OK, 1);
    CHECK_RETURNS("a get counting page (an address inside it)",
                  unimem_assoc_page(buf + P_GET_COUNT * PAGE + 100, UNIMEM_ACTIVE_GET_COUNT, iuid), UNIMEM_OK, 1);
    CHECK_RETURNS("the flushing page", unimem_assoc_page(buf + P_FLUSH * PAGE, UNIMEM_ACTIVE_FLUSH, iuid), UNIMEM_OK,
                  1);
    /* Marked and unmarked again: plain. */
    CHECK_RETURNS("marking the plain page", unimem_assoc_page(buf + P_PLAIN * PAGE, UNIMEM_ACTIVE_PUT, iuid),
                  UNIMEM_OK, 1);
    CHECK_RETURNS("unmarking it (actions 0)", unimem_assoc_page(buf + P_PLAIN * PAGE, 0, iuid), UNIMEM_OK, 1);

    /* The refusals. */
    uint64_t refused = UNIMEM_E_SYSCALL + UNIMEM_SYS_BAD_ARGUMENT;
    CHECK_RETURNS("a page not mapped", unimem_assoc_page((void *)(uintptr_t)UNMAPPED, UNIMEM_ACTIVE_PUT_LOG, iuid),
                  refused, 1);
    CHECK_RETURNS("an unknown action", unimem_assoc_page(buf + P_PLAIN * PAGE, 1u << 7, iuid), refused, 1);
    CHECK_RETURNS("a foreign IUID", unimem_assoc_page(buf + P_PLAIN * PAGE, UNIMEM_ACTIVE_PUT_LOG, iuid ^ 1), refused,
                  1);
    CHECK_RETURNS("a handler that is no IUID", unimem_assoc_page(buf + P_PLAIN * PAGE, UNIMEM_ACTIVE_PUT_LOG, 256),
                  UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("next of a log not opened", unimem_active_next(iuid ^ 1, entry, data, &len), UNIMEM_E_BAD_ARGUMENT,
                  1);
    CHECK_RETURNS("next of no IUID", unimem_active_next(UNIMEM_ACTIVE_IUIDS, entry, data, &len),
                  UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("pending of a log not opened", unimem_active_pending(iuid ^ 1, &pending), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("pending into NULL", unimem_active_pending(iuid, NULL), UNIMEM_E_NULL, 1);
    CHECK_RETURNS("next into a NULL entry", unimem_active_next(iuid, NULL, data, &len), UNIMEM_E_NULL, 1);
    CHECK_RETURNS("next into NULL data", unimem_active_next(iuid, entry, NULL, &len), UNIMEM_E_NULL, 1);
    CHECK_RETURNS("next into a NULL length", unimem_active_next(iuid, entry, data, NULL), UNIMEM_E_NULL, 1);
    CHECK("nothing written on refusal", len == 7);

    /* Another process of the job on this node, not the PD's holder. */
    CHECK("remoteFork of the peek", remoteFork("c-active", ROLE_OF(PEEK_ROLE, me) | (uint64_t)iuid << 32, me) != 0);
    uint64_t peeked = take(OP_PEEK);
    CHECK("a process without the PD gets no IUID (UNIMEM_SYS_NO_PD)", peeked != ~0ull && (peeked & 1));
    CHECK("a process without the PD marks nothing with the owner's IUID", peeked != ~0ull && (peeked & 2));

    /* Handler dispatch through the mailbox: only on an opcode this process receives. */
    CHECK_RETURNS("notices on an opcode not registered", unimem_active_notify(iuid, OP_UNREGISTERED),
                  UNIMEM_E_SYSCALL + UNIMEM_SYS_NOT_REGISTERED, 1);
    CHECK_RETURNS("notices on a kernel opcode", unimem_active_notify(iuid, 3), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("notices of a log not opened", unimem_active_notify(iuid ^ 1, OP_NOTICE), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("waiting on a log not opened", unimem_active_wait(iuid ^ 1, 1000), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("the notice opcode", unimem_mailbox_register(OP_NOTICE, 'r', 0), UNIMEM_OK, 1);
    CHECK_RETURNS("unimem_active_notify", unimem_active_notify(iuid, OP_NOTICE), UNIMEM_OK, 1);
    CHECK_RETURNS("a wait on an empty log times out", unimem_active_wait(iuid, 20000), UNIMEM_E_TIMEOUT, 1);

    CHECK("sending the buffer's address", tell(initiator, OP_ADDRESS, base));
    CHECK("the initiator's accesses are done", take(OP_PHASE) == PHASE_CHECK);

    struct seen s;
    memset(&s, 0, sizeof s);
    CHECK_RETURNS("pending after the accesses", unimem_active_pending(iuid, &pending), UNIMEM_OK, 1);
    CHECK("entries pending after the accesses", pending == 1);
    uint64_t give_up = unimem_sys_time_us() + DRAIN_US;
    for (;;) {
        uint64_t st = unimem_active_next(iuid, entry, data, &len);
        if (st == UNIMEM_OK) {
            struct header h = parse(entry);
            classify(&s, &h, data, len, base, initiator, iuid);
            continue;
        }
        if (st != UNIMEM_E_WOULD_BLOCK) {
            CHECK_RETURNS("unimem_active_next", st, UNIMEM_OK, 0);
            break;
        }
        CHECK("no entry: nothing pending", unimem_active_pending(iuid, &pending) == UNIMEM_OK && pending == 0);
        int all = s.active_put >= 1 && s.logged >= 2 && s.get_data >= 1 && s.count >= GETS;
        uint64_t now = unimem_sys_time_us();
        if (all || now > give_up)
            break;
        /* Asleep in the mailbox until the engine's interrupt tells this process. */
        uint64_t woke = unimem_active_wait(iuid, give_up - now);
        if (woke != UNIMEM_OK) {
            CHECK_RETURNS("unimem_active_wait", woke, UNIMEM_OK, 0);
            break;
        }
    }
    uint64_t notices = 0, message = 0, sender = 0;
    while (unimem_mailbox_receive(OP_NOTICE, 0, &message, &sender) == UNIMEM_OK)
        notices += UNIMEM_MESSAGE_PAYLOAD(message) == iuid;
    CHECK("the log's notices name its IUID", notices >= 1 || s.entries == 0);
    CHECK_RETURNS("polled again", unimem_active_notify(iuid, 0), UNIMEM_OK, 1);
    CHECK("no unexpected entries", s.unexpected == 0);
    CHECK("the active put logged once with its data", s.active_put == 1);
    int puts = s.logged == 2 &&
               ((s.logged_va[0] == base + P_PUT_LOG * PAGE + 0x80 && s.logged_len[0] == 128 &&
                 s.logged_va[1] == base + P_PUT_LOG * PAGE + 0x100 && s.logged_len[1] == 172) ||
                (s.logged_va[1] == base + P_PUT_LOG * PAGE + 0x80 && s.logged_len[1] == 128 &&
                 s.logged_va[0] == base + P_PUT_LOG * PAGE + 0x100 && s.logged_len[0] == 172));
    CHECK("the logged put: one entry per packet, without data", puts);
    CHECK("the logged get, with its data", s.get_data == 1);
    CHECK("the counted gets", s.count == GETS);
    int kept = 1, landed = 1;
    for (uint64_t i = 0; i < 40; i++)
        kept &= buf[P_ACTIVE_PUT * PAGE + 16 + i] == pattern(P_ACTIVE_PUT, 16 + i);
    for (uint64_t i = 0; i < 300; i++)
        landed &= buf[P_PUT_LOG * PAGE + 0x80 + i] == written(P_PUT_LOG, i);
    CHECK("an active put is not written to memory", kept);
    CHECK("a logged put is written to memory", landed);
    CHECK("the plain page was written, not logged", buf[P_PLAIN * PAGE] == written(P_PLAIN, 0));
    CHECK_RETURNS("the log drained", unimem_active_pending(iuid, &pending), UNIMEM_OK, 1);
    CHECK("nothing pending at the end", pending == 0);
    printf("owner on node %llu: %d entries taken from log %u\n", (unsigned long long)me, s.entries, iuid);
    tell(initiator, OP_RESULT, (uint64_t)failed);

    /* The flush: the initiator's put is in the log, and its flush waits for this handler. */
    CHECK("the initiator flushes", take(OP_PHASE) == PHASE_FLUSH);
    unimem_sys_sleep_us(FLUSH_DELAY_US);
    int flushed = 0, other = 0;
    while (unimem_active_next(iuid, entry, data, &len) == UNIMEM_OK) {
        struct header h = parse(entry);
        if (h.kind == KIND_PUT && h.va == base + P_ACTIVE_PUT * PAGE && h.len == 8 && len == 8)
            flushed++;
        else
            other++;
    }
    CHECK("the flushed put, taken once", flushed == 1 && other == 0);
    tell(initiator, OP_RESULT, (uint64_t)failed);

    /* Closing the log: it is gone, and its pages are plain again. */
    CHECK("the initiator asks for the close", take(OP_PHASE) == PHASE_CLOSE);
    CHECK_RETURNS("unimem_active_close", unimem_active_close(iuid), UNIMEM_OK, 1);
    CHECK_RETURNS("closing it again", unimem_active_close(iuid), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("pending of a closed log", unimem_active_pending(iuid, &pending), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("next of a closed log", unimem_active_next(iuid, entry, data, &len), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("marking with a closed IUID", unimem_assoc_page(buf + P_PLAIN * PAGE, UNIMEM_ACTIVE_PUT, iuid),
                  refused, 1);
    tell(initiator, OP_RESULT, (uint64_t)failed);
    CHECK("the initiator put to the unmarked page", take(OP_PHASE) == PHASE_DONE);
    int written_now = 1;
    for (uint64_t i = 0; i < 40; i++)
        written_now &= buf[P_ACTIVE_PUT * PAGE + 16 + i] == written(P_ACTIVE_PUT, 100 + i);
    CHECK("a put to the page of a closed log is written", written_now);
    tell(initiator, OP_RESULT, (uint64_t)failed);
    /* The initiator has seen its verdict: the owner may go. */
    take(OP_PHASE);
    return failed;
}

/* ---- The initiator ---- */

static void initiator(void)
{
    uint64_t me = getBoardPid(), nodes = getNumberBoards();
    CHECK("two nodes at least (--nodes 2)", nodes >= 2);
    if (nodes < 2)
        return;
    uint64_t node = (me + 1) % nodes;
    CHECK("unim_dma_init", unim_dma_init((unim_node_id_t)me) == 0);
    CHECK("registering", unimem_mailbox_register(OP_ADDRESS, 'r', 0) == UNIMEM_OK &&
                             unimem_mailbox_register(OP_RESULT, 'r', 0) == UNIMEM_OK);
    /* The initiator holds the PD on its node: it may open a log of its own. */
    uint32_t mine = 0xffff;
    CHECK_RETURNS("the initiator's own log", unimem_active_open(&mine), UNIMEM_OK, 1);
    CHECK("remoteFork of the owner", remoteFork("c-active", ROLE_OF(OWNER_ROLE, me), node) != 0);
    uint64_t address = take(OP_ADDRESS);
    CHECK("the owner's buffer", address != 0 && address != ~0ull);
    if (address == 0 || address == ~0ull)
        return;
    printf("the owner on node %llu marked its pages at %#llx\n", (unsigned long long)node,
           (unsigned long long)address);
    unim_dma_node_t there = unim_dma_get_node((unim_node_id_t)node);
    unim_dma_buffer_t *remote = there == NULL ? NULL : unim_attach_buf_r(address, PAGES * PAGE, there);
    unim_dma_buffer_t *src = unim_alloc_buf_l(PAGE);
    unim_dma_buffer_t *back = unim_alloc_buf_l(PAGE);
    uint8_t *s = src == NULL ? NULL : unim_buf_get_memory(src);
    uint8_t *b = back == NULL ? NULL : unim_buf_get_memory(back);
    CHECK("the buffers", remote != NULL && s != NULL && b != NULL);
    if (remote == NULL || s == NULL || b == NULL)
        return;
#define MOVE(what, from, from_off, to, to_off, n)                                                                    \
    do {                                                                                                           \
        unim_dma_transfer_id_t id_ = unim_dma_submit_transfer(from, to, from_off, to_off, n, NULL, NULL);          \
        CHECK(what, id_ != 0 && unim_dma_wait(id_, TRANSFER_US) == DMA_COMPLETED);                                 \
    } while (0)

    /* An active put: acknowledged, and the owner's memory keeps its bytes. */
    for (uint64_t i = 0; i < 40; i++)
        s[i] = written(P_ACTIVE_PUT, i);
    MOVE("an active put", src, 0, remote, P_ACTIVE_PUT * PAGE + 16, 40);
    MOVE("reading the active put page", remote, P_ACTIVE_PUT * PAGE + 16, back, 0, 40);
    int kept = 1;
    for (uint64_t i = 0; i < 40; i++)
        kept &= b[i] == pattern(P_ACTIVE_PUT, 16 + i);
    CHECK("an active put is not written", kept);
    /* Put logging: two packets (the 256 B windows of 0x80..0x1ac), written. */
    for (uint64_t i = 0; i < 300; i++)
        s[i] = written(P_PUT_LOG, i);
    MOVE("a logged put", src, 0, remote, P_PUT_LOG * PAGE + 0x80, 300);
    MOVE("reading the logged put", remote, P_PUT_LOG * PAGE + 0x80, back, 0, 300);
    CHECK("a logged put lands", memcmp(b, s, 300) == 0);
    /* Get logging with data, and get counting. */
    MOVE("a logged get", remote, P_GET_LOG * PAGE + 0x40, back, 0, 64);
    int served = 1;
    for (uint64_t i = 0; i < 64; i++)
        served &= b[i] == pattern(P_GET_LOG, 0x40 + i);
    CHECK("a logged get is served", served);
    for (int i = 0; i < GETS; i++)
        MOVE("a counted get", remote, P_GET_COUNT * PAGE, back, 0, 8);
    /* A plain page: written, not logged. */
    s[0] = written(P_PLAIN, 0);
    MOVE("a plain put", src, 0, remote, P_PLAIN * PAGE, 8);

    CHECK("announcing the check", tell(node, OP_PHASE, PHASE_CHECK));
    uint64_t owner_failed = take(OP_RESULT);
    CHECK("the owner's checks", owner_failed == 0);

    /* The active flush: a put, then the flush, which returns only once the owner's handler
     * (asleep for FLUSH_DELAY_US) has taken it. */
    CHECK_RETURNS("a flush of no node", unimem_active_flush(NULL, address + P_FLUSH * PAGE, TRANSFER_US),
                  UNIMEM_E_NULL, 1);
    for (uint64_t i = 0; i < 8; i++)
        s[i] = written(P_ACTIVE_PUT, 200 + i);
    MOVE("the put to flush", src, 0, remote, P_ACTIVE_PUT * PAGE, 8);
    CHECK("announcing the flush", tell(node, OP_PHASE, PHASE_FLUSH));
    uint64_t t0 = unimem_sys_time_us();
    CHECK_RETURNS("unimem_active_flush", unimem_active_flush(there, address + P_FLUSH * PAGE, TRANSFER_US), UNIMEM_OK,
                  1);
    uint64_t waited = unimem_sys_time_us() - t0;
    CHECK("the owner's handler took the flushed put", take(OP_RESULT) == 0);
    CHECK("the flush waited for the owner's handler", waited >= FLUSH_DELAY_US * 4 / 5);
    printf("flush completed after %llu us (the handler slept %llu us)\n", (unsigned long long)waited,
           (unsigned long long)FLUSH_DELAY_US);

    /* This node's IUIDs: every one left taken until Busy, one given back and taken again. */
    uint32_t extra[UNIMEM_ACTIVE_IUIDS];
    int taken = 0;
    uint64_t st = UNIMEM_OK;
    while (taken < UNIMEM_ACTIVE_IUIDS && (st = unimem_active_open(&extra[taken])) == UNIMEM_OK)
        taken++;
    CHECK("opening until the node has no IUID left: Busy", st == UNIMEM_E_SYSCALL + UNIMEM_SYS_BUSY);
    CHECK("every IUID of the node taken, the initiator's first one included", taken + 1 == UNIMEM_ACTIVE_IUIDS);
    printf("initiator on node %llu: %d IUIDs taken before Busy\n", (unsigned long long)me, taken + 1);
    if (taken > 0) {
        uint32_t given = extra[taken - 1];
        CHECK_RETURNS("giving one back", unimem_active_close(given), UNIMEM_OK, 1);
        CHECK_RETURNS("taking it again", unimem_active_open(&extra[taken - 1]), UNIMEM_OK, 1);
        CHECK("the IUID given back is the one taken again", extra[taken - 1] == given);
        uint32_t none = 0xffff;
        CHECK_RETURNS("none left again", unimem_active_open(&none), UNIMEM_E_SYSCALL + UNIMEM_SYS_BUSY, 1);
        for (int i = 0; i < taken; i++)
            CHECK_RETURNS("giving them back", unimem_active_close(extra[i]), UNIMEM_OK, 1);
        CHECK_RETURNS("one given back twice", unimem_active_close(extra[0]), UNIMEM_E_BAD_ARGUMENT, 1);
    }
    CHECK_RETURNS("an IUID out of range", unimem_active_close(UNIMEM_ACTIVE_IUIDS), UNIMEM_E_BAD_ARGUMENT, 1);

    /* The owner closes its log: its active put page is plain again. */
    CHECK("announcing the close", tell(node, OP_PHASE, PHASE_CLOSE));
    CHECK("the owner's close checks", take(OP_RESULT) == 0);
    for (uint64_t i = 0; i < 40; i++)
        s[i] = written(P_ACTIVE_PUT, 100 + i);
    MOVE("a put to the page of a closed log", src, 0, remote, P_ACTIVE_PUT * PAGE + 16, 40);
    MOVE("reading it back", remote, P_ACTIVE_PUT * PAGE + 16, back, 0, 40);
    CHECK("a put to the page of a closed log is written", memcmp(b, s, 40) == 0);
    CHECK("announcing the end", tell(node, OP_PHASE, PHASE_DONE));
    CHECK("the owner's last checks", take(OP_RESULT) == 0);
    tell(node, OP_PHASE, PHASE_DONE);

    /* Nothing touched the initiator's own log. */
    uint64_t pending = 7;
    CHECK_RETURNS("the initiator's log", unimem_active_pending(mine, &pending), UNIMEM_OK, 1);
    CHECK("the initiator's log is empty", pending == 0);
    CHECK_RETURNS("closing the initiator's log", unimem_active_close(mine), UNIMEM_OK, 1);
    unim_dma_cleanup();
}

int main(void)
{
    uint64_t arg = readThreadArgument();
    if (arg != _EMPTY_THREAD_ARGUMENT_ && (arg >> 16 & 0xffff) == OWNER_ROLE)
        return owner(arg & 0xffff);
    if (arg != _EMPTY_THREAD_ARGUMENT_ && (arg >> 16 & 0xffff) == PEEK_ROLE)
        return peek(arg & 0xffff, (uint32_t)(arg >> 32 & 0xff));
    initiator();
    return verdict("c-active");
}

/*
 * unimem_active.h: Active Access for C programs (Besta and Hoefler, ICS '15;
 * docs/hw/active-access.md). Link libunimem_c.a.
 *
 * The owner of a page marks it, and every remote put or get of its PD that touches it is logged
 * by the PLDMA into a log in the owner's memory, where the program takes the entries. Puts and
 * gets do not change on the origin side: they are unim_dma.h transfers.
 *
 *   unimem_active_open      an IUID of this process's and its (empty) log; the process must hold
 *                           its protection domain on this node (the first of its job there);
 *   unimem_assoc_page       the seed's assoc_page(addr, act, hlr_id): the handler id is the
 *                           IUID, the handler the program's own loop over unimem_active_next;
 *   unimem_active_notify    handler dispatch through the mailbox: each entry appended is told
 *                           on an opcode this process registered (unimem_mailbox.h: 'r', 's'
 *                           or 'e'), payload the IUID;
 *   unimem_active_wait      blocks until entries wait (asleep in the mailbox when the log
 *                           notifies, else looking every millisecond);
 *   unimem_active_next      the oldest entry, taken: its 32-byte header (layout in
 *                           docs/hw/active-access.md, "Log entry header") and its data;
 *   unimem_active_pending   whether entries wait;
 *   unimem_active_flush     the seed's flush(target), from the initiator's side;
 *   unimem_active_close     gives the IUID back (a process's IUIDs are also given back when it
 *                           ends).
 *
 * Every call returns a status (unimem_error.h), 0 for success, also left in
 * unimem_last_error().
 */
#ifndef UNIMEM_ACTIVE_H
#define UNIMEM_ACTIVE_H

#include <stdint.h>

#include "unim_dma.h"
#include "unimem_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Action bits of unimem_assoc_page (0 unmarks the page). */
#define UNIMEM_ACTIVE_W 1
#define UNIMEM_ACTIVE_WL 2
#define UNIMEM_ACTIVE_WLD 4
#define UNIMEM_ACTIVE_RL 8
#define UNIMEM_ACTIVE_RLD 16
#define UNIMEM_ACTIVE_E 32
#define UNIMEM_ACTIVE_FLUSH 64
/* The seed's combinations. */
#define UNIMEM_ACTIVE_PUT 38     /* WL | WLD | E: not written, logged with its data */
#define UNIMEM_ACTIVE_PUT_LOG 35 /* W | WL | E: written and logged (dirty tracking) */
#define UNIMEM_ACTIVE_GET_COUNT 41 /* W | RL | E: served and logged */
#define UNIMEM_ACTIVE_GET_LOG 57 /* W | RL | RLD | E: served, logged with the data */

/* An entry's header, and the most data it carries. */
#define UNIMEM_ACTIVE_ENTRY_BYTES 32
#define UNIMEM_ACTIVE_MAX_DATA 256
/* IUIDs per node. */
#define UNIMEM_ACTIVE_IUIDS 16

/* An IUID of this process's in *iuid, its log empty. UNIMEM_E_SYSCALL + UNIMEM_SYS_NO_PD
 * without RDMA here, UNIMEM_E_SYSCALL + UNIMEM_SYS_BUSY when the node has none left. */
uint64_t unimem_active_open(uint32_t *iuid);
/* Marks the page holding addr (this process's own memory) with actions for the log of IUID
 * handler, which must be this process's. */
uint64_t unimem_assoc_page(void *addr, uint64_t actions, uint32_t handler);
/* The oldest entry of log iuid, taken: UNIMEM_ACTIVE_ENTRY_BYTES of header into entry, its data
 * into data (room for UNIMEM_ACTIVE_MAX_DATA), the data's length in *len; UNIMEM_E_WOULD_BLOCK
 * when none waits. */
uint64_t unimem_active_next(uint32_t iuid, void *entry, void *data, uint64_t *len);
/* 1 in *pending if entries wait in log iuid, else 0. */
uint64_t unimem_active_pending(uint32_t iuid, uint64_t *pending);
/* From now on every entry the engine appends to log iuid is told to this process by a message
 * from its node's kernel on opcode (8..15), payload the IUID, in the action this process
 * registered opcode with (unimem_mailbox_register: 'r' a receive or unimem_active_wait returns,
 * 's' the signal is raised, 'e' the event counter counts it); opcode 0: the log is polled again.
 * UNIMEM_E_SYSCALL + UNIMEM_SYS_NOT_REGISTERED if this process does not receive opcode. */
uint64_t unimem_active_notify(uint32_t iuid, uint32_t opcode);
/* Returns once entries wait in log iuid (unimem_active_next then takes them), or
 * UNIMEM_E_TIMEOUT after timeout_us: asleep in the mailbox until the log's notice when it
 * notifies (unimem_active_notify with an 'r' opcode), else looking every millisecond. */
uint64_t unimem_active_wait(uint32_t iuid, uint64_t timeout_us);
/* Gives log iuid back: the pages marked for it are unmarked (remote puts and gets of them are
 * plain again), the log is invalidated and unmapped, and the IUID is free for the next
 * unimem_active_open on this node. UNIMEM_E_BAD_ARGUMENT for an IUID this process has not
 * open. */
uint64_t unimem_active_close(uint32_t iuid);
/* The seed's flush(target): returns once node's handler has taken every entry its log held
 * when the flush arrived there, so every active access this process issued to node, and saw
 * complete (unim_dma_wait), was taken; entries others append meanwhile do not hold it back.
 * flushing_page is the address, on node, of the page its owner marked UNIMEM_ACTIVE_FLUSH for
 * the log (node is a unim_dma_get_node object; the read of 8 bytes of that page that the
 * target's engine serves only then goes on the RDMA queues of unim_dma_init). UNIMEM_E_TIMEOUT
 * after timeout_us (0: none; the engine is asked again every RDMA timeout meanwhile);
 * UNIMEM_E_NOT_INITIALISED before unim_dma_init; UNIMEM_E_NULL for a NULL node;
 * UNIMEM_E_TRANSFER + status if the read fails (UNIMEM_CQE_TIMEOUT when the target's engine
 * never served it). */
uint64_t unimem_active_flush(unim_dma_node_t node, uint64_t flushing_page, uint64_t timeout_us);

#ifdef __cplusplus
}
#endif

#endif

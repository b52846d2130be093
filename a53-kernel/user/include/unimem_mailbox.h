/*
 * unimem_mailbox.h: notifications between processes for C programs (ExaNoDe D3.6 section 3.2;
 * docs/hw/gsas-packets.md, "Notifications"). Link libunimem_c.a.
 *
 * A message is the seed's 64-bit value: its opcode in bits [63:60], a 60-bit payload below.
 * Opcodes 8..15 are the processes' (0..7 belong to the kernels); each has one receiver per
 * node, which registers it. The receiver learns the sender's PID with every message.
 *
 * The seed registers an opcode by writing struct mailbox_action_t { char action; unsigned
 * opcode; int val; } to its mailbox device; unimem_mailbox_register takes the same fields:
 *   'r'  messages are read with unimem_mailbox_receive;
 *   's'  also raise signal val (0..63): unimem_signals reads it, and it ends the process's
 *        current or next wait (a sleep, a receive, unimem_mailbox_events, an RDMA wait) with
 *        UNIMEM_E_INTERRUPTED;
 *   'e'  also count it on the process's event counter (the seed's eventfd; val is not used):
 *        unimem_mailbox_events reads it;
 *   'u'  unregister.
 *
 * Every call returns a status (unimem_error.h), 0 for success, also left in
 * unimem_last_error().
 */
#ifndef UNIMEM_MAILBOX_H
#define UNIMEM_MAILBOX_H

#include <stdint.h>

#include "unimem_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The opcodes processes may register and send. */
#define UNIMEM_MAILBOX_FIRST_USER 8
#define UNIMEM_MAILBOX_LAST_USER 15
/* unimem_mailbox_receive's opcode for "any opcode this process registered". */
#define UNIMEM_MAILBOX_ANY 16
/* Bits of a message's payload. */
#define UNIMEM_MAILBOX_PAYLOAD_BITS 60
/* Signal numbers are 0 .. UNIMEM_SIGNALS - 1. */
#define UNIMEM_SIGNALS 64

/* A message of opcode op with payload p (cut to 60 bits), and its parts. */
#define UNIMEM_MESSAGE(op, p) (((uint64_t)(op) << 60) | ((uint64_t)(p) & ((1ull << 60) - 1)))
#define UNIMEM_MESSAGE_OPCODE(m) ((unsigned)((uint64_t)(m) >> 60))
#define UNIMEM_MESSAGE_PAYLOAD(m) ((uint64_t)(m) & ((1ull << 60) - 1))

/* Sends message to node; UNIMEM_E_SERVICE + UNIMEM_GSAS_NO_RECEIVER when nobody there has
 * registered its opcode, + UNIMEM_GSAS_QUEUE_FULL when the receiver's queue is full. */
uint64_t unimem_mailbox_send(uint64_t node, uint64_t message);
/* unimem_mailbox_send, tried again every 5 ms for up to within_us while the receiver has not
 * registered yet or its queue is full (a peer that is still starting). */
uint64_t unimem_mailbox_send_within(uint64_t node, uint64_t message, uint64_t within_us);

/* Registers opcode (8..15) with the seed's action 'r', 's' (val: the signal) or 'e', or
 * unregisters it ('u'). UNIMEM_E_SYSCALL + UNIMEM_SYS_BUSY when another receiver has it. */
uint64_t unimem_mailbox_register(unsigned opcode, char action, int val);
/* Unregisters opcode: its queued messages go. */
uint64_t unimem_mailbox_unregister(unsigned opcode);

/* The oldest message for opcode (or UNIMEM_MAILBOX_ANY) into *message, its sender's PID into
 * *sender (either may be NULL). With blocking 0 and none there: UNIMEM_E_WOULD_BLOCK (the
 * seed's -EAGAIN); else it sleeps until one comes. */
uint64_t unimem_mailbox_receive(unsigned opcode, int blocking, uint64_t *message, uint64_t *sender);
/* The event counter into *count: how many messages wait on the 'e' opcodes (they stay queued
 * for unimem_mailbox_receive). Blocking: sleeps until it is not 0; else UNIMEM_E_WOULD_BLOCK
 * when it is. UNIMEM_E_SYSCALL + UNIMEM_SYS_NOT_REGISTERED without an 'e' opcode. The counter
 * also has a file descriptor, for poll() beside sockets: unimem_mailbox_event_fd(),
 * <unimem_socket.h>. */
uint64_t unimem_mailbox_events(int blocking, uint64_t *count);
/* The signals raised since the last call into *raised (bit n: signal n); they are cleared. */
uint64_t unimem_signals(uint64_t *raised);

#ifdef __cplusplus
}
#endif

#endif /* UNIMEM_MAILBOX_H */

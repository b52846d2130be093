/*
 * Messages between the two processes of the C test programs that start a peer on another node
 * (a header, not a program): a notification on a user channel, sent while the peer may still
 * be starting, and received blocking.
 */
#ifndef UNIMEM_C_PROGRAMS_PEERS_H
#define UNIMEM_C_PROGRAMS_PEERS_H

#include <stdint.h>
#include <stdio.h>
#include <unimem_error.h>
#include <unimem_mailbox.h>

/* How long a peer may take to start (and register its channels). */
#define READY_US 20000000ull

/* Sends payload on opcode to node, waiting for a receiver that is still starting. */
static int tell(uint64_t node, unsigned opcode, uint64_t payload)
{
    uint64_t s = unimem_mailbox_send_within(node, UNIMEM_MESSAGE(opcode, payload), READY_US);
    if (s != UNIMEM_OK)
        printf("sending opcode %u to node %llu: status %#llx\n", opcode, (unsigned long long)node,
               (unsigned long long)s);
    return s == UNIMEM_OK;
}

/* The payload of the next message on opcode (blocking), or all ones if the receive failed. */
static uint64_t take(unsigned opcode)
{
    uint64_t message;
    uint64_t s = unimem_mailbox_receive(opcode, 1, &message, NULL);
    if (s != UNIMEM_OK) {
        printf("receiving opcode %u: status %#llx\n", opcode, (unsigned long long)s);
        return ~0ull;
    }
    return UNIMEM_MESSAGE_PAYLOAD(message);
}

#endif

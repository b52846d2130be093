/*
 * c-mailbox: every call of unimem_mailbox.h from C, each result checked, between two nodes:
 * registration in the seed's 'r', 's', 'e' and 'u' modes, sends (and sends that wait for a
 * receiver), receives blocking and not, of one opcode or any, the event counter, signals, and
 * the waits a signal ends: a sleep (unimem_sys_sleep_us) and an RDMA wait (unim_dma_wait).
 *
 * Started without a thread argument (as `cargo xtask run` starts it), it is the initiator: it
 * checks what is refused before it registers anything, registers its opcodes and starts itself
 * on the next node with remoteFork. That peer says hello, then obeys commands: send two
 * event-mode messages and a signal-mode one; send to an opcode that is no longer registered
 * and tell the status; report its own checks. On its own node the initiator fills a queue to
 * the brim. Each failed check is printed; the verdict line is "c-mailbox: N of M checks
 * failed", and the exit status N (0: all held).
 *
 *   cargo xtask run c-mailbox --nodes 2 --on 0
 */
#include "checks.h"

#include <stdint.h>
#include <stdio.h>
#include <unim_dma.h>
#include <unimem.h>
#include <unimem_mailbox.h>
#include <unimem_sys.h>

/* The initiator's opcodes, and its signal. */
#define OP_REPLY 8   /* 'r': the peer's hello and answers */
#define OP_EVENT 9   /* 'e': counted */
#define OP_SIGNAL 10 /* 's': raises SIGNAL */
#define OP_QUEUE 11  /* 'r': filled by the initiator itself */
#define SIGNAL 5
/* The peer's opcode, its commands and its answers. */
#define OP_COMMAND 12
#define CMD_SEND 1         /* two messages on OP_EVENT, then one on OP_SIGNAL */
#define CMD_UNREGISTERED 2 /* send on OP_EVENT, which is no longer registered; answer the status */
#define CMD_DONE 3         /* answer DONE | the peer's failed checks, and end */
#define HELLO 0x4e110000ull /* | the peer's node */
#define DONE 0xd0e0000ull   /* | the peer's failed checks */
/* An opcode nobody registers. */
#define OP_NOBODY 14
/* An opcode's queue holds 64 notifications (the kernel's MailboxService, a53-kernel/src/gsas_node). */
#define QUEUE_DEPTH 64
/* The peer's thread argument: its role, and the initiator's node. */
#define PEER_ROLE 0x3a11ull
#define PEER_OF(node) ((PEER_ROLE << 16) | (uint64_t)(node))
#define READY_US 20000000ull
#define SLEEP_US 20000000ull
#define MIB (1u << 20)

#define NOT_REGISTERED (UNIMEM_E_SYSCALL + UNIMEM_SYS_NOT_REGISTERED)
#define NO_RECEIVER (UNIMEM_E_SERVICE + UNIMEM_GSAS_NO_RECEIVER)
#define QUEUE_FULL (UNIMEM_E_SERVICE + UNIMEM_GSAS_QUEUE_FULL)

/* The node a sender's PID names (docs/hw/gsas-packets.md, "PID"), and its domain there. */
#define PID_NODE(pid) (((pid) >> 32) & 0xffff)
#define PID_DOMAIN(pid) (((pid) >> 16) & 0xffff)

/* The next message on opcode, blocking; its payload, or all ones if the receive failed. */
static uint64_t take(unsigned opcode, uint64_t *sender)
{
    uint64_t message;
    uint64_t s = unimem_mailbox_receive(opcode, 1, &message, sender);
    CHECK("a blocking receive", s == UNIMEM_OK && UNIMEM_MESSAGE_OPCODE(message) == opcode);
    return s == UNIMEM_OK ? UNIMEM_MESSAGE_PAYLOAD(message) : ~0ull;
}

/* ---- The peer ---- */

static int peer(uint64_t initiator)
{
    uint64_t me = getBoardPid(), sender = 0;
    CHECK_RETURNS("the peer registers", unimem_mailbox_register(OP_COMMAND, 'r', 0), UNIMEM_OK, 1);
    CHECK_RETURNS("an opcode taken", unimem_mailbox_register(OP_COMMAND, 'e', 0),
                 UNIMEM_E_SYSCALL + UNIMEM_SYS_BUSY, 1);
    /* The initiator registered before it forked this process; the wait is for a slow start. */
    CHECK_RETURNS("hello", unimem_mailbox_send_within(initiator, UNIMEM_MESSAGE(OP_REPLY, HELLO | me), READY_US),
                 UNIMEM_OK, 1);
    for (;;) {
        uint64_t command = take(OP_COMMAND, &sender);
        CHECK("a command from the initiator's node", PID_NODE(sender) == initiator);
        if (command == CMD_SEND) {
            CHECK_RETURNS("an event", unimem_mailbox_send(initiator, UNIMEM_MESSAGE(OP_EVENT, 0x91)), UNIMEM_OK, 1);
            CHECK_RETURNS("an event", unimem_mailbox_send(initiator, UNIMEM_MESSAGE(OP_EVENT, 0x92)), UNIMEM_OK, 1);
            CHECK_RETURNS("a signal", unimem_mailbox_send(initiator, UNIMEM_MESSAGE(OP_SIGNAL, 0xa1)), UNIMEM_OK, 1);
        } else if (command == CMD_UNREGISTERED) {
            uint64_t s = unimem_mailbox_send(initiator, UNIMEM_MESSAGE(OP_EVENT, 0x93));
            CHECK("the last error is the status", unimem_last_error() == s);
            /* A receiver that never comes: the retries end after 20 ms. */
            CHECK_RETURNS("sending within 20 ms to nobody",
                         unimem_mailbox_send_within(initiator, UNIMEM_MESSAGE(OP_NOBODY, 1), 20000), NO_RECEIVER, 1);
            CHECK_RETURNS("the answer", unimem_mailbox_send(initiator, UNIMEM_MESSAGE(OP_REPLY, s)), UNIMEM_OK, 1);
        } else {
            CHECK("a known command", command == CMD_DONE);
            break;
        }
    }
    CHECK_RETURNS("the peer unregisters", unimem_mailbox_unregister(OP_COMMAND), UNIMEM_OK, 1);
    unimem_mailbox_send(initiator, UNIMEM_MESSAGE(OP_REPLY, DONE | (uint64_t)failed));
    return failed;
}

/* ---- The initiator ---- */

/* What is refused before this process registers anything, and whatever it registers. */
static void refusals(uint64_t me, uint64_t nodes)
{
    uint64_t count = 7, message = 7, raised = 7;
    CHECK_RETURNS("the event counter without an 'e' opcode", unimem_mailbox_events(0, &count), NOT_REGISTERED, 1);
    CHECK("no count on failure", count == 7);
    CHECK_RETURNS("receive of an opcode not registered", unimem_mailbox_receive(OP_REPLY, 0, &message, NULL),
                 NOT_REGISTERED, 1);
    CHECK_RETURNS("receive of any, with none registered", unimem_mailbox_receive(UNIMEM_MAILBOX_ANY, 0, NULL, NULL),
                 NOT_REGISTERED, 1);
    CHECK("no message on failure", message == 7);
    CHECK_RETURNS("unregistering what is not registered", unimem_mailbox_unregister(OP_REPLY), NOT_REGISTERED, 1);
    CHECK_RETURNS("a kernel opcode", unimem_mailbox_register(3, 'r', 0), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("opcode 16", unimem_mailbox_register(16, 'e', 0), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("an unknown action", unimem_mailbox_register(OP_REPLY, 'x', 0), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("signal 64", unimem_mailbox_register(OP_SIGNAL, 's', UNIMEM_SIGNALS), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("signal -1", unimem_mailbox_register(OP_SIGNAL, 's', -1), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("receive of a kernel opcode", unimem_mailbox_receive(4, 0, NULL, NULL), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("a message of opcode 0", unimem_mailbox_send(me, 0x1234), UNIMEM_E_BAD_ARGUMENT, 1);
    CHECK_RETURNS("a message to no node", unimem_mailbox_send(nodes, UNIMEM_MESSAGE(OP_REPLY, 1)),
                 UNIMEM_E_NO_SUCH_NODE, 1);
    CHECK_RETURNS("a message nobody receives", unimem_mailbox_send(me, UNIMEM_MESSAGE(OP_NOBODY, 1)), NO_RECEIVER, 1);
    CHECK_RETURNS("signals into NULL", unimem_signals(NULL), UNIMEM_E_NULL, 1);
    CHECK_RETURNS("the event counter into NULL", unimem_mailbox_events(0, NULL), UNIMEM_E_NULL, 1);
    CHECK_RETURNS("no signal yet", unimem_signals(&raised), UNIMEM_OK, 1);
    CHECK("no signal raised", raised == 0);
}

/* Registered, nothing has come: receives and the counter would block. */
static void nothing_yet(void)
{
    uint64_t count, message;
    CHECK_RETURNS("'r'", unimem_mailbox_register(OP_REPLY, 'r', 0), UNIMEM_OK, 1);
    CHECK_RETURNS("'e'", unimem_mailbox_register(OP_EVENT, 'e', 0), UNIMEM_OK, 1);
    CHECK_RETURNS("'s'", unimem_mailbox_register(OP_SIGNAL, 's', SIGNAL), UNIMEM_OK, 1);
    CHECK_RETURNS("an opcode registered twice", unimem_mailbox_register(OP_REPLY, 'r', 0),
                 UNIMEM_E_SYSCALL + UNIMEM_SYS_BUSY, 1);
    CHECK_RETURNS("receive, not blocking", unimem_mailbox_receive(OP_REPLY, 0, &message, NULL), UNIMEM_E_WOULD_BLOCK, 1);
    CHECK_RETURNS("receive of any, not blocking", unimem_mailbox_receive(UNIMEM_MAILBOX_ANY, 0, &message, NULL),
                 UNIMEM_E_WOULD_BLOCK, 1);
    CHECK_RETURNS("the event counter, not blocking", unimem_mailbox_events(0, &count), UNIMEM_E_WOULD_BLOCK, 1);
}

/* The peer's two events wake a blocking event counter; its signal ends a sleep; then the
 * three messages are received in the order they came. */
static void events_and_signals(uint64_t peer_node)
{
    uint64_t count = 0, raised = 0, message, sender = 0;
    CHECK_RETURNS("a command", unimem_mailbox_send(peer_node, UNIMEM_MESSAGE(OP_COMMAND, CMD_SEND)), UNIMEM_OK, 1);
    CHECK_RETURNS("the event counter, blocking", unimem_mailbox_events(1, &count), UNIMEM_OK, 1);
    CHECK("the counter woke with an event", count >= 1 && count <= 2);

    uint64_t before = unimem_sys_time_us();
    int64_t slept = unimem_sys_sleep_us(SLEEP_US);
    uint64_t took = unimem_sys_time_us() - before;
    CHECK("the signal ends the sleep", slept == -UNIMEM_SYS_INTERRUPTED && took < SLEEP_US / 2);
    CHECK_RETURNS("the signals", unimem_signals(&raised), UNIMEM_OK, 1);
    CHECK("the signal raised", raised == 1ull << SIGNAL);
    CHECK_RETURNS("the signals, read again", unimem_signals(&raised), UNIMEM_OK, 1);
    CHECK("signals are cleared once read", raised == 0);

    /* Both events were sent before the signal: they are queued. */
    CHECK_RETURNS("the event counter", unimem_mailbox_events(0, &count), UNIMEM_OK, 1);
    CHECK("both events counted", count == 2);
    CHECK_RETURNS("receive of an event", unimem_mailbox_receive(OP_EVENT, 0, &message, &sender), UNIMEM_OK, 1);
    CHECK("the first event, from the peer",
          message == UNIMEM_MESSAGE(OP_EVENT, 0x91) && PID_NODE(sender) == peer_node && PID_DOMAIN(sender) != 0);
    CHECK_RETURNS("the event counter", unimem_mailbox_events(1, &count), UNIMEM_OK, 1);
    CHECK("one event left", count == 1);
    CHECK_RETURNS("receive of any", unimem_mailbox_receive(UNIMEM_MAILBOX_ANY, 0, &message, NULL), UNIMEM_OK, 1);
    CHECK("the oldest of any opcode", message == UNIMEM_MESSAGE(OP_EVENT, 0x92));
    CHECK_RETURNS("receive of any into NULL", unimem_mailbox_receive(UNIMEM_MAILBOX_ANY, 0, NULL, NULL), UNIMEM_OK, 1);
    CHECK_RETURNS("all received", unimem_mailbox_receive(UNIMEM_MAILBOX_ANY, 0, &message, NULL), UNIMEM_E_WOULD_BLOCK, 1);
    CHECK_RETURNS("the event counter after both", unimem_mailbox_events(0, &count), UNIMEM_E_WOULD_BLOCK, 1);
}

/* A signal pending when an RDMA wait begins ends it: the transfer is still going on. */
static void signal_ends_an_rdma_wait(uint64_t me)
{
    uint64_t raised = 0, message = 0;
    CHECK("unim_dma_init", unim_dma_init((unim_node_id_t)me) == 0);
    unim_dma_buffer_t *from = unim_alloc_buf_l(MIB), *to = unim_alloc_buf_l(MIB);
    CHECK("two buffers", from != NULL && to != NULL);
    CHECK_RETURNS("a signal to itself", unimem_mailbox_send(me, UNIMEM_MESSAGE(OP_SIGNAL, 0xa2)), UNIMEM_OK, 1);
    unim_dma_transfer_id_t id = unim_dma_submit_transfer(from, to, 0, 0, MIB, NULL, NULL);
    CHECK("a 1 MiB transfer here", id != 0);
    unim_dma_status_t s = unim_dma_wait(id, 0);
    uint64_t why = unimem_last_error();
    if (s != DMA_STARTED || why != UNIMEM_E_INTERRUPTED)
        printf("unim_dma_wait with a signal pending: status %d, last error %#llx\n", (int)s,
               (unsigned long long)why);
    CHECK("the signal ends the wait, not the transfer", s == DMA_STARTED && why == UNIMEM_E_INTERRUPTED);
    CHECK_RETURNS("the signals", unimem_signals(&raised), UNIMEM_OK, 1);
    CHECK("the signal raised", raised == 1ull << SIGNAL);
    CHECK("the transfer ends", unim_dma_wait(id, 0) == DMA_COMPLETED);
    CHECK_RETURNS("the signal's message", unimem_mailbox_receive(OP_SIGNAL, 0, &message, NULL), UNIMEM_OK, 1);
    CHECK("from itself", message == UNIMEM_MESSAGE(OP_SIGNAL, 0xa2));
    unim_dma_cleanup();
}

/* A queue takes QUEUE_DEPTH messages; unregistering drops them. */
static void a_full_queue(uint64_t me)
{
    CHECK_RETURNS("'r'", unimem_mailbox_register(OP_QUEUE, 'r', 0), UNIMEM_OK, 1);
    int sent = 0;
    while (sent < QUEUE_DEPTH && unimem_mailbox_send(me, UNIMEM_MESSAGE(OP_QUEUE, sent)) == UNIMEM_OK)
        sent++;
    CHECK("a queue's worth", sent == QUEUE_DEPTH);
    CHECK_RETURNS("one more", unimem_mailbox_send(me, UNIMEM_MESSAGE(OP_QUEUE, sent)), QUEUE_FULL, 1);
    CHECK_RETURNS("one more within 20 ms", unimem_mailbox_send_within(me, UNIMEM_MESSAGE(OP_QUEUE, sent), 20000),
                 QUEUE_FULL, 1);
    uint64_t message = 0;
    CHECK_RETURNS("the oldest", unimem_mailbox_receive(OP_QUEUE, 0, &message, NULL), UNIMEM_OK, 1);
    CHECK("the first sent", message == UNIMEM_MESSAGE(OP_QUEUE, 0));
    CHECK_RETURNS("room for one", unimem_mailbox_send_within(me, UNIMEM_MESSAGE(OP_QUEUE, 99), 20000), UNIMEM_OK, 1);
    CHECK_RETURNS("'u'", unimem_mailbox_register(OP_QUEUE, 'u', 0), UNIMEM_OK, 1);
    CHECK_RETURNS("unregistered: nobody receives", unimem_mailbox_send(me, UNIMEM_MESSAGE(OP_QUEUE, 1)), NO_RECEIVER, 1);
    CHECK_RETURNS("registered again", unimem_mailbox_register(OP_QUEUE, 'r', 0), UNIMEM_OK, 1);
    CHECK_RETURNS("its queue went with it", unimem_mailbox_receive(OP_QUEUE, 0, &message, NULL), UNIMEM_E_WOULD_BLOCK, 1);
    CHECK_RETURNS("unregistered", unimem_mailbox_unregister(OP_QUEUE), UNIMEM_OK, 1);
}

/* Unregistered opcodes receive nothing, and the last 'e' opcode takes the counter with it. */
static void unregistered(uint64_t peer_node)
{
    uint64_t count;
    CHECK_RETURNS("unregister 's'", unimem_mailbox_unregister(OP_SIGNAL), UNIMEM_OK, 1);
    CHECK_RETURNS("unregister 'e' with 'u'", unimem_mailbox_register(OP_EVENT, 'u', 0), UNIMEM_OK, 1);
    CHECK_RETURNS("unregister twice", unimem_mailbox_register(OP_EVENT, 'u', 0), NOT_REGISTERED, 1);
    CHECK_RETURNS("the counter without an 'e' opcode", unimem_mailbox_events(1, &count), NOT_REGISTERED, 1);
    CHECK_RETURNS("a command", unimem_mailbox_send(peer_node, UNIMEM_MESSAGE(OP_COMMAND, CMD_UNREGISTERED)),
                 UNIMEM_OK, 1);
    CHECK("the peer's send found no receiver", take(OP_REPLY, NULL) == NO_RECEIVER);
}

static void initiator(void)
{
    uint64_t me = getBoardPid(), nodes = getNumberBoards(), sender = 0;
    CHECK("two nodes at least (--nodes 2)", nodes >= 2);
    if (nodes < 2)
        return;
    uint64_t peer_node = (me + 1) % nodes;
    refusals(me, nodes);
    nothing_yet();
    CHECK("remoteFork of the peer", remoteFork("c-mailbox", PEER_OF(me), peer_node) != 0);
    CHECK("hello from the peer", take(OP_REPLY, &sender) == (HELLO | peer_node) && PID_NODE(sender) == peer_node);
    events_and_signals(peer_node);
    signal_ends_an_rdma_wait(me);
    a_full_queue(me);
    unregistered(peer_node);
    CHECK_RETURNS("the last command", unimem_mailbox_send(peer_node, UNIMEM_MESSAGE(OP_COMMAND, CMD_DONE)), UNIMEM_OK, 1);
    CHECK("the peer's checks", take(OP_REPLY, NULL) == DONE);
    CHECK_RETURNS("unregister 'r'", unimem_mailbox_unregister(OP_REPLY), UNIMEM_OK, 1);
}

int main(void)
{
    uint64_t arg = readThreadArgument();
    if (arg != _EMPTY_THREAD_ARGUMENT_ && arg >> 16 == PEER_ROLE)
        return peer(arg & 0xffff);
    initiator();
    return verdict("c-mailbox");
}

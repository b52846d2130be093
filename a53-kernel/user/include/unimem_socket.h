/*
 * unimem_socket.h: what Unimem adds to <sys/socket.h> and <poll.h>: the address of a socket
 * (as <netinet/in.h> is for IP), a node and a port, and a file descriptor for the mailbox event
 * counter. Node and port are in the machine's byte order: this is not IP, and no htons() is
 * needed. The C runtime defines the function (crt/posix.c).
 *
 *   struct sockaddr_unimem a = { .su_family = AF_UNIMEM, .su_node = 1, .su_port = 7 };
 *   connect(fd, (struct sockaddr *)&a, sizeof a);
 */
#ifndef UNIMEM_SOCKET_H
#define UNIMEM_SOCKET_H

#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sockaddr_unimem {
    sa_family_t su_family; /* AF_UNIMEM */
    uint16_t su_port;      /* 1..65535; 0 in bind: any free port, chosen at listen */
    uint32_t su_node;      /* a node, 0 .. getNumberBoards() - 1, or UNIMEM_NODE_ANY */
    unsigned char su_zero[8];
};

/* bind: this node, whichever it is; connect: this node. */
#define UNIMEM_NODE_ANY 0xffffffffu

/* The mailbox event counter (<unimem_mailbox.h>: the messages waiting on the opcodes
 * registered with 'e', the seed's eventfd) as a file descriptor, for poll() beside sockets:
 * POLLIN while the counter is not 0 (POLLNVAL without an 'e' opcode); read() gives its value
 * as 8 bytes, a uint64_t (blocking, it waits until the value is not 0; O_NONBLOCK: EAGAIN).
 * The messages stay queued for unimem_mailbox_receive, which lowers the counter. The
 * descriptor (the same one while it is open; close() frees it), or -1 with errno EMFILE. */
int unimem_mailbox_event_fd(void);

#ifdef __cplusplus
}
#endif

#endif /* UNIMEM_SOCKET_H */

/*
 * poll.h: poll() for C programs on Unimem (picolibc has none), over sockets, the console and
 * the mailbox event counter (unimem_mailbox_event_fd, <unimem_mailbox.h>). The C runtime
 * defines it (crt/posix.c); one call waits on all of them at once.
 *
 * The values are Linux's, checked against the Rust side by the C library's host tests.
 */
#ifndef POLL_H
#define POLL_H

#ifdef __cplusplus
extern "C" {
#endif

typedef unsigned long nfds_t;

struct pollfd {
    int fd;        /* a negative one is skipped */
    short events;  /* what to wait for */
    short revents; /* what holds */
};

#define POLLIN 0x001   /* a read would not block (data, the end of the stream, an error; a connection to accept) */
#define POLLPRI 0x002  /* never reported: there is no urgent data */
#define POLLOUT 0x004  /* a write would not block */
#define POLLERR 0x008  /* the connection broke (always reported; SO_ERROR says ECONNRESET) */
#define POLLHUP 0x010  /* over both ways: broken, or the peer's stream ended and this end shut its writing; an unconnected socket */
#define POLLNVAL 0x020 /* not an open descriptor (or the event counter without an 'e' opcode) */
#define POLLRDHUP 0x2000 /* the peer's stream ended: it closed or shut down its writing (reported when asked for) */

/* Waits until one of the nfds descriptors is ready, or timeout milliseconds (-1: no timeout,
 * 0: none at all); how many have revents, 0 at the timeout, or -1 with errno (EINTR, EFAULT,
 * EINVAL for more than 64 sockets at once). */
int poll(struct pollfd *fds, nfds_t nfds, int timeout);

#ifdef __cplusplus
}
#endif

#endif /* POLL_H */

/*
 * unimem_sock.h: the socket layer of libunimem_c.a, for the C runtime's author rather than for
 * programs: crt/posix.c gives programs these as socket(), bind(), ..., poll(), and runtime.c's
 * read(), write() and close() use them for every descriptor above the console's 0, 1, 2.
 * Programs include <sys/socket.h>, <poll.h> and <unimem_socket.h>.
 *
 * Each returns a value, or -errno (picolibc's numbers) on failure; the runtime sets errno. They
 * keep the process's file descriptors: the console's 0, 1, 2, then the lowest free number.
 */
#ifndef UNIMEM_SOCK_H
#define UNIMEM_SOCK_H

#include <stddef.h>
#include <stdint.h>

#include "poll.h"

#ifdef __cplusplus
extern "C" {
#endif

int32_t unimem_sock_socket(int32_t domain, int32_t type, int32_t protocol);
/* addr: len bytes of a struct sockaddr_unimem (or NULL: -EFAULT). */
int32_t unimem_sock_bind(int32_t fd, const void *addr, uint32_t len);
int32_t unimem_sock_listen(int32_t fd, int32_t backlog);
/* The new descriptor; the peer's address into addr (as much as *len holds; *len becomes its
 * whole length) unless addr is NULL. */
int32_t unimem_sock_accept(int32_t fd, void *addr, uint32_t *len);
int32_t unimem_sock_connect(int32_t fd, const void *addr, uint32_t len);
/* read() of a socket or of the event counter (8 bytes: its value); not of 0, 1, 2. */
int64_t unimem_sock_read(int32_t fd, void *buf, size_t len);
/* write() of a socket; not of 0, 1, 2. */
int64_t unimem_sock_write(int32_t fd, const void *buf, size_t len);
int64_t unimem_sock_recv(int32_t fd, void *buf, size_t len, int32_t flags);
int64_t unimem_sock_send(int32_t fd, const void *buf, size_t len, int32_t flags);
int32_t unimem_sock_shutdown(int32_t fd, int32_t how);
/* close() of any descriptor (the console's stay open). */
int32_t unimem_sock_close(int32_t fd);
int32_t unimem_sock_poll(struct pollfd *fds, uint64_t nfds, int32_t timeout);
/* fcntl's F_GETFL, F_SETFL (O_NONBLOCK), F_GETFD, F_SETFD, of any descriptor. */
int32_t unimem_sock_fcntl(int32_t fd, int32_t cmd, int64_t arg);
int32_t unimem_sock_getsockopt(int32_t fd, int32_t level, int32_t name, void *value, uint32_t *len);
int32_t unimem_sock_setsockopt(int32_t fd, int32_t level, int32_t name, const void *value, uint32_t len);
int32_t unimem_sock_getsockname(int32_t fd, void *addr, uint32_t *len);
int32_t unimem_sock_getpeername(int32_t fd, void *addr, uint32_t *len);
/* The mailbox event counter's descriptor (one per process). */
int32_t unimem_sock_event_fd(void);

#ifdef __cplusplus
}
#endif

#endif /* UNIMEM_SOCK_H */

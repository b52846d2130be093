/*
 * sys/socket.h: BSD sockets for C programs on Unimem (picolibc has none). Stream sockets of
 * one family, AF_UNIMEM, between processes on any nodes (docs/hw/sockets.md): an address is a
 * node and a port, struct sockaddr_unimem in <unimem_socket.h>. The C runtime defines these
 * calls (crt/posix.c) over libunimem_c.a; a53-kernel/user/crt/README.md says what they do and
 * which errno values they set.
 *
 * The names and values are Linux's where Linux has them. The values are checked against the
 * Rust side by the C library's host tests.
 */
#ifndef SYS_SOCKET_H
#define SYS_SOCKET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t socklen_t;
typedef uint16_t sa_family_t;

/* Any address; a program passes a struct sockaddr_unimem cast to it. */
struct sockaddr {
    sa_family_t sa_family;
    char sa_data[14];
};

/* Room for any address this system has, aligned for each: 128 bytes, as on Linux. */
struct sockaddr_storage {
    sa_family_t ss_family;
    char ss_padding[118];
    uint64_t ss_align;
};

/* Address families: AF_UNIMEM is the one there is; socket() and connect() refuse the others
 * with EAFNOSUPPORT. */
#define AF_UNSPEC 0
#define AF_INET 2
#define AF_INET6 10
#define AF_UNIMEM 85
#define PF_UNSPEC AF_UNSPEC
#define PF_INET AF_INET
#define PF_INET6 AF_INET6
#define PF_UNIMEM AF_UNIMEM

/* Socket types: streams only (SOCK_DGRAM is EPROTOTYPE). SOCK_NONBLOCK may be or'ed in;
 * SOCK_CLOEXEC is taken and means nothing (there is no exec). */
#define SOCK_STREAM 1
#define SOCK_DGRAM 2
#define SOCK_NONBLOCK 04000
#define SOCK_CLOEXEC 02000000

/* The largest backlog: a listener holds this many connections before they are accepted,
 * whatever listen() is given. */
#define SOMAXCONN 32

/* getsockopt/setsockopt: the socket level and its options (int values). SO_ERROR reports a
 * break of the connection once (ECONNRESET), SO_TYPE is SOCK_STREAM, SO_ACCEPTCONN 1 for a
 * listener; SO_REUSEADDR and SO_KEEPALIVE are taken and change nothing. */
#define SOL_SOCKET 1
#define SO_REUSEADDR 2
#define SO_TYPE 3
#define SO_ERROR 4
#define SO_KEEPALIVE 9
#define SO_ACCEPTCONN 30

/* send/recv flags: MSG_DONTWAIT for one call; MSG_WAITALL (recv) fills the buffer unless the
 * stream ends or fails; MSG_NOSIGNAL is taken and changes nothing (there are no signals: a
 * broken connection is only EPIPE). */
#define MSG_DONTWAIT 0x40
#define MSG_WAITALL 0x100
#define MSG_NOSIGNAL 0x4000

/* shutdown's directions. */
#define SHUT_RD 0
#define SHUT_WR 1
#define SHUT_RDWR 2

int socket(int domain, int type, int protocol);
int bind(int fd, const struct sockaddr *addr, socklen_t len);
int listen(int fd, int backlog);
int accept(int fd, struct sockaddr *__restrict addr, socklen_t *__restrict len);
int connect(int fd, const struct sockaddr *addr, socklen_t len);
ssize_t send(int fd, const void *buf, size_t len, int flags);
ssize_t recv(int fd, void *buf, size_t len, int flags);
int shutdown(int fd, int how);
int getsockopt(int fd, int level, int name, void *__restrict value, socklen_t *__restrict len);
int setsockopt(int fd, int level, int name, const void *value, socklen_t len);
int getsockname(int fd, struct sockaddr *__restrict addr, socklen_t *__restrict len);
int getpeername(int fd, struct sockaddr *__restrict addr, socklen_t *__restrict len);

#ifdef __cplusplus
}
#endif

#endif /* SYS_SOCKET_H */

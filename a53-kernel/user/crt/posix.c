/*
 * The POSIX calls of sockets and poll for C programs (a53-kernel/user/crt/README.md;
 * include/sys/socket.h, include/poll.h, include/unimem_socket.h): each is the C library's
 * unimem_sock_* call
 * (include/unimem_sock.h, the Rust crate unimem-c, which keeps the file descriptors), with its
 * -errno turned into -1 and errno. read(), write() and close() are in runtime.c, beside the
 * console they serve for 0, 1 and 2.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/socket.h>

#include "posix.h"
#include "unimem_sock.h"
#include "unimem_socket.h"

int socket(int domain, int type, int protocol)
{
    return (int)posix_result(unimem_sock_socket(domain, type, protocol));
}

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    return (int)posix_result(unimem_sock_bind(fd, addr, len));
}

int listen(int fd, int backlog)
{
    return (int)posix_result(unimem_sock_listen(fd, backlog));
}

int accept(int fd, struct sockaddr *__restrict addr, socklen_t *__restrict len)
{
    return (int)posix_result(unimem_sock_accept(fd, addr, len));
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    return (int)posix_result(unimem_sock_connect(fd, addr, len));
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    return (ssize_t)posix_result(unimem_sock_send(fd, buf, len, flags));
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    return (ssize_t)posix_result(unimem_sock_recv(fd, buf, len, flags));
}

int shutdown(int fd, int how)
{
    return (int)posix_result(unimem_sock_shutdown(fd, how));
}

int getsockopt(int fd, int level, int name, void *__restrict value, socklen_t *__restrict len)
{
    return (int)posix_result(unimem_sock_getsockopt(fd, level, name, value, len));
}

int setsockopt(int fd, int level, int name, const void *value, socklen_t len)
{
    return (int)posix_result(unimem_sock_setsockopt(fd, level, name, value, len));
}

int getsockname(int fd, struct sockaddr *__restrict addr, socklen_t *__restrict len)
{
    return (int)posix_result(unimem_sock_getsockname(fd, addr, len));
}

int getpeername(int fd, struct sockaddr *__restrict addr, socklen_t *__restrict len)
{
    return (int)posix_result(unimem_sock_getpeername(fd, addr, len));
}

int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    return (int)posix_result(unimem_sock_poll(fds, nfds, timeout));
}

/* The commands that set something take an int; the others take nothing, which must then not
 * be read. */
int fcntl(int fd, int cmd, ...)
{
    int64_t arg = 0;
    if (cmd == F_SETFL || cmd == F_SETFD) {
        va_list args;
        va_start(args, cmd);
        arg = va_arg(args, int);
        va_end(args);
    }
    return (int)posix_result(unimem_sock_fcntl(fd, cmd, arg));
}

int unimem_mailbox_event_fd(void)
{
    return (int)posix_result(unimem_sock_event_fd());
}

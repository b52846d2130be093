/*
 * c-sock-echo: the C twin of the Rust `sock-echo`, with nothing but the BSD calls
 * (sys/socket.h, poll.h, unimem_socket.h). It starts its server on another node (remoteFork
 * of itself, the port and its own node in the thread argument), connects, sends messages of
 * every size from 1 byte to 256 KiB and checks each echo byte for byte (the last message
 * through a non-blocking socket and poll, across the end of the 512 KiB ring), times 64-byte
 * round trips, then shuts its writing down. The server echoes what is left, closes, and tells
 * the client through the mailbox how many bytes it echoed; the client waits for both the end
 * of the stream and that notification in one poll (the event counter has a descriptor). On
 * the way it makes the mistakes a C programmer makes and checks their errno.
 *
 *   cargo xtask run c-sock-echo --nodes 2 --on 0 [-- NODE]
 *
 * NODE is the server's (default: the last node). Exit status: 0; 1 = bad argument; 10.. = a
 * check failed (the line before says which).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <unimem.h>
#include <unimem_mailbox.h>
#include <unimem_socket.h>

#define PORT 7
/* A port nobody listens on. */
#define UNUSED_PORT 9
/* The server's notification to the client: the bytes it echoed. */
#define DONE_OPCODE 9
/* The most one read or write of this program moves. */
#define CHUNK (64 * 1024)
/* A connection's ring, each way (docs/hw/sockets.md): the stream must go past its end. */
#define RING (512 * 1024)
#define ROUND_TRIPS 200
#define MESSAGE 64
/* How long any one wait may take (the emulator is slow, not this long). */
#define WAIT_MS 20000

static const size_t sizes[] = { 1, 63, 64, 1000, 4096, 65536, 100000, 262144 };
#define SIZES (sizeof sizes / sizeof sizes[0])

static unsigned char out[CHUNK], back[CHUNK];
static int error_cases;

/* Ends the program with status after saying why. */
static void fail(int status, const char *why, long long value)
{
    printf("c-sock-echo: %s (%lld, errno %d: %s)\n", why, value, errno, strerror(errno));
    exit(status);
}

/* r must not be negative. */
static long long ok(long long r, int status, const char *what)
{
    if (r < 0)
        fail(status, what, r);
    return r;
}

/* A call that must fail with errno `expected`. */
static void refused(long long r, int expected, int status, const char *what)
{
    if (r != -1 || errno != expected) {
        printf("c-sock-echo: %s: expected errno %d (%s)\n", what, expected, strerror(expected));
        fail(status, what, r);
    }
    error_cases++;
}

/* Byte `at` of message `seed`: what was sent, and what must come back. */
static unsigned char pattern(uint64_t seed, uint64_t at)
{
    uint64_t x = (seed << 40 ^ at) * 0x9e3779b97f4a7c15ull;
    return (unsigned char)(x >> 56 ^ x >> 29);
}

static void fill(uint64_t seed, uint64_t at, unsigned char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = pattern(seed, at + i);
}

static int matches(uint64_t seed, uint64_t at, const unsigned char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (buf[i] != pattern(seed, at + i))
            return 0;
    return 1;
}

static struct sockaddr_unimem address(uint32_t node, uint16_t port)
{
    return (struct sockaddr_unimem){ .su_family = AF_UNIMEM, .su_node = node, .su_port = port };
}

static uint64_t now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000;
}

/* ---- The server ---- */

/* Echoes one connection until its end, then tells the client how much it echoed. */
static int server(uint64_t argument)
{
    uint16_t port = argument & 0xffff;
    uint64_t client = argument >> 16 & 0xffff;
    int listener = ok(socket(AF_UNIMEM, SOCK_STREAM, 0), 60, "server: socket");
    int one = 1;
    ok(setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one), 61, "server: SO_REUSEADDR");
    struct sockaddr_unimem me = address(UNIMEM_NODE_ANY, port);
    ok(bind(listener, (struct sockaddr *)&me, sizeof me), 62, "server: bind");
    ok(listen(listener, SOMAXCONN), 63, "server: listen");
    struct sockaddr_unimem bound;
    socklen_t bound_len = sizeof bound;
    ok(getsockname(listener, (struct sockaddr *)&bound, &bound_len), 76, "server: getsockname");
    if (bound_len != sizeof bound || bound.su_family != AF_UNIMEM || bound.su_port != port)
        fail(77, "server: getsockname: not the port it bound", bound.su_port);
    struct sockaddr_unimem peer;
    socklen_t len = sizeof peer;
    int connection = ok(accept(listener, (struct sockaddr *)&peer, &len), 64, "server: accept");
    close(listener);

    uint64_t echoed = 0;
    for (;;) {
        ssize_t n = ok(read(connection, back, sizeof back), 65, "server: read");
        if (n == 0)
            break;
        if (write(connection, back, (size_t)n) != n)
            fail(66, "server: write", n);
        echoed += (uint64_t)n;
    }
    ok(close(connection), 67, "server: close");
    /* The line first: once the client has the notification it ends, and the run with it. */
    printf("c-sock-echo server: echoed %llu bytes to node %u\n", (unsigned long long)echoed, (unsigned)peer.su_node);
    if (unimem_mailbox_send_within(client, UNIMEM_MESSAGE(DONE_OPCODE, echoed), 5000000) != UNIMEM_OK)
        fail(68, "server: the notification to the client", (long long)unimem_last_error());
    return 0;
}

/* ---- The client ---- */

/* What goes wrong before there is a connection. */
static void mistakes_without_a_connection(uint32_t nodes)
{
    refused(socket(AF_INET, SOCK_STREAM, 0), EAFNOSUPPORT, 20, "socket(AF_INET)");
    int fd = ok(socket(AF_UNIMEM, SOCK_STREAM, 0), 21, "socket");
    struct sockaddr_unimem inet = address(0, PORT);
    inet.su_family = AF_INET;
    refused(connect(fd, (struct sockaddr *)&inet, sizeof inet), EAFNOSUPPORT, 22, "connect to an AF_INET address");
    refused(connect(fd, NULL, sizeof inet), EFAULT, 23, "connect to a NULL address");
    struct sockaddr_unimem nowhere = address(nodes, PORT);
    refused(connect(fd, (struct sockaddr *)&nowhere, sizeof nowhere), EHOSTUNREACH, 24, "connect to a node past the last");
    char byte = 0;
    refused(read(fd, &byte, 1), ENOTCONN, 25, "read of an unconnected socket");
    ok(close(fd), 26, "close");
    refused(close(fd), EBADF, 27, "close twice");
    refused(read(fd, &byte, 1), EBADF, 28, "read of a closed descriptor");
    refused(send(99, &byte, 1, 0), EBADF, 29, "send on a descriptor never opened");
}

/* A connection to port on node, trying again while nobody listens there yet (the server was
 * just spawned). A failed connect leaves a socket unspecified, so each try has a new one. */
static int connect_when_listening(uint32_t node, uint16_t port)
{
    struct sockaddr_unimem to = address(node, port);
    uint64_t give_up = now_us() + WAIT_MS * 1000ull;
    for (;;) {
        int fd = ok(socket(AF_UNIMEM, SOCK_STREAM, 0), 30, "socket");
        if (connect(fd, (struct sockaddr *)&to, sizeof to) == 0)
            return fd;
        int why = errno;
        close(fd);
        errno = why;
        if (why != ECONNREFUSED || now_us() > give_up)
            fail(31, "connect to the server", -1);
        usleep(2000);
    }
}

/* What goes wrong with a connection. */
static void mistakes_with_a_connection(int fd, uint32_t node)
{
    int other = ok(socket(AF_UNIMEM, SOCK_STREAM, 0), 32, "socket");
    struct sockaddr_unimem unused = address(node, UNUSED_PORT);
    refused(connect(other, (struct sockaddr *)&unused, sizeof unused), ECONNREFUSED, 33, "connect to a port nobody listens on");
    close(other);
    struct sockaddr_unimem to = address(node, PORT);
    refused(connect(fd, (struct sockaddr *)&to, sizeof to), EISCONN, 34, "connect twice");
    refused(write(fd, (const void *)16, MESSAGE), EFAULT, 35, "write from an address the process does not have");
    refused(send(fd, out, 1, 0x1 /* MSG_OOB */), EOPNOTSUPP, 36, "send of urgent data");

    /* Nothing was sent yet: a non-blocking read has nothing to give. */
    int flags = ok(fcntl(fd, F_GETFL), 37, "F_GETFL");
    ok(fcntl(fd, F_SETFL, flags | O_NONBLOCK), 38, "F_SETFL O_NONBLOCK");
    refused(read(fd, back, 1), EAGAIN, 39, "a non-blocking read of nothing");
    ok(fcntl(fd, F_SETFL, flags), 40, "F_SETFL");
    refused(recv(fd, back, 1, MSG_DONTWAIT), EWOULDBLOCK, 41, "recv(MSG_DONTWAIT) of nothing");

    struct sockaddr_unimem peer;
    socklen_t len = sizeof peer;
    ok(getpeername(fd, (struct sockaddr *)&peer, &len), 42, "getpeername");
    if (len != sizeof peer || peer.su_family != AF_UNIMEM || peer.su_node != node || peer.su_port != PORT)
        fail(43, "getpeername: not the server's address", peer.su_port);
    int error = -1;
    len = sizeof error;
    ok(getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len), 44, "SO_ERROR");
    if (error != 0)
        fail(45, "SO_ERROR of a good connection", error);
}

/* Message `seed` of `size` bytes, blocking, CHUNK at a time: written, then waited for with poll
 * and read whole (MSG_WAITALL). */
static void echo(int fd, uint64_t seed, size_t size)
{
    for (size_t at = 0; at < size; at += CHUNK) {
        size_t n = size - at < CHUNK ? size - at : CHUNK;
        fill(seed, at, out, n);
        if (write(fd, out, n) != (ssize_t)n)
            fail(46, "write of a piece", (long long)n);
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, WAIT_MS) != 1 || p.revents != POLLIN)
            fail(47, "poll for the echo", p.revents);
        if (recv(fd, back, n, MSG_WAITALL) != (ssize_t)n)
            fail(48, "recv(MSG_WAITALL) of the echo", (long long)n);
        if (!matches(seed, at, back, n))
            fail(49, "the echo differs", (long long)at);
    }
}

/* Message `seed` through a non-blocking socket: write what the ring takes, read what has come
 * back, and poll when neither can go on. */
static void echo_nonblocking(int fd, uint64_t seed, size_t size)
{
    int flags = ok(fcntl(fd, F_GETFL), 50, "F_GETFL");
    ok(fcntl(fd, F_SETFL, flags | O_NONBLOCK), 51, "F_SETFL O_NONBLOCK");
    size_t sent = 0, got = 0;
    unsigned polls = 0, would_block = 0;
    while (got < size) {
        struct pollfd p = { .fd = fd, .events = POLLIN | (sent < size ? POLLOUT : 0) };
        if (poll(&p, 1, WAIT_MS) != 1 || p.revents & (POLLERR | POLLHUP | POLLNVAL))
            fail(52, "poll of the non-blocking socket", p.revents);
        polls++;
        if (p.revents & POLLOUT) {
            size_t n = size - sent < CHUNK ? size - sent : CHUNK;
            fill(seed, sent, out, n);
            ssize_t taken = send(fd, out, n, MSG_NOSIGNAL);
            if (taken < 0 && errno != EAGAIN)
                fail(53, "non-blocking send", taken);
            would_block += taken < 0;
            sent += taken > 0 ? (size_t)taken : 0;
        }
        if (p.revents & POLLIN) {
            size_t n = size - got < CHUNK ? size - got : CHUNK;
            ssize_t came = read(fd, back, n);
            if (came <= 0 && !(came < 0 && errno == EAGAIN))
                fail(54, "non-blocking read", came);
            if (came > 0 && !matches(seed, got, back, (size_t)came))
                fail(55, "the non-blocking echo differs", (long long)got);
            got += came > 0 ? (size_t)came : 0;
        }
    }
    ok(fcntl(fd, F_SETFL, flags), 56, "F_SETFL");
    printf("c-sock-echo: %zu bytes through a non-blocking socket in %u polls (%u EAGAIN)\n", size, polls, would_block);
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* ROUND_TRIPS messages of MESSAGE bytes: the median round trip in microseconds. */
static uint64_t round_trips(int fd)
{
    static uint64_t times[ROUND_TRIPS];
    for (unsigned trip = 0; trip < ROUND_TRIPS; trip++) {
        fill(1000 + trip, 0, out, MESSAGE);
        uint64_t start = now_us();
        if (send(fd, out, MESSAGE, 0) != MESSAGE || recv(fd, back, MESSAGE, MSG_WAITALL) != MESSAGE)
            fail(57, "a round trip", trip);
        times[trip] = now_us() - start;
        if (!matches(1000 + trip, 0, back, MESSAGE))
            fail(58, "a round trip's echo differs", trip);
    }
    qsort(times, ROUND_TRIPS, sizeof times[0], by_value);
    return times[ROUND_TRIPS / 2];
}

/* After this end's write shutdown: one poll until both the end of the stream and the server's
 * notification (on the event counter's descriptor) have come; the bytes it says it echoed. */
static uint64_t the_end(int fd, int events)
{
    int ended = 0, notified = 0;
    while (!ended || !notified) {
        /* Once the stream has ended, the socket is left out (a negative fd is skipped): its
         * POLLHUP, always reported, would end every poll at once. */
        struct pollfd p[2] = { { .fd = ended ? -1 : fd, .events = POLLIN }, { .fd = events, .events = POLLIN } };
        if (poll(p, 2, WAIT_MS) < 1)
            fail(70, "poll for the end and the notification", -1);
        if (p[0].revents & POLLIN) {
            char extra;
            if (read(fd, &extra, 1) != 0)
                fail(71, "the server sent more than the echo", -1);
            ended = 1;
        }
        if (!ended && p[0].revents & POLLHUP)
            fail(72, "POLLHUP before the stream ended", p[0].revents);
        notified |= p[1].revents & POLLIN;
        if (p[1].revents & ~POLLIN)
            fail(73, "the event counter's descriptor", p[1].revents);
    }
    uint64_t count = 0;
    if (read(events, &count, sizeof count) != sizeof count || count != 1)
        fail(74, "the event counter", (long long)count);
    uint64_t message, from;
    if (unimem_mailbox_receive(DONE_OPCODE, 0, &message, &from) != UNIMEM_OK)
        fail(75, "the notification", (long long)unimem_last_error());
    return UNIMEM_MESSAGE_PAYLOAD(message);
}

static int client(int argc, char **argv)
{
    uint64_t me = getBoardPid(), nodes = getNumberBoards();
    uint64_t node = argc > 1 ? strtoull(argv[1], NULL, 0) : nodes - 1;
    if (node >= nodes || node == me) {
        printf("usage: c-sock-echo [NODE]: a node other than this one, below %llu\n", (unsigned long long)nodes);
        return 1;
    }
    if (unimem_mailbox_register(DONE_OPCODE, 'e', 0) != UNIMEM_OK)
        fail(10, "register the notification's opcode", (long long)unimem_last_error());
    int events = ok(unimem_mailbox_event_fd(), 11, "unimem_mailbox_event_fd");
    mistakes_without_a_connection((uint32_t)nodes);

    if (remoteFork("c-sock-echo", PORT | me << 16, node) == 0)
        fail(12, "remoteFork of the server", (long long)unimem_last_error());
    int fd = connect_when_listening((uint32_t)node, PORT);
    mistakes_with_a_connection(fd, (uint32_t)node);

    uint64_t total = 0;
    for (unsigned i = 0; i < SIZES; i++) {
        echo(fd, i, sizes[i]);
        total += sizes[i];
    }
    size_t last = sizes[SIZES - 1];
    echo_nonblocking(fd, SIZES, last);
    total += last;
    if (total < RING)
        fail(13, "the stream did not reach the end of the ring", (long long)total);
    uint64_t median = round_trips(fd);
    total += ROUND_TRIPS * MESSAGE;

    ok(shutdown(fd, SHUT_WR), 14, "shutdown(SHUT_WR)");
    refused(write(fd, out, 1), EPIPE, 15, "write after shutdown(SHUT_WR)");
    uint64_t echoed = the_end(fd, events);
    if (echoed != total)
        fail(16, "the server echoed another count", (long long)echoed);
    ok(close(fd), 17, "close");
    ok(close(events), 18, "close of the event counter");

    printf("c-sock-echo: %u sizes up to %zu bytes echoed whole, then %zu more non-blocking, %llu bytes in all "
           "(the ring wrapped); %d-byte round trip median %llu us; %d error cases gave their errno\n",
           (unsigned)SIZES, last, last, (unsigned long long)total, MESSAGE, (unsigned long long)median, error_cases);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t argument = readThreadArgument();
    return argument == _EMPTY_THREAD_ARGUMENT_ ? client(argc, argv) : server(argument);
}

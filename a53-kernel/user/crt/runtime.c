/*
 * The C runtime of a Unimem process (a53-kernel/user/crt/README.md): the start-up after
 * `_start` (thread-local storage, arguments, constructors, main, exit) and what picolibc asks
 * of its system: the console as stdin, stdout and stderr, file descriptors (the console's 0, 1
 * and 2 here, sockets and the event counter in the C library), the heap, the clock, sleeps and
 * the end of the process. Every system call goes through the Rust user library
 * (`unimem_sys.h`, `unimem_sock.h`), the same code the Rust programs use; posix.c has the
 * socket calls.
 */
#include <errno.h>
#include <picotls.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>

#include "posix.h"
#include "unimem_sock.h"
#include "unimem_sys.h"

/* The heap's address space, taken at the first allocation; its pages get frames when first
 * touched, so a large reservation costs nothing until it is used. */
#define HEAP_BYTES (1ull << 30)

/* What a C program sees as argv[0]: the kernel keeps the arguments, not the program's name. */
#define PROGRAM_NAME "unimem-c"

extern int main(int argc, char **argv);
extern char __bss_start[], __bss_end[];
extern void __libc_init_array(void);

/* ---- Start-up ---- */

static char arguments[UNIMEM_ARGS_MAX + 1];
static char *argv[UNIMEM_ARGS_MAX / 2 + 2];

/* Splits the arguments the kernel keeps (each followed by a zero byte) into argv, after the
 * program's name; returns argc. */
static int split_arguments(void)
{
    int argc = 0;
    argv[argc++] = PROGRAM_NAME;
    int64_t total = unimem_sys_args(arguments, UNIMEM_ARGS_MAX);
    size_t len = total < 0 ? 0 : total > UNIMEM_ARGS_MAX ? UNIMEM_ARGS_MAX : (size_t)total;
    for (size_t at = 0; at < len; at += strlen(&arguments[at]) + 1)
        argv[argc++] = &arguments[at];
    argv[argc] = NULL;
    return argc;
}

/* Called by `_start` (crt0.S) on the initial stack. */
__attribute__((noreturn, used)) void __unimem_c_start(void)
{
    /* The loader zeroes .bss too; this keeps the program right whatever the loader does. */
    memset(__bss_start, 0, (size_t)(__bss_end - __bss_start));

    /* picolibc's thread-local storage (errno among it), on this stack, which is never left. */
    size_t align = _tls_align() < 16 ? 16 : _tls_align();
    uintptr_t block = (uintptr_t)__builtin_alloca(_tls_size() + align);
    void *tls = (void *)((block + align - 1) & ~(uintptr_t)(align - 1));
    _init_tls(tls);
    _set_tls(tls);

    int argc = split_arguments();
    __libc_init_array();
    exit(main(argc, argv));
}

/* ---- The console: stdin, stdout and stderr ---- */

/* A process's console output is one line per LOG call; bytes wait here for their newline. */
static char line[UNIMEM_LOG_MAX];
static size_t line_used;

static void console_end_line(void)
{
    unimem_sys_log(line, line_used);
    line_used = 0;
}

static void console_write(const char *bytes, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (bytes[i] == '\n') {
            console_end_line();
            continue;
        }
        if (line_used == sizeof line)
            console_end_line();
        line[line_used++] = bytes[i];
    }
}

static int console_put(char c, FILE *file)
{
    (void)file;
    console_write(&c, 1);
    return (unsigned char)c;
}

/* A process has no console input. */
static int console_get(FILE *file)
{
    (void)file;
    return EOF;
}

static int console_flush(FILE *file)
{
    (void)file;
    if (line_used > 0)
        console_end_line();
    return 0;
}

static FILE console = FDEV_SETUP_STREAM(console_put, console_get, console_flush, _FDEV_SETUP_RW);
FILE *const stdin = &console;
FILE *const stdout = &console;
FILE *const stderr = &console;

/* fflush(NULL) flushes every output stream (C11 7.21.5.2), which picolibc's fflush does not
 * take (it calls through the NULL stream). The console is the only stream: programs are linked
 * with -Wl,--wrap=fflush (xtask/src/c_programs.rs), so their fflush calls come here. */
int __real_fflush(FILE *stream);
int __wrap_fflush(FILE *stream);
int __wrap_fflush(FILE *stream)
{
    return __real_fflush(stream != NULL ? stream : stdout);
}

/* File descriptors 0, 1 and 2 are the console; the others (sockets, the event counter) are
 * the C library's. */
static int is_console(int fd)
{
    return fd == STDIN_FILENO || fd == STDOUT_FILENO || fd == STDERR_FILENO;
}

ssize_t write(int fd, const void *buf, size_t len)
{
    if (!is_console(fd))
        return (ssize_t)posix_result(unimem_sock_write(fd, buf, len));
    if (fd == STDIN_FILENO) {
        errno = EBADF;
        return -1;
    }
    if (buf == NULL && len > 0) {
        errno = EFAULT;
        return -1;
    }
    console_write(buf, len);
    return (ssize_t)len;
}

/* The console has no input: stdin is at its end. */
ssize_t read(int fd, void *buf, size_t len)
{
    if (!is_console(fd))
        return (ssize_t)posix_result(unimem_sock_read(fd, buf, len));
    if (fd != STDIN_FILENO) {
        errno = EBADF;
        return -1;
    }
    return 0;
}

/* The console's descriptors stay open (it is the process's only output); the library closes
 * the rest. */
int close(int fd)
{
    return (int)posix_result(unimem_sock_close(fd));
}

/* ---- The end of the process ---- */

__attribute__((noreturn)) void _exit(int status)
{
    console_flush(stdout);
    unimem_sys_exit((uint64_t)(unsigned)status);
}

pid_t getpid(void)
{
    return 1;
}

/* `raise` (and so `abort`) ends the process: there are no signal handlers to run. The status is
 * 128 + the signal, as a shell reports it. */
int kill(pid_t pid, int sig)
{
    if (pid != getpid()) {
        errno = ESRCH;
        return -1;
    }
    fprintf(stderr, "terminated by signal %d\n", sig);
    _exit(128 + sig);
}

/* ---- The heap ---- */

void *sbrk(ptrdiff_t increment)
{
    static uintptr_t base, top;
    if (base == 0) {
        int64_t at = unimem_sys_map(HEAP_BYTES, UNIMEM_MAP_WRITABLE);
        if (at < 0) {
            errno = ENOMEM;
            return (void *)-1;
        }
        base = top = (uintptr_t)at;
    }
    size_t used = top - base;
    if (increment < 0 ? (size_t)-increment > used : (size_t)increment > HEAP_BYTES - used) {
        errno = ENOMEM;
        return (void *)-1;
    }
    uintptr_t old = top;
    top += increment;
    return (void *)old;
}

/* ---- Time: the node's clock since it booted (there is no calendar) ---- */

int clock_gettime(clockid_t clock, struct timespec *now)
{
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) {
        errno = EINVAL;
        return -1;
    }
    if (now == NULL) {
        errno = EFAULT;
        return -1;
    }
    uint64_t us = unimem_sys_time_us();
    now->tv_sec = (time_t)(us / 1000000);
    now->tv_nsec = (long)(us % 1000000) * 1000;
    return 0;
}

int gettimeofday(struct timeval *restrict now, void *restrict zone)
{
    (void)zone;
    if (now != NULL) {
        uint64_t us = unimem_sys_time_us();
        now->tv_sec = (time_t)(us / 1000000);
        now->tv_usec = (suseconds_t)(us % 1000000);
    }
    return 0;
}

/* `clock()`'s source: the process's time is the node's (a process core is its own). */
clock_t times(struct tms *buf)
{
    clock_t ticks = (clock_t)(unimem_sys_time_us() * CLOCKS_PER_SEC / 1000000);
    if (buf != NULL)
        *buf = (struct tms){ .tms_utime = ticks };
    return ticks;
}

/* Sleeps at least `us` microseconds (the kernel ends the wait at its deadline). */
static void sleep_us(uint64_t us)
{
    if (us > 0)
        unimem_sys_sleep_us(us);
}

int nanosleep(const struct timespec *request, struct timespec *remaining)
{
    if (request == NULL) {
        errno = EFAULT;
        return -1;
    }
    if (request->tv_sec < 0 || request->tv_nsec < 0 || request->tv_nsec >= 1000000000) {
        errno = EINVAL;
        return -1;
    }
    sleep_us((uint64_t)request->tv_sec * 1000000 + ((uint64_t)request->tv_nsec + 999) / 1000);
    if (remaining != NULL)
        *remaining = (struct timespec){ 0 };
    return 0;
}

int usleep(useconds_t us)
{
    sleep_us(us);
    return 0;
}

unsigned sleep(unsigned seconds)
{
    sleep_us((uint64_t)seconds * 1000000);
    return 0;
}

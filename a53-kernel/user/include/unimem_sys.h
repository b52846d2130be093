/*
 * unimem_sys.h: the system calls a C runtime is built on (start-up, stdio, the heap, the
 * clock, sleeps), for the runtime's author rather than for programs. Link libunimem_c.a; the
 * library defines neither _start nor main, the runtime does.
 *
 * They answer as the kernel does (docs/hw/syscalls.md): a negative int64_t is -n for the
 * error n (UNIMEM_SYS_* in unimem_error.h). They do not set unimem_last_error().
 */
#ifndef UNIMEM_SYS_H
#define UNIMEM_SYS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* unimem_sys_map's flag for a writable region (proto::syscall::MAP_WRITABLE). */
#define UNIMEM_MAP_WRITABLE 1
/* The longest line unimem_sys_log writes (proto::syscall::LOG_MAX). */
#define UNIMEM_LOG_MAX 256
/* The most bytes of arguments a process has (proto::syscall::ARGS_MAX). */
#define UNIMEM_ARGS_MAX 256

/* Ends the process with status (all 64 bits reach the kernel). */
void unimem_sys_exit(uint64_t status) __attribute__((noreturn));
/* Writes one console line of len bytes (at most UNIMEM_LOG_MAX are written; UTF-8, else the
 * console shows <not UTF-8>); the bytes written, or a negative error. */
int64_t unimem_sys_log(const char *buf, size_t len);
/* Microseconds since boot. */
uint64_t unimem_sys_time_us(void);
/* Sleeps at least us microseconds; 0, or -UNIMEM_SYS_INTERRUPTED when a signal ended it
 * (unimem_mailbox.h). */
int64_t unimem_sys_sleep_us(uint64_t us);
/* A new region of len bytes (rounded up to pages, zeroed, each page given a frame when first
 * touched): its address, or a negative error. flags: UNIMEM_MAP_WRITABLE or 0. */
int64_t unimem_sys_map(uint64_t len, uint64_t flags);
/* Copies the process's arguments, each followed by a zero byte, into buf (at most len bytes;
 * buf may be NULL when len is 0); their whole length, more than len when they did not fit, or
 * a negative error. */
int64_t unimem_sys_args(char *buf, size_t len);
/* Gives the core to another runnable process. */
void unimem_sys_yield(void);
/* This node (UINT64_MAX should the kernel refuse, which it does not). */
uint64_t unimem_sys_node(void);
/* How many nodes there are (0 should the kernel refuse). */
uint64_t unimem_sys_nodes(void);

#ifdef __cplusplus
}
#endif

#endif /* UNIMEM_SYS_H */

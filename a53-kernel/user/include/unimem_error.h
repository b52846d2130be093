/*
 * unimem_error.h: how the C API of Unimem processes reports failure (the library is
 * libunimem_c.a, a53-kernel/user/c; `cargo xtask` builds it).
 *
 * A status is a uint64_t: 0 for success, else the exit status a Rust program failing with
 * the same error ends with (a53-kernel/user/README.md, "Exit statuses"), so a program that
 * passes it to exit() is read the same way. The calls whose seed signature has room for
 * nothing but a value (NULL, 0, -1, ...) leave the status in unimem_last_error(); the others
 * return it.
 *
 * The values below are checked against the Rust side by the C library's host tests.
 */
#ifndef UNIMEM_ERROR_H
#define UNIMEM_ERROR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The status of the latest call of these headers that can fail: 0 if it succeeded. A process
 * has one thread, so this is the process's. */
uint64_t unimem_last_error(void);

#define UNIMEM_OK 0

/* The atomic service answered a GSAS error code: UNIMEM_E_SERVICE + code. */
#define UNIMEM_E_SERVICE 0x100
/* Refused before sending, with the code the service would have answered: UNIMEM_E_LOCAL + code
 * (UNIMEM_E_LOCAL + UNIMEM_GSAS_UNALIGNED for an address that breaks the alignment rule). */
#define UNIMEM_E_LOCAL 0x180
/* A system call returned -n: UNIMEM_E_SYSCALL + n (n: UNIMEM_SYS_*). */
#define UNIMEM_E_SYSCALL 0x200
/* A system call returned a negative value the library does not know. */
#define UNIMEM_E_UNKNOWN_RETURN 0x2ff
/* No answer within the timeout (20 s for a GSAS request), or a wait that ran out. */
#define UNIMEM_E_TIMEOUT 0x300
/* The packetizer found the packet unsendable. */
#define UNIMEM_E_ILLEGAL 0x301
/* A packetizer register write hit a pending packet. */
#define UNIMEM_E_OVERWRITTEN 0x302
/* The node is not in 0 .. getNumberBoards() - 1. */
#define UNIMEM_E_NO_SUCH_NODE 0x303
/* The process has no thread argument. */
#define UNIMEM_E_NO_ARGUMENT 0x304
/* Busy: 64 RDMA transfers (or callbacks not yet run) at once, or a call from a callback that
 * the library is running. */
#define UNIMEM_E_BUSY 0x305
/* The operation cannot be done this way. */
#define UNIMEM_E_UNSUPPORTED 0x306
/* The node died or its links are down. */
#define UNIMEM_E_NODE_UNREACHABLE 0x307
/* A reply broke the protocol: UNIMEM_E_PROTOCOL + kind (README.md, "Exit statuses"). */
#define UNIMEM_E_PROTOCOL 0x310
/* An RDMA transfer ended with CQE status s: UNIMEM_E_TRANSFER + s (s: UNIMEM_CQE_*). */
#define UNIMEM_E_TRANSFER 0x320

/* The RDMA calls' own refusals (unim_dma.h). */
#define UNIMEM_E_NOT_INITIALISED 0x340 /* unim_dma_init has not succeeded, or cleanup came after */
#define UNIMEM_E_NOT_THIS_NODE 0x341   /* unim_dma_init was given another node's id */
#define UNIMEM_E_NO_SUCH_BUFFER 0x342  /* a buffer object or id that names no buffer (freed, or never one) */
#define UNIMEM_E_EMPTY_BUFFER 0x343    /* a buffer of 0 bytes */
#define UNIMEM_E_TOO_MANY_BUFFERS 0x344 /* 64 buffer objects exist already */
#define UNIMEM_E_REMOTE_ALLOCATION 0x345 /* unim_alloc_buf_r for another node: see unim_dma.h */
#define UNIMEM_E_NOT_LOCAL 0x346       /* the memory of a buffer on another node */
#define UNIMEM_E_OUTSIDE_BUFFER 0x347  /* offset + size past the end of a buffer */
#define UNIMEM_E_BOTH_REMOTE 0x348     /* neither end of a transfer is on this node */

/* The C layer's own. */
#define UNIMEM_E_NULL 0x400         /* a pointer that must not be NULL was */
#define UNIMEM_E_BAD_ARGUMENT 0x401 /* an argument out of its range */

/* GSAS error codes (docs/hw/gsas-packets.md, "Error codes"). */
#define UNIMEM_GSAS_BAD_OPCODE 1
#define UNIMEM_GSAS_UNALIGNED 2
#define UNIMEM_GSAS_UNMAPPED 3
#define UNIMEM_GSAS_PERMISSION_DENIED 4
#define UNIMEM_GSAS_OUT_OF_MEMORY 5
#define UNIMEM_GSAS_BAD_ARGUMENT 6
#define UNIMEM_GSAS_WRONG_NODE 7
#define UNIMEM_GSAS_SPAWN_FAILED 8
#define UNIMEM_GSAS_MEMORY_FAULT 9
#define UNIMEM_GSAS_NO_RECEIVER 10
#define UNIMEM_GSAS_QUEUE_FULL 11
#define UNIMEM_GSAS_NO_PROCESS 12

/* System-call errors, as n of -n (docs/hw/syscalls.md). */
#define UNIMEM_SYS_BAD_ARGUMENT 1
#define UNIMEM_SYS_BAD_POINTER 2
#define UNIMEM_SYS_NO_SUCH_CALL 3
#define UNIMEM_SYS_WOULD_BLOCK 4
#define UNIMEM_SYS_TIMED_OUT 5
#define UNIMEM_SYS_BUSY 6
#define UNIMEM_SYS_NOT_REGISTERED 7
#define UNIMEM_SYS_UNREACHABLE 8
#define UNIMEM_SYS_NO_PD 9
#define UNIMEM_SYS_INTERRUPTED 10
#define UNIMEM_SYS_CONNECTION_REFUSED 11
#define UNIMEM_SYS_CONNECTION_RESET 12
#define UNIMEM_SYS_ADDRESS_IN_USE 13
#define UNIMEM_SYS_CLOSED 14

/* RDMA completion statuses (docs/hw/pldma.md, "CQE status"). */
#define UNIMEM_CQE_OK 0
#define UNIMEM_CQE_BAD_REQUEST 1
#define UNIMEM_CQE_FAULT_LOCAL 2
#define UNIMEM_CQE_FAULT_REMOTE 3
#define UNIMEM_CQE_TIMEOUT 4
#define UNIMEM_CQE_REMOTE_ERROR 5
#define UNIMEM_CQE_LOCAL_ERROR 6
#define UNIMEM_CQE_NO_REMOTE_PD 7
#define UNIMEM_CQE_ENGINE_REFUSED 8

/* Often met, spelled out. */
#define UNIMEM_E_UNALIGNED (UNIMEM_E_LOCAL + UNIMEM_GSAS_UNALIGNED)
#define UNIMEM_E_UNMAPPED (UNIMEM_E_SERVICE + UNIMEM_GSAS_UNMAPPED)
#define UNIMEM_E_PERMISSION_DENIED (UNIMEM_E_SERVICE + UNIMEM_GSAS_PERMISSION_DENIED)
#define UNIMEM_E_WOULD_BLOCK (UNIMEM_E_SYSCALL + UNIMEM_SYS_WOULD_BLOCK)
#define UNIMEM_E_INTERRUPTED (UNIMEM_E_SYSCALL + UNIMEM_SYS_INTERRUPTED)

#ifdef __cplusplus
}
#endif

#endif /* UNIMEM_ERROR_H */

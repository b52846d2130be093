/*
 * unimem.h: the global shared address space (GSAS) for C programs, the API of ExaNoDe D3.6
 * section 2.3 under its own names (the seed's "atomic.h"). Link libunimem_c.a.
 *
 * A GSAS address is 64 bits: the node in bits [63:48], the offset on that node below. It
 * travels in a pointer, as in the seed, but is not memory of this process: never load or store
 * through it (the seed: "unspecified behaviour"); only these calls reach it. Every call waits
 * for the target node's answer (20 s at most; a node that is gone answers at once).
 *
 * Alignment (section 2.4.1, Table 1, corrected in docs/hw/gsas-packets.md): READ8/WRITE8 any
 * byte; READ32/WRITE32 4; READ64, WRITE64, CAS64, FAD64, SWAP64 and WRITE128 8 (WRITE128 may
 * not cross the end of its page); READ4K and freeSharedPage 4096. The seed ignores the low bits
 * of an unaligned address; here such an address is refused (UNIMEM_E_UNALIGNED), like an
 * invalid one: silently moving an access hides the bug.
 *
 * Errors. Where the seed says the application "exits abnormally" on an invalid address
 * (READ*, WRITE*, CAS64, FAD64, SWAP64), it does: the console shows a line naming the call, the
 * address and the error, e.g.
 *     READ64(0x1000000001004): Local(Unaligned), exit status 0x182
 * and the process exits with that status (unimem_error.h). The same calls with the suffix _e
 * return the status instead (0: success) and deliver their value through a pointer, so a
 * program can handle the error. allocSharedPage, freeSharedPage and remoteFork return the
 * seed's error value (NULL or 0) and leave the status in unimem_last_error().
 * getNumberBoards and getBoardPid fail only if the kernel refuses NODE_INFO, and then exit.
 */
#ifndef UNIMEM_H
#define UNIMEM_H

#include <stdint.h>

#include "unimem_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The page size of the GSAS (the seed's PAGE_SIZE). */
#define UNIMEM_PAGE_SIZE 4096
/* What readThreadArgument returns for a process that has no parent (section 2.3.5); never a
 * valid remoteFork argument. */
#define _EMPTY_THREAD_ARGUMENT_ 0xCAFEBEBEDEADBEEFull
/* The longest program name remoteFork takes, in bytes (without its NUL). */
#define _MAX_FORK_PATH_FILENAME_ 255
/* The most pages one allocation takes. */
#define UNIMEM_MAX_ALLOC_PAGES 256

/* Sharing modes of unimem_alloc_shared_page (docs/hw/gsas-packets.md, "Rights"). */
#define UNIMEM_SHARED 0    /* every domain reads and writes (the seed's behaviour) */
#define UNIMEM_READ_ONLY 1 /* other domains read */
#define UNIMEM_PRIVATE 2   /* only the owner */

/* ---- 2.3.1 Basic functionality ---- */

/* The number of nodes (boards). */
uint64_t getNumberBoards(void);
/* The node this process runs on. */
uint64_t getBoardPid(void);

/* ---- 2.3.2 Allocation ---- */

/* quantity (1 .. UNIMEM_MAX_ALLOC_PAGES) consecutive zeroed pages on node bid, readable and writable by every
 * domain; the GSAS address of the first, or NULL (unimem_last_error() says why). Pages are
 * not freed when the process ends. */
void *allocSharedPage(uint16_t quantity, uint64_t bid);
/* allocSharedPage with a sharing mode (UNIMEM_SHARED, UNIMEM_READ_ONLY, UNIMEM_PRIVATE). */
void *unimem_alloc_shared_page(uint16_t quantity, uint64_t bid, uint64_t sharing);
/* Frees the allocation starting at addr (its owner only); the pages freed, or 0. */
uint64_t freeSharedPage(void *addr);

/* ---- 2.3.3 Reads and writes (exit on an invalid address) ---- */

char READ8(char *addr);
/* The seed writes uint64_t *addr, a slip: the value and its alignment are 32-bit. */
uint32_t READ32(uint32_t *addr);
uint64_t READ64(uint64_t *addr);
/* The page at addr (4096-aligned), read at once, into buffer (4096 bytes); returns 4096. Unlike
 * the seed's, any bytes may be read, the pattern 0xCAFEBEBEDEADBEEF included. */
uint64_t READ4K(void *addr, char *buffer);
void WRITE8(char *addr, char val);
void WRITE32(uint32_t *addr, uint32_t val);
void WRITE64(uint64_t *addr, uint64_t val);
/* val[0] at addr, val[1] at addr + 8, written at once. */
void WRITE128(uint64_t *addr, uint64_t val[2]);

/* ---- 2.3.4 Atomic operations (exit on an invalid address) ---- */

/* Stores new_val if the word holds old_val: 1 if it did, else 0. */
uint64_t CAS64(uint64_t *addr, uint64_t old_val, uint64_t new_val);
/* Adds val (wrapping); the value before. */
int64_t FAD64(int64_t *addr, int64_t val);
/* Stores val; the value before. */
uint64_t SWAP64(uint64_t *addr, uint64_t val);

/* ---- 2.3.5 Processes ---- */

/* Runs the program named filename (a program the kernel of node bid has, not a path) on node
 * bid with thread argument arg (not _EMPTY_THREAD_ARGUMENT_); the child's nonzero handle, or
 * 0 (unimem_last_error() says why). */
uint64_t remoteFork(char *filename, uint64_t arg, uint64_t bid);
/* The argument the parent gave, or _EMPTY_THREAD_ARGUMENT_. */
uint64_t readThreadArgument(void);

/* ---- The same calls with a status instead of an exit (0: success) ---- */

/* *value is written only on success; a NULL value is UNIMEM_E_NULL, and nothing is sent. */
uint64_t READ8_e(char *addr, char *value);
uint64_t READ32_e(uint32_t *addr, uint32_t *value);
uint64_t READ64_e(uint64_t *addr, uint64_t *value);
/* On failure the buffer's bytes are unspecified. */
uint64_t READ4K_e(void *addr, char *buffer);
uint64_t WRITE8_e(char *addr, char val);
uint64_t WRITE32_e(uint32_t *addr, uint32_t val);
uint64_t WRITE64_e(uint64_t *addr, uint64_t val);
uint64_t WRITE128_e(uint64_t *addr, uint64_t val[2]);
/* *swapped: 1 if it stored new_val, else 0. */
uint64_t CAS64_e(uint64_t *addr, uint64_t old_val, uint64_t new_val, uint64_t *swapped);
uint64_t FAD64_e(int64_t *addr, int64_t val, int64_t *old);
uint64_t SWAP64_e(uint64_t *addr, uint64_t val, uint64_t *old);

#ifdef __cplusplus
}
#endif

#endif /* UNIMEM_H */

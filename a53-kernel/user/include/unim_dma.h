/*
 * unim_dma.h: user-level RDMA for C programs, the API of ExaNoDe D3.6 section 3.4 under its own
 * names. Link libunimem_c.a.
 *
 * The engine moves bytes between memory of this process and memory of the process of the same
 * protection domain on a node (this one included): a remote spawn keeps its parent's domain
 * (docs/hw/pldma.md, "Protection domains"). Both ends are ordinary virtual memory: no pinning,
 * and a page not yet resident is faulted in when the engine touches it.
 *
 * Where this differs from the seed, and why:
 * - A buffer is memory of a process. unim_alloc_buf_l maps a region for one (zeroed). No
 *   process can allocate memory in another's address space (the seed's remote allocator has
 *   no counterpart), so unim_alloc_buf_r works for this node only, and is
 *   UNIMEM_E_REMOTE_ALLOCATION for another. The peer allocates the buffer itself and sends its
 *   address (unim_buf_get_memory; a notification, unimem_mailbox.h, carries 60 bits); here
 *   unim_attach_buf_r names it. Remote memory is not reachable by loads and stores here, so
 *   unim_buf_get_memory of a buffer on another node is NULL (UNIMEM_E_NOT_LOCAL).
 * - The seed allows one buffer per node; here a process holds up to 64 buffer objects.
 * - A transfer runs between this node and one node: one of its two buffers must be on this
 *   node. Both ends elsewhere is a combination the engine cannot do: the submission returns 0
 *   and unimem_last_error() is UNIMEM_E_BOTH_REMOTE.
 * - A submission is posted to the engine at once, so DMA_PENDING is never returned; 64
 *   transfers in progress (or ended with a callback not run yet) make the next UNIMEM_E_BUSY.
 * - unim_dma_submit_transfer_from_mem and _to_mem copy nothing (the seed's copy through an
 *   internal buffer was to go in a later version): their plain memory is a transfer end like a
 *   buffer's, so it must stay valid, and from_mem's unchanged, until the transfer has ended.
 * - Completion callbacks run from unim_dma_poll, unim_dma_status and unim_dma_wait, in the
 *   caller; never from another thread. A callback may submit.
 * - A transfer that fails ends DMA_FAILED; the destination then holds any mix of old and new
 *   bytes. Freeing a buffer a transfer still uses makes that transfer fail.
 *
 * Every call that can fail sets unimem_last_error() (unimem_error.h): 0, or why.
 */
#ifndef UNIM_DMA_H
#define UNIM_DMA_H

#include <stddef.h>
#include <stdint.h>

#include "unimem_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 3.4.1 Types ---- */

/* A node's number. */
typedef uint16_t unim_node_id_t;
/* A node object (unim_dma_get_node), opaque. */
typedef const struct unim_dma_node *unim_dma_node_t;
/* A buffer object, opaque: only pointers to it are handed out. */
typedef struct unim_dma_buffer unim_dma_buffer_t;
/* A buffer's id: never 0, never reused within the process. */
typedef uint64_t unim_dma_buf_id_t;
/* A transfer's id: never 0, never reused within the process (the engine's tag). */
typedef uint64_t unim_dma_transfer_id_t;
/* The seed's transfer object, which no call takes: a transfer is known by its id. */
typedef struct unim_dma_transfer unim_dma_transfer_t;
/* Called once, with the submitter's argument, after the transfer has ended. */
typedef void (*unim_comp_cb_t)(void *);

/* Where a transfer stands. */
typedef enum {
    DMA_PENDING = 0,   /* never returned: a submission is posted at once */
    DMA_STARTED = 1,   /* posted to the engine, not ended */
    DMA_COMPLETED = 2, /* every byte is at the destination */
    DMA_FAILED = 3,    /* ended with an error */
    DMA_UNKNOWN = 4    /* not in the seed: an id the library does not know (never submitted,
                          forgotten 64 submissions after it ended, or no unim_dma_init) */
} unim_dma_status_t;

/* ---- 3.4.2 Initialisation ---- */

/* Opens the process's RDMA queues; node_id must be this node's (getBoardPid()). 0, or -1:
 * UNIMEM_E_SYSCALL + UNIMEM_SYS_NO_PD when the process holds no RDMA resources on this node
 * (another process of its domain holds them, or the node has no engine),
 * UNIMEM_E_NOT_THIS_NODE. */
int unim_dma_init(unim_node_id_t node_id);
/* Waits for the transfers in progress, frees every buffer, forgets every transfer (callbacks
 * not run included). The calls after it fail (UNIMEM_E_NOT_INITIALISED) until the next
 * unim_dma_init. */
void unim_dma_cleanup(void);

/* ---- 3.4.3 Buffers ---- */

/* A new buffer of size bytes on this node, zeroed; NULL on error. */
unim_dma_buffer_t *unim_alloc_buf_l(uint32_t size);
/* A new buffer on node, which can only be this node; NULL on error (see above). */
unim_dma_buffer_t *unim_alloc_buf_r(uint32_t size, unim_dma_node_t node);
/* Not in the seed: a buffer object for size bytes at addr in the process of this domain on
 * node (this node included), memory that exists already, such as a peer's buffer at the
 * address it sent. Freeing it only forgets it. NULL on error. */
unim_dma_buffer_t *unim_attach_buf_r(uint64_t addr, uint64_t size, unim_dma_node_t node);
/* Frees the buffer: unmaps the memory unim_alloc_buf_* mapped. */
void unim_free_buf(unim_dma_buffer_t *buf);
/* The buffer object with this id; NULL on error. */
unim_dma_buffer_t *unim_get_buf(unim_dma_buf_id_t id);
/* The buffer's id; 0 on error. */
unim_dma_buf_id_t unim_get_buf_id(unim_dma_buffer_t *buf);
/* The memory of a buffer on this node; NULL on error (UNIMEM_E_NOT_LOCAL for another node's). */
void *unim_buf_get_memory(unim_dma_buffer_t *buf);

/* ---- 3.4.4 Transfers ---- */

/* Copies size bytes from src + src_off to dst + dst_off; comp_cb (may be NULL) is called with
 * cb_arg once it has ended. The transfer id, or 0 on error: UNIMEM_E_BOTH_REMOTE,
 * UNIMEM_E_OUTSIDE_BUFFER, UNIMEM_E_NO_SUCH_BUFFER, UNIMEM_E_BUSY,
 * UNIMEM_E_TRANSFER + UNIMEM_CQE_BAD_REQUEST for a size of 0. */
unim_dma_transfer_id_t unim_dma_submit_transfer(unim_dma_buffer_t *src, unim_dma_buffer_t *dst, uint64_t src_off,
                                                uint64_t dst_off, uint64_t size, unim_comp_cb_t comp_cb,
                                                void *cb_arg);
/* From size bytes at src + src_off in this process to dst + dst_off; no copy: the bytes must
 * stay valid and unchanged until the transfer has ended. */
unim_dma_transfer_id_t unim_dma_submit_transfer_from_mem(void *src, unim_dma_buffer_t *dst, uint64_t src_off,
                                                         uint64_t dst_off, uint64_t size, unim_comp_cb_t comp_cb,
                                                         void *cb_arg);
/* From src + src_off to size bytes at dst + dst_off in this process; no copy: the bytes must
 * stay valid, and otherwise unused, until the transfer has ended. */
unim_dma_transfer_id_t unim_dma_submit_transfer_to_mem(unim_dma_buffer_t *src, void *dst, uint64_t src_off,
                                                       uint64_t dst_off, uint64_t size, unim_comp_cb_t comp_cb,
                                                       void *cb_arg);
/* Where the transfer stands (without waiting); then the callbacks that are due run. */
unim_dma_status_t unim_dma_status(unim_dma_transfer_id_t tID);

/* Not in the seed: sleeps until the transfer has ended (timeout_us 0: no limit), then runs the
 * callbacks that are due. DMA_STARTED after the timeout (UNIMEM_E_TIMEOUT), or when a signal
 * ended the wait (UNIMEM_E_INTERRUPTED, unimem_mailbox.h): the transfer goes on. */
unim_dma_status_t unim_dma_wait(unim_dma_transfer_id_t tID, uint64_t timeout_us);
/* Not in the seed: runs the callbacks of the transfers that have ended; how many ran. */
size_t unim_dma_poll(void);

/* ---- 3.4.5 Miscellaneous ---- */

/* The object of node id; NULL if there is no such node. */
unim_dma_node_t unim_dma_get_node(unim_node_id_t id);

#ifdef __cplusplus
}
#endif

#endif /* UNIM_DMA_H */

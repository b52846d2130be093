//! Where queue sets may be: page aligned, wholly inside the PLDMA area's queue half
//! (`board::layout::PLDMA_QUEUES`), which the R5's MPU maps.

use board::layout::{PLDMA_QUEUES, PLDMA_QUEUES_SIZE};
use hal::pldma::PAGE_BYTES;
use proto::rdma::queue::QUEUE_SET_BYTES;

pub fn is_queue_set_address(pa: u64) -> bool {
    pa.is_multiple_of(PAGE_BYTES)
        && pa >= PLDMA_QUEUES
        && pa.checked_add(QUEUE_SET_BYTES).is_some_and(|end| end <= PLDMA_QUEUES + PLDMA_QUEUES_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_page_aligned_sets_inside_the_queue_area() {
        assert!(is_queue_set_address(PLDMA_QUEUES));
        assert!(is_queue_set_address(PLDMA_QUEUES + 0x1000), "a page, not a set, is the alignment");
        assert!(is_queue_set_address(PLDMA_QUEUES + PLDMA_QUEUES_SIZE - QUEUE_SET_BYTES));
        assert!(!is_queue_set_address(PLDMA_QUEUES + PLDMA_QUEUES_SIZE - 0x1000), "runs past the end");
        assert!(!is_queue_set_address(PLDMA_QUEUES + 8));
        assert!(!is_queue_set_address(PLDMA_QUEUES - 0x2000), "the engine rings' half");
        assert!(!is_queue_set_address(0));
        assert!(!is_queue_set_address(!0xfff));
    }
}

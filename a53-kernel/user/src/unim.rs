//! The seed's RDMA API (seed 000 §3.4) as thin wrappers over [`crate::rdma`], so that its
//! programs port directly. The mapping is in `README.md` ("RDMA"). Differences: buffers are any
//! memory of the process (no `unim_alloc_buf_*`: a [`UnimBuffer`] just names a node, an address
//! and a length), a transfer runs between this node and one other (or this one), and callbacks
//! run from [`unim_dma_poll`] (and [`unim_dma_status`]), never from a thread of the library.

use crate::rdma::{Doorbell, Queues, Rdma, Status};
use proto::rdma::queue::{Direction, WQ_ENTRIES};

/// `unim_comp_cb_t`: called with the submitter's argument when the transfer has ended.
pub type UnimCompCb = fn(usize);

/// `unim_dma_buffer_t`: `len` bytes at `addr` in the process of this PD on `node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnimBuffer {
    pub node: u16,
    pub addr: u64,
    pub len: u64,
}

/// `unim_dma_status_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnimDmaStatus {
    /// The id names no transfer this library remembers (never submitted, or its slot has been
    /// reused since: ids are remembered for [`WQ_ENTRIES`] submissions after they end).
    Unknown,
    /// Posted to the engine's work queue (the seed's `DMA_PENDING` never lasts here: a
    /// submission is posted at once).
    Started,
    Completed,
    Failed,
}

#[derive(Clone, Copy)]
struct Entry {
    id: u64,
    callback: Option<(UnimCompCb, usize)>,
    end: Option<UnimDmaStatus>,
}

/// The library state of `unim_dma_init`: the queues and the transfers it tracks.
pub struct UnimDma<D: Doorbell> {
    rdma: Rdma<D>,
    me: u16,
    entries: [Option<Entry>; WQ_ENTRIES],
}

impl<D: Doorbell> UnimDma<D> {
    /// `unim_dma_init`: the queues of this process on node `me`.
    pub fn new(rdma: Rdma<D>, me: u16) -> Self {
        Self { rdma, me, entries: [None; WQ_ENTRIES] }
    }

    /// `unim_dma_submit_transfer`: copies `size` bytes from `src + src_off` to `dst + dst_off`;
    /// one of the two buffers must be on this node. Returns the transfer id, 0 on error (a range
    /// outside its buffer, neither buffer here, 64 transfers in progress).
    ///
    /// # Safety
    ///
    /// The local range stays valid, and is not otherwise used, until the transfer has ended
    /// (`unim_dma_status` says Completed or Failed).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn submit(
        &mut self,
        src: &UnimBuffer,
        dst: &UnimBuffer,
        src_off: u64,
        dst_off: u64,
        size: u64,
        callback: Option<UnimCompCb>,
        arg: usize,
    ) -> u64 {
        let inside = |b: &UnimBuffer, off: u64| off.checked_add(size).is_some_and(|end| end <= b.len);
        if !inside(src, src_off) || !inside(dst, dst_off) {
            return 0;
        }
        let (s, d) = (src.addr.wrapping_add(src_off), dst.addr.wrapping_add(dst_off));
        let (direction, local, node, remote) = if src.node == self.me {
            (Direction::Write, s, dst.node, d)
        } else if dst.node == self.me {
            (Direction::Read, d, src.node, s)
        } else {
            return 0;
        };
        let Ok(size) = usize::try_from(size) else { return 0 };
        // SAFETY: the caller keeps the local range for the transfer (this function's contract).
        let posted = self.rdma.with_queues(|q| unsafe { q.post(direction, local, size, node, remote) });
        let Ok(id) = posted else { return 0 };
        self.entries[slot(id)] = Some(Entry { id, callback: callback.map(|cb| (cb, arg)), end: None });
        id
    }

    /// `unim_dma_status`: where transfer `id` stands. Its callback, if due, runs at the next
    /// [`poll`](Self::poll).
    pub fn status(&mut self, id: u64) -> UnimDmaStatus {
        self.reap();
        match self.entries[slot(id)] {
            Some(Entry { id: e, end: Some(end), .. }) if e == id => end,
            Some(Entry { id: e, end: None, .. }) if e == id => UnimDmaStatus::Started,
            _ => UnimDmaStatus::Unknown,
        }
    }

    /// Takes the completions and runs the callback of every transfer that ended since the last
    /// poll; returns how many callbacks ran.
    pub fn poll(&mut self) -> usize {
        let due = self.take_due();
        due.iter().flatten().for_each(|(cb, arg)| cb(*arg));
        due.iter().flatten().count()
    }

    /// The callbacks that are due, taken (for a caller that runs them outside its own lock).
    pub fn take_due(&mut self) -> [Option<(UnimCompCb, usize)>; WQ_ENTRIES] {
        self.reap();
        let mut due = [None; WQ_ENTRIES];
        for (d, entry) in due.iter_mut().zip(self.entries.iter_mut().flatten()) {
            if entry.end.is_some() {
                *d = entry.callback.take();
            }
        }
        due
    }

    /// Marks the transfers whose completion arrived as ended and frees their queue slots.
    fn reap(&mut self) {
        for entry in self.entries.iter_mut().flatten().filter(|e| e.end.is_none()) {
            let status = self.rdma.with_queues(|q: &mut Queues<D>| q.status(entry.id));
            entry.end = match status {
                Status::Pending => continue,
                Status::Done(_) => Some(UnimDmaStatus::Completed),
                Status::Failed(_) => Some(UnimDmaStatus::Failed),
            };
            self.rdma.with_queues(|q| q.release(entry.id));
        }
    }

    /// Transfers submitted that have not ended.
    pub fn in_progress(&self) -> usize {
        self.entries.iter().flatten().filter(|e| e.end.is_none()).count()
    }

    /// The queues underneath.
    pub fn rdma(&self) -> &Rdma<D> {
        &self.rdma
    }
}

fn slot(id: u64) -> usize {
    (id % WQ_ENTRIES as u64) as usize
}

#[cfg(all(target_arch = "aarch64", target_os = "none"))]
mod process {
    use super::*;
    use crate::rdma::HwDoorbell;

    static DMA: spin::Mutex<Option<UnimDma<HwDoorbell>>> = spin::Mutex::new(None);

    /// `int unim_dma_init(unim_node_id_t)`: 0, or -1 if the process has no RDMA queues (or was
    /// initialised already). `node_id` is this node's id, as the seed's programs pass it.
    pub fn unim_dma_init(node_id: u16) -> i32 {
        match crate::rdma::open() {
            Ok(rdma) => {
                *DMA.lock() = Some(UnimDma::new(rdma, node_id));
                0
            }
            Err(_) => -1,
        }
    }

    /// `unim_dma_submit_transfer`: [`UnimDma::submit`]; 0 before `unim_dma_init`.
    ///
    /// # Safety
    ///
    /// As [`UnimDma::submit`].
    pub unsafe fn unim_dma_submit_transfer(
        src: &UnimBuffer,
        dst: &UnimBuffer,
        src_off: u64,
        dst_off: u64,
        size: u64,
        comp_cb: Option<UnimCompCb>,
        cb_arg: usize,
    ) -> u64 {
        let mut dma = DMA.lock();
        let Some(dma) = dma.as_mut() else { return 0 };
        // SAFETY: forwarded from the caller.
        unsafe { dma.submit(src, dst, src_off, dst_off, size, comp_cb, cb_arg) }
    }

    /// `unim_dma_status`: [`UnimDma::status`].
    pub fn unim_dma_status(id: u64) -> UnimDmaStatus {
        DMA.lock().as_mut().map_or(UnimDmaStatus::Unknown, |d| d.status(id))
    }

    /// Runs the callbacks of the transfers that ended since the last poll (outside the library's
    /// lock, so a callback may submit); returns how many ran.
    pub fn unim_dma_poll() -> usize {
        let due = DMA.lock().as_mut().map(|d| d.take_due());
        let due = due.iter().flatten().flatten();
        due.clone().for_each(|(cb, arg)| cb(*arg));
        due.count()
    }
}

#[cfg(all(target_arch = "aarch64", target_os = "none"))]
pub use process::{unim_dma_init, unim_dma_poll, unim_dma_status, unim_dma_submit_transfer};

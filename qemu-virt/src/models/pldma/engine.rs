//! The engine's thread: woken by doorbells, register writes and arriving packets, it runs the
//! receiver and the sender without holding the register lock, then posts what they produced
//! (events into the R5's ring, faults into the FIFO) under it. It never blocks the platform's
//! MMIO server: register accesses only take the lock briefly.

use super::ctx::{Ctx, Outbox};
use super::fault_fifo::FaultFifo;
use super::receiver::{Delivery, Received, Receiver};
use super::regs::RegFile;
use super::sender::{self, BlockJob, Progress};
use super::shares::EventShares;
use crate::models::NodeHooksSlot;
use crate::models::iommu::{IoTranslate, StallId, StallOutcome};
use crate::r5_wake::Cause;
use crate::shm::Ddr;
use crate::transport::{Local, Transport};
use hal::pldma::event::Event;
use hal::pldma::regs::{Counter, IRQ};
use hal::pldma::{PDS, Pd};
use proto::rdma::rings::EngineRings;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::Duration;

/// Packets the engine buffers before it drops arriving ones (a datagram may be lost anyway).
const INBOX_LIMIT: usize = 1 << 16;
/// Descriptors taken per round before the engine posts what it has.
const DESCRIPTORS_PER_ROUND: usize = 64;
/// How often held (stalled) accesses look at the SMMU's decision.
const STALL_POLL: Duration = Duration::from_micros(100);

pub enum Inbound {
    Packet { src: u16, bytes: Vec<u8> },
    Doorbell { pd: Pd, value: u32 },
}

pub struct State {
    pub regs: RegFile,
    pub fifo: FaultFifo,
    pub inbox: VecDeque<Inbound>,
    /// `desc_doorbell` or ENABLE since the engine last looked.
    pub kicked: bool,
    /// PDs disabled since the engine last looked: it drops their held work.
    pub dropped_pds: u16,
    pub stop: bool,
}

pub struct Shared {
    pub node: u16,
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    pub fn new(node: u16, nodes: u16) -> Self {
        let state = State {
            regs: RegFile::new(node, nodes),
            fifo: FaultFifo::new(),
            inbox: VecDeque::new(),
            kicked: false,
            dropped_pds: 0,
            stop: false,
        };
        Self { node, state: Mutex::new(state), wake: Condvar::new() }
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn notify(&self) {
        self.wake.notify_all();
    }

    /// A packet from the interconnect; dropped when the engine is off or its buffer is full.
    /// Only the packet that finds the inbox empty wakes the engine: it takes the whole inbox at
    /// once, so the packets behind it in a burst (a block's 64) cost no wake-up each.
    pub fn deliver(&self, src: u16, bytes: Vec<u8>) -> bool {
        let mut st = self.state();
        if !st.regs.enabled() || st.inbox.len() >= INBOX_LIMIT {
            return false;
        }
        let was_empty = st.inbox.is_empty();
        st.inbox.push_back(Inbound::Packet { src, bytes });
        drop(st);
        if was_empty {
            self.notify();
        }
        true
    }

    pub fn stop(&self) {
        self.state().stop = true;
        self.notify();
    }
}

/// The rings at `pa` in `ddr`, if they fit.
pub fn rings(ddr: &Ddr, pa: u64) -> Option<&EngineRings> {
    // SAFETY: `EngineRings` is made of atomics and cells read and written volatilely; any bit
    // pattern is valid.
    unsafe { ddr.view::<EngineRings>(pa) }
}

/// Work the engine holds while the SMMU decides.
enum Held {
    Send { job: BlockJob, stall: StallId, va: u64 },
    Receive { src: u16, bytes: Vec<u8>, stall: StallId, pd: Pd },
}

impl Held {
    fn pd(&self) -> Pd {
        match self {
            Held::Send { job, .. } => job.pd(),
            Held::Receive { pd, .. } => *pd,
        }
    }

    fn stall(&self) -> StallId {
        match self {
            Held::Send { stall, .. } | Held::Receive { stall, .. } => *stall,
        }
    }
}

struct Engine {
    shared: Arc<Shared>,
    local: Local,
    transport: Arc<dyn Transport>,
    iommu: Arc<dyn IoTranslate>,
    /// The node's platform, for its interrupt lines and its R5's wake-up.
    hooks: NodeHooksSlot,
    receiver: Receiver,
    held: Vec<Held>,
    /// Where each PD's unread DOORBELL event sits in the event ring (its `produced` index).
    doorbell_at: [Option<u32>; PDS],
    /// Each PD's share of the event ring, and the rings they were counted on.
    shares: Option<(u64, EventShares)>,
}

/// Runs until the device stops it.
pub fn run(
    shared: Arc<Shared>,
    local: Local,
    transport: Arc<dyn Transport>,
    iommu: Arc<dyn IoTranslate>,
    hooks: NodeHooksSlot,
) {
    let mut engine = Engine {
        shared,
        local,
        transport,
        iommu,
        hooks,
        receiver: Receiver::new(),
        held: Vec::new(),
        doorbell_at: [None; PDS],
        shares: None,
    };
    while engine.round() {}
}

/// What one round works on, taken under the lock.
struct Round {
    inbox: VecDeque<Inbound>,
    enabled: bool,
    rings: u64,
    pd_enable: u16,
    dropped: u16,
}

impl Engine {
    /// One round; false once stopped.
    fn round(&mut self) -> bool {
        let (local, iommu, shared) = (self.local.clone(), self.iommu.clone(), self.shared.clone());
        let Some(ddr) = local.ddr() else {
            // The node's QEMU is gone: nothing to reach; wait to be stopped.
            let st = self.shared.state();
            if st.stop {
                return false;
            }
            let _ = self.shared.wake.wait_timeout(st, Duration::from_millis(10));
            return true;
        };
        let Some(round) = self.wait(ddr) else { return false };
        if round.dropped != 0 {
            self.held.retain(|h| round.dropped & h.pd().bit() as u16 == 0);
        }
        let mut ctx = Ctx {
            node: self.shared.node,
            nodes: self.transport.nodes() as u16,
            pd_enable: round.pd_enable,
            ddr,
            iommu: &*iommu,
            counters: &local.counters,
            shared: &shared,
            out: Outbox::default(),
        };
        for item in round.inbox {
            match item {
                Inbound::Packet { src, bytes } => {
                    ctx.count(Counter::PacketsReceived);
                    if let Received::Stalled(stall, pd) = self.receiver.receive(&mut ctx, src, &bytes, Delivery::Fresh)
                    {
                        self.held.push(Held::Receive { src, bytes, stall, pd });
                    }
                }
                Inbound::Doorbell { pd, value } => ctx.post(Event::Doorbell { pd, value }),
            }
        }
        self.retry_held(&mut ctx);
        if round.enabled {
            self.take_descriptors(&mut ctx, round.rings);
        }
        let mut out = std::mem::take(&mut ctx.out);
        self.transport.send_datagrams(std::mem::take(&mut out.packets));
        self.publish(ddr, round.rings, out);
        true
    }

    /// Sleeps until there is something to do; `None` once stopped.
    fn wait(&self, ddr: &Ddr) -> Option<Round> {
        let mut st = self.shared.state();
        loop {
            if st.stop {
                return None;
            }
            let rings = st.regs.enabled().then(|| rings(ddr, st.regs.rings())).flatten();
            let descriptors = rings.is_some_and(|r| !r.desc.is_empty());
            if !st.inbox.is_empty() || st.kicked || descriptors || st.dropped_pds != 0 {
                break;
            }
            if !self.held.is_empty() {
                st = self.shared.wake.wait_timeout(st, STALL_POLL).unwrap_or_else(|p| p.into_inner()).0;
                break;
            }
            // Idle: say so, then look once more (`docs/hw/pldma.md`, doorbell suppression).
            if let Some(r) = rings {
                r.engine_idle.store(1, Ordering::SeqCst);
                if !r.desc.is_empty() {
                    r.engine_idle.store(0, Ordering::SeqCst);
                    break;
                }
            }
            st = self.shared.wake.wait(st).unwrap_or_else(|p| p.into_inner());
            if let Some(r) = rings {
                r.engine_idle.store(0, Ordering::SeqCst);
            }
        }
        st.kicked = false;
        let dropped = std::mem::take(&mut st.dropped_pds);
        Some(Round {
            inbox: std::mem::take(&mut st.inbox),
            enabled: st.regs.enabled(),
            rings: st.regs.rings(),
            pd_enable: st.regs.pd_enable(),
            dropped,
        })
    }

    fn retry_held(&mut self, ctx: &mut Ctx<'_>) {
        let held = std::mem::take(&mut self.held);
        for h in held {
            if !ctx.pd_enabled(h.pd()) {
                continue;
            }
            let outcome = self.iommu.stall_outcome(h.stall());
            if outcome == StallOutcome::Pending {
                self.held.push(h);
                continue;
            }
            let terminated = outcome == StallOutcome::Terminate;
            match h {
                Held::Send { mut job, va, .. } => {
                    if !terminated {
                        sender::resumed(ctx, &job, va);
                    }
                    if let Progress::Stalled(stall, va) = sender::run(ctx, &mut job, terminated.then_some(va)) {
                        self.held.push(Held::Send { job, stall, va });
                    }
                }
                Held::Receive { src, bytes, .. } => {
                    let delivery = if terminated { Delivery::Terminated } else { Delivery::Resumed };
                    if let Received::Stalled(stall, pd) = self.receiver.receive(ctx, src, &bytes, delivery) {
                        self.held.push(Held::Receive { src, bytes, stall, pd });
                    }
                }
            }
        }
    }

    fn take_descriptors(&mut self, ctx: &mut Ctx<'_>, rings_pa: u64) {
        for _ in 0..DESCRIPTORS_PER_ROUND {
            // Popped under the lock: ENABLE's drop of the ring's contents is the same consumer.
            let taken = {
                let st = self.shared.state();
                if !st.regs.enabled() || st.regs.rings() != rings_pa {
                    return;
                }
                let Some(r) = rings(ctx.ddr, rings_pa) else { return };
                let position = r.desc.consumed();
                // SAFETY: the engine is the descriptor ring's only consumer, and it only ever
                // consumes under the register lock.
                unsafe { r.desc.consumer() }.pop().map(|raw| (position, raw))
            };
            let Some((position, raw)) = taken else { return };
            if let Some(mut job) = sender::take(ctx, position, &raw)
                && let Progress::Stalled(stall, va) = sender::run(ctx, &mut job, None)
            {
                self.held.push(Held::Send { job, stall, va });
            }
        }
    }

    /// Posts the round's events and faults, bumps the R5's event word, and updates the
    /// interrupt line.
    fn publish(&mut self, ddr: &Ddr, rings_pa: u64, out: Outbox) {
        let counters = &self.local.counters;
        let count = |c: Counter| counters.pldma(c).fetch_add(1, Ordering::Relaxed);
        let (mut posted, mut irq_changed) = (false, out.irq_changed);
        {
            let mut st = self.shared.state();
            let ring = (st.regs.enabled() && st.regs.rings() == rings_pa).then(|| rings(ddr, rings_pa)).flatten();
            if let Some(r) = ring {
                // SAFETY: the engine is the event ring's only producer, under the register lock.
                let mut producer = unsafe { r.events.producer() };
                let shares = match &mut self.shares {
                    Some((pa, shares)) if *pa == rings_pa => shares,
                    other => &mut other.insert((rings_pa, EventShares::new(r.events.consumed()))).1,
                };
                shares.consumed(r.events.consumed());
                for e in out.events {
                    let doorbell = match e {
                        Event::Doorbell { pd, .. } => Some(pd.index()),
                        _ => None,
                    };
                    if let Some(pd) = doorbell {
                        // One DOORBELL per PD in the ring at a time.
                        let unread =
                            self.doorbell_at[pd].is_some_and(|at| (at.wrapping_sub(r.events.consumed()) as i32) >= 0);
                        if unread {
                            continue;
                        }
                    }
                    if let Event::DescRefused { .. } = e {
                        st.regs.raise(IRQ::DESC_REFUSED::SET.value);
                        irq_changed = true;
                    }
                    let at = r.events.produced();
                    // A PD past its share loses its own event (`shares`).
                    if shares.admits(e.pd_index()) && producer.push(e.encode()).is_ok() {
                        shares.posted(e.pd_index(), at);
                        count(Counter::EventsPosted);
                        posted = true;
                        if let Some(pd) = doorbell {
                            self.doorbell_at[pd] = Some(at);
                        }
                    } else {
                        st.regs.raise(IRQ::EVENTS_LOST::SET.value);
                        st.regs.event_lost(e.pd_index());
                        irq_changed = true;
                        count(Counter::EventsLost);
                    }
                }
            }
            let busy = self.held.iter().fold(0u16, |b, h| b | h.pd().bit() as u16);
            st.regs.set_pd_busy(busy);
        }
        if (posted || irq_changed)
            && let Some(platform) = self.hooks.get().and_then(Weak::upgrade)
        {
            // The R5 has news: it wakes if it sleeps (`docs/hw/ipi.md`).
            if posted {
                platform.wake_r5(Cause::Engine);
            }
            if irq_changed {
                platform.update_irqs();
            }
        }
    }
}

//! Host scheduling of the platform's threads (`docs/hw/forwarding.md`, "Host scheduling").

/// Makes the calling thread run as soon as it has work: a guest waits for it.
///
/// The threads that answer guests (each node's server, the looker, the interrupt wires) take
/// the real-time FIFO class at its lowest priority where the host allows it (root, or
/// CAP_SYS_NICE); elsewhere they stay ordinary threads and this does nothing. On a host with
/// fewer cores than busy vCPUs, an ordinary server woken by a kick, or a looker that finds a
/// request, waits for a vCPU's time slice to end (milliseconds), while the vCPU it should answer
/// spins; a real-time one preempts at once. None of them runs long: servers and wires block
/// between short pieces of work, and the looker spins for at most 50 µs after the last access
/// it found. Linux keeps 5% of every core for ordinary threads in any case
/// (`sched_rt_runtime_us`).
pub fn serve_promptly() {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: changes only the calling thread's scheduling class; `param` is a valid struct.
    unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
}

/// The slice an idle R5's threads get: an idle R5 polls, and whenever it gets a core it should
/// give it back soon (a slice of the default length, milliseconds, is a stall for the vCPU
/// that shared the core with it).
pub const IDLE_SLICE_NS: u64 = 100_000;

/// `sched_setattr`'s argument (`include/uapi/linux/sched/types.h`, the 48-byte first version).
#[repr(C)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    /// For an ordinary thread: its slice in nanoseconds (Linux 6.12 on), 0 for the default.
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// Makes thread `tid` (of our own child) an ordinary thread of priority `nice`, with a slice of
/// `slice_ns` nanoseconds (0: the default). Kernels that take no slice get only the priority.
pub fn set_fair(tid: libc::pid_t, nice: libc::c_int, slice_ns: u64) {
    let attr = SchedAttr {
        size: size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice,
        priority: 0,
        runtime: slice_ns,
        deadline: 0,
        period: 0,
    };
    // SAFETY: `attr` is a valid `sched_attr` of the size it says, alive for the call; the call
    // changes only the scheduling of thread `tid`.
    let set = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &raw const attr, 0u32) } == 0;
    if !set {
        // SAFETY: setpriority on a thread of our own child; no memory is involved.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    }
}

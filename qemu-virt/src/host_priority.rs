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

/// Makes the calling thread an ordinary one again (after [`serve_promptly`]).
pub fn serve_fairly() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: changes only the calling thread's scheduling class; `param` is a valid struct.
    unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_OTHER, &param) };
}

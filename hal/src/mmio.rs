//! Ownership of memory-mapped register blocks.

use core::{marker::PhantomData, ops::Deref, ptr::NonNull};

/// A register block of type `T` at a fixed address, handed out once by the board.
///
/// This plays the role of Tock's `StaticRef`: it is created in an `unsafe fn`, whose caller
/// promises that the address really holds a `T` for the rest of the program and that no other
/// `Mmio` for the same block is in use, and then derefs to the register block.
pub struct Mmio<T> {
    ptr: NonNull<T>,
    _block: PhantomData<T>,
}

impl<T> Mmio<T> {
    /// # Safety
    ///
    /// `addr` must be the (virtual) address of a mapped register block laid out as `T`, valid for
    /// the rest of the program, and the caller must be its only user.
    pub const unsafe fn new(addr: usize) -> Self {
        // SAFETY: the caller promises a valid, hence non-null, block address.
        let ptr = unsafe { NonNull::new_unchecked(addr as *mut T) };
        Self { ptr, _block: PhantomData }
    }

    /// The block's address.
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }
}

impl<T> Deref for Mmio<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: `new`'s contract: the block is mapped and valid for the program's lifetime.
        unsafe { self.ptr.as_ref() }
    }
}

// SAFETY: register blocks are made of `tock_registers` cells that perform volatile accesses;
// sharing the handle between cores is as safe as the hardware block itself, and drivers add the
// locking their protocol needs.
unsafe impl<T> Send for Mmio<T> {}
// SAFETY: see `Send`.
unsafe impl<T> Sync for Mmio<T> {}

/// One 128-bit load (`ldr q` on AArch64), never two 64-bit halves: a mailbox DATA read is a
/// dequeue, and a packetizer payload is one register.
///
/// # Safety
///
/// `ptr` must be valid for a 16-byte read (device or normal memory) and 16-byte aligned.
#[inline(always)]
pub unsafe fn read_u128(ptr: *const u128) -> u128 {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: per the caller.
    unsafe {
        crate::arch::load_q(ptr)
    }
    #[cfg(not(target_arch = "aarch64"))]
    // SAFETY: per the caller.
    unsafe {
        ptr.read_volatile()
    }
}

/// Two adjacent 128-bit loads in one instruction (`ldp q, q` on AArch64): the first at `ptr`,
/// then the next 16 bytes. A register pair meant to be read together (the vmbox's `packet`)
/// is read in one bus burst where the bus makes one, and in one forwarded request on the
/// QEMU board.
///
/// # Safety
///
/// `ptr` must be valid for a 32-byte read (device or normal memory) and 16-byte aligned.
#[inline(always)]
pub unsafe fn read_u128_pair(ptr: *const u128) -> [u128; 2] {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: per the caller.
    unsafe {
        crate::arch::load_q_pair(ptr)
    }
    #[cfg(not(target_arch = "aarch64"))]
    // SAFETY: per the caller.
    unsafe {
        [ptr.read_volatile(), ptr.add(1).read_volatile()]
    }
}

/// Two adjacent 128-bit stores in one instruction (`stp q, q` on AArch64), as
/// [`read_u128_pair`] reads.
///
/// # Safety
///
/// `ptr` must be valid for a 32-byte write and 16-byte aligned.
#[inline(always)]
pub unsafe fn write_u128_pair(ptr: *mut u128, values: [u128; 2]) {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: per the caller.
    unsafe {
        crate::arch::store_q_pair(ptr, values)
    }
    #[cfg(not(target_arch = "aarch64"))]
    // SAFETY: per the caller.
    unsafe {
        ptr.write_volatile(values[0]);
        ptr.add(1).write_volatile(values[1]);
    }
}

/// Two adjacent 32-bit stores in one instruction (`stp w, w` on AArch64): the first at `ptr`,
/// then the next 4 bytes. For registers written together (a vmbox MIF's interrupt set-up), one
/// burst on the board and one forwarded request on the QEMU board.
///
/// # Safety
///
/// `ptr` must be valid for an 8-byte write (device or normal memory) and 4-byte aligned.
#[inline(always)]
pub unsafe fn write_u32_pair(ptr: *mut u32, values: [u32; 2]) {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: per the caller.
    unsafe {
        crate::arch::store_w_pair(ptr, values)
    }
    #[cfg(not(target_arch = "aarch64"))]
    // SAFETY: per the caller.
    unsafe {
        ptr.write_volatile(values[0]);
        ptr.add(1).write_volatile(values[1]);
    }
}

/// One 128-bit store (`str q` on AArch64).
///
/// # Safety
///
/// `ptr` must be valid for a 16-byte write and 16-byte aligned.
#[inline(always)]
pub unsafe fn write_u128(ptr: *mut u128, value: u128) {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: per the caller.
    unsafe {
        crate::arch::store_q(ptr, value)
    }
    #[cfg(not(target_arch = "aarch64"))]
    // SAFETY: per the caller.
    unsafe {
        ptr.write_volatile(value)
    }
}

//! The headers held to the exports, on the host (no cbindgen: the tests derive the C side from
//! the Rust one and let the cross-compiler judge).
//!
//! - [`exports`] lists every exported function once, with its Rust type (the function must have
//!   exactly that type, or this does not compile); [`CType`] spells that type in C.
//! - [`constants`] gives the value every header constant must have, from its Rust definition.
//! - [`RUNTIME`] lists the functions the C runtime defines over the exports (`crt/posix.c`,
//!   `crt/runtime.c`: `socket`, `poll`, `read`, ...), with their POSIX prototypes.
//! - The tests check that the headers declare exactly the exported names and the runtime's,
//!   that the runtime defines every one of its names, that every `no_mangle` function is
//!   listed, that every constant the headers define is listed, and, with
//!   `aarch64-linux-gnu-gcc` and picolibc, that each header compiles alone and that a file
//!   assigning every export and runtime function to a pointer of its prototype, and asserting
//!   every constant (picolibc's `errno` and `fcntl` values among them), compiles with warnings
//!   as errors.

use core::ffi::{c_char, c_void};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::string::{String, ToString};
use std::vec::Vec;
use std::{format, vec};

use proto::gsas::{
    EMPTY_THREAD_ARGUMENT, ErrorCode, MAX_ALLOC_PAGES, MAX_SPAWN_NAME, MailboxOpcode, NOTIFICATION_PAYLOAD_BITS,
    Notification, PAGE_SIZE, Sharing,
};
use proto::rdma::queue::CqeStatus;
use proto::syscall::{ANY_OPCODE, ARGS_MAX, LOG_MAX, MAP_WRITABLE, SIGNALS_MAX};
use unimem_user::unim::{UnimCompCbC, UnimError};
use unimem_user::{Error, SysError, status as lib};

use crate::dma::{DmaStatus, UnimDmaBuffer, UnimDmaNode};
use crate::shmem::VolatileVoid;
use crate::sockets::addr::*;
use crate::sockets::calls::fcntl::*;
use crate::sockets::{Errno, PollFd};
use crate::status::code;

/// A Rust type as C spells it.
pub(crate) trait CType {
    /// The declaration of `name` with this type (C wraps the name in the type: `void
    /// (*name)(void *)`); an empty `name` gives the type alone, as in a parameter list.
    fn decl(name: &str) -> String;
}

/// `c name`, or `c` alone.
fn join(c: &str, name: &str) -> String {
    if name.is_empty() { c.to_string() } else { format!("{c} {name}") }
}

macro_rules! named {
    ($($t:ty => $c:literal),* $(,)?) => {
        $(impl CType for $t {
            fn decl(name: &str) -> String {
                join($c, name)
            }
        })*
    };
}

// `c_char` is `i8` on the host and `u8` on the target: either way C's `char`, and no export uses
// `i8` or `u8` otherwise.
named! {
    () => "void",
    c_void => "void",
    c_char => "char",
    u16 => "uint16_t",
    u32 => "uint32_t",
    u64 => "uint64_t",
    i32 => "int32_t",
    i64 => "int64_t",
    usize => "size_t",
    UnimDmaBuffer => "unim_dma_buffer_t",
    UnimDmaNode => "struct unim_dma_node",
    DmaStatus => "unim_dma_status_t",
    PollFd => "struct pollfd",
}

impl<T: CType> CType for *mut T {
    fn decl(name: &str) -> String {
        T::decl(&format!("*{name}"))
    }
}

impl<T: CType> CType for *const T {
    fn decl(name: &str) -> String {
        format!("const {}", T::decl(&format!("*{name}")))
    }
}

/// The parameter list of a prototype.
fn parameters(types: &[String]) -> String {
    if types.is_empty() { "void".to_string() } else { types.join(", ") }
}

macro_rules! functions {
    ($($a:ident),*) => {
        impl<R: CType, $($a: CType),*> CType for extern "C" fn($($a),*) -> R {
            fn decl(name: &str) -> String {
                R::decl(&format!("(*{name})({})", parameters(&[$($a::decl("")),*])))
            }
        }
        impl<R: CType, $($a: CType),*> CType for unsafe extern "C" fn($($a),*) -> R {
            fn decl(name: &str) -> String {
                <extern "C" fn($($a),*) -> R>::decl(name)
            }
        }
        /// A function pointer that may be NULL (a C callback).
        impl<R: CType, $($a: CType),*> CType for Option<unsafe extern "C" fn($($a),*) -> R> {
            fn decl(name: &str) -> String {
                <extern "C" fn($($a),*) -> R>::decl(name)
            }
        }
    };
}

functions!();
functions!(A);
functions!(A, B);
functions!(A, B, C);
functions!(A, B, C, D);
functions!(A, B, C, D, E);
functions!(A, B, C, D, E, F);
functions!(A, B, C, D, E, F, G);
functions!(A, B, C, D, E, F, G, H);
functions!(A, B, C, D, E, F, G, H, I);
functions!(A, B, C, D, E, F, G, H, I, J);

/// `noreturn`: C declares it with an attribute, which does not change the pointer type.
impl CType for extern "C" fn(u64) -> ! {
    fn decl(name: &str) -> String {
        <extern "C" fn(u64)>::decl(name)
    }
}

/// `shmem_global_exit` is `noreturn` too.
impl CType for extern "C" fn(i32) -> ! {
    fn decl(name: &str) -> String {
        <extern "C" fn(i32)>::decl(name)
    }
}

/// The variables a wait polls: `volatile void *`.
impl CType for crate::shmem::VolatileVoid {
    fn decl(name: &str) -> String {
        join("volatile void", &format!("*{name}"))
    }
}

/// An export: its name, and how C declares a pointer to it.
pub(crate) struct Export {
    /// The symbol.
    pub name: &'static str,
    /// [`CType::decl`] of its type: `decl("p")` declares a pointer `p` to it.
    pub decl: fn(&str) -> String,
}

macro_rules! exports {
    ($($module:ident::$name:ident: $ty:ty;)*) => {
        /// Every exported function, once.
        pub(crate) fn exports() -> Vec<Export> {
            vec![$({
                // The export has exactly this type (safe functions may stand as `unsafe`).
                let _: $ty = crate::$module::$name;
                Export { name: stringify!($name), decl: <$ty as CType>::decl }
            }),*]
        }
    };
}

/// A buffer object.
type Buf = *mut UnimDmaBuffer;
/// A node object.
type Node = *const UnimDmaNode;
/// A completion callback that may be NULL.
type Cb = Option<UnimCompCbC>;

exports! {
    status::unimem_last_error: extern "C" fn() -> u64;

    gsas::getNumberBoards: extern "C" fn() -> u64;
    gsas::getBoardPid: extern "C" fn() -> u64;
    gsas::allocSharedPage: extern "C" fn(u16, u64) -> *mut c_void;
    gsas::unimem_alloc_shared_page: extern "C" fn(u16, u64, u64) -> *mut c_void;
    gsas::freeSharedPage: extern "C" fn(*mut c_void) -> u64;
    gsas::READ8: extern "C" fn(*mut c_char) -> c_char;
    gsas::READ32: extern "C" fn(*mut u32) -> u32;
    gsas::READ64: extern "C" fn(*mut u64) -> u64;
    gsas::READ4K: unsafe extern "C" fn(*mut c_void, *mut c_char) -> u64;
    gsas::WRITE8: extern "C" fn(*mut c_char, c_char);
    gsas::WRITE32: extern "C" fn(*mut u32, u32);
    gsas::WRITE64: extern "C" fn(*mut u64, u64);
    gsas::WRITE128: unsafe extern "C" fn(*mut u64, *mut u64);
    gsas::CAS64: extern "C" fn(*mut u64, u64, u64) -> u64;
    gsas::FAD64: extern "C" fn(*mut i64, i64) -> i64;
    gsas::SWAP64: extern "C" fn(*mut u64, u64) -> u64;
    gsas::remoteFork: unsafe extern "C" fn(*mut c_char, u64, u64) -> u64;
    gsas::readThreadArgument: extern "C" fn() -> u64;
    gsas::READ8_e: unsafe extern "C" fn(*mut c_char, *mut c_char) -> u64;
    gsas::READ32_e: unsafe extern "C" fn(*mut u32, *mut u32) -> u64;
    gsas::READ64_e: unsafe extern "C" fn(*mut u64, *mut u64) -> u64;
    gsas::READ4K_e: unsafe extern "C" fn(*mut c_void, *mut c_char) -> u64;
    gsas::WRITE8_e: extern "C" fn(*mut c_char, c_char) -> u64;
    gsas::WRITE32_e: extern "C" fn(*mut u32, u32) -> u64;
    gsas::WRITE64_e: extern "C" fn(*mut u64, u64) -> u64;
    gsas::WRITE128_e: unsafe extern "C" fn(*mut u64, *mut u64) -> u64;
    gsas::CAS64_e: unsafe extern "C" fn(*mut u64, u64, u64, *mut u64) -> u64;
    gsas::FAD64_e: unsafe extern "C" fn(*mut i64, i64, *mut i64) -> u64;
    gsas::SWAP64_e: unsafe extern "C" fn(*mut u64, u64, *mut u64) -> u64;

    dma::unim_dma_init: extern "C" fn(u16) -> i32;
    dma::unim_dma_cleanup: extern "C" fn();
    dma::unim_alloc_buf_l: extern "C" fn(u32) -> Buf;
    dma::unim_alloc_buf_r: extern "C" fn(u32, Node) -> Buf;
    dma::unim_attach_buf_r: extern "C" fn(u64, u64, Node) -> Buf;
    dma::unim_free_buf: extern "C" fn(Buf);
    dma::unim_get_buf: extern "C" fn(u64) -> Buf;
    dma::unim_get_buf_id: extern "C" fn(Buf) -> u64;
    dma::unim_buf_get_memory: extern "C" fn(Buf) -> *mut c_void;
    dma::unim_dma_submit_transfer: unsafe extern "C" fn(Buf, Buf, u64, u64, u64, Cb, *mut c_void) -> u64;
    dma::unim_dma_submit_transfer_from_mem: unsafe extern "C" fn(*mut c_void, Buf, u64, u64, u64, Cb, *mut c_void) -> u64;
    dma::unim_dma_submit_transfer_to_mem: unsafe extern "C" fn(Buf, *mut c_void, u64, u64, u64, Cb, *mut c_void) -> u64;
    dma::unim_dma_status: extern "C" fn(u64) -> DmaStatus;
    dma::unim_dma_wait: extern "C" fn(u64, u64) -> DmaStatus;
    dma::unim_dma_poll: extern "C" fn() -> usize;
    dma::unim_dma_get_node: extern "C" fn(u16) -> Node;

    active::unimem_active_open: unsafe extern "C" fn(*mut u32) -> u64;
    active::unimem_assoc_page: extern "C" fn(*mut c_void, u64, u32) -> u64;
    active::unimem_active_next: unsafe extern "C" fn(u32, *mut c_void, *mut c_void, *mut u64) -> u64;
    active::unimem_active_pending: unsafe extern "C" fn(u32, *mut u64) -> u64;
    active::unimem_active_close: extern "C" fn(u32) -> u64;
    active::unimem_active_notify: extern "C" fn(u32, u32) -> u64;
    active::unimem_active_wait: extern "C" fn(u32, u64) -> u64;
    active::unimem_active_flush: extern "C" fn(Node, u64, u64) -> u64;

    mailbox::unimem_mailbox_send: extern "C" fn(u64, u64) -> u64;
    mailbox::unimem_mailbox_send_within: extern "C" fn(u64, u64, u64) -> u64;
    mailbox::unimem_mailbox_register: extern "C" fn(u32, c_char, i32) -> u64;
    mailbox::unimem_mailbox_unregister: extern "C" fn(u32) -> u64;
    mailbox::unimem_mailbox_receive: unsafe extern "C" fn(u32, i32, *mut u64, *mut u64) -> u64;
    mailbox::unimem_mailbox_events: unsafe extern "C" fn(i32, *mut u64) -> u64;
    mailbox::unimem_signals: unsafe extern "C" fn(*mut u64) -> u64;

    sys::unimem_sys_exit: extern "C" fn(u64) -> !;
    sys::unimem_sys_log: unsafe extern "C" fn(*const c_char, usize) -> i64;
    sys::unimem_sys_time_us: extern "C" fn() -> u64;
    sys::unimem_sys_sleep_us: extern "C" fn(u64) -> i64;
    sys::unimem_sys_map: extern "C" fn(u64, u64) -> i64;
    sys::unimem_sys_args: unsafe extern "C" fn(*mut c_char, usize) -> i64;
    sys::unimem_sys_yield: extern "C" fn();
    sys::unimem_sys_node: extern "C" fn() -> u64;
    sys::unimem_sys_nodes: extern "C" fn() -> u64;

    shmem::shmem_init: extern "C" fn();
    shmem::shmem_finalize: extern "C" fn();
    shmem::shmem_my_pe: extern "C" fn() -> i32;
    shmem::shmem_n_pes: extern "C" fn() -> i32;
    shmem::shmem_global_exit: extern "C" fn(i32) -> !;
    shmem::shmem_pe_accessible: extern "C" fn(i32) -> i32;
    shmem::shmem_addr_accessible: extern "C" fn(*const c_void, i32) -> i32;
    shmem::shmem_ptr: extern "C" fn(*const c_void, i32) -> *mut c_void;
    shmem::shmem_info_get_version: unsafe extern "C" fn(*mut i32, *mut i32);
    shmem::shmem_info_get_name: unsafe extern "C" fn(*mut c_char);
    shmem::shmem_malloc: extern "C" fn(usize) -> *mut c_void;
    shmem::shmem_calloc: extern "C" fn(usize, usize) -> *mut c_void;
    shmem::shmem_align: extern "C" fn(usize, usize) -> *mut c_void;
    shmem::shmem_realloc: extern "C" fn(*mut c_void, usize) -> *mut c_void;
    shmem::shmem_free: extern "C" fn(*mut c_void);
    shmem::shmem_putmem: unsafe extern "C" fn(*mut c_void, *const c_void, usize, i32);
    shmem::shmem_getmem: unsafe extern "C" fn(*mut c_void, *const c_void, usize, i32);
    shmem::shmem_putmem_nbi: unsafe extern "C" fn(*mut c_void, *const c_void, usize, i32);
    shmem::shmem_getmem_nbi: unsafe extern "C" fn(*mut c_void, *const c_void, usize, i32);
    shmem::shmem_quiet: extern "C" fn();
    shmem::shmem_fence: extern "C" fn();
    shmem::shmem_barrier_all: extern "C" fn();
    shmem::shmem_sync_all: extern "C" fn();
    shmem::shmem_set_lock: extern "C" fn(*mut i64);
    shmem::shmem_clear_lock: extern "C" fn(*mut i64);
    shmem::shmem_test_lock: extern "C" fn(*mut i64) -> i32;
    shmem::shmem_signal_fetch: extern "C" fn(*const u64) -> u64;
    shmem::shmem_signal_wait_until: extern "C" fn(*mut u64, i32, u64) -> u64;
    shmem::unimem_shmem_atomic: extern "C" fn(i32, i32, *mut c_void, u64, u64, i32) -> u64;
    shmem::unimem_shmem_wait: unsafe extern "C" fn(i32, i32, i32, VolatileVoid, usize, *const i32, *mut usize, i32, *const c_void, u64) -> usize;
    shmem::unimem_shmem_put_signal: unsafe extern "C" fn(*mut c_void, *const c_void, usize, *mut u64, u64, i32, i32, i32);
    shmem::unimem_shmem_iput: unsafe extern "C" fn(*mut c_void, *const c_void, i64, i64, usize, usize, i32);
    shmem::unimem_shmem_iget: unsafe extern "C" fn(*mut c_void, *const c_void, i64, i64, usize, usize, i32);
    shmem::unimem_shmem_sync: extern "C" fn(i32, i32, i32) -> i32;
    shmem::unimem_shmem_barrier: extern "C" fn(i32, i32, i32) -> i32;
    shmem::unimem_shmem_broadcast: extern "C" fn(*mut c_void, *const c_void, usize, i32, i32, i32, i32, i32) -> i32;
    shmem::unimem_shmem_collect: extern "C" fn(*mut c_void, *const c_void, usize, i32, i32, i32) -> i32;
    shmem::unimem_shmem_fcollect: extern "C" fn(*mut c_void, *const c_void, usize, i32, i32, i32) -> i32;
    shmem::unimem_shmem_alltoall: extern "C" fn(*mut c_void, *const c_void, usize, i32, i32, i32) -> i32;
    shmem::unimem_shmem_alltoalls: extern "C" fn(*mut c_void, *const c_void, i64, i64, usize, usize, i32, i32, i32) -> i32;
    shmem::unimem_shmem_reduce: extern "C" fn(i32, i32, *mut c_void, *const c_void, usize, i32, i32, i32) -> i32;

    sockets::unimem_sock_socket: extern "C" fn(i32, i32, i32) -> i32;
    sockets::unimem_sock_bind: unsafe extern "C" fn(i32, *const c_void, u32) -> i32;
    sockets::unimem_sock_listen: extern "C" fn(i32, i32) -> i32;
    sockets::unimem_sock_accept: unsafe extern "C" fn(i32, *mut c_void, *mut u32) -> i32;
    sockets::unimem_sock_connect: unsafe extern "C" fn(i32, *const c_void, u32) -> i32;
    sockets::unimem_sock_read: unsafe extern "C" fn(i32, *mut c_void, usize) -> i64;
    sockets::unimem_sock_write: extern "C" fn(i32, *const c_void, usize) -> i64;
    sockets::unimem_sock_recv: unsafe extern "C" fn(i32, *mut c_void, usize, i32) -> i64;
    sockets::unimem_sock_send: extern "C" fn(i32, *const c_void, usize, i32) -> i64;
    sockets::unimem_sock_shutdown: extern "C" fn(i32, i32) -> i32;
    sockets::unimem_sock_close: extern "C" fn(i32) -> i32;
    sockets::unimem_sock_poll: unsafe extern "C" fn(*mut PollFd, u64, i32) -> i32;
    sockets::unimem_sock_fcntl: extern "C" fn(i32, i32, i64) -> i32;
    sockets::unimem_sock_getsockopt: unsafe extern "C" fn(i32, i32, i32, *mut c_void, *mut u32) -> i32;
    sockets::unimem_sock_setsockopt: unsafe extern "C" fn(i32, i32, i32, *const c_void, u32) -> i32;
    sockets::unimem_sock_getsockname: unsafe extern "C" fn(i32, *mut c_void, *mut u32) -> i32;
    sockets::unimem_sock_getpeername: unsafe extern "C" fn(i32, *mut c_void, *mut u32) -> i32;
    sockets::unimem_sock_event_fd: extern "C" fn() -> i32;
}

/// The functions the C runtime defines over the exports (`crt/posix.c`, `crt/runtime.c`): the
/// name, and how C declares a pointer `{}` to it (POSIX's prototype). `declared` is false for
/// those picolibc's headers declare (`unistd.h`, `fcntl.h`), true for those ours declare.
pub(crate) struct Runtime {
    pub name: &'static str,
    pub decl: &'static str,
    pub declared: bool,
}

/// Every function of the runtime that programs call in place of a system's.
pub(crate) const RUNTIME: &[Runtime] = &[
    Runtime { name: "socket", decl: "int (*{})(int, int, int)", declared: true },
    Runtime { name: "bind", decl: "int (*{})(int, const struct sockaddr *, socklen_t)", declared: true },
    Runtime { name: "listen", decl: "int (*{})(int, int)", declared: true },
    Runtime { name: "accept", decl: "int (*{})(int, struct sockaddr *, socklen_t *)", declared: true },
    Runtime { name: "connect", decl: "int (*{})(int, const struct sockaddr *, socklen_t)", declared: true },
    Runtime { name: "send", decl: "ssize_t (*{})(int, const void *, size_t, int)", declared: true },
    Runtime { name: "recv", decl: "ssize_t (*{})(int, void *, size_t, int)", declared: true },
    Runtime { name: "shutdown", decl: "int (*{})(int, int)", declared: true },
    Runtime { name: "getsockopt", decl: "int (*{})(int, int, int, void *, socklen_t *)", declared: true },
    Runtime { name: "setsockopt", decl: "int (*{})(int, int, int, const void *, socklen_t)", declared: true },
    Runtime { name: "getsockname", decl: "int (*{})(int, struct sockaddr *, socklen_t *)", declared: true },
    Runtime { name: "getpeername", decl: "int (*{})(int, struct sockaddr *, socklen_t *)", declared: true },
    Runtime { name: "poll", decl: "int (*{})(struct pollfd *, nfds_t, int)", declared: true },
    Runtime { name: "unimem_mailbox_event_fd", decl: "int (*{})(void)", declared: true },
    Runtime { name: "read", decl: "ssize_t (*{})(int, void *, size_t)", declared: false },
    Runtime { name: "write", decl: "ssize_t (*{})(int, const void *, size_t)", declared: false },
    Runtime { name: "close", decl: "int (*{})(int)", declared: false },
    Runtime { name: "fcntl", decl: "int (*{})(int, int, ...)", declared: false },
];

/// `SomeName(..)` as `SOME_NAME`: how the headers spell a Rust variant.
fn screaming(debug: &str) -> String {
    let name = debug.split('(').next().unwrap_or(debug);
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// Every constant of the headers (a C expression) and the value the Rust side gives it.
pub(crate) fn constants() -> Vec<(String, u64)> {
    let mut c: Vec<(String, u64)> = vec![
        ("UNIMEM_OK".into(), code::OK),
        ("UNIMEM_E_NULL".into(), code::NULL),
        ("UNIMEM_E_BAD_ARGUMENT".into(), code::BAD_ARGUMENT),
        ("UNIMEM_E_SERVICE".into(), lib::SERVICE),
        ("UNIMEM_E_LOCAL".into(), lib::LOCAL),
        ("UNIMEM_E_SYSCALL".into(), lib::SYSCALL),
        ("UNIMEM_E_UNKNOWN_RETURN".into(), lib::UNKNOWN_RETURN),
        ("UNIMEM_E_TIMEOUT".into(), lib::TIMEOUT),
        ("UNIMEM_E_ILLEGAL".into(), lib::ILLEGAL),
        ("UNIMEM_E_OVERWRITTEN".into(), lib::OVERWRITTEN),
        ("UNIMEM_E_NO_SUCH_NODE".into(), lib::NO_SUCH_NODE),
        ("UNIMEM_E_NO_ARGUMENT".into(), lib::NO_ARGUMENT),
        ("UNIMEM_E_BUSY".into(), lib::BUSY),
        ("UNIMEM_E_UNSUPPORTED".into(), lib::UNSUPPORTED),
        ("UNIMEM_E_NODE_UNREACHABLE".into(), lib::NODE_UNREACHABLE),
        ("UNIMEM_E_PROTOCOL".into(), lib::PROTOCOL),
        ("UNIMEM_E_TRANSFER".into(), lib::TRANSFER),
        ("UNIMEM_E_UNALIGNED".into(), Error::Local(ErrorCode::Unaligned).exit_status()),
        ("UNIMEM_E_UNMAPPED".into(), Error::Service(ErrorCode::Unmapped).exit_status()),
        ("UNIMEM_E_PERMISSION_DENIED".into(), Error::Service(ErrorCode::PermissionDenied).exit_status()),
        ("UNIMEM_E_WOULD_BLOCK".into(), Error::Syscall(SysError::WouldBlock).exit_status()),
        ("UNIMEM_E_INTERRUPTED".into(), Error::Syscall(SysError::Interrupted).exit_status()),
        ("UNIMEM_PAGE_SIZE".into(), PAGE_SIZE),
        ("_EMPTY_THREAD_ARGUMENT_".into(), EMPTY_THREAD_ARGUMENT),
        ("_MAX_FORK_PATH_FILENAME_".into(), MAX_SPAWN_NAME as u64),
        ("UNIMEM_MAX_ALLOC_PAGES".into(), MAX_ALLOC_PAGES),
        ("UNIMEM_SHARED".into(), Sharing::Shared.bits()),
        ("UNIMEM_READ_ONLY".into(), Sharing::ReadOnly.bits()),
        ("UNIMEM_PRIVATE".into(), Sharing::Private.bits()),
        ("UNIMEM_MAILBOX_FIRST_USER".into(), u64::from(MailboxOpcode::FIRST_USER)),
        ("UNIMEM_MAILBOX_LAST_USER".into(), u64::from(MailboxOpcode::FIRST_USER + MailboxOpcode::USER_CHANNELS - 1)),
        ("UNIMEM_MAILBOX_ANY".into(), ANY_OPCODE),
        ("UNIMEM_MAILBOX_PAYLOAD_BITS".into(), u64::from(NOTIFICATION_PAYLOAD_BITS)),
        ("UNIMEM_SIGNALS".into(), SIGNALS_MAX),
        ("UNIMEM_MAP_WRITABLE".into(), MAP_WRITABLE),
        ("UNIMEM_LOG_MAX".into(), LOG_MAX),
        ("UNIMEM_ARGS_MAX".into(), ARGS_MAX as u64),
        ("UNIMEM_ACTIVE_W".into(), proto::syscall::active::W),
        ("UNIMEM_ACTIVE_WL".into(), proto::syscall::active::WL),
        ("UNIMEM_ACTIVE_WLD".into(), proto::syscall::active::WLD),
        ("UNIMEM_ACTIVE_RL".into(), proto::syscall::active::RL),
        ("UNIMEM_ACTIVE_RLD".into(), proto::syscall::active::RLD),
        ("UNIMEM_ACTIVE_E".into(), proto::syscall::active::E),
        ("UNIMEM_ACTIVE_FLUSH".into(), proto::syscall::active::FLUSH),
        ("UNIMEM_ACTIVE_PUT".into(), unimem_user::active::actions::ACTIVE_PUT),
        ("UNIMEM_ACTIVE_PUT_LOG".into(), unimem_user::active::actions::PUT_LOG),
        ("UNIMEM_ACTIVE_GET_COUNT".into(), unimem_user::active::actions::GET_COUNT),
        ("UNIMEM_ACTIVE_GET_LOG".into(), unimem_user::active::actions::GET_LOG),
        ("UNIMEM_ACTIVE_ENTRY_BYTES".into(), crate::active::ENTRY_BYTES),
        ("UNIMEM_ACTIVE_MAX_DATA".into(), crate::active::MAX_DATA),
        ("UNIMEM_ACTIVE_IUIDS".into(), unimem_user::active::IUIDS as u64),
    ];
    let unim = [
        UnimError::NotInitialised,
        UnimError::NotThisNode(0),
        UnimError::NoSuchBuffer,
        UnimError::EmptyBuffer,
        UnimError::TooManyBuffers,
        UnimError::RemoteAllocation,
        UnimError::NotLocal,
        UnimError::OutsideBuffer,
        UnimError::BothRemote,
    ];
    c.extend(unim.map(|e| (format!("UNIMEM_E_{}", screaming(&format!("{e:?}"))), e.exit_status())));
    c.extend(ErrorCode::ALL.map(|e| (format!("UNIMEM_GSAS_{}", screaming(&format!("{e:?}"))), e.as_u64())));
    c.extend(CqeStatus::ALL.map(|s| (format!("UNIMEM_CQE_{}", screaming(&format!("{s:?}"))), s as u64)));
    for n in 1..=64 {
        if let Some(e) = SysError::from_return(-n) {
            c.push((format!("UNIMEM_SYS_{}", screaming(&format!("{e:?}"))), n as u64));
        }
    }
    for s in [DmaStatus::Pending, DmaStatus::Started, DmaStatus::Completed, DmaStatus::Failed, DmaStatus::Unknown] {
        c.push((format!("DMA_{}", screaming(&format!("{s:?}"))), s as u64));
    }
    c.extend(socket_constants());
    let message = Notification::new(MailboxOpcode::new(9).unwrap(), 0x1234).unwrap();
    c.extend([
        ("UNIMEM_MESSAGE(9, 0x1234)".into(), message.raw()),
        ("UNIMEM_MESSAGE(9, 1ull << 60 | 5)".into(), message.raw() & !0x1234 | 5),
        (format!("UNIMEM_MESSAGE_OPCODE({:#x}ull)", message.raw()), 9),
        (format!("UNIMEM_MESSAGE_PAYLOAD({:#x}ull)", message.raw()), 0x1234),
    ]);
    c
}

/// The socket layer's constants and layouts (`sys/socket.h`, `poll.h`, `unimem_socket.h`), and
/// the picolibc values it returns and takes (`errno.h`, `fcntl.h`).
fn socket_constants() -> Vec<(String, u64)> {
    let int = |v: i32| v as i64 as u64;
    let mut c: Vec<(String, u64)> = [
        ("AF_UNSPEC", AF_UNSPEC),
        ("AF_INET", AF_INET),
        ("AF_INET6", AF_INET6),
        ("AF_UNIMEM", AF_UNIMEM),
        ("PF_UNSPEC", AF_UNSPEC),
        ("PF_INET", AF_INET),
        ("PF_INET6", AF_INET6),
        ("PF_UNIMEM", AF_UNIMEM),
        ("SOCK_STREAM", SOCK_STREAM),
        ("SOCK_DGRAM", SOCK_DGRAM),
        ("SOCK_NONBLOCK", SOCK_NONBLOCK),
        ("SOCK_CLOEXEC", SOCK_CLOEXEC),
        ("SOMAXCONN", SOMAXCONN),
        ("SOL_SOCKET", SOL_SOCKET),
        ("SO_REUSEADDR", SO_REUSEADDR),
        ("SO_TYPE", SO_TYPE),
        ("SO_ERROR", SO_ERROR),
        ("SO_KEEPALIVE", SO_KEEPALIVE),
        ("SO_ACCEPTCONN", SO_ACCEPTCONN),
        ("MSG_DONTWAIT", MSG_DONTWAIT),
        ("MSG_WAITALL", MSG_WAITALL),
        ("MSG_NOSIGNAL", MSG_NOSIGNAL),
        ("SHUT_RD", SHUT_RD),
        ("SHUT_WR", SHUT_WR),
        ("SHUT_RDWR", SHUT_RDWR),
        ("F_GETFD", F_GETFD),
        ("F_SETFD", F_SETFD),
        ("F_GETFL", F_GETFL),
        ("F_SETFL", F_SETFL),
        ("O_RDWR", O_RDWR),
        ("O_NONBLOCK", O_NONBLOCK),
        ("EWOULDBLOCK", Errno::EWOULDBLOCK.0),
    ]
    .map(|(name, v)| (name.to_string(), int(v)))
    .to_vec();
    c.extend(Errno::ALL.iter().map(|(name, e)| (name.to_string(), int(e.0))));
    for (name, v) in [
        ("POLLIN", POLLIN),
        ("POLLPRI", POLLPRI),
        ("POLLOUT", POLLOUT),
        ("POLLERR", POLLERR),
        ("POLLHUP", POLLHUP),
        ("POLLNVAL", POLLNVAL),
        ("POLLRDHUP", POLLRDHUP),
    ] {
        c.push((name.to_string(), int(v.into())));
    }
    c.push(("UNIMEM_NODE_ANY".into(), u64::from(UNIMEM_NODE_ANY)));
    c.extend(shmem_constants());
    // The layouts the Rust side reads and writes.
    let sockaddr = SOCKADDR_LEN as u64;
    c.extend([
        ("sizeof(struct sockaddr_unimem)".into(), sockaddr),
        ("sizeof(struct sockaddr)".into(), sockaddr),
        ("offsetof(struct sockaddr_unimem, su_family)".into(), FAMILY_AT as u64),
        ("offsetof(struct sockaddr_unimem, su_port)".into(), PORT_AT as u64),
        ("offsetof(struct sockaddr_unimem, su_node)".into(), NODE_AT as u64),
        ("sizeof(struct sockaddr_storage)".into(), 128),
        ("sizeof(socklen_t)".into(), size_of::<u32>() as u64),
        ("sizeof(struct pollfd)".into(), size_of::<PollFd>() as u64),
        ("offsetof(struct pollfd, events)".into(), core::mem::offset_of!(PollFd, events) as u64),
        ("offsetof(struct pollfd, revents)".into(), core::mem::offset_of!(PollFd, revents) as u64),
        ("sizeof(nfds_t)".into(), size_of::<u64>() as u64),
    ]);
    c
}

/// The numeric constants of `shmem.h` (OpenSHMEM 1.5) and their values: the comparisons and
/// signal operations are the numbers the Rust core takes (`include/unimem_shmem.h`:
/// `unimem_shmem_wait`'s `cmp`, `unimem_shmem_put_signal`'s `sig_op`); the rest are this
/// implementation's choices (the pSync and pWrk sizes: any works, the library does not use
/// them). The deprecated `_SHMEM_*` spellings must equal the `SHMEM_*` ones.
fn shmem_constants() -> Vec<(String, u64)> {
    let mut c: Vec<(String, u64)> = [
        ("SHMEM_MAJOR_VERSION", 1),
        ("SHMEM_MINOR_VERSION", 5),
        ("SHMEM_MAX_NAME_LEN", 256),
        ("SHMEM_THREAD_SINGLE", 0),
        ("SHMEM_THREAD_FUNNELED", 1),
        ("SHMEM_THREAD_SERIALIZED", 2),
        ("SHMEM_THREAD_MULTIPLE", 3),
        ("SHMEM_CTX_SERIALIZED", 1),
        ("SHMEM_CTX_PRIVATE", 2),
        ("SHMEM_CTX_NOSTORE", 4),
        ("SHMEM_CMP_EQ", 1),
        ("SHMEM_CMP_NE", 2),
        ("SHMEM_CMP_GT", 3),
        ("SHMEM_CMP_GE", 4),
        ("SHMEM_CMP_LT", 5),
        ("SHMEM_CMP_LE", 6),
        ("SHMEM_SIGNAL_SET", 0),
        ("SHMEM_SIGNAL_ADD", 1),
        ("SHMEM_TEAM_NUM_CONTEXTS", 1),
        ("SHMEM_MALLOC_ATOMICS_REMOTE", 1),
        ("SHMEM_MALLOC_SIGNAL_REMOTE", 2),
        ("SHMEM_SYNC_VALUE", 0),
        ("SHMEM_SYNC_SIZE", 16),
        ("SHMEM_BCAST_SYNC_SIZE", 16),
        ("SHMEM_BARRIER_SYNC_SIZE", 16),
        ("SHMEM_REDUCE_SYNC_SIZE", 16),
        ("SHMEM_COLLECT_SYNC_SIZE", 16),
        ("SHMEM_ALLTOALL_SYNC_SIZE", 16),
        ("SHMEM_ALLTOALLS_SYNC_SIZE", 16),
        ("SHMEM_REDUCE_MIN_WRKDATA_SIZE", 16),
    ]
    .map(|(name, v)| (name.to_string(), v))
    .to_vec();
    let deprecated: Vec<(String, u64)> = c
        .iter()
        .filter(|(name, _)| {
            ["MAJOR_VERSION", "MINOR_VERSION", "MAX_NAME_LEN", "SYNC_VALUE", "REDUCE_MIN_WRKDATA_SIZE"]
                .iter()
                .any(|n| name.ends_with(n))
                || name.starts_with("SHMEM_CMP_")
                || ["BCAST", "BARRIER", "REDUCE", "COLLECT"].iter().any(|n| *name == format!("SHMEM_{n}_SYNC_SIZE"))
        })
        .map(|(name, v)| (format!("_{name}"), *v))
        .collect();
    c.extend(deprecated);
    c
}

/// The constants of `shmem.h` that are no numbers, and a C expression each must satisfy (in a
/// function: the handles are addresses).
const SHMEM_OTHER_CONSTANTS: &[(&str, &str)] = &[
    ("SHMEM_VENDOR_STRING", "sizeof(SHMEM_VENDOR_STRING) <= SHMEM_MAX_NAME_LEN"),
    ("_SHMEM_VENDOR_STRING", "sizeof(_SHMEM_VENDOR_STRING) == sizeof(SHMEM_VENDOR_STRING)"),
    ("SHMEM_CTX_DEFAULT", "SHMEM_CTX_DEFAULT != SHMEM_CTX_INVALID"),
    ("SHMEM_CTX_INVALID", "SHMEM_CTX_INVALID == (shmem_ctx_t)0"),
    ("SHMEM_TEAM_WORLD", "SHMEM_TEAM_WORLD != SHMEM_TEAM_INVALID && SHMEM_TEAM_WORLD != SHMEM_TEAM_SHARED"),
    ("SHMEM_TEAM_SHARED", "SHMEM_TEAM_SHARED != SHMEM_TEAM_INVALID"),
    ("SHMEM_TEAM_INVALID", "SHMEM_TEAM_INVALID == (shmem_team_t)0"),
];

/// The headers of the C runtime's OpenSHMEM layer: declared by X-macros (so read through the
/// preprocessor, not by [`declared_functions`]) and defined by `crt/shmem.c`, over the core
/// that `unimem_shmem.h` declares and the library exports.
const SHMEM_LAYER: &[&str] = &["shmem.h"];

/// The headers, in `a53-kernel/user/include/`.
fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../include")
}

/// Every header, `sys/` included: its name as `#include` gives it and its text, in name order.
fn headers() -> Vec<(String, String)> {
    let mut all = Vec::new();
    for sub in ["", "sys/"] {
        for path in std::fs::read_dir(include_dir().join(sub)).unwrap().map(|e| e.unwrap().path()) {
            if path.extension().is_some_and(|x| x == "h") {
                let name = format!("{sub}{}", path.file_name().unwrap().to_string_lossy());
                all.push((name, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    all.sort();
    all
}

/// The C runtime's sources (`a53-kernel/user/crt/*.c`): name and text.
fn runtime_sources() -> Vec<(String, String)> {
    let crt = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crt");
    let mut all: Vec<(String, String)> = std::fs::read_dir(crt)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    all.sort();
    all
}

/// Whether `source` defines function `name`: a line at the left margin that names it with its
/// parameters and is no declaration (it does not end in `;`).
fn defines(source: &str, name: &str) -> bool {
    source.lines().any(|line| {
        let starts_at_margin = line.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
        let named = [" ", "*"].iter().any(|before| line.contains(&format!("{before}{name}(")));
        starts_at_margin && named && !line.trim_end().ends_with(';')
    })
}

/// The text without comments, preprocessor lines and `extern "C"` braces.
fn declarations(header: &str) -> String {
    let mut text = String::new();
    let mut rest = header;
    while let Some(start) = rest.find("/*") {
        text.push_str(&rest[..start]);
        rest = rest[start..].split_once("*/").map_or("", |(_, after)| after);
    }
    text.push_str(rest);
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| l.replace("extern \"C\" {", ""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The functions a header declares: the name before the first `(` of each statement that is
/// not a type definition.
fn declared_functions(header: &str) -> Vec<String> {
    let text = declarations(header);
    let statements = text.split(';').collect::<Vec<_>>();
    // What follows the last `;` is no statement (the closing brace of `extern "C"`).
    statements[..statements.len() - 1]
        .iter()
        .map(|s| s.trim().trim_start_matches('}').trim())
        .filter(|s| !s.starts_with("typedef") && s.contains('('))
        .map(|s| {
            let before = s[..s.find('(').unwrap()].trim_end();
            let start = before.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
            before[start..].to_string()
        })
        .collect()
}

/// The object-like macros a header defines (include guards aside), and the enumerators.
fn declared_constants(header: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in header.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["#define", name, _, ..] if !name.contains('(') => names.push(name.to_string()),
            [name, "=", ..] if name.starts_with("DMA_") => names.push(name.to_string()),
            _ => {}
        }
    }
    names
}

#[test]
fn the_headers_declare_exactly_the_exported_functions() {
    let mut declared = BTreeSet::new();
    for (file, text) in headers().into_iter().filter(|(f, _)| !SHMEM_LAYER.contains(&f.as_str())) {
        for name in declared_functions(&text) {
            assert!(declared.insert(name.clone()), "{name} is declared twice ({file})");
        }
    }
    let exported: BTreeSet<String> = exports().iter().map(|e| e.name.to_string()).collect();
    assert_eq!(exports().len(), exported.len(), "an export is listed twice");
    let runtime = RUNTIME.iter().filter(|r| r.declared).map(|r| r.name.to_string());
    let provided: BTreeSet<String> = exported.iter().cloned().chain(runtime).collect();
    assert_eq!(declared, provided, "declared in include/*.h (left) against exported or the runtime's (right)");
}

/// `cargo xtask` checks that the archive defines what the library's headers declare, and leaves
/// out the POSIX layer's headers, whose functions the runtime defines: so no header may mix
/// the two.
#[test]
fn a_header_declares_the_librarys_functions_or_the_runtimes() {
    let exported: BTreeSet<String> = exports().iter().map(|e| e.name.to_string()).collect();
    for (file, text) in headers().into_iter().filter(|(f, _)| !SHMEM_LAYER.contains(&f.as_str())) {
        let functions = declared_functions(&text);
        let library = functions.iter().filter(|f| exported.contains(*f)).count();
        assert!(
            library == 0 || library == functions.len(),
            "{file} mixes the library's and the runtime's: {functions:?}"
        );
    }
}

#[test]
fn the_runtime_defines_every_function_listed_for_it() {
    let sources = runtime_sources();
    for r in RUNTIME {
        let defined: Vec<&str> =
            sources.iter().filter(|(_, text)| defines(text, r.name)).map(|(file, _)| file.as_str()).collect();
        assert_eq!(defined.len(), 1, "{} is defined in {defined:?} of crt/*.c, not once", r.name);
    }
    // Every call of a C program's POSIX sockets is there, as POSIX names it.
    let names: BTreeSet<&str> = RUNTIME.iter().map(|r| r.name).collect();
    for posix in [
        "socket",
        "bind",
        "listen",
        "accept",
        "connect",
        "read",
        "write",
        "send",
        "recv",
        "shutdown",
        "close",
        "poll",
        "fcntl",
        "getsockopt",
        "setsockopt",
        "getsockname",
        "getpeername",
    ] {
        assert!(names.contains(posix), "{posix}");
    }
    assert!(defines("int socket(int domain, int type, int protocol)\n{", "socket"));
    assert!(!defines("int socket(int domain, int type, int protocol);", "socket"), "a declaration");
    assert!(!defines("    return socket(1, 2, 3)", "socket"), "a call");
    assert!(!defines("int unimem_socket(int)", "socket"), "another name");
}

#[test]
fn every_no_mangle_function_is_listed_with_its_type() {
    let listed: BTreeSet<String> = exports().iter().map(|e| e.name.to_string()).collect();
    let mut found = BTreeSet::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![dir];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines().map(str::trim);
        while let Some(line) = lines.next() {
            if line != "#[unsafe(no_mangle)]" {
                continue;
            }
            // The item the attribute is on: the next line that declares a function.
            let item = lines.by_ref().find(|l| l.contains("fn ")).unwrap();
            let name = item.split_once("fn ").unwrap().1.split('(').next().unwrap();
            found.insert(name.to_string());
        }
    }
    assert_eq!(found, listed, "no_mangle functions in src (left) against `exports!` (right)");
}

#[test]
fn every_constant_of_the_headers_is_checked() {
    let mut checked: BTreeSet<String> = constants().into_iter().map(|(name, _)| name).collect();
    checked.extend(SHMEM_OTHER_CONSTANTS.iter().map(|(name, _)| name.to_string()));
    for (file, text) in headers() {
        let guard = file.to_uppercase().replace(['.', '/'], "_");
        for name in declared_constants(&text).into_iter().filter(|n| *n != guard) {
            assert!(checked.contains(&name), "{file} defines {name}, which `constants()` does not check");
        }
    }
}

/// The cross-compiler and picolibc, if this machine has them.
fn compiler() -> Option<(PathBuf, PathBuf)> {
    let gcc = PathBuf::from("aarch64-linux-gnu-gcc");
    let specs = PathBuf::from("/usr/lib/picolibc/aarch64-linux-gnu/picolibc.specs");
    let runs = std::process::Command::new(&gcc).arg("--version").output().is_ok_and(|o| o.status.success());
    (runs && specs.is_file()).then_some((gcc, specs))
}

/// Compiles `source` as C11 for the target with warnings as errors; the compiler's complaint.
fn compile(gcc: &Path, specs: &Path, name: &str, source: &str) -> Result<(), String> {
    let file = std::env::temp_dir().join(format!("unimem-c-{}-{name}.c", std::process::id()));
    std::fs::write(&file, source).unwrap();
    let out = std::process::Command::new(gcc)
        .arg(format!("--specs={}", specs.display()))
        .args(["-fsyntax-only", "-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror", "-I"])
        .arg(include_dir())
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
}

#[test]
fn the_headers_compile_and_agree_with_the_rust_side() {
    let Some((gcc, specs)) = compiler() else {
        std::eprintln!(
            "skipped: aarch64-linux-gnu-gcc or picolibc (/usr/lib/picolibc/aarch64-linux-gnu) is not \
             installed, so the headers are not compiled"
        );
        return;
    };
    let headers = headers();
    for (file, _) in &headers {
        let alone = format!("#include \"{file}\"\n");
        compile(&gcc, &specs, &file.replace(['.', '/'], "_"), &alone).unwrap_or_else(|e| panic!("{file} alone:\n{e}"));
    }
    // picolibc's, for the runtime functions it declares and the values the sockets share.
    let mut check = String::from("#include <errno.h>\n#include <fcntl.h>\n#include <stddef.h>\n#include <unistd.h>\n");
    for (file, _) in &headers {
        check += &format!("#include \"{file}\"\n");
    }
    for e in exports() {
        check += &format!("{} = {};\n", (e.decl)(&format!("check_{}", e.name)), e.name);
    }
    for r in RUNTIME {
        check += &format!("{} = {};\n", r.decl.replace("{}", &format!("check_{}", r.name)), r.name);
    }
    for (expr, value) in constants() {
        check += &format!("_Static_assert(({expr}) == {value:#x}ull, \"{expr} == {value:#x}\");\n");
    }
    check += &format!(
        "_Static_assert(sizeof(unim_dma_status_t) == {}, \"the status enum's size\");\n",
        core::mem::size_of::<DmaStatus>()
    );
    check += "int check_shmem_constants(void);\nint check_shmem_constants(void)\n{\n    return 1";
    for (_, holds) in SHMEM_OTHER_CONSTANTS {
        check += &format!("\n        && ({holds})");
    }
    check += ";\n}\n";
    compile(&gcc, &specs, "agreement", &check).unwrap_or_else(|e| panic!("the headers against Rust:\n{e}\n{check}"));
}

/// Every routine the OpenSHMEM layer's headers declare beyond the core's is defined by
/// `crt/shmem.c` (the preprocessor lists the declarations, `nm` the definitions of its object),
/// and nothing else is: the layer defines no core routine, and every core routine it calls is
/// declared by `unimem_shmem.h`, a library header (held to the exports above).
#[test]
fn the_shmem_layer_defines_what_shmem_h_declares() {
    let Some((gcc, specs)) = compiler() else {
        std::eprintln!("skipped: no aarch64-linux-gnu-gcc or picolibc");
        return;
    };
    let core: BTreeSet<String> = headers()
        .iter()
        .filter(|(f, _)| f == "unimem_shmem.h")
        .flat_map(|(_, text)| declared_functions(text))
        .collect();
    assert!(core.contains("shmem_init") && core.contains("unimem_shmem_reduce"), "unimem_shmem.h was read");
    let dir = std::env::temp_dir().join(format!("unimem-c-shmem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |cmd: &mut std::process::Command| {
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let mut declared = BTreeSet::new();
    for header in SHMEM_LAYER {
        let source = dir.join("include.c");
        std::fs::write(&source, format!("#include <{header}>\n")).unwrap();
        let expanded = run(std::process::Command::new(&gcc)
            .arg(format!("--specs={}", specs.display()))
            .args(["-E", "-std=c11", "-I"])
            .arg(include_dir())
            .arg(&source));
        // Only the lines of the header itself (by the line markers).
        let mut own = String::new();
        let mut keep = false;
        for line in expanded.lines() {
            if line.starts_with("# ") && line.contains(" \"") {
                keep = line.contains(&format!("/{header}\""));
            } else if keep {
                own += line;
                own += "\n";
            }
        }
        declared.extend(declared_functions(&own).into_iter().filter(|f| !core.contains(f)));
    }
    assert!(declared.contains("shmem_ctx_longdouble_iget") && declared.len() > 1500, "{}", declared.len());
    let crt = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crt/shmem.c");
    let object = dir.join("shmem.o");
    run(std::process::Command::new(&gcc)
        .arg(format!("--specs={}", specs.display()))
        .args(["-c", "-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror", "-I"])
        .arg(include_dir())
        .arg(&crt)
        .arg("-o")
        .arg(&object));
    let symbols = run(std::process::Command::new("aarch64-linux-gnu-nm").arg("--defined-only").arg("-g").arg(&object));
    let defined: BTreeSet<String> =
        symbols.lines().filter_map(|l| l.split_whitespace().nth(2)).map(ToString::to_string).collect();
    let undefined = run(std::process::Command::new("aarch64-linux-gnu-nm").arg("--undefined-only").arg(&object));
    let _ = std::fs::remove_dir_all(&dir);
    let missing: Vec<&String> = declared.difference(&defined).collect();
    assert!(missing.is_empty(), "declared by shmem.h, not defined by crt/shmem.c: {missing:?}");
    let objects = ["unimem_shmem_ctx_default", "unimem_shmem_team_world", "unimem_shmem_team_shared"];
    let extra: Vec<&String> =
        defined.iter().filter(|f| !declared.contains(*f) && !objects.contains(&f.as_str())).collect();
    assert!(extra.is_empty(), "defined by crt/shmem.c, declared by no header: {extra:?}");
    for name in undefined.lines().filter_map(|l| l.split_whitespace().nth(1)) {
        let known = core.contains(name) || name.starts_with("unimem_sys_") || declared.contains(name);
        let libc = ["printf", "puts", "putchar", "vsnprintf", "fflush", "malloc", "free", "memcpy", "memset", "stdout"]
            .iter()
            .any(|c| name == *c || name.starts_with("__"));
        assert!(known || libc, "crt/shmem.c calls {name}, which neither the core nor picolibc defines");
    }
}

/// The checks themselves: a wrong prototype or constant must fail to compile.
#[test]
fn a_wrong_prototype_or_constant_is_caught() {
    let Some((gcc, specs)) = compiler() else {
        std::eprintln!("skipped: no aarch64-linux-gnu-gcc or picolibc");
        return;
    };
    let decl = <extern "C" fn(*mut u32) -> u64 as CType>::decl("check_READ64");
    assert_eq!(decl, "uint64_t (*check_READ64)(uint32_t *)");
    let wrong = format!("#include \"unimem.h\"\n{decl} = READ64;\n");
    assert!(compile(&gcc, &specs, "wrong_prototype", &wrong).is_err());
    let wrong = "#include \"unimem_error.h\"\n_Static_assert(UNIMEM_E_NULL == 0x401ull, \"\");\n";
    assert!(compile(&gcc, &specs, "wrong_constant", wrong).is_err());
    let wrong = "#include <sys/socket.h>\nssize_t (*check_send)(int, void *, size_t, int) = send;\n";
    assert!(compile(&gcc, &specs, "wrong_runtime_prototype", wrong).is_err(), "send's buffer is const");
    let wrong = "#include <errno.h>\n_Static_assert(ECONNREFUSED == 111 + 1, \"\");\n";
    assert!(compile(&gcc, &specs, "wrong_errno", wrong).is_err(), "picolibc's errno is held too");
    let callback = <Option<UnimCompCbC> as CType>::decl("");
    assert_eq!(callback, "void (*)(void *)");
    let returning = <extern "C" fn(u16, u64) -> *mut c_void as CType>::decl("p");
    assert_eq!(returning, "void *(*p)(uint16_t, uint64_t)");
    assert_eq!(
        <extern "C" fn(u32, Node) -> Buf as CType>::decl("q"),
        "unim_dma_buffer_t *(*q)(uint32_t, const struct unim_dma_node *)"
    );
}

#[test]
fn the_parser_finds_declarations_and_skips_the_rest() {
    let header = "/* f(x); */\n#define G(x) x\ntypedef void (*cb)(void *);\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\
                  uint64_t one(void);\nvoid two(int a) __attribute__((noreturn));\nchar\n*three(char *s);\n\
                  #ifdef __cplusplus\n}\n#endif\n";
    assert_eq!(declared_functions(header), ["one", "two", "three"]);
    assert_eq!(declared_constants("#define A 1\n#define B(x) x\n    DMA_X = 0,\n"), ["A", "DMA_X"]);
    assert_eq!(screaming("NotThisNode(3)"), "NOT_THIS_NODE");
}

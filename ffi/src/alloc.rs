//! Allocator hooks: the host may route every heap allocation Kiln makes through its
//! own allocator, process-wide (Rust has one global allocator, as Box2D has
//! `b2SetAllocator` and meshoptimizer `meshopt_setAllocator`).
//!
//! The hooks must be installed before Kiln allocates anything, because memory taken
//! from the system allocator must go back to it. A three-state flag enforces that:
//! `UNTOUCHED -> SYSTEM` on the first allocation, `UNTOUCHED -> HOOKED` on install;
//! neither ever changes again.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};

use crate::abi::{
    ffi_call, non_null, Error, KilnStatus, KILN_ERROR_INVALID_STATE, KILN_ERROR_NULL_POINTER, KILN_ERROR_STRUCT_SIZE,
};

/// Allocates `size` bytes aligned to `alignment` (a power of two); returns NULL on
/// failure (Kiln then aborts, as Rust does when memory runs out).
pub type KilnAllocFn =
    Option<unsafe extern "C" fn(size: usize, alignment: usize, user_context: *mut c_void) -> *mut c_void>;

/// Frees a block from `KilnAllocFn`, with the size and alignment it was allocated with.
pub type KilnFreeFn =
    Option<unsafe extern "C" fn(ptr: *mut c_void, size: usize, alignment: usize, user_context: *mut c_void)>;

/// Host allocator hooks for `kiln_set_allocator`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KilnAllocator {
    /// Must be `sizeof(KilnAllocator)`.
    pub struct_size: u32,
    /// Allocation function (required).
    pub alloc: KilnAllocFn,
    /// Free function (required).
    pub free: KilnFreeFn,
    /// Passed to both functions. They may be called from any thread at once.
    pub user_context: *mut c_void,
}

const UNTOUCHED: u8 = 0;
const SYSTEM: u8 = 1;
const HOOKED: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(UNTOUCHED);
static ALLOC: AtomicUsize = AtomicUsize::new(0);
static FREE: AtomicUsize = AtomicUsize::new(0);
static USER: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Kiln's global allocator: the system allocator, or the host's hooks.
pub struct KilnGlobalAlloc;

fn hooked() -> bool {
    match STATE.load(Ordering::Acquire) {
        HOOKED => true,
        SYSTEM => false,
        _ => match STATE.compare_exchange(UNTOUCHED, SYSTEM, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => false,
            Err(state) => state == HOOKED,
        },
    }
}

// SAFETY: forwards to the system allocator or to host hooks that promise the same
// contract; a block is always freed by the allocator that made it (see module docs).
unsafe impl GlobalAlloc for KilnGlobalAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if hooked() {
            // SAFETY: HOOKED is set only after ALLOC holds a valid KilnAllocFn.
            let alloc: KilnAllocFn = unsafe { std::mem::transmute(ALLOC.load(Ordering::Acquire)) };
            match alloc {
                // SAFETY: the host's function, called per its documented contract.
                Some(alloc) => unsafe { alloc(layout.size(), layout.align(), USER.load(Ordering::Acquire)).cast() },
                None => std::ptr::null_mut(),
            }
        } else {
            // SAFETY: same contract as ours.
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if STATE.load(Ordering::Acquire) == HOOKED {
            // SAFETY: as in `alloc`.
            let free: KilnFreeFn = unsafe { std::mem::transmute(FREE.load(Ordering::Acquire)) };
            if let Some(free) = free {
                // SAFETY: `ptr` came from the hooks (state never leaves HOOKED).
                unsafe { free(ptr.cast(), layout.size(), layout.align(), USER.load(Ordering::Acquire)) }
            }
        } else {
            // SAFETY: `ptr` came from System (state never leaves SYSTEM).
            unsafe { System.dealloc(ptr, layout) }
        }
    }
}

#[global_allocator]
static GLOBAL: KilnGlobalAlloc = KilnGlobalAlloc;

/// Routes all of Kiln's heap allocations through `allocator`, process-wide. Call it
/// once, before any other Kiln function that allocates (creating a runtime does);
/// afterwards it returns `KILN_ERROR_INVALID_STATE` and changes nothing.
///
/// Pointers: `allocator` is NULL or points to a readable `KilnAllocator`; its functions
/// stay callable, from any thread, until the process exits.
///
/// Threads: before any other Kiln call, from one thread.
#[no_mangle]
pub unsafe extern "C" fn kiln_set_allocator(allocator: *const KilnAllocator) -> KilnStatus {
    ffi_call("kiln_set_allocator", || {
        let allocator = non_null(allocator, "allocator")?;
        // SAFETY: non-null and readable per the contract; read the size field first.
        let size = unsafe { std::ptr::read_unaligned(allocator.cast::<u32>()) };
        if size as usize != std::mem::size_of::<KilnAllocator>() {
            return Err(Error::new(
                KILN_ERROR_STRUCT_SIZE,
                format!("allocator->struct_size is {size}, expected {}", std::mem::size_of::<KilnAllocator>()),
            ));
        }
        // SAFETY: sizes agree.
        let allocator = unsafe { *allocator };
        let (Some(alloc), Some(free)) = (allocator.alloc, allocator.free) else {
            return Err(Error::new(KILN_ERROR_NULL_POINTER, "allocator->alloc and allocator->free are both required"));
        };
        if STATE.load(Ordering::Acquire) != UNTOUCHED {
            return Err(Error::new(KILN_ERROR_INVALID_STATE, already_set_message()));
        }
        ALLOC.store(alloc as usize, Ordering::Release);
        FREE.store(free as usize, Ordering::Release);
        USER.store(allocator.user_context, Ordering::Release);
        STATE
            .compare_exchange(UNTOUCHED, HOOKED, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(|_| Error::new(KILN_ERROR_INVALID_STATE, already_set_message()))
    })
}

fn already_set_message() -> &'static str {
    "Kiln has already allocated memory (or the allocator was already set); call kiln_set_allocator first"
}

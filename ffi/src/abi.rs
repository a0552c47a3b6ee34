//! Status codes, versions, the ABI guard and the per-thread last error.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::mem::size_of;

/// Result of every fallible Kiln function. `KILN_OK` (0) is success; any other value
/// is one of the `KILN_ERROR_*` codes, and `kiln_last_error_message()` says why.
pub type KilnStatus = u32;

/// Success.
pub const KILN_OK: KilnStatus = 0;
/// A required pointer argument was NULL.
pub const KILN_ERROR_NULL_POINTER: KilnStatus = 1;
/// A number was out of range, NaN or infinite, or a string was empty or not UTF-8.
pub const KILN_ERROR_INVALID_ARGUMENT: KilnStatus = 2;
/// A handle was null, stale (its object was destroyed) or never issued.
pub const KILN_ERROR_INVALID_HANDLE: KilnStatus = 3;
/// A definition struct's `struct_size` does not match this library.
pub const KILN_ERROR_STRUCT_SIZE: KilnStatus = 4;
/// The header the program was compiled with does not match the linked library.
pub const KILN_ERROR_ABI_MISMATCH: KilnStatus = 5;
/// The call is not allowed now (e.g. re-entrant use of a runtime from its own pass).
pub const KILN_ERROR_INVALID_STATE: KilnStatus = 6;
/// The frame graph rejected a pass: duplicate name, unknown pass, cycle, or a pass
/// accessed a resource it did not declare.
pub const KILN_ERROR_GRAPH: KilnStatus = 7;
/// An output array was too small; the required count was written to the count
/// out-parameter and nothing else was written.
pub const KILN_ERROR_BUFFER_TOO_SMALL: KilnStatus = 8;
/// A pass callback returned a status other than `KILN_OK`; the frame stopped.
pub const KILN_ERROR_PASS_FAILED: KilnStatus = 9;
/// No usable Vulkan device (GPU features only; CPU features keep working).
pub const KILN_ERROR_NO_DEVICE: KilnStatus = 10;
/// A bug inside Kiln (a caught Rust panic); the message has the details.
pub const KILN_ERROR_INTERNAL: KilnStatus = 11;
/// Host or device memory ran out (GPU buffers); the object is unchanged and usable.
pub const KILN_ERROR_OUT_OF_MEMORY: KilnStatus = 12;
/// The Vulkan device was lost (driver reset, hang, removal). The object that owns it
/// refuses further GPU work; destroy it and create a new one.
pub const KILN_ERROR_DEVICE_LOST: KilnStatus = 13;

/// Version of the binary interface: structs, function signatures, constants. Bumped
/// on every incompatible change; the shared library's SONAME is `libkiln.so.<ABI>`.
pub const KILN_ABI_VERSION: u32 = 10;
/// Library version, major part.
pub const KILN_VERSION_MAJOR: u32 = 0;
/// Library version, minor part.
pub const KILN_VERSION_MINOR: u32 = 1;
/// Library version, patch part.
pub const KILN_VERSION_PATCH: u32 = 0;

/// An error on its way to C: status plus message.
#[derive(Debug)]
pub(crate) struct Error {
    pub(crate) status: KilnStatus,
    pub(crate) message: String,
}

impl Error {
    pub(crate) fn new(status: KilnStatus, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }
}

impl From<kiln_core::frame::GraphError> for Error {
    fn from(error: kiln_core::frame::GraphError) -> Error {
        use kiln_core::frame::GraphError as G;
        let status = match &error {
            G::PassFailed { .. } => KILN_ERROR_PASS_FAILED,
            G::InvalidArgument(_) => KILN_ERROR_INVALID_ARGUMENT,
            _ => KILN_ERROR_GRAPH,
        };
        Error::new(status, error.to_string())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

pub(crate) fn set_last_error(message: &str) {
    let message = CString::new(message.replace('\0', "\\0")).expect("NULs replaced");
    LAST_ERROR.with(|slot| *slot.borrow_mut() = message);
}

/// Runs an entry point: catches panics (never unwinding into C), records the error
/// message, returns the status.
pub(crate) fn ffi_call(function: &str, body: impl FnOnce() -> Result<(), Error>) -> KilnStatus {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(Ok(())) => KILN_OK,
        Ok(Err(error)) => {
            set_last_error(&format!("{function}: {}", error.message));
            error.status
        }
        Err(payload) => {
            set_last_error(&format!("{function}: internal error: {}", panic_message(payload.as_ref())));
            KILN_ERROR_INTERNAL
        }
    }
}

/// The text of a caught panic.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// Checks a required pointer argument.
pub(crate) fn non_null<T>(ptr: *const T, name: &str) -> Result<*const T, Error> {
    if ptr.is_null() {
        Err(Error::new(KILN_ERROR_NULL_POINTER, format!("`{name}` is NULL")))
    } else {
        Ok(ptr)
    }
}

/// Writes `value` through a checked out-pointer.
pub(crate) fn write_out<T>(ptr: *mut T, name: &str, value: T) -> Result<(), Error> {
    let ptr = non_null(ptr, name)?;
    // SAFETY: non-null and writable per the caller's contract.
    unsafe { ptr.cast_mut().write(value) };
    Ok(())
}

/// Reads `count` entries from `ptr` and checks each with `check(entry, "name[i]")`:
/// the first bad entry fails the whole read, naming its index.
///
/// # Safety
/// `ptr` is NULL or readable for `count` entries.
pub(crate) unsafe fn read_checked<T, U>(
    ptr: *const T,
    count: u32,
    name: &str,
    check: impl Fn(&T, &str) -> Result<U, Error>,
) -> Result<Vec<U>, Error> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let ptr = non_null(ptr, name)?;
    // SAFETY: readable for `count` entries per the contract.
    let input = unsafe { std::slice::from_raw_parts(ptr, count as usize) };
    input.iter().enumerate().map(|(i, entry)| check(entry, &format!("{name}[{i}]"))).collect()
}

/// A caller-allocated output array of `capacity` entries that a query fills in order:
/// entries past the capacity are counted but not written, so a call with capacity 0
/// sizes the array (the `*_count` convention of the list functions).
pub(crate) struct CountedOut<T> {
    ptr: *mut T,
    capacity: u32,
    count: u32,
}

impl<T> CountedOut<T> {
    /// Checks `ptr` (NULL is allowed only with capacity 0).
    ///
    /// # Safety
    /// `ptr` is NULL or writable for `capacity` entries for the writer's lifetime.
    pub(crate) unsafe fn new(ptr: *mut T, capacity: u32, name: &str) -> Result<CountedOut<T>, Error> {
        if capacity > 0 {
            non_null(ptr, name)?;
        }
        Ok(CountedOut { ptr, capacity, count: 0 })
    }

    /// Writes `entry` if it fits, and counts it either way.
    pub(crate) fn push(&mut self, entry: T) {
        if self.count < self.capacity {
            // SAFETY: `count < capacity` entries are writable (the contract of `new`).
            unsafe { self.ptr.add(self.count as usize).write(entry) };
        }
        self.count = self.count.saturating_add(1);
    }

    /// Entries pushed, written or not.
    pub(crate) fn count(&self) -> u32 {
        self.count
    }
}

/// The library version as `(major << 16) | (minor << 8) | patch`.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_version() -> u32 {
    (KILN_VERSION_MAJOR << 16) | (KILN_VERSION_MINOR << 8) | KILN_VERSION_PATCH
}

/// The library version as a static string, e.g. "0.1.0".
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_version_string() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The `KILN_ABI_VERSION` the library was built with.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_abi_version() -> u32 {
    KILN_ABI_VERSION
}

/// The message of the last failed Kiln call on this thread ("" if none). The string
/// stays valid until the next failing call on the same thread.
///
/// Threads: any thread; each thread has its own message.
#[no_mangle]
pub extern "C" fn kiln_last_error_message() -> *const c_char {
    LAST_ERROR.with(|slot| slot.borrow().as_ptr())
}

/// The name of a status code, e.g. "KILN_ERROR_NULL_POINTER"; "KILN_UNKNOWN_STATUS"
/// for values that are not status codes. Static string.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_status_name(status: KilnStatus) -> *const c_char {
    let name: &'static str = match status {
        KILN_OK => "KILN_OK\0",
        KILN_ERROR_NULL_POINTER => "KILN_ERROR_NULL_POINTER\0",
        KILN_ERROR_INVALID_ARGUMENT => "KILN_ERROR_INVALID_ARGUMENT\0",
        KILN_ERROR_INVALID_HANDLE => "KILN_ERROR_INVALID_HANDLE\0",
        KILN_ERROR_STRUCT_SIZE => "KILN_ERROR_STRUCT_SIZE\0",
        KILN_ERROR_ABI_MISMATCH => "KILN_ERROR_ABI_MISMATCH\0",
        KILN_ERROR_INVALID_STATE => "KILN_ERROR_INVALID_STATE\0",
        KILN_ERROR_GRAPH => "KILN_ERROR_GRAPH\0",
        KILN_ERROR_BUFFER_TOO_SMALL => "KILN_ERROR_BUFFER_TOO_SMALL\0",
        KILN_ERROR_PASS_FAILED => "KILN_ERROR_PASS_FAILED\0",
        KILN_ERROR_NO_DEVICE => "KILN_ERROR_NO_DEVICE\0",
        KILN_ERROR_INTERNAL => "KILN_ERROR_INTERNAL\0",
        KILN_ERROR_OUT_OF_MEMORY => "KILN_ERROR_OUT_OF_MEMORY\0",
        KILN_ERROR_DEVICE_LOST => "KILN_ERROR_DEVICE_LOST\0",
        _ => "KILN_UNKNOWN_STATUS\0",
    };
    name.as_ptr().cast()
}

/// Reads a definition struct after checking its size field.
///
/// # Safety
/// `ptr` is non-null and points to at least 4 readable bytes, and to a full `T` if
/// its first `u32` equals `size_of::<T>()`.
pub(crate) unsafe fn read_def<T: Copy>(ptr: *const T, name: &str) -> Result<T, Error> {
    // SAFETY: at least the size field is readable (caller contract).
    let size = unsafe { std::ptr::read_unaligned(ptr.cast::<u32>()) };
    if size as usize != size_of::<T>() {
        return Err(Error::new(
            KILN_ERROR_STRUCT_SIZE,
            format!(
                "{name}->struct_size is {size}, but this library's {} is {} bytes (initialise it with its kiln_default_* function)",
                std::any::type_name::<T>().rsplit("::").next().unwrap_or("struct"),
                size_of::<T>()
            ),
        ));
    }
    // SAFETY: the size matches, so the whole struct is there.
    Ok(unsafe { std::ptr::read_unaligned(ptr) })
}

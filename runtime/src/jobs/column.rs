//! [`Column`]: the one primitive by which parallel jobs write disjoint parts of a
//! slice (the pool's per-chunk results and per-job buffers, the physics step's rows
//! and constraints).

use std::ops::Range;

/// Mutable access to disjoint elements of one slice from parallel jobs: each job
/// writes or borrows its own elements (a chunk of rows, one slot per chunk, one
/// output buffer per job). Every access is bounds-checked; the caller promises that
/// no two jobs touch one element at once.
pub(crate) struct Column<T>(*mut T, usize);

// SAFETY: jobs touch disjoint elements (see `rows` and `get`), and T: Send moves
// across threads.
unsafe impl<T: Send> Sync for Column<T> {}

impl<T> Column<T> {
    pub fn new(v: &mut [T]) -> Column<T> {
        Column(v.as_mut_ptr(), v.len())
    }

    pub fn len(&self) -> usize {
        self.1
    }

    /// # Safety
    /// No other live borrow overlaps `range` (each job gets its own chunk).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn rows(&self, range: Range<usize>) -> &mut [T] {
        assert!(range.start <= range.end && range.end <= self.1, "row range out of bounds");
        // SAFETY: in bounds (checked), disjoint per the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(range.start), range.len()) }
    }

    /// Element `i`'s address (for a prefetch: no access, so no contract).
    pub fn ptr(&self, i: usize) -> *const T {
        assert!(i < self.1, "row out of bounds");
        self.0.wrapping_add(i)
    }

    /// # Safety
    /// No other thread reads or writes element `i` meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get(&self, i: usize) -> &mut T {
        assert!(i < self.1, "row out of bounds");
        // SAFETY: in bounds (checked), exclusive per the caller's contract.
        unsafe { &mut *self.0.add(i) }
    }
}

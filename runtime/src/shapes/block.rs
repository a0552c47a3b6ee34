//! One allocation for a shape's arrays: a [`Block`] of 4-byte words and, per array,
//! a [`Part`] that says where it lies. A convex hull read by a separating-axis test
//! had twenty arrays of its own, each behind a header in the hull that had to come
//! from memory before the array could be asked for; in a pile of hulls that are all
//! different, those waits were a third of the narrowphase. In one block, one
//! prefetch of a contiguous range asks for all of it.

use std::marker::PhantomData;

use glam::Vec3;

use super::polytope::Plane;

/// Plain values: at most 4-byte aligned, no padding bytes, every bit pattern valid.
///
/// # Safety
/// Implementors must be all of that, so that any words of a block read as them.
pub(crate) unsafe trait Plain: Copy {}

// SAFETY: two bytes, any bits.
unsafe impl Plain for u16 {}
// SAFETY: four bytes, any bits.
unsafe impl Plain for f32 {}
// SAFETY: three `f32`s (glam's `Vec3` is `repr(C)`, 4-byte aligned).
unsafe impl Plain for Vec3 {}
// SAFETY: `repr(C)`: a `Vec3` and an `f32`, 16 bytes, no padding.
unsafe impl Plain for Plane {}

/// The words that hold a shape's arrays.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Block(Vec<u32>);

/// Where `len` values of `T` lie in a [`Block`]: from word `at`.
#[derive(Debug)]
pub(crate) struct Part<T> {
    at: u32,
    len: u32,
    values: PhantomData<T>,
}

impl<T> Clone for Part<T> {
    fn clone(&self) -> Part<T> {
        *self
    }
}

impl<T> Copy for Part<T> {}

impl<T> Default for Part<T> {
    fn default() -> Part<T> {
        Part { at: 0, len: 0, values: PhantomData }
    }
}

impl<T> PartialEq for Part<T> {
    fn eq(&self, o: &Part<T>) -> bool {
        (self.at, self.len) == (o.at, o.len)
    }
}

impl<T> Part<T> {
    pub fn len(self) -> usize {
        self.len as usize
    }
}

impl Block {
    /// A block with room for `words` words.
    pub fn with_capacity(words: usize) -> Block {
        Block(Vec::with_capacity(words))
    }

    /// Appends `values` (from the next whole word) and says where they lie.
    pub fn push<T: Plain>(&mut self, values: &[T]) -> Part<T> {
        const { assert!(std::mem::align_of::<T>() <= 4) };
        let at = self.0.len();
        let bytes = std::mem::size_of_val(values);
        self.0.resize(at + bytes.div_ceil(4), 0);
        // SAFETY: the words from `at` were just made, `bytes` long at least, and
        // `values` does not overlap them.
        unsafe {
            std::ptr::copy_nonoverlapping(values.as_ptr().cast::<u8>(), self.0.as_mut_ptr().add(at).cast::<u8>(), bytes)
        };
        Part { at: at as u32, len: values.len() as u32, values: PhantomData }
    }

    /// The values of `part` (made by this block's [`Block::push`]).
    #[inline(always)]
    pub fn get<T: Plain>(&self, part: Part<T>) -> &[T] {
        let words = (part.len as usize * std::mem::size_of::<T>()).div_ceil(4);
        let w = &self.0[part.at as usize..part.at as usize + words];
        // SAFETY: the words hold `len` values of `T` (at most 4-byte aligned, any
        // bits valid: `Plain`), and the slice borrows them.
        unsafe { std::slice::from_raw_parts(w.as_ptr().cast::<T>(), part.len as usize) }
    }

    /// The words before `part`'s, for a prefetch of what was pushed before it.
    pub fn words_before<T>(&self, part: Part<T>) -> &[u32] {
        &self.0[..part.at as usize]
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.0.capacity() * 4
    }
}

impl Part<f32> {
    /// `count` parts of `f32` pushed one right after another, each as long as
    /// `first`, as one part.
    pub fn spanning(first: Part<f32>, count: usize) -> Part<f32> {
        Part { at: first.at, len: first.len * count as u32, values: PhantomData }
    }
}

//! The byte encoding of world snapshots: every value little-endian and field by
//! field, in declaration order, with no padding and no pointers, so the same state
//! gives the same bytes on every CPU and build of one format version.
//!
//! ```text
//!  u8 u16 u32 u64 i32 f32   little-endian (f32 as its bits; usize as u64)
//!  bool                     one byte, 0 or 1 (anything else is corrupt)
//!  Vec3 Quat Mat3 IVec3     their f32/i32 components, x y z (w), columns in order
//!  [T; N], (A, B, ..)       the elements in order
//!  Option<T>                a byte 0 (none) or 1 followed by T
//!  Vec<T>                   a u32 count, then the elements
//!  enums                    a u8 variant, then the variant's fields
//!  structs                  their fields in declaration order ([`fields!`])
//! ```
//!
//! Decoding reads *into* an existing value ([`Codec::take`]), so a vector keeps its
//! capacity from one restore to the next and a steady rollback loop allocates nothing
//! (Jolt's `StateRecorder` reads into live bodies the same way). Every read is
//! bounds-checked and every tag range-checked: a short or malformed input is
//! [`Corrupt`], never a panic. Whether the decoded state is coherent (indices in
//! range) is the caller's check; the snapshot's checksum ([`checksum`]) catches
//! damage in transit.

use glam::{IVec3, Mat3, Quat, Vec3};
use std::ops::Range;

/// The input ended early or held a value no encoder writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Corrupt;

/// Writes into a caller's buffer while it fits and counts every byte, so one pass
/// with an empty buffer is the size query. The buffer is held as a pointer and a
/// capacity (a C caller's buffer is no Rust slice), and only bytes written are
/// touched.
pub(crate) struct Writer<'a> {
    buf: *mut u8,
    capacity: usize,
    len: usize,
    /// The attached terrain's current mask stamp (see `TerrainContacts`'s encoding).
    pub mask_stamp: u64,
    /// The attached terrain's revision (see the narrowphase's gathered triangles).
    pub revision: u64,
    _buf: std::marker::PhantomData<&'a mut [u8]>,
}

impl<'a> Writer<'a> {
    pub fn new(buf: &'a mut [u8], mask_stamp: u64) -> Writer<'a> {
        // SAFETY: a slice is writable for its length.
        unsafe { Writer::from_raw(buf.as_mut_ptr(), buf.len(), mask_stamp) }
    }

    /// A writer into `capacity` bytes at `buf`.
    ///
    /// # Safety
    /// `buf` is writable for `capacity` bytes (or `capacity` is 0) for `'a`, and
    /// nothing else reads or writes them meanwhile.
    pub unsafe fn from_raw(buf: *mut u8, capacity: usize, mask_stamp: u64) -> Writer<'a> {
        Writer { buf, capacity, len: 0, mask_stamp, revision: 0, _buf: std::marker::PhantomData }
    }

    /// Bytes written (or that would have been).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether everything written so far fit.
    pub fn fits(&self) -> bool {
        self.len <= self.capacity
    }

    pub fn bytes(&mut self, b: &[u8]) {
        let end = self.len + b.len();
        if end <= self.capacity {
            // SAFETY: in bounds of the buffer (`from_raw`'s contract); `b` is not in it
            // (nothing else holds the buffer).
            unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.buf.add(self.len), b.len()) };
        }
        self.len = end;
    }

    /// The bytes written at `range`, when they fit.
    pub fn written(&self, range: Range<usize>) -> Option<&[u8]> {
        (range.start <= range.end && range.end <= self.len.min(self.capacity))
            // SAFETY: bytes of the buffer this writer wrote.
            .then(|| unsafe { std::slice::from_raw_parts(self.buf.add(range.start), range.end - range.start) })
    }

    /// Overwrites 8 bytes at `at` (a placeholder written earlier), when they fit.
    pub fn patch_u64(&mut self, at: usize, value: u64) {
        self.patch(at, &value.to_le_bytes());
    }

    /// Overwrites 4 bytes at `at`, when they fit.
    pub fn patch_u32(&mut self, at: usize, value: u32) {
        self.patch(at, &value.to_le_bytes());
    }

    fn patch(&mut self, at: usize, b: &[u8]) {
        if at + b.len() <= self.len.min(self.capacity) {
            // SAFETY: bytes this writer wrote, in bounds.
            unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.buf.add(at), b.len()) };
        }
    }
}

/// Shared data a snapshot names by fingerprint (hulls, compounds), type-erased so
/// that this module, below the shapes, need not know them.
pub(crate) type Shared = std::sync::Arc<dyn std::any::Any + Send + Sync>;

/// Hull and compound tables a body's shapes are read against, by fingerprint,
/// sorted (see `World::restore_bytes`).
#[derive(Clone, Copy, Default)]
pub(crate) struct ShapeTables<'a> {
    pub hulls: &'a [(u64, Shared)],
    pub compounds: &'a [(u64, Shared)],
}

/// Reads from a snapshot's bytes.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
    pub mask_stamp: u64,
    /// What a value written as the writer's terrain revision reads back as.
    pub revision: u64,
    pub tables: ShapeTables<'a>,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], mask_stamp: u64, tables: ShapeTables<'a>) -> Reader<'a> {
        Reader { buf, at: 0, mask_stamp, revision: 0, tables }
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        let end = self.at.checked_add(n).ok_or(Corrupt)?;
        let b = self.buf.get(self.at..end).ok_or(Corrupt)?;
        self.at = end;
        Ok(b)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Corrupt> {
        Ok(self.bytes(N)?.try_into().expect("N bytes"))
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.at
    }

    /// A count of items that each take at least one byte: more than the bytes left
    /// is corrupt (so a damaged count never asks for a huge allocation).
    pub fn count(&mut self) -> Result<usize, Corrupt> {
        let n = u32::take_new(self)? as usize;
        if n > self.remaining() {
            return Err(Corrupt);
        }
        Ok(n)
    }

    pub fn tag(&mut self, variants: u8) -> Result<u8, Corrupt> {
        let t = u8::take_new(self)?;
        if t >= variants {
            return Err(Corrupt);
        }
        Ok(t)
    }
}

/// A value with a snapshot encoding.
pub(crate) trait Codec {
    fn put(&self, w: &mut Writer);
    /// Reads the value into `self`, reusing its allocations.
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt>;
}

/// Reads a fresh value of a type with a default.
pub(crate) trait TakeNew: Codec + Default {
    fn take_new(r: &mut Reader) -> Result<Self, Corrupt> {
        let mut v = Self::default();
        v.take(r)?;
        Ok(v)
    }
}

impl<T: Codec + Default> TakeNew for T {}

macro_rules! numbers {
    ($($t:ty),*) => {$(
        impl Codec for $t {
            #[inline]
            fn put(&self, w: &mut Writer) {
                w.bytes(&self.to_le_bytes());
            }
            #[inline]
            fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
                *self = <$t>::from_le_bytes(r.array()?);
                Ok(())
            }
        }
    )*};
}

numbers!(u8, u16, u32, u64, i32);

impl Codec for f32 {
    #[inline]
    fn put(&self, w: &mut Writer) {
        self.to_bits().put(w);
    }
    #[inline]
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = f32::from_bits(u32::take_new(r)?);
        Ok(())
    }
}

impl Codec for usize {
    fn put(&self, w: &mut Writer) {
        (*self as u64).put(w);
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = usize::try_from(u64::take_new(r)?).map_err(|_| Corrupt)?;
        Ok(())
    }
}

impl Codec for bool {
    #[inline]
    fn put(&self, w: &mut Writer) {
        (*self as u8).put(w);
    }
    #[inline]
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = r.tag(2)? == 1;
        Ok(())
    }
}

impl<T: Codec, const N: usize> Codec for [T; N] {
    fn put(&self, w: &mut Writer) {
        self.iter().for_each(|x| x.put(w));
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        self.iter_mut().try_for_each(|x| x.take(r))
    }
}

impl Codec for Vec3 {
    #[inline]
    fn put(&self, w: &mut Writer) {
        self.to_array().put(w);
    }
    #[inline]
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = Vec3::from_array(<[f32; 3]>::take_new(r)?);
        Ok(())
    }
}

impl Codec for IVec3 {
    fn put(&self, w: &mut Writer) {
        self.to_array().put(w);
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = IVec3::from_array(<[i32; 3]>::take_new(r)?);
        Ok(())
    }
}

impl Codec for Quat {
    #[inline]
    fn put(&self, w: &mut Writer) {
        self.to_array().put(w);
    }
    #[inline]
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = Quat::from_array(<[f32; 4]>::take_new(r)?);
        Ok(())
    }
}

impl Codec for Mat3 {
    fn put(&self, w: &mut Writer) {
        self.to_cols_array().put(w);
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = Mat3::from_cols_array(&<[f32; 9]>::take_new(r)?);
        Ok(())
    }
}

impl<T: Codec + Default> Codec for Option<T> {
    fn put(&self, w: &mut Writer) {
        match self {
            None => 0u8.put(w),
            Some(x) => {
                1u8.put(w);
                x.put(w);
            }
        }
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        if r.tag(2)? == 0 {
            *self = None;
            return Ok(());
        }
        self.get_or_insert_with(T::default).take(r)
    }
}

impl<A: Codec, B: Codec> Codec for (A, B) {
    fn put(&self, w: &mut Writer) {
        self.0.put(w);
        self.1.put(w);
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        self.0.take(r)?;
        self.1.take(r)
    }
}

impl<A: Codec, B: Codec, C: Codec> Codec for (A, B, C) {
    fn put(&self, w: &mut Writer) {
        self.0.put(w);
        self.1.put(w);
        self.2.put(w);
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        self.0.take(r)?;
        self.1.take(r)?;
        self.2.take(r)
    }
}

impl Codec for Range<u32> {
    fn put(&self, w: &mut Writer) {
        self.start.put(w);
        self.end.put(w);
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        self.start.take(r)?;
        self.end.take(r)
    }
}

impl<T: Codec + Default> Codec for Vec<T> {
    fn put(&self, w: &mut Writer) {
        (self.len() as u32).put(w);
        self.iter().for_each(|x| x.put(w));
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        let n = r.count()?;
        self.truncate(n);
        self.resize_with(n, T::default);
        self.iter_mut().try_for_each(|x| x.take(r))
    }
}

/// `Codec` for a struct, field by field in the order listed (the declaration
/// order): `fields!(Type { a, b, c });` in the module that can see the fields.
macro_rules! fields {
    ($t:ty { $($f:tt),* $(,)? }) => {
        impl $crate::codec::Codec for $t {
            fn put(&self, w: &mut $crate::codec::Writer) {
                $($crate::codec::Codec::put(&self.$f, w);)*
            }
            fn take(&mut self, r: &mut $crate::codec::Reader) -> Result<(), $crate::codec::Corrupt> {
                $($crate::codec::Codec::take(&mut self.$f, r)?;)*
                Ok(())
            }
        }
    };
}
pub(crate) use fields;

/// A shape's content fingerprint, computed on first use: the [`checksum`] of its
/// encoding, by which a snapshot names shared shape data. Not part of equality.
#[derive(Clone, Default)]
pub(crate) struct Fingerprint(std::sync::OnceLock<u64>);

impl Fingerprint {
    pub fn get(&self, value: &impl Codec) -> u64 {
        *self.0.get_or_init(|| {
            let mut w = Writer::new(&mut [], 0);
            value.put(&mut w);
            let mut bytes = vec![0u8; w.len()];
            value.put(&mut Writer::new(&mut bytes, 0));
            checksum(&bytes)
        })
    }

    /// Sets the fingerprint of a value read from `bytes` (its encoding).
    pub fn set_from(&self, bytes: &[u8]) {
        let _ = self.0.set(checksum(bytes));
    }
}

impl PartialEq for Fingerprint {
    fn eq(&self, _: &Fingerprint) -> bool {
        true
    }
}

impl std::fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fingerprint")
    }
}

fields!(crate::math::Isometry { rotation, translation });
fields!(crate::math::Aabb { min, max });

/// A 64-bit checksum of `bytes`: four lanes of multiply-rotate over 8-byte words (a
/// changed word always changes its lane), folded with the length. Not a
/// cryptographic hash: it catches damage, not forgery.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    const K: [u64; 4] = [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0x27D4_EB2F_1656_67C5];
    let mut h = K;
    let mut blocks = bytes.chunks_exact(32);
    let word = |b: &[u8], i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    for block in &mut blocks {
        for (i, lane) in h.iter_mut().enumerate() {
            *lane = (*lane ^ word(block, i)).wrapping_mul(K[i]).rotate_left(31);
        }
    }
    let mut tail = [0u8; 32];
    tail[..blocks.remainder().len()].copy_from_slice(blocks.remainder());
    for (i, lane) in h.iter_mut().enumerate() {
        *lane = (*lane ^ word(&tail, i)).wrapping_mul(K[i]).rotate_left(31);
    }
    let mut x = bytes.len() as u64;
    for (i, lane) in h.iter().enumerate() {
        x = (x ^ lane.rotate_left(17 * i as u32)).wrapping_mul(K[(i + 1) % 4]);
        x ^= x >> 29;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Codec + Default + PartialEq + std::fmt::Debug>(v: T) {
        let mut buf = vec![0u8; 256];
        let mut w = Writer::new(&mut buf, 0);
        v.put(&mut w);
        let n = w.len();
        assert!(w.fits());
        let mut r = Reader::new(&buf[..n], 0, ShapeTables::default());
        assert_eq!(T::take_new(&mut r), Ok(v));
        assert_eq!(r.remaining(), 0);
        // Every shorter input is corrupt, never a panic.
        for short in 0..n {
            assert_eq!(T::take_new(&mut Reader::new(&buf[..short], 0, ShapeTables::default())), Err(Corrupt));
        }
    }

    /// Values come back as they went, and every truncation of them is refused.
    #[test]
    fn values_round_trip_and_truncations_are_corrupt() {
        round_trip(vec![(1u32, 2.5f32), (7, -0.0)]);
        round_trip(Some(Vec3::new(1.0, f32::MIN_POSITIVE, -3.0)));
        round_trip(vec![vec![true, false], vec![]]);
        round_trip([Quat::from_rotation_y(0.3); 2]);
        round_trip(Mat3::from_diagonal(Vec3::new(1.0, 2.0, 3.0)));
    }

    /// A bool or option tag past its range, and a count beyond the input, are corrupt.
    #[test]
    fn bad_tags_and_counts_are_corrupt() {
        assert_eq!(bool::take_new(&mut Reader::new(&[2], 0, ShapeTables::default())), Err(Corrupt));
        assert_eq!(Option::<u8>::take_new(&mut Reader::new(&[3, 0], 0, ShapeTables::default())), Err(Corrupt));
        let huge = u32::MAX.to_le_bytes();
        assert_eq!(Vec::<u8>::take_new(&mut Reader::new(&huge, 0, ShapeTables::default())), Err(Corrupt));
    }

    /// Reading into a vector keeps its allocation when the new contents fit.
    #[test]
    fn reading_into_a_vector_keeps_its_allocation() {
        let mut buf = vec![0u8; 64];
        let mut w = Writer::new(&mut buf, 0);
        vec![1u32, 2, 3].put(&mut w);
        let n = w.len();
        let mut v: Vec<u32> = Vec::with_capacity(16);
        let at = v.as_ptr();
        v.take(&mut Reader::new(&buf[..n], 0, ShapeTables::default())).unwrap();
        assert_eq!((v.as_slice(), v.as_ptr()), (&[1, 2, 3][..], at));
    }

    /// Any one changed byte changes the checksum, at any length.
    #[test]
    fn a_changed_byte_changes_the_checksum() {
        for len in [1usize, 7, 31, 32, 33, 100] {
            let bytes: Vec<u8> = (0..len as u32).map(|i| (i * 37 + 11) as u8).collect();
            let sum = checksum(&bytes);
            for i in 0..len {
                let mut changed = bytes.clone();
                changed[i] ^= 0x40;
                assert_ne!(checksum(&changed), sum, "byte {i} of {len}");
            }
            assert_ne!(checksum(&bytes[..len - 1]), sum);
        }
    }
}

//! SIMD lanes for the wide solver: four (`Vec4`, SSE2, every x86-64 and any target
//! glam supports), eight ([`F8`], AVX) or sixteen ([`F16`], AVX-512F), the widest the
//! CPU has picked at run time.
//!
//! Every width does the same IEEE single-precision operations lane by lane (add,
//! sub, mul, div and sqrt are correctly rounded; max, min and the comparisons follow
//! the SSE rules, NaN included; nothing is fused), so a constraint's result does not
//! depend on the width: only the number of constraints per instruction changes.

use std::fmt::Debug;
use std::ops::{Add, BitOr, Div, Mul, Neg, Sub};

use glam::{BVec4A, Mat4, Vec4};

/// One float per lane, with the operations the wide solver uses.
pub(crate) trait Lanes:
    Copy
    + Debug
    + Send
    + Sync
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// Lanes per value (at most [`MAX_LANES`]).
    const N: usize;
    const ZERO: Self;
    const ONE: Self;
    /// Per-lane comparison result.
    type Mask: Copy + BitOr<Output = Self::Mask>;
    /// A `u32` per lane (a bundle's constraint indices and body rows), so that a
    /// narrower bundle does not carry the widest one's.
    type Words: Copy + Debug + Send + Sync + AsRef<[u32]> + AsMut<[u32]>;
    /// `u32::MAX` in every lane.
    const UNSET: Self::Words;

    fn splat(v: f32) -> Self;
    fn get(self, lane: usize) -> f32;
    fn set(&mut self, lane: usize, v: f32);
    /// `_mm_max_ps`: `o` where either is NaN.
    fn max(self, o: Self) -> Self;
    /// `_mm_min_ps`: `o` where either is NaN.
    fn min(self, o: Self) -> Self;
    fn sqrt(self) -> Self;
    fn cmpgt(self, o: Self) -> Self::Mask;
    fn cmpeq(self, o: Self) -> Self::Mask;
    fn is_nan_mask(self) -> Self::Mask;
    fn select(mask: Self::Mask, if_true: Self, if_false: Self) -> Self;
    /// Bit `i` set where lane `i` of `mask` is set.
    fn bits(mask: Self::Mask) -> u32;
    /// Eight `f32`s from each of the first `N` rows into eight values, a transpose:
    /// lane `i` of `out[k]` is `rows[i][k]`.
    ///
    /// # Safety
    /// The first `N` pointers can each be read for eight `f32`s.
    unsafe fn gather_rows(rows: &[*const f32; MAX_LANES]) -> [Self; 8];
    /// The transpose back: lane `i` of `values[k]` into `rows[i][k]`, for each of the
    /// first `N` rows that is not null.
    ///
    /// # Safety
    /// Those pointers can each be written for eight `f32`s, and no other thread
    /// touches them meanwhile.
    unsafe fn scatter_rows(values: [Self; 8], rows: &[*mut f32; MAX_LANES]);
}

/// The widest [`Lanes`] type's lane count.
pub(crate) const MAX_LANES: usize = 16;

impl Lanes for Vec4 {
    const N: usize = 4;
    const ZERO: Vec4 = Vec4::ZERO;
    const ONE: Vec4 = Vec4::ONE;
    type Mask = BVec4A;
    type Words = [u32; 4];
    const UNSET: [u32; 4] = [u32::MAX; 4];

    #[inline(always)]
    fn splat(v: f32) -> Vec4 {
        Vec4::splat(v)
    }

    #[inline(always)]
    fn get(self, lane: usize) -> f32 {
        self[lane]
    }

    #[inline(always)]
    fn set(&mut self, lane: usize, v: f32) {
        self[lane] = v;
    }

    #[inline(always)]
    fn max(self, o: Vec4) -> Vec4 {
        Vec4::max(self, o)
    }

    #[inline(always)]
    fn min(self, o: Vec4) -> Vec4 {
        Vec4::min(self, o)
    }

    #[inline(always)]
    fn sqrt(self) -> Vec4 {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{__m128, _mm_sqrt_ps};
            // SAFETY: SSE is part of x86-64; Vec4 is an __m128 there.
            unsafe { std::mem::transmute::<__m128, Vec4>(_mm_sqrt_ps(std::mem::transmute::<Vec4, __m128>(self))) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Vec4::sqrt(self)
    }

    #[inline(always)]
    fn cmpgt(self, o: Vec4) -> BVec4A {
        Vec4::cmpgt(self, o)
    }

    #[inline(always)]
    fn cmpeq(self, o: Vec4) -> BVec4A {
        Vec4::cmpeq(self, o)
    }

    #[inline(always)]
    fn is_nan_mask(self) -> BVec4A {
        Vec4::is_nan_mask(self)
    }

    #[inline(always)]
    fn select(mask: BVec4A, if_true: Vec4, if_false: Vec4) -> Vec4 {
        Vec4::select(mask, if_true, if_false)
    }

    #[inline(always)]
    fn bits(mask: BVec4A) -> u32 {
        mask.bitmask()
    }

    #[inline(always)]
    unsafe fn gather_rows(rows: &[*const f32; MAX_LANES]) -> [Vec4; 8] {
        let mut halves = [[Vec4::ZERO; 4]; 2];
        for (h, half) in halves.iter_mut().enumerate() {
            for (i, v) in half.iter_mut().enumerate() {
                // SAFETY: forwarded from the caller.
                *v = Vec4::from_array(unsafe { rows[i].add(4 * h).cast::<[f32; 4]>().read_unaligned() });
            }
        }
        let [lo, hi] = halves.map(|[x, y, z, w]| Mat4::from_cols(x, y, z, w).transpose());
        [lo.x_axis, lo.y_axis, lo.z_axis, lo.w_axis, hi.x_axis, hi.y_axis, hi.z_axis, hi.w_axis]
    }

    #[inline(always)]
    unsafe fn scatter_rows(values: [Vec4; 8], rows: &[*mut f32; MAX_LANES]) {
        for h in 0..2 {
            let [x, y, z, w] = [0, 1, 2, 3].map(|k| values[4 * h + k]);
            let m = Mat4::from_cols(x, y, z, w).transpose();
            for (row, v) in rows[..4].iter().zip([m.x_axis, m.y_axis, m.z_axis, m.w_axis]) {
                if !row.is_null() {
                    // SAFETY: forwarded from the caller.
                    unsafe { row.add(4 * h).cast::<[f32; 4]>().write_unaligned(v.to_array()) };
                }
            }
        }
    }
}

/// The [`Lanes`] operations that [`F8`] and [`F16`] share in shape, one intrinsic on
/// the whole register each: `splat`, `get`, `set`, `max`, `min`, `sqrt` and the three
/// comparisons. Expanded inside each type's `impl Lanes`, where the module notes'
/// target-feature rule makes the intrinsics safe to call.
#[cfg(target_arch = "x86_64")]
macro_rules! lane_ops {
    ($f:ident, $m:ident, $n:literal, $set1:ident, $max:ident, $min:ident, $sqrt:ident, $cmp:ident) => {
        #[inline(always)]
        fn splat(v: f32) -> $f {
            // SAFETY: callers run with the lane type's target feature (module notes).
            $f(unsafe { $set1(v) })
        }

        #[inline(always)]
        fn get(self, lane: usize) -> f32 {
            self.to_array()[lane]
        }

        /// One 4-byte store: rebuilding the register from an array stalled on store
        /// forwarding at every lane of every packed constraint.
        #[inline(always)]
        fn set(&mut self, lane: usize, v: f32) {
            assert!(lane < $n, "lane {lane} of {}", $n);
            // SAFETY: the register is `$n` f32s; `lane` is in bounds.
            unsafe { (self as *mut $f).cast::<f32>().add(lane).write(v) };
        }

        #[inline(always)]
        fn max(self, o: $f) -> $f {
            // SAFETY: callers run with the lane type's target feature (module notes).
            $f(unsafe { $max(self.0, o.0) })
        }

        #[inline(always)]
        fn min(self, o: $f) -> $f {
            // SAFETY: as above.
            $f(unsafe { $min(self.0, o.0) })
        }

        #[inline(always)]
        fn sqrt(self) -> $f {
            // SAFETY: as above.
            $f(unsafe { $sqrt(self.0) })
        }

        #[inline(always)]
        fn cmpgt(self, o: $f) -> $m {
            // SAFETY: as above.
            $m(unsafe { $cmp::<_CMP_GT_OQ>(self.0, o.0) })
        }

        #[inline(always)]
        fn cmpeq(self, o: $f) -> $m {
            // SAFETY: as above.
            $m(unsafe { $cmp::<_CMP_EQ_OQ>(self.0, o.0) })
        }

        #[inline(always)]
        fn is_nan_mask(self) -> $m {
            // SAFETY: as above.
            $m(unsafe { $cmp::<_CMP_UNORD_Q>(self.0, self.0) })
        }
    };
}

#[cfg(target_arch = "x86_64")]
pub(crate) use avx::F8;

#[cfg(target_arch = "x86_64")]
mod avx {
    //! Eight lanes in one AVX register. Every method is `#[inline(always)]` and only
    //! ever runs inside a `#[target_feature(enable = "avx")]` function (the wide
    //! solver's entry points, called after `is_x86_feature_detected!("avx")`), where
    //! the intrinsics compile to single instructions.

    use std::arch::x86_64::*;
    use std::ops::{Add, BitOr, Div, Mul, Neg, Sub};

    use super::{Lanes, MAX_LANES};

    #[derive(Clone, Copy, Debug)]
    #[repr(transparent)]
    pub(crate) struct F8(__m256);

    /// All-ones or all-zeros per lane.
    #[derive(Clone, Copy, Debug)]
    #[repr(transparent)]
    pub(crate) struct M8(__m256);

    impl F8 {
        pub(crate) const fn from_array(a: [f32; 8]) -> F8 {
            // SAFETY: __m256 is eight f32s.
            F8(unsafe { std::mem::transmute::<[f32; 8], __m256>(a) })
        }

        #[inline(always)]
        pub(crate) fn to_array(self) -> [f32; 8] {
            // SAFETY: __m256 is eight f32s.
            unsafe { std::mem::transmute::<__m256, [f32; 8]>(self.0) }
        }

        #[inline(always)]
        pub(crate) fn from_m256(v: __m256) -> F8 {
            F8(v)
        }

        #[inline(always)]
        pub(crate) fn m256(self) -> __m256 {
            self.0
        }
    }

    macro_rules! binary {
        ($trait:ident, $method:ident, $intrinsic:ident) => {
            impl $trait for F8 {
                type Output = F8;
                #[inline(always)]
                fn $method(self, o: F8) -> F8 {
                    // SAFETY: callers run with AVX enabled (see the module notes).
                    F8(unsafe { $intrinsic(self.0, o.0) })
                }
            }
        };
    }

    binary!(Add, add, _mm256_add_ps);
    binary!(Sub, sub, _mm256_sub_ps);
    binary!(Mul, mul, _mm256_mul_ps);
    binary!(Div, div, _mm256_div_ps);

    impl Neg for F8 {
        type Output = F8;
        /// As glam's: flips the sign bit (of zeros and NaNs too).
        #[inline(always)]
        fn neg(self) -> F8 {
            // SAFETY: callers run with AVX enabled (see the module notes).
            F8(unsafe { _mm256_xor_ps(self.0, _mm256_set1_ps(-0.0)) })
        }
    }

    impl BitOr for M8 {
        type Output = M8;
        #[inline(always)]
        fn bitor(self, o: M8) -> M8 {
            // SAFETY: callers run with AVX enabled (see the module notes).
            M8(unsafe { _mm256_or_ps(self.0, o.0) })
        }
    }

    impl Lanes for F8 {
        const N: usize = 8;
        const ZERO: F8 = F8::from_array([0.0; 8]);
        const ONE: F8 = F8::from_array([1.0; 8]);
        type Mask = M8;
        type Words = [u32; 8];
        const UNSET: [u32; 8] = [u32::MAX; 8];

        lane_ops!(F8, M8, 8, _mm256_set1_ps, _mm256_max_ps, _mm256_min_ps, _mm256_sqrt_ps, _mm256_cmp_ps);

        #[inline(always)]
        fn select(mask: M8, if_true: F8, if_false: F8) -> F8 {
            // SAFETY: callers run with AVX enabled (see the module notes).
            F8(unsafe { _mm256_blendv_ps(if_false.0, if_true.0, mask.0) })
        }

        #[inline(always)]
        fn bits(mask: M8) -> u32 {
            // SAFETY: callers run with AVX enabled (see the module notes).
            unsafe { _mm256_movemask_ps(mask.0) as u32 }
        }

        /// Row `i`'s first (then last) four values in the low half of register `i`
        /// and row `i + 4`'s in its high half; a 4x4 transpose within each half then
        /// leaves value `k` of every row in register `k`.
        #[inline(always)]
        unsafe fn gather_rows(rows: &[*const f32; MAX_LANES]) -> [F8; 8] {
            #[inline(always)]
            unsafe fn pair(rows: &[*const f32; MAX_LANES], i: usize, h: usize) -> __m256 {
                // SAFETY: forwarded from the caller; AVX per the module notes.
                unsafe {
                    let low = _mm256_castps128_ps256(_mm_loadu_ps(rows[i].add(4 * h)));
                    _mm256_insertf128_ps::<1>(low, _mm_loadu_ps(rows[i + 4].add(4 * h)))
                }
            }
            // SAFETY: forwarded from the caller.
            let (lo, hi) = unsafe {
                (
                    transpose_halves([pair(rows, 0, 0), pair(rows, 1, 0), pair(rows, 2, 0), pair(rows, 3, 0)]),
                    transpose_halves([pair(rows, 0, 1), pair(rows, 1, 1), pair(rows, 2, 1), pair(rows, 3, 1)]),
                )
            };
            [F8(lo[0]), F8(lo[1]), F8(lo[2]), F8(lo[3]), F8(hi[0]), F8(hi[1]), F8(hi[2]), F8(hi[3])]
        }

        #[inline(always)]
        unsafe fn scatter_rows(values: [F8; 8], rows: &[*mut f32; MAX_LANES]) {
            for h in 0..2 {
                let v = &values[4 * h..4 * h + 4];
                let pairs = transpose_halves([v[0].0, v[1].0, v[2].0, v[3].0]);
                for (i, &pair) in pairs.iter().enumerate() {
                    // SAFETY: forwarded from the caller; AVX per the module notes.
                    unsafe {
                        if !rows[i].is_null() {
                            _mm_storeu_ps(rows[i].add(4 * h), _mm256_castps256_ps128(pair));
                        }
                        if !rows[i + 4].is_null() {
                            _mm_storeu_ps(rows[i + 4].add(4 * h), _mm256_extractf128_ps::<1>(pair));
                        }
                    }
                }
            }
        }
    }

    /// A 4x4 transpose in each 128-bit half (as `_MM_TRANSPOSE4_PS`, twice).
    #[inline(always)]
    fn transpose_halves([a, b, c, d]: [__m256; 4]) -> [__m256; 4] {
        // SAFETY: callers run with AVX enabled (see the module notes).
        unsafe {
            let (ab_lo, cd_lo) = (_mm256_unpacklo_ps(a, b), _mm256_unpacklo_ps(c, d));
            let (ab_hi, cd_hi) = (_mm256_unpackhi_ps(a, b), _mm256_unpackhi_ps(c, d));
            [
                _mm256_shuffle_ps::<0x44>(ab_lo, cd_lo),
                _mm256_shuffle_ps::<0xEE>(ab_lo, cd_lo),
                _mm256_shuffle_ps::<0x44>(ab_hi, cd_hi),
                _mm256_shuffle_ps::<0xEE>(ab_hi, cd_hi),
            ]
        }
    }

    /// Whether this CPU runs [`F8`].
    pub(crate) fn available() -> bool {
        is_x86_feature_detected!("avx")
    }
}

/// Whether this CPU runs eight lanes and the SIMD ceiling allows them.
pub(crate) fn eight_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return avx::available() && crate::math::simd_allows(crate::math::SimdLevel::Avx2);
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether this CPU runs sixteen lanes and the SIMD ceiling allows them.
pub(crate) fn sixteen_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return avx512::available() && crate::math::simd_allows(crate::math::SimdLevel::Avx512);
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[cfg(target_arch = "x86_64")]
pub(crate) use avx512::F16;

#[cfg(target_arch = "x86_64")]
mod avx512 {
    //! Sixteen lanes in one AVX-512 register. Every method is `#[inline(always)]` and
    //! only ever runs inside a `#[target_feature(enable = "avx512f")]` function (the
    //! wide solver's entry points, called after `is_x86_feature_detected!("avx512f")`).
    //! Only AVX-512F instructions are used (no DQ), and the transposes are two of
    //! [`F8`]'s, one per half.
    //!
    //! A bundle of sixteen runs each dependent chain of the solve (a point's impulse,
    //! then the velocities the next point reads) once for sixteen constraints, and
    //! each instruction does twice the work of an eight-lane one.

    use std::arch::x86_64::*;
    use std::ops::{Add, BitOr, Div, Mul, Neg, Sub};

    use super::{Lanes, F8, MAX_LANES};

    #[derive(Clone, Copy, Debug)]
    #[repr(transparent)]
    pub(crate) struct F16(__m512);

    /// A bit per lane.
    #[derive(Clone, Copy, Debug)]
    #[repr(transparent)]
    pub(crate) struct M16(__mmask16);

    impl F16 {
        pub(crate) const fn from_array(a: [f32; 16]) -> F16 {
            // SAFETY: __m512 is sixteen f32s.
            F16(unsafe { std::mem::transmute::<[f32; 16], __m512>(a) })
        }

        #[inline(always)]
        pub(crate) fn to_array(self) -> [f32; 16] {
            // SAFETY: __m512 is sixteen f32s.
            unsafe { std::mem::transmute::<__m512, [f32; 16]>(self.0) }
        }

        /// The low and high eight lanes.
        #[inline(always)]
        fn halves(self) -> (F8, F8) {
            // SAFETY: callers run with AVX-512F enabled (see the module notes).
            unsafe {
                let high = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(self.0)));
                (F8::from_m256(_mm512_castps512_ps256(self.0)), F8::from_m256(high))
            }
        }

        /// Two halves as one value.
        #[inline(always)]
        fn join(low: F8, high: F8) -> F16 {
            // SAFETY: callers run with AVX-512F enabled (see the module notes).
            unsafe {
                let low = _mm512_castpd256_pd512(_mm256_castps_pd(low.m256()));
                F16(_mm512_castpd_ps(_mm512_insertf64x4::<1>(low, _mm256_castps_pd(high.m256()))))
            }
        }
    }

    macro_rules! binary {
        ($trait:ident, $method:ident, $intrinsic:ident) => {
            impl $trait for F16 {
                type Output = F16;
                #[inline(always)]
                fn $method(self, o: F16) -> F16 {
                    // SAFETY: callers run with AVX-512F enabled (see the module notes).
                    F16(unsafe { $intrinsic(self.0, o.0) })
                }
            }
        };
    }

    binary!(Add, add, _mm512_add_ps);
    binary!(Sub, sub, _mm512_sub_ps);
    binary!(Mul, mul, _mm512_mul_ps);
    binary!(Div, div, _mm512_div_ps);

    impl Neg for F16 {
        type Output = F16;
        /// As glam's: flips the sign bit (of zeros and NaNs too), by an integer xor
        /// (a float one is AVX-512DQ).
        #[inline(always)]
        fn neg(self) -> F16 {
            // SAFETY: callers run with AVX-512F enabled (see the module notes).
            F16(unsafe {
                _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(self.0), _mm512_set1_epi32(i32::MIN)))
            })
        }
    }

    impl BitOr for M16 {
        type Output = M16;
        #[inline(always)]
        fn bitor(self, o: M16) -> M16 {
            M16(self.0 | o.0)
        }
    }

    impl Lanes for F16 {
        const N: usize = 16;
        const ZERO: F16 = F16::from_array([0.0; 16]);
        const ONE: F16 = F16::from_array([1.0; 16]);
        type Mask = M16;
        type Words = [u32; 16];
        const UNSET: [u32; 16] = [u32::MAX; 16];

        // `vmaxps` keeps SSE's rule with AVX-512: the second operand where either is
        // NaN (or both are zeros).
        lane_ops!(F16, M16, 16, _mm512_set1_ps, _mm512_max_ps, _mm512_min_ps, _mm512_sqrt_ps, _mm512_cmp_ps_mask);

        #[inline(always)]
        fn select(mask: M16, if_true: F16, if_false: F16) -> F16 {
            // SAFETY: callers run with AVX-512F enabled (see the module notes).
            F16(unsafe { _mm512_mask_blend_ps(mask.0, if_false.0, if_true.0) })
        }

        #[inline(always)]
        fn bits(mask: M16) -> u32 {
            mask.0 as u32
        }

        /// Two eight-row transposes, joined. (Loops, not closures: a closure does not
        /// inherit the kernels' target features, so the intrinsics in it would be
        /// calls.)
        #[inline(always)]
        unsafe fn gather_rows(rows: &[*const f32; MAX_LANES]) -> [F16; 8] {
            let mut high = [std::ptr::null(); MAX_LANES];
            high[..8].copy_from_slice(&rows[8..]);
            // SAFETY: forwarded from the caller (F8 reads the first eight of each).
            let (lo, hi) = unsafe { (F8::gather_rows(rows), F8::gather_rows(&high)) };
            let mut out = [F16::ZERO; 8];
            for k in 0..8 {
                out[k] = F16::join(lo[k], hi[k]);
            }
            out
        }

        #[inline(always)]
        unsafe fn scatter_rows(values: [F16; 8], rows: &[*mut f32; MAX_LANES]) {
            let (mut lo, mut hi) = ([F8::ZERO; 8], [F8::ZERO; 8]);
            for k in 0..8 {
                (lo[k], hi[k]) = values[k].halves();
            }
            let mut high = [std::ptr::null_mut(); MAX_LANES];
            high[..8].copy_from_slice(&rows[8..]);
            // SAFETY: forwarded from the caller (F8 writes the first eight rows).
            unsafe {
                F8::scatter_rows(lo, rows);
                F8::scatter_rows(hi, &high);
            }
        }
    }

    /// Whether this CPU runs [`F16`].
    pub(crate) fn available() -> bool {
        is_x86_feature_detected!("avx512f")
    }
}

/// Tests set this to run the eight-lane kernels with 16 registers on any CPU.
#[cfg(test)]
pub(crate) static SIXTEEN_REGISTERS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the eight-lane kernels may use AVX-512VL's 32 vector registers (see
/// `wide`'s `Width for F8`).
#[cfg(target_arch = "x86_64")]
pub(crate) fn more_registers() -> bool {
    #[cfg(test)]
    if SIXTEEN_REGISTERS.load(std::sync::atomic::Ordering::Relaxed) {
        return false;
    }
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512vl")
        && crate::math::simd_allows(crate::math::SimdLevel::Avx512)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eight lanes compute what four do, bit for bit, NaN and signed zeros included.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn eight_lanes_compute_what_four_compute() {
        assert!(eight_available(), "this test machine has AVX (every CI machine does)");
        let values = [0.0, -0.0, 1.5, -2.25, f32::NAN, f32::INFINITY, -f32::INFINITY, 1e-40, 3.0e38, 7.0];
        let pick = |seed: usize| -> [f32; 8] { std::array::from_fn(|i| values[(seed * 7 + i * 3) % values.len()]) };
        let bits = |a: [f32; 8]| a.map(f32::to_bits);
        #[target_feature(enable = "avx")]
        fn run(a: [f32; 8], b: [f32; 8]) -> Vec<[f32; 8]> {
            let (x, y) = (F8::from_array(a), F8::from_array(b));
            let four = |f: &dyn Fn(Vec4, Vec4) -> Vec4| -> [f32; 8] {
                let lo = f(Vec4::from_slice(&a[..4]), Vec4::from_slice(&b[..4]));
                let hi = f(Vec4::from_slice(&a[4..]), Vec4::from_slice(&b[4..]));
                std::array::from_fn(|i| if i < 4 { lo[i] } else { hi[i - 4] })
            };
            let pairs: Vec<([f32; 8], [f32; 8])> = vec![
                ((x + y).to_array(), four(&|p, q| p + q)),
                ((x - y).to_array(), four(&|p, q| p - q)),
                ((x * y).to_array(), four(&|p, q| p * q)),
                ((x / y).to_array(), four(&|p, q| p / q)),
                ((-x).to_array(), four(&|p, _| -p)),
                (Lanes::max(x, y).to_array(), four(&|p, q| Lanes::max(p, q))),
                (Lanes::min(x, y).to_array(), four(&|p, q| Lanes::min(p, q))),
                (Lanes::sqrt(x).to_array(), four(&|p, _| Lanes::sqrt(p))),
                (F8::select(x.cmpgt(y), x, y).to_array(), four(&|p, q| Lanes::select(p.cmpgt(q), p, q))),
                (
                    F8::select(x.cmpeq(y) | y.is_nan_mask(), x, y).to_array(),
                    four(&|p, q| Lanes::select(p.cmpeq(q) | q.is_nan_mask(), p, q)),
                ),
            ];
            pairs.into_iter().flat_map(|(e, f)| [e, f]).collect()
        }
        for seed in 0..40 {
            // SAFETY: AVX is present (asserted above).
            let out = unsafe { run(pick(seed), pick(seed + 5)) };
            for (op, pair) in out.chunks(2).enumerate() {
                assert_eq!(bits(pair[0]), bits(pair[1]), "seed {seed}, operation {op}");
            }
        }
        // The transposes, and the mask bits.
        // SAFETY: AVX is present.
        unsafe { transposes::<F8>() };
        // SAFETY: SSE2 is part of x86-64.
        unsafe { transposes::<Vec4>() };
    }

    /// Sixteen lanes compute what four do, bit for bit, where the CPU has AVX-512F
    /// (this project's CI and device machines do; elsewhere there is nothing to run).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sixteen_lanes_compute_what_four_compute() {
        if !sixteen_available() {
            return;
        }
        let values = [0.0, -0.0, 1.5, -2.25, f32::NAN, f32::INFINITY, -f32::INFINITY, 1e-40, 3.0e38, 7.0, -1e-40];
        let pick = |seed: usize| -> [f32; 16] { std::array::from_fn(|i| values[(seed * 7 + i * 3) % values.len()]) };
        let bits = |a: [f32; 16]| a.map(f32::to_bits);
        #[target_feature(enable = "avx512f")]
        fn run(a: [f32; 16], b: [f32; 16]) -> Vec<[f32; 16]> {
            let (x, y) = (F16::from_array(a), F16::from_array(b));
            let four = |f: &dyn Fn(Vec4, Vec4) -> Vec4| -> [f32; 16] {
                let mut out = [0.0; 16];
                for q in 0..4 {
                    let r = f(Vec4::from_slice(&a[4 * q..]), Vec4::from_slice(&b[4 * q..]));
                    out[4 * q..4 * q + 4].copy_from_slice(&r.to_array());
                }
                out
            };
            let pairs: Vec<([f32; 16], [f32; 16])> = vec![
                ((x + y).to_array(), four(&|p, q| p + q)),
                ((x - y).to_array(), four(&|p, q| p - q)),
                ((x * y).to_array(), four(&|p, q| p * q)),
                ((x / y).to_array(), four(&|p, q| p / q)),
                ((-x).to_array(), four(&|p, _| -p)),
                (Lanes::max(x, y).to_array(), four(&|p, q| Lanes::max(p, q))),
                (Lanes::min(x, y).to_array(), four(&|p, q| Lanes::min(p, q))),
                (Lanes::sqrt(x).to_array(), four(&|p, _| Lanes::sqrt(p))),
                (F16::select(x.cmpgt(y), x, y).to_array(), four(&|p, q| Lanes::select(p.cmpgt(q), p, q))),
                (
                    F16::select(x.cmpeq(y) | y.is_nan_mask(), x, y).to_array(),
                    four(&|p, q| Lanes::select(p.cmpeq(q) | q.is_nan_mask(), p, q)),
                ),
            ];
            pairs.into_iter().flat_map(|(e, f)| [e, f]).collect()
        }
        for seed in 0..40 {
            // SAFETY: AVX-512F is present (checked above).
            let out = unsafe { run(pick(seed), pick(seed + 5)) };
            for (op, pair) in out.chunks(2).enumerate() {
                assert_eq!(bits(pair[0]), bits(pair[1]), "seed {seed}, operation {op}");
            }
        }
        #[target_feature(enable = "avx512f")]
        fn transposes16() {
            transposes::<F16>();
        }
        // SAFETY: AVX-512F is present.
        unsafe { transposes16() };
    }

    /// `gather_rows` and `scatter_rows` at width `L`: a transpose there and back, where
    /// null rows are left alone; and `bits` of a comparison.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx")]
    fn transposes<L: Lanes>() {
        let rows: [[f32; 8]; MAX_LANES] = std::array::from_fn(|i| std::array::from_fn(|k| (10 * i + k) as f32));
        // SAFETY: every row holds eight f32s.
        let values = unsafe { L::gather_rows(&std::array::from_fn(|i| rows[i].as_ptr())) };
        for (k, v) in values.iter().enumerate() {
            for (i, row) in rows.iter().enumerate().take(L::N) {
                assert_eq!(v.get(i), row[k], "{} lanes: value {k}, lane {i}", L::N);
            }
        }
        let mut out = [[-1.0f32; 8]; MAX_LANES];
        let skip = |i: usize| i % 3 == 1;
        let targets = std::array::from_fn(|i| match skip(i) {
            true => std::ptr::null_mut(),
            false => out[i].as_mut_ptr(),
        });
        // SAFETY: every target row holds eight f32s.
        unsafe { L::scatter_rows(values, &targets) };
        for (i, row) in out.iter().enumerate() {
            let expected = if skip(i) || i >= L::N { [-1.0; 8] } else { rows[i] };
            assert_eq!(*row, expected, "{} lanes: row {i}", L::N);
        }
        let odd = L::bits(values[0].cmpeq(L::splat(10.0)) | values[0].cmpeq(L::splat(30.0)));
        assert_eq!(odd, 0b1010, "{} lanes", L::N);
        let high = L::bits(values[0].cmpgt(L::splat(25.0)));
        assert_eq!(high, (1 << L::N) - 8, "{} lanes", L::N);
    }
}

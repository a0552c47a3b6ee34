//! Small number formats of the probe data: unsigned 11- and 10-bit floats
//! (`R11G11B10_UFLOAT`), 11/11/10-bit UNORM, and IEEE half floats for depth maps.
//! Every conversion is integer arithmetic with round-to-nearest-even, written the
//! same way in `vulkan-shaders/include/gi.glsl`, so the CPU reference and the
//! kernels produce the same bits (GLSL's `packHalf2x16` leaves rounding open).
//!
//! # Probe irradiance in 16 bytes
//!
//! L1 SH has 12 numbers per probe (4 per channel). Band 0 is radiance, positive and
//! HDR: one `R11G11B10_UFLOAT` word holds it for the three channels. Band 1 is
//! signed, which no unsigned float can hold, but for non-negative radiance
//! `|c_k| <= sqrt(3) c_0` per channel; so each band-1 word stores the ratio
//! `c_k / (sqrt(3) c_0)` remapped from `[-1, 1]` to `[0, 1]` as 11/11/10-bit UNORM.
//! Ratios need uniform, not logarithmic, precision: UNORM11 steps are 1/2047 of the
//! range where an 11-bit float would step by 1/128 near 1.
//!
//! # Hysteresis without drift
//!
//! Blending `new = target + h (old - target)` with `h = 0.97` moves a value by 3%
//! of the remaining distance per update. Once that is less than half a step of the
//! stored format, rounding to nearest returns the old code: the probe sticks short
//! of its target, and after a bright light goes on and off again it never returns
//! to where it was (RTXGI users report exactly this with 10-bit formats).
//! [`pack_toward`] rounds to nearest, but when that would leave the code unchanged
//! while the target rounds to a different code, it moves one step toward the
//! target. A constant target is then reached exactly, in both directions.

use super::sh::ShRgb;

/// An unsigned float with a 5-bit exponent (bias 15) and `m` mantissa bits, no
/// infinities: NaN and negatives become 0, values above the largest finite one
/// clamp to it. `m = 6` is the 11-bit format, `m = 5` the 10-bit one.
#[inline]
pub fn ufloat_from_f32(x: f32, m: u32) -> u32 {
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    let max_code = (30 << m) | ((1 << m) - 1);
    let bits = x.to_bits();
    let exp = (bits >> 23) as i32 - 127 + 15;
    let mant = bits & 0x7F_FFFF;
    let code = if exp >= 31 {
        max_code
    } else if exp <= 0 {
        // Subnormal: value = mant_small * 2^(-14 - m).
        let shift = (23 - m as i32 + 1 - exp) as u32;
        if shift > 24 {
            0
        } else {
            round_shift(mant | 0x80_0000, shift)
        }
    } else {
        // Normal: round the mantissa; a carry bumps the exponent, which is right.
        ((exp as u32) << m) + round_shift(mant, 23 - m)
    };
    code.min(max_code)
}

/// Inverse of [`ufloat_from_f32`].
#[inline]
pub fn ufloat_to_f32(code: u32, m: u32) -> f32 {
    let exp = code >> m;
    let mant = code & ((1 << m) - 1);
    if exp == 0 {
        mant as f32 * f32::from_bits((127 - 14 - m) << 23)
    } else {
        f32::from_bits(((exp + 127 - 15) << 23) | (mant << (23 - m)))
    }
}

/// `v >> shift` rounded to nearest, ties to even.
#[inline]
fn round_shift(v: u32, shift: u32) -> u32 {
    if shift == 0 {
        return v;
    }
    let q = v >> shift;
    let rem = v & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    q + u32::from(rem > half || (rem == half && q & 1 == 1))
}

/// `x` in `[0, 1]` as a `bits`-bit UNORM (NaN becomes 0).
#[inline]
pub fn unorm_from_f32(x: f32, bits: u32) -> u32 {
    let max = ((1u32 << bits) - 1) as f32;
    let x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
    // `x * max + 0.5` is exact enough for 11 bits: max * x has 24 significant bits.
    (x * max + 0.5) as u32
}

#[inline]
pub fn unorm_to_f32(code: u32, bits: u32) -> f32 {
    code as f32 / ((1u32 << bits) - 1) as f32
}

/// IEEE binary16 bits of `x`, round to nearest even; NaN becomes a quiet NaN,
/// overflow becomes infinity.
#[inline]
pub fn half_from_f32(x: f32) -> u32 {
    let bits = x.to_bits();
    let sign = (bits >> 16) & 0x8000;
    let abs = bits & 0x7FFF_FFFF;
    if abs > 0x7F80_0000 {
        return sign | 0x7E00;
    }
    let exp = (abs >> 23) as i32 - 127 + 15;
    let mant = abs & 0x7F_FFFF;
    let code = if exp >= 31 {
        0x7C00
    } else if exp <= 0 {
        let shift = (14 - exp) as u32;
        if shift > 24 {
            0
        } else {
            round_shift(mant | 0x80_0000, shift)
        }
    } else {
        (((exp as u32) << 10) + round_shift(mant, 13)).min(0x7C00)
    };
    sign | code
}

#[inline]
pub fn half_to_f32(h: u32) -> f32 {
    let sign = (h & 0x8000) << 16;
    let exp = (h >> 10) & 0x1F;
    let mant = h & 0x3FF;
    let abs = if exp == 0 {
        mant as f32 * f32::from_bits((127 - 24) << 23)
    } else if exp == 31 {
        f32::from_bits(0x7F80_0000 | (mant << 13))
    } else {
        f32::from_bits(((exp + 127 - 15) << 23) | (mant << 13))
    };
    f32::from_bits(abs.to_bits() | sign)
}

/// Bit layout of an R11G11B10 word: red in bits 0..11, green 11..22, blue 22..32.
const FIELD_BITS: [u32; 3] = [11, 11, 10];
const FIELD_SHIFT: [u32; 3] = [0, 11, 22];

/// How the three fields of one word are coded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordFormat {
    /// `R11G11B10_UFLOAT`.
    UFloat,
    /// 11/11/10-bit UNORM.
    Unorm,
}

impl WordFormat {
    fn encode(self, x: f32, field: usize) -> u32 {
        match self {
            WordFormat::UFloat => ufloat_from_f32(x, FIELD_BITS[field] - 5),
            WordFormat::Unorm => unorm_from_f32(x, FIELD_BITS[field]),
        }
    }

    fn decode(self, code: u32, field: usize) -> f32 {
        match self {
            WordFormat::UFloat => ufloat_to_f32(code, FIELD_BITS[field] - 5),
            WordFormat::Unorm => unorm_to_f32(code, FIELD_BITS[field]),
        }
    }

    /// Codes are monotonic in the value for both formats, so "one step toward"
    /// is plus or minus one.
    fn max_code(self, field: usize) -> u32 {
        match self {
            WordFormat::UFloat => (30 << (FIELD_BITS[field] - 5)) | ((1 << (FIELD_BITS[field] - 5)) - 1),
            WordFormat::Unorm => (1 << FIELD_BITS[field]) - 1,
        }
    }
}

/// Three values in one 32-bit word, rounded to nearest.
pub fn pack_word(v: [f32; 3], format: WordFormat) -> u32 {
    (0..3).fold(0, |w, f| w | (format.encode(v[f], f) << FIELD_SHIFT[f]))
}

pub fn unpack_word(w: u32, format: WordFormat) -> [f32; 3] {
    std::array::from_fn(|f| format.decode((w >> FIELD_SHIFT[f]) & ((1 << FIELD_BITS[f]) - 1), f))
}

/// Packs `value` like [`pack_word`], except that a field whose nearest code equals
/// its code in `previous` while `target` rounds elsewhere moves one step toward
/// `target` (see the module docs).
pub fn pack_toward(value: [f32; 3], target: [f32; 3], previous: u32, format: WordFormat) -> u32 {
    let mut word = 0;
    for f in 0..3 {
        let mask = (1 << FIELD_BITS[f]) - 1;
        let old = (previous >> FIELD_SHIFT[f]) & mask;
        let goal = format.encode(target[f], f);
        let mut code = format.encode(value[f], f);
        if code == old && goal != old {
            code = if goal > old { (old + 1).min(format.max_code(f)) } else { old - 1 };
        }
        word |= code << FIELD_SHIFT[f];
    }
    word
}

/// `sqrt(3)`: the largest `|c_k / c_0|` of L1 SH of non-negative radiance.
const BAND1_LIMIT: f32 = 1.732_050_8;

/// Probe irradiance as stored: four words (see the module docs). 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PackedSh(pub [u32; 4]);
const _: () = assert!(std::mem::size_of::<PackedSh>() == 16);

impl PackedSh {
    /// The four words' values before rounding: band 0, then the three ratios.
    fn fields(sh: &ShRgb) -> [[f32; 3]; 4] {
        let mut out = [sh.c[0].map(|x| x.max(0.0)), [0.5; 3], [0.5; 3], [0.5; 3]];
        for (k, word) in out.iter_mut().enumerate().skip(1) {
            for (ch, field) in word.iter_mut().enumerate() {
                let c0 = sh.c[0][ch];
                let ratio = sh.c[k][ch] / (BAND1_LIMIT * c0);
                if c0 > 0.0 && ratio.is_finite() {
                    *field = ratio * 0.5 + 0.5;
                }
            }
        }
        out
    }

    /// Rounded to nearest.
    pub fn pack(sh: &ShRgb) -> PackedSh {
        let f = PackedSh::fields(sh);
        PackedSh(std::array::from_fn(|k| pack_word(f[k], word_format(k))))
    }

    /// `value` rounded with [`pack_toward`] against `target` and `self`.
    pub fn pack_toward(&self, value: &ShRgb, target: &ShRgb) -> PackedSh {
        let v = PackedSh::fields(value);
        let t = PackedSh::fields(target);
        PackedSh(std::array::from_fn(|k| pack_toward(v[k], t[k], self.0[k], word_format(k))))
    }

    pub fn unpack(&self) -> ShRgb {
        let mut sh = ShRgb::default();
        sh.c[0] = unpack_word(self.0[0], WordFormat::UFloat);
        let c0 = sh.c[0];
        for (k, band) in sh.c.iter_mut().enumerate().skip(1) {
            let r = unpack_word(self.0[k], WordFormat::Unorm);
            *band = std::array::from_fn(|ch| (r[ch] * 2.0 - 1.0) * BAND1_LIMIT * c0[ch]);
        }
        sh
    }
}

fn word_format(k: usize) -> WordFormat {
    if k == 0 {
        WordFormat::UFloat
    } else {
        WordFormat::Unorm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ufloat_round_trips_within_half_a_step() {
        for m in [6, 5] {
            // Every code decodes and re-encodes to itself.
            let max = (30 << m) | ((1 << m) - 1);
            for code in 0..=max {
                assert_eq!(ufloat_from_f32(ufloat_to_f32(code, m), m), code, "m {m} code {code}");
            }
            // Relative error of normal values <= 2^-(m+1), absolute error of
            // subnormals <= half a subnormal step.
            let min_normal = 2f32.powi(-14);
            let sub_step = 2f32.powi(-14 - m as i32);
            let mut x = 1e-7f32;
            while x < 6.0e4 {
                let y = ufloat_to_f32(ufloat_from_f32(x, m), m);
                if x >= min_normal {
                    assert!((y - x).abs() <= x * 2f32.powi(-(m as i32 + 1)) * 1.0001, "m {m}: {x} -> {y}");
                } else {
                    assert!((y - x).abs() <= sub_step * 0.5001, "m {m}: {x} -> {y}");
                }
                x *= 1.013;
            }
            assert_eq!(ufloat_from_f32(-3.0, m), 0);
            assert_eq!(ufloat_from_f32(f32::NAN, m), 0);
            assert_eq!(ufloat_from_f32(f32::INFINITY, m), max);
            assert_eq!(ufloat_to_f32(max, m), if m == 6 { 65024.0 } else { 64512.0 });
        }
    }

    #[test]
    fn ufloat_rounds_ties_to_even() {
        // 1 + 2^-7 lies halfway between the 11-bit codes for 1 and 1 + 2^-6.
        let one = ufloat_from_f32(1.0, 6);
        assert_eq!(ufloat_from_f32(1.0 + 2f32.powi(-7), 6), one);
        assert_eq!(ufloat_from_f32(1.0 + 3.0 * 2f32.powi(-7), 6), one + 2);
    }

    #[test]
    fn half_matches_ieee_binary16() {
        // Exhaustive over all finite halves: decode then encode is the identity,
        // and decoded values match the textbook formula.
        for h in 0..0x10000u32 {
            let exp = (h >> 10) & 0x1F;
            if exp == 31 {
                continue;
            }
            let x = half_to_f32(h);
            let m = (h & 0x3FF) as f64;
            let mag = if exp == 0 { m * 2f64.powi(-24) } else { (1.0 + m / 1024.0) * 2f64.powi(exp as i32 - 15) };
            let expect = if h & 0x8000 != 0 { -mag } else { mag };
            assert_eq!(x as f64, expect, "{h:#x}");
            assert_eq!(half_from_f32(x), h, "{h:#x}");
        }
        assert_eq!(half_from_f32(1.0e6), 0x7C00);
        assert_eq!(half_from_f32(-1.0e6), 0xFC00);
        assert!(half_to_f32(half_from_f32(f32::NAN)).is_nan());
        // Ties to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
        assert_eq!(half_from_f32(1.0 + 2f32.powi(-11)), 0x3C00);
        assert_eq!(half_from_f32(1.0 + 3.0 * 2f32.powi(-11)), 0x3C02);
        // Error bound on [0, 1]: half an ulp, at most 2^-12.
        for i in 0..=10_000 {
            let x = i as f32 / 10_000.0;
            assert!((half_to_f32(half_from_f32(x)) - x).abs() <= 2f32.powi(-12));
        }
    }

    #[test]
    fn packed_sh_round_trip_error_is_bounded() {
        // Band 0 within the 10-bit float's relative step; band 1 within a UNORM10
        // step of the ratio, scaled back by sqrt(3) c0.
        let mut seed = 1u32;
        let mut rnd = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32
        };
        for _ in 0..10_000 {
            let mut sh = ShRgb::default();
            for ch in 0..3 {
                let c0 = rnd() * 50.0 + 1e-3;
                sh.c[0][ch] = c0;
                for k in 1..4 {
                    sh.c[k][ch] = (rnd() * 2.0 - 1.0) * BAND1_LIMIT * c0 / 1.8;
                }
            }
            let back = PackedSh::pack(&sh).unpack();
            for ch in 0..3 {
                let c0 = sh.c[0][ch];
                assert!((back.c[0][ch] - c0).abs() <= c0 * 2f32.powi(-6));
                for k in 1..4 {
                    let bound = BAND1_LIMIT * c0 * (1.0 / 1023.0 + 2f32.powi(-6) * 1.01);
                    assert!((back.c[k][ch] - sh.c[k][ch]).abs() <= bound, "{:?} vs {:?}", back.c, sh.c);
                }
            }
        }
        // Black stays black; NaN never reaches the bits.
        assert_eq!(PackedSh::pack(&ShRgb::default()).unpack(), ShRgb::default());
        let nan = ShRgb { c: [[f32::NAN; 3]; 4] };
        assert_eq!(PackedSh::pack(&nan).unpack(), ShRgb::default());
    }

    #[test]
    fn hysteresis_returns_exactly_to_its_start_after_a_light_goes_on_and_off() {
        let dark = [0.31f32, 0.47, 0.12];
        let bright = [120.0f32, 97.0, 140.0];
        let run = |toward: bool| {
            let start = pack_word(dark, WordFormat::UFloat);
            let mut word = start;
            for target in [bright, dark] {
                for _ in 0..2000 {
                    let old = unpack_word(word, WordFormat::UFloat);
                    let value: [f32; 3] = std::array::from_fn(|f| target[f] + 0.97 * (old[f] - target[f]));
                    word = if toward {
                        pack_toward(value, target, word, WordFormat::UFloat)
                    } else {
                        pack_word(value, WordFormat::UFloat)
                    };
                }
            }
            (start, word)
        };
        let (start, end) = run(true);
        assert_eq!(end, start, "rounding toward the target comes back");
        // Rounding to nearest gets stuck on the way down: the drift this prevents.
        let (start, end) = run(false);
        let (a, b) = (unpack_word(start, WordFormat::UFloat), unpack_word(end, WordFormat::UFloat));
        assert!((0..3).all(|f| b[f] > a[f] * 1.1), "nearest rounding sticks above: {a:?} -> {b:?}");
    }
}

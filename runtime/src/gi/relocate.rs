//! Probe relocation and classification: the bake moves each probe off nearby
//! surfaces and out of solid, and marks the probes that cannot help inactive.
//! Follows RTXGI's probe relocation and classification passes (NVIDIA's DDGI SDK,
//! `ProbeRelocationCS.hlsl`, `ProbeClassificationCS.hlsl`), run on the bake's
//! rays instead of the irradiance rays, so the result is a function of the
//! geometry alone.
//!
//! ```text
//!  census      of the probe's bake rays (1,024, reaching the clip distance):
//!              back faces hit, the closest back face, the closest and the
//!              farthest front face (a miss counts as a front face at the clip)
//!  relocate    more than `backface_fraction` of the hits back faces: inside
//!                geometry; move out through the back face hit first, along its
//!                normal, to half the minimum clearance beyond its plane (RTXGI
//!                moves along the ray; the normal is the shortest way out, and
//!                rays at equal angles to it cannot pick different directions
//!                on the CPU and the GPU)
//!              else a front face nearer than `min_frontface`: move toward the
//!                farthest front face (when it lies away from the closest one)
//!              else: move back toward the grid point as far as the clearance allows
//!              a move is kept only if the offset stays within `max_offset`
//!  iterate     re-trace from the new position, up to `iterations` times, until
//!              the offset stops changing
//!  classify    still more than `backface_fraction` of the hits back faces:
//!              inactive (in solid);
//!              no front face within the clip distance: inactive (it sees only
//!              the backs of surfaces, whose light is black, or nothing: dead)
//! ```
//!
//! An inactive probe is stored as a dead one: its map is the clip value, so the
//! compressor keeps nothing but its bit, it keeps no irradiance, and neither the
//! update nor sampling visits it (`field.rs`, "Dead probes are not sampled").
//!
//! # Offsets
//!
//! An offset is three signed codes of 1/1024 of the spacing, 10 bits each in one
//! word (`x | y << 10 | z << 20`, two's complement), so the CPU and the GPU
//! decode the same position bit for bit. Only probes that moved store one:
//! [`ProbeOffsets`] keeps a bit per probe with ranks and a word per moved probe,
//! about 1.5 bits per probe when few move.

use super::bits::RankedBits;
use super::octahedral::VisibilityMap;
use super::volume::ProbeGrid;
use crate::math::Vec3;
use crate::raytrace::{GpuHit, GpuRay, HIT_BACKFACE, NO_HIT};

/// How the bake places and classifies probes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeRules {
    /// Move probes off surfaces and out of solid (off: each stays where it is).
    pub relocate: bool,
    /// Mark probes in solid inactive (probes that see nothing are always dead).
    pub classify: bool,
    /// A probe whose hits are back faces more often than this is inside geometry.
    pub backface_fraction: f32,
    /// Clearance a probe keeps from front faces, as a fraction of the spacing.
    pub min_frontface: f32,
    /// Largest offset from the grid point, as a fraction of the spacing (below 0.5:
    /// a probe stays in its own cell).
    pub max_offset: f32,
    /// Relocation passes per bake at most; each re-traces the probes that moved.
    pub iterations: u32,
    /// Instance mask bits of the geometry that occludes probe visibility: the
    /// bake's rays carry this mask. Instances outside it (moving bodies marked
    /// dynamic) are lit by the irradiance update but cast no visibility.
    pub occluders: u32,
}

impl ProbeRules {
    /// Probes on their grid points, only the dead ones inactive, everything
    /// occluding: the bake as the GPU runs it.
    pub const FIXED: ProbeRules = ProbeRules {
        relocate: false,
        classify: false,
        backface_fraction: 0.25,
        min_frontface: 0.25,
        max_offset: 0.45,
        iterations: 0,
        occluders: u32::MAX,
    };
}

impl Default for ProbeRules {
    /// RTXGI's defaults, scaled by the spacing: relocation and classification on.
    fn default() -> ProbeRules {
        ProbeRules { relocate: true, classify: true, iterations: 3, ..ProbeRules::FIXED }
    }
}

/// Offset codes per spacing.
pub const OFFSET_STEPS: f32 = 1024.0;
/// Largest magnitude of an offset code (10-bit two's complement).
pub const MAX_OFFSET_CODE: i32 = 511;

/// An offset as codes of 1/1024 of the spacing, rounded to nearest.
pub fn encode_offset(offset: Vec3, spacing: f32) -> [i32; 3] {
    std::array::from_fn(|a| {
        ((offset[a] / spacing * OFFSET_STEPS).round() as i32).clamp(-MAX_OFFSET_CODE, MAX_OFFSET_CODE)
    })
}

/// The offset that codes stand for.
#[inline]
pub fn decode_offset(code: [i32; 3], spacing: f32) -> Vec3 {
    Vec3::new(code[0] as f32, code[1] as f32, code[2] as f32) * (spacing / OFFSET_STEPS)
}

/// Three codes in one word, 10 bits each.
pub fn pack_offset(code: [i32; 3]) -> u32 {
    code.iter().enumerate().fold(0, |w, (a, &c)| w | ((c as u32 & 0x3ff) << (10 * a)))
}

/// The codes of a packed word (sign-extended from 10 bits).
#[inline]
pub fn unpack_offset(word: u32) -> [i32; 3] {
    std::array::from_fn(|a| (((word >> (10 * a)) & 0x3ff) as i32) << 22 >> 22)
}

/// Each probe's offset from its grid point; only moved probes store one, and
/// nothing at all is stored while none moved.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProbeOffsets {
    /// A bit per probe, set where it moved, with ranks.
    moved: RankedBits,
    /// Per moved probe, by rank, its packed codes.
    words: Vec<u32>,
}

impl ProbeOffsets {
    /// Every probe on its grid point: nothing stored.
    pub fn none() -> ProbeOffsets {
        ProbeOffsets::default()
    }

    /// From each probe's codes (nothing stored when none moved).
    pub fn from_codes(codes: &[[i32; 3]]) -> ProbeOffsets {
        if codes.iter().all(|c| *c == [0; 3]) {
            return ProbeOffsets::none();
        }
        let moved = RankedBits::from_fn(codes.len(), |p| codes[p] != [0; 3]);
        let words = codes.iter().filter(|c| **c != [0; 3]).map(|&c| pack_offset(c)).collect();
        ProbeOffsets { moved, words }
    }

    /// Probes off their grid points.
    pub fn moved_count(&self) -> usize {
        self.words.len()
    }

    /// Probe `p`'s codes (zero when it did not move, or past the end).
    #[inline]
    pub fn code(&self, p: usize) -> [i32; 3] {
        self.moved.rank(p).map_or([0; 3], |r| unpack_offset(self.words[r as usize]))
    }

    /// The codes of probes `0..probes`.
    pub fn codes(&self, probes: usize) -> Vec<[i32; 3]> {
        (0..probes).map(|p| self.code(p)).collect()
    }

    /// Probe `p`'s offset in metres.
    #[inline]
    pub fn offset(&self, p: usize, spacing: f32) -> Vec3 {
        decode_offset(self.code(p), spacing)
    }

    /// The mask words, ranks and packed codes, as the GPU reads them.
    pub fn parts(&self) -> (&[u64], &[u32], &[u32]) {
        let (words, rank) = self.moved.words();
        (words, rank, &self.words)
    }

    /// Bytes stored: the mask with its ranks and 4 per moved probe.
    pub fn bytes(&self) -> usize {
        self.moved.bytes() + self.words.len() * 4
    }
}

/// What a probe's bake rays found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RayCensus {
    pub rays: u32,
    pub backfaces: u32,
    /// Of the back face hit first (the smallest ray distance), if any: the
    /// probe's distance to its plane and its normal (pointing out of the solid).
    pub closest_back: Option<(f32, Vec3)>,
    /// Of the closest front face (a miss counts as one at the ray's end).
    pub closest_front: (f32, Vec3),
    /// Of the farthest front face (or miss).
    pub farthest_front: (f32, Vec3),
    /// Rays that hit a front face.
    pub fronts: u32,
}

impl RayCensus {
    /// The census of one probe's rays and their hits. Ties keep the first ray, so
    /// the result is a function of the ray order alone.
    pub fn of(rays: &[GpuRay], hits: &[GpuHit]) -> RayCensus {
        let mut c = RayCensus {
            rays: rays.len() as u32,
            backfaces: 0,
            closest_back: None,
            closest_front: (f32::INFINITY, Vec3::ZERO),
            farthest_front: (f32::NEG_INFINITY, Vec3::ZERO),
            fronts: 0,
        };
        let mut closest_back_t = f32::INFINITY;
        for (ray, hit) in rays.iter().zip(hits) {
            let dir = Vec3::from(ray.dir);
            c.fronts += u32::from(hit.instance != NO_HIT && hit.flags & HIT_BACKFACE == 0);
            if hit.instance != NO_HIT && hit.flags & HIT_BACKFACE != 0 {
                c.backfaces += 1;
                if hit.t < closest_back_t {
                    closest_back_t = hit.t;
                    let normal = Vec3::from(hit.normal);
                    c.closest_back = Some((hit.t * dir.dot(normal).max(0.0), normal));
                }
                continue;
            }
            let t = if hit.instance == NO_HIT { ray.t_max } else { hit.t };
            if t < c.closest_front.0 {
                c.closest_front = (t, dir);
            }
            if t > c.farthest_front.0 {
                c.farthest_front = (t, dir);
            }
        }
        c
    }

    /// More than the rules' fraction of the hits are back faces. Of the hits, not
    /// of the rays as in RTXGI: the bake's rays end at the clip distance, so from
    /// inside rock most of them miss, and the few that leave through a crack in a
    /// mesh must not make a probe behind a wall look like one in the open.
    pub fn in_solid(&self, rules: &ProbeRules) -> bool {
        self.backfaces > 0 && self.backfaces as f32 > rules.backface_fraction * (self.backfaces + self.fronts) as f32
    }

    /// The probe cannot help a sample: it is in solid, or sees no front face
    /// within reach (only the backs of surfaces, whose light is black, or nothing).
    pub fn inactive(&self, rules: &ProbeRules) -> bool {
        self.in_solid(rules) || self.fronts == 0
    }
}

/// The next offset of a probe now at `offset` whose rays found `census` (see the
/// module docs).
pub fn relocate(census: &RayCensus, offset: Vec3, spacing: f32, rules: &ProbeRules) -> Vec3 {
    let clearance = rules.min_frontface * spacing;
    let (front_t, front_dir) = census.closest_front;
    let full = match census.closest_back {
        Some((t, dir)) if census.in_solid(rules) => offset + dir * (t + clearance * 0.5),
        _ if front_t < clearance => {
            let (far_t, far_dir) = census.farthest_front;
            if front_dir.dot(far_dir) <= 0.0 {
                offset + far_dir * far_t.min(clearance)
            } else {
                offset
            }
        }
        _ => {
            let back = (front_t - clearance).min(offset.length());
            offset - offset.normalize_or_zero() * back
        }
    };
    let limit = rules.max_offset * spacing;
    if full.is_finite() && full.length_squared() < limit * limit {
        full
    } else {
        offset
    }
}

/// What the bake found for one probe.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeBake {
    /// The probe's offset codes after relocation.
    pub offset: [i32; 3],
    /// Its visibility map from there: the clip value everywhere when inactive.
    pub map: VisibilityMap,
    /// Inactive after relocation (only with `classify`): in solid, or seeing no
    /// front face.
    pub inactive: bool,
}

/// Bakes one probe at grid point `point`, starting from offset codes `start`:
/// `trace(origin)` traces the bake rays from `origin` and returns them with their
/// hits; `reduce` turns them into the map.
pub fn bake_probe(
    grid: &ProbeGrid,
    point: Vec3,
    start: [i32; 3],
    rules: &ProbeRules,
    mut trace: impl FnMut(Vec3) -> (Vec<GpuRay>, Vec<GpuHit>),
    reduce: impl Fn(&[GpuHit]) -> VisibilityMap,
) -> ProbeBake {
    let mut code = start;
    let (mut rays, mut hits) = trace(point + decode_offset(code, grid.spacing));
    if rules.relocate {
        for _ in 0..rules.iterations {
            let census = RayCensus::of(&rays, &hits);
            let next =
                encode_offset(relocate(&census, decode_offset(code, grid.spacing), grid.spacing, rules), grid.spacing);
            if next == code {
                break;
            }
            code = next;
            (rays, hits) = trace(point + decode_offset(code, grid.spacing));
        }
    }
    let inactive = rules.classify && RayCensus::of(&rays, &hits).inactive(rules);
    let map = if inactive { VisibilityMap::clipped() } else { reduce(&hits) };
    ProbeBake { offset: code, map, inactive }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_pack_and_decode_exactly() {
        for code in [[0, 0, 0], [1, -1, 511], [-511, 461, -3], [200, -200, 0]] {
            assert_eq!(unpack_offset(pack_offset(code)), code);
            let o = decode_offset(code, 0.5);
            assert_eq!(encode_offset(o, 0.5), code);
        }
        let offsets = ProbeOffsets::from_codes(&[[0; 3], [3, -4, 5], [0; 3], [-1, 0, 0]]);
        assert_eq!(offsets.moved_count(), 2);
        assert_eq!(offsets.code(1), [3, -4, 5]);
        assert_eq!(offsets.code(2), [0; 3]);
        assert_eq!(offsets.code(3), [-1, 0, 0]);
        assert_eq!(offsets.code(9), [0; 3]);
        assert_eq!(offsets.offset(1, 2.0), Vec3::new(3.0, -4.0, 5.0) * (2.0 / 1024.0));
    }

    fn census(back: Option<(f32, Vec3)>, backfaces: u32, front: (f32, Vec3), far: (f32, Vec3)) -> RayCensus {
        RayCensus {
            rays: 100,
            backfaces,
            closest_back: back,
            closest_front: front,
            farthest_front: far,
            fronts: 100 - backfaces,
        }
    }

    #[test]
    fn relocation_follows_the_three_rules_and_the_limit() {
        let rules = ProbeRules::default();
        // In solid: through the closest back face, half the clearance beyond.
        let c = census(Some((0.2, Vec3::X)), 60, (1.0, Vec3::Y), (1.7, Vec3::Z));
        let o = relocate(&c, Vec3::ZERO, 1.0, &rules);
        assert!((o - Vec3::new(0.325, 0.0, 0.0)).length() < 1e-6, "{o}");
        // A back face too far to leave within the limit: stays.
        let c = census(Some((0.4, Vec3::X)), 60, (1.0, Vec3::Y), (1.7, Vec3::Z));
        assert_eq!(relocate(&c, Vec3::ZERO, 1.0, &rules), Vec3::ZERO);
        // Too close to a front face: toward the farthest one, opposite.
        let c = census(None, 0, (0.1, Vec3::NEG_Y), (1.7, Vec3::Y));
        assert_eq!(relocate(&c, Vec3::ZERO, 1.0, &rules), Vec3::new(0.0, 0.25, 0.0));
        // ... not when the farthest lies the same way.
        let c = census(None, 0, (0.1, Vec3::NEG_Y), (1.7, Vec3::new(0.0, -0.6, 0.8)));
        assert_eq!(relocate(&c, Vec3::ZERO, 1.0, &rules), Vec3::ZERO);
        // Clear: back toward the grid point by the spare clearance.
        let c = census(None, 0, (0.35, Vec3::NEG_Y), (1.7, Vec3::Y));
        let o = relocate(&c, Vec3::new(0.0, 0.3, 0.0), 1.0, &rules);
        assert!((o - Vec3::new(0.0, 0.2, 0.0)).length() < 1e-6, "{o}");
    }
}

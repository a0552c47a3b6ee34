//! The capsule character controller: moves an upright capsule by a desired
//! displacement through terrain and static shapes without tunnelling, gliding along
//! what it hits, stepping up small ledges, and reporting whether it stands on ground.
//!
//! One move, top-down:
//!
//! 1. Gather everything near the capsule's path once ([`CharacterWorld::gather`]):
//!    terrain triangles (with active-edge flags, so seams do not snag) and shapes.
//! 2. Recover: if the capsule starts inside geometry (an edit, a teleport), push it
//!    out along the deepest contact normals.
//! 3. Slide: sweep the capsule along the remaining motion (time of impact against
//!    every obstacle, stopping `skin` before contact); move to the first hit; remove
//!    the part of the remaining motion that points into the hit plane; after a second
//!    plane, keep only the motion along their crease; repeat up to `max_iterations`.
//! 4. Step: when the slide was blocked sideways while grounded, try again from
//!    `step_height` higher and settle back down; keep that if it got farther and
//!    lands on walkable ground.
//! 5. Verify: the end position must not overlap anything by more than 1 mm; otherwise
//!    recover, and if that fails too, stay where the move began. A move never ends
//!    inside geometry.
//! 6. Probe the ground below: grounded when a walkable surface (normal within
//!    `max_slope` of up) lies within `ground_probe`.
//!
//! The capsule is the reference's choice: reduced to its core segment, GJK never
//! iterates towards a curved surface, and its round bottom rides over small steps.

use glam::Vec3;

use crate::collide::{collide_all, distance, for_each_proxy, time_of_impact, Proxy, Sweep, ToiState, TriangleSet};
use crate::jobs::Jobs;
use crate::math::{Aabb, Isometry};
use crate::shapes::Shape;
use crate::terrain::Terrain;

#[cfg(test)]
mod tests;

/// What a character collides with near its path.
#[derive(Debug, Default)]
pub struct Obstacles {
    pub triangles: TriangleSet,
    pub shapes: Vec<(Shape, Isometry)>,
}

impl Obstacles {
    pub fn clear(&mut self) {
        self.triangles.clear();
        self.shapes.clear();
    }
}

/// The geometry a character moves through.
pub trait CharacterWorld {
    /// Fills `out` (already cleared) with every triangle and shape that may touch
    /// `region`; calls `out.triangles.finish` when done.
    fn gather(&mut self, region: &Aabb, out: &mut Obstacles);
}

/// Voxel terrain plus a list of static shapes.
pub struct TerrainWorld<'a> {
    pub terrain: &'a mut Terrain,
    pub jobs: Jobs<'a>,
    pub shapes: &'a [(Shape, Isometry)],
}

impl CharacterWorld for TerrainWorld<'_> {
    fn gather(&mut self, region: &Aabb, out: &mut Obstacles) {
        self.terrain.query_triangles(region, self.jobs, |t| {
            out.triangles.push(t.vertices);
            true
        });
        out.triangles.finish(false);
        for (shape, xf) in self.shapes {
            if shape.aabb(xf).overlaps(region) {
                out.shapes.push((shape.clone(), *xf));
            }
        }
    }
}

/// Static shapes only (triangles among them form one mesh).
pub struct StaticWorld<'a>(pub &'a [(Shape, Isometry)]);

impl CharacterWorld for StaticWorld<'_> {
    fn gather(&mut self, region: &Aabb, out: &mut Obstacles) {
        for (shape, xf) in self.0 {
            if let Shape::Triangle(v) = shape {
                out.triangles.push(v.map(|p| xf.transform_point(p)));
            } else if shape.aabb(xf).overlaps(region) {
                out.shapes.push((shape.clone(), *xf));
            }
        }
        out.triangles.finish(true);
    }
}

/// How a character is built and moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CharacterDef {
    pub radius: f32,
    /// Length of the core segment (total height = `height + 2 radius`).
    pub height: f32,
    /// Gap kept between the capsule and what it touches.
    pub skin: f32,
    /// Cosine of the steepest walkable slope.
    pub max_slope_cos: f32,
    /// Highest ledge it steps onto.
    pub step_height: f32,
    /// How far below it looks for ground.
    pub ground_probe: f32,
    /// Slide iterations per move.
    pub max_iterations: u32,
    /// Unit up direction.
    pub up: Vec3,
}

impl Default for CharacterDef {
    fn default() -> Self {
        CharacterDef {
            radius: 0.3,
            height: 1.2,
            skin: 0.02,
            max_slope_cos: 0.707,
            step_height: 0.3,
            ground_probe: 0.06,
            max_iterations: 4,
            up: Vec3::Y,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CharacterError {
    /// A radius, height, skin or step that is not finite and positive (or zero where
    /// allowed), an up vector that is not unit, or no iterations.
    BadDef,
    /// A position or displacement that is not finite.
    NotFinite,
}

impl std::fmt::Display for CharacterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CharacterError::BadDef => "character definition: radius and skin must be positive, height, step and probe finite and non-negative, up a unit vector, iterations at least 1",
            CharacterError::NotFinite => "position or displacement is NaN or infinite",
        })
    }
}

impl std::error::Error for CharacterError {}

/// What one move did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MoveResult {
    /// The displacement actually made.
    pub moved: Vec3,
    pub grounded: bool,
    /// The last surface hit while sliding (pointing out of it), or zero.
    pub contact_normal: Vec3,
    /// The ground's normal when grounded, else zero.
    pub ground_normal: Vec3,
    /// The move began or ended overlapping geometry and was pushed out.
    pub recovered: bool,
}

/// A capsule character.
#[derive(Debug)]
pub struct Character {
    def: CharacterDef,
    position: Vec3,
    last: MoveResult,
    obstacles: Obstacles,
}

/// Penetration deeper than this counts as inside geometry.
pub const INSIDE_TOLERANCE: f32 = 1e-3;

struct Hit {
    t: f32,
    /// Out of the obstacle, towards the capsule.
    normal: Vec3,
}

impl Character {
    /// A character whose capsule centre is at `position`.
    pub fn new(def: CharacterDef, position: Vec3) -> Result<Character, CharacterError> {
        let ok = def.radius.is_finite()
            && def.radius > 0.0
            && def.skin.is_finite()
            && def.skin > 0.0
            && def.height.is_finite()
            && def.height >= 0.0
            && def.step_height.is_finite()
            && def.step_height >= 0.0
            && def.ground_probe.is_finite()
            && def.ground_probe >= 0.0
            && def.max_slope_cos.is_finite()
            && def.max_iterations >= 1
            && def.up.is_finite()
            && (def.up.length() - 1.0).abs() < 1e-3;
        if !ok {
            return Err(CharacterError::BadDef);
        }
        if !position.is_finite() {
            return Err(CharacterError::NotFinite);
        }
        let last = MoveResult {
            moved: Vec3::ZERO,
            grounded: false,
            contact_normal: Vec3::ZERO,
            ground_normal: Vec3::ZERO,
            recovered: false,
        };
        Ok(Character { def, position, last, obstacles: Obstacles::default() })
    }

    pub fn def(&self) -> &CharacterDef {
        &self.def
    }

    /// The capsule centre.
    pub fn position(&self) -> Vec3 {
        self.position
    }

    /// Teleports (no collision); the next move recovers if this lands inside geometry.
    pub fn set_position(&mut self, position: Vec3) -> Result<(), CharacterError> {
        if !position.is_finite() {
            return Err(CharacterError::NotFinite);
        }
        self.position = position;
        Ok(())
    }

    pub fn last_move(&self) -> &MoveResult {
        &self.last
    }

    pub fn is_grounded(&self) -> bool {
        self.last.grounded
    }

    /// The capsule as a shape centred on the origin.
    pub fn shape(&self) -> Shape {
        let h = self.def.up * (self.def.height * 0.5);
        Shape::Capsule { a: -h, b: h, radius: self.def.radius }
    }

    /// Moves by `displacement` as far as the world allows (see the module note).
    pub fn move_by(
        &mut self,
        displacement: Vec3,
        world: &mut dyn CharacterWorld,
    ) -> Result<MoveResult, CharacterError> {
        if !displacement.is_finite() {
            return Err(CharacterError::NotFinite);
        }
        let def = self.def;
        let start = self.position;
        let shape = self.shape();
        let region = shape
            .aabb(&Isometry::from_translation(start))
            .union(&shape.aabb(&Isometry::from_translation(start + displacement)))
            .expanded(def.step_height + def.ground_probe + def.skin + 0.05);
        self.obstacles.clear();
        world.gather(&region, &mut self.obstacles);
        let mover = Mover { def, shape: &shape, obstacles: &self.obstacles };

        let mut recovered = false;
        let mut base = start;
        if mover.overlaps(base) {
            base = mover.recover(base);
            recovered = true;
        }
        let (mut end, mut contact_normal) = mover.slide(base, displacement);
        // Step up when blocked sideways while standing on ground.
        let up = def.up;
        let horizontal = displacement - up * up.dot(displacement);
        let wanted = horizontal.length();
        if def.step_height > 0.0 && self.last.grounded && wanted > 1e-5 {
            let dir = horizontal / wanted;
            let progress = (end - base).dot(dir);
            if progress < wanted * 0.9 {
                let (raised, _) = mover.slide(base, up * def.step_height);
                let (forward, n_forward) = mover.slide(raised, horizontal);
                let (settled, _) = mover.slide(forward, -up * (def.step_height + def.ground_probe));
                let landed = mover.ground(settled).is_some();
                if landed && (settled - base).dot(dir) > progress + 1e-4 {
                    end = settled;
                    contact_normal = n_forward;
                }
            }
        }
        if mover.overlaps(end) {
            end = mover.recover(end);
            recovered = true;
            if mover.overlaps(end) {
                end = if mover.overlaps(base) { start } else { base };
            }
        }
        let ground = mover.ground(end);
        self.position = end;
        self.last = MoveResult {
            moved: end - start,
            grounded: ground.is_some(),
            contact_normal,
            ground_normal: ground.unwrap_or(Vec3::ZERO),
            recovered,
        };
        Ok(self.last)
    }
}

/// One move's view of the obstacles.
struct Mover<'a> {
    def: CharacterDef,
    shape: &'a Shape,
    obstacles: &'a Obstacles,
}

impl Mover<'_> {
    fn core(&self) -> [Vec3; 2] {
        let h = self.def.up * (self.def.height * 0.5);
        [-h, h]
    }

    /// The first obstacle the capsule at `pos` meets moving by `motion`, stopping
    /// `skin` short. Obstacles already within the skin count only when the motion
    /// goes into them.
    fn sweep(&self, pos: Vec3, motion: Vec3) -> Option<Hit> {
        let core = self.core();
        let capsule = Proxy { points: &core, radius: self.def.radius };
        let sweep = Sweep::translation(Isometry::from_translation(pos), motion);
        let mut best: Option<Hit> = None;
        let consider = |other: &Proxy, xf: &Isometry, best: &mut Option<Hit>| {
            let limit = best.as_ref().map_or(1.0, |h| h.t);
            let toi =
                time_of_impact(&capsule, &sweep, other, &Sweep::fixed(*xf), limit, self.def.skin, self.def.skin * 0.25);
            let normal = match toi.state {
                ToiState::Hit if toi.normal != Vec3::ZERO => -toi.normal,
                // Cores met mid-sweep (rounding): block the motion head-on.
                ToiState::Hit => -motion.normalize_or_zero(),
                // Already inside at the start: recovery's job, not the sweep's.
                _ => return,
            };
            if toi.t <= limit && normal.dot(motion) < 0.0 && best.as_ref().is_none_or(|h| toi.t < h.t) {
                *best = Some(Hit { t: toi.t, normal });
            }
        };
        let tris = &self.obstacles.triangles;
        for i in 0..tris.len() {
            let v = tris.triangle(i);
            let mut candidate = None;
            consider(&Proxy { points: &v, radius: 0.0 }, &Isometry::IDENTITY, &mut candidate);
            let Some(mut hit) = candidate else { continue };
            if best.as_ref().is_some_and(|b| b.t <= hit.t) {
                continue;
            }
            // A seam (inactive edge or vertex) reports the face normal, not the tilted
            // direction to the seam; motion along the face then does not hit at all.
            let at = Isometry::from_translation(pos + motion * hit.t);
            let d = distance(&capsule, &at, &Proxy { points: &v, radius: 0.0 }, &Isometry::IDENTITY);
            if let Some(face) = tris.seam_normal(i, d.point_b) {
                let face = if face.dot(hit.normal) < 0.0 { -face } else { face };
                if face.dot(motion) >= 0.0 {
                    continue;
                }
                hit.normal = face;
            }
            best = Some(hit);
        }
        for (shape, xf) in &self.obstacles.shapes {
            for_each_proxy(shape, xf, &mut |p, at| consider(p, at, &mut best));
        }
        best
    }

    /// Moves from `pos` by `motion`, gliding along hit planes. Returns the end and the
    /// last hit normal (zero when nothing was hit).
    fn slide(&self, pos: Vec3, motion: Vec3) -> (Vec3, Vec3) {
        let mut pos = pos;
        let mut remaining = motion;
        let mut planes: [Vec3; 2] = [Vec3::ZERO; 2];
        let mut plane_count = 0;
        let mut last_normal = Vec3::ZERO;
        for _ in 0..self.def.max_iterations {
            if remaining.length_squared() < 1e-12 {
                break;
            }
            let Some(hit) = self.sweep(pos, remaining) else {
                pos += remaining;
                break;
            };
            pos += remaining * hit.t;
            last_normal = hit.normal;
            remaining *= 1.0 - hit.t;
            // Glide: drop the part going into the plane.
            remaining -= hit.normal * remaining.dot(hit.normal).min(0.0);
            if plane_count == 2 {
                planes[0] = planes[1];
                plane_count = 1;
            }
            planes[plane_count] = hit.normal;
            plane_count += 1;
            if plane_count == 2 && remaining.dot(planes[0]) < 0.0 {
                // Two planes: only their crease is free.
                let crease = planes[0].cross(planes[1]);
                let len2 = crease.length_squared();
                remaining = if len2 > 1e-8 { crease * (remaining.dot(crease) / len2) } else { Vec3::ZERO };
            }
        }
        (pos, last_normal)
    }

    /// Contacts of the capsule at `pos` with separation below `margin`, deepest first
    /// is not needed: calls `visit(normal from capsule to obstacle, separation)`.
    fn contacts(&self, pos: Vec3, margin: f32, visit: &mut dyn FnMut(Vec3, f32)) {
        let xf = Isometry::from_translation(pos);
        self.obstacles.triangles.collide(self.shape, &xf, margin, &mut |_, m| {
            visit(m.normal, m.min_separation());
        });
        for (shape, sxf) in &self.obstacles.shapes {
            collide_all(self.shape, &xf, shape, sxf, margin, &mut |_, _, m| visit(m.normal, m.min_separation()));
        }
    }

    /// Whether the capsule at `pos` sinks deeper than [`INSIDE_TOLERANCE`] into any
    /// obstacle, triangles seen from either side.
    fn overlaps(&self, pos: Vec3) -> bool {
        let core = self.core();
        let capsule = Proxy { points: &core, radius: self.def.radius };
        let at = Isometry::from_translation(pos);
        let inside = |other: &Proxy, xf: &Isometry| {
            let d = distance(&capsule, &at, other, xf);
            d.overlap || d.distance < -INSIDE_TOLERANCE
        };
        let tris = &self.obstacles.triangles;
        if (0..tris.len()).any(|i| inside(&Proxy { points: &tris.triangle(i), radius: 0.0 }, &Isometry::IDENTITY)) {
            return true;
        }
        let mut any = false;
        for (shape, xf) in &self.obstacles.shapes {
            for_each_proxy(shape, xf, &mut |p, at| any |= inside(p, at));
        }
        any
    }

    /// Pushes out of the deepest contact, a few times.
    fn recover(&self, pos: Vec3) -> Vec3 {
        let mut pos = pos;
        for _ in 0..8 {
            let mut deepest: Option<(Vec3, f32)> = None;
            self.contacts(pos, 0.0, &mut |n, s| {
                if s < 0.0 && deepest.is_none_or(|(_, d)| s < d) {
                    deepest = Some((n, s));
                }
            });
            let Some((n, s)) = deepest else { break };
            pos -= n * (-s + self.def.skin * 0.5);
        }
        pos
    }

    /// The walkable ground normal below `pos`, if any within the probe distance.
    fn ground(&self, pos: Vec3) -> Option<Vec3> {
        let probe = self.def.ground_probe + self.def.skin;
        let mut best: Option<Vec3> = None;
        self.contacts(pos, probe, &mut |n, _| {
            let out = -n;
            if out.dot(self.def.up) >= self.def.max_slope_cos
                && best.is_none_or(|b| out.dot(self.def.up) > b.dot(self.def.up))
            {
                best = Some(out);
            }
        });
        best
    }
}

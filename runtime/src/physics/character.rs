//! The capsule character among a world's bodies: it collides with the terrain and
//! every body its filter lets through, rides the kinematic body it stands on, and
//! pushes the dynamic bodies it walks into with a bounded force (Jolt's
//! `CharacterVirtual` pushes with its `mCharacterStrength` the same way).
//!
//! A move, in order:
//! 1. Ride: when the last move ended on ground, the body under the capsule's feet (a
//!    short overlap query there) lends its velocity at the feet: `v + ω × r` times
//!    `dt` joins the displacement.
//! 2. Move through the world: the controller's own sweep and glide (`character`),
//!    with the terrain's triangles and the bodies' shapes near the path as
//!    obstacles. Dynamic bodies block as well, so a crate is pushed, not walked
//!    through.
//! 3. Push: every dynamic body touching the capsule at its new place (within two
//!    skins) that the move's horizontal direction points into gets an impulse along
//!    it, at most `strength * dt`, and never more than brings the body up to the
//!    character's own speed. Friction decides the rest: a light crate slides, a
//!    heavy one stays.

use glam::Vec3;

use super::body::MotionType;
use super::query::{QueryFilter, QueryTarget};
use super::world::World;
use crate::character::{Character, CharacterError, CharacterWorld, MoveResult, Obstacles};
use crate::jobs::Jobs;
use crate::math::{Aabb, Isometry};
use crate::shapes::Shape;

/// How a character meets a world's bodies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CharacterBodies {
    /// What blocks the character (sensors never do).
    pub filter: QueryFilter,
    /// Largest force (N) with which it pushes a dynamic body.
    pub strength: f32,
    /// Whether it rides the kinematic (or moving dynamic) body it stands on.
    pub ride: bool,
}

impl Default for CharacterBodies {
    fn default() -> Self {
        CharacterBodies { filter: QueryFilter::default(), strength: 500.0, ride: true }
    }
}

/// Targets a character's query lists hold room for from the first move.
const CHARACTER_TARGETS: usize = 64;

/// The world as the character controller sees it: terrain triangles and body shapes
/// near the path.
struct Obstructions<'a> {
    world: &'a mut World,
    jobs: Jobs<'a>,
    filter: QueryFilter,
    targets: Vec<QueryTarget>,
}

impl CharacterWorld for Obstructions<'_> {
    fn gather(&mut self, region: &Aabb, out: &mut Obstacles) {
        if self.filter.terrain {
            if let Some(t) = self.world.terrain.as_mut() {
                t.query_triangles(region, self.jobs, |tri| {
                    out.triangles.push(tri.vertices);
                    true
                });
            }
        }
        out.triangles.finish(false);
        let bodies_only = QueryFilter { terrain: false, sensors: false, ..self.filter };
        self.world.overlap_aabb(region, &bodies_only, self.jobs, &mut self.targets);
        for target in &self.targets {
            let QueryTarget::Body { body, shape } = *target else { continue };
            if let (Ok(xf), Ok(shapes)) = (self.world.transform(body), self.world.bodies.shapes(body)) {
                let s = &shapes[shape as usize];
                out.shapes.push((s.shape.clone(), xf.mul(&s.def.pose)));
            }
        }
    }
}

impl World {
    /// Moves `character` by `displacement` over the next `dt` seconds among this
    /// world's terrain and bodies (see the module docs). Call it once per frame,
    /// before or after the step, with the frame's `dt`.
    pub fn move_character(
        &mut self,
        character: &mut Character,
        displacement: Vec3,
        dt: f32,
        settings: &CharacterBodies,
        jobs: Jobs,
    ) -> Result<MoveResult, CharacterError> {
        if !(displacement.is_finite() && dt.is_finite() && dt >= 0.0 && settings.strength.is_finite()) {
            return Err(CharacterError::NotFinite);
        }
        let def = *character.def();
        let feet = character.position() - def.up * (def.height * 0.5 + def.radius);
        let mut carried = Vec3::ZERO;
        if settings.ride && character.is_grounded() {
            let probe = Shape::Sphere { center: Vec3::ZERO, radius: def.radius * 0.5 };
            let at = Isometry::from_translation(feet - def.up * (def.ground_probe + def.skin));
            let mut under = std::mem::take(&mut self.scratch.character_targets[0]);
            // Room for a crowd at once, so the list rarely grows in play.
            under.clear();
            under.reserve(CHARACTER_TARGETS);
            let filter = QueryFilter { terrain: false, sensors: false, static_bodies: false, ..settings.filter };
            self.overlap_shape(&probe, &at, &filter, jobs, &mut under);
            // The first body under the feet, in query order: the same for any run.
            if let Some(QueryTarget::Body { body, .. }) = under.first() {
                carried = self.bodies.velocity_at(body.index, feet) * dt;
            }
            self.scratch.character_targets[0] = under;
        }
        let mut targets = std::mem::take(&mut self.scratch.character_targets[1]);
        targets.clear();
        targets.reserve(CHARACTER_TARGETS);
        let mut obstructions = Obstructions { world: self, jobs, filter: settings.filter, targets };
        let result = character.move_by(displacement + carried, &mut obstructions);
        let Obstructions { targets, .. } = obstructions;
        self.scratch.character_targets[1] = targets;
        let result = result?;
        self.push_bodies(character, displacement, dt, settings, jobs);
        Ok(result)
    }

    /// Step 3 of a move: impulses on the dynamic bodies the character walks into.
    fn push_bodies(
        &mut self,
        character: &Character,
        displacement: Vec3,
        dt: f32,
        settings: &CharacterBodies,
        jobs: Jobs,
    ) {
        let def = *character.def();
        let horizontal = displacement - def.up * def.up.dot(displacement);
        if dt <= 0.0 || settings.strength <= 0.0 || horizontal.length_squared() < 1e-12 {
            return;
        }
        let (dir, speed) = (horizontal.normalize(), horizontal.length() / dt);
        let grown = Shape::Capsule {
            a: -def.up * (def.height * 0.5),
            b: def.up * (def.height * 0.5),
            radius: def.radius + 2.0 * def.skin,
        };
        let at = Isometry::from_translation(character.position());
        let filter = QueryFilter {
            terrain: false,
            sensors: false,
            static_bodies: false,
            kinematic_bodies: false,
            ..settings.filter
        };
        let mut touching = std::mem::take(&mut self.scratch.character_targets[0]);
        self.overlap_shape(&grown, &at, &filter, jobs, &mut touching);
        touching.dedup_by_key(|t| match t {
            QueryTarget::Body { body, .. } => Some(*body),
            QueryTarget::Terrain { .. } => None,
        });
        for &target in &touching {
            let QueryTarget::Body { body, .. } = target else { continue };
            if self.bodies.motion_type(body) != Ok(MotionType::Dynamic) {
                continue;
            }
            let Ok(xf) = self.transform(body) else { continue };
            // Only bodies ahead of the character, and only up to its own speed.
            let toward = xf.translation - character.position();
            if toward.dot(dir) <= 0.0 {
                continue;
            }
            let (Ok(mass), Ok((velocity, _))) = (self.mass(body), self.velocity(body)) else { continue };
            let missing = (speed - velocity.dot(dir)).max(0.0) * mass;
            let impulse = missing.min(settings.strength * dt);
            if impulse > 0.0 {
                let _ = self.apply_impulse(body, dir * impulse, xf.translation);
            }
        }
        self.scratch.character_targets[0] = touching;
    }
}

#[cfg(test)]
#[path = "character_tests.rs"]
mod tests;

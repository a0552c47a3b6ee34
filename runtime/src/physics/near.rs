//! The narrowphase's first test: whether a broadphase pair's shapes lie too far
//! apart to touch, from a record per awake shape written at the start of the step's
//! narrowphase (its bounding sphere and box in the world), read by proxy id.
//!
//! The broadphase's boxes are fattened so that they are rarely moved (Box2D v3's
//! `b2_aabbMargin`), so in a dense pile most of its pairs are a body's neighbours a
//! little too far to touch: 8,000 cubes tumbling in a drum keep 133,000 pairs for
//! 15,000 contacts. Each pair used to read both bodies' rows and shapes (eight
//! dependent loads scattered over the bodies' columns) before its own test ruled it
//! out; two 48-byte records in proxy order do it now. A sphere test rules out
//! diagonal neighbours and the box test those side by side. Both only ever find a
//! gap the shapes have, so a pair they rule out is one whose shapes lie farther
//! apart than the margin.

use glam::Vec3;

use crate::jobs::Column;
use crate::math::{Aabb, Isometry};
use crate::shapes::Shape;
use crate::spatial::{DynamicTree, ProxyId};

/// Where each awake body's shape is this step, by proxy: its bounding sphere
/// ([`Shape::bounding_sphere`]) and its box in the world, so that a pair too far
/// apart to touch is ruled out from two records read in proxy order instead of two
/// bodies' rows and shapes (in a dense pile most broadphase pairs are such: the
/// tree's boxes are fattened). Written at the start of every narrowphase, stamped
/// with its number; a proxy without this step's stamp (a sleeping or static body's)
/// stands for its tree's fat box, which holds its shape.
#[derive(Clone, Debug, Default)]
pub(crate) struct Near {
    records: Vec<NearRecord>,
    stamp: u32,
}

/// A shape's bounding sphere and box in the world, and the narrowphase it was
/// written in.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NearRecord {
    center: Vec3,
    radius: f32,
    min: Vec3,
    stamp: u32,
    max: Vec3,
    kind: Kind,
}

/// What the counters need of a shape: whether it is a box or a hull.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Kind {
    #[default]
    Other,
    Box,
    Hull,
}

impl Kind {
    pub(crate) fn of(shape: &Shape) -> Kind {
        match shape {
            Shape::Box { .. } => Kind::Box,
            Shape::Hull(_) => Kind::Hull,
            _ => Kind::Other,
        }
    }

    /// Whether a pair of these goes through the cached separating-axis test
    /// (`collide_coherent`: boxes and hulls, one hull at least).
    pub(crate) fn coherent(a: Kind, b: Kind) -> bool {
        a != Kind::Other && b != Kind::Other && (a == Kind::Hull || b == Kind::Hull)
    }
}

impl Near {
    /// Starts a narrowphase's records for a tree of `proxies` proxy slots (grows
    /// only when the tree did): the records to write, by proxy, and their stamp.
    pub(crate) fn restart(&mut self, proxies: usize) -> (Column<NearRecord>, u32) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Once in four billion narrowphases: no stale stamp may match.
            self.records.iter_mut().for_each(|r| r.stamp = 0);
            self.stamp = 1;
        }
        if self.records.len() < proxies {
            self.records.resize(proxies, NearRecord::default());
        }
        (Column::new(&mut self.records), self.stamp)
    }

    /// The kind of `p`'s shape, if this narrowphase recorded it.
    pub(crate) fn kind(&self, p: ProxyId) -> Option<Kind> {
        self.record(p).map(|r| r.kind)
    }

    /// This narrowphase's record of `p`, if it has one.
    fn record(&self, p: ProxyId) -> Option<&NearRecord> {
        self.records.get(p.index()).filter(|r| r.stamp == self.stamp)
    }

    /// Whether the shapes of `a` and `b` surely lie farther apart than `margin`:
    /// their spheres or boxes do, with room for round-off (a box test never finds a
    /// gap that the shapes do not have). False when neither has a record.
    pub(crate) fn apart(&self, a: ProxyId, b: ProxyId, tree: &DynamicTree, margin: f32) -> bool {
        let (ra, rb) = (self.record(a), self.record(b));
        let (box_a, box_b) = match (ra, rb) {
            (None, None) => return false,
            (Some(r), None) | (None, Some(r)) => {
                let other = tree.fat_aabb(if ra.is_some() { b } else { a });
                return gap_to_box(r, &other, margin);
            }
            (Some(x), Some(y)) => (x, y),
        };
        let reach = box_a.radius + box_b.radius + margin;
        let reach = reach + 4e-5 * (reach + box_a.center.abs().max_element() + box_b.center.abs().max_element());
        // (Written so that NaN is not apart.)
        (box_b.center - box_a.center).length_squared() > reach * reach
            || boxes_apart((box_a.min, box_a.max), (box_b.min, box_b.max), margin)
    }
}

impl NearRecord {
    /// The shape's box in the world.
    pub(crate) fn bounds(&self) -> Aabb {
        Aabb::new(self.min, self.max)
    }

    /// The record stamped `stamp`.
    pub(crate) fn stamped(self, stamp: u32) -> NearRecord {
        NearRecord { stamp, ..self }
    }

    /// The record of `shape` placed at `xf`, stamped `stamp`.
    pub(crate) fn of(shape: &Shape, xf: &Isometry, stamp: u32) -> NearRecord {
        let (center, radius) = shape.bounding_sphere();
        let bounds = shape.aabb(xf);
        let kind = Kind::of(shape);
        NearRecord { center: xf.transform_point(center), radius, min: bounds.min, stamp, max: bounds.max, kind }
    }
}

/// Whether a record's sphere or box lies farther than `margin` from `other`.
fn gap_to_box(r: &NearRecord, other: &Aabb, margin: f32) -> bool {
    let nearest = r.center.clamp(other.min, other.max);
    let reach = r.radius + margin;
    let reach = reach + 4e-5 * (reach + r.center.abs().max_element() + other.max.abs().max_element());
    (nearest - r.center).length_squared() > reach * reach || boxes_apart((r.min, r.max), (other.min, other.max), margin)
}

/// Whether two boxes lie farther apart than `margin` along an axis (with round-off
/// room). (Written so that NaN is not apart.)
fn boxes_apart((min_a, max_a): (Vec3, Vec3), (min_b, max_b): (Vec3, Vec3), margin: f32) -> bool {
    let slack =
        margin + 4e-5 * (max_a.abs().max(min_a.abs()).max_element() + max_b.abs().max(min_b.abs()).max_element());
    let gap = (min_b - max_a).max(min_a - max_b);
    gap.x > slack || gap.y > slack || gap.z > slack
}

#[cfg(test)]
#[path = "near_tests.rs"]
mod tests;

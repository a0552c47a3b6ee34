//! Debug drawing: the world hands what it holds (shapes, broadphase boxes, contact
//! points, tree nodes, joints) to a [`DebugDraw`] implementation, which draws it with the
//! engine's own line renderer. Nothing is drawn by Kiln itself.

use super::body::{flags, BodyId, SetKind};
use super::joint::{JointId, JointType};
use super::world::{ContactPointInfo, World};
use crate::math::{Aabb, Isometry};
use crate::shapes::Shape;

/// Colours passed to [`DebugDraw`], as `0xRRGGBB`.
pub mod colors {
    /// Static bodies' shapes.
    pub const STATIC: u32 = 0x80_80_80;
    /// Kinematic bodies' shapes.
    pub const KINEMATIC: u32 = 0x4d_99_e6;
    /// Awake dynamic bodies' shapes.
    pub const AWAKE: u32 = 0xe6_b3_4d;
    /// Sleeping dynamic bodies' shapes.
    pub const SLEEPING: u32 = 0x59_59_99;
    /// Broadphase (fat) boxes.
    pub const AABB: u32 = 0xe6_4d_e6;
}

/// What [`World::debug_draw`] reports. Everything off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DebugDrawFlags {
    /// Every shape of every body, placed in the world.
    pub shapes: bool,
    /// Every shape's fat broadphase box.
    pub aabbs: bool,
    /// Every contact point the last step solved.
    pub contacts: bool,
    /// Every node of the broadphase's dynamic tree.
    pub tree: bool,
    /// Every joint: its two frames in the world and its settings.
    pub joints: bool,
}

impl DebugDrawFlags {
    /// Everything on.
    pub const ALL: DebugDrawFlags =
        DebugDrawFlags { shapes: true, aabbs: true, contacts: true, tree: true, joints: true };
}

/// Receives what the world draws. Every method has an empty default, so an
/// implementation overrides only what it draws.
pub trait DebugDraw {
    /// Shape `index` of `body`, placed at `transform` (the shape's own pose included).
    fn shape(&mut self, body: BodyId, index: u32, shape: &Shape, transform: &Isometry, color: u32) {
        let _ = (body, index, shape, transform, color);
    }
    /// A shape's fat broadphase box.
    fn aabb(&mut self, aabb: &Aabb, color: u32) {
        let _ = (aabb, color);
    }
    /// A contact point of the last step, with its normal (A to B) and impulse.
    fn contact(&mut self, contact: &ContactPointInfo) {
        let _ = contact;
    }
    /// A node of the dynamic tree; the root has depth 0.
    fn tree_node(&mut self, aabb: &Aabb, depth: u32, is_leaf: bool) {
        let _ = (aabb, depth, is_leaf);
    }
    /// A joint: draw its anchors (the frames' origins, apart when the joint is
    /// stretched), its axis (each frame's z) and its limits from its settings.
    fn joint(&mut self, joint: &JointDrawInfo) {
        let _ = joint;
    }
}

/// A joint as [`DebugDraw::joint`] receives it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JointDrawInfo {
    pub joint: JointId,
    pub body_a: BodyId,
    pub body_b: BodyId,
    /// The joint's frame on body A and on body B, in the world.
    pub frame_a: Isometry,
    pub frame_b: Isometry,
    /// Its kind and settings (limits, motors, springs).
    pub kind: JointType,
}

impl World {
    /// Reports what `what` asks for to `draw`: shapes and boxes of awake bodies first,
    /// then of resting ones (static and sleeping), each set in row order; then
    /// contacts in solve order; then tree nodes parents first; then joints in handle
    /// order. Deterministic for a
    /// given world state.
    pub fn debug_draw(&self, what: DebugDrawFlags, draw: &mut dyn DebugDraw) {
        let bodies = self.bodies();
        let tree = self.broadphase().tree();
        for kind in [SetKind::Awake, SetKind::Resting] {
            let set = bodies.set(kind);
            for row in 0..set.len() {
                let id = set.id[row];
                let f = set.flags[row];
                let color = if f & flags::STATIC != 0 {
                    colors::STATIC
                } else if f & flags::KINEMATIC != 0 {
                    colors::KINEMATIC
                } else if kind == SetKind::Awake {
                    colors::AWAKE
                } else {
                    colors::SLEEPING
                };
                let frame = set.transform(row);
                let shapes = bodies.shapes_of_slot(id.index);
                for (k, s) in shapes.iter().enumerate() {
                    if what.shapes {
                        draw.shape(id, k as u32, &s.shape, &frame.mul(&s.def.pose), color);
                    }
                    if what.aabbs {
                        if let Some(&proxy) = self.shape_proxies(id.index).get(k) {
                            draw.aabb(&tree.fat_aabb(proxy), colors::AABB);
                        }
                    }
                }
            }
        }
        if what.contacts {
            self.for_each_contact(|c| draw.contact(c));
        }
        if what.tree {
            tree.for_each_node(|aabb, depth, leaf| draw.tree_node(aabb, depth, leaf));
        }
        if what.joints {
            self.draw_joints(draw);
        }
    }
}

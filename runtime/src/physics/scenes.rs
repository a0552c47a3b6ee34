//! The benchmark and test scenes, described once and built for Kiln here (and for
//! rapier3d in the benches, from the same description).
//!
//! - [`pyramid`]`(20)`: 210 cubes of half-extent 0.5 in a triangle on a static ground
//!   box, for stability.
//! - [`large_pyramid`]: the Box2D v3 / Box3D benchmark, base 100 (5,050 cubes), sleep
//!   off.
//! - [`rain`]: 4,096 spheres and boxes dropped on a 256 m x 256 m voxel terrain of hills.
//! - [`tower`], [`block`], [`brick_wall`]: the long-horizon stability scenes (a
//!   column, a cube of cubes, a staggered wall), sleep off.
//! - [`hull_pile`]: convex hulls of 32 points dropped into a pile, sleep off.
//! - [`drum`]: small cubes tumbling in a kinematic drum of hull segments, sleep off.
//! - [`joint_grid`]: Box3D's joint benchmark, spheres in a grid tied by spherical
//!   joints, hanging from its first row, sleep off.
//! - [`ragdolls`]: ragdolls of 14 capsules on spherical and revolute joints with
//!   limits, dropped on voxel hills.

use glam::{IVec3, Quat, Vec3};

use super::{
    BodyDef, BodyId, JointDef, JointType, MotionType, RevoluteJoint, ShapeDef, SphericalJoint, World, WorldDef,
};
use crate::math::Isometry;
use crate::shapes::Shape;
use crate::terrain::{generate_hills, Material, Terrain};

/// A body of a scene: one shape (a drum: its segments).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneBody {
    pub motion: MotionType,
    pub position: Vec3,
    pub rotation: Quat,
    pub shape: SceneShape,
    pub velocity: Vec3,
    pub angular_velocity: Vec3,
    pub friction: f32,
    pub rolling_resistance: f32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SceneShape {
    Cuboid {
        half: Vec3,
    },
    Sphere {
        radius: f32,
    },
    /// The convex hull of `points` pseudo-random points on a sphere of `radius`
    /// ([`SceneShape::hull_points`]: the same points for every engine).
    Hull {
        radius: f32,
        points: u32,
        seed: u32,
    },
    /// A capsule along the body's y axis: a segment of `2 * half_height` rounded by
    /// `radius`.
    Capsule {
        half_height: f32,
        radius: f32,
    },
    /// A hollow cylinder about the x axis, closed at both ends: `segments` hull
    /// slabs of the wall (inner radius `radius`, `thickness` thick, `length` long)
    /// and two end discs, each its own shape ([`SceneShape::hulls`]).
    Drum {
        radius: f32,
        length: f32,
        thickness: f32,
        segments: u32,
    },
}

impl SceneShape {
    /// The body's shapes: one, or a drum's pieces.
    pub fn shapes(&self) -> Vec<Shape> {
        match *self {
            SceneShape::Cuboid { half } => vec![Shape::cuboid(half).expect("valid scene box")],
            SceneShape::Sphere { radius } => vec![Shape::sphere(Vec3::ZERO, radius).expect("valid scene sphere")],
            SceneShape::Capsule { half_height, radius } => {
                let h = Vec3::new(0.0, half_height, 0.0);
                vec![Shape::capsule(-h, h, radius).expect("valid scene capsule")]
            }
            SceneShape::Hull { .. } | SceneShape::Drum { .. } => {
                self.hulls().iter().map(|points| Shape::hull(points).expect("valid scene hull")).collect()
            }
        }
    }

    /// The point sets of a hull's or a drum's convex pieces, in the body's frame
    /// (none for boxes and spheres).
    pub fn hulls(&self) -> Vec<Vec<Vec3>> {
        let SceneShape::Drum { radius, length, thickness, segments } = *self else {
            return match self {
                SceneShape::Hull { .. } => vec![self.hull_points()],
                _ => Vec::new(),
            };
        };
        let at = |x: f32, r: f32, angle: f32| Vec3::new(x, r * angle.cos(), r * angle.sin());
        let step = std::f32::consts::TAU / segments as f32;
        let mut pieces: Vec<Vec<Vec3>> = (0..segments)
            .map(|k| {
                let angles = [k as f32 * step, (k + 1) as f32 * step];
                let mut slab = Vec::new();
                for x in [-0.5 * length, 0.5 * length] {
                    for r in [radius, radius + thickness] {
                        slab.extend(angles.map(|a| at(x, r, a)));
                    }
                }
                slab
            })
            .collect();
        for side in [-1.0f32, 1.0] {
            let x = side * 0.5 * length;
            let rim = radius + thickness;
            let disc = (0..24)
                .flat_map(|k| {
                    let a = k as f32 * std::f32::consts::TAU / 24.0;
                    [at(x, rim, a), at(x + side * thickness, rim, a)]
                })
                .collect();
            pieces.push(disc);
        }
        pieces
    }

    /// A hull's points (empty for the other shapes): uniform on the sphere, from a
    /// xorshift generator seeded by `seed`.
    pub fn hull_points(&self) -> Vec<Vec3> {
        let SceneShape::Hull { radius, points, seed } = *self else { return Vec::new() };
        let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ (seed as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        (0..points)
            .map(|_| {
                let z = 2.0 * next() - 1.0;
                let angle = std::f32::consts::TAU * next();
                let r = (1.0 - z * z).max(0.0).sqrt();
                Vec3::new(r * angle.cos(), z, r * angle.sin()) * radius
            })
            .collect()
    }
}

/// Voxel terrain of [`generate_hills`], optionally with a rim wall.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneTerrain {
    /// Voxels per side.
    pub size: i32,
    pub voxel_size: f32,
    pub seed: u32,
    /// Height (voxels above y = 0) of a 2-voxel rock wall along the border, or 0.
    pub wall: i32,
}

impl SceneTerrain {
    pub fn build(&self) -> Terrain {
        let mut terrain = Terrain::new(self.voxel_size);
        generate_hills(&mut terrain, self.size, self.seed);
        if self.wall > 0 {
            let (n, top) = (self.size - 1, self.wall);
            for (min, max) in [
                (IVec3::new(0, 0, 0), IVec3::new(n, top, 1)),
                (IVec3::new(0, 0, n - 1), IVec3::new(n, top, n)),
                (IVec3::new(0, 0, 0), IVec3::new(1, top, n)),
                (IVec3::new(n - 1, 0, 0), IVec3::new(n, top, n)),
            ] {
                terrain.fill(min, max, Material::ROCK);
            }
        }
        terrain
    }
}

/// A scene description.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    pub name: &'static str,
    pub gravity: Vec3,
    pub enable_sleep: bool,
    pub bodies: Vec<SceneBody>,
    pub terrain: Option<SceneTerrain>,
    pub joints: Vec<SceneJoint>,
}

/// How a scene joint holds its bodies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SceneJointKind {
    /// A ball and socket; optionally a swing cone (rad) about the axis and a twist
    /// range of plus or minus `twist` (rad) about it; joint friction up to
    /// `friction` (N m, 0: none).
    Spherical { cone: Option<f32>, twist: Option<f32>, friction: f32 },
    /// A hinge about the axis, optionally limited to `(lower, upper)` (rad), with
    /// joint friction up to `friction` (N m).
    Revolute { limits: Option<(f32, f32)>, friction: f32 },
}

/// A joint of a scene: bodies `a` and `b` (indices into [`Scene::bodies`]) held at
/// `anchor` with the joint's axis along `axis` (world, as the bodies stand at the
/// start); the two bodies do not collide with each other.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneJoint {
    pub a: usize,
    pub b: usize,
    pub anchor: Vec3,
    pub axis: Vec3,
    pub kind: SceneJointKind,
}

impl SceneJoint {
    /// The joint's frame in the world: at the anchor, z along the axis.
    pub fn frame(&self) -> Isometry {
        Isometry { rotation: Quat::from_rotation_arc(Vec3::Z, self.axis.normalize()), translation: self.anchor }
    }
}

impl Scene {
    /// The Kiln world of this scene, and the handles of its bodies in order. The
    /// terrain's water is off (`WorldDef::water_density` 0): rapier3d, which the
    /// benches run the same scenes on, has none.
    pub fn build(&self) -> (World, Vec<BodyId>) {
        // The scenes are the benches', run beside rapier3d, which has no water.
        let def = WorldDef {
            gravity: self.gravity,
            enable_sleep: self.enable_sleep,
            water_density: 0.0,
            ..WorldDef::default()
        };
        let mut world = World::new(def);
        if let Some(t) = &self.terrain {
            world.set_terrain(t.build());
        }
        let ids = self
            .bodies
            .iter()
            .map(|b| {
                let def = BodyDef {
                    motion: b.motion,
                    transform: Isometry::new(b.position, b.rotation),
                    linear_velocity: b.velocity,
                    angular_velocity: b.angular_velocity,
                    ..BodyDef::default()
                };
                let id = world.create_body(&def).expect("valid scene body");
                let shape =
                    ShapeDef { friction: b.friction, rolling_resistance: b.rolling_resistance, ..ShapeDef::default() };
                for piece in b.shape.shapes() {
                    world.add_shape(id, piece, shape).expect("valid scene shape");
                }
                id
            })
            .collect::<Vec<BodyId>>();
        for j in &self.joints {
            let (a, b) = (ids[j.a], ids[j.b]);
            let frame = j.frame();
            let (xa, xb) = (world.transform(a).expect("live body"), world.transform(b).expect("live body"));
            let kind = match j.kind {
                SceneJointKind::Spherical { cone, twist, friction } => JointType::Spherical(SphericalJoint {
                    enable_cone_limit: cone.is_some(),
                    cone_angle: cone.unwrap_or(std::f32::consts::FRAC_PI_2),
                    enable_twist_limit: twist.is_some(),
                    lower_twist: -twist.unwrap_or(0.0),
                    upper_twist: twist.unwrap_or(0.0),
                    enable_motor: friction > 0.0,
                    max_motor_torque: friction,
                    ..SphericalJoint::default()
                }),
                SceneJointKind::Revolute { limits, friction } => JointType::Revolute(RevoluteJoint {
                    enable_limit: limits.is_some(),
                    lower: limits.map_or(0.0, |l| l.0),
                    upper: limits.map_or(0.0, |l| l.1),
                    enable_motor: friction > 0.0,
                    max_motor_torque: friction,
                    ..RevoluteJoint::default()
                }),
            };
            let def =
                JointDef { frame_a: xa.inv_mul(&frame), frame_b: xb.inv_mul(&frame), ..JointDef::new(a, b, kind) };
            world.create_joint(&def).expect("valid scene joint");
        }
        (world, ids)
    }

    /// Dynamic bodies.
    pub fn dynamic_count(&self) -> usize {
        self.bodies.iter().filter(|b| b.motion == MotionType::Dynamic).count()
    }
}

fn body(motion: MotionType, position: Vec3, shape: SceneShape) -> SceneBody {
    SceneBody {
        motion,
        position,
        rotation: Quat::IDENTITY,
        shape,
        velocity: Vec3::ZERO,
        angular_velocity: Vec3::ZERO,
        friction: 0.6,
        rolling_resistance: 0.0,
    }
}

/// A triangle of `base * (base + 1) / 2` unit cubes standing on a static ground box
/// whose top is `y = 0`, in the xy-plane (Box2D's benchmark layout: no gaps).
pub fn pyramid(base: usize) -> Scene {
    let h = 0.5;
    let mut bodies = vec![body(
        MotionType::Static,
        Vec3::new(0.0, -1.0, 0.0),
        SceneShape::Cuboid { half: Vec3::new(base as f32 + 10.0, 1.0, 10.0) },
    )];
    for i in 0..base {
        let y = (2.0 * i as f32 + 1.0) * h;
        for j in i..base {
            let x = (i as f32 + 1.0) * h + 2.0 * (j - i) as f32 * h - h * base as f32;
            bodies.push(body(MotionType::Dynamic, Vec3::new(x, y, 0.0), SceneShape::Cuboid { half: Vec3::splat(h) }));
        }
    }
    Scene {
        name: "pyramid",
        gravity: Vec3::new(0.0, -10.0, 0.0),
        enable_sleep: true,
        bodies,
        terrain: None,
        joints: Vec::new(),
    }
}

/// The Box3D benchmark pyramid: base 100, 5,050 cubes, sleep off.
pub fn large_pyramid() -> Scene {
    Scene { name: "large_pyramid", enable_sleep: false, ..pyramid(100) }
}

/// A static ground box whose top is `y = 0`, `half` wide in x and z.
fn ground(half: f32) -> SceneBody {
    body(MotionType::Static, Vec3::new(0.0, -1.0, 0.0), SceneShape::Cuboid { half: Vec3::new(half, 1.0, half) })
}

/// A column of `height` unit cubes, one per level, on a static ground box; sleep off.
pub fn tower(height: usize) -> Scene {
    let mut bodies = vec![ground(10.0)];
    for i in 0..height {
        let position = Vec3::new(0.0, 0.5 + i as f32, 0.0);
        bodies.push(body(MotionType::Dynamic, position, SceneShape::Cuboid { half: Vec3::splat(0.5) }));
    }
    Scene {
        name: "tower",
        gravity: Vec3::new(0.0, -10.0, 0.0),
        enable_sleep: false,
        bodies,
        terrain: None,
        joints: Vec::new(),
    }
}

/// A cube of `side`³ unit cubes, face to face, on a static ground box; sleep off.
pub fn block(side: usize) -> Scene {
    let mut bodies = vec![ground(side as f32 + 10.0)];
    let corner = -0.5 * (side as f32 - 1.0);
    for (i, j, k) in (0..side).flat_map(|i| (0..side).flat_map(move |j| (0..side).map(move |k| (i, j, k)))) {
        let position = Vec3::new(corner + k as f32, 0.5 + i as f32, corner + j as f32);
        bodies.push(body(MotionType::Dynamic, position, SceneShape::Cuboid { half: Vec3::splat(0.5) }));
    }
    Scene {
        name: "block",
        gravity: Vec3::new(0.0, -10.0, 0.0),
        enable_sleep: false,
        bodies,
        terrain: None,
        joints: Vec::new(),
    }
}

/// A wall of `rows` courses of bricks (1 m x 0.5 m x 0.5 m), each course shifted by
/// half a brick from the one below: `per_row` bricks in the even courses, one fewer
/// in the odd ones, so that the wall's ends are plumb. On a static ground box; sleep
/// off.
pub fn brick_wall(rows: usize, per_row: usize) -> Scene {
    let mut bodies = vec![ground(per_row as f32 + 10.0)];
    let half = Vec3::new(0.5, 0.25, 0.25);
    for row in 0..rows {
        let (shift, count) = if row % 2 == 0 { (0.0, per_row) } else { (0.5, per_row - 1) };
        for i in 0..count {
            let position = Vec3::new(i as f32 + shift - 0.5 * per_row as f32, 0.25 + 0.5 * row as f32, 0.0);
            bodies.push(body(MotionType::Dynamic, position, SceneShape::Cuboid { half }));
        }
    }
    Scene {
        name: "brick_wall",
        gravity: Vec3::new(0.0, -10.0, 0.0),
        enable_sleep: false,
        bodies,
        terrain: None,
        joints: Vec::new(),
    }
}

/// `side` x `side` x `layers` convex hulls (each of 32 points on a sphere of radius
/// 2, every one different) in a grid 4.5 m apart, dropped onto a static ground box
/// inside four static walls as high as the tower (rounded hulls roll, and the
/// collapse throws some far: without the pen, the pile spreads past any ground's
/// edge); sleep off. `hull_pile(8, 80)`: 5,120 hulls, a
/// tower 360 m high that collapses into a pile.
pub fn hull_pile(side: usize, layers: usize) -> Scene {
    let spacing = 4.5;
    let half = 0.5 * spacing * side as f32 + 20.0;
    let mut bodies = vec![ground(half + 1.0)];
    // Walls as high as the tower: lower ones (40 m) let the collapse throw a hull or
    // two over them in both engines, to fall forever past the ground's edge.
    let high = 0.5 * spacing * layers as f32 + 10.0;
    for (x, z, wall) in [
        (half, 0.0, Vec3::new(0.5, high, half)),
        (-half, 0.0, Vec3::new(0.5, high, half)),
        (0.0, half, Vec3::new(half, high, 0.5)),
        (0.0, -half, Vec3::new(half, high, 0.5)),
    ] {
        bodies.push(body(MotionType::Static, Vec3::new(x, high, z), SceneShape::Cuboid { half: wall }));
    }
    let corner = -0.5 * spacing * (side as f32 - 1.0);
    for layer in 0..layers {
        for i in 0..side * side {
            let position = Vec3::new(
                corner + spacing * (i % side) as f32,
                2.5 + spacing * layer as f32,
                corner + spacing * (i / side) as f32,
            );
            let seed = (layer * side * side + i) as u32;
            bodies.push(body(MotionType::Dynamic, position, SceneShape::Hull { radius: 2.0, points: 32, seed }));
        }
    }
    Scene {
        name: "hull_pile",
        gravity: Vec3::new(0.0, -10.0, 0.0),
        enable_sleep: false,
        bodies,
        terrain: None,
        joints: Vec::new(),
    }
}

/// `count` cubes of half-extent 0.2 tumbling in a kinematic drum (inner radius 6 m,
/// 15 m long, 40 hull segments and two end discs) turning at 25°/s about its axis
/// (x), filled from the bottom in a grid 0.5 m apart; sleep off. The Box3D-style
/// "drum" test of a narrowphase against many hull–box pairs and of a continuous
/// stage where nothing is fast.
pub fn drum(count: usize) -> Scene {
    let (radius, length) = (6.0f32, 15.0f32);
    let mut drum = body(
        MotionType::Kinematic,
        Vec3::new(0.0, radius + 1.0, 0.0),
        SceneShape::Drum { radius, length, thickness: 0.5, segments: 40 },
    );
    drum.angular_velocity = Vec3::new(25f32.to_radians(), 0.0, 0.0);
    let mut bodies = vec![drum];
    let spacing = 0.5;
    let inside = radius - 0.5;
    let reach = (inside / spacing) as i32;
    let mut cells = Vec::new();
    for iy in -reach..=reach {
        for iz in -reach..=reach {
            let (y, z) = (iy as f32 * spacing, iz as f32 * spacing);
            if y * y + z * z > inside * inside {
                continue;
            }
            let along = ((0.5 * length - 0.6) / spacing) as i32;
            for ix in -along..=along {
                cells.push(Vec3::new(ix as f32 * spacing, y, z));
            }
        }
    }
    // Lowest first (the grid's own order breaks ties).
    cells.sort_by(|a, b| a.y.total_cmp(&b.y));
    for cell in cells.into_iter().take(count) {
        let position = cell + Vec3::new(0.0, radius + 1.0, 0.0);
        bodies.push(body(MotionType::Dynamic, position, SceneShape::Cuboid { half: Vec3::splat(0.2) }));
    }
    Scene {
        name: "drum",
        gravity: Vec3::new(0.0, -10.0, 0.0),
        enable_sleep: false,
        bodies,
        terrain: None,
        joints: Vec::new(),
    }
}

/// `count` bodies (alternating spheres of radius 0.5 and cubes of half-extent 0.5) in
/// a jittered grid 35 to 50 m up over a 256 m hills terrain (surface at 4..28 m)
/// walled in up to 40 m.
pub fn rain(count: usize) -> Scene {
    rain_over("rain", 256, count)
}

/// [`rain`] with every cube a convex hull of 32 points on a sphere of radius 0.6
/// (each its own): hulls on the terrain's triangles.
pub fn hull_rain(count: usize) -> Scene {
    let mut scene = rain(count);
    scene.name = "hull_rain";
    for (i, b) in scene.bodies.iter_mut().enumerate() {
        if matches!(b.shape, SceneShape::Cuboid { .. }) {
            b.shape = SceneShape::Hull { radius: 0.6, points: 32, seed: i as u32 };
        }
    }
    scene
}

/// [`rain`] over a `size` m terrain (at least 32): the integrated frame's demo scene.
pub fn rain_over(name: &'static str, size: i32, count: usize) -> Scene {
    let size = size.max(32);
    let side = (count as f32).sqrt().ceil() as usize;
    let spacing = (size - 16) as f32 / side as f32;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut bodies = Vec::with_capacity(count);
    for i in 0..count {
        let (gx, gz) = ((i % side) as f32, (i / side) as f32);
        let p = Vec3::new(8.0 + (gx + 0.5) * spacing, 35.0 + 15.0 * next(), 8.0 + (gz + 0.5) * spacing);
        let jitter = Vec3::new(next() - 0.5, 0.0, next() - 0.5) * (spacing * 0.5);
        let shape =
            if i % 2 == 0 { SceneShape::Sphere { radius: 0.5 } } else { SceneShape::Cuboid { half: Vec3::splat(0.5) } };
        let mut b = body(MotionType::Dynamic, p + jitter, shape);
        b.rotation = Quat::from_xyzw(next() - 0.5, next() - 0.5, next() - 0.5, 1.0).normalize();
        if i % 2 == 0 {
            b.rolling_resistance = 0.2;
        }
        bodies.push(b);
    }
    Scene {
        name,
        gravity: Vec3::new(0.0, -10.0, 0.0),
        enable_sleep: true,
        bodies,
        terrain: Some(SceneTerrain { size, voxel_size: 1.0, seed: 7, wall: 40 }),
        joints: Vec::new(),
    }
}

/// Box3D's joint grid: `side * side` spheres of radius 0.4, 1 m apart in the xy
/// plane, each tied to its right and lower neighbour by a spherical joint at the
/// midpoint; the top row is static (and not tied to itself: Kiln refuses a joint
/// between two static bodies). `side` 100: 10,000 spheres, 19,701 joints.
pub fn joint_grid(side: usize) -> Scene {
    let mut bodies = Vec::with_capacity(side * side);
    let mut joints = Vec::with_capacity(2 * side * side);
    let at = |i: usize, j: usize| Vec3::new(i as f32, -(j as f32), 0.0);
    for i in 0..side {
        for j in 0..side {
            let motion = if j == 0 { MotionType::Static } else { MotionType::Dynamic };
            bodies.push(body(motion, at(i, j), SceneShape::Sphere { radius: 0.4 }));
            let me = i * side + j;
            let spherical = SceneJointKind::Spherical { cone: None, twist: None, friction: 0.0 };
            if i > 0 && j > 0 {
                let left = (i - 1) * side + j;
                joints.push(SceneJoint {
                    a: left,
                    b: me,
                    anchor: at(i, j) - Vec3::X * 0.5,
                    axis: Vec3::Z,
                    kind: spherical,
                });
            }
            if j > 0 {
                let up = me - 1;
                joints.push(SceneJoint {
                    a: up,
                    b: me,
                    anchor: at(i, j) + Vec3::Y * 0.5,
                    axis: Vec3::Z,
                    kind: spherical,
                });
            }
        }
    }
    Scene {
        name: "joint_grid",
        gravity: Vec3::new(0.0, -10.0, 0.0),
        enable_sleep: false,
        bodies,
        terrain: None,
        joints,
    }
}

/// Joint friction of the ragdolls' joints (N m): without it a ragdoll's round head
/// and hands, tethered at their joints, roll on a slope and never sleep (Box3D's
/// ragdolls have joint friction too).
pub const RAGDOLL_JOINT_FRICTION: f32 = 0.2;

/// The bodies and joints of one ragdoll standing with its pelvis at `at`, appended
/// to `bodies` and `joints`: 14 capsules (pelvis, spine, chest, head; per side the
/// upper arm, forearm, hand, thigh and shin), 13 joints (spherical with cone and
/// twist limits at the waist, neck, shoulders, wrists and hips; revolute with limits
/// at the elbows and knees).
pub fn ragdoll(at: Vec3, bodies: &mut Vec<SceneBody>, joints: &mut Vec<SceneJoint>) {
    let first = bodies.len();
    let mut capsule = |from: Vec3, to: Vec3, radius: f32| {
        let (d, mid) = (to - from, (from + to) * 0.5);
        let mut b = body(MotionType::Dynamic, at + mid, SceneShape::Capsule { half_height: 0.5 * d.length(), radius });
        b.rotation = Quat::from_rotation_arc(Vec3::Y, d.normalize());
        bodies.push(b);
        bodies.len() - 1
    };
    let y = |v: f32| Vec3::new(0.0, v, 0.0);
    let pelvis = capsule(Vec3::new(-0.1, 0.0, 0.0), Vec3::new(0.1, 0.0, 0.0), 0.12);
    let spine = capsule(y(0.15), y(0.3), 0.13);
    let chest = capsule(y(0.4), y(0.5), 0.15);
    let head = capsule(y(0.75), y(0.8), 0.1);
    let friction = RAGDOLL_JOINT_FRICTION;
    let cone = |cone: f32, twist: f32| SceneJointKind::Spherical { cone: Some(cone), twist: Some(twist), friction };
    let hinge = |lower: f32, upper: f32| SceneJointKind::Revolute { limits: Some((lower, upper)), friction };
    let mut join = |a: usize, b: usize, anchor: Vec3, axis: Vec3, kind: SceneJointKind| {
        joints.push(SceneJoint { a, b, anchor: at + anchor, axis, kind });
    };
    join(pelvis, spine, y(0.08), Vec3::Y, cone(0.4, 0.3));
    join(spine, chest, y(0.35), Vec3::Y, cone(0.3, 0.3));
    join(chest, head, y(0.65), Vec3::Y, cone(0.5, 0.6));
    for side in [-1.0f32, 1.0] {
        let s = |x: f32, v: f32| Vec3::new(side * x, v, 0.0);
        let upper_arm = capsule(s(0.27, 0.55), s(0.5, 0.55), 0.06);
        let forearm = capsule(s(0.58, 0.55), s(0.78, 0.55), 0.05);
        let hand = capsule(s(0.86, 0.55), s(0.9, 0.55), 0.05);
        let thigh = capsule(s(0.12, -0.12), s(0.12, -0.45), 0.08);
        let shin = capsule(s(0.12, -0.58), s(0.12, -0.9), 0.07);
        join(chest, upper_arm, s(0.22, 0.55), Vec3::X * side, cone(1.2, 0.5));
        join(upper_arm, forearm, s(0.54, 0.55), Vec3::Y, hinge(0.0, 2.5));
        join(forearm, hand, s(0.82, 0.55), Vec3::X * side, cone(0.6, 0.3));
        join(pelvis, thigh, s(0.12, -0.05), -Vec3::Y, cone(0.8, 0.3));
        join(thigh, shin, s(0.12, -0.52), Vec3::X, hinge(-2.5, 0.0));
    }
    debug_assert_eq!(bodies.len() - first, 14);
}

/// `count` ragdolls ([`ragdoll`]) in a jittered grid 30 to 40 m up over a `size` m
/// hills terrain (surface at 4..28 m), walled in; sleep on.
pub fn ragdolls(count: usize, size: i32) -> Scene {
    let size = size.max(32);
    let side = (count as f32).sqrt().ceil() as usize;
    let spacing = (size - 16) as f32 / side as f32;
    let (mut bodies, mut joints) = (Vec::with_capacity(14 * count), Vec::with_capacity(13 * count));
    for i in 0..count {
        let (gx, gz) = ((i % side) as f32, (i / side) as f32);
        let height = 30.0 + 10.0 * ((i * 7919) % 101) as f32 / 100.0;
        ragdoll(Vec3::new(8.0 + (gx + 0.5) * spacing, height, 8.0 + (gz + 0.5) * spacing), &mut bodies, &mut joints);
    }
    Scene {
        name: "ragdolls",
        gravity: Vec3::new(0.0, -10.0, 0.0),
        enable_sleep: true,
        bodies,
        terrain: Some(SceneTerrain { size, voxel_size: 1.0, seed: 7, wall: 40 }),
        joints,
    }
}

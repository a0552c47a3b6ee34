//! A Kiln scene description built in rapier3d, for the benches that compare against
//! it: the terrain as one triangle mesh, bodies with the same shapes, impulse joints
//! (or multibody joints, rapier's reduced-coordinate articulations, where the joints
//! form trees).

use glam::Vec3;
use kiln::jobs::ThreadPool;
use kiln::physics::scenes::{Scene, SceneBody, SceneJoint, SceneJointKind, SceneShape};
use kiln::physics::MotionType;
use kiln::terrain::Terrain;
use kiln_benches::geometry_chunks;
use rapier3d::parry::shape::TriMeshFlags;
use rapier3d::prelude::{
    ColliderBuilder, GenericJoint, JointAxis, PhysicsWorld, RevoluteJointBuilder, RigidBodyBuilder,
    SphericalJointBuilder,
};

/// The terrain as one triangle mesh: every chunk mesh, vertices merged by position.
pub fn terrain_mesh(terrain: &mut Terrain) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let coords = geometry_chunks(terrain);
    terrain.set_mesh_budget(usize::MAX);
    let pool = ThreadPool::new(0);
    terrain.prepare_meshes(&coords, pool.jobs());
    let mut index = std::collections::HashMap::new();
    let (mut vertices, mut triangles) = (Vec::new(), Vec::new());
    for c in coords {
        let Some(mesh) = terrain.chunk_mesh(c) else { continue };
        for t in 0..mesh.triangle_count() as u32 {
            let tri = mesh.triangle(t).map(|v| {
                *index.entry((v + Vec3::ZERO).to_array().map(f32::to_bits)).or_insert_with(|| {
                    vertices.push(v);
                    vertices.len() as u32 - 1
                })
            });
            triangles.push(tri);
        }
    }
    (vertices, triangles)
}

/// The scene in rapier3d, its joints as impulse joints.
pub fn rapier_world(scene: &Scene) -> PhysicsWorld {
    rapier_world_with(scene, false)
}

/// Whether the scene's joints form trees (no loop), so that rapier can take each tree
/// as one multibody (a ragdoll can; a joint grid cannot).
#[allow(dead_code)] // (the world bench's; other benches share this file)
pub fn joints_form_trees(scene: &Scene) -> bool {
    let mut parent: Vec<usize> = (0..scene.bodies.len()).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    scene.joints.iter().all(|j| {
        let (ra, rb) = (find(&mut parent, j.a), find(&mut parent, j.b));
        parent[rb] = ra;
        ra != rb
    })
}

/// The scene in rapier3d; with `multibody`, its joints as multibody joints, each
/// tree of joints one reduced-coordinate articulation (the joints must form trees:
/// [`joints_form_trees`]).
pub fn rapier_world_with(scene: &Scene, multibody: bool) -> PhysicsWorld {
    let mut world = PhysicsWorld::new();
    world.gravity = scene.gravity;
    if let Some(t) = &scene.terrain {
        let (vertices, triangles) = terrain_mesh(&mut t.build());
        let collider = ColliderBuilder::trimesh_with_flags(vertices, triangles, TriMeshFlags::FIX_INTERNAL_EDGES)
            .expect("valid terrain mesh")
            .friction(0.6);
        world.insert_collider(collider, None);
    }
    let mut handles = Vec::with_capacity(scene.bodies.len());
    for b in &scene.bodies {
        let body = match b.motion {
            MotionType::Static => RigidBodyBuilder::fixed(),
            MotionType::Kinematic => RigidBodyBuilder::kinematic_velocity_based(),
            MotionType::Dynamic => RigidBodyBuilder::dynamic(),
        }
        .pose(rapier3d::math::Pose::from_parts(b.position, b.rotation))
        .linvel(b.velocity)
        .angvel(b.angular_velocity)
        .can_sleep(scene.enable_sleep);
        let colliders = match b.shape {
            SceneShape::Cuboid { half } => vec![ColliderBuilder::cuboid(half.x, half.y, half.z)],
            SceneShape::Sphere { radius } => vec![ColliderBuilder::ball(radius)],
            SceneShape::Capsule { half_height, radius } => vec![ColliderBuilder::capsule_y(half_height, radius)],
            SceneShape::Hull { .. } | SceneShape::Drum { .. } => b
                .shape
                .hulls()
                .iter()
                .map(|points| ColliderBuilder::convex_hull(points).expect("a valid hull"))
                .collect(),
        };
        let handle = world.insert_body(body);
        for collider in colliders {
            world.insert_collider(collider.friction(b.friction).density(1000.0), Some(handle));
        }
        handles.push(handle);
    }
    for j in &scene.joints {
        let joint = rapier_joint(j, &scene.bodies[j.a], &scene.bodies[j.b]);
        if multibody {
            world.insert_multibody_joint(handles[j.a], handles[j.b], joint).expect("the joints form trees");
        } else {
            world.insert_impulse_joint(handles[j.a], handles[j.b], joint);
        }
    }
    world
}

/// A scene joint as rapier's impulse joint: the same anchor, its principal axis (x
/// in rapier) along the scene joint's axis, the same limits, joint friction as a
/// zero-speed motor of the same largest torque, no contact between the two bodies.
fn rapier_joint(j: &SceneJoint, a: &SceneBody, b: &SceneBody) -> GenericJoint {
    let turn = glam::Quat::from_rotation_arc(Vec3::X, j.axis.normalize());
    let local = |body: &SceneBody| {
        let inverse = body.rotation.inverse();
        rapier3d::math::Pose::from_parts(inverse * (j.anchor - body.position), inverse * turn)
    };
    let mut joint: GenericJoint = match j.kind {
        SceneJointKind::Spherical { cone, twist, friction } => {
            let mut builder = SphericalJointBuilder::new();
            if let Some(t) = twist {
                builder = builder.limits(JointAxis::AngX, [-t, t]);
            }
            if let Some(c) = cone {
                builder = builder.limits(JointAxis::AngY, [-c, c]).limits(JointAxis::AngZ, [-c, c]);
            }
            if friction > 0.0 {
                for axis in [JointAxis::AngX, JointAxis::AngY, JointAxis::AngZ] {
                    builder = builder.motor_velocity(axis, 0.0, 1.0).motor_max_force(axis, friction);
                }
            }
            builder.into()
        }
        SceneJointKind::Revolute { limits, friction } => {
            let mut builder = RevoluteJointBuilder::new(Vec3::X);
            if let Some((lower, upper)) = limits {
                builder = builder.limits([lower, upper]);
            }
            if friction > 0.0 {
                builder = builder.motor_velocity(0.0, 1.0).motor_max_force(friction);
            }
            builder.into()
        }
    };
    joint.set_local_frame1(local(a)).set_local_frame2(local(b)).set_contacts_enabled(false);
    joint
}

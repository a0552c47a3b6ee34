//! `World::restore_bytes` on arbitrary bytes, on a world of boxes, balls, hulls, a
//! compound and a hinge chain on hills with a pit dug in them, that has stepped a
//! while (the snapshot carries the dug chunks). The first byte picks
//! how the rest is used: as the whole snapshot; as patches (offset, byte) over a
//! real snapshot, its checksum left as it was; or as patches with the checksum fixed
//! up, over the full snapshot or the awake-only one, so the decoder itself meets the
//! changes. A refused snapshot leaves the world
//! as it was (the same bytes saved, the same hash); an accepted one saves to bytes
//! that restore to themselves.
#![no_main]

use std::sync::Mutex;

use kiln::jobs::ThreadPool;
use kiln::math::{IVec3, Isometry, Vec3};
use kiln::physics::{scenes, BodyDef, JointDef, JointType, RevoluteJoint, ShapeDef, World};
use kiln::shapes::Shape;
use kiln::terrain::Material;
use libfuzzer_sys::fuzz_target;

struct Fixture {
    world: World,
    good: Vec<u8>,
    awake: Vec<u8>,
}

fn save(world: &mut World) -> Vec<u8> {
    let mut bytes = vec![0u8; world.snapshot_size().unwrap()];
    let n = world.save_bytes(&mut bytes).unwrap();
    bytes.truncate(n);
    bytes
}

fn fixture() -> Fixture {
    let (mut world, ids) = scenes::rain_over("fuzz", 32, 12).build();
    let corners: Vec<Vec3> =
        (0..8).map(|i| Vec3::new((i & 1) as f32, (i >> 1 & 1) as f32, (i >> 2) as f32) - 0.5).collect();
    let hull = Shape::hull(&corners).unwrap();
    let compound =
        Shape::compound([(Isometry::IDENTITY, hull.clone()), (Isometry::from_translation(Vec3::Y), hull.clone())])
            .unwrap();
    for (k, shape) in [hull.clone(), hull, compound].into_iter().enumerate() {
        let at = Isometry::from_translation(Vec3::new(12.0 + 2.0 * k as f32, 30.0, 14.0));
        let id = world.create_body(&BodyDef { transform: at, ..BodyDef::default() }).unwrap();
        world.add_shape(id, shape, ShapeDef::default()).unwrap();
    }
    let joint = JointDef::new(ids[0], ids[1], JointType::Revolute(RevoluteJoint::default()));
    world.create_joint(&joint).unwrap();
    let pool = ThreadPool::new(0);
    for step in 0..40 {
        if step == 20 {
            world.terrain_mut().unwrap().fill(IVec3::new(12, 8, 12), IVec3::new(17, 30, 17), Material::AIR);
        }
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    let good = save(&mut world);
    let mut awake = vec![0u8; good.len()];
    let n = world.save_awake_bytes(&mut awake).unwrap();
    awake.truncate(n);
    Fixture { world, good, awake }
}

static FIXTURE: Mutex<Option<Fixture>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let mut guard = FIXTURE.lock().unwrap();
    let Fixture { world, good, awake } = guard.get_or_insert_with(fixture);
    world.restore_bytes(good).unwrap();
    let hash = world.hash();
    let Some((&mode, rest)) = data.split_first() else { return };
    let bytes = match mode % 4 {
        0 => rest.to_vec(),
        _ => {
            let mut b = if mode % 4 == 3 { awake.clone() } else { good.clone() };
            for patch in rest.chunks_exact(3) {
                let at = u16::from_le_bytes([patch[0], patch[1]]) as usize * 7 % b.len();
                b[at] = patch[2];
            }
            if mode % 4 >= 2 && b.len() >= 32 {
                let sum = kiln_checksum(&b[32..]);
                b[24..32].copy_from_slice(&sum.to_le_bytes());
            }
            b
        }
    };
    match world.restore_bytes(&bytes) {
        Ok(()) => {
            let canonical = save(world);
            world.restore_bytes(&canonical).expect("a saved snapshot restores");
            assert_eq!(save(world), canonical, "the saved form is not a fixed point");
        }
        Err(_) => {
            assert_eq!(world.hash(), hash, "a refused snapshot changed the world");
            assert!(save(world) == *good, "a refused snapshot changed the world's state");
        }
    }
});

/// The snapshot checksum (`codec::checksum`, exported for this target as
/// `kiln::physics::snapshot_checksum`).
fn kiln_checksum(bytes: &[u8]) -> u64 {
    kiln::physics::snapshot_checksum(bytes)
}

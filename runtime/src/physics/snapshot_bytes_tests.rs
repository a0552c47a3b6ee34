//! Snapshots as bytes: a world restored from them steps the same bits as the world
//! they were saved from, in place or fresh, for any worker count, terrain edits
//! rolled back with them; a rollback loop ends where the straight run does;
//! awake-only snapshots; shared shapes are written once; bad bytes are refused and
//! change nothing.

use glam::{IVec3, Vec3};

use super::snapshot_tests::{busy_world, step_print};
use super::*;
use crate::jobs::ThreadPool;
use crate::math::Isometry;
use crate::shapes::Shape;
use crate::terrain::Material;

const DT: f32 = 1.0 / 60.0;

fn save(world: &mut World) -> Vec<u8> {
    let n = world.snapshot_size().unwrap();
    let mut bytes = vec![0u8; n];
    assert_eq!(world.save_bytes(&mut bytes), Ok(n));
    bytes
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// Save at steps 100 and 300, step on to 400 recording every step; restore each
/// and step to 400 again: every step equal, at 1, 2 and 8 workers, and equal in a
/// fresh world (no bodies, the same terrain) restored from the step-100 bytes. A
/// restored world saves exactly the bytes it was restored from, and the bytes at a
/// step are the same for every worker count.
#[test]
fn a_world_restored_from_bytes_steps_the_same_bits_for_any_worker_count() {
    let mut runs = Vec::new();
    let mut first_bytes = Vec::new();
    for threads in [0, 1, 7] {
        let pool = ThreadPool::new(threads);
        let mut world = busy_world(2, 32);
        let mut prints = Vec::new();
        let mut saved = Vec::new();
        for step in 0..400 {
            if step == 100 || step == 300 {
                saved.push((step, save(&mut world), world.hash()));
            }
            world.step(DT, pool.jobs()).unwrap();
            prints.push(step_print(&world));
        }
        assert!(world.bodies().resting.len() > 10, "islands sleep by the end");
        for (from, bytes, hash) in &saved {
            world.restore_bytes(bytes).unwrap();
            assert_eq!(world.hash(), *hash, "the restore brings back the saved state");
            assert_eq!(save(&mut world), *bytes, "a restored world saves the bytes it came from");
            for (step, print) in prints.iter().enumerate().skip(*from) {
                world.step(DT, pool.jobs()).unwrap();
                assert_eq!(step_print(&world), *print, "{threads} threads, saved at {from}: step {step}");
            }
        }
        let (from, bytes, _) = &saved[0];
        let mut fresh = busy_world(0, 0);
        fresh.restore_bytes(bytes).unwrap();
        assert_eq!(save(&mut fresh), *bytes, "a fresh world saves the bytes it was restored from");
        for (step, print) in prints.iter().enumerate().skip(*from) {
            fresh.step(DT, pool.jobs()).unwrap();
            assert_eq!(step_print(&fresh), *print, "{threads} threads, a fresh world: step {step}");
        }
        runs.push(prints);
        first_bytes.push(saved.swap_remove(0).1);
    }
    assert_eq!(runs[1], runs[0], "2 workers");
    assert_eq!(runs[2], runs[0], "8 workers");
    assert!(first_bytes.iter().all(|b| *b == first_bytes[0]), "the same bytes for every worker count");
}

/// Rollback as a networked game does it: every frame saves its bytes, steps with
/// that frame's input (a push every 25 frames, a pit dug every 200), then restores
/// the bytes of 7 frames back and steps those 8 frames again with the same inputs.
/// After each of 1,000 frames the world is where the straight run is, bit for bit.
#[test]
fn a_rollback_loop_ends_where_the_straight_run_does() {
    let input = |world: &mut World, frame: usize| {
        if frame % 200 == 100 {
            let x = 8 + (frame / 200) as i32 * 4;
            world.terrain_mut().unwrap().fill(IVec3::new(x, 2, 8), IVec3::new(x + 3, 30, 24), Material::AIR);
        }
        if frame.is_multiple_of(25) {
            let ids: Vec<BodyId> = world.bodies().awake.id.to_vec();
            if let Some(&id) = ids.get(frame / 25 % ids.len().max(1)) {
                let at = world.transform(id).unwrap().translation;
                world.apply_impulse(id, Vec3::new(3.0, 40.0, -2.0), at + Vec3::X * 0.1).unwrap();
            }
        }
    };
    let pool = ThreadPool::new(1);
    let mut straight = busy_world(1, 16);
    let mut hashes = Vec::new();
    for frame in 0..1000 {
        input(&mut straight, frame);
        straight.step(1.0 / 60.0, pool.jobs()).unwrap();
        hashes.push(straight.hash());
    }
    let mut world = busy_world(1, 16);
    let mut ring: Vec<Vec<u8>> = Vec::new();
    for (frame, hash) in hashes.iter().enumerate() {
        ring.push(save(&mut world));
        input(&mut world, frame);
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        if frame >= 7 {
            // `ring` holds the snapshots of frames `frame - 7 ..= frame`: back to the
            // oldest, and forward again. The newer snapshots were saved on the first
            // pass over their frames; the second pass is the same bits, so they stand.
            let back = frame - 7;
            world.restore_bytes(&ring.remove(0)).unwrap();
            for f in back..=frame {
                input(&mut world, f);
                world.step(1.0 / 60.0, pool.jobs()).unwrap();
            }
        }
        assert_eq!(world.hash(), *hash, "frame {frame}");
    }
}

/// Five bodies share one hull: the hull table holds it once, beside the other hull
/// and the compound's hull part; the compound table holds the compound.
#[test]
fn shared_shapes_are_written_once() {
    let mut world = busy_world(0, 4);
    let bytes = save(&mut world);
    // Past the terrain's edits: each chunk's coordinates, kind and voxels, then the
    // chunks waiting for regeneration.
    let mut at = 60;
    for _ in 0..u32_at(&bytes, 56) {
        at += 13 + 512 * bytes[at + 12] as usize;
    }
    at += 4 + 12 * u32_at(&bytes, at) as usize;
    let hulls = u32_at(&bytes, at) as usize;
    assert_eq!(hulls, 3);
    at += 4;
    for _ in 0..hulls {
        at += 12 + u32_at(&bytes, at + 8) as usize;
    }
    assert_eq!(u32_at(&bytes, at), 1, "one compound");
}

/// Truncated, lengthened, corrupted, wrong-version, foreign-terrain and mid-step
/// restores are refused with their reasons and change nothing; a too-small buffer
/// is refused with the size needed. Bytes with a valid checksum over changed
/// contents decode or are refused, never panic.
#[test]
fn bad_snapshots_are_refused_and_change_nothing() {
    let pool = ThreadPool::new(0);
    let mut world = busy_world(1, 16);
    for _ in 0..60 {
        world.step(DT, pool.jobs()).unwrap();
    }
    let good = save(&mut world);
    for _ in 0..20 {
        world.step(DT, pool.jobs()).unwrap();
    }
    let now = save(&mut world);
    let unchanged = |world: &mut World, what: &str| assert!(save(world) == now, "{what}: the world changed");

    for len in [0, 7, 8, 55, 56, 57, 100, good.len() / 2, good.len() - 1] {
        let e = world.restore_bytes(&good[..len]).unwrap_err();
        let want = if len < 56 { SnapshotError::NotASnapshot } else { SnapshotError::Truncated };
        assert_eq!(e, want, "{len} bytes");
        unchanged(&mut world, "truncated");
    }
    let mut longer = good.clone();
    longer.push(0);
    assert_eq!(world.restore_bytes(&longer), Err(SnapshotError::Truncated));

    // One flipped byte anywhere: refused by the part of the header it lands in, or by
    // the checksum.
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for k in 0..400 {
        let at = if k < 64 { k } else { next(good.len()) };
        let mut bad = good.clone();
        bad[at] ^= 1 << (k % 8);
        let e = world.restore_bytes(&bad).unwrap_err();
        let fits = match at {
            0..8 => e == SnapshotError::NotASnapshot,
            8..16 => matches!(e, SnapshotError::Version { .. }),
            16..24 => e == SnapshotError::Truncated,
            _ => e == SnapshotError::Corrupt,
        };
        assert!(fits, "byte {at}: {e:?}");
    }
    unchanged(&mut world, "corrupted");
    let noise: Vec<u8> = (0..good.len()).map(|_| next(256) as u8).collect();
    assert_eq!(world.restore_bytes(&noise), Err(SnapshotError::NotASnapshot));
    let mut noisy = good[..56].to_vec();
    noisy.extend_from_slice(&noise[56..]);
    assert_eq!(world.restore_bytes(&noisy), Err(SnapshotError::Corrupt));

    let mut other = good.clone();
    other[8] = 9;
    let e = world.restore_bytes(&other).unwrap_err();
    assert_eq!(e, SnapshotError::Version { format: 9, library: library_version() });
    assert!(e.to_string().contains("format 9"));
    unchanged(&mut world, "wrong version");

    // Changed contents under a checksum that fits them: decoded or refused, no panic.
    for _ in 0..300 {
        let mut crafted = good.clone();
        let at = 56 + next(good.len() - 56);
        crafted[at] = next(256) as u8;
        let sum = crate::codec::checksum(&crafted[32..]);
        crafted[24..32].copy_from_slice(&sum.to_le_bytes());
        if world.restore_bytes(&crafted).is_err() {
            unchanged(&mut world, "crafted");
        } else {
            world.restore_bytes(&now).unwrap();
        }
    }

    // A terrain of other voxels at its base, or this one rebased since: refused.
    let mut other = busy_world(0, 0);
    let mut terrain = other.take_terrain().unwrap();
    terrain.fill(IVec3::new(2, 0, 2), IVec3::new(4, 30, 4), Material::AIR);
    other.set_terrain(terrain);
    assert_eq!(other.restore_bytes(&good), Err(SnapshotError::ForeignTerrain));
    let mut rebased = busy_world(0, 0);
    rebased.terrain_mut().unwrap().rebase();
    assert_eq!(rebased.restore_bytes(&good), Err(SnapshotError::ForeignTerrain));
    let mut bare = World::new(WorldDef::default());
    assert_eq!(bare.restore_bytes(&good), Err(SnapshotError::ForeignTerrain));
    assert_eq!(bare.bodies().len(), 0);

    let mut small = vec![0u8; good.len() / 2];
    let size = world.snapshot_size().unwrap();
    assert_eq!(world.save_bytes(&mut small), Err(SnapshotError::BufferTooSmall(size)));
    world.step_stage(StepStage::Broadphase, DT, pool.jobs()).unwrap();
    assert_eq!(world.save_bytes(&mut small), Err(SnapshotError::OutOfOrder));
    assert_eq!(world.restore_bytes(&good), Err(SnapshotError::OutOfOrder));
    for stage in &StepStage::ALL[1..] {
        world.step_stage(*stage, DT, pool.jobs()).unwrap();
    }
    world.restore_bytes(&good).unwrap();
    assert_eq!(save(&mut world), good);
}

/// The terrain is dug out under the bodies at step 150 and a rock shelf is laid at
/// step 200 just before a save (so its chunks wait for regeneration in the
/// snapshot). Restoring the snapshots of steps 100 and 200 at step 400 puts the
/// ground back as it was then (the dig fills in again), wakes nothing, and stepping
/// on with the same edits re-applied repeats every step, at 1, 2 and 8 workers; a
/// fresh world whose terrain was never dug continues the step-200 snapshot the same.
#[test]
fn rolling_back_terrain_edits_restores_the_ground() {
    let edit = |world: &mut World, step: usize| {
        let terrain = world.terrain_mut().unwrap();
        match step {
            150 => terrain.fill(IVec3::new(4, 2, 4), IVec3::new(27, 40, 27), Material::AIR),
            200 => terrain.fill(IVec3::new(6, 6, 6), IVec3::new(25, 7, 25), Material::ROCK),
            _ => 0,
        }
    };
    let mut runs = Vec::new();
    for threads in [0, 1, 7] {
        let pool = ThreadPool::new(threads);
        let mut world = busy_world(1, 24);
        let mut prints = Vec::new();
        let mut saved = Vec::new();
        let mut height = Vec::new();
        for step in 0..400 {
            edit(&mut world, step);
            if step == 100 || step == 200 {
                let bytes = save(&mut world);
                let t = world.terrain().unwrap();
                saved.push((step, bytes, t.fingerprint(), t.dirty_count(), world.awake_count()));
            }
            world.step(DT, pool.jobs()).unwrap();
            prints.push(step_print(&world));
            // The awake bodies' mean height.
            let a = &world.bodies().awake;
            height.push(a.position.iter().map(|p| p.y).sum::<f32>() / a.len().max(1) as f32);
        }
        assert!(height[199] < height[149] - 3.0, "the bodies fell into the dig: {height:?}");
        let edited = world.terrain().unwrap().edited_chunks();
        assert!(edited > 40, "the edits are journaled: {edited} chunks");
        for (from, bytes, ground, dirty, awake) in &saved {
            world.restore_bytes(bytes).unwrap();
            let t = world.terrain().unwrap();
            assert_eq!(t.fingerprint(), *ground, "saved at {from}: the ground is back");
            assert_eq!(t.dirty_count(), *dirty, "saved at {from}: the same chunks wait");
            assert_eq!(world.awake_count(), *awake, "saved at {from}: nothing woke");
            assert!(save(&mut world) == *bytes, "saved at {from}: a restored world saves the bytes it came from");
            for (step, print) in prints.iter().enumerate().skip(*from) {
                if step > *from {
                    edit(&mut world, step);
                }
                world.step(DT, pool.jobs()).unwrap();
                assert_eq!(step_print(&world), *print, "{threads} threads, saved at {from}: step {step}");
            }
        }
        let (from, bytes, ground, ..) = &saved[1];
        let mut fresh = busy_world(0, 0);
        fresh.restore_bytes(bytes).unwrap();
        assert_eq!(fresh.terrain().unwrap().fingerprint(), *ground);
        for (step, print) in prints.iter().enumerate().skip(*from) {
            if step > *from {
                edit(&mut fresh, step);
            }
            fresh.step(DT, pool.jobs()).unwrap();
            assert_eq!(step_print(&fresh), *print, "{threads} threads, a fresh world: step {step}");
        }
        runs.push(prints);
    }
    assert_eq!(runs[1], runs[0], "2 workers");
    assert_eq!(runs[2], runs[0], "8 workers");
}

fn save_awake(world: &mut World) -> Vec<u8> {
    let n = match world.save_awake_bytes(&mut []) {
        Err(SnapshotError::BufferTooSmall(n)) => n,
        other => panic!("{other:?}"),
    };
    let mut bytes = vec![0u8; n];
    assert_eq!(world.save_awake_bytes(&mut bytes), Ok(n));
    bytes
}

/// Once most islands sleep, an awake-only snapshot is under half the full one.
/// A rollback loop keeping both kinds goes back 8 frames every frame for 300 frames,
/// re-applying its inputs (every 60 frames a push that wakes a sleeping body): it
/// restores the awake-only snapshot whenever the world's resting bodies and
/// sleeping groups are those it was saved beside, the full one otherwise (the 8
/// frames after a push or an island falling asleep), and ends on the straight run's
/// state. Waking a sleeping body or moving a static one after the save makes the
/// awake-only snapshot refused, the world unchanged, while the full one restores.
#[test]
fn awake_only_snapshots_restore_while_the_sleeping_bodies_are_unchanged() {
    let pool = ThreadPool::new(1);
    let (mut world, _) = scenes::rain(400).build();
    let at = Isometry::from_translation(Vec3::new(4.0, 40.0, 4.0));
    let statue = world.create_body(&BodyDef { motion: MotionType::Static, transform: at, ..BodyDef::default() });
    let statue = statue.unwrap();
    world.add_shape(statue, Shape::cuboid(Vec3::ONE).unwrap(), ShapeDef::default()).unwrap();
    for _ in 0..1200 {
        world.step(DT, pool.jobs()).unwrap();
    }
    let (awake, resting) = (world.bodies().awake.len(), world.bodies().resting.len());
    assert!(resting > 2 * awake, "most bodies rest: {awake} awake, {resting} resting");
    let sleeper = |world: &World| {
        let b = world.bodies();
        b.resting
            .id
            .iter()
            .copied()
            .filter(|&id| b.motion_type(id) == Ok(MotionType::Dynamic))
            .min_by_key(|id| id.index)
    };
    let input = |world: &mut World, frame: usize| {
        if frame % 60 == 30 {
            let id = sleeper(world).expect("a sleeping body");
            let p = world.bodies().transform(id).unwrap().translation;
            world.apply_impulse(id, Vec3::new(0.0, 3.0, 0.0), p).unwrap();
        }
    };
    let mut straight = scenes::rain(0).build().0;
    straight.restore_bytes(&save(&mut world)).unwrap();
    for frame in 0..300 {
        input(&mut straight, frame);
        straight.step(DT, pool.jobs()).unwrap();
    }

    const BACK: usize = 8;
    let mut ring: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let (mut partial, mut fallback) = (0, 0);
    for frame in 0..300 {
        let full = save(&mut world);
        let only = save_awake(&mut world);
        assert!(only.len() * 2 < full.len(), "awake only: {} bytes of {}", only.len(), full.len());
        ring.push((full, only));
        input(&mut world, frame);
        world.step(DT, pool.jobs()).unwrap();
        if frame >= BACK {
            let from = frame + 1 - BACK;
            let (full, only) = &ring[from];
            match world.restore_bytes(only) {
                Ok(()) => partial += 1,
                Err(SnapshotError::SleepingChanged) => {
                    world.restore_bytes(full).unwrap();
                    fallback += 1;
                }
                Err(e) => panic!("frame {frame}: {e}"),
            }
            for again in from..=frame {
                input(&mut world, again);
                world.step(DT, pool.jobs()).unwrap();
            }
        }
    }
    assert_eq!(world.hash(), straight.hash(), "{partial} awake-only and {fallback} full restores");
    assert!(save(&mut world) == save(&mut straight), "the same state");
    assert!(partial > 2 * fallback && fallback >= 20, "{partial} awake-only and {fallback} full restores");

    // Wake a sleeping body, or move a static one: the awake-only snapshot is refused.
    let full = save(&mut world);
    let only = save_awake(&mut world);
    world.wake(sleeper(&world).expect("a sleeping body")).unwrap();
    let now = save(&mut world);
    assert_eq!(world.restore_bytes(&only), Err(SnapshotError::SleepingChanged));
    assert!(save(&mut world) == now, "a refused restore changed the world");
    world.restore_bytes(&full).unwrap();
    world.restore_bytes(&only).unwrap();
    let at = world.bodies().transform(statue).unwrap();
    world.set_transform(statue, &Isometry::new(at.translation + Vec3::X, at.rotation)).unwrap();
    assert_eq!(world.restore_bytes(&only), Err(SnapshotError::SleepingChanged));
    world.restore_bytes(&full).unwrap();
    assert!(save(&mut world) == full);
}

/// The solver is state: a world saved while stepping with sequential impulses and
/// switched to the soft step since comes back to sequential impulses, and steps the
/// bits it stepped after the save.
#[test]
fn the_solver_comes_back_with_the_snapshot() {
    let pool = ThreadPool::new(0);
    let mut world = busy_world(1, 8);
    world.set_solver(Solver::SEQUENTIAL_IMPULSES);
    for _ in 0..40 {
        world.step(DT, pool.jobs()).unwrap();
    }
    let bytes = save(&mut world);
    let mut prints = Vec::new();
    for _ in 0..30 {
        world.step(DT, pool.jobs()).unwrap();
        prints.push(step_print(&world));
    }
    world.set_solver(Solver::SoftStep);
    world.step(DT, pool.jobs()).unwrap();
    world.restore_bytes(&bytes).unwrap();
    assert_eq!(world.solver(), Solver::SEQUENTIAL_IMPULSES);
    for print in &prints {
        world.step(DT, pool.jobs()).unwrap();
        assert_eq!(step_print(&world), *print);
    }
}

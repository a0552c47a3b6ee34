use glam::{IVec3, Vec3};

use super::*;
use crate::jobs::ThreadPool;
use crate::spatial::tests::Rng;

/// Naive dilation: is any of the 27 voxels around `v` solid (water)?
pub(super) fn naive(terrain: &Terrain, v: IVec3) -> (bool, bool) {
    let (mut solid, mut water) = (false, false);
    for dy in -1..=1 {
        for dz in -1..=1 {
            for dx in -1..=1 {
                let m = terrain.get(v + IVec3::new(dx, dy, dz));
                solid |= m.is_solid();
                water |= m.is_water();
            }
        }
    }
    (solid, water)
}

pub(super) fn mask_bit(terrain: &Terrain, v: IVec3) -> (bool, bool) {
    let l = local_of(v);
    terrain.mask(chunk_of(v)).map_or((false, false), |m| m.bit(l.x as usize, l.y as usize, l.z as usize))
}

/// A random world in voxels `lo..=hi` (crossing negative coordinates): random voxels
/// at `density`, plus solid and water blocks big enough to make full chunks.
pub(super) fn random_world(seed: u64, lo: i32, hi: i32, density: f32) -> Terrain {
    let mut rng = Rng(seed);
    let mut t = Terrain::new(0.5);
    for _ in 0..(((hi - lo + 1).pow(3) as f32) * density) as usize {
        let v = IVec3::new(
            lo + rng.below((hi - lo + 1) as usize) as i32,
            lo + rng.below((hi - lo + 1) as usize) as i32,
            lo + rng.below((hi - lo + 1) as usize) as i32,
        );
        let m = if rng.below(4) == 0 { Material::WATER } else { Material(2 + rng.below(3) as u8) };
        t.fill(v, v, m);
    }
    t.fill(IVec3::splat(-30), IVec3::splat(-7), Material::ROCK);
    t.fill(IVec3::new(9, -30, 9), IVec3::new(40, -7, 40), Material::WATER);
    t
}

#[test]
fn masks_equal_naive_dilation_on_random_worlds() {
    let pool = ThreadPool::new(1);
    for (seed, density) in [(1, 0.002), (2, 0.05), (3, 0.4)] {
        let mut t = random_world(seed, -20, 19, density);
        t.regenerate(pool.jobs());
        assert_eq!(t.dirty_count(), 0);
        for y in -32..33 {
            for z in -32..42 {
                for x in -32..42 {
                    let v = IVec3::new(x, y, z);
                    assert_eq!(mask_bit(&t, v), naive(&t, v), "seed {seed}, voxel {v}");
                }
            }
        }
        let stats = t.stats();
        assert!(stats.full_chunks > 0 && stats.mixed_chunks > 0, "{stats:?}");
        assert_eq!(stats.mask_bytes, stats.mixed_chunks * 128);
    }
}

#[test]
fn full_and_empty_chunks_store_no_masks() {
    let pool = ThreadPool::new(0);
    let mut t = Terrain::new(1.0);
    // 3x3x3 chunks of rock: the middle chunk's neighbourhood is all rock.
    t.fill(IVec3::splat(0), IVec3::splat(23), Material::ROCK);
    t.fill(IVec3::new(100, 0, 0), IVec3::new(123, 23, 23), Material::WATER);
    t.regenerate(pool.jobs());
    assert_eq!(t.mask(IVec3::ONE), Some(&ChunkMask::FullSolid));
    assert_eq!(t.mask(IVec3::new(13, 1, 1)), Some(&ChunkMask::FullWater));
    assert!(t.mask(IVec3::splat(3)).is_some(), "voxel 23 dilates into chunk 3's corner");
    assert_eq!(t.mask(IVec3::splat(4)), None, "chunks beyond the dilation hold nothing");
    assert!(t.mask(IVec3::splat(-1)).is_some(), "the dilation reaches across the corner");
    // Submersion: a box inside the water block reports water and no solid.
    let inside = Aabb::new(Vec3::new(110.0, 10.0, 10.0), Vec3::new(111.0, 11.0, 11.0));
    assert_eq!(t.overlap(&inside), Overlap { solid: false, water: true });
    // Emptying the rock again drops every mask it made.
    t.fill(IVec3::splat(0), IVec3::splat(23), Material::AIR);
    t.regenerate(pool.jobs());
    assert!(t.mask(IVec3::ONE).is_none() && t.mask(IVec3::splat(-1)).is_none());
    assert_eq!(t.voxels().chunk_count(), 4 * 3 * 3, "only the water chunks remain stored");
}

#[test]
fn one_missing_border_voxel_makes_a_full_neighbourhood_mixed() {
    let pool = ThreadPool::new(0);
    for material in [Material::ROCK, Material::WATER] {
        let mut t = Terrain::new(1.0);
        t.fill(IVec3::splat(0), IVec3::splat(23), material);
        t.regenerate(pool.jobs());
        let full = if material.is_solid() { ChunkMask::FullSolid } else { ChunkMask::FullWater };
        assert_eq!(t.mask(IVec3::ONE), Some(&full));
        // Every voxel on the border of chunk (1, 1, 1)'s 10^3 neighbourhood (local
        // coordinates -1 and 8 reach into the 26 chunks around it).
        for y in -1..9 {
            for z in -1..9 {
                for x in -1..9 {
                    let local = IVec3::new(x, y, z);
                    if local.min_element() >= 0 && local.max_element() <= 7 {
                        continue;
                    }
                    let v = IVec3::splat(8) + local;
                    t.fill(v, v, Material::AIR);
                    t.regenerate(pool.jobs());
                    assert!(matches!(t.mask(IVec3::ONE), Some(ChunkMask::Mixed(_))), "{material:?}, hole at {local}");
                    for probe in [IVec3::splat(8), IVec3::splat(15), v.clamp(IVec3::splat(8), IVec3::splat(15))] {
                        assert_eq!(
                            mask_bit(&t, probe),
                            naive(&t, probe),
                            "{material:?}, hole at {local}, voxel {probe}"
                        );
                    }
                    t.fill(v, v, material);
                }
            }
        }
        t.regenerate(pool.jobs());
        assert_eq!(t.mask(IVec3::ONE), Some(&full));
    }
}

/// Brute force: the voxel range of the query, each voxel's naive dilation.
fn brute_overlap(t: &Terrain, aabb: &Aabb) -> Overlap {
    let Some((lo, hi)) = t.voxel_range(aabb) else { return Overlap::default() };
    let mut o = Overlap::default();
    for y in lo.y..=hi.y {
        for z in lo.z..=hi.z {
            for x in lo.x..=hi.x {
                let (s, w) = naive(t, IVec3::new(x, y, z));
                o.solid |= s;
                o.water |= w;
            }
        }
    }
    o
}

#[test]
fn queries_equal_a_per_voxel_scan_for_boxes_of_every_size() {
    let pool = ThreadPool::new(1);
    let mut t = random_world(9, -20, 19, 0.01);
    t.regenerate(pool.jobs());
    let s = t.voxel_size();
    let mut rng = Rng(4);
    let (mut hits, mut misses) = (0, 0);
    for i in 0..3000 {
        let size_voxels = [0.0, 0.3, 1.0, 2.5, 7.0, 20.0, 33.0][i % 7];
        let mut min = rng.vec3(-24.0, 24.0) * s;
        if i % 5 == 0 {
            min = (min / (8.0 * s)).round() * 8.0 * s; // on chunk boundaries
        }
        let aabb = Aabb::new(min, min + rng.vec3(0.0, size_voxels) * s);
        let want = brute_overlap(&t, &aabb);
        assert_eq!(t.overlap(&aabb), want, "box {aabb:?}");
        if want.any() {
            hits += 1;
        } else {
            misses += 1;
        }
        // The per-chunk report agrees with the summary.
        let mut merged = Overlap::default();
        t.for_each_overlap(&aabb, |_, o| {
            merged.solid |= o.solid;
            merged.water |= o.water;
            true
        });
        assert_eq!(merged, want);
    }
    assert!(hits > 300 && misses > 300, "hits {hits}, misses {misses}");
}

#[test]
fn boundary_and_negative_coordinates() {
    let pool = ThreadPool::new(0);
    let mut t = Terrain::new(1.0);
    t.fill(IVec3::splat(-1), IVec3::splat(-1), Material::ROCK);
    t.regenerate(pool.jobs());
    // The voxel at -1 dilates into chunk 0's corner voxel (0, 0, 0) and no further.
    assert_eq!(mask_bit(&t, IVec3::ZERO), (true, false));
    assert_eq!(mask_bit(&t, IVec3::new(1, 0, 0)), (false, false));
    assert_eq!(mask_bit(&t, IVec3::splat(-2)), (true, false));
    assert_eq!(mask_bit(&t, IVec3::splat(-3)), (false, false));
    // A box at x = 2.5 is 3 voxels from the geometry's mask at x = 0: the one-voxel
    // query margin reaches voxel 1 only, so it misses; at x = 1.5 it touches.
    let at = |x: f32| Aabb::new(Vec3::new(x, 0.1, 0.1), Vec3::new(x + 0.2, 0.2, 0.2));
    assert!(!t.overlap(&at(2.5)).solid);
    assert!(t.overlap(&at(1.5)).solid);
    let far = Aabb::new(Vec3::splat(-9.0), Vec3::splat(-8.5));
    assert_eq!(t.overlap(&far), brute_overlap(&t, &far));
    assert!(!t.overlap(&far).solid);
}

#[test]
fn bad_and_huge_query_boxes() {
    let pool = ThreadPool::new(0);
    let mut t = Terrain::new(1.0);
    t.fill(IVec3::splat(5), IVec3::splat(6), Material::ROCK);
    t.regenerate(pool.jobs());
    let nan = Aabb::new(Vec3::NAN, Vec3::ONE);
    assert_eq!(t.overlap(&nan), Overlap::default());
    let inverted = Aabb::new(Vec3::ONE, Vec3::ZERO);
    assert_eq!(t.overlap(&inverted), Overlap::default());
    let inf = Aabb::new(Vec3::splat(f32::NEG_INFINITY), Vec3::splat(f32::INFINITY));
    assert_eq!(t.overlap(&inf), Overlap::default(), "non-finite boxes are refused");
    let huge = Aabb::new(Vec3::splat(-1e30), Vec3::splat(1e30));
    assert!(t.overlap(&huge).solid, "a huge box walks the stored chunks");
    let mut chunks = 0;
    t.for_each_overlap(&huge, |_, _| {
        chunks += 1;
        true
    });
    assert_eq!(chunks, 1, "the 2^3 block and its dilation lie in chunk (0, 0, 0)");
}

/// `voxel_range` rounds by truncation; the library's `floor`/`ceil` in f64 (where
/// `ceil(q) - 1` is exact) are the reference, on integers, halves, values just off
/// integers, negatives, huge and clamped ones.
#[test]
fn voxel_ranges_equal_floor_and_ceil() {
    let reference = |t: &Terrain, b: &Aabb| {
        let s = t.voxel_size();
        let (lo, hi) = ((b.min - Vec3::splat(s)) / s, (b.max + Vec3::splat(s)) / s);
        let limit = f64::from(1 << 30);
        let lo = lo.as_dvec3().floor().clamp(glam::DVec3::splat(-limit), glam::DVec3::splat(limit));
        let hi = (hi.as_dvec3().ceil() - glam::DVec3::ONE).clamp(glam::DVec3::splat(-limit), glam::DVec3::splat(limit));
        (lo.as_ivec3(), hi.max(lo).as_ivec3())
    };
    let mut rng = crate::spatial::tests::Rng(77);
    let specials = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.999_999_8, -2.999_999_8, 1e-7, -1e-7, 8e6, -8e6, 3e9, -3e9];
    for voxel in [1.0, 0.5, 0.3, 2.0] {
        let t = Terrain::new(voxel);
        for i in 0..20_000 {
            let pick = |rng: &mut crate::spatial::tests::Rng| {
                if i % 3 == 0 {
                    specials[rng.below(specials.len())]
                } else {
                    rng.range(-1e3, 1e3)
                }
            };
            let a = Vec3::new(pick(&mut rng), pick(&mut rng), pick(&mut rng));
            let b = Vec3::new(pick(&mut rng), pick(&mut rng), pick(&mut rng));
            let aabb = Aabb::new(a.min(b), a.max(b));
            assert_eq!(t.voxel_range(&aabb), Some(reference(&t, &aabb)), "{aabb:?} at {voxel} m");
        }
    }
}

#[test]
fn regeneration_is_identical_for_any_worker_count() {
    let build = |threads| {
        let pool = ThreadPool::new(threads);
        let mut t = Terrain::new(1.0);
        generate_hills(&mut t, 64, 5);
        let dirty = t.regenerate(pool.jobs()).to_vec();
        let mut masks: Vec<_> = dirty.iter().map(|c| (c.to_array(), t.mask(*c).cloned())).collect();
        masks.sort_by_key(|m| m.0);
        masks
    };
    let one = build(0);
    assert_eq!(one, build(1));
    assert_eq!(one, build(7));
}

#[test]
fn generated_terrain_uses_at_most_two_bits_per_voxel() {
    let pool = ThreadPool::new(1);
    let mut t = Terrain::new(1.0);
    generate_hills(&mut t, 128, 1);
    t.regenerate(pool.jobs());
    let stats = t.stats();
    // The generated volume: 128 x 128 columns from y = -8 up to the highest chunk.
    let voxels = 128.0 * 128.0 * 48.0;
    let bits_per_voxel = stats.mask_bytes as f64 * 8.0 / voxels;
    assert!(bits_per_voxel <= 2.0, "{bits_per_voxel} bits per voxel ({stats:?})");
    assert!(stats.full_chunks > 0, "bedrock chunks are tagged full");
    // Every mask byte belongs to a chunk with geometry: 128 bytes each, nothing else.
    assert_eq!(stats.mask_bytes, 128 * stats.mixed_chunks);
    // The ray walks' surface set: chunks with surface span -1..=16 on x and z (the
    // dilation reaches one chunk past the edges) and -1..=3 on y, which touches
    // 3 x 3 x 2 regions of 16^3 chunks: 18 blocks of 512 bytes, plus map slots.
    assert!(stats.surface_bytes > 18 * 512 && stats.surface_bytes <= 18 * 512 + 1024, "{stats:?}");
    println!("generated 128^2 hills: {bits_per_voxel:.2} bits/voxel of mask data, {stats:?}");
}

#[test]
fn contacts_follow_a_moving_body() {
    let pool = ThreadPool::new(1);
    let mut t = Terrain::new(1.0);
    generate_hills(&mut t, 64, 2);
    t.regenerate(pool.jobs());
    let mut contacts = TerrainContacts::new();
    let mut rng = Rng(12);
    // 200 bodies, half of them moved per step: several query jobs, whose outputs
    // join in body order.
    let mut bodies: Vec<(u32, Aabb)> = (0..200)
        .map(|i| {
            (i, Aabb::from_center_half_extents(rng.vec3(0.0, 64.0) * Vec3::new(1.0, 0.5, 1.0), rng.vec3(0.2, 3.0)))
        })
        .collect();
    let (mut seen, mut reused) = ((0, 0, 0), 0);
    for step in 0..60 {
        // Move half the bodies each step, a third of them by a few centimetres (most
        // keep their voxel range, and their contacts without a query).
        let mut moved = Vec::new();
        for (i, (id, b)) in bodies.iter_mut().enumerate() {
            if (i + step) % 2 == 0 {
                let d = if i % 3 == 0 { rng.vec3(-0.03, 0.03) } else { rng.vec3(-1.5, 1.5) };
                *b = Aabb::new(b.min + d, b.max + d);
                moved.push((*id, *b));
            }
        }
        // Edits: the masks change at the regeneration, not before (an update between
        // the two answers from the old masks, and the next must not keep that). Every
        // body is updated then, as the world updates the bodies near an edit.
        if step % 10 == 5 {
            moved = bodies.clone();
            let at = IVec3::new(rng.below(64) as i32, rng.below(20) as i32, rng.below(64) as i32);
            let material = if step % 20 == 5 { Material::AIR } else { Material::ROCK };
            t.fill(at - IVec3::splat(6), at + IVec3::splat(6), material);
            let stale = t.mask_stamp();
            contacts.update(&t, &moved, pool.jobs());
            t.regenerate(pool.jobs());
            assert_ne!(t.mask_stamp(), stale, "new masks, new stamp");
        }
        let before = contacts.contacts().to_vec();
        contacts.update(&t, &moved, pool.jobs());
        reused += contacts.reused();
        seen.0 += contacts.added().len();
        seen.1 += contacts.kept().len();
        seen.2 += contacts.removed().len();
        // Expected: each body's contacts from a per-chunk scan of its current box.
        let mut want = Vec::new();
        for &(id, b) in &bodies {
            t.for_each_overlap(&b, |chunk, o| {
                if o.solid {
                    want.push(TerrainContact { body: id, chunk, kind: ContactKind::Solid });
                }
                if o.water {
                    want.push(TerrainContact { body: id, chunk, kind: ContactKind::Water });
                }
                true
            });
        }
        if step == 0 {
            // Bodies not yet updated have no contacts.
            want.retain(|c| moved.iter().any(|m| m.0 == c.body));
        }
        let mut got = contacts.contacts().to_vec();
        got.sort_by_key(|c| (c.body, c.chunk.to_array(), c.kind));
        want.sort_by_key(|c| (c.body, c.chunk.to_array(), c.kind));
        assert_eq!(got, want, "step {step}");
        // Events account for every change, and no pair has two contacts of a kind.
        assert_eq!(before.len() + contacts.added().len() - contacts.removed().len(), contacts.contacts().len());
        // Added and kept: the moved bodies' contacts now; removed: what they had and
        // lost. Each list in (body, chunk, kind) order.
        let of_moved = |list: &[TerrainContact]| -> Vec<TerrainContact> {
            list.iter().copied().filter(|c| moved.iter().any(|m| m.0 == c.body)).collect()
        };
        let mut now: Vec<_> = contacts.added().iter().chain(contacts.kept()).copied().collect();
        now.sort_by_key(|c| c.key());
        assert_eq!(now, of_moved(contacts.contacts()), "step {step}: added and kept");
        let lost: Vec<_> = of_moved(&before).into_iter().filter(|c| !contacts.contacts().contains(c)).collect();
        assert_eq!(contacts.removed(), &lost[..], "step {step}: removed");
        for list in [contacts.added(), contacts.kept(), contacts.removed()] {
            assert!(list.windows(2).all(|w| w[0].key() < w[1].key()), "step {step}: order");
        }
        for w in got.windows(2) {
            assert_ne!(w[0], w[1]);
        }
        lookups_agree(&contacts, 210);
    }
    assert!(seen.0 > 50 && seen.1 > 50 && seen.2 > 50, "added/kept/removed {seen:?}");
    assert!(reused > 300, "only {reused} bodies kept their contacts without a query");
    let victim =
        bodies.iter().position(|b| contacts.contacts().iter().any(|c| c.body == b.0)).expect("a body on the terrain");
    let id = bodies[victim].0;
    let had = contacts.contacts().iter().filter(|c| c.body == id).count();
    assert_eq!(contacts.remove_body(id).len(), had);
    assert!(contacts.contacts().iter().all(|c| c.body != id));
    lookups_agree(&contacts, 210);
    assert!(contacts.range_of(id).is_none() && contacts.contacts_of(id).is_empty());
    // A new body under the freed id, at the same box, is queried: it does not take
    // the removed body's (dropped) contacts as its own.
    contacts.update(&t, &[bodies[victim]], pool.jobs());
    assert_eq!((contacts.reused(), contacts.added().len()), (0, had));
    // A body left out of the updates across an edit and its regeneration is queried
    // when it comes back, though other updates saw the new masks in between.
    let (id, b) = bodies[victim];
    let (lo, hi) = t.voxel_range(&b).unwrap();
    t.fill(lo - IVec3::splat(2), hi + IVec3::splat(2), Material::AIR);
    t.regenerate(pool.jobs());
    let other = bodies.iter().copied().find(|o| o.0 != id).unwrap();
    contacts.update(&t, &[other], pool.jobs());
    contacts.update(&t, &[(id, b)], pool.jobs());
    assert_eq!(contacts.reused(), 0);
    assert_eq!(contacts.contacts().iter().filter(|c| c.body == id).count(), 0, "the edit cleared its box");
    assert_eq!(contacts.removed().len(), had);
}

/// `range_of` and `contacts_of` (indexed) against a scan of the lists, for bodies
/// `0..bodies` (some past every listed body).
fn lookups_agree(contacts: &TerrainContacts, bodies: u32) {
    let mut with_range = 0;
    for body in 0..bodies {
        let scan: Vec<_> = contacts.contacts().iter().copied().filter(|c| c.body == body).collect();
        assert_eq!(contacts.contacts_of(body), &scan[..], "body {body}");
        with_range += contacts.range_of(body).is_some() as u32;
    }
    assert!(with_range > 0, "some bodies have ranges");
}

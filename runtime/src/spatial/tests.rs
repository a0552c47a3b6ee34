use glam::Vec3;

use super::*;
use crate::jobs::ThreadPool;
use crate::math::{Aabb, Ray};

/// SplitMix64: a tiny deterministic generator for the randomised tests.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub(crate) fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub(crate) fn vec3(&mut self, lo: f32, hi: f32) -> Vec3 {
        Vec3::new(self.range(lo, hi), self.range(lo, hi), self.range(lo, hi))
    }
}

fn random_box(rng: &mut Rng, world: f32) -> Aabb {
    let center = rng.vec3(-world, world);
    let half = rng.vec3(0.05, 1.5);
    Aabb::from_center_half_extents(center, half)
}

const MODES: [Balancing; 2] = [Balancing::Avl, Balancing::SahRotate];

fn config(balancing: Balancing) -> TreeConfig {
    TreeConfig { balancing, ..TreeConfig::default() }
}

/// All overlapping pairs of live proxies' fat boxes, by brute force.
fn brute_force_pairs(tree: &DynamicTree, live: &[(ProxyId, Aabb)]) -> Vec<Pair> {
    let mut out = Vec::new();
    for (i, &(a, _)) in live.iter().enumerate() {
        for &(b, _) in &live[i + 1..] {
            if tree.fat_aabb(a).overlaps(&tree.fat_aabb(b)) {
                out.push(if a < b { Pair { a, b } } else { Pair { a: b, b: a } });
            }
        }
    }
    out.sort();
    out
}

/// 100,000 random creates, moves (drift and teleports) and destroys per balancing
/// mode; after every frame of 100 operations the pair set equals brute force, the
/// tree's invariants hold, and each proxy's tight box lies inside its fat box.
#[test]
fn random_operations_match_brute_force_pairs_every_frame() {
    let pool = ThreadPool::new(1);
    for mode in MODES {
        let mut rng = Rng(0x5EED ^ mode as u64);
        let mut bp = BroadPhase::new(config(mode));
        let mut live: Vec<(ProxyId, Aabb)> = Vec::new();
        let mut changes = (0usize, 0usize);
        for frame in 0..1000 {
            for _ in 0..100 {
                match rng.below(10) {
                    0..=1 if live.len() < 256 => {
                        let tight = random_box(&mut rng, 12.0);
                        let id = bp.create_proxy(&tight, frame as u64);
                        live.push((id, tight));
                    }
                    2 if !live.is_empty() => {
                        let (id, _) = live.swap_remove(rng.below(live.len()));
                        bp.destroy_proxy(id);
                    }
                    _ if !live.is_empty() => {
                        let k = rng.below(live.len());
                        let (id, old) = live[k];
                        let tight = if rng.below(20) == 0 {
                            random_box(&mut rng, 12.0)
                        } else {
                            let d = rng.vec3(-0.2, 0.2);
                            Aabb::new(old.min + d, old.max + d)
                        };
                        bp.move_proxy(id, &tight, tight.center() - old.center());
                        live[k].1 = tight;
                    }
                    _ => {}
                }
            }
            bp.update(pool.jobs());
            changes.0 += bp.added().len();
            changes.1 += bp.removed().len();
            bp.tree().validate();
            for &(id, tight) in &live {
                assert!(bp.tree().fat_aabb(id).contains(&tight), "{mode:?} frame {frame}: fat box lost its proxy");
            }
            let got: Vec<Pair> = bp.pairs().collect();
            assert_eq!(got, brute_force_pairs(bp.tree(), &live), "{mode:?} frame {frame}");
        }
        assert!(changes.0 > 1000 && changes.1 > 500, "{mode:?}: the scene must exercise pair changes: {changes:?}");
    }
}

/// AVL reinsertion that searches from a few levels above a moved proxy's old place
/// (the default) finds the same pairs as the reference's search from the root, every
/// frame, and keeps the tree as good (mean SAH area ratio within 5%; it measured
/// 0.3% better) on 2,000 drifting boxes with occasional teleports (which fall back
/// to the root).
#[test]
fn local_reinsertion_keeps_pairs_and_tree_quality() {
    let pool = ThreadPool::new(0);
    let local = TreeConfig::default();
    assert!(local.balancing == Balancing::Avl && local.reinsert_levels < 16);
    // The default, the reference's root search, and the most local search (checked
    // for pairs and invariants only).
    let configs =
        [local, TreeConfig { reinsert_levels: u32::MAX, ..local }, TreeConfig { reinsert_levels: 0, ..local }];
    let mut phases = configs.map(BroadPhase::new);
    let mut rng = Rng(77);
    let mut tight: Vec<Aabb> = (0..2000).map(|_| random_box(&mut rng, 25.0)).collect();
    let ids: Vec<Vec<ProxyId>> = phases
        .iter_mut()
        .map(|bp| tight.iter().enumerate().map(|(i, b)| bp.create_proxy(b, i as u64)).collect())
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]));
    let mut area = [0.0f64; 3];
    for frame in 0..300 {
        for (i, b) in tight.iter_mut().enumerate() {
            let old = *b;
            *b = if rng.below(500) == 0 {
                random_box(&mut rng, 25.0)
            } else {
                let d = rng.vec3(-0.15, 0.15);
                Aabb::new(old.min + d, old.max + d)
            };
            for bp in &mut phases {
                bp.move_proxy(ids[0][i], b, b.center() - old.center());
            }
        }
        for (bp, area) in phases.iter_mut().zip(&mut area) {
            bp.update(pool.jobs());
            bp.tree().validate();
            *area += bp.tree().quality().area_ratio as f64;
        }
        assert_eq!(phases[0].pair_keys(), phases[1].pair_keys(), "frame {frame}");
        assert_eq!(phases[2].pair_keys(), phases[1].pair_keys(), "frame {frame}");
    }
    assert!(area[0] <= 1.05 * area[1], "local reinsertion lost tree quality: {area:?}");
}

fn build_tree(mode: Balancing, n: usize, seed: u64) -> (DynamicTree, Vec<ProxyId>) {
    let mut rng = Rng(seed);
    let mut tree = DynamicTree::new(config(mode));
    let ids = (0..n).map(|i| tree.create_proxy(&random_box(&mut rng, 30.0), i as u64)).collect();
    (tree, ids)
}

#[test]
fn box_queries_match_brute_force_and_stop_early() {
    for mode in MODES {
        let (tree, ids) = build_tree(mode, 2000, 7);
        let mut rng = Rng(99);
        for _ in 0..300 {
            let q = Aabb::from_center_half_extents(rng.vec3(-35.0, 35.0), rng.vec3(0.0, 8.0));
            let mut got = Vec::new();
            tree.query(&q, |p| {
                got.push(p);
                true
            });
            got.sort();
            let want: Vec<ProxyId> = ids.iter().copied().filter(|&p| tree.fat_aabb(p).overlaps(&q)).collect();
            assert_eq!(got, want, "{mode:?}");
            let mut visits = 0;
            tree.query(&q, |_| {
                visits += 1;
                false
            });
            assert_eq!(visits, want.len().min(1), "a false return stops the query");
        }
    }
}

/// The sibling search and the refits use `WideBox`; the tree only stays the same as
/// with scalar boxes if its unions and areas are the scalar ones bit for bit,
/// including flat and empty boxes.
#[test]
fn wide_box_unions_and_areas_equal_the_scalar_ones() {
    use super::tree::WideBox;
    let mut rng = Rng(9);
    let mut random_box = |i: usize| match i % 7 {
        0 => Aabb::EMPTY,
        1 => Aabb::from_center_half_extents(rng.vec3(-1e4, 1e4), Vec3::ZERO),
        2 => Aabb::from_center_half_extents(rng.vec3(-50.0, 50.0), rng.vec3(0.0, 1.0) * Vec3::new(1.0, 0.0, 1.0)),
        _ => Aabb::from_center_half_extents(rng.vec3(-50.0, 50.0), rng.vec3(0.0, 30.0)),
    };
    for i in 0..2000 {
        let boxes = [random_box(i), random_box(i + 1), random_box(i + 3), random_box(i * 5)];
        let wide = boxes.map(|b| WideBox::load(&b));
        let areas = WideBox::areas(wide).to_array();
        for k in 0..4 {
            assert_eq!(areas[k].to_bits(), boxes[k].area().to_bits(), "area of {:?}", boxes[k]);
            assert_eq!(wide[k].aabb(), boxes[k], "round trip");
            let (a, b) = (boxes[k], boxes[(k + 1) % 4]);
            let union = wide[k].union(wide[(k + 1) % 4]).aabb();
            assert_eq!(union, a.union(&b), "union of {a:?} and {b:?}");
        }
    }
}

/// `query_each` (four walks in turn, hits buffered) reports exactly what one
/// `query` per box reports: on empty and one-proxy trees, for boxes that miss the
/// root, for hit counts past its buffer, and for zero boxes.
#[test]
fn batched_box_queries_equal_one_query_per_box() {
    let mut rng = Rng(5);
    for (mode, n) in MODES.into_iter().flat_map(|m| [(m, 0), (m, 1), (m, 2), (m, 2000)]) {
        let (tree, ids) = build_tree(mode, n, 11);
        let boxes: Vec<Aabb> = (0..403)
            .map(|i| {
                // Some far away, some huge (hundreds of hits), most ordinary.
                let (center, half) = match i % 10 {
                    0 => (rng.vec3(200.0, 300.0), rng.vec3(0.0, 1.0)),
                    1 => (rng.vec3(-5.0, 5.0), rng.vec3(10.0, 25.0)),
                    _ => (rng.vec3(-35.0, 35.0), rng.vec3(0.0, 4.0)),
                };
                Aabb::from_center_half_extents(center, half)
            })
            .collect();
        for count in [0, 1, 3, boxes.len()] {
            let mut got = Vec::new();
            tree.query_each(count, |i| boxes[i], |i, p| got.push((i, p)));
            got.sort();
            let mut want = Vec::new();
            for (i, b) in boxes[..count].iter().enumerate() {
                want.extend(ids.iter().filter(|&&p| tree.fat_aabb(p).overlaps(b)).map(|&p| (i, p)));
            }
            assert_eq!(got, want, "{mode:?}, {n} proxies, {count} boxes");
            if count == boxes.len() && n == 2000 {
                assert!(want.iter().filter(|&&(i, _)| i == 1).count() > 64, "a box with more hits than the buffer");
            }
        }
    }
}

#[test]
fn ray_casts_match_brute_force() {
    for mode in MODES {
        let (tree, ids) = build_tree(mode, 2000, 11);
        let mut rng = Rng(5);
        for i in 0..300 {
            let origin = rng.vec3(-40.0, 40.0);
            let mut dir = rng.vec3(-1.0, 1.0);
            if i % 10 == 0 {
                dir = Vec3::new(dir.x, 0.0, 0.0); // axis-parallel rays
            }
            if dir == Vec3::ZERO {
                continue;
            }
            let ray = Ray::new(origin, dir);
            let max_t = rng.range(1.0, 100.0);
            // Each proxy's "shape" is its fat box.
            let exact = |p: ProxyId, max: f32| ray.intersect_aabb(&tree.fat_aabb(p), max);
            let brute: Vec<(ProxyId, f32)> = ids.iter().filter_map(|&p| exact(p, max_t).map(|t| (p, t))).collect();

            let closest = tree.ray_cast_closest(&ray, max_t, exact);
            let want = brute.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            assert_eq!(closest, want, "{mode:?} ray {i}");

            let mut all = Vec::new();
            tree.ray_cast_all(&ray, max_t, exact, |p, t| all.push((p, t)));
            all.sort_by_key(|a| a.0);
            assert_eq!(all, brute, "{mode:?} ray {i}: all hits");
        }
        // Degenerate rays and limits are refused quietly.
        let mut calls = 0;
        tree.ray_cast(&Ray::new(Vec3::ZERO, Vec3::ZERO), 10.0, |_, m| {
            calls += 1;
            m
        });
        tree.ray_cast(&Ray::new(Vec3::NAN, Vec3::X), 10.0, |_, m| {
            calls += 1;
            m
        });
        tree.ray_cast(&Ray::new(Vec3::ZERO, Vec3::X), f32::NAN, |_, m| {
            calls += 1;
            m
        });
        assert_eq!(calls, 0);
    }
}

#[test]
fn full_rebuild_improves_quality_and_keeps_proxies() {
    for mode in MODES {
        let (mut tree, ids) = build_tree(mode, 5000, 3);
        let before = tree.quality();
        let fat: Vec<Aabb> = ids.iter().map(|&p| tree.fat_aabb(p)).collect();
        assert_eq!(tree.rebuild_full(), 5000);
        tree.validate();
        let after = tree.quality();
        assert_eq!(after.proxies, 5000);
        assert!(after.height <= 2 * 13 + 2, "{mode:?}: binned SAH height {}", after.height);
        assert!(after.area_ratio <= before.area_ratio * 1.05, "{mode:?}: {before:?} -> {after:?}");
        for (i, &p) in ids.iter().enumerate() {
            assert_eq!(tree.fat_aabb(p), fat[i], "ids and boxes survive the rebuild");
            assert_eq!(tree.user_data(p), i as u64);
        }
        // Heights stay logarithmic while inserting, for both strategies.
        assert!(before.height <= 40, "{mode:?}: incremental height {}", before.height);
    }
}

#[test]
fn a_bulk_load_is_rebuilt_once_and_moves_keep_the_tree_valid() {
    for mode in MODES {
        let (mut tree, ids) = build_tree(mode, 4000, 5);
        let loaded = tree.quality();
        assert!(tree.rebuild_if_bulk_loaded(), "{mode:?}: 4,000 proxies inserted one by one");
        tree.validate();
        let built = tree.quality();
        // Random boxes in a cube: AVL insertion leaves a worse tree than SAH
        // rotations do (on bodies lying on hills, both leave worse trees).
        let gain = if mode == Balancing::Avl { 0.9 } else { 1.0 };
        assert!(built.area_ratio < gain * loaded.area_ratio, "{mode:?}: {loaded:?} -> {built:?}");
        assert!(!tree.rebuild_if_bulk_loaded(), "{mode:?}: nothing created since");
        // 1,333 more are short of a quarter of the 5,333; the 1,334th reaches it.
        let mut rng = Rng(6);
        let mut more: Vec<ProxyId> = (0..1333).map(|i| tree.create_proxy(&random_box(&mut rng, 30.0), i)).collect();
        assert!(!tree.rebuild_if_bulk_loaded());
        more.push(tree.create_proxy(&random_box(&mut rng, 30.0), 1333));
        assert!(tree.rebuild_if_bulk_loaded());
        tree.validate();
        // Moves (AVL reinsertion or SAH enlargement) on the rebuilt tree.
        for &p in ids.iter().step_by(7).chain(&more) {
            let moved = random_box(&mut rng, 30.0);
            tree.move_proxy(p, &moved, Vec3::X);
            if mode == Balancing::SahRotate {
                tree.rebuild();
            }
            assert!(tree.fat_aabb(p).contains(&moved));
        }
        tree.validate();
        let q = Aabb::from_center_half_extents(Vec3::ZERO, Vec3::splat(6.0));
        let mut got = Vec::new();
        tree.query(&q, |p| {
            got.push(p);
            true
        });
        got.sort();
        let want: Vec<ProxyId> =
            ids.iter().chain(&more).copied().filter(|&p| tree.fat_aabb(p).overlaps(&q)).collect::<Vec<_>>();
        let mut want = want;
        want.sort();
        assert_eq!(got, want, "{mode:?}");
        // Below the minimum nothing is rebuilt.
        let (mut small, _) = build_tree(mode, 63, 8);
        assert!(!small.rebuild_if_bulk_loaded());
    }
}

#[test]
fn partial_rebuild_only_touches_the_enlarged_part() {
    let (mut tree, ids) = build_tree(Balancing::SahRotate, 1000, 21);
    tree.rebuild_full();
    assert_eq!(tree.rebuild(), 0, "nothing enlarged, nothing rebuilt");
    let p = ids[17];
    let moved = Aabb::from_center_half_extents(Vec3::new(60.0, 0.0, 0.0), Vec3::ONE);
    assert!(tree.move_proxy(p, &moved, Vec3::X));
    tree.validate();
    let items = tree.rebuild();
    assert!(items > 1 && items < 100, "a single escape rebuilds a path's worth of items, got {items}");
    tree.validate();
    assert!(tree.fat_aabb(p).contains(&moved));
    assert_eq!(tree.rebuild(), 0);
}

#[test]
fn node_and_proxy_pools_grow_by_doubling_and_reuse_freed_entries() {
    let mut tree = DynamicTree::new(TreeConfig::default());
    assert_eq!(tree.node_capacity(), 1, "an empty tree holds only the sentinel node");
    let a = tree.create_proxy(&Aabb::new(Vec3::ZERO, Vec3::ONE), 0);
    assert_eq!((tree.node_capacity(), tree.proxy_capacity()), (1, 16), "a lone proxy needs no internal node");
    let ids: Vec<_> =
        (0..16).map(|i| tree.create_proxy(&Aabb::new(Vec3::splat(i as f32), Vec3::splat(i as f32 + 1.0)), i)).collect();
    // 17 proxies: 16 internal nodes + the sentinel, 17 proxy entries.
    assert_eq!((tree.node_capacity(), tree.proxy_capacity()), (32, 32), "both pools doubled once");
    for &id in &ids {
        tree.destroy_proxy(id);
    }
    tree.validate();
    for i in 0..16 {
        tree.create_proxy(&Aabb::new(Vec3::splat(i as f32), Vec3::splat(i as f32 + 1.0)), i);
    }
    assert_eq!((tree.node_capacity(), tree.proxy_capacity()), (32, 32), "freed entries are reused");
    assert!(tree.is_proxy(a));
    tree.validate();
}

#[test]
fn sleeping_pairs_are_skipped_and_a_waking_mover_reports_them() {
    let pool = ThreadPool::new(0);
    let mut bp = BroadPhase::new(TreeConfig::default());
    let unit = Aabb::new(Vec3::ZERO, Vec3::ONE);
    let a = bp.create_proxy(&unit, 0);
    let b = bp.create_proxy(&unit, 1);
    bp.set_sleeping(a, true);
    bp.set_sleeping(b, true);
    bp.update(pool.jobs());
    assert_eq!(bp.pair_count(), 0, "two sleepers make no pair");
    bp.set_sleeping(b, false);
    let far = Aabb::new(Vec3::splat(0.5), Vec3::splat(1.5));
    bp.move_proxy(b, &far, Vec3::splat(0.5));
    bp.update(pool.jobs());
    assert_eq!(bp.added().collect::<Vec<_>>(), vec![Pair { a, b }]);
}

#[test]
fn pair_lists_are_identical_for_1_2_and_8_workers() {
    let run = |threads: usize| {
        let pool = ThreadPool::new(threads);
        let mut rng = Rng(77);
        let mut bp = BroadPhase::new(TreeConfig::default());
        let mut live: Vec<(ProxyId, Aabb, Vec3)> = (0..3000)
            .map(|i| {
                let b = random_box(&mut rng, 25.0);
                (bp.create_proxy(&b, i), b, rng.vec3(-0.3, 0.3))
            })
            .collect();
        let mut log = Vec::new();
        for _ in 0..20 {
            for (id, b, v) in live.iter_mut() {
                *b = Aabb::new(b.min + *v, b.max + *v);
                bp.move_proxy(*id, b, *v);
            }
            bp.update(pool.jobs());
            log.extend(bp.added());
            log.extend(bp.removed());
            log.extend(bp.pairs());
        }
        log
    };
    let one = run(0);
    assert!(one.len() > 10_000);
    assert_eq!(one, run(1));
    assert_eq!(one, run(7));
}

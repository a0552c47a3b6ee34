//! `broadphase_tree`: 10,000 boxes on circular orbits in a 60 m cube (up to 0.1 m per
//! frame). One iteration is one frame: move every box, update the
//! broadphase and find pairs. Kiln (both balancing strategies) against rapier3d's
//! `BroadPhaseBvh` driven through `set_aabb` + `update` with the same boxes, in the
//! same group. A second group times 10,000 box queries on each tree after the motion
//! (query cost), and the bench prints tree quality and pair counts. Last, outside
//! criterion, Kiln's AVL frame and rapier's run in alternating rounds, and their
//! ratio (`broadphase_tree_paired`) is printed beside criterion's.

use criterion::{criterion_group, BenchmarkId, Criterion};
use glam::Vec3;
use kiln::jobs::ThreadPool;
use kiln::math::Aabb;
use kiln::spatial::{Balancing, BroadPhase, ProxyId, TreeConfig};
use kiln_benches::{report_paired, report_ratios, SplitMix};
use rapier3d::parry::bounding_volume::Aabb as RapierAabb;
use rapier3d::prelude::{
    BroadPhaseBvh, BroadPhasePairEvent, ColliderBuilder, ColliderHandle, ColliderSet, IntegrationParameters,
    RigidBodyBuilder, RigidBodySet,
};

const COUNT: usize = 10_000;
const HALF_WORLD: f32 = 30.0;
/// Frames after which every orbit repeats.
const PERIOD: u32 = 384;

/// Boxes on orbits of radius 2 m around random anchors, 1 to 3 turns per 384 frames
/// (0.03 to 0.1 m per frame): the motion repeats exactly, so every configuration
/// sees the same average workload whatever its iteration count. The orbits are
/// traced once up front (46 MB), so a frame of the bench reads boxes instead of
/// spending a fifth of its time in `sin` and `cos` for both peers alike.
#[derive(Clone)]
struct Scene {
    half: Vec<Vec3>,
    /// Centres, frame by frame: `track[frame * COUNT + i]`.
    track: Vec<Vec3>,
    frame: u32,
}

impl Scene {
    fn new() -> Scene {
        let mut rng = SplitMix(2026);
        let mut v = |lo, hi| Vec3::new(rng.range(lo, hi), rng.range(lo, hi), rng.range(lo, hi));
        let anchor: Vec<Vec3> = (0..COUNT).map(|_| v(-HALF_WORLD, HALF_WORLD)).collect();
        let half = (0..COUNT).map(|_| v(0.25, 0.75)).collect();
        let mut rng = SplitMix(7);
        let phase: Vec<f32> = (0..COUNT).map(|_| rng.range(0.0, std::f32::consts::TAU)).collect();
        // Whole turns per period, so the motion repeats exactly every `PERIOD` frames.
        let speed: Vec<f32> = (0..COUNT)
            .map(|_| std::f32::consts::TAU * (1.0 + (rng.next_f32() * 3.0).floor()) / PERIOD as f32)
            .collect();
        let (anchor, phase, speed) = (&anchor, &phase, &speed);
        let track = (0..PERIOD)
            .flat_map(|frame| {
                (0..COUNT).map(move |i| {
                    let a = phase[i] + speed[i] * frame as f32;
                    anchor[i] + 2.0 * Vec3::new(a.cos(), a.sin(), 0.5 * (2.0 * a).sin())
                })
            })
            .collect();
        Scene { half, track, frame: 0 }
    }

    fn step(&mut self) {
        self.frame = (self.frame + 1) % PERIOD;
    }

    fn center(&self, i: usize) -> Vec3 {
        self.track[self.frame as usize * COUNT + i]
    }

    /// The displacement since the previous frame.
    fn velocity(&self, i: usize) -> Vec3 {
        let previous = (self.frame + PERIOD - 1) % PERIOD;
        self.center(i) - self.track[previous as usize * COUNT + i]
    }

    fn aabb(&self, i: usize) -> Aabb {
        Aabb::from_center_half_extents(self.center(i), self.half[i])
    }
}

struct KilnBp {
    scene: Scene,
    bp: BroadPhase,
    proxies: Vec<ProxyId>,
}

impl KilnBp {
    fn new(balancing: Balancing, pool: &ThreadPool) -> KilnBp {
        let scene = Scene::new();
        let mut bp = BroadPhase::new(TreeConfig { balancing, ..TreeConfig::default() });
        let proxies = (0..COUNT).map(|i| bp.create_proxy(&scene.aabb(i), i as u64)).collect();
        bp.update(pool.jobs());
        KilnBp { scene, bp, proxies }
    }

    fn frame(&mut self, pool: &ThreadPool) {
        self.scene.step();
        for (i, &p) in self.proxies.iter().enumerate() {
            self.bp.move_proxy(p, &self.scene.aabb(i), self.scene.velocity(i));
        }
        self.bp.update(pool.jobs());
    }
}

struct RapierBp {
    scene: Scene,
    bp: BroadPhaseBvh,
    colliders: ColliderSet,
    bodies: RigidBodySet,
    handles: Vec<ColliderHandle>,
    params: IntegrationParameters,
    events: Vec<BroadPhasePairEvent>,
    pairs: usize,
}

impl RapierBp {
    fn new() -> RapierBp {
        let scene = Scene::new();
        let mut colliders = ColliderSet::new();
        let mut bodies = RigidBodySet::new();
        // Dynamic bodies: rapier skips pairs between colliders without a moving parent.
        let handles: Vec<_> = (0..COUNT)
            .map(|i| {
                let h = scene.half[i];
                let body = bodies.insert(RigidBodyBuilder::dynamic().translation(scene.center(i)).build());
                colliders.insert_with_parent(ColliderBuilder::cuboid(h.x, h.y, h.z).build(), body, &mut bodies)
            })
            .collect();
        let params = IntegrationParameters::default();
        let mut bp = BroadPhaseBvh::new();
        let mut events = Vec::new();
        bp.update(&params, &colliders, &bodies, &handles, &[], &mut events);
        let pairs = events.len();
        RapierBp { scene, bp, colliders, bodies, handles, params, events, pairs }
    }

    fn frame(&mut self) {
        self.scene.step();
        for (i, &h) in self.handles.iter().enumerate() {
            let b = self.scene.aabb(i);
            self.bp.set_aabb(&self.params, h, RapierAabb::new(b.min, b.max));
        }
        self.events.clear();
        self.bp.update(&self.params, &self.colliders, &self.bodies, &[], &[], &mut self.events);
        for e in &self.events {
            match e {
                BroadPhasePairEvent::AddPair(_) => self.pairs += 1,
                BroadPhasePairEvent::DeletePair(_) => self.pairs -= 1,
            }
        }
    }
}

fn update(c: &mut Criterion) {
    let mut group = c.benchmark_group("broadphase_tree");
    group.sample_size(30);
    for (name, balancing, threads) in
        [("kiln_sah", Balancing::SahRotate, 0), ("kiln_avl", Balancing::Avl, 0), ("kiln_sah", Balancing::SahRotate, 1)]
    {
        let pool = ThreadPool::new(threads);
        let mut kiln = KilnBp::new(balancing, &pool);
        group.bench_function(BenchmarkId::new(name, threads + 1), |b| b.iter(|| kiln.frame(&pool)));
        kiln.scene.step();
        for (i, &p) in kiln.proxies.iter().enumerate() {
            kiln.bp.move_proxy(p, &kiln.scene.aabb(i), kiln.scene.velocity(i));
        }
        let moved = kiln.bp.moved_count();
        let rebuilt = kiln.bp.rebuild_tree();
        kiln.bp.update_pairs(pool.jobs());
        println!(
            "{name}/{}: one frame: {moved} proxies escaped their fat boxes, rebuild over {rebuilt} items",
            threads + 1
        );
        let q = kiln.bp.tree().quality();
        println!(
            "{name}/{}: {} pairs, tree height {}, area ratio {:.1}, {} nodes",
            threads + 1,
            kiln.bp.pair_count(),
            q.height,
            q.area_ratio,
            kiln.bp.tree().node_capacity()
        );
    }
    let mut rapier = RapierBp::new();
    group.bench_function(BenchmarkId::new("rapier3d", 1), |b| b.iter(|| rapier.frame()));
    println!("rapier3d/1: {} pairs", rapier.pairs);
    group.finish();
}

fn query(c: &mut Criterion) {
    let mut group = c.benchmark_group("broadphase_tree_query");
    group.sample_size(30);
    let pool = ThreadPool::new(0);
    for (name, balancing) in [("kiln_sah", Balancing::SahRotate), ("kiln_avl", Balancing::Avl)] {
        let mut kiln = KilnBp::new(balancing, &pool);
        for _ in 0..300 {
            kiln.frame(&pool);
        }
        let boxes: Vec<Aabb> = (0..COUNT).map(|i| kiln.scene.aabb(i)).collect();
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut hits = 0usize;
                for q in &boxes {
                    kiln.bp.tree().query(q, |_| {
                        hits += 1;
                        true
                    });
                }
                hits
            })
        });
    }
    group.finish();
}

criterion_group!(benches, update, query);

/// Kiln's AVL frame against rapier's, in alternating rounds of one motion period
/// each, outside criterion ([`report_paired`], group `broadphase_tree_paired`): on a
/// shared, noisy machine a burst of load lands on both peers alike here.
fn paired() {
    const ROUNDS: usize = 7;
    let pool = ThreadPool::new(0);
    let mut kiln = KilnBp::new(Balancing::Avl, &pool);
    let mut rapier = RapierBp::new();
    let time = |frame: &mut dyn FnMut()| {
        let start = std::time::Instant::now();
        for _ in 0..PERIOD {
            frame();
        }
        start.elapsed().as_secs_f64() * 1e9 / PERIOD as f64
    };
    // One period of warm-up each, then the rounds.
    time(&mut || kiln.frame(&pool));
    time(&mut || rapier.frame());
    report_paired(
        "broadphase_tree_paired",
        ("kiln_avl/1", "rapier3d/1"),
        ROUNDS,
        || time(&mut || kiln.frame(&pool)),
        || time(&mut || rapier.frame()),
    );
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratios(
        "broadphase_tree",
        &[
            ("kiln_sah/1", "rapier3d/1"),
            ("kiln_avl/1", "rapier3d/1"),
            ("kiln_sah/2", "rapier3d/1"),
            ("kiln_sah/1", "kiln_avl/1"),
        ],
    );
    report_ratios("broadphase_tree_query", &[("kiln_sah", "kiln_avl")]);
    // Only under `cargo bench` (not in `cargo test`'s quick pass over the benches).
    if std::env::args().any(|a| a == "--bench") {
        paired();
    }
}

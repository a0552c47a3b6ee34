//! The dynamic AABB tree under arbitrary sequences of creates, moves, destroys and
//! rebuilds (both balancing modes), against brute force over the live proxies: after
//! every operation the tree validates; box queries (single and `query_each`) report
//! exactly the proxies whose fat boxes overlap, each once; a ray visits exactly the
//! proxies whose fat boxes it enters, and the closest of them is the brute-force one.
#![no_main]

use std::collections::BTreeSet;

use kiln::math::{Aabb, Ray, Vec3};
use kiln::spatial::{Balancing, DynamicTree, ProxyId, TreeConfig};
use libfuzzer_sys::fuzz_target;

/// Reads the fuzzer's bytes front to back; `None` once they run out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    /// A box on a coarse lattice (shared faces, containment, duplicates), sometimes
    /// flat or a point, sometimes far away.
    fn aabb(&mut self) -> Option<Aabb> {
        let c = Vec3::new(self.byte()? as f32, self.byte()? as f32, self.byte()? as f32) / 8.0 - Vec3::splat(16.0);
        let size = self.byte()?;
        let half = Vec3::new((size & 3) as f32, (size >> 2 & 3) as f32, (size >> 4 & 3) as f32) * 0.5;
        let far = if size & 0xc0 == 0xc0 { Vec3::splat(1e4) } else { Vec3::ZERO };
        Some(Aabb::new(c - half + far, c + half + far))
    }
}

/// Box query results against brute force, each proxy once.
fn check_query(tree: &DynamicTree, live: &[ProxyId], aabb: &Aabb) {
    let mut got = BTreeSet::new();
    tree.query(aabb, |p| {
        assert!(got.insert(p.0), "proxy {} reported twice", p.0);
        true
    });
    let expected: BTreeSet<u32> = live.iter().filter(|&&p| tree.fat_aabb(p).overlaps(aabb)).map(|p| p.0).collect();
    assert_eq!(got, expected, "query {aabb:?}");
}

fn check_ray(tree: &DynamicTree, live: &[ProxyId], ray: &Ray, max_t: f32) {
    let hit = |p: ProxyId, max: f32| ray.intersect_aabb(&tree.fat_aabb(p), max);
    let mut got = BTreeSet::new();
    tree.ray_cast_all(ray, max_t, hit, |p, _| assert!(got.insert(p.0), "proxy {} hit twice", p.0));
    let brute: Vec<(f32, u32)> = live.iter().filter_map(|&p| hit(p, max_t).map(|t| (t, p.0))).collect();
    assert_eq!(got, brute.iter().map(|&(_, p)| p).collect::<BTreeSet<u32>>(), "ray {ray:?}");
    let closest = tree.ray_cast_closest(ray, max_t, hit).map(|(p, t)| (t, p.0));
    let nearest = brute.iter().copied().min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    assert_eq!(closest.map(|c| c.0), nearest.map(|n| n.0), "closest along {ray:?}");
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes(data);
    let Some(mode) = bytes.byte() else { return };
    let balancing = if mode & 1 != 0 { Balancing::SahRotate } else { Balancing::Avl };
    let config =
        TreeConfig { balancing, reinsert_levels: [8, 2, u32::MAX, 0][(mode >> 1 & 3) as usize], ..Default::default() };
    let mut tree = DynamicTree::new(config);
    let mut live: Vec<ProxyId> = Vec::new();
    let mut user = 0u64;
    while let Some(op) = bytes.byte() {
        match op % 8 {
            0..=2 => {
                let Some(aabb) = bytes.aabb() else { break };
                user += 1;
                let p = tree.create_proxy(&aabb, user);
                assert!(!live.contains(&p), "a live proxy's id reissued");
                live.push(p);
            }
            3 | 4 if !live.is_empty() => {
                let Some(pick) = bytes.byte() else { break };
                let Some(aabb) = bytes.aabb() else { break };
                let p = live[pick as usize % live.len()];
                let inside = tree.fat_aabb(p).contains(&aabb);
                let moved = tree.move_proxy(p, &aabb, (aabb.center() - tree.fat_aabb(p).center()) * 0.1);
                assert_eq!(moved, !inside, "a move changes the tree exactly when the box leaves its fat box");
                assert!(tree.fat_aabb(p).contains(&aabb), "fat box holds the tight box");
            }
            5 if !live.is_empty() => {
                let Some(pick) = bytes.byte() else { break };
                let p = live.swap_remove(pick as usize % live.len());
                tree.destroy_proxy(p);
                assert!(!tree.is_proxy(p));
            }
            6 => {
                if op & 0x80 != 0 {
                    tree.rebuild_full();
                } else {
                    tree.rebuild();
                }
            }
            _ => {
                let Some(aabb) = bytes.aabb() else { break };
                check_query(&tree, &live, &aabb);
                let Some(d) = bytes.aabb() else { break };
                let dir = d.center() - aabb.center();
                let ray = Ray::new(aabb.center(), if dir == Vec3::ZERO { Vec3::X } else { dir });
                check_ray(&tree, &live, &ray, [1.0, 10.0, 100.0, f32::INFINITY][(op >> 3 & 3) as usize]);
            }
        }
        tree.validate();
        assert_eq!(tree.proxy_count(), live.len());
    }
    // Every live proxy's box against all the others at once.
    let boxes: Vec<Aabb> = live.iter().map(|&p| tree.fat_aabb(p)).collect();
    let mut got = BTreeSet::new();
    tree.query_each(boxes.len(), |i| boxes[i], |i, p| assert!(got.insert((i, p.0)), "pair reported twice"));
    let mut expected = BTreeSet::new();
    for (i, b) in boxes.iter().enumerate() {
        for &p in &live {
            if tree.fat_aabb(p).overlaps(b) {
                expected.insert((i, p.0));
            }
        }
    }
    assert_eq!(got, expected, "query_each");
    for &p in &live {
        check_query(&tree, &live, &tree.fat_aabb(p));
    }
});

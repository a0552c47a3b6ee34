//! Queries of a [`DynamicTree`]: box overlap and ray casts. Both walk the tree on a
//! fixed stack (the tree's height is bounded, see `MAX_HEIGHT`): no recursion, no
//! heap, callable from many jobs at once.

use super::tree::{DynamicTree, ProxyId, NULL, STACK_SIZE};
use crate::math::{Aabb, Ray};

impl DynamicTree {
    /// Calls `visit` for every proxy whose fat box overlaps `aabb`. `visit` returns
    /// `false` to stop the query early.
    pub fn query(&self, aabb: &Aabb, mut visit: impl FnMut(ProxyId) -> bool) {
        if self.root == NULL {
            return;
        }
        let mut stack = [0u32; STACK_SIZE];
        stack[0] = self.root;
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let node = &self.nodes[stack[top] as usize];
            if !node.aabb.overlaps(aabb) {
                continue;
            }
            if node.is_leaf() {
                if !visit(ProxyId(stack[top])) {
                    return;
                }
            } else {
                stack[top] = node.child1;
                stack[top + 1] = node.child2;
                top += 2;
            }
        }
    }

    /// Calls `visit(aabb, depth, is_leaf)` for every node, parents before children
    /// (the root has depth 0): for debug drawing and tree statistics.
    pub fn for_each_node(&self, mut visit: impl FnMut(&Aabb, u32, bool)) {
        if self.root == NULL {
            return;
        }
        let mut stack = [(0u32, 0u32); STACK_SIZE];
        stack[0] = (self.root, 0);
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let (index, depth) = stack[top];
            let node = &self.nodes[index as usize];
            visit(&node.aabb, depth, node.is_leaf());
            if !node.is_leaf() {
                stack[top] = (node.child1, depth + 1);
                stack[top + 1] = (node.child2, depth + 1);
                top += 2;
            }
        }
    }

    /// Casts `ray` over `[0, max_t]`. For every proxy whose fat box the ray enters
    /// before the current maximum, `visit(proxy, max_t)` tests the proxy's own shape
    /// and returns the new maximum: the hit's `t` to clip (closest hit), the unchanged
    /// maximum to continue (all hits), or a negative value to stop. Nodes are visited
    /// near child first, and any node entered beyond the shrinking maximum is skipped.
    pub fn ray_cast(&self, ray: &Ray, max_t: f32, mut visit: impl FnMut(ProxyId, f32) -> f32) {
        if self.root == NULL || !ray.is_valid() || max_t.is_nan() || max_t < 0.0 {
            return;
        }
        let mut max_t = max_t;
        let mut stack = [(0u32, 0f32); STACK_SIZE];
        let Some(t_root) = ray.intersect_aabb(&self.nodes[self.root as usize].aabb, max_t) else {
            return;
        };
        stack[0] = (self.root, t_root);
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let (index, t_entry) = stack[top];
            if t_entry > max_t {
                continue;
            }
            let node = &self.nodes[index as usize];
            if node.is_leaf() {
                let new_max = visit(ProxyId(index), max_t);
                if new_max < 0.0 {
                    return;
                }
                max_t = max_t.min(new_max);
                continue;
            }
            let t1 = ray.intersect_aabb(&self.nodes[node.child1 as usize].aabb, max_t);
            let t2 = ray.intersect_aabb(&self.nodes[node.child2 as usize].aabb, max_t);
            let mut push = |entry: Option<(u32, f32)>| {
                if let Some(e) = entry {
                    stack[top] = e;
                    top += 1;
                }
            };
            let (e1, e2) = (t1.map(|t| (node.child1, t)), t2.map(|t| (node.child2, t)));
            // Far child first so the near one is popped next.
            if t1.unwrap_or(f32::INFINITY) <= t2.unwrap_or(f32::INFINITY) {
                push(e2);
                push(e1);
            } else {
                push(e1);
                push(e2);
            }
        }
    }

    /// The closest hit: `hit(proxy, max_t)` returns the proxy's exact hit `t` (at
    /// most `max_t`) or `None`. Returns the proxy and `t` of the nearest hit.
    pub fn ray_cast_closest(
        &self,
        ray: &Ray,
        max_t: f32,
        mut hit: impl FnMut(ProxyId, f32) -> Option<f32>,
    ) -> Option<(ProxyId, f32)> {
        let mut best = None;
        self.ray_cast(ray, max_t, |proxy, max| match hit(proxy, max) {
            Some(t) if t <= max && best.is_none_or(|(b, bt)| (t, proxy) < (bt, b)) => {
                best = Some((proxy, t));
                t
            }
            _ => max,
        });
        best
    }

    /// Every hit within `max_t`: `hit` as for [`DynamicTree::ray_cast_closest`],
    /// `report(proxy, t)` for each; order is traversal order.
    pub fn ray_cast_all(
        &self,
        ray: &Ray,
        max_t: f32,
        mut hit: impl FnMut(ProxyId, f32) -> Option<f32>,
        mut report: impl FnMut(ProxyId, f32),
    ) {
        self.ray_cast(ray, max_t, |proxy, max| {
            if let Some(t) = hit(proxy, max) {
                report(proxy, t);
            }
            max
        });
    }
}

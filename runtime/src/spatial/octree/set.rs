//! Many octrees, picked together: a [`DynamicTree`] over the octrees that hold
//! solid cubes finds the ones a ray reaches, nearest box first, and the walk stops
//! once the next box starts beyond the closest hit so far. The tree holds each
//! octree's whole cube, not its tighter solid bounds: a pick limited to a grid depth
//! reports octants, whose faces may lie outside the solid cubes. Full-depth picks
//! also clip against the solid bounds before walking an octree. Octrees may overlap or
//! nest; the closest hit wins, and an exact tie (the same distance in two octrees)
//! goes to the octree created first, so results never depend on tree shape, slot
//! reuse or the worker count of a batch.

use super::pick::{OctreeHit, PickRay};
use super::Octree;
use crate::jobs::Jobs;
use crate::math::{Aabb, Ray};
use crate::spatial::{Balancing, DynamicTree, ProxyId, TreeConfig};

/// Names an octree of an [`OctreeSet`]: slot index and generation. Removing the
/// octree makes the id stale.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OctreeId {
    pub index: u32,
    pub generation: u32,
}

#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) octree: Octree,
    /// Creation order: the tie-break between octrees.
    pub(crate) serial: u64,
    proxy: Option<ProxyId>,
}

#[derive(Debug)]
struct Slot {
    generation: u32,
    entry: Option<Entry>,
}

/// A set of octrees with a bounding-volume tree over them. See the module doc.
#[derive(Debug)]
pub struct OctreeSet {
    slots: Vec<Slot>,
    free: Vec<u32>,
    tree: DynamicTree,
    next_serial: u64,
    len: usize,
}

impl Default for OctreeSet {
    fn default() -> Self {
        OctreeSet::new()
    }
}

impl OctreeSet {
    pub fn new() -> OctreeSet {
        // Octrees move only when edited: tight boxes, AVL-balanced insertion.
        let config = TreeConfig {
            margin: 0.0,
            displacement_multiplier: 0.0,
            balancing: Balancing::Avl,
            ..TreeConfig::default()
        };
        OctreeSet { slots: Vec::new(), free: Vec::new(), tree: DynamicTree::new(config), next_serial: 0, len: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Height of the tree over the octrees (0 when no octree holds a solid cube).
    pub fn tree_height(&self) -> u32 {
        self.tree.height()
    }

    /// Adds an octree and returns its id.
    pub fn insert(&mut self, octree: Octree) -> OctreeId {
        let entry = Entry { octree, serial: self.next_serial, proxy: None };
        self.next_serial += 1;
        let index = match self.free.pop() {
            Some(index) => {
                self.slots[index as usize].entry = Some(entry);
                index
            }
            None => {
                self.slots.push(Slot { generation: 1, entry: Some(entry) });
                self.slots.len() as u32 - 1
            }
        };
        self.len += 1;
        let id = OctreeId { index, generation: self.slots[index as usize].generation };
        self.refresh_proxy(index);
        id
    }

    /// Removes an octree and returns it; `None` for a stale id.
    pub fn remove(&mut self, id: OctreeId) -> Option<Octree> {
        self.get(id)?;
        let slot = &mut self.slots[id.index as usize];
        let entry = slot.entry.take().expect("checked by get");
        slot.generation = slot.generation.wrapping_add(1).max(1);
        if let Some(proxy) = entry.proxy {
            self.tree.destroy_proxy(proxy);
        }
        self.free.push(id.index);
        self.len -= 1;
        Some(entry.octree)
    }

    pub fn get(&self, id: OctreeId) -> Option<&Octree> {
        let slot = self.slots.get(id.index as usize)?;
        match &slot.entry {
            Some(entry) if slot.generation == id.generation => Some(&entry.octree),
            _ => None,
        }
    }

    /// Runs `edit` on an octree, then updates its box in the tree. `None` for a
    /// stale id.
    pub fn edit<R>(&mut self, id: OctreeId, edit: impl FnOnce(&mut Octree) -> R) -> Option<R> {
        self.get(id)?;
        let entry = self.slots[id.index as usize].entry.as_mut().expect("checked by get");
        let result = edit(&mut entry.octree);
        self.refresh_proxy(id.index);
        Some(result)
    }

    /// Live octrees in slot order.
    pub fn ids(&self) -> impl Iterator<Item = OctreeId> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.entry.is_some())
            .map(|(i, s)| OctreeId { index: i as u32, generation: s.generation })
    }

    pub(crate) fn entries(&self) -> impl Iterator<Item = (OctreeId, &Entry)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.entry.as_ref().map(|e| (OctreeId { index: i as u32, generation: s.generation }, e)))
    }

    /// The closest solid cube under the ray within `max_t`, over all octrees, and
    /// the editor's description of it. `max_depth` stops descent (an octant at that
    /// depth counts as solid).
    pub fn pick(&self, ray: &PickRay, max_t: f32, max_depth: u32) -> Option<(OctreeId, OctreeHit)> {
        let mut best: Option<(f32, u64, u32, super::CubeHit)> = None;
        let bounds_ray = Ray::new(ray.origin, ray.dir);
        self.tree.ray_cast(&bounds_ray, max_t, |proxy, max| {
            let index = self.tree.user_data(proxy) as u32;
            let entry = self.slots[index as usize].entry.as_ref().expect("proxies belong to live octrees");
            let full_depth = max_depth >= super::OCTREE_MAX_DEPTH as u32;
            if full_depth && bounds_ray.clip(&entry.octree.solid_bounds(), max).is_none() {
                return best.map_or(max, |b| b.0);
            }
            if let Some(hit) = entry.octree.pick_cube(ray, max, max_depth) {
                if best.is_none_or(|(t, serial, _, _)| (hit.t, entry.serial) < (t, serial)) {
                    best = Some((hit.t, entry.serial, index, hit));
                }
            }
            best.map_or(max, |b| b.0)
        });
        let (_, _, index, hit) = best?;
        let slot = &self.slots[index as usize];
        let octree = &slot.entry.as_ref().expect("live").octree;
        Some((OctreeId { index, generation: slot.generation }, octree.describe(ray, &hit)))
    }

    /// [`OctreeSet::pick`] for every ray, as parallel jobs: `out[i]` gets ray `i`'s
    /// result. The same for any worker count (each ray is independent).
    pub fn pick_batch(
        &self,
        rays: &[PickRay],
        max_t: f32,
        max_depth: u32,
        out: &mut [Option<(OctreeId, OctreeHit)>],
        jobs: Jobs,
    ) {
        assert_eq!(rays.len(), out.len(), "one output slot per ray");
        jobs.for_each_mut(out, |i, slot, _| *slot = self.pick(&rays[i], max_t, max_depth));
    }

    /// Checks every octree, the tree, and that each octree holding solid cubes has
    /// a proxy with its box. Panics on the first broken rule.
    pub fn validate(&self) {
        self.tree.validate();
        let mut proxies = 0;
        for (id, entry) in self.entries() {
            entry.octree.validate();
            let solid = entry.octree.solid_bounds() != Aabb::EMPTY;
            match entry.proxy {
                Some(proxy) => {
                    proxies += 1;
                    assert!(solid, "octree {id:?} has a proxy but no solid cube");
                    assert_eq!(self.tree.fat_aabb(proxy), entry.octree.bounds(), "octree {id:?}: proxy box is stale");
                    assert_eq!(self.tree.user_data(proxy), id.index as u64, "octree {id:?}: proxy names another slot");
                }
                None => assert!(!solid, "octree {id:?} has solid cubes but no proxy"),
            }
        }
        assert_eq!(proxies, self.tree.proxy_count(), "tree holds proxies of removed octrees");
        assert_eq!(self.entries().count(), self.len);
    }

    fn refresh_proxy(&mut self, index: u32) {
        let entry = self.slots[index as usize].entry.as_mut().expect("live");
        let bounds = entry.octree.bounds();
        let wanted = entry.octree.solid_bounds() != Aabb::EMPTY;
        match entry.proxy {
            Some(proxy) if wanted && self.tree.fat_aabb(proxy) == bounds => {}
            Some(proxy) => {
                self.tree.destroy_proxy(proxy);
                entry.proxy = wanted.then(|| self.tree.create_proxy(&bounds, index as u64));
            }
            None if wanted => entry.proxy = Some(self.tree.create_proxy(&bounds, index as u64)),
            None => {}
        }
    }
}

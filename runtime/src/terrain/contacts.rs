//! Contact management between bodies and terrain chunks: at most one solid and one
//! water contact per body-chunk pair, created and removed as bodies move, reported to
//! the narrowphase as added, kept and removed.
//!
//! The reference queries the bit broadphase with a body's old and new boxes and
//! compares. Here the contacts a body had (from its previous box) are stored, sorted
//! by (body, chunk, kind); an update queries the new box and diffs against that list,
//! which is the same comparison without querying the old box again.

use glam::IVec3;

use super::Terrain;
use crate::jobs::{chunk_count, chunk_range, Jobs};
use crate::math::Aabb;

/// Bodies per contact-update job.
const BODY_GRAIN: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ContactKind {
    Solid,
    Water,
}

/// One body-chunk contact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TerrainContact {
    pub body: u32,
    pub chunk: IVec3,
    pub kind: ContactKind,
}

impl TerrainContact {
    pub(crate) fn key(&self) -> (u32, [i32; 3], ContactKind) {
        (self.body, [self.chunk.y, self.chunk.z, self.chunk.x], self.kind)
    }
}

/// The contact list and the last update's changes.
#[derive(Debug, Default)]
pub struct TerrainContacts {
    contacts: Vec<TerrainContact>,
    added: Vec<TerrainContact>,
    kept: Vec<TerrainContact>,
    removed: Vec<TerrainContact>,
    /// Scratch: the update's bodies sorted, per-job outputs, the merged list.
    bodies: Vec<(u32, Aabb)>,
    order: Vec<(u32, u32)>,
    job_out: Vec<Vec<TerrainContact>>,
    merged: Vec<TerrainContact>,
}

impl TerrainContacts {
    pub fn new() -> TerrainContacts {
        TerrainContacts::default()
    }

    /// Every contact, sorted by (body, chunk, kind).
    pub fn contacts(&self) -> &[TerrainContact] {
        &self.contacts
    }

    pub fn added(&self) -> &[TerrainContact] {
        &self.added
    }

    pub fn kept(&self) -> &[TerrainContact] {
        &self.kept
    }

    pub fn removed(&self) -> &[TerrainContact] {
        &self.removed
    }

    /// Re-evaluates the contacts of `bodies` (body id and its current box; a body
    /// listed twice counts once, with its last box) against `terrain`, querying in
    /// parallel. Bodies not listed keep their contacts untouched. A body whose box is
    /// not finite loses its contacts.
    pub fn update(&mut self, terrain: &Terrain, bodies: &[(u32, Aabb)], jobs: Jobs) {
        self.added.clear();
        self.kept.clear();
        self.removed.clear();
        // Sort by (body, input position): unique keys, so an unstable sort keeps the
        // input order per body without the merge buffer a stable sort allocates;
        // then keep the last entry of each body.
        self.order.clear();
        self.order.extend(bodies.iter().enumerate().map(|(i, b)| (b.0, i as u32)));
        self.order.sort_unstable();
        self.bodies.clear();
        for (k, &(body, i)) in self.order.iter().enumerate() {
            if self.order.get(k + 1).is_none_or(|next| next.0 != body) {
                self.bodies.push(bodies[i as usize]);
            }
        }

        // New contact lists, in body order, one buffer per job.
        let jobs_needed = chunk_count(self.bodies.len(), BODY_GRAIN);
        if self.job_out.len() < jobs_needed {
            self.job_out.resize_with(jobs_needed, Vec::new);
        }
        let list = &self.bodies;
        jobs.for_each_mut(&mut self.job_out[..jobs_needed], |job, out, _| {
            out.clear();
            for &(body, aabb) in &list[chunk_range(&(0..list.len()), BODY_GRAIN, job)] {
                terrain.for_each_overlap(&aabb, |chunk, overlap| {
                    if overlap.solid {
                        out.push(TerrainContact { body, chunk, kind: ContactKind::Solid });
                    }
                    if overlap.water {
                        out.push(TerrainContact { body, chunk, kind: ContactKind::Water });
                    }
                    true
                });
            }
        });

        // Merge: old contacts of untouched bodies stay; updated bodies get their new
        // lists, diffed against their old ones.
        self.merged.clear();
        let new_lists = self.job_out[..jobs_needed].iter().flat_map(|v| v.iter().copied());
        let mut new_iter = new_lists.peekable();
        let mut old = self.contacts.iter().copied().peekable();
        for &(body, _) in &self.bodies {
            while let Some(c) = old.next_if(|c| c.body < body) {
                self.merged.push(c);
            }
            let mut olds = std::iter::from_fn(|| old.next_if(|c| c.body == body)).peekable();
            let mut news = std::iter::from_fn(|| new_iter.next_if(|c| c.body == body)).peekable();
            loop {
                match (olds.peek(), news.peek()) {
                    (Some(o), Some(n)) if o.key() == n.key() => {
                        self.kept.push(*n);
                        self.merged.push(*n);
                        olds.next();
                        news.next();
                    }
                    (Some(o), Some(n)) if o.key() < n.key() => {
                        self.removed.push(*o);
                        olds.next();
                    }
                    (_, Some(n)) => {
                        self.added.push(*n);
                        self.merged.push(*n);
                        news.next();
                    }
                    (Some(o), None) => {
                        self.removed.push(*o);
                        olds.next();
                    }
                    (None, None) => break,
                }
            }
        }
        self.merged.extend(old);
        std::mem::swap(&mut self.contacts, &mut self.merged);
    }

    /// Drops every contact of `body` (it was destroyed) and returns them as removed.
    pub fn remove_body(&mut self, body: u32) -> &[TerrainContact] {
        self.removed.clear();
        let removed = &mut self.removed;
        self.contacts.retain(|c| {
            if c.body == body {
                removed.push(*c);
            }
            c.body != body
        });
        &self.removed
    }
}

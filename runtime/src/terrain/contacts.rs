//! Contact management between bodies and terrain chunks: at most one solid and one
//! water contact per body-chunk pair, created and removed as bodies move, reported to
//! the narrowphase as added, kept and removed.
//!
//! The reference queries the bit broadphase with a body's old and new boxes and
//! compares. Here the contacts a body had (from its previous box) are stored, sorted
//! by (body, chunk, kind); an update queries the new box and diffs against that list,
//! which is the same comparison without querying the old box again.
//!
//! A query's answer depends only on the box's voxel range and the masks, so each
//! body's last voxel range is kept too, with the masks' stamp then
//! ([`Terrain::mask_stamp`]): a body whose range has not changed under the same
//! masks keeps its contacts without a query. A body resting or moving slowly in the
//! rain scene keeps them most steps.

use glam::IVec3;

use super::Terrain;
use crate::codec::{Codec, Corrupt, Reader, Writer};
use crate::jobs::{chunk_count, chunk_range, Jobs};
use crate::math::Aabb;

/// Bodies per contact-update job.
const BODY_GRAIN: usize = 32;

/// "None" in the update's plan.
const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ContactKind {
    #[default]
    Solid,
    Water,
}

impl Codec for ContactKind {
    fn put(&self, w: &mut Writer) {
        (*self as u8).put(w);
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = [ContactKind::Solid, ContactKind::Water][r.tag(2)? as usize];
        Ok(())
    }
}

crate::codec::fields!(TerrainContact { body, chunk, kind });

/// The lists and ranges; the rest is the update's scratch. A range's mask stamp is
/// written as 1 when it is the attached terrain's current stamp and 0 otherwise (a
/// stamp names masks in one process only), and read back as the restoring world's
/// current stamp or 0, which no masks have.
impl Codec for TerrainContacts {
    fn put(&self, w: &mut Writer) {
        for list in [&self.contacts, &self.added, &self.kept, &self.removed] {
            list.put(w);
        }
        (self.ranges.len() as u32).put(w);
        for &(body, range, stamp) in &self.ranges {
            (body, range, (stamp == w.mask_stamp && stamp != 0) as u64).put(w);
        }
        self.reused.put(w);
    }

    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        for list in [&mut self.contacts, &mut self.added, &mut self.kept, &mut self.removed] {
            list.take(r)?;
        }
        self.ranges.take(r)?;
        for range in &mut self.ranges {
            range.2 = match range.2 {
                0 => 0,
                1 => r.mask_stamp,
                _ => return Err(Corrupt),
            };
        }
        self.reused.take(r)?;
        self.reindex();
        Ok(())
    }
}

/// One body-chunk contact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
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

/// The leading contacts of `list` that belong to `body`.
fn run_of(list: &[TerrainContact], body: u32) -> &[TerrainContact] {
    &list[..list.iter().take_while(|c| c.body == body).count()]
}

/// One update job's output: its bodies' contacts, each body's new voxel range, and
/// how many kept their contacts without a query.
type JobOut = (Vec<TerrainContact>, Vec<Option<[IVec3; 2]>>, usize);

/// The contact list and the last update's changes.
#[derive(Clone, Debug, Default)]
pub struct TerrainContacts {
    contacts: Vec<TerrainContact>,
    added: Vec<TerrainContact>,
    kept: Vec<TerrainContact>,
    removed: Vec<TerrainContact>,
    /// Each body's voxel range at its last query and the masks' stamp then, sorted by
    /// body (see the module notes).
    ranges: Vec<(u32, [IVec3; 2], u64)>,
    /// By body: where its range is in `ranges` (`u32::MAX`: none), and where its run
    /// of `contacts` starts (one more entry: the end), so that [`range_of`] and
    /// [`contacts_of`] look up instead of searching (each search missed the cache at
    /// every level: a third of a fast body's sweep among ragdolls on hills).
    ///
    /// [`range_of`]: TerrainContacts::range_of
    /// [`contacts_of`]: TerrainContacts::contacts_of
    range_at: Vec<u32>,
    first: Vec<u32>,
    /// Whether `range_at` and `first` are made (see `reindex`).
    indexed: bool,
    /// Scratch: the update's bodies sorted, per body where its last range and its
    /// contacts lie (`NONE` for none), per-job outputs (contacts, and each body's new
    /// range), the merged lists.
    bodies: Vec<(u32, Aabb)>,
    plan: Vec<(u32, u32, u32)>,
    order: Vec<(u32, u32)>,
    job_out: Vec<JobOut>,
    reused: usize,
    merged: Vec<TerrainContact>,
    merged_ranges: Vec<(u32, [IVec3; 2], u64)>,
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

    /// Renames the mask stamp `from` as `to` (the masks it named were rebuilt equal).
    pub fn restamp(&mut self, from: u64, to: u64) {
        for range in &mut self.ranges {
            if range.2 == from {
                range.2 = to;
            }
        }
    }

    /// `body`'s voxel range at its last query and the masks' stamp then. While the
    /// stamp is [`Terrain::mask_stamp`], a box whose [`Terrain::voxel_range`] lies
    /// inside that range touches solid or water only in chunks among its contacts.
    pub fn range_of(&self, body: u32) -> Option<([IVec3; 2], u64)> {
        let at = match self.indexed {
            true => *self.range_at.get(body as usize)? as usize,
            false => self.ranges.binary_search_by_key(&body, |r| r.0).ok()?,
        };
        let &(_, range, stamp) = self.ranges.get(at)?;
        Some((range, stamp))
    }

    /// The contacts of `body`, sorted by (chunk, kind).
    pub fn contacts_of(&self, body: u32) -> &[TerrainContact] {
        if !self.indexed {
            let from = self.contacts.partition_point(|c| c.body < body);
            return run_of(&self.contacts[from..], body);
        }
        match (self.first.get(body as usize), self.first.get(body as usize + 1)) {
            (Some(&from), Some(&to)) => &self.contacts[from as usize..to as usize],
            _ => &[],
        }
    }

    /// Makes `range_at` and `first` from `ranges` and `contacts`, unless their largest
    /// body id is far past their length (ids this sparse are searched for instead:
    /// the index stays within a few times the lists' size, whatever a restored
    /// snapshot holds).
    fn reindex(&mut self) {
        let (ranges, contacts) = (&self.ranges, &self.contacts);
        let ids = ranges.iter().map(|r| r.0).chain(contacts.iter().map(|c| c.body));
        let bodies = ids.max().map_or(0, |id| id as usize + 1);
        self.indexed = bodies <= 16 * (ranges.len() + contacts.len()) + 65_536;
        self.range_at.clear();
        self.first.clear();
        if !self.indexed {
            return;
        }
        self.range_at.resize(bodies, u32::MAX);
        for (i, r) in ranges.iter().enumerate() {
            self.range_at[r.0 as usize] = i as u32;
        }
        let mut c = 0;
        for body in 0..=bodies as u32 {
            while c < contacts.len() && contacts[c].body < body {
                c += 1;
            }
            self.first.push(c as u32);
        }
    }

    /// Bodies of the last update that kept their contacts without a query: their
    /// voxel range and the masks were as at their previous query.
    pub fn reused(&self) -> usize {
        self.reused
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

        // Where each body's last range (under these masks) and contacts lie: all
        // three lists are sorted by body.
        let stamp = terrain.mask_stamp();
        self.plan.clear();
        let (mut r, mut o) = (0, 0);
        for &(body, _) in &self.bodies {
            while r < self.ranges.len() && self.ranges[r].0 < body {
                r += 1;
            }
            while o < self.contacts.len() && self.contacts[o].body < body {
                o += 1;
            }
            let known = self.ranges.get(r).is_some_and(|x| x.0 == body && x.2 == stamp);
            let run = run_of(&self.contacts[o..], body).len();
            self.plan.push((if known { r as u32 } else { NONE }, o as u32, (o + run) as u32));
        }
        // New contact lists, in body order, one buffer per job.
        let jobs_needed = chunk_count(self.bodies.len(), BODY_GRAIN);
        if self.job_out.len() < jobs_needed {
            self.job_out.resize_with(jobs_needed, Default::default);
        }
        let (list, plan, ranges, old) = (&self.bodies, &self.plan, &self.ranges, &self.contacts);
        jobs.for_each_mut(&mut self.job_out[..jobs_needed], |job, (out, new_ranges, reused), _| {
            out.clear();
            new_ranges.clear();
            *reused = 0;
            for i in chunk_range(&(0..list.len()), BODY_GRAIN, job) {
                let (body, aabb) = list[i];
                let (last, from, to) = plan[i];
                let range = terrain.voxel_range(&aabb).map(|(lo, hi)| [lo, hi]);
                new_ranges.push(range);
                if range.is_some() && last != NONE && Some(ranges[last as usize].1) == range {
                    out.extend_from_slice(&old[from as usize..to as usize]);
                    *reused += 1;
                    continue;
                }
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

        // The ranges: the updated bodies' new ones, the others' as they were.
        self.merged_ranges.clear();
        let mut r = 0;
        self.reused = self.job_out[..jobs_needed].iter().map(|j| j.2).sum();
        let new_ranges = self.job_out[..jobs_needed].iter().flat_map(|(_, ranges, _)| ranges);
        for (&(body, _), range) in self.bodies.iter().zip(new_ranges) {
            while r < self.ranges.len() && self.ranges[r].0 < body {
                self.merged_ranges.push(self.ranges[r]);
                r += 1;
            }
            if self.ranges.get(r).is_some_and(|x| x.0 == body) {
                r += 1;
            }
            if let Some(range) = range {
                self.merged_ranges.push((body, *range, stamp));
            }
        }
        self.merged_ranges.extend_from_slice(&self.ranges[r..]);
        std::mem::swap(&mut self.ranges, &mut self.merged_ranges);

        // Merge: old contacts of untouched bodies stay; updated bodies get their new
        // lists, diffed against their old ones. Both lists are sorted by key, and the
        // jobs' lists follow the sorted bodies, job by job.
        self.merged.clear();
        let old = &self.contacts;
        let mut o = 0;
        for (job, (news, _, _)) in self.job_out[..jobs_needed].iter().enumerate() {
            let mut n = 0;
            for &(body, _) in &self.bodies[chunk_range(&(0..self.bodies.len()), BODY_GRAIN, job)] {
                let untouched = o;
                while o < old.len() && old[o].body < body {
                    o += 1;
                }
                self.merged.extend_from_slice(&old[untouched..o]);
                let (olds, news) = (run_of(&old[o..], body), run_of(&news[n..], body));
                (o, n) = (o + olds.len(), n + news.len());
                let (mut i, mut j) = (0, 0);
                while i < olds.len() || j < news.len() {
                    let order = match (olds.get(i), news.get(j)) {
                        (Some(a), Some(b)) => a.key().cmp(&b.key()),
                        (Some(_), None) => std::cmp::Ordering::Less,
                        _ => std::cmp::Ordering::Greater,
                    };
                    match order {
                        std::cmp::Ordering::Equal => {
                            self.kept.push(news[j]);
                            self.merged.push(news[j]);
                            (i, j) = (i + 1, j + 1);
                        }
                        std::cmp::Ordering::Less => {
                            self.removed.push(olds[i]);
                            i += 1;
                        }
                        std::cmp::Ordering::Greater => {
                            self.added.push(news[j]);
                            self.merged.push(news[j]);
                            j += 1;
                        }
                    }
                }
            }
        }
        self.merged.extend_from_slice(&old[o..]);
        std::mem::swap(&mut self.contacts, &mut self.merged);
        self.reindex();
    }

    /// Drops every contact of `body` (it was destroyed) and returns them as removed.
    pub fn remove_body(&mut self, body: u32) -> &[TerrainContact] {
        // Its id may come back for another body, whose box must be queried.
        self.ranges.retain(|r| r.0 != body);
        self.removed.clear();
        let removed = &mut self.removed;
        self.contacts.retain(|c| {
            if c.body == body {
                removed.push(*c);
            }
            c.body != body
        });
        self.reindex();
        &self.removed
    }
}

//! The constraint graph: a step's constraints grouped by colour so that the
//! constraints of one colour share no dynamic body and run in parallel with the same
//! result for any worker count (Box2D v3's `constraint_graph.c`). Constraints that fit
//! no colour go to an overflow list solved on one thread, first. Within a colour the
//! constraints with points ride in SIMD bundles of 4, 8 or 16 lanes (`wide.rs`); the
//! rest are solved one by one. The colours are also the stages of the solver's plan
//! ([`Coloring::plan`]: each pass over each colour, and the body loops between them),
//! which `solver.rs` runs.

use std::ops::Range;

use glam::Vec4;

use super::contact_solver::{prepare, Constraint, ConstraintTable, Frame, Prepared, NONE};
use super::simd::lanes::{self, Lanes};
#[cfg(target_arch = "x86_64")]
use super::simd::lanes::{F16, F8};
use super::simd::wide::{self, Bundle, Bundles, Width};
use crate::jobs::{Column, Jobs, Stages};
use crate::math::prefetch;

/// Number of graph colours; the rest overflows.
pub(crate) const COLORS: usize = 24;

/// Bundles (or scalar constraints) per prepare job.
const PREPARE_GRAIN: usize = 16;

/// What colouring needs of a constraint, gathered while the constraint is in cache
/// (reading it from the constraints, 384 bytes each, on one thread was most of `color`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Colorable {
    /// Awake rows of the dynamic bodies it moves (`NONE` for others).
    pub a: u32,
    pub b: u32,
    /// Whether it can ride in a bundle ([`wide::accepts`]).
    pub bundles: bool,
    /// Whether it has points and restitution: without any, the restitution pass
    /// (which would read every constraint to find out) is skipped.
    pub bouncy: bool,
    /// Whether it is a ball joint, solved with others in SIMD lanes (`simd/ball.rs`).
    pub ball: bool,
}

impl Colorable {
    pub const NONE: Colorable = Colorable { a: NONE, b: NONE, bundles: false, bouncy: false, ball: false };

    /// From a constraint with its rows set, whose bodies have the inverse masses
    /// `ma` and `mb`.
    pub fn of(c: &Constraint, (ma, mb): (f32, f32)) -> Colorable {
        Colorable {
            a: if ma > 0.0 { c.row_a } else { NONE },
            b: if mb > 0.0 { c.row_b } else { NONE },
            bundles: wide::accepts(c),
            bouncy: c.count > 0 && c.restitution != 0.0,
            ball: false,
        }
    }
}

/// The constraints of a step grouped by colour: `order[ranges[k]]` are colour `k`'s
/// constraint indices, the last range is the overflow. Within a colour, the first
/// `bundled[k]` constraints ride `lanes` at a time in `bundles[bundle_ranges[k]]` (see
/// [`super::simd::wide`]) and the rest are solved one by one. The constraints themselves
/// stay where the narrowphase put them: moving the constraints (384 bytes each) into colour
/// order took a copy and a permutation on one thread (about 5% of the pyramid's step).
#[derive(Debug)]
pub(crate) struct Coloring {
    /// One bit per awake row, per colour.
    pub(super) used: Vec<Vec<u64>>,
    /// Sort key per constraint: colour * 2, plus 1 when it takes the scalar path.
    pub(super) key: Vec<u8>,
    pub(super) counts: [usize; COLORS + 1],
    /// Constraint indices, colour by colour (bundled first), the overflow last.
    pub(super) order: Vec<u32>,
    pub(super) ranges: Vec<Range<usize>>,
    /// Whether colours solve in bundles (off: every constraint is scalar).
    pub wide: bool,
    /// Constraints per bundle: 16 where the CPU has AVX-512F, 8 where it has AVX,
    /// else 4 (the results are the same; see `lanes.rs`). Private: wider bundles run
    /// AVX or AVX-512 code, so only [`Coloring::set_lanes`] may choose them, after
    /// checking the CPU.
    pub(super) lanes: usize,
    pub(super) bundled: [usize; COLORS],
    pub(super) bundles4: Bundles<Vec4>,
    #[cfg(target_arch = "x86_64")]
    pub(super) bundles8: Bundles<F8>,
    #[cfg(target_arch = "x86_64")]
    pub(super) bundles16: Bundles<F16>,
    pub(super) bundle_ranges: Vec<Range<usize>>,
    /// The constraints solved one by one (prepared without a bundle).
    pub(super) scalar: Vec<u32>,
    /// Whether any constraint is [`Colorable::bouncy`].
    pub(super) bouncy: bool,
    /// [`Colorable::ball`] by constraint index: the solve picks the ball joints out of
    /// a colour's run without reading the joints (a cache miss each).
    pub(super) balls: Vec<bool>,
    /// What [`prepare`] derived, by constraint index: written for the scalar
    /// constraints and the bundled ones that the passes on constraints read
    /// (restitution, position correction), stale elsewhere. It only grows.
    pub(super) prepared: Vec<Prepared>,
    /// Passes run since the prepare, plus one: odd ones sweep the colours backward (see
    /// [`Coloring::plan`]). A pass starts with the colours the pass before ended
    /// with, whose bundles are still in the core's cache: bundles of eight take 2 KB
    /// each, and `large_pyramid`'s 4 MB of them do not fit a 2 MB L2, so a pass always
    /// in the same direction fetched every bundle from farther away. Alternate
    /// directions also make each solve and relax pair a symmetric Gauss-Seidel sweep.
    /// Only the passes on bundles count.
    pub(super) sweeps: u32,
    /// Whether passes alternate (the soft step's). Sequential impulses' eight rigid
    /// velocity passes in a row hold a pyramid worse when they alternate (the
    /// 210-box pyramid's top drifted 43 cm in 20 s sweeping forward, 54 cm with the
    /// velocity passes alternating, 77 cm with the position passes too), so they
    /// keep one direction.
    pub alternate: bool,
    /// What each stage of the plan being run does, and the stages (see
    /// [`Coloring::plan`]); kept so that a step allocates nothing.
    pub(super) work: Vec<Work>,
    pub(super) stages: Stages,
    /// What the colours were last made of: the constraints' [`Colorable`]s, the awake
    /// rows and [`Coloring::wide`] (`None`: to be made afresh). The colouring is a
    /// function of them alone, so [`Coloring::color`] keeps the colours while they
    /// hold (the joint grid's 19,701 joints took a third of a millisecond to colour,
    /// on one thread, every step).
    made_for: Option<(usize, bool)>,
    made_of: Vec<Colorable>,
}

impl Default for Coloring {
    fn default() -> Coloring {
        Coloring {
            used: Vec::new(),
            key: Vec::new(),
            counts: [0; COLORS + 1],
            order: Vec::new(),
            ranges: Vec::new(),
            wide: crate::math::simd_allows(crate::math::SimdLevel::Sse2),
            lanes: match (lanes::sixteen_available(), lanes::eight_available()) {
                (true, _) => 16,
                (false, true) => 8,
                (false, false) => 4,
            },
            bundled: [0; COLORS],
            bundles4: Bundles::default(),
            #[cfg(target_arch = "x86_64")]
            bundles8: Bundles::default(),
            #[cfg(target_arch = "x86_64")]
            bundles16: Bundles::default(),
            bundle_ranges: Vec::new(),
            scalar: Vec::new(),
            bouncy: false,
            balls: Vec::new(),
            prepared: Vec::new(),
            sweeps: 0,
            alternate: true,
            work: Vec::new(),
            stages: Stages::new(),
            made_for: None,
            made_of: Vec::new(),
        }
    }
}

impl Coloring {
    /// Assigns every constraint the first colour in which none of its dynamic bodies
    /// appears yet (in constraint order: deterministic), then orders the constraint
    /// indices by colour, and within a colour those that can ride in bundles first.
    /// Returns whether the colours were kept from the last call, made of the same
    /// constraints (then [`Coloring::number_joints`] has numbered them already).
    pub fn color(&mut self, constraints: &[Colorable], rows: usize) -> bool {
        if self.made_for == Some((rows, self.wide)) && self.made_of == constraints {
            return true;
        }
        self.made_of.clear();
        self.made_of.extend_from_slice(constraints);
        self.made_for = Some((rows, self.wide));
        let words = rows.div_ceil(64);
        self.used.resize_with(COLORS, Vec::new);
        for bits in &mut self.used {
            bits.clear();
            bits.resize(words, 0);
        }
        self.key.clear();
        self.counts = [0; COLORS + 1];
        let mut keys = [0usize; 2 * COLORS + 1];
        self.bouncy = constraints.iter().any(|c| c.bouncy);
        self.balls.clear();
        self.balls.extend(constraints.iter().map(|c| c.ball));
        for c in constraints {
            let a = (c.a != NONE).then_some(c.a as usize);
            let b = (c.b != NONE).then_some(c.b as usize);
            let mut chosen = COLORS;
            for (k, bits) in self.used.iter_mut().enumerate() {
                let free = |r: Option<usize>| r.is_none_or(|r| bits[r / 64] & (1 << (r % 64)) == 0);
                if free(a) && free(b) {
                    for r in [a, b].into_iter().flatten() {
                        bits[r / 64] |= 1 << (r % 64);
                    }
                    chosen = k;
                    break;
                }
            }
            let scalar = chosen < COLORS && !(self.wide && c.bundles);
            let key = 2 * chosen + scalar as usize;
            self.key.push(key as u8);
            keys[key] += 1;
            self.counts[chosen] += 1;
        }
        // Counting sort by key: colour by colour, bundled first, overflow last.
        self.ranges.clear();
        let mut start = 0;
        let mut offsets = [0usize; 2 * COLORS + 1];
        for (k, count) in keys.iter().enumerate() {
            offsets[k] = start;
            start += count;
        }
        for k in 0..=COLORS {
            self.ranges.push(offsets[2 * k]..offsets[2 * k] + self.counts[k]);
        }
        for k in 0..COLORS {
            self.bundled[k] = keys[2 * k];
        }
        self.order.clear();
        self.order.resize(constraints.len(), 0);
        for (i, &k) in self.key.iter().enumerate() {
            self.order[offsets[k as usize]] = i as u32;
            offsets[k as usize] += 1;
        }
        false
    }

    /// The next [`Coloring::color`] colours afresh (the joints' numbering it keeps
    /// with the colours was replaced, by a snapshot's restore).
    pub fn forget(&mut self) {
        self.made_for = None;
    }

    /// Renumbers the coloured constraints from `contacts` on (the joints) in the
    /// order the colours take them, and writes to `of[n]` which joint (less
    /// `contacts`) is now number `n`. Within a colour the order is unchanged, so
    /// every pass solves the same joints in the same sequence: only where their rows
    /// live moves (see `Joints::fill`, which also sets their part of `balls`).
    pub fn number_joints(&mut self, contacts: usize, of: &mut Vec<u32>) {
        of.clear();
        for i in &mut self.order {
            if *i as usize >= contacts {
                of.push(*i - contacts as u32);
                *i = (contacts + of.len() - 1) as u32;
            }
        }
    }

    /// Bundles of 4, of 8 where the CPU has AVX, or of 16 where it has AVX-512F
    /// (panics otherwise).
    #[cfg(test)]
    pub fn set_lanes(&mut self, lanes: usize) {
        let available = match lanes {
            4 => true,
            8 => lanes::eight_available(),
            16 => lanes::sixteen_available(),
            _ => false,
        };
        assert!(available, "{lanes} lanes on this CPU");
        self.lanes = lanes;
    }

    /// Colours in use (not counting the overflow).
    pub fn color_count(&self) -> usize {
        self.counts[..COLORS].iter().filter(|&&n| n > 0).count()
    }

    pub fn overflow(&self) -> usize {
        self.counts[COLORS]
    }

    /// Prepares every constraint that stays scalar ([`prepare`], from the frame
    /// `frame(c, true)` gives it: `false` asks for the centres alone) and packs each colour's bundled ones, a bundle at a time,
    /// while the constraint is still in cache; a packed bundle computes its masses
    /// for all lanes at once ([`Width::finish`]). Bundled constraints are only read,
    /// unless `write_back` (the passes that run on the constraints themselves read
    /// them: position correction) or they have restitution (the restitution pass):
    /// those are prepared as the scalar ones are.
    pub fn prepare(
        &mut self,
        constraints: &mut ConstraintTable,
        frame: impl Fn(&Constraint, bool) -> Frame + Sync,
        write_back: bool,
        jobs: Jobs,
    ) {
        if self.prepared.len() < constraints.len() {
            self.prepared.resize(constraints.len(), Prepared::default());
        }
        #[cfg(target_arch = "x86_64")]
        if self.lanes == 16 {
            let mut bundles = std::mem::take(&mut self.bundles16);
            self.prepare_into(&mut bundles, constraints, &frame, write_back, jobs);
            self.bundles16 = bundles;
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if self.lanes == 8 {
            let mut bundles = std::mem::take(&mut self.bundles8);
            self.prepare_into(&mut bundles, constraints, &frame, write_back, jobs);
            self.bundles8 = bundles;
            return;
        }
        let mut bundles = std::mem::take(&mut self.bundles4);
        self.prepare_into(&mut bundles, constraints, &frame, write_back, jobs);
        self.bundles4 = bundles;
    }

    fn prepare_into<L: Width>(
        &mut self,
        Bundles { bundles, extras }: &mut Bundles<L>,
        constraints: &mut ConstraintTable,
        frame: &(impl Fn(&Constraint, bool) -> Frame + Sync),
        write_back: bool,
        jobs: Jobs,
    ) {
        // The prepare writes the bundles first to last: the first pass goes back.
        self.sweeps = 1;
        self.bundle_ranges.clear();
        self.scalar.clear();
        let mut total = 0;
        for k in 0..COLORS {
            let n = self.bundled[k].div_ceil(L::N);
            self.bundle_ranges.push(total..total + n);
            total += n;
            let range = &self.ranges[k];
            self.scalar.extend_from_slice(&self.order[range.start + self.bundled[k]..range.end]);
        }
        self.scalar.extend_from_slice(&self.order[self.ranges[COLORS].clone()]);
        // Every bundle is overwritten below: only new ones need a value first.
        bundles.truncate(total);
        bundles.resize(total, Bundle::EMPTY);
        // Each part of a bundle's extras is written only by a bundle with a lane that
        // needs it, which sets it up first: the others keep what they hold, never
        // touched.
        if extras.len() < total {
            extras.resize(total, wide::Extras::EMPTY);
        }
        let (order, ranges, bundled) = (&self.order, &self.ranges, &self.bundled);
        let (bundle_ranges, scalar) = (&self.bundle_ranges, &self.scalar);
        let bundles = Column::new(bundles);
        let extras = Column::new(extras);
        let prepared = Column::new(&mut self.prepared);
        let constraints = &*constraints;
        jobs.parallel_for(0..total + scalar.len(), PREPARE_GRAIN, |chunk, _| {
            for i in chunk.clone() {
                // SAFETY (constraints, prepared and bundles): every constraint index
                // appears once in `order` (so in one bundle lane or once in `scalar`),
                // and `parallel_for` hands each item to exactly one job.
                if i >= total {
                    let index = scalar[i - total] as usize;
                    if index >= constraints.len() {
                        // A joint: the world prepares its own.
                        continue;
                    }
                    // SAFETY: as above.
                    let (c, s) = unsafe { (constraints.get_unchecked(index), prepared.get(index)) };
                    prepare(c, s, &frame(c, true));
                    continue;
                }
                let k = bundle_ranges.partition_point(|r| r.end <= i);
                let first = ranges[k].start + (i - bundle_ranges[k].start) * L::N;
                let last = (first + L::N).min(ranges[k].start + bundled[k]);
                // SAFETY: as above.
                let (b, e) = unsafe { (bundles.get(i), extras.get(i)) };
                if last - first == L::N {
                    let mut counts = [0u32; lanes::MAX_LANES];
                    for (lane, &index) in order[first..last].iter().enumerate() {
                        // SAFETY: as above (read only).
                        counts[lane] = unsafe { (*constraints.ptr(index as usize)).count };
                    }
                    b.reset_full(&counts[..L::N]);
                } else {
                    *b = Bundle::EMPTY;
                }
                for (lane, &index) in order[first..last].iter().enumerate() {
                    // The constraint in this lane of the next bundle (the colour's
                    // bundled ones are consecutive in `order`; past the colour, a
                    // harmless guess, if a contact): one at a time, so the fetches of its lines
                    // overlap this bundle's work instead of queueing all at once.
                    if let Some(&next) = order.get(first + lane + L::N).filter(|&&n| (n as usize) < constraints.len()) {
                        prefetch(constraints.ptr(next as usize).cast::<[u8; Constraint::SOLVER_BYTES]>());
                    }
                    // SAFETY: as above.
                    let c = unsafe { constraints.get_unchecked(index as usize) };
                    // The passes on constraints read what `prepare` derives.
                    let write_back = write_back || c.restitution != 0.0;
                    let f = frame(c, write_back);
                    if write_back {
                        // SAFETY: as above.
                        prepare(c, unsafe { prepared.get(index as usize) }, &f);
                    }
                    b.prepare_lane(e, lane, index, c, &f);
                }
                L::finish(b, e);
            }
        });
    }

    /// Copies the bundles' impulses back into their constraints (and, for those with
    /// restitution, the largest normal impulses into [`Coloring::prepared`]).
    pub fn unpack(&mut self, constraints: &mut ConstraintTable, jobs: Jobs) {
        let prepared = Column::new(&mut self.prepared);
        #[cfg(target_arch = "x86_64")]
        if self.lanes == 16 {
            return unpack(&self.bundles16, constraints, &prepared, jobs);
        }
        #[cfg(target_arch = "x86_64")]
        if self.lanes == 8 {
            return unpack(&self.bundles8, constraints, &prepared, jobs);
        }
        unpack(&self.bundles4, constraints, &prepared, jobs);
    }
}

/// Constraints per solver job.
const SOLVE_GRAIN: usize = 64;

fn unpack<L: Lanes>(
    Bundles { bundles, extras }: &Bundles<L>,
    constraints: &mut ConstraintTable,
    prepared: &Column<Prepared>,
    jobs: Jobs,
) {
    let column = &*constraints;
    jobs.parallel_for(0..bundles.len(), 64, |chunk, _| {
        let (bundles, extras) = (&bundles[chunk.clone()], &extras[chunk]);
        for (i, (b, e)) in bundles.iter().zip(extras).enumerate() {
            let next = bundles.get(i + 1).map_or(&[][..], |n| n.indices());
            // SAFETY: every constraint is in at most one bundle, and each bundle goes
            // to exactly one job.
            unsafe { b.unpack(e, column, prepared, next) };
        }
    });
}

/// A pass over all constraints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    WarmStart,
    Solve,
    Relax,
    Restitute,
    /// Sequential impulses' position correction (runs on the constraints).
    CorrectPositions,
}

/// A loop over the awake bodies that a solve plan runs between constraint passes;
/// the caller supplies it (see [`run_plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyPass {
    IntegrateVelocities,
    IntegratePositions,
}

/// One step of a solve plan, in execution order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Bodies(BodyPass),
    Pass(Pass),
}

/// What one stage of a plan runs (see [`Coloring::plan`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Work {
    /// The caller's loop over the awake rows, in chunks of [`BODY_GRAIN`].
    Bodies(BodyPass),
    /// The overflow's constraints, in order, as one chunk.
    Overflow(Pass),
    /// A colour: items `0..packed` are the bundles `first_bundle + i`, the rest the
    /// constraints `order[first_scalar + i - packed]`.
    Colour { pass: Pass, first_bundle: u32, packed: u32, first_scalar: u32 },
}

/// Rows per chunk of a body loop.
const BODY_GRAIN: usize = 256;

impl Coloring {
    /// Cuts `ops` into stages, in order: a body loop is one stage over `rows` rows;
    /// a pass is the overflow (one chunk, on one worker) and then each colour's
    /// bundles and constraints, or, sweeping backward, the colours from the last to
    /// the first and then the overflow. The passes on bundles alternate directions
    /// when [`Coloring::alternate`] (see [`Coloring::sweeps`]); restitution is left
    /// out when no constraint bounces. Empty stages are left out.
    pub(crate) fn plan(&mut self, ops: &[Op], rows: usize) {
        self.work.clear();
        self.stages.clear();
        let overflow = self.ranges.get(COLORS).map_or(0, |r| r.len());
        for &op in ops {
            let pass = match op {
                Op::Bodies(body) => {
                    if rows > 0 {
                        self.stages.push(rows, BODY_GRAIN);
                        self.work.push(Work::Bodies(body));
                    }
                    continue;
                }
                Op::Pass(Pass::Restitute) if !self.bouncy => continue,
                Op::Pass(pass) => pass,
            };
            let bundles = !matches!(pass, Pass::Restitute | Pass::CorrectPositions);
            let backward = self.alternate && bundles && self.sweeps % 2 == 1;
            self.sweeps += bundles as u32;
            let push_overflow = |c: &mut Coloring| {
                if overflow > 0 {
                    c.stages.push(overflow, overflow);
                    c.work.push(Work::Overflow(pass));
                }
            };
            if !backward {
                push_overflow(self);
            }
            for i in 0..COLORS.min(self.ranges.len()) {
                let k = if backward { COLORS - 1 - i } else { i };
                let range = self.ranges[k].clone();
                let (packed, first_scalar) = match bundles && self.bundled[k] > 0 {
                    true => (self.bundle_ranges[k].clone(), range.start + self.bundled[k]),
                    false => (0..0, range.start),
                };
                let items = packed.len() + (range.end - first_scalar);
                if items == 0 {
                    continue;
                }
                let grain = if packed.is_empty() { SOLVE_GRAIN } else { SOLVE_GRAIN / self.lanes };
                self.stages.push(items, grain);
                self.work.push(Work::Colour {
                    pass,
                    first_bundle: packed.start as u32,
                    packed: packed.len() as u32,
                    first_scalar: first_scalar as u32,
                });
            }
            if backward {
                push_overflow(self);
            }
        }
    }
}

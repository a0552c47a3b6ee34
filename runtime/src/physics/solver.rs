//! The solver's plan: a step's passes (warm start, solve, relax, restitution, position
//! correction) over the colours of the constraint graph, and the body loops between
//! them (integrate velocities and positions), as one list of stages that the workers
//! walk in one parallel region ([`Jobs::run_stages`]) instead of one parallel loop per
//! colour with a fork and a join each (80 of them a step in `large_pyramid`, about 300
//! with more colours). Each stage's work runs on the bundles (`wide.rs`) or one
//! constraint at a time (`contact_solver.rs`), with the same bits.

use std::ops::Range;

use super::constraint_graph::{BodyPass, Coloring, Op, Pass, Work, COLORS};
use super::contact_solver::{correct_positions, restitute, solve, warm_start, BodyState, ConstraintTable, StepContext};
use super::joint_solver::{solve_joint, JointSolve, Mode};
use super::simd::ball::BallWidth;
use super::simd::lanes::{Lanes, MAX_LANES};
use super::simd::wide::{self, Bundle, Bundles, Width};
use crate::jobs::{Column, Jobs, Stages};

/// Runs the stages `coloring.plan` made in one parallel region
/// ([`Jobs::run_stages`]): `scalar(pass, indices)` for the constraints solved one by
/// one (a run of one colour's, or one of the overflow's at a time),
/// `wide(pass, bundle)` for the bundles, `bodies(loop, rows)` for the body loops.
fn execute<L, F, G, H>(
    coloring: &Coloring,
    stages: &mut Stages,
    all_bundles: &mut Bundles<L>,
    jobs: Jobs,
    run: (F, G, H),
) where
    L: Lanes,
    F: Fn(Pass, &[u32]) + Sync,
    G: Fn(Pass, &mut Bundle<L>, &mut wide::Extras<L>) + Sync,
    H: Fn(BodyPass, Range<usize>) + Sync,
{
    let (scalar, wide, bodies) = run;
    let (order, work) = (&coloring.order, &coloring.work);
    let overflow = coloring.ranges.get(COLORS).cloned().unwrap_or(0..0);
    let bundle_column = Column::new(&mut all_bundles.bundles);
    let extras_column = Column::new(&mut all_bundles.extras);
    jobs.run_stages(stages, |stage, items, _| match work[stage] {
        Work::Bodies(body) => bodies(body, items),
        Work::Overflow(pass) => {
            for k in overflow.clone() {
                scalar(pass, &order[k..k + 1]);
            }
        }
        Work::Colour { pass, first_bundle, packed, first_scalar } => {
            let (first_bundle, packed, first_scalar) = (first_bundle as usize, packed as usize, first_scalar as usize);
            for i in items.start..items.end.min(packed) {
                // SAFETY: one colour's bundles and constraints share no dynamic body,
                // and `run_stages` hands each item of a stage to exactly one job.
                unsafe { wide(pass, bundle_column.get(first_bundle + i), extras_column.get(first_bundle + i)) };
            }
            let scalars = items.start.max(packed)..items.end;
            if !scalars.is_empty() {
                scalar(pass, &order[first_scalar + scalars.start - packed..first_scalar + scalars.end - packed]);
            }
        }
    });
}

/// Runs `ops` over every constraint and awake body (see [`Coloring::plan`]): warm
/// start, solve and relax on the bundles (after [`Coloring::prepare`]), restitution
/// on the constraints (after [`Coloring::unpack`]), and so position correction (it
/// reads only what prepare wrote); the body loops through `bodies(loop, rows,
/// states)`. Coloured indices past the contacts are `joints` (warm start, solve and
/// relax; the other passes leave them). All in one parallel region: the soft step's four substeps are 80
/// (`large_pyramid`, 6 colours) to about 300 stages, which as separate parallel
/// loops paid a fork and a join each.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_plan<B>(
    ops: &[Op],
    coloring: &mut Coloring,
    constraints: &ConstraintTable,
    joints: &mut [JointSolve],
    states: &mut [BodyState],
    ctx: &StepContext,
    jobs: Jobs,
    bodies: B,
) where
    B: Fn(BodyPass, Range<usize>, &Column<BodyState>) + Sync,
{
    #[cfg(target_arch = "x86_64")]
    if coloring.lanes == 16 {
        let mut bundles = std::mem::take(&mut coloring.bundles16);
        run_plan_on(ops, coloring, &mut bundles, constraints, joints, states, ctx, jobs, bodies);
        coloring.bundles16 = bundles;
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if coloring.lanes == 8 {
        let mut bundles = std::mem::take(&mut coloring.bundles8);
        run_plan_on(ops, coloring, &mut bundles, constraints, joints, states, ctx, jobs, bodies);
        coloring.bundles8 = bundles;
        return;
    }
    let mut bundles = std::mem::take(&mut coloring.bundles4);
    run_plan_on(ops, coloring, &mut bundles, constraints, joints, states, ctx, jobs, bodies);
    coloring.bundles4 = bundles;
}

/// [`run_plan`] of one constraint pass.
pub(crate) fn run_pass(
    pass: Pass,
    coloring: &mut Coloring,
    constraints: &ConstraintTable,
    joints: &mut [JointSolve],
    states: &mut [BodyState],
    ctx: &StepContext,
    jobs: Jobs,
) {
    let no_bodies = |_: BodyPass, _: Range<usize>, _: &Column<BodyState>| unreachable!("a pass has no body loop");
    run_plan(&[Op::Pass(pass)], coloring, constraints, joints, states, ctx, jobs, no_bodies);
}

#[allow(clippy::too_many_arguments)]
fn run_plan_on<L: Width + BallWidth, B>(
    ops: &[Op],
    coloring: &mut Coloring,
    all_bundles: &mut Bundles<L>,
    constraints: &ConstraintTable,
    joints: &mut [JointSolve],
    states: &mut [BodyState],
    ctx: &StepContext,
    jobs: Jobs,
    bodies: B,
) where
    B: Fn(BodyPass, Range<usize>, &Column<BodyState>) + Sync,
{
    coloring.plan(ops, states.len());
    let states = Column::new(states);
    let mut prepared = std::mem::take(&mut coloring.prepared);
    let prepared_column = Column::new(&mut prepared);
    let contacts = constraints.len();
    let joints = Column::new(joints);
    // Safety of both closures: the overflow runs alone on one worker; within a colour
    // no two constraints or bundles share a dynamic body, stages run one after
    // another, and only dynamic bodies' states are written (static and kinematic
    // ones are read). Each constraint index comes once per pass (see `execute`).
    let one = |pass: Pass, i: usize| {
        // SAFETY: as above.
        unsafe {
            if i >= contacts {
                let j = joints.get(i - contacts);
                match pass {
                    Pass::WarmStart => solve_joint(j, &states, ctx, Mode::WarmStart),
                    Pass::Solve => solve_joint(j, &states, ctx, Mode::Solve { use_bias: true }),
                    Pass::Relax => solve_joint(j, &states, ctx, Mode::Solve { use_bias: false }),
                    Pass::Restitute | Pass::CorrectPositions => {}
                }
                return;
            }
            let (c, s) = (constraints.get_unchecked(i), prepared_column.get(i));
            match pass {
                Pass::WarmStart => warm_start(c, s, &states),
                Pass::Solve => solve(c, s, &states, ctx, true),
                Pass::Relax => solve(c, s, &states, ctx, false),
                Pass::Restitute => restitute(c, s, &states, ctx),
                Pass::CorrectPositions => correct_positions(c, s, &states),
            }
        }
    };
    // A run of one colour's constraints: the ball joints among them go `L::N` at a
    // time ([`BallWidth::solve_balls`], the same bits as one by one), the rest one by
    // one. A run of one is the overflow's (or a lone constraint): in order.
    let (balls, ball) = (coloring.wide, &coloring.balls);
    let scalar = |pass: Pass, indices: &[u32]| {
        let mode = match pass {
            Pass::WarmStart => Mode::WarmStart,
            Pass::Solve => Mode::Solve { use_bias: true },
            Pass::Relax => Mode::Solve { use_bias: false },
            Pass::Restitute | Pass::CorrectPositions => Mode::WarmStart,
        };
        let joint_pass = matches!(pass, Pass::WarmStart | Pass::Solve | Pass::Relax);
        if !balls || !joint_pass || indices.len() < 2 {
            indices.iter().for_each(|&i| one(pass, i as usize));
            return;
        }
        let mut group = [0u32; MAX_LANES];
        let mut n = 0;
        for &i in indices {
            let i = i as usize;
            if ball[i] {
                group[n] = (i - contacts) as u32;
                n += 1;
                if n == L::N {
                    // SAFETY: as above: one colour's joints share no dynamic body.
                    unsafe { L::solve_balls(&joints, &group[..n], &states, ctx, mode) };
                    n = 0;
                }
            } else {
                one(pass, i);
            }
        }
        match n {
            0 => {}
            1 => one(pass, group[0] as usize + contacts),
            // SAFETY: as above.
            _ => unsafe { L::solve_balls(&joints, &group[..n], &states, ctx, mode) },
        }
    };
    let wide = |pass: Pass, b: &mut Bundle<L>, e: &mut wide::Extras<L>| {
        // SAFETY: as above.
        unsafe {
            match pass {
                Pass::WarmStart => L::warm_start(b, e, &states),
                Pass::Solve => L::solve(b, e, &states, ctx, true),
                Pass::Relax => L::solve(b, e, &states, ctx, false),
                Pass::Restitute | Pass::CorrectPositions => unreachable!("{pass:?} runs on the constraints"),
            }
        }
    };
    let body_loop = |body: BodyPass, rows: Range<usize>| bodies(body, rows, &states);
    let mut stages = std::mem::take(&mut coloring.stages);
    execute(coloring, &mut stages, all_bundles, jobs, (scalar, wide, body_loop));
    coloring.stages = stages;
    coloring.prepared = prepared;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::physics::constraint_graph::Colorable;
    use crate::physics::simd::lanes;
    use glam::Vec4;

    /// A backward sweep runs every constraint once, as a forward one does, with the
    /// colours in the opposite order (each colour's constraints together).
    #[test]
    fn a_backward_sweep_runs_the_colours_last_to_first() {
        // A chain: constraint i joins bodies i and i + 1, so colours alternate.
        let n = 9;
        let colorables: Vec<Colorable> =
            (0..n).map(|i| Colorable { a: i, b: i + 1, bundles: false, bouncy: false, ball: false }).collect();
        let mut coloring = Coloring::default();
        coloring.color(&colorables, n as usize + 1);
        assert!(coloring.color_count() >= 2);
        let pool = crate::jobs::ThreadPool::new(0);
        let colors: Vec<Option<usize>> =
            (0..n).map(|i| (0..COLORS).find(|&k| coloring.order[coloring.ranges[k].clone()].contains(&i))).collect();
        let color_of = |i: usize| colors[i];
        let mut run = |backward: bool| {
            coloring.alternate = true;
            coloring.sweeps = backward as u32;
            coloring.plan(&[Op::Pass(Pass::Relax)], 0);
            let seen = std::sync::Mutex::new(Vec::new());
            let mut bundles = Bundles::<Vec4>::default();
            let wide = |_: Pass, _: &mut Bundle<Vec4>, _: &mut wide::Extras<Vec4>| unreachable!("no bundles");
            let scalar = |pass: Pass, indices: &[u32]| {
                assert_eq!(pass, Pass::Relax);
                seen.lock().unwrap().extend(indices.iter().map(|&i| i as usize))
            };
            let bodies = |_: BodyPass, _: Range<usize>| unreachable!("no body loop");
            let mut stages = std::mem::take(&mut coloring.stages);
            execute(&coloring, &mut stages, &mut bundles, pool.jobs(), (scalar, wide, bodies));
            coloring.stages = stages;
            seen.into_inner().unwrap()
        };
        let (forward, backward) = (run(false), run(true));
        let mut sorted = backward.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..n as usize).collect::<Vec<_>>(), "each constraint once");
        let colors = |order: &[usize]| {
            let mut c: Vec<usize> = order.iter().map(|&i| color_of(i).unwrap()).collect();
            c.dedup();
            c
        };
        let mut reversed = colors(&forward);
        reversed.reverse();
        assert_eq!(colors(&backward), reversed);
        assert_eq!(colors(&forward), (0..reversed.len()).collect::<Vec<_>>());
    }

    /// Colours are kept while the constraints, rows and `wide` are unchanged, and
    /// equal the colours made afresh; any change among them colours again.
    #[test]
    fn kept_colours_are_the_colours_made_afresh() {
        let mut seed = 0x51f1_5eed_u64;
        let mut next = |n: u32| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) % n as u64) as u32
        };
        let rows = 40;
        let mut colorables: Vec<Colorable> = (0..120)
            .map(|_| Colorable { a: next(rows), b: next(rows), bundles: next(2) == 0, bouncy: false, ball: false })
            .collect();
        let mut kept = Coloring::default();
        let made = |c: &[Colorable], rows: usize, wide: bool| {
            let mut fresh = Coloring::default();
            fresh.wide = wide;
            assert!(!fresh.color(c, rows));
            (fresh.order, fresh.ranges, fresh.bundled)
        };
        let same = |k: &Coloring, m: (Vec<u32>, Vec<Range<usize>>, [usize; COLORS])| {
            assert_eq!((&k.order, &k.ranges, &k.bundled), (&m.0, &m.1, &m.2));
        };
        assert!(!kept.color(&colorables, rows as usize));
        assert!(kept.color(&colorables, rows as usize), "nothing changed");
        same(&kept, made(&colorables, rows as usize, kept.wide));
        colorables[7].b = (colorables[7].b + 1) % rows;
        assert!(!kept.color(&colorables, rows as usize), "a constraint's body changed");
        same(&kept, made(&colorables, rows as usize, kept.wide));
        assert!(!kept.color(&colorables, rows as usize + 1), "the rows changed");
        kept.wide = !kept.wide;
        assert!(!kept.color(&colorables, rows as usize + 1), "the bundling changed");
        same(&kept, made(&colorables, rows as usize + 1, kept.wide));
        kept.forget();
        assert!(!kept.color(&colorables, rows as usize + 1), "forgotten");
    }

    /// A colouring bundles sixteen constraints where the CPU runs AVX-512F, eight
    /// where it runs AVX, four elsewhere, and refuses a width the CPU does not run.
    #[test]
    fn bundles_are_as_wide_as_the_cpu_runs() {
        let mut coloring = Coloring::default();
        let (eight, sixteen) = (lanes::eight_available(), lanes::sixteen_available());
        assert_eq!(
            coloring.lanes,
            if sixteen {
                16
            } else if eight {
                8
            } else {
                4
            }
        );
        coloring.set_lanes(4);
        assert_eq!(coloring.lanes, 4);
        for (lanes, runs) in [(8, eight), (16, sixteen), (12, false)] {
            let mut coloring = Coloring::default();
            let refused = std::panic::catch_unwind(move || coloring.set_lanes(lanes)).is_err();
            assert_eq!(refused, !runs, "{lanes} lanes");
        }
    }
}

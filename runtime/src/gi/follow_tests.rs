//! The CPU reference following a changing world: visibility refreshed where
//! geometry changed, relocation and classification.

use super::compress::{compress, recompress, CompressParams, ProbeOrder};
use super::octahedral::{VisibilityMap, OCT_TEXELS};
use super::refresh::{refresh_visibility, RefreshReport};
use super::relocate::ProbeRules;
use super::scenes::{self, boxes_scene, cpu_tlas, open_room_boxes, room_wall, terrain_scene};
use super::update::{bake_probes, bake_visibility_with, update_irradiance, GiLighting, UpdateParams};
use super::*;
use crate::math::{IVec3, Vec3};
use crate::raytrace::Scene;
use crate::terrain::{Material, Terrain};

fn luminance(e: [f32; 3]) -> f32 {
    0.2126 * e[0] + 0.7152 * e[1] + 0.0722 * e[2]
}

/// `frames` irradiance updates of every active probe.
fn update_all(field: &mut ProbeField, scene: &Scene, params: &UpdateParams, frames: std::ops::Range<u32>) {
    let tlas = cpu_tlas(scene);
    let view = scene.trace_scene(&tlas);
    for frame in frames {
        let probes = field.live_round_robin(0, u32::MAX);
        update_irradiance(field, &view, &GiLighting::default(), params, frame, &probes);
    }
}

/// Mean luminance sampled at `points` (point, normal; seen along the normal).
fn mean_sample(field: &ProbeField, points: &[(Vec3, Vec3)]) -> f32 {
    let params = SampleParams::for_spacing(field.volume.grid.spacing);
    points.iter().map(|&(p, n)| luminance(field.sample(p, n, n, &params))).sum::<f32>() / points.len() as f32
}

/// Every probe decodes within the tolerance of the map a bake of `scene` gives it
/// from where it sits, and exactly the probes that bake finds active are live.
fn assert_matches_a_fresh_bake(field: &ProbeField, scene: &Scene, rules: &ProbeRules) {
    let tlas = cpu_tlas(scene);
    let view = scene.trace_scene(&tlas);
    let all: Vec<u32> = (0..field.volume.probe_count() as u32).collect();
    let fixed = ProbeRules { relocate: false, ..*rules };
    let tolerance = CompressParams::default().tolerance;
    for (p, bake) in all.iter().zip(bake_probes(field, &view, &all, &fixed)) {
        let back = field.visibility.decode(*p as usize);
        let live = bake.map != VisibilityMap::clipped();
        assert_eq!(field.is_active(*p as usize), live, "probe {p}");
        if live {
            for t in 0..OCT_TEXELS {
                for ch in 0..2 {
                    let d = (back.0[t][ch] - bake.map.0[t][ch]).abs();
                    assert!(d <= tolerance + 1e-6, "probe {p} texel {t}: {d}");
                }
            }
        }
    }
}

#[test]
fn a_wall_added_between_a_lit_and_a_dark_room_stops_the_leak_once_refreshed() {
    let open = boxes_scene(&open_room_boxes());
    let (wall_lo, wall_hi) = room_wall();
    let mut closed_boxes = open_room_boxes();
    closed_boxes.push((wall_lo, wall_hi));
    let closed = boxes_scene(&closed_boxes);
    let grid = ProbeGrid::covering(Vec3::new(-1.0, 0.0, -1.0), Vec3::new(6.0, 4.0, 5.0), 1.0).unwrap();
    let mut field = ProbeField::new(ProbeVolume::dense(grid));
    let rules = ProbeRules::default();
    let compress_params = CompressParams::default();
    {
        let tlas = cpu_tlas(&open);
        bake_visibility_with(&mut field, &open.trace_scene(&tlas), &compress_params, 64, &rules);
    }
    let mut params = UpdateParams::for_spacing(1.0);
    params.hysteresis = 0.3;
    update_all(&mut field, &open, &params, 0..8);

    // On the wall's inner face (x = 3.4, facing into the room) and its outer face.
    let mut inner = Vec::new();
    let mut outer = Vec::new();
    for y in [0.3f32, 0.9, 1.5, 2.1] {
        for z in [1.1f32, 1.7, 2.3, 2.9] {
            inner.push((Vec3::new(3.4, y, z), Vec3::NEG_X));
            outer.push((Vec3::new(3.6, y, z), Vec3::X));
        }
    }
    let before = mean_sample(&field, &inner);

    // The wall goes up. Both fields keep updating their irradiance against the
    // closed room; one refreshes its visibility where the wall stands.
    let n = 8;
    let mut stale = field.clone();
    let report: RefreshReport = {
        let tlas = cpu_tlas(&closed);
        refresh_visibility(&mut field, &closed.trace_scene(&tlas), wall_lo, wall_hi, &compress_params, &rules)
    };
    update_all(&mut field, &closed, &params, 8..8 + n);
    update_all(&mut stale, &closed, &params, 8..8 + n);
    let (lit, dark, leak) = (mean_sample(&field, &outer), mean_sample(&field, &inner), mean_sample(&stale, &inner));
    eprintln!(
        "inner face: {before:.4} open; after {n} updates {dark:.5} refreshed, {leak:.4} stale; outer face {lit:.4}; {report:?}"
    );
    assert!(before > 0.3 * lit, "the open room is lit: {before} vs {lit}");
    assert!(dark <= 0.05 * lit, "refreshed: the dark side falls to 5% of the lit side: {dark} vs {lit}");
    assert!(
        leak > 0.08 * lit && leak > 2.0 * dark,
        "stale visibility leaks the light through the new wall: {leak} vs {lit}"
    );
    // Only the probes within reach of the wall were re-baked, and they are now what
    // a bake of the closed room from scratch gives.
    assert!(report.probes > 0 && report.probes < field.volume.probe_count() as u32 / 2, "{report:?}");
    assert_matches_a_fresh_bake(&field, &closed, &rules);
    field.visibility.check().unwrap();
}

#[test]
fn probes_inside_a_wall_move_out_and_sample_the_light() {
    // A 0.4 m wall centred on x = 2: the probes of column x = 2 start inside it.
    let ground = (Vec3::new(-6.0, -0.6, -6.0), Vec3::new(10.0, -0.5, 10.0));
    let wall = (Vec3::new(1.8, -0.5, -3.0), Vec3::new(2.2, 3.0, 7.0));
    let scene = boxes_scene(&[ground, wall]);
    let tlas = cpu_tlas(&scene);
    let view = scene.trace_scene(&tlas);
    let grid = ProbeGrid::covering(Vec3::ZERO, Vec3::new(4.0, 2.0, 4.0), 1.0).unwrap();
    let in_wall: Vec<usize> = (0..ProbeVolume::dense(grid).probe_count())
        .filter(|&p| ProbeVolume::dense(grid).probe_coords(p)[0] == 2)
        .collect();
    let mut params = UpdateParams::for_spacing(1.0);
    params.hysteresis = 0.3;
    let mut fields = Vec::new();
    for rules in [ProbeRules::FIXED, ProbeRules::default()] {
        let mut field = ProbeField::new(ProbeVolume::dense(grid));
        bake_visibility_with(&mut field, &view, &CompressParams::default(), 16, &rules);
        update_all(&mut field, &scene, &params, 0..6);
        fields.push(field);
    }
    let (fixed, moved) = (&fields[0], &fields[1]);
    assert_eq!(fixed.offsets.moved_count(), 0);
    for &p in &in_wall {
        let at = moved.probe_position(p);
        let offset = at - moved.volume.probe_position(p);
        assert!((at.x - 2.0).abs() > 0.25, "probe {p} left the wall: {at}");
        assert!(offset.length() <= 0.45, "and its cell: {offset}");
        assert!(moved.is_active(p), "probe {p} is active");
        // Its light is the side it moved to: that of the open-air probe next to it.
        let side = if at.x < 2.0 { -1.0 } else { 1.0 };
        let c = moved.volume.probe_coords(p);
        let neighbour = moved.volume.probe_at([(c[0] as f32 + side) as u32, c[1], c[2]]).unwrap() as usize;
        let up = |f: &ProbeField, p: usize| luminance(f.probe_sh(p).irradiance(Vec3::new(-side, 0.0, 0.0)));
        let (own, next) = (up(moved, p), up(moved, neighbour));
        assert!(own > 0.5 * next && own > 0.05, "probe {p} at {at}: {own} against {next} next to it");
        // On its grid point it sees the inside of the wall: black, or inactive.
        assert!(up(fixed, p) < 0.05 * next, "fixed probe {p}: {}", up(fixed, p));
    }
    // Points on the wall's faces sample the moved probes.
    let faces: Vec<(Vec3, Vec3)> = [0.5f32, 1.0, 1.5]
        .iter()
        .flat_map(|&y| [(Vec3::new(1.8, y, 1.5), Vec3::NEG_X), (Vec3::new(2.2, y, 1.5), Vec3::X)])
        .collect();
    let (with, without) = (mean_sample(moved, &faces), mean_sample(fixed, &faces));
    eprintln!("wall faces: {with:.4} relocated, {without:.4} fixed; {} probes moved", moved.offsets.moved_count());
    assert!(with >= 0.98 * without, "relocation never darkens the wall: {with} vs {without}");
}

/// A solid block of rock 32 m on a side, chunks 0..=3 on each axis.
fn rock() -> Terrain {
    let mut terrain = Terrain::new(1.0);
    terrain.fill(IVec3::ZERO, IVec3::splat(31), Material::ROCK);
    terrain
}

#[test]
fn solid_rock_updates_no_probe_and_a_cave_activates_exactly_the_probes_that_see_it() {
    let mut terrain = rock();
    let chunks = (IVec3::splat(-1), IVec3::splat(4));
    let solid = terrain_scene(&terrain, chunks.0, chunks.1);
    // Probes half a metre off the voxel lattice, all deep inside the rock.
    let grid = ProbeGrid::covering(Vec3::splat(10.5), Vec3::splat(20.5), 1.0).unwrap();
    let mut field = ProbeField::new(ProbeVolume::dense(grid));
    let rules = ProbeRules::default();
    let compress_params = CompressParams::default();
    {
        let tlas = cpu_tlas(&solid);
        bake_visibility_with(&mut field, &solid.trace_scene(&tlas), &compress_params, 64, &rules);
    }
    assert_eq!(field.visibility.dead_count(), field.volume.probe_count());
    assert!(field.live_round_robin(0, u32::MAX).is_empty(), "an all-solid region updates no probe");

    // A 5 m cave: voxels 13..=17, world [13, 18).
    terrain.fill(IVec3::splat(13), IVec3::splat(17), Material::AIR);
    let cave = terrain_scene(&terrain, chunks.0, chunks.1);
    let report = {
        let tlas = cpu_tlas(&cave);
        refresh_visibility(
            &mut field,
            &cave.trace_scene(&tlas),
            Vec3::splat(13.0),
            Vec3::splat(18.0),
            &compress_params,
            &rules,
        )
    };
    let active: Vec<u32> = field.live_round_robin(0, u32::MAX);
    eprintln!("cave: {report:?}, {} active", active.len());
    assert_eq!(report.activated as usize, active.len());
    assert_eq!(report.deactivated, 0);
    // Exactly the probes a bake of the cave from scratch activates, at the same places.
    let mut scratch = ProbeField::new(ProbeVolume::dense(grid));
    {
        let tlas = cpu_tlas(&cave);
        bake_visibility_with(&mut scratch, &cave.trace_scene(&tlas), &compress_params, 64, &rules);
    }
    assert_eq!(active, scratch.live_round_robin(0, u32::MAX));
    let n = field.volume.probe_count();
    assert_eq!(field.offsets.codes(n), scratch.offsets.codes(n));
    // Every active probe sits in the cave's air: the probes in the rock next to it
    // see its walls from behind and stay inactive.
    for &p in &active {
        let at = field.probe_position(p as usize);
        assert!((0..3).all(|a| at[a] > 13.0 && at[a] < 18.0), "probe {p} at {at}");
    }
    // ... and every probe of the cave within reach of a wall is active (the one at
    // its centre, 2.5 m from every wall, sees nothing and stays dead).
    let reach = grid.clip_distance();
    let seeing = (0..n)
        .map(|p| field.volume.probe_position(p))
        .filter(|at| (0..3).all(|a| (13.0..18.0).contains(&at[a])))
        .filter(|at| (0..3).map(|a| (at[a] - 13.0).min(18.0 - at[a])).fold(f32::MAX, f32::min) <= reach)
        .count();
    assert_eq!(active.len(), seeing, "every probe in the cave that sees a wall is active");
    assert_matches_a_fresh_bake(&field, &cave, &rules);

    // Filling the cave again returns every probe to inactive and reclaims the blocks.
    terrain.fill(IVec3::splat(13), IVec3::splat(17), Material::ROCK);
    let refill = {
        let tlas = cpu_tlas(&solid);
        refresh_visibility(
            &mut field,
            &solid.trace_scene(&tlas),
            Vec3::splat(13.0),
            Vec3::splat(18.0),
            &compress_params,
            &rules,
        )
    };
    assert_eq!(refill.deactivated as usize, active.len());
    assert_eq!(field.visibility.dead_count(), n);
    assert_eq!(field.visibility.blocks.len(), 0);
    assert_eq!(refill.blocks.reclaimed as usize, report.blocks.added as usize);
}

fn rng(seed: &mut u32) -> f32 {
    *seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
    (*seed >> 8) as f32 / (1u32 << 24) as f32
}

/// Maps of a few smooth shapes with noise, some dead.
fn random_maps(n: usize, seed: &mut u32) -> Vec<VisibilityMap> {
    (0..n)
        .map(|_| {
            let kind = (rng(seed) * 5.0) as u32;
            let tilt = rng(seed);
            VisibilityMap(std::array::from_fn(|t| {
                let d = match kind {
                    0 => 1.0,
                    1 => ((t % 16) as f32 / 16.0 * tilt + 0.2).min(1.0),
                    2 => ((t / 16) as f32 / 16.0 * 0.5 + 0.1 + 0.002 * rng(seed)).min(1.0),
                    _ => rng(seed),
                };
                [d, d * d]
            }))
        })
        .collect()
}

#[test]
fn recompression_matches_new_maps_into_the_dictionary_and_reclaims_what_nobody_reads() {
    let mut seed = 11;
    let params = CompressParams::default();
    let mut maps = random_maps(600, &mut seed);
    let mut vis = compress(&maps, &ProbeOrder::swizzled(600, 32), &params);
    for round in 0..6 {
        let probes: Vec<u32> = (0..600).filter(|_| rng(&mut seed) < 0.15).collect();
        let fresh = random_maps(probes.len(), &mut seed);
        for (&p, m) in probes.iter().zip(&fresh) {
            maps[p as usize] = m.clone();
        }
        let (next, report) = recompress(&vis, &probes, &fresh, &params);
        next.check().unwrap();
        for (p, map) in maps.iter().enumerate() {
            let back = next.decode(p);
            for t in 0..OCT_TEXELS {
                for ch in 0..2 {
                    assert!((back.0[t][ch] - map.0[t][ch]).abs() <= params.tolerance + 1e-6, "round {round} probe {p}");
                }
            }
            assert_eq!(next.is_dead(p), *map == VisibilityMap::clipped(), "probe {p}");
        }
        // Every stored block is read by some probe.
        let mut read = vec![false; next.blocks.len()];
        for e in next.entries() {
            if !BlockEntry(e).is_dead() {
                read[BlockEntry(e).block() as usize] = true;
            }
        }
        assert!(read.iter().all(|&r| r), "round {round}: an unread block");
        assert_eq!(next.blocks.len(), vis.blocks.len() + report.added as usize - report.reclaimed as usize);
        // Recompressing the same maps again adds nothing.
        let (again, same) = recompress(&next, &probes, &fresh, &params);
        assert_eq!(same.added, 0, "round {round}");
        assert!(again.blocks.len() <= next.blocks.len());
        vis = next;
    }
}

/// A dense field over `[origin, origin + (dims - 1) * spacing]` of the town,
/// baked with relocation and classification and updated twice.
fn town_field(scene: &Scene, origin: Vec3, dims: [u32; 3], spacing: f32) -> ProbeField {
    let hi = origin + Vec3::new(dims[0] as f32 - 1.0, dims[1] as f32 - 1.0, dims[2] as f32 - 1.0) * spacing;
    let grid = ProbeGrid::covering(origin, hi, spacing).unwrap();
    assert_eq!(grid.dims, dims);
    let mut field = ProbeField::new(ProbeVolume::dense(grid));
    let tlas = cpu_tlas(scene);
    bake_visibility_with(&mut field, &scene.trace_scene(&tlas), &CompressParams::default(), 64, &ProbeRules::default());
    field
}

#[test]
fn a_scroll_bakes_only_the_planes_that_enter_and_samples_continue_across_it() {
    use super::scroll::{centre_shift, scroll_by, scroll_to};
    let (scene, _, _) = scenes::low_poly_town(24, 3);
    let tlas = cpu_tlas(&scene);
    let view = scene.trace_scene(&tlas);
    let rules = ProbeRules::default();
    let params = CompressParams::default();
    let dims = [8, 4, 8];
    let mut field = town_field(&scene, Vec3::new(2.25, 0.25, 2.25), dims, 1.0);
    let mut update = UpdateParams::for_spacing(1.0);
    update.hysteresis = 0.5;
    update_all(&mut field, &scene, &update, 0..2);
    let points: Vec<(Vec3, Vec3)> = [(5.3, 0.5, 4.2), (6.1, 1.0, 7.7), (4.8, 2.2, 5.5)]
        .iter()
        .map(|&(x, y, z)| (Vec3::new(x, y, z), Vec3::Y))
        .collect();
    let sample = |f: &ProbeField| -> Vec<[f32; 3]> {
        let s = SampleParams::for_spacing(1.0);
        points.iter().map(|&(p, n)| f.sample(p, n, n, &s)).collect()
    };
    let before = sample(&field);

    // Two probes along +x and one along -z: 2 + 1 planes enter.
    let report = scroll_by(&mut field, &view, [2, 0, -1], &params, &rules);
    let new_probes = 2 * 4 * 8 + 8 * 4 - 2 * 4;
    assert_eq!((report.planes, report.probes.len()), (3, new_probes), "{report:?}");
    assert_eq!(report.bake.probes as usize, new_probes, "only the planes that entered are baked");
    assert_eq!(field.volume.grid.origin, Vec3::new(4.25, 0.25, 1.25));
    // The points lie inside the volume before and after, away from the new
    // planes: they sample the same probes with the same data (only the cell
    // coordinates, measured from the moved origin, may round differently).
    for (a, b) in sample(&field).iter().flatten().zip(before.iter().flatten()) {
        assert!((a - b).abs() <= 1e-5 * b.abs().max(1e-3), "sampling continues across the scroll: {a} vs {b}");
    }

    // The scrolled field is the one a bake at the new place gives, slot by slot
    // through the ring: the same positions, activity and maps (each within the
    // compressor's tolerance of the same map).
    let fresh = town_field(&scene, field.volume.grid.origin, dims, 1.0);
    let tolerance = params.tolerance;
    for j in 0..dims[1] {
        for k in 0..dims[2] {
            for i in 0..dims[0] {
                let steps = [i, j, k];
                let (a, b) =
                    (field.probe_at_steps(steps).unwrap() as usize, fresh.probe_at_steps(steps).unwrap() as usize);
                assert_eq!(field.probe_position(a), fresh.probe_position(b), "{steps:?}");
                assert_eq!(field.is_active(a), fresh.is_active(b), "{steps:?}");
                let (ma, mb) = (field.visibility.decode(a), fresh.visibility.decode(b));
                for t in 0..OCT_TEXELS {
                    for ch in 0..2 {
                        assert!((ma.0[t][ch] - mb.0[t][ch]).abs() <= 2.0 * tolerance + 1e-6, "{steps:?} texel {t}");
                    }
                }
            }
        }
    }
    // The new probes start unlit; updating them first lights them.
    let live_new: Vec<u32> = report.probes.iter().copied().filter(|&p| field.is_active(p as usize)).collect();
    assert!(live_new.iter().all(|&p| field.probe_sh(p as usize) == ShRgb::default()));
    update_irradiance(&mut field, &view, &GiLighting::default(), &update, 2, &live_new);
    assert!(live_new.iter().all(|&p| field.probe_sh(p as usize) != ShRgb::default()));

    // Following a point: back to where it started, the same shift undone.
    let back = centre_shift(&field, Vec3::new(2.25 + 3.5, 1.75, 2.25 + 3.5));
    assert_eq!(back, [-2, 0, 1]);
    let report = scroll_to(&mut field, &view, Vec3::new(5.75, 1.75, 5.75), &params, &rules);
    assert_eq!(report.probes.len(), new_probes);
    assert_eq!(field.volume.grid.origin, Vec3::new(2.25, 0.25, 2.25));
    assert_eq!(field.ring, [0; 3]);
    // Scrolling a whole volume or more replaces every probe.
    let report = scroll_by(&mut field, &view, [40, 0, 0], &params, &rules);
    assert_eq!(report.probes.len(), field.volume.probe_count());
    field.visibility.check().unwrap();
}

#[test]
fn cascades_take_the_finest_volume_and_blend_into_the_next_at_its_edge() {
    use super::scroll::{cascade_weight, sample_cascades};
    let (scene, _, _) = scenes::low_poly_town(24, 3);
    let mut fine = town_field(&scene, Vec3::new(6.25, 0.25, 6.25), [13, 7, 13], 0.5);
    let mut coarse = town_field(&scene, Vec3::new(2.25, 0.25, 2.25), [14, 5, 14], 1.0);
    let mut update = UpdateParams::for_spacing(0.5);
    update.hysteresis = 0.5;
    update_all(&mut fine, &scene, &update, 0..2);
    update_all(&mut coarse, &scene, &UpdateParams { sample: SampleParams::for_spacing(1.0), ..update }, 0..2);
    let cascades = [fine.clone(), coarse.clone()];
    let (n, s_fine, s_coarse) = (Vec3::Y, SampleParams::for_spacing(0.5), SampleParams::for_spacing(1.0));
    // Deep inside the fine volume: the fine sample alone.
    let deep = Vec3::new(9.3, 1.1, 9.6);
    assert_eq!(cascade_weight(&fine, deep), 1.0);
    assert_eq!(sample_cascades(&cascades, deep, n, n), fine.sample(deep, n, n, &s_fine));
    // Outside it: the coarse one alone.
    let out = Vec3::new(4.0, 1.1, 4.0);
    assert_eq!(cascade_weight(&fine, out), 0.0);
    assert_eq!(sample_cascades(&cascades, out, n, n), coarse.sample(out, n, n, &s_coarse));
    // In the last half metre before the fine volume's edge: between the two, in
    // proportion to the depth.
    let edge = Vec3::new(6.5, 1.1, 9.0);
    let w = cascade_weight(&fine, edge);
    assert!((w - 0.5).abs() < 1e-5, "{w}");
    let (a, b) = (fine.sample(edge, n, n, &s_fine), coarse.sample(edge, n, n, &s_coarse));
    let got = sample_cascades(&cascades, edge, n, n);
    for ch in 0..3 {
        assert!((got[ch] - (0.5 * a[ch] + 0.5 * b[ch])).abs() <= 1e-5, "{got:?} from {a:?} and {b:?}");
    }
    assert_eq!(sample_cascades(&[], edge, n, n), [0.0; 3]);
}

//! A deterministic test terrain: rolling hills of rock, grass and sand, a lake level of
//! water, and a few carved caves, so every chunk kind (air, mixed, full solid, full
//! water) appears.

use glam::IVec3;

use super::{Material, Terrain};

/// Fills voxel columns `x, z` in `0..size` with hills whose surface lies between
/// about `y = 4` and `y = 28`, water up to `y = 12`, and spherical caves. `seed`
/// shifts the pattern. Returns the number of non-air voxels written.
pub fn generate_hills(terrain: &mut Terrain, size: i32, seed: u32) -> usize {
    let phase = seed as f32 * 0.731;
    let water_level = 12;
    let mut written = 0;
    for z in 0..size {
        for x in 0..size {
            let (fx, fz) = (x as f32, z as f32);
            let h = 16.0
                + 7.0 * (fx * 0.071 + phase).sin() * (fz * 0.053 - phase).cos()
                + 4.0 * (fx * 0.19 + fz * 0.13 + 2.0 * phase).sin();
            let top = h as i32;
            // Bedrock from y = -8 so the lowest chunks are all solid.
            written += terrain.fill(IVec3::new(x, -8, z), IVec3::new(x, top - 2, z), Material::ROCK);
            let surface = if top <= water_level + 1 { Material::SAND } else { Material::GRASS };
            written += terrain.fill(IVec3::new(x, top - 1, z), IVec3::new(x, top, z), surface);
            if top < water_level {
                written += terrain.fill(IVec3::new(x, top + 1, z), IVec3::new(x, water_level, z), Material::WATER);
            }
        }
    }
    // Caves: spheres of air carved below the surface.
    let mut state = seed.wrapping_mul(0x9E37_79B9) | 1;
    let mut next = |n: i32| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state % n as u32) as i32
    };
    for _ in 0..(size * size / 2048).max(1) {
        let c = IVec3::new(next(size), 2 + next(8), next(size));
        let r = 2 + next(3);
        for y in -r..=r {
            for z in -r..=r {
                for x in -r..=r {
                    if x * x + y * y + z * z <= r * r {
                        let v = c + IVec3::new(x, y, z);
                        terrain.fill(v, v, Material::AIR);
                    }
                }
            }
        }
    }
    written
}

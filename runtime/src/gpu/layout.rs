//! Structs shared with the shaders. The Rust definitions are the only ones written
//! by hand: `vulkan-shaders/include/kiln_layout.glsl` is generated from the table
//! below (it is installed with the package, so the structs an engine's shader sees
//! carry the `Kiln` prefix and the constants `KILN_`),
//! and a test checks that every field's std430 offset in GLSL equals its Rust
//! `offset_of!` and that the file on disk is fresh (`KILN_BLESS=1` rewrites it).
//!
//! Buffer addresses travel as `u64` in Rust and `uvec2` in GLSL
//! (`GL_EXT_buffer_reference_uvec2`), so kernels need no 64-bit integer support.

use bytemuck::{Pod, Zeroable};
use std::mem::size_of;

pub use crate::raytrace::layout::{BlasRef, GpuHit, GpuInstance, GpuRay, TlasNode, HIT_BACKFACE, NO_HIT, TLAS_LEAF};

/// Push constants of `blas_refit.comp`: one thread per leaf.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct BlasRefitPush {
    /// `BvhNode[]`: boxes rewritten, topology read.
    pub nodes: u64,
    /// `uint[]`: parent of each node.
    pub parents: u64,
    /// `uint[]`: node index of each leaf.
    pub leaves: u64,
    /// `uvec4[n]`: the BLAS's reordered triangles (three vertices + primitive id).
    pub triangles: u64,
    /// `float[3 * v]`: vertex positions.
    pub positions: u64,
    /// `uint[]`: one arrival counter per node, zeroed before the dispatch.
    pub counters: u64,
    pub leaf_count: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<BlasRefitPush>() == 56);

/// Push constants of `skin.comp`: one thread per vertex.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct SkinPush {
    /// `float[3 * v]`: rest positions.
    pub rest: u64,
    /// `uint[2 * v]`: four 16-bit joint indices per vertex.
    pub joints: u64,
    /// `vec4[v]`: four weights per vertex.
    pub weights: u64,
    /// `vec4[3 * b]`: per bone, the three rows of an affine 3x4 matrix.
    pub bones: u64,
    /// `float[3 * v]`: skinned positions.
    pub skinned: u64,
    pub vertex_count: u32,
    pub bone_count: u32,
}
const _: () = assert!(size_of::<SkinPush>() == 48);

/// Push constants of `tlas_boxes.comp`: world box per instance + scene bounds.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct TlasBoxesPush {
    pub instances: u64,
    pub blas_refs: u64,
    pub blas_nodes: u64,
    /// `TlasNode[2n - 1]`: the instance boxes go to the leaves `n - 1 ..`, in
    /// instance order (the hierarchy pass moves them to sorted order).
    pub boxes: u64,
    /// `uint[6]`: sortable min of centroid x, y, z and of -x, -y, -z.
    pub scene: u64,
    pub count: u32,
    pub _pad: u32,
}

/// Push constants of `tlas_morton.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct TlasMortonPush {
    pub boxes: u64,
    pub scene: u64,
    /// `uvec2[padded]`: (Morton code, instance index), padding = (~0, ~0).
    pub keys: u64,
    pub count: u32,
    pub padded: u32,
}

/// Push constants of `tlas_sort.comp` (one bitonic merge step).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct TlasSortPush {
    pub keys: u64,
    pub j: u32,
    pub k: u32,
    pub padded: u32,
    pub _pad: u32,
}

/// Push constants of `tlas_hierarchy.comp` (Karras 2012 over sorted keys) and of
/// `tlas_refit.comp` (leaf boxes in sorted order, then the atomic climb).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct TlasBuildPush {
    pub keys: u64,
    pub nodes: u64,
    pub parents: u64,
    /// Instance boxes in instance order (`TlasNode[n]`).
    pub boxes: u64,
    pub counters: u64,
    pub count: u32,
    pub _pad: u32,
}

/// What traversal reads (`kiln_trace.glsl`'s `KilnTraceScene`): the device
/// addresses of the scene's TLAS and BLAS arrays. An engine's shader gets them from
/// `kiln_tracer_get_trace_buffers`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct TraceAddresses {
    /// `TlasNode[2n - 1]`, the root first.
    pub tlas: u64,
    /// `GpuInstance[n]`, in packed order.
    pub instances: u64,
    /// `BlasRef[]`, one per mesh.
    pub blas_refs: u64,
    /// `BvhNode[]`: every BLAS's nodes.
    pub blas_nodes: u64,
    /// `uvec4[]`: every BLAS's reordered triangles (three vertices + primitive id).
    pub triangles: u64,
    /// `float[3 * v]`: every mesh's vertex positions.
    pub positions: u64,
}
const _: () = assert!(size_of::<TraceAddresses>() == 48);

/// Push constants of `trace.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct TracePush {
    pub rays: u64,
    pub hits: u64,
    pub scene: TraceAddresses,
    pub ray_count: u32,
    /// 0: closest hit; 1: any hit (shadow rays stop at the first hit).
    pub any_hit: u32,
}

/// Push constants of `gi_compress_match.comp` and `gi_compress_append.comp`: one
/// batch of the visibility compressor.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GiCompressPush {
    /// `vec2[256 * probes]`: the maps, `[depth, depth^2]` over the clip distance.
    pub maps: u64,
    /// `uint[probes]`: the compression order.
    pub order: u64,
    /// `uint[4 * probes]`: out, each quadrant's block and transpose bit, or
    /// `DEAD_QUADRANT`.
    pub block_index: u64,
    /// `uint[64 * capacity]`: the blocks, two halves per texel.
    pub blocks: u64,
    /// `vec2[capacity]`: each block's mean depths, whole and nearest the pole (the
    /// match prefilter).
    pub means: u64,
    /// `uint[4]`: `[0]` is the number of blocks.
    pub state: u64,
    /// `uint[4 * 256]`: per batch slot and quadrant, 1 when it needs a new block.
    pub fresh: u64,
    /// This batch is `order[first..first + count]`, `count <= 256`.
    pub first: u32,
    pub count: u32,
    pub window: u32,
    pub tolerance: f32,
}
const _: () = assert!(size_of::<GiCompressPush>() == 72);

/// Push constants of `gi_visibility_rays.comp` and `gi_visibility_reduce.comp`: the
/// visibility bake of probes `first..first + count`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GiBakePush {
    /// `Ray[1024 * count]`, probe-major.
    pub rays: u64,
    /// `Hit[1024 * count]`.
    pub hits: u64,
    /// `uint[probes]`: each probe's linear grid index (x fastest, then z, then y).
    pub probes: u64,
    /// `vec2[256 * probes]`: out, `[depth, depth^2]` over the clip distance.
    pub maps: u64,
    /// `uint[probes]`: each probe's offset codes (`gi::relocate::pack_offset`), or 0:
    /// every probe on its grid point.
    pub offsets: u64,
    pub origin_x: f32,
    pub origin_y: f32,
    pub origin_z: f32,
    pub spacing: f32,
    pub dims_x: u32,
    pub dims_z: u32,
    pub clip: f32,
    pub first: u32,
    pub count: u32,
    /// Instance mask of the bake's rays: the geometry that occludes visibility.
    pub mask: u32,
}
const _: () = assert!(size_of::<GiBakePush>() == 80);

/// Everything the irradiance update kernels (`gi_probe_rays`, `gi_shadow_rays`,
/// `gi_shade`, `gi_blend`) read, in one buffer written per update: more than the
/// 128 bytes of push constants every device offers. Updates probe `slots[s]` for
/// slots `s < count`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GiUpdateParams {
    /// `Ray[count * rays_per_probe]`, slot-major.
    pub rays: u64,
    /// `Hit[]`: closest hits of `rays`.
    pub hits: u64,
    /// `Ray[]`: toward the sun from each front-face hit, mask 0 otherwise.
    pub shadow_rays: u64,
    /// `Hit[]`: any hits of `shadow_rays`.
    pub shadow_hits: u64,
    /// `vec4[]`: radiance arriving along each ray.
    pub radiance: u64,
    /// `vec4[rays_per_probe]`: this update's ray directions.
    pub dirs: u64,
    /// `uint[count]`: the probe each update slot refreshes (live ones, uploaded
    /// with the update).
    pub slots: u64,
    /// `uvec2[]`: the placement mask, 64 grid points per word.
    pub mask: u64,
    /// `uint[]`: live probes before each mask word.
    pub rank: u64,
    /// `uvec4[live_count]`: packed SH (`gi::PackedSh`) per live probe, by rank in
    /// `live_mask`; read by shading, written by the blend.
    pub irradiance: u64,
    /// `uvec2[]`: a bit per probe, set where it stores visibility
    /// (`gi::CompressedVisibility::live`).
    pub live_mask: u64,
    /// `uint[]`: live probes before each `live_mask` word.
    pub live_rank: u64,
    /// `uint[]`: each live probe's signature number, `index_layout[1]` bits each,
    /// when `index_layout[0]` is 1 (`gi::ProbeIndex::numbers`).
    pub numbers: u64,
    /// `uint[]`: four entries per signature, `index_layout[2]` bits each: twice the
    /// block plus the transpose bit, all ones for a dead quadrant
    /// (`gi::ProbeIndex::entries`).
    pub entries: u64,
    /// `uint[]`: the stored blocks: group records, masks, then the blocks' mask
    /// numbers and depth and spread codes (`gi::BlockTable`).
    pub blocks: u64,
    /// `vec4[albedo_count]`: diffuse albedo per TLAS instance.
    pub albedo: u64,
    /// `uvec2[]`: a bit per probe, set where it moved off its grid point
    /// (`gi::ProbeOffsets`); 0 with the two below when no probe moved.
    pub offset_mask: u64,
    /// `uint[]`: moved probes before each `offset_mask` word.
    pub offset_rank: u64,
    /// `uint[]`: per moved probe, its offset codes, 10 bits per axis.
    pub offset_codes: u64,
    pub origin_x: f32,
    pub origin_y: f32,
    pub origin_z: f32,
    pub spacing: f32,
    pub dims_x: u32,
    pub dims_y: u32,
    pub dims_z: u32,
    /// Visibility clip distance (`ProbeGrid::clip_distance`).
    pub clip: f32,
    /// Sampling bias (`SampleParams::bias`).
    pub bias: f32,
    /// 1: weight probes by visibility.
    pub visibility: u32,
    pub sun_x: f32,
    pub sun_y: f32,
    pub sun_z: f32,
    pub sun_r: f32,
    pub sun_g: f32,
    pub sun_b: f32,
    pub sky_r: f32,
    pub sky_g: f32,
    pub sky_b: f32,
    pub albedo_r: f32,
    pub albedo_g: f32,
    pub albedo_b: f32,
    pub albedo_count: u32,
    pub probe_count: u32,
    /// Live probes: the irradiance entries.
    pub live_count: u32,
    pub count: u32,
    pub rays_per_probe: u32,
    pub hysteresis: f32,
    /// Whether live probes are numbered, bits per number, bits per entry
    /// (`gi::ProbeIndex::layout`).
    pub index_layout: [u32; 3],
    /// The block table's group count, masks' first word, data's first word and
    /// bits per mask number (`gi::BlockTable::layout`).
    pub table_layout: [u32; 4],
    /// A scrolling volume's ring (`ProbeField::ring`): per axis, the slot of the
    /// probe at the grid's origin; zero for a volume that does not scroll.
    pub ring: [u32; 3],
    pub _pad: [u32; 2],
}
const _: () = assert!(size_of::<GiUpdateParams>() == 312);

/// Push constants of the irradiance update kernels: where their parameters are.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GiUpdatePush {
    /// `GiUpdateParams`.
    pub params: u64,
}
const _: () = assert!(size_of::<GiUpdatePush>() == 8);

#[cfg(test)]
mod glsl {
    use super::*;
    use crate::raytrace::BvhNode;
    use std::mem::offset_of;

    /// A GLSL struct or push block generated from a Rust struct.
    struct GlslStruct {
        /// GLSL name of the struct, or of the push block.
        name: &'static str,
        /// `Some(macro)`: emitted as `#define macro layout(push_constant, std430) uniform name {..} pc`.
        push_macro: Option<&'static str>,
        size: usize,
        /// (GLSL type, field name, Rust offset).
        fields: &'static [(&'static str, &'static str, usize)],
    }

    macro_rules! glsl_struct {
        ($rust:ty, $name:literal, $push:expr, { $($field:ident : $glsl:literal),* $(,)? }) => {
            GlslStruct {
                name: $name,
                push_macro: $push,
                size: size_of::<$rust>(),
                fields: &[$(($glsl, stringify!($field), offset_of!($rust, $field))),*],
            }
        };
    }

    const STRUCTS: &[GlslStruct] = &[
        glsl_struct!(BvhNode, "KilnBvhNode", None, { lo: "vec3", a: "uint", hi: "vec3", b: "uint" }),
        glsl_struct!(BlasRefitPush, "BlasRefitPush", Some("KILN_PUSH_BLAS_REFIT"), {
            nodes: "uvec2", parents: "uvec2", leaves: "uvec2", triangles: "uvec2", positions: "uvec2",
            counters: "uvec2", leaf_count: "uint", _pad: "uint",
        }),
        glsl_struct!(SkinPush, "SkinPush", Some("KILN_PUSH_SKIN"), {
            rest: "uvec2", joints: "uvec2", weights: "uvec2", bones: "uvec2", skinned: "uvec2",
            vertex_count: "uint", bone_count: "uint",
        }),
        glsl_struct!(GpuInstance, "KilnInstance", None, {
            object_to_world: "vec4[3]", world_to_object: "vec4[3]", blas: "uint", mask: "uint", user_id: "uint",
            _pad: "uint",
        }),
        glsl_struct!(BlasRef, "KilnBlasRef", None, {
            node_base: "uint", triangle_base: "uint", position_base: "uint", triangle_count: "uint",
        }),
        glsl_struct!(TlasNode, "KilnTlasNode", None, { lo: "vec3", left: "uint", hi: "vec3", right: "uint" }),
        glsl_struct!(GpuRay, "KilnRay", None, {
            origin: "vec3", t_min: "float", dir: "vec3", t_max: "float", mask: "uint", _pad0: "uint", _pad1: "uint",
            _pad2: "uint",
        }),
        glsl_struct!(GpuHit, "KilnHit", None, {
            t: "float", instance: "uint", primitive: "uint", flags: "uint", normal: "vec3", u: "float", v: "float",
            user_id: "uint", _pad0: "uint", _pad1: "uint",
        }),
        glsl_struct!(TlasBoxesPush, "TlasBoxesPush", Some("KILN_PUSH_TLAS_BOXES"), {
            instances: "uvec2", blas_refs: "uvec2", blas_nodes: "uvec2", boxes: "uvec2", scene: "uvec2",
            count: "uint", _pad: "uint",
        }),
        glsl_struct!(TlasMortonPush, "TlasMortonPush", Some("KILN_PUSH_TLAS_MORTON"), {
            boxes: "uvec2", scene: "uvec2", keys: "uvec2", count: "uint", padded: "uint",
        }),
        glsl_struct!(TlasSortPush, "TlasSortPush", Some("KILN_PUSH_TLAS_SORT"), {
            keys: "uvec2", j: "uint", k: "uint", padded: "uint", _pad: "uint",
        }),
        glsl_struct!(TlasBuildPush, "TlasBuildPush", Some("KILN_PUSH_TLAS_BUILD"), {
            keys: "uvec2", nodes: "uvec2", parents: "uvec2", boxes: "uvec2", counters: "uvec2", count: "uint",
            _pad: "uint",
        }),
        glsl_struct!(TraceAddresses, "KilnTraceScene", None, {
            tlas: "uvec2", instances: "uvec2", blas_refs: "uvec2", blas_nodes: "uvec2", triangles: "uvec2",
            positions: "uvec2",
        }),
        glsl_struct!(TracePush, "TracePush", Some("KILN_PUSH_TRACE"), {
            rays: "uvec2", hits: "uvec2", scene: "KilnTraceScene", ray_count: "uint", any_hit: "uint",
        }),
        glsl_struct!(GiCompressPush, "GiCompressPush", Some("KILN_PUSH_GI_COMPRESS"), {
            maps: "uvec2", order: "uvec2", block_index: "uvec2", blocks: "uvec2", means: "uvec2", state: "uvec2",
            fresh: "uvec2", first: "uint", count: "uint", window: "uint", tolerance: "float",
        }),
        glsl_struct!(GiBakePush, "GiBakePush", Some("KILN_PUSH_GI_BAKE"), {
            rays: "uvec2", hits: "uvec2", probes: "uvec2", maps: "uvec2", offsets: "uvec2", origin_x: "float",
            origin_y: "float",
            origin_z: "float", spacing: "float", dims_x: "uint", dims_z: "uint", clip: "float", first: "uint",
            count: "uint", mask: "uint",
        }),
        glsl_struct!(GiUpdateParams, "KilnGiUpdateParams", None, {
            rays: "uvec2", hits: "uvec2", shadow_rays: "uvec2", shadow_hits: "uvec2", radiance: "uvec2",
            dirs: "uvec2", slots: "uvec2", mask: "uvec2", rank: "uvec2", irradiance: "uvec2",
            live_mask: "uvec2", live_rank: "uvec2", numbers: "uvec2", entries: "uvec2", blocks: "uvec2",
            albedo: "uvec2", offset_mask: "uvec2", offset_rank: "uvec2", offset_codes: "uvec2", origin_x: "float",
            origin_y: "float", origin_z: "float", spacing: "float", dims_x: "uint", dims_y: "uint", dims_z: "uint",
            clip: "float",
            bias: "float", visibility: "uint", sun_x: "float", sun_y: "float", sun_z: "float", sun_r: "float",
            sun_g: "float", sun_b: "float", sky_r: "float", sky_g: "float", sky_b: "float", albedo_r: "float",
            albedo_g: "float", albedo_b: "float", albedo_count: "uint", probe_count: "uint", live_count: "uint",
            count: "uint", rays_per_probe: "uint", hysteresis: "float", index_layout: "uint[3]", table_layout: "uint[4]",
            ring: "uint[3]", _pad: "uint[2]",
        }),
        glsl_struct!(GiUpdatePush, "GiUpdatePush", Some("KILN_PUSH_GI_UPDATE"), { params: "uvec2" }),
    ];

    /// (size, alignment) of a GLSL type under std430.
    fn std430(ty: &str) -> (usize, usize) {
        match ty {
            "float" | "uint" | "int" => (4, 4),
            "vec2" | "uvec2" => (8, 8),
            "vec3" | "uvec3" => (12, 16),
            "vec4" | "uvec4" => (16, 16),
            "vec4[3]" => (48, 16),
            "uint[2]" => (8, 4),
            "uint[3]" => (12, 4),
            "uint[4]" => (16, 4),
            "KilnTraceScene" => (48, 8),
            other => panic!("layout.rs: add std430 rules for GLSL type {other}"),
        }
    }

    /// `vec4[3] m` is written `vec4 m[3]`, the form every GLSL version accepts.
    fn glsl_field(ty: &str, name: &str) -> String {
        match ty.split_once('[') {
            Some((base, count)) => format!("{base} {name}[{count};"),
            None => format!("{ty} {name};"),
        }
    }

    /// Checks every struct: GLSL std430 offsets equal the Rust offsets, sizes agree.
    fn check() -> Result<(), String> {
        for s in STRUCTS {
            let mut offset = 0usize;
            let mut align_max = 4usize;
            for &(ty, name, rust_offset) in s.fields {
                let (size, align) = std430(ty);
                offset = offset.next_multiple_of(align);
                if offset != rust_offset {
                    return Err(format!("{}.{name}: std430 offset {offset}, Rust offset {rust_offset}", s.name));
                }
                offset += size;
                align_max = align_max.max(align);
            }
            let size = offset.next_multiple_of(align_max);
            if size != s.size {
                return Err(format!("{}: std430 size {size}, Rust size {}", s.name, s.size));
            }
        }
        Ok(())
    }

    /// The text of `vulkan-shaders/include/kiln_layout.glsl`.
    fn glsl_source() -> String {
        let mut out = String::from(
            "// Generated from runtime/src/gpu/layout.rs by `KILN_BLESS=1 cargo test -p kiln --lib gpu::layout`.\n\
             // Do not edit: change the Rust structs and regenerate. Installed with the\n\
             // package (share/kiln/glsl); included by kiln_buffers.glsl.\n\
             #ifndef KILN_LAYOUT_GLSL\n#define KILN_LAYOUT_GLSL\n\n",
        );
        let constants = [
            ("KILN_NO_PARENT", crate::raytrace::blas::NO_PARENT),
            ("KILN_BLAS_MAX_DEPTH", crate::raytrace::blas::MAX_DEPTH),
            ("KILN_TLAS_LEAF", TLAS_LEAF),
            ("KILN_NO_HIT", NO_HIT),
            ("KILN_HIT_BACKFACE", HIT_BACKFACE),
        ];
        for (name, value) in constants {
            out.push_str(&format!("const uint {name} = {value}u;\n"));
        }
        for s in STRUCTS {
            let fields: Vec<String> = s.fields.iter().map(|(ty, name, _)| glsl_field(ty, name)).collect();
            match s.push_macro {
                None => out.push_str(&format!("\n// {} bytes\nstruct {} {{ {} }};\n", s.size, s.name, fields.join(" "))),
                Some(macro_name) => out.push_str(&format!(
                    "\n// {} bytes of push constants\n#define {macro_name} layout(push_constant, std430) uniform {} {{ {} }} pc\n",
                    s.size,
                    s.name,
                    fields.join(" ")
                )),
            }
        }
        out.push_str("\n#endif\n");
        out
    }

    #[test]
    fn glsl_layout_matches_rust_and_is_fresh() {
        check().unwrap();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../vulkan-shaders/include/kiln_layout.glsl");
        let text = glsl_source();
        if std::env::var("KILN_BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(path, &text).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(on_disk == text, "{path} is stale: run KILN_BLESS=1 cargo test -p kiln --lib gpu::layout");
    }
}

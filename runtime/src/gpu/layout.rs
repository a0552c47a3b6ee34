//! Structs shared with the shaders. The Rust definitions are the only ones written
//! by hand: `vulkan-shaders/include/layout.glsl` is generated from the table below,
//! and a test checks that every field's std430 offset in GLSL equals its Rust
//! `offset_of!` and that the file on disk is fresh (`KILN_BLESS=1` rewrites it).
//!
//! Buffer addresses travel as `u64` in Rust and `uvec2` in GLSL
//! (`GL_EXT_buffer_reference_uvec2`), so kernels need no 64-bit integer support.

use bytemuck::{Pod, Zeroable};
use std::mem::size_of;

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
    /// `uint[3 * n]`: the BLAS's reordered triangles.
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

#[cfg(test)]
mod glsl {
    use super::super::blas::BvhNode;
    use super::*;
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
        glsl_struct!(BvhNode, "BvhNode", None, { lo: "vec3", a: "uint", hi: "vec3", b: "uint" }),
        glsl_struct!(BlasRefitPush, "BlasRefitPush", Some("KILN_PUSH_BLAS_REFIT"), {
            nodes: "uvec2", parents: "uvec2", leaves: "uvec2", triangles: "uvec2", positions: "uvec2",
            counters: "uvec2", leaf_count: "uint", _pad: "uint",
        }),
        glsl_struct!(SkinPush, "SkinPush", Some("KILN_PUSH_SKIN"), {
            rest: "uvec2", joints: "uvec2", weights: "uvec2", bones: "uvec2", skinned: "uvec2",
            vertex_count: "uint", bone_count: "uint",
        }),
    ];

    /// (size, alignment) of a GLSL type under std430.
    fn std430(ty: &str) -> (usize, usize) {
        match ty {
            "float" | "uint" | "int" => (4, 4),
            "vec2" | "uvec2" => (8, 8),
            "vec3" | "uvec3" => (12, 16),
            "vec4" | "uvec4" => (16, 16),
            other => panic!("layout.rs: add std430 rules for GLSL type {other}"),
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

    /// The text of `vulkan-shaders/include/layout.glsl`.
    fn glsl_source() -> String {
        let mut out = String::from(
            "// Generated from runtime/src/gpu/layout.rs by `KILN_BLESS=1 cargo test -p kiln --lib gpu::layout`.\n\
             // Do not edit: change the Rust structs and regenerate.\n\
             #ifndef KILN_LAYOUT_GLSL\n#define KILN_LAYOUT_GLSL\n",
        );
        for s in STRUCTS {
            let fields: Vec<String> = s.fields.iter().map(|(ty, name, _)| format!("{ty} {name};")).collect();
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
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../vulkan-shaders/include/layout.glsl");
        let text = glsl_source();
        if std::env::var("KILN_BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(path, &text).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(on_disk == text, "{path} is stale: run KILN_BLESS=1 cargo test -p kiln --lib gpu::layout");
    }
}

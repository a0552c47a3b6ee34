//! The capsule character controller through the C ABI: create a character, move it
//! through voxel terrain and static shapes, and read whether it stands on ground.

use std::mem::size_of;

use kiln_core::character::{Character, CharacterDef, CharacterError, MoveResult, StaticWorld, TerrainWorld};
use kiln_core::math::{Isometry, Vec3};
use kiln_core::physics::CharacterBodies;
use kiln_core::shapes::Shape;

use crate::abi::{
    ffi_call, non_null, read_checked, read_def, write_out, Error, KilnStatus, KILN_ERROR_INVALID_ARGUMENT,
};
use crate::handles::HandleTable;
use crate::query::{check_filter, kiln_default_query_filter, KilnQueryFilter};
use crate::runtime::on_runtime;
use crate::runtime::KilnRuntimeId;
use crate::shapes::{shape_of, KilnShapeId};
use crate::terrain::{with_terrain, KilnTerrainId};
use crate::types::{check_transform, kvec, vec3, KilnTransform, KilnVec3};
use crate::world::{with_world, KilnWorldId, KILN_WORLD_MAX_STEP};

/// Handle to a character. `{0, 0}` is the null handle. Pass by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnCharacterId {
    /// Slot index plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a destroyed character's handles no longer match.
    pub generation: u32,
}

/// How a character is built and moves. Initialise with `kiln_default_character_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnCharacterDef {
    /// `sizeof(KilnCharacterDef)`, set by `kiln_default_character_def()`.
    pub struct_size: u32,
    /// Capsule radius in metres (finite, > 0, <= `KILN_CHARACTER_MAX_SIZE`). Default 0.3.
    pub radius: f32,
    /// Length of the capsule's core segment (total height is `height + 2 radius`;
    /// finite, >= 0, <= `KILN_CHARACTER_MAX_SIZE`). Default 1.2.
    pub height: f32,
    /// Gap kept between the capsule and what it touches (finite, > 0). Default 0.02.
    pub skin: f32,
    /// Cosine of the steepest slope it stands on. Default 0.707 (45°).
    pub max_slope_cos: f32,
    /// Highest ledge it steps onto (finite, >= 0). Default 0.3.
    pub step_height: f32,
    /// How far below its feet it looks for ground (finite, >= 0). Default 0.06.
    pub ground_probe: f32,
    /// Slide iterations per move (>= 1). Default 4.
    pub max_iterations: u32,
    /// Unit up direction. Default +Y.
    pub up: KilnVec3,
}

/// One static shape placed in the world, for `kiln_character_move`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnShapeInstance {
    /// The shape.
    pub shape: KilnShapeId,
    /// Where it is.
    pub transform: KilnTransform,
}

/// What one `kiln_character_move` did.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnMoveResult {
    /// The displacement actually made.
    pub moved: KilnVec3,
    /// The capsule centre after the move.
    pub position: KilnVec3,
    /// Standing on a walkable surface within `ground_probe` below.
    pub grounded: bool,
    /// The move began or ended overlapping geometry and was pushed out.
    pub recovered: bool,
    /// The last surface hit while sliding (unit, pointing out of it), or zero.
    pub contact_normal: KilnVec3,
    /// The ground's unit normal when grounded, else zero.
    pub ground_normal: KilnVec3,
}

/// Largest capsule radius or core height, in metres.
pub const KILN_CHARACTER_MAX_SIZE: f32 = 100.0;
/// Longest displacement of one move, in metres (use `kiln_character_set_position`
/// to teleport).
pub const KILN_CHARACTER_MAX_MOVE: f32 = 1000.0;
/// Largest coordinate of a character position, in metres.
pub const KILN_CHARACTER_MAX_COORDINATE: f32 = 1.0e7;
/// Most static shapes one move takes.
pub const KILN_CHARACTER_MAX_STATICS: u32 = 1 << 20;

static CHARACTERS: HandleTable<Character> = HandleTable::new("character");

fn with_character<R>(id: KilnCharacterId, f: impl FnOnce(&mut Character) -> Result<R, Error>) -> Result<R, Error> {
    CHARACTERS.with(id.index1, id.generation, f)
}

fn character_error(error: CharacterError) -> Error {
    Error::new(KILN_ERROR_INVALID_ARGUMENT, error.to_string())
}

fn check_position(p: KilnVec3, name: &str) -> Result<Vec3, Error> {
    let v = vec3(p);
    if !v.is_finite() || v.abs().max_element() > KILN_CHARACTER_MAX_COORDINATE {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("{name} {p:?} must be finite and within KILN_CHARACTER_MAX_COORDINATE of the origin"),
        ));
    }
    Ok(v)
}

/// A move's displacement: finite and at most `KILN_CHARACTER_MAX_MOVE` long.
fn check_displacement(displacement: KilnVec3) -> Result<Vec3, Error> {
    let delta = vec3(displacement);
    if !delta.is_finite() || delta.length() > KILN_CHARACTER_MAX_MOVE {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("displacement {displacement:?} must be finite and at most KILN_CHARACTER_MAX_MOVE long"),
        ));
    }
    Ok(delta)
}

/// Refuses to move a character so far out that a move could leave the coordinate range.
fn check_movable(c: &Character) -> Result<(), Error> {
    if c.position().abs().max_element() > KILN_CHARACTER_MAX_COORDINATE - KILN_CHARACTER_MAX_MOVE {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            "the character is too far from the origin to move (KILN_CHARACTER_MAX_COORDINATE)",
        ));
    }
    Ok(())
}

fn move_result(m: &MoveResult, position: Vec3) -> KilnMoveResult {
    KilnMoveResult {
        moved: kvec(m.moved),
        position: kvec(position),
        grounded: m.grounded,
        recovered: m.recovered,
        contact_normal: kvec(m.contact_normal),
        ground_normal: kvec(m.ground_normal),
    }
}

/// A `KilnCharacterDef` with defaults: a 1.8 m tall capsule of radius 0.3, 45°
/// slopes, 0.3 m steps, +Y up.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_character_def() -> KilnCharacterDef {
    let d = CharacterDef::default();
    KilnCharacterDef {
        struct_size: size_of::<KilnCharacterDef>() as u32,
        radius: d.radius,
        height: d.height,
        skin: d.skin,
        max_slope_cos: d.max_slope_cos,
        step_height: d.step_height,
        ground_probe: d.ground_probe,
        max_iterations: d.max_iterations,
        up: kvec(d.up),
    }
}

/// Creates a character whose capsule centre is at `position` and writes its handle
/// to `out_character`. The first move pushes it out if it starts inside geometry.
///
/// Pointers: `def` is NULL or readable; `out_character` is NULL or writable.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_character_create(
    def: *const KilnCharacterDef,
    position: KilnVec3,
    out_character: *mut KilnCharacterId,
) -> KilnStatus {
    ffi_call("kiln_character_create", || {
        let def = non_null(def, "def")?;
        let out = non_null(out_character, "out_character")?;
        // SAFETY: non-null; readable per the contract.
        let d: KilnCharacterDef = unsafe { read_def(def, "def")? };
        if !(d.radius <= KILN_CHARACTER_MAX_SIZE && d.height <= KILN_CHARACTER_MAX_SIZE) {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("def->radius {} and def->height {} must be <= KILN_CHARACTER_MAX_SIZE", d.radius, d.height),
            ));
        }
        if !(d.step_height <= KILN_CHARACTER_MAX_SIZE && d.ground_probe <= KILN_CHARACTER_MAX_SIZE) {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                "def->step_height and def->ground_probe must be <= KILN_CHARACTER_MAX_SIZE",
            ));
        }
        let def = CharacterDef {
            radius: d.radius,
            height: d.height,
            skin: d.skin,
            max_slope_cos: d.max_slope_cos,
            step_height: d.step_height,
            ground_probe: d.ground_probe,
            max_iterations: d.max_iterations,
            up: vec3(d.up),
        };
        if d.skin > d.radius {
            return Err(Error::new(KILN_ERROR_INVALID_ARGUMENT, "def->skin must not exceed def->radius"));
        }
        let character = Character::new(def, check_position(position, "position")?).map_err(character_error)?;
        let (index1, generation) = CHARACTERS.insert(character);
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(KilnCharacterId { index1, generation }) };
        Ok(())
    })
}

/// Destroys a character; its handle becomes invalid.
///
/// Threads: one call at a time per character (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_character_destroy(character: KilnCharacterId) -> KilnStatus {
    ffi_call("kiln_character_destroy", || {
        drop(CHARACTERS.remove(character.index1, character.generation)?);
        Ok(())
    })
}

/// Whether `character` refers to a live character.
///
/// Threads: any thread, at any time; never busy.
#[no_mangle]
pub extern "C" fn kiln_character_is_valid(character: KilnCharacterId) -> bool {
    std::panic::catch_unwind(|| CHARACTERS.is_valid(character.index1, character.generation)).unwrap_or(false)
}

/// Moves the character by `displacement` (at most `KILN_CHARACTER_MAX_MOVE` long) as
/// far as the world allows: it slides along what it hits, steps up ledges up to
/// `step_height`, never tunnels and never ends inside geometry. The world is
/// `terrain` (the null handle `{0, 0}` for none; its chunk meshes are built on
/// `runtime`'s workers, or on the calling thread for the null runtime) plus
/// `static_count` placed shapes (NULL allowed when 0; triangles among them form one
/// mesh whose inner edges do not snag). Writes what the move did to `out_result`
/// unless it is NULL. On failure the character does not move.
///
/// Pointers: `statics` is NULL or readable for `static_count` entries; `out_result` is
/// NULL or writable.
///
/// Threads: one call at a time per character (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_character_move(
    character: KilnCharacterId,
    displacement: KilnVec3,
    terrain: KilnTerrainId,
    runtime: KilnRuntimeId,
    statics: *const KilnShapeInstance,
    static_count: u32,
    out_result: *mut KilnMoveResult,
) -> KilnStatus {
    ffi_call("kiln_character_move", || {
        let delta = check_displacement(displacement)?;
        if static_count > KILN_CHARACTER_MAX_STATICS {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("static_count is {static_count}, more than KILN_CHARACTER_MAX_STATICS"),
            ));
        }
        // SAFETY: readable for `static_count` entries per the contract.
        let shapes: Vec<(Shape, Isometry)> = unsafe {
            read_checked(statics, static_count, "statics", |s, name| {
                Ok((shape_of(s.shape)?, check_transform(&s.transform, &format!("{name}.transform"))?))
            })?
        };
        let result = with_character(character, |c| {
            check_movable(c)?;
            let m = if terrain == KilnTerrainId::default() {
                c.move_by(delta, &mut StaticWorld(&shapes)).map_err(character_error)?
            } else {
                on_runtime(runtime, |jobs| {
                    with_terrain(terrain, |t| {
                        let mut world = TerrainWorld { terrain: t, jobs, shapes: &shapes };
                        c.move_by(delta, &mut world).map_err(character_error)
                    })
                })?
            };
            Ok(move_result(&m, c.position()))
        })?;
        if !out_result.is_null() {
            write_out(out_result, "out_result", result)?;
        }
        Ok(())
    })
}

/// How a character meets a world's bodies in `kiln_character_move_in_world`.
/// Initialise with `kiln_default_character_bodies()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnCharacterBodies {
    /// `sizeof(KilnCharacterBodies)`, set by `kiln_default_character_bodies()`.
    pub struct_size: u32,
    /// What blocks the character: categories, motion types, the terrain, a body to
    /// leave out (its own, if it has one). Sensors never block. Default: everything.
    pub filter: KilnQueryFilter,
    /// Largest force (N, finite, >= 0) with which it pushes dynamic bodies. Default 500.
    pub strength: f32,
    /// Whether it rides the body it stands on. Default true.
    pub ride: bool,
}

/// The default `KilnCharacterBodies`: blocked by everything, pushing with 500 N,
/// riding platforms.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_character_bodies() -> KilnCharacterBodies {
    let d = CharacterBodies::default();
    KilnCharacterBodies {
        struct_size: size_of::<KilnCharacterBodies>() as u32,
        filter: kiln_default_query_filter(),
        strength: d.strength,
        ride: d.ride,
    }
}

/// Moves the character by `displacement` (at most `KILN_CHARACTER_MAX_MOVE` long)
/// over the next `dt` seconds (finite, 0 to `KILN_WORLD_MAX_STEP`) among `world`'s
/// terrain and bodies, as `kiln_character_move` moves it through terrain and static
/// shapes: static, kinematic and dynamic bodies block it; it rides the body it stood
/// on after the last move (that body's velocity at its feet times `dt` joins the
/// move); and it pushes the dynamic bodies it walks into with at most
/// `settings->strength * dt` per move, never faster than itself, so a light crate
/// slides and a heavy one does not. `settings` NULL is the default. Call it once per
/// frame with the frame's `dt`, beside `kiln_world_step`. Writes what the move did to
/// `out_result` unless it is NULL. On failure nothing moves.
///
/// Pointers: `settings` is NULL or readable; `out_result` is NULL or writable.
///
/// Threads: one call at a time per character (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_character_move_in_world(
    character: KilnCharacterId,
    world: KilnWorldId,
    runtime: KilnRuntimeId,
    displacement: KilnVec3,
    dt: f32,
    settings: *const KilnCharacterBodies,
    out_result: *mut KilnMoveResult,
) -> KilnStatus {
    ffi_call("kiln_character_move_in_world", || {
        let delta = check_displacement(displacement)?;
        if !(dt.is_finite() && (0.0..=KILN_WORLD_MAX_STEP).contains(&dt)) {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("dt is {dt}, must be finite and within 0..=KILN_WORLD_MAX_STEP"),
            ));
        }
        let settings = if settings.is_null() {
            kiln_default_character_bodies()
        } else {
            // SAFETY: non-null; readable per the contract.
            unsafe { read_def(settings, "settings")? }
        };
        if !(settings.strength.is_finite() && settings.strength >= 0.0) {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("settings->strength is {}, must be finite and >= 0", settings.strength),
            ));
        }
        let result = with_character(character, |c| {
            check_movable(c)?;
            on_runtime(runtime, |jobs| {
                with_world(world, |entry| {
                    let filter = check_filter(&settings.filter, "settings->filter", entry, world)?;
                    let bodies = CharacterBodies { filter, strength: settings.strength, ride: settings.ride };
                    let m = entry.world.move_character(c, delta, dt, &bodies, jobs).map_err(character_error)?;
                    Ok(move_result(&m, c.position()))
                })
            })
        })?;
        if !out_result.is_null() {
            write_out(out_result, "out_result", result)?;
        }
        Ok(())
    })
}

/// Writes the capsule centre to `out_position`.
///
/// Pointers: `out_position` is NULL or valid for writing.
///
/// Threads: one call at a time per character (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_character_get_position(
    character: KilnCharacterId,
    out_position: *mut KilnVec3,
) -> KilnStatus {
    ffi_call("kiln_character_get_position", || {
        non_null(out_position, "out_position")?;
        let p = with_character(character, |c| Ok(c.position()))?;
        write_out(out_position, "out_position", kvec(p))
    })
}

/// Teleports the character (no collision test); the next move pushes it out if it
/// lands inside geometry.
///
/// Threads: one call at a time per character (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_character_set_position(character: KilnCharacterId, position: KilnVec3) -> KilnStatus {
    ffi_call("kiln_character_set_position", || {
        let p = check_position(position, "position")?;
        with_character(character, |c| c.set_position(p).map_err(character_error))
    })
}

/// Writes whether the last move ended standing on walkable ground.
///
/// Pointers: `out_grounded` is NULL or valid for writing.
///
/// Threads: one call at a time per character (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_character_is_grounded(character: KilnCharacterId, out_grounded: *mut bool) -> KilnStatus {
    ffi_call("kiln_character_is_grounded", || {
        non_null(out_grounded, "out_grounded")?;
        let grounded = with_character(character, |c| Ok(c.is_grounded()))?;
        write_out(out_grounded, "out_grounded", grounded)
    })
}

/// Writes the normal of the last surface the last move slid along (zero when it hit
/// nothing).
///
/// Pointers: `out_normal` is NULL or valid for writing.
///
/// Threads: one call at a time per character (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_character_get_contact_normal(
    character: KilnCharacterId,
    out_normal: *mut KilnVec3,
) -> KilnStatus {
    ffi_call("kiln_character_get_contact_normal", || {
        non_null(out_normal, "out_normal")?;
        let n = with_character(character, |c| Ok(c.last_move().contact_normal))?;
        write_out(out_normal, "out_normal", kvec(n))
    })
}

/// Writes everything the last move reported (all zero before the first move).
///
/// Pointers: `out_result` is NULL or valid for writing.
///
/// Threads: one call at a time per character (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_character_get_last_move(
    character: KilnCharacterId,
    out_result: *mut KilnMoveResult,
) -> KilnStatus {
    ffi_call("kiln_character_get_last_move", || {
        non_null(out_result, "out_result")?;
        let r = with_character(character, |c| Ok(move_result(c.last_move(), c.position())))?;
        write_out(out_result, "out_result", r)
    })
}

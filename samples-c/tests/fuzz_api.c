/* Random sequences of C API calls, valid and invalid: live, stale and never-issued
 * handles, NULL pointers, NaN, infinite, huge and negative values, destroy-then-use,
 * and edits from inside a debug-draw callback (a query in progress). Every call must
 * return a status code (with a message when it is not KILN_OK), nothing may crash or
 * leak (run under AddressSanitizer and UndefinedBehaviorSanitizer by `make check`),
 * and after every call each live world passes kiln_world_validate and each live
 * character stands somewhere finite. The calls cover worlds, bodies, shapes and
 * their queries, joints of every kind, world queries, terrain edits and queries,
 * characters, integrated frames (without GPU parts), octrees, and, when a Vulkan device
 * is there, a tracer and a probe volume (meshes, instances, bodies followed, traces, GI
 * updates and samples; KILN_REQUIRE_GPU=1 fails without a device).
 *
 * Every choice comes from next()/below(): a seeded xorshift here, or the fuzzer's bytes
 * under libFuzzer (fuzz/fuzz_targets/api_calls.rs builds this file with
 * KILN_FUZZ_API_ENTRY and calls kiln_fuzz_api_run; it leaves the GPU out, since a
 * Vulkan instance per input would cost more than the input). Seeded, a failure
 * replays exactly:
 *   fuzz_api [SEED [CALLS [COUNT]]]   (defaults: seeds 1..4, 4000 calls each;
 *                                       COUNT seeds from SEED on)
 * KILN_FUZZ_TRACE=1 prints every call and its status to stderr. `make check` and
 * ctest run the default; `make fuzz` sweeps 1,000 seeds.
 *
 * It found a terrain ray cast that never ended, bodies turned NaN by overflowing
 * forces, by shapes whose inertia overflows and by a sphere of radius 1e30 (shapes
 * are now limited to KILN_SHAPE_MAX_EXTENT); all fixed, with Rust regression tests. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kiln.h"
#include "check.h"

enum { MAX_WORLDS = 2, MAX_BODIES = 96, MAX_SHAPES = 6, MAX_CHARACTERS = 3, MAX_FRAMES = 2, MAX_JOINTS = 24 };
enum { MAX_OCTREES = 3, MAX_INSTANCES = 16 };

static uint64_t rng_state;
/* The fuzzer's bytes when set: one byte per choice of up to 256 outcomes, four per
 * word, zeros once they run out. */
static const uint8_t *fuzz_bytes;
static size_t fuzz_left;

static uint32_t take(unsigned count) {
    uint32_t v = 0;
    for (unsigned i = 0; i < count; i++) {
        v <<= 8;
        if (fuzz_left) v |= *fuzz_bytes++, fuzz_left--;
    }
    return v;
}

static uint32_t next(void) {
    if (fuzz_bytes) return take(4);
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static uint32_t below(uint32_t n) {
    if (!n) return 0;
    if (fuzz_bytes) return take(n <= 256u ? 1 : n <= 65536u ? 2 : 4) % n;
    return next() % n;
}

/* Mostly ordinary values, sometimes the ones that break naive code. */
static float number(float scale) {
    switch (below(16)) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return 1e30f;
    case 4: return -1e30f;
    case 5: return 0.0f;
    case 6: return -0.0f;
    case 7: return 1e-40f; /* subnormal */
    default: return scale * ((float)below(2001) / 1000.0f - 1.0f);
    }
}

/* A good value four times in five, else number(scale). */
static float usually(float good, float scale) { return below(5) ? good : number(scale); }

static KilnVec3 vec(float scale) { return (KilnVec3){number(scale), number(scale), number(scale)}; }

static KilnVec3 sane_vec(float scale) {
    return (KilnVec3){scale * ((float)below(2001) / 1000.0f - 1.0f), scale * (float)below(1001) / 1000.0f,
                      scale * ((float)below(2001) / 1000.0f - 1.0f)};
}

static KilnTransform transform(void) {
    KilnTransform t = kiln_transform_identity();
    if (below(4) == 0) {
        t.position = vec(20.0f);
        t.rotation = (KilnQuat){number(1.0f), number(1.0f), number(1.0f), number(1.0f)};
    } else {
        t.position = sane_vec(12.0f);
        t.position.y += 1.0f;
    }
    return t;
}

typedef struct Pools {
    KilnRuntimeId runtime;
    KilnTerrainId terrain;
    KilnWorldId worlds[MAX_WORLDS];
    KilnBodyId bodies[MAX_BODIES]; /* live, destroyed or zero */
    KilnShapeId shapes[MAX_SHAPES];
    KilnCharacterId characters[MAX_CHARACTERS];
    KilnFrameId frames[MAX_FRAMES]; /* integrated frames over a world, without a GPU */
    KilnJointId joints[MAX_JOINTS]; /* live, broken, destroyed (with a body) or zero */
    KilnOctreeSetId octree_set;
    KilnOctreeId octrees[MAX_OCTREES];
    KilnTracerId tracer; /* zero without a device */
    KilnGiId gi;
    KilnMeshId meshes[MAX_INSTANCES];         /* live, removed or zero */
    KilnInstanceId instances[MAX_INSTANCES]; /* live, removed or zero */
    uint32_t mesh_count, instance_count;     /* added to the tracer so far */
    unsigned calls, ok, refused;
} Pools;

/* A handle from the pool, or now and then a forged one. */
static KilnWorldId any_world(const Pools *p) {
    if (below(10) == 0) return (KilnWorldId){below(3), below(3)};
    return p->worlds[below(MAX_WORLDS)];
}

static KilnBodyId any_body(const Pools *p) {
    if (below(12) == 0) {
        KilnBodyId forged = p->bodies[below(MAX_BODIES)];
        forged.generation += below(3);
        forged.index1 += below(2);
        return forged;
    }
    return p->bodies[below(MAX_BODIES)];
}

static KilnJointId any_joint(const Pools *p) {
    KilnJointId j = p->joints[below(MAX_JOINTS)];
    if (below(12) == 0) j.generation += below(3), j.index1 += below(2);
    return j;
}

/* A joint base between two pool bodies (often of one world), mostly sane frames. */
static KilnJointBase joint_base(const Pools *p) {
    KilnJointBase base = kiln_default_spherical_joint_def().base;
    base.body_a = any_body(p);
    base.body_b = any_body(p);
    /* Mostly a live partner of the same world, so joints get made and stepped. */
    unsigned start = below(MAX_BODIES);
    for (unsigned i = 0; i < MAX_BODIES && below(4); i++) {
        KilnBodyId c = p->bodies[(start + i) % MAX_BODIES];
        if (kiln_body_is_valid(c) && c.world.index1 == base.body_a.world.index1 && c.index1 != base.body_a.index1) {
            base.body_b = c;
            break;
        }
    }
    base.frame_a = below(3) ? kiln_transform_identity() : transform();
    base.frame_b = below(3) ? kiln_transform_identity() : transform();
    base.collide_connected = below(2);
    if (below(4) == 0) base.break_force = usually(500.0f, 1000.0f);
    if (below(8) == 0) base.break_torque = number(100.0f);
    return base;
}

/* Every joint drawn has finite frames and ordered limits. */
static void check_joint_draw(const KilnJointDraw *j, void *user) {
    (void)user;
    CHECK(isfinite(j->frame_a.position.x + j->frame_a.position.y + j->frame_a.position.z));
    CHECK(isfinite(j->frame_b.rotation.x + j->frame_b.rotation.y + j->frame_b.rotation.z + j->frame_b.rotation.w));
    CHECK(j->joint_type <= KILN_JOINT_SIX_DOF && (!j->limit_enabled || j->lower <= j->upper));
}

static KilnShapeId any_shape(const Pools *p) {
    if (below(12) == 0) return (KilnShapeId){below(40), below(4)};
    return p->shapes[below(MAX_SHAPES)];
}

static KilnCharacterId any_character(const Pools *p) {
    if (below(12) == 0) return (KilnCharacterId){below(4), below(4)};
    return p->characters[below(MAX_CHARACTERS)];
}

static KilnFrameId any_frame(const Pools *p) {
    if (below(12) == 0) return (KilnFrameId){below(3), below(3)};
    return p->frames[below(MAX_FRAMES)];
}

static KilnTerrainId any_terrain(const Pools *p) {
    if (below(12) == 0) return (KilnTerrainId){below(3), below(3) + 1};
    return p->terrain;
}

static KilnRuntimeId any_runtime(const Pools *p) {
    switch (below(12)) {
    case 0: return (KilnRuntimeId){0, 0}; /* the calling thread */
    case 1: return (KilnRuntimeId){p->runtime.index1, p->runtime.generation + 3};
    default: return p->runtime;
    }
}

static KilnAabb box(float scale) {
    if (below(5) == 0) return (KilnAabb){vec(scale), vec(scale)};
    KilnVec3 a = sane_vec(scale), h = sane_vec(2.0f);
    a.y -= 2.0f;
    return (KilnAabb){a, {a.x + fabsf(h.x), a.y + h.y, a.z + fabsf(h.z)}};
}

/* Every status is a known code; failures carry a message. */
static void expect_status(Pools *p, KilnStatus s, const char *what) {
    p->calls++;
    if (getenv("KILN_FUZZ_TRACE")) fprintf(stderr, "call %u: %s -> %s\n", p->calls, what, kiln_status_name(s));
    if (s == KILN_OK) {
        p->ok++;
        return;
    }
    p->refused++;
    int known = strcmp(kiln_status_name(s), "KILN_UNKNOWN_STATUS") != 0;
    int internal = s == KILN_ERROR_INTERNAL;
    int has_message = kiln_last_error_message()[0] != '\0';
    if (!known || internal || !has_message) {
        fprintf(stderr, "%s: status %d (%s), message \"%s\"\n", what, (int)s, kiln_status_name(s),
                kiln_last_error_message());
    }
    CHECK(known && !internal && has_message);
}

/* A debug-draw callback that tries to edit the world while it is being drawn. */
typedef struct Reentry {
    Pools *pools;
    KilnWorldId world;
    unsigned attempts, refused;
} Reentry;

static void edit_while_drawing(KilnBodyId body, uint32_t shape_index, KilnShapeId shape, const KilnTransform *xf,
                               uint32_t color, void *user) {
    (void)shape_index, (void)shape, (void)xf, (void)color;
    Reentry *r = user;
    if (r->attempts >= 4) return;
    r->attempts++;
    KilnStatus s;
    switch (below(3)) {
    case 0: s = kiln_world_step(r->world, (KilnRuntimeId){0, 0}, 1.0f / 60.0f); break;
    case 1: s = kiln_body_destroy(body); break;
    default: s = kiln_world_destroy(r->world); break;
    }
    r->refused += s == KILN_ERROR_INVALID_STATE;
}

/* The fuzzer's ray callback: context[0] seeds its answers (ignore, stop, clip,
 * go on, NaN), context[1] counts the hits; each hit also tries a call on a world. */
static float fuzz_ray_hit(const KilnWorldRayHit *hit, void *context) {
    uint32_t *c = context;
    CHECK(hit != NULL && hit->hit && hit->distance >= 0.0f);
    c[1]++;
    c[0] = c[0] * 1664525u + 1013904223u;
    KilnWorldRayHit inner;
    KilnRay up = {{0, 0, 0}, {0, 1, 0}};
    (void)kiln_world_cast_ray(hit->target.body.world, &up, 1.0f, NULL, &inner);
    switch ((c[0] >> 24) % 5) {
    case 0: return -1.0f;
    case 1: return 0.0f;
    case 2: return hit->distance;
    case 3: return NAN;
    default: return 1.0e30f;
    }
}

/* A count for a buffer: `n` when the buffer is given (a larger one would be the
 * caller's overflow, not Kiln's), else sometimes huge. */
static uint32_t huge_unless(const void *buffer, uint32_t n) { return buffer || below(2) ? n : 0xFFFFFFFFu; }

/* A path of child indices, sometimes out of range (> 7) or longer than the limit. */
static uint32_t octree_path(uint8_t path[KILN_OCTREE_MAX_DEPTH + 4]) {
    uint32_t depth = below(6) ? below(5) : below(KILN_OCTREE_MAX_DEPTH + 4);
    for (uint32_t i = 0; i < KILN_OCTREE_MAX_DEPTH + 4; i++) path[i] = (uint8_t)(below(10) ? below(8) : below(256));
    return depth;
}

static KilnRay ray(float scale) {
    KilnRay r = {sane_vec(scale), sane_vec(1.0f)};
    if (below(6) == 0) r.origin = vec(scale), r.direction = vec(1.0f);
    r.direction.y -= 0.5f;
    return r;
}

/* Octrees: create and destroy (sets too), cube edits, load and save, picks. */
static KilnStatus octree_call(Pools *p, const char **what) {
    KilnOctreeSetId set = below(12) ? p->octree_set : (KilnOctreeSetId){below(3), below(3)};
    unsigned k = below(MAX_OCTREES);
    KilnOctreeId o = below(12) ? p->octrees[k] : (KilnOctreeId){below(4), below(4), below(3)};
    uint8_t path[KILN_OCTREE_MAX_DEPTH + 4];
    uint32_t depth = octree_path(path);
    switch (below(11)) {
    case 0: {
        if (!kiln_octree_set_is_valid(p->octree_set)) {
            *what = "kiln_octree_set_create";
            return kiln_octree_set_create(&p->octree_set);
        }
        KilnOctreeDef def = kiln_default_octree_def();
        if (below(4) == 0) def.position = vec(10.0f), def.size = number(4.0f);
        KilnOctreeId made = {0, 0, 0};
        *what = "kiln_octree_create";
        KilnStatus s = kiln_octree_create(set, below(20) ? &def : NULL, &made);
        if (s == KILN_OK) p->octrees[k] = made;
        return s;
    }
    case 1: *what = "kiln_octree_destroy"; return kiln_octree_destroy(set, o);
    case 2:
        if (below(20)) break;
        *what = "kiln_octree_set_destroy"; /* its octrees go with it */
        return kiln_octree_set_destroy(set);
    case 3:
        *what = "kiln_octree_set_cube";
        return kiln_octree_set_cube(set, o, below(20) ? path : NULL, depth, below(8) ? below(2) : below(5));
    case 4: *what = "kiln_octree_subdivide"; return kiln_octree_subdivide(set, o, below(20) ? path : NULL, depth);
    case 5: {
        uint32_t kind;
        *what = "kiln_octree_get_cube";
        return kiln_octree_get_cube(set, o, path, depth, below(20) ? &kind : NULL);
    }
    case 6: {
        uint8_t bytes[64];
        uint32_t n = below(sizeof bytes + 1);
        for (uint32_t i = 0; i < n; i++) bytes[i] = (uint8_t)(below(3) ? 0x55u * below(4) : below(256));
        *what = "kiln_octree_load";
        return kiln_octree_load(set, o, below(20) ? bytes : NULL, below(20) ? n : 0xFFFFFFFFFFull);
    }
    case 7: {
        uint8_t bytes[256];
        uint32_t count = 0;
        *what = "kiln_octree_save";
        return kiln_octree_save(set, o, below(3) ? bytes : NULL, below(3) ? (uint32_t)sizeof bytes : below(8),
                                below(20) ? &count : NULL);
    }
    case 8: {
        KilnOctreeInfo info;
        *what = "kiln_octree_get_info";
        return kiln_octree_get_info(set, o, below(20) ? &info : NULL);
    }
    case 9: {
        KilnRay r = ray(3.0f);
        KilnOctreePick pick;
        *what = "kiln_octree_pick";
        return kiln_octree_pick(set, below(20) ? &r : NULL, usually(10.0f, 10.0f), below(KILN_OCTREE_MAX_DEPTH + 3),
                                below(20) ? &pick : NULL);
    }
    default: {
        KilnRay rays[24];
        KilnOctreePick picks[24];
        uint32_t n = below(25);
        for (uint32_t i = 0; i < n; i++) rays[i] = ray(3.0f);
        *what = "kiln_octree_pick_batch";
        const KilnRay *given = below(20) ? rays : NULL;
        return kiln_octree_pick_batch(set, any_runtime(p), given, huge_unless(given, n),
                                      usually(10.0f, 10.0f), below(KILN_OCTREE_MAX_DEPTH + 3), below(20) ? picks : NULL);
    }
    }
    return KILN_OK;
}

static KilnAffine affine(void) {
    KilnTransform t = transform();
    KilnVec3 scale = below(6) ? (KilnVec3){1.0f, 1.0f, 1.0f} : vec(2.0f);
    KilnAffine a = kiln_affine_from_transform(t, scale);
    if (below(10) == 0) a.rows[below(3)][below(4)] = number(1e3f);
    return a;
}

/* A tracer handle from the pool (live, removed or zero), or now and then a forged one. */
static KilnMeshId any_mesh(const Pools *p, KilnTracerId t) {
    if (below(10) == 0) return (KilnMeshId){below(4), below(3), t};
    return p->meshes[below(MAX_INSTANCES)];
}

static KilnInstanceId any_instance(const Pools *p, KilnTracerId t) {
    if (below(10) == 0) return (KilnInstanceId){below(4), below(3), t};
    return p->instances[below(MAX_INSTANCES)];
}

/* The tracer: meshes and instances added and removed, transforms, bodies followed,
   updates and traces. */
static KilnStatus tracer_call(Pools *p, const char **what) {
    KilnTracerId t = below(12) ? p->tracer : (KilnTracerId){below(3), below(3)};
    switch (below(15)) {
    case 0: {
        KilnVec3 positions[8];
        uint32_t indices[12 * 3];
        uint32_t v = below(9), n = below(13);
        for (uint32_t i = 0; i < v; i++) positions[i] = below(8) ? sane_vec(1.0f) : vec(1.0f);
        for (uint32_t i = 0; i < 3 * n; i++) indices[i] = below(10) ? below(v ? v : 1) : next();
        KilnMeshId mesh;
        if (below(4) == 0) {
            /* A skinned mesh: joints sometimes past the bones, weights sometimes bad. */
            uint16_t joints[4 * 8];
            float weights[4 * 8];
            for (uint32_t i = 0; i < 4 * 8; i++) joints[i] = (uint16_t)below(below(10) ? 3 : 70000);
            for (uint32_t i = 0; i < 4 * 8; i++) weights[i] = below(10) ? 0.25f : number(1.0f);
            KilnSkinnedMeshDef def = kiln_default_skinned_mesh_def();
            def.positions = below(20) ? positions : NULL;
            def.joints = below(20) ? joints : NULL;
            def.weights = weights;
            def.indices = below(20) ? indices : NULL;
            def.vertex_count = huge_unless(def.positions, v);
            def.triangle_count = huge_unless(def.indices, n);
            def.bone_count = below(10) ? 3 : next();
            if (below(30) == 0) def.struct_size = next();
            *what = "kiln_tracer_add_skinned_mesh";
            KilnStatus s = kiln_tracer_add_skinned_mesh(t, below(20) ? &def : NULL, below(20) ? &mesh : NULL);
            if (s == KILN_OK) p->meshes[p->mesh_count++ % MAX_INSTANCES] = mesh;
            return s;
        }
        *what = "kiln_tracer_add_mesh";
        const uint32_t *given = below(20) ? indices : NULL;
        KilnStatus s = kiln_tracer_add_mesh(t, below(20) ? positions : NULL, v, given, huge_unless(given, n),
                                            below(20) ? &mesh : NULL);
        if (s == KILN_OK) p->meshes[p->mesh_count++ % MAX_INSTANCES] = mesh;
        return s;
    }
    case 1: {
        KilnInstanceDef def = kiln_default_instance_def();
        def.mesh = any_mesh(p, t);
        def.transform = affine();
        KilnInstanceId instance;
        KilnStatus s;
        if (below(3) == 0) {
            *what = "kiln_tracer_add_skinned_instance";
            s = kiln_tracer_add_skinned_instance(t, below(20) ? &def : NULL, below(20) ? &instance : NULL);
        } else {
            *what = "kiln_tracer_add_instance";
            s = kiln_tracer_add_instance(t, below(20) ? &def : NULL, below(20) ? &instance : NULL);
        }
        if (s == KILN_OK) p->instances[p->instance_count++ % MAX_INSTANCES] = instance;
        return s;
    }
    case 9: *what = "kiln_tracer_remove_instance"; return kiln_tracer_remove_instance(t, any_instance(p, t));
    case 10: *what = "kiln_tracer_remove_mesh"; return kiln_tracer_remove_mesh(t, any_mesh(p, t));
    case 11: {
        uint32_t triangles;
        *what = "kiln_tracer_add_terrain";
        return kiln_tracer_add_terrain(t, any_terrain(p), next(), next(), below(2) ? &triangles : NULL);
    }
    case 12: {
        uint32_t chunks;
        *what = "kiln_tracer_sync_terrain";
        return kiln_tracer_sync_terrain(t, any_terrain(p), below(2) ? &chunks : NULL);
    }
    case 2: {
        KilnInstanceId instances[4];
        KilnAffine transforms[4];
        uint32_t n = below(5);
        for (uint32_t i = 0; i < n; i++) instances[i] = any_instance(p, t), transforms[i] = affine();
        *what = "kiln_tracer_set_transforms";
        return kiln_tracer_set_transforms(t, below(20) ? instances : NULL, below(20) ? transforms : NULL, n);
    }
    case 3: {
        KilnAffine local = affine();
        *what = "kiln_tracer_follow_body";
        return kiln_tracer_follow_body(t, any_instance(p, t), any_body(p), below(20) ? &local : NULL);
    }
    case 4: {
        if (below(2) == 0) {
            KilnAffine bones[4];
            uint32_t n = below(5);
            for (uint32_t i = 0; i < n; i++) bones[i] = affine();
            *what = "kiln_tracer_set_bones";
            return kiln_tracer_set_bones(t, any_instance(p, t), below(20) ? bones : NULL, below(20) ? n : next());
        }
        *what = "kiln_tracer_unfollow";
        return kiln_tracer_unfollow(t, any_instance(p, t));
    }
    case 5: {
        uint32_t hidden;
        *what = "kiln_tracer_sync_world";
        return kiln_tracer_sync_world(t, any_world(p), below(20) ? &hidden : NULL);
    }
    case 6: *what = "kiln_tracer_update"; return kiln_tracer_update(t);
    case 13: {
        /* The pool's tracer is standalone: refused before the command buffer is
           touched, so a stand-in pointer is safe. */
        int stand_in = 0;
        if (below(3) == 0) {
            *what = "kiln_tracer_begin_frame";
            return kiln_tracer_begin_frame(t, below(4) ? below(3) : next());
        }
        *what = "kiln_tracer_record_update";
        return kiln_tracer_record_update(t, below(2) ? (void *)&stand_in : NULL, below(4) ? below(3) : next());
    }
    case 14: {
        KilnTraceBuffers buffers;
        *what = "kiln_tracer_get_trace_buffers";
        return kiln_tracer_get_trace_buffers(t, below(20) ? &buffers : NULL);
    }
    case 7: {
        uint64_t in_use, budget;
        if (below(4) == 0) {
            *what = "kiln_tracer_set_memory_budget";
            return kiln_tracer_set_memory_budget(t, below(2) ? 0 : (uint64_t)next() << below(20));
        }
        *what = "kiln_tracer_get_memory";
        return kiln_tracer_get_memory(t, below(20) ? &in_use : NULL, &budget);
    }
    default: {
        KilnTraceRay rays[16];
        KilnTraceHit hits[16];
        uint32_t n = below(17);
        for (uint32_t i = 0; i < n; i++) {
            KilnRay r = ray(8.0f);
            rays[i] = (KilnTraceRay){r.origin, r.direction, usually(0.0f, 1.0f), usually(100.0f, 100.0f), ~0u};
        }
        *what = "kiln_tracer_trace";
        const KilnTraceRay *given = below(20) ? rays : NULL;
        return kiln_tracer_trace(t, given, huge_unless(given, n), below(8) ? below(2) : next(),
                                 below(20) ? hits : NULL);
    }
    }
    return KILN_OK;
}

/* The probe volume over the tracer: lighting, albedo, updates, bakes, samples. */
/* Snapshots: sizes, saves into buffers of any capacity, and restores of the last save
 * into either world, whole or truncated, oversized or with a byte changed. A refused
 * restore leaves the world's hash as it was; a damaged snapshot is never taken. */
static KilnStatus snapshot_call(Pools *p, const char **what) {
    static uint8_t bytes[1u << 21];
    static uint64_t saved;
    KilnWorldId w = any_world(p);
    uint64_t size = 0;
    switch (below(3)) {
    case 0: *what = "kiln_world_snapshot_size"; return kiln_world_snapshot_size(w, below(20) ? &size : NULL);
    case 1: {
        int awake = below(3) == 0; /* awake only: restored while the sleeping part is unchanged */
        *what = awake ? "kiln_world_save_awake" : "kiln_world_save";
        uint64_t capacity = below(4) ? sizeof bytes : below(2) ? below(300) : 0;
        KilnStatus s = (awake ? kiln_world_save_awake : kiln_world_save)(w, capacity ? bytes : NULL, capacity,
                                                                          below(20) ? &size : NULL);
        if (s == KILN_OK) saved = size;
        if (s == KILN_OK || s == KILN_ERROR_BUFFER_TOO_SMALL) CHECK(size > 56);
        if (s != KILN_OK && capacity) saved = 0; /* the buffer's contents are unspecified */
        return s;
    }
    default: {
        *what = "kiln_world_restore";
        uint64_t before = 0, after = 0, length = saved;
        unsigned damage = below(5);
        if (damage == 1 && saved) length = below((unsigned)saved);
        if (damage == 2) length = below(2) ? UINT64_MAX : saved + 1 + below(64);
        uint64_t at = saved ? below((unsigned)saved) : 0;
        uint8_t was = bytes[at];
        if (damage == 3 && saved) bytes[at] ^= (uint8_t)(1 + below(255));
        int had = kiln_world_hash(w, &before) == KILN_OK;
        KilnStatus s = kiln_world_restore(w, below(20) ? bytes : NULL, length);
        bytes[at] = was;
        if (damage >= 1 && damage <= 3 && saved) CHECK(s != KILN_OK);
        if (s != KILN_OK && had) {
            CHECK(kiln_world_hash(w, &after) == KILN_OK && after == before);
        }
        return s;
    }
    }
}

static KilnStatus gi_call(Pools *p, const char **what) {
    KilnGiId g = below(12) ? p->gi : (KilnGiId){below(3), below(3)};
    switch (below(11)) {
    case 0: {
        if (kiln_gi_is_valid(p->gi)) {
            if (below(10)) break;
            *what = "kiln_gi_destroy";
            return kiln_gi_destroy(p->gi);
        }
        KilnGiDef def = kiln_default_gi_def();
        def.bounds_min = (KilnVec3){-6.0f, -1.0f, -6.0f};
        def.bounds_max = (KilnVec3){6.0f, 4.0f, 6.0f};
        def.spacing = usually(3.0f, 3.0f);
        def.rays_per_probe = below(5) ? 32 : next();
        if (below(5) == 0) def.bounds_max = vec(10.0f);
        def.relocate_probes = below(2), def.classify_probes = below(2);
        if (below(8) == 0) def.occluder_mask = next(); /* sometimes 0: refused */
        *what = "kiln_gi_create";
        return kiln_gi_create(below(12) ? p->tracer : (KilnTracerId){below(3), below(3)}, below(20) ? &def : NULL,
                              &p->gi);
    }
    case 1: {
        KilnGiLighting light = kiln_default_gi_lighting();
        if (below(4) == 0) light.sun_direction = vec(1.0f), light.sun_irradiance = vec(5.0f);
        *what = "kiln_gi_set_lighting";
        return kiln_gi_set_lighting(g, below(20) ? &light : NULL);
    }
    case 2: {
        KilnVec3 albedo[4];
        uint32_t n = below(5);
        for (uint32_t i = 0; i < n; i++) albedo[i] = below(5) ? (KilnVec3){0.5f, 0.5f, 0.5f} : vec(1.0f);
        KilnInstanceId instances[4];
        for (uint32_t i = 0; i < n; i++) instances[i] = any_instance(p, p->tracer);
        *what = "kiln_gi_set_albedo";
        const KilnVec3 *given = below(20) ? albedo : NULL;
        return kiln_gi_set_albedo(g, below(20) ? instances : NULL, given, huge_unless(given, n));
    }
    case 3: {
        uint32_t updated;
        *what = "kiln_gi_update";
        return kiln_gi_update(g, below(20) ? &updated : NULL);
    }
    case 4:
        if (below(6)) break; /* a bake traces every probe: rare */
        *what = "kiln_gi_bake";
        return kiln_gi_bake(g);
    case 5: {
        KilnGiStats stats;
        *what = "kiln_gi_get_stats";
        return kiln_gi_get_stats(g, below(20) ? &stats : NULL);
    }
    case 7: {
        KilnGiBuffers buffers; /* the pool's tracer is standalone: refused */
        *what = "kiln_gi_get_gpu_buffers";
        return kiln_gi_get_gpu_buffers(g, below(20) ? &buffers : NULL);
    }
    case 8: {
        /* Standalone: refused before the command buffer is touched (a stand-in). */
        int stand_in = 0;
        uint32_t updated;
        bool done;
        KilnGiRefresh refresh;
        KilnGiScroll scroll;
        void *cmd = below(2) ? (void *)&stand_in : NULL;
        uint32_t slot = below(4) ? below(3) : next();
        switch (below(4)) {
        case 0:
            *what = "kiln_gi_record_refresh";
            return kiln_gi_record_refresh(g, below(6) ? sane_vec(6.0f) : vec(6.0f), sane_vec(6.0f), cmd, slot,
                                          below(2) ? &done : NULL, below(2) ? &refresh : NULL);
        case 1:
            *what = "kiln_gi_record_scroll_to";
            return kiln_gi_record_scroll_to(g, below(6) ? sane_vec(8.0f) : vec(8.0f), cmd, slot,
                                            below(2) ? &done : NULL, below(2) ? &scroll : NULL);
        default: break;
        }
        if (below(2)) {
            *what = "kiln_gi_record_bake";
            return kiln_gi_record_bake(g, below(2) ? (void *)&stand_in : NULL, below(4) ? below(3) : next(),
                                       below(2) ? &done : NULL);
        }
        *what = "kiln_gi_record_update";
        return kiln_gi_record_update(g, below(2) ? (void *)&stand_in : NULL, below(4) ? below(3) : next(),
                                     below(2) ? &updated : NULL);
    }
    case 10: {
        if (below(3)) break; /* bakes the planes that enter */
        KilnGiScroll report;
        *what = "kiln_gi_scroll_to";
        return kiln_gi_scroll_to(g, below(6) ? sane_vec(8.0f) : vec(8.0f), below(4) ? &report : NULL);
    }
    case 9: {
        if (below(3)) break; /* re-bakes the probes near the box */
        KilnVec3 lo = below(6) ? sane_vec(6.0f) : vec(6.0f), hi = lo;
        hi.x += below(4) ? 1.0f : -1.0f; /* sometimes inverted */
        hi.y += 1.0f, hi.z += 1.0f;
        KilnGiRefresh report;
        *what = "kiln_gi_refresh";
        return kiln_gi_refresh(g, lo, hi, below(4) ? &report : NULL);
    }
    default: {
        KilnVec3 points[8], normals[8], views[8], out[8];
        uint32_t n = below(9);
        for (uint32_t i = 0; i < n; i++) {
            points[i] = below(8) ? sane_vec(6.0f) : vec(6.0f);
            normals[i] = below(8) ? (KilnVec3){0.0f, 1.0f, 0.0f} : vec(1.0f);
            views[i] = below(8) ? (KilnVec3){0.0f, -1.0f, 0.0f} : vec(1.0f);
        }
        const KilnVec3 *given = below(20) ? points : NULL;
        KilnStatus s;
        if (below(3) == 0) { /* cascades: often the pool's volume twice or a junk handle, refused */
            KilnGiId cascades[8];
            for (int i = 0; i < 8; i++) cascades[i] = below(2) ? g : (KilnGiId){below(3), below(3)};
            uint32_t c = below(8) ? below(9) : next();
            *what = "kiln_gi_sample_cascades";
            s = kiln_gi_sample_cascades(below(20) ? cascades : NULL, c, given, normals, views,
                                        huge_unless(given, n), below(2), below(20) ? out : NULL);
        } else {
            *what = "kiln_gi_sample";
            s = kiln_gi_sample(g, given, normals, views, huge_unless(given, n), below(2), below(20) ? out : NULL);
        }
        for (uint32_t i = 0; s == KILN_OK && i < n; i++) CHECK(isfinite(out[i].x + out[i].y + out[i].z));
        return s;
    }
    }
    return KILN_OK;
}

static void one_call(Pools *p) {
    KilnStatus s = KILN_OK;
    const char *what = "";
    switch (below(46)) {
    case 0: { /* world create into a free or stale slot */
        unsigned w = below(MAX_WORLDS);
        if (kiln_world_is_valid(p->worlds[w])) break;
        KilnWorldDef def = kiln_default_world_def();
        if (below(5) == 0) def.gravity = vec(20.0f);
        if (below(8) == 0) def.hit_event_threshold = number(2.0f);
        if (below(8) == 0) def.water_density = below(2) ? number(2000.0f) : 0.0f;
        if (below(12) == 0) def.water_linear_drag = number(2.0f);
        if (below(12) == 0) def.water_angular_drag = number(2.0f);
        if (below(8) == 0) def.struct_size = below(2) ? 3u : 100000u;
        KilnWorldId made = {0, 0};
        s = kiln_world_create(below(20) ? &def : NULL, &made), what = "kiln_world_create";
        if (s == KILN_OK) {
            p->worlds[w] = made;
            if (below(2) && kiln_terrain_is_valid(p->terrain))
                expect_status(p, kiln_world_set_terrain(made, p->terrain), "kiln_world_set_terrain");
        }
        break;
    }
    case 1: /* world destroy: rare, so worlds live long enough to fill up */
        if (below(8) == 0) s = kiln_world_destroy(any_world(p)), what = "kiln_world_destroy";
        break;
    case 2:
    case 3:
    case 4: { /* body create + shapes */
        KilnBodyDef def = kiln_default_body_def();
        def.motion_type = below(8) == 0 ? below(5) : (below(6) == 0 ? KILN_MOTION_STATIC : KILN_MOTION_DYNAMIC);
        def.transform = transform();
        if (below(6) == 0) def.linear_velocity = vec(50.0f);
        if (below(10) == 0) def.angular_damping = number(2.0f);
        def.bullet = below(10) == 0;
        KilnBodyId made = {0, 0, {0, 0}};
        s = kiln_body_create(any_world(p), below(30) ? &def : NULL, below(30) ? &made : NULL),
        what = "kiln_body_create";
        if (s == KILN_OK) {
            p->bodies[below(MAX_BODIES)] = made; /* may drop a live handle: the world still owns it */
            KilnShapeDef sdef = kiln_default_shape_def();
            if (below(6) == 0) sdef.density = number(2000.0f);
            if (below(6) == 0) sdef.friction = number(1.0f);
            if (below(8) == 0) sdef.pose = transform();
            sdef.is_sensor = below(6) == 0;
            sdef.enable_hit_events = below(3) == 0;
            uint32_t index = 0;
            expect_status(p, kiln_body_add_shape(made, any_shape(p), &sdef, below(4) ? &index : NULL),
                          "kiln_body_add_shape");
        }
        break;
    }
    case 5: s = kiln_body_destroy(any_body(p)), what = "kiln_body_destroy"; break;
    case 6: {
        KilnTransform t = transform();
        s = kiln_body_set_transform(any_body(p), below(20) ? &t : NULL), what = "kiln_body_set_transform";
        break;
    }
    case 7: s = kiln_body_set_velocity(any_body(p), vec(30.0f), vec(10.0f)), what = "kiln_body_set_velocity"; break;
    case 8:
        s = kiln_body_apply_impulse(any_body(p), vec(400.0f), sane_vec(10.0f)), what = "kiln_body_apply_impulse";
        break;
    case 9: s = kiln_body_apply_force(any_body(p), vec(5000.0f)), what = "kiln_body_apply_force"; break;
    case 10: s = kiln_body_wake(any_body(p)), what = "kiln_body_wake"; break;
    case 11: {
        KilnTransform t = transform();
        s = kiln_body_set_target_transform(any_body(p), &t, number(0.1f)), what = "kiln_body_set_target_transform";
        break;
    }
    case 12: {
        KilnTransform t;
        KilnVec3 v, w;
        float mass;
        bool awake;
        KilnBodyId b = any_body(p);
        expect_status(p, kiln_body_get_transform(b, below(10) ? &t : NULL), "kiln_body_get_transform");
        expect_status(p, kiln_body_get_velocity(b, &v, below(10) ? &w : NULL), "kiln_body_get_velocity");
        expect_status(p, kiln_body_get_mass(b, &mass), "kiln_body_get_mass");
        s = kiln_body_is_awake(b, &awake), what = "kiln_body_is_awake";
        if (s == KILN_OK) { /* a live body's state stays finite whatever it was fed */
            kiln_body_get_transform(b, &t);
            CHECK(isfinite(t.position.x) && isfinite(t.position.y) && isfinite(t.position.z));
        }
        break;
    }
    case 13:
    case 14:
    case 15: { /* step: mostly ordinary, sometimes bad dt */
        float dt = below(6) == 0 ? number(2.0f) : 1.0f / 60.0f;
        KilnRuntimeId rt = below(3) ? p->runtime : (KilnRuntimeId){0, 0};
        if (below(15) == 0) rt.generation += 7; /* stale runtime */
        s = kiln_world_step(any_world(p), rt, dt), what = "kiln_world_step";
        break;
    }
    case 16: { /* bulk read-back: random counts and strides, NULL arrays */
        float positions[3 * 16], rotations[4 * 16];
        KilnBodyId ids[16];
        uint32_t n = below(17);
        for (uint32_t i = 0; i < n; i++) ids[i] = any_body(p);
        size_t stride = below(8) == 0 ? below(12) : 3 * sizeof(float);
        s = kiln_world_get_transforms(any_world(p), below(10) ? ids : NULL, n, below(10) ? positions : NULL, stride,
                                      below(3) ? rotations : NULL, 4 * sizeof(float)),
        what = "kiln_world_get_transforms";
        break;
    }
    case 17: {
        KilnContactEvent events[8];
        uint32_t count = 0;
        s = kiln_world_get_contact_events(any_world(p), below(3) ? events : NULL, below(10), &count),
        what = "kiln_world_get_contact_events";
        break;
    }
    case 18: { /* edits from inside a query: refused with INVALID_STATE, nothing broken */
        KilnWorldId w = any_world(p);
        Reentry r = {p, w, 0, 0};
        KilnDebugDraw draw = kiln_default_debug_draw();
        draw.draw_shape = edit_while_drawing;
        draw.user_context = &r;
        s = kiln_world_debug_draw(w, &draw), what = "kiln_world_debug_draw";
        CHECK(r.refused == r.attempts);
        break;
    }
    case 19: { /* terrain edits under the bodies (the terrain is lent to worlds) */
        KilnInt3 lo = {(int32_t)below(24) - 12, (int32_t)below(4) - 3, (int32_t)below(24) - 12};
        KilnInt3 hi = {lo.x + (int32_t)below(4), lo.y + (int32_t)below(3), lo.z + (int32_t)below(4)};
        if (below(10) == 0) hi.x = lo.x - 1;                            /* empty range */
        if (below(20) == 0) lo.x = -2000000000, hi.x = 2000000000;      /* huge range */
        s = kiln_terrain_fill(p->terrain, lo, hi, (uint8_t)below(8), NULL), what = "kiln_terrain_fill";
        if (below(2)) expect_status(p, kiln_terrain_regenerate(p->terrain, p->runtime, NULL), "regenerate");
        if (below(16) == 0) expect_status(p, kiln_terrain_rebase(p->terrain), "kiln_terrain_rebase");
        break;
    }
    case 20: {
        KilnRay ray = {vec(20.0f), vec(1.0f)};
        KilnTerrainRayHit hit;
        s = kiln_terrain_ray_cast(p->terrain, below(20) ? &ray : NULL, number(100.0f), &hit),
        what = "kiln_terrain_ray_cast";
        break;
    }
    case 21: { /* shapes: replace one, sometimes destroy one still used by bodies */
        unsigned k = below(MAX_SHAPES);
        if (below(3) == 0) {
            s = kiln_shape_destroy(p->shapes[k]), what = "kiln_shape_destroy";
            break;
        }
        if (kiln_shape_is_valid(p->shapes[k])) break;
        KilnShapeId made = {0, 0};
        switch (below(3)) {
        case 0: s = kiln_shape_create_sphere(vec(0.5f), number(1.0f), &made); break;
        case 1: s = kiln_shape_create_box(vec(1.0f), &made); break;
        default: s = kiln_shape_create_capsule(vec(0.5f), vec(0.5f), number(0.5f), &made); break;
        }
        what = "kiln_shape_create_*";
        if (s == KILN_OK) p->shapes[k] = made;
        break;
    }
    case 22: s = kiln_world_set_sleep_enabled(any_world(p), below(4) != 0), what = "kiln_world_set_sleep_enabled"; break;
    case 23: { /* lend the terrain to another world, or take it back */
        KilnTerrainId t = below(3) ? p->terrain : (KilnTerrainId){0, 0};
        s = kiln_world_set_terrain(any_world(p), t), what = "kiln_world_set_terrain";
        break;
    }
    case 24: {
        KilnWorldCounters c;
        s = kiln_world_get_counters(any_world(p), below(20) ? &c : NULL), what = "kiln_world_get_counters";
        if (s == KILN_OK && below(2)) { /* and the determinism hash */
            uint64_t hash;
            s = kiln_world_hash(any_world(p), below(20) ? &hash : NULL), what = "kiln_world_hash";
        }
        break;
    }
    case 26: { /* character create into a free or stale slot */
        unsigned k = below(MAX_CHARACTERS);
        if (kiln_character_is_valid(p->characters[k])) break;
        KilnCharacterDef def = kiln_default_character_def();
        if (below(6) == 0) def.radius = number(0.5f);
        if (below(6) == 0) def.height = number(2.0f);
        if (below(8) == 0) def.step_height = number(0.5f);
        if (below(8) == 0) def.max_slope_cos = number(1.0f);
        if (below(8) == 0) def.up = vec(1.0f);
        if (below(10) == 0) def.max_iterations = below(2) ? 0u : 1000000u;
        if (below(12) == 0) def.struct_size = below(400);
        KilnCharacterId made = {0, 0};
        KilnVec3 at = below(5) ? (KilnVec3){number(10.0f), 3.0f, number(10.0f)} : vec(20.0f);
        s = kiln_character_create(below(20) ? &def : NULL, at, below(20) ? &made : NULL),
        what = "kiln_character_create";
        if (s == KILN_OK) p->characters[k] = made;
        break;
    }
    case 27:
    case 28: { /* character move against the terrain and a few shapes */
        KilnShapeInstance statics[3];
        uint32_t n = below(4);
        for (uint32_t i = 0; i < n; i++) statics[i] = (KilnShapeInstance){any_shape(p), transform()};
        const KilnShapeInstance *list = statics;
        if (below(10) == 0) list = NULL; /* with n > 0: refused */
        KilnVec3 move = below(4) ? sane_vec(0.3f) : vec(5.0f);
        KilnMoveResult result;
        if (below(2)) { /* among a world's bodies, riding and pushing them */
            KilnCharacterBodies bodies = kiln_default_character_bodies();
            if (below(6) == 0) bodies.strength = number(1000.0f);
            if (below(6) == 0) bodies.filter.flags = below(64);
            if (below(6) == 0) bodies.filter.ignore_body = any_body(p);
            if (below(12) == 0) bodies.struct_size = 3;
            float dt = below(6) == 0 ? number(1.0f) : 1.0f / 60.0f;
            s = kiln_character_move_in_world(any_character(p), any_world(p), any_runtime(p), move, dt,
                                             below(5) ? &bodies : NULL, below(10) ? &result : NULL),
            what = "kiln_character_move_in_world";
            break;
        }
        s = kiln_character_move(any_character(p), move, below(6) ? any_terrain(p) : (KilnTerrainId){0, 0},
                                any_runtime(p), list, n, below(10) ? &result : NULL),
        what = "kiln_character_move";
        break;
    }
    case 29: { /* character reads, teleports and destroys */
        KilnCharacterId c = any_character(p);
        KilnVec3 v;
        bool grounded;
        KilnMoveResult last;
        expect_status(p, kiln_character_get_contact_normal(c, below(10) ? &v : NULL),
                      "kiln_character_get_contact_normal");
        expect_status(p, kiln_character_is_grounded(c, &grounded), "kiln_character_is_grounded");
        expect_status(p, kiln_character_get_last_move(c, &last), "kiln_character_get_last_move");
        switch (below(4)) {
        case 0: s = kiln_character_set_position(c, vec(10.0f)), what = "kiln_character_set_position"; break;
        case 1: s = kiln_character_destroy(c), what = "kiln_character_destroy"; break;
        default: s = kiln_character_get_position(c, below(10) ? &v : NULL), what = "kiln_character_get_position"; break;
        }
        break;
    }
    case 30: { /* frame create over a world: no GPU parts, or forged ones */
        unsigned k = below(MAX_FRAMES);
        if (kiln_frame_is_valid(p->frames[k])) break;
        KilnFrameDef def = kiln_default_frame_def();
        def.world = any_world(p);
        def.overlap = below(2);
        if (below(10) == 0) def.tracer = (KilnTracerId){below(3) + 1, below(3) + 1};
        if (below(10) == 0) def.gi = (KilnGiId){below(3) + 1, below(3) + 1};
        if (below(12) == 0) def.struct_size = below(64);
        KilnFrameId made = {0, 0};
        s = kiln_frame_create(below(20) ? &def : NULL, below(20) ? &made : NULL), what = "kiln_frame_create";
        if (s == KILN_OK) p->frames[k] = made;
        break;
    }
    case 31:
    case 32: { /* a frame run steps its world (or refuses: world gone, bad dt, stale runtime) */
        float dt = below(6) == 0 ? number(2.0f) : 1.0f / 60.0f;
        if (below(8)) {
            s = kiln_frame_run(any_frame(p), any_runtime(p), dt), what = "kiln_frame_run";
        } else {
            /* No pool tracer is embedded: refused before the command buffer is
               touched, so a stand-in pointer is safe. */
            int stand_in = 0;
            s = kiln_frame_run_into(any_frame(p), any_runtime(p), dt, below(4) ? (void *)&stand_in : NULL,
                                    below(4) ? below(3) : next()),
            what = "kiln_frame_run_into";
        }
        break;
    }
    case 33: { /* frame queries and destroy */
        KilnFrameId f = any_frame(p);
        KilnFrameTiming timing;
        KilnProfile profile;
        KilnPassProfile passes[12];
        KilnGpuPassTiming gpu[4];
        uint32_t count = 0;
        expect_status(p, kiln_frame_get_timing(f, below(10) ? &timing : NULL), "kiln_frame_get_timing");
        expect_status(p,
                      kiln_frame_get_passes(f, below(5) ? &profile : NULL, below(5) ? passes : NULL, below(13),
                                            below(10) ? &count : NULL),
                      "kiln_frame_get_passes");
        CHECK(count <= 12);
        expect_status(p, kiln_frame_get_gpu_passes(f, below(3) ? gpu : NULL, below(5), &count),
                      "kiln_frame_get_gpu_passes");
        if (below(4) == 0) s = kiln_frame_destroy(f), what = "kiln_frame_destroy";
        break;
    }
    case 34: { /* shape queries between any two shapes */
        KilnShapeId a = any_shape(p), b = any_shape(p);
        KilnTransform ta = transform(), tb = transform();
        KilnDistanceResult distance;
        KilnManifold manifolds[4];
        uint32_t count = 0;
        KilnSweep sa = {transform(), transform(), below(5) ? sane_vec(0.2f) : vec(0.2f)}, sb = {tb, tb, {0, 0, 0}};
        KilnToiResult toi;
        KilnAabb aabb;
        KilnMassProperties mass;
        switch (below(5)) {
        case 0:
            s = kiln_shape_distance(a, &ta, b, below(20) ? &tb : NULL, &distance), what = "kiln_shape_distance";
            break;
        case 1:
            s = kiln_shape_contact(a, &ta, b, &tb, usually(0.05f, 0.1f), below(10) ? manifolds : NULL, below(5),
                                   &count),
            what = "kiln_shape_contact";
            CHECK(s != KILN_OK || count <= 4);
            break;
        case 2:
            s = kiln_shape_time_of_impact(a, &sa, b, &sb, usually(1.0f, 1.0f), usually(0.01f, 0.01f),
                                          below(20) ? &toi : NULL),
            what = "kiln_shape_time_of_impact";
            break;
        case 3: s = kiln_shape_get_aabb(a, below(20) ? &ta : NULL, &aabb), what = "kiln_shape_get_aabb"; break;
        default: s = kiln_shape_get_mass(a, number(1000.0f), &mass), what = "kiln_shape_get_mass"; break;
        }
        break;
    }
    case 35: { /* hulls, compounds and triangles from odd input, into the shape pool */
        unsigned k = below(MAX_SHAPES);
        if (kiln_shape_is_valid(p->shapes[k]) && below(2)) break;
        KilnVec3 points[12];
        uint32_t n = below(13);
        for (uint32_t i = 0; i < n; i++) points[i] = below(8) ? sane_vec(1.0f) : vec(1.0f);
        if (n > 2 && below(4) == 0) points[2] = points[1] = points[0]; /* repeated points */
        KilnCompoundPart parts[3];
        for (uint32_t i = 0; i < 3; i++) parts[i] = (KilnCompoundPart){any_shape(p), transform()};
        KilnShapeId made = {0, 0};
        switch (below(3)) {
        case 0: s = kiln_shape_create_hull(below(15) ? points : NULL, below(30) ? n : 0xFFFFFFFFu, &made); break;
        case 1: s = kiln_shape_create_compound(below(15) ? parts : NULL, below(4), &made); break;
        default: s = kiln_shape_create_triangle(points[0], points[1], points[2], below(20) ? &made : NULL); break;
        }
        what = "kiln_shape_create_hull/compound/triangle";
        if (s == KILN_OK) {
            if (kiln_shape_is_valid(p->shapes[k]))
                expect_status(p, kiln_shape_destroy(p->shapes[k]), "kiln_shape_destroy");
            p->shapes[k] = made;
        }
        break;
    }
    case 36: { /* terrain queries: boxes, chunks, triangles, ray batches, voxels, the mesh cache */
        KilnTerrainId t = any_terrain(p);
        KilnAabb b = box(16.0f);
        KilnTerrainOverlap overlap;
        KilnChunkOverlap chunks[8];
        KilnTerrainTriangle triangles[32];
        KilnRay rays[8];
        KilnTerrainRayHit hits[8];
        uint32_t count = 0;
        uint8_t material;
        switch (below(7)) {
        case 0: s = kiln_terrain_overlap(t, below(20) ? &b : NULL, &overlap), what = "kiln_terrain_overlap"; break;
        case 1:
            s = kiln_terrain_overlap_chunks(t, &b, below(10) ? chunks : NULL, below(9), &count),
            what = "kiln_terrain_overlap_chunks";
            break;
        case 2:
            s = kiln_terrain_query_triangles(t, any_runtime(p), &b, below(10) ? triangles : NULL, below(33), &count),
            what = "kiln_terrain_query_triangles";
            break;
        case 3: {
            uint32_t n = below(9);
            for (uint32_t i = 0; i < n; i++)
                rays[i] = below(12) ? (KilnRay){sane_vec(12.0f), {usually(0.3f, 1.0f), -1.0f, usually(-0.2f, 1.0f)}}
                                    : (KilnRay){vec(20.0f), vec(1.0f)};
            s = kiln_terrain_ray_cast_batch(t, any_runtime(p), below(10) ? rays : NULL, n, usually(60.0f, 60.0f),
                                            below(10) ? hits : NULL),
            what = "kiln_terrain_ray_cast_batch";
            break;
        }
        case 4: {
            KilnInt3 v = {(int32_t)next(), (int32_t)below(8) - 4, (int32_t)below(30) - 15};
            if (below(2)) v.x = (int32_t)below(30) - 15;
            s = kiln_terrain_get_voxel(t, v, below(20) ? &material : NULL), what = "kiln_terrain_get_voxel";
            break;
        }
        case 5: {
            uint64_t bytes = below(3) == 0 ? 0u : below(3) == 0 ? UINT64_MAX : (uint64_t)below(1u << 20);
            if (below(3) == 0)
                s = kiln_terrain_set_ray_regions(t, below(4) != 0), what = "kiln_terrain_set_ray_regions";
            else
                s = kiln_terrain_set_mesh_cache_budget(t, bytes), what = "kiln_terrain_set_mesh_cache_budget";
            break;
        }
        default: {
            KilnMeshCacheStats cache;
            KilnTerrainStats stats;
            expect_status(p, kiln_terrain_get_stats(t, below(10) ? &stats : NULL), "kiln_terrain_get_stats");
            if (below(2))
                s = kiln_terrain_get_mesh_cache_stats(t, &cache), what = "kiln_terrain_get_mesh_cache_stats";
            else
                s = kiln_terrain_get_ray_region_stats(t, below(10) ? &cache : NULL),
                what = "kiln_terrain_get_ray_region_stats";
            if (s == KILN_OK) CHECK(cache.bytes <= cache.budget);
            break;
        }
        }
        break;
    }
    case 37: { /* the rest of the body and world surface */
        KilnBodyId b = any_body(p);
        uint32_t motion;
        void *data = NULL;
        KilnWorldProfile profile;
        switch (below(4)) {
        case 0: s = kiln_body_apply_torque(b, vec(500.0f)), what = "kiln_body_apply_torque"; break;
        case 1: s = kiln_body_get_motion_type(b, below(20) ? &motion : NULL), what = "kiln_body_get_motion_type"; break;
        case 2:
            expect_status(p, kiln_body_set_user_data(b, &p->calls), "kiln_body_set_user_data");
            s = kiln_body_get_user_data(b, &data), what = "kiln_body_get_user_data";
            CHECK(s != KILN_OK || data == &p->calls);
            break;
        default:
            s = kiln_world_get_profile(any_world(p), below(20) ? &profile : NULL), what = "kiln_world_get_profile";
            break;
        }
        break;
    }
    case 38: { /* joints of every kind between pool bodies, numbers sane or not */
        KilnJointId made = {0, 0, {0, 0}};
        KilnJointId *out = below(30) ? &made : NULL;
        KilnJointBase base = joint_base(p);
        KilnWorldId w = below(4) ? base.body_a.world : any_world(p);
        switch (below(6)) {
        case 5: {
            KilnSixDofJointDef d = kiln_default_six_dof_joint_def();
            d.base = base;
            for (int k = 0; k < 3; k++) {
                d.linear_mode[k] = below(8) ? below(3) : next();
                d.angular_mode[k] = below(8) ? below(3) : next();
                d.linear_lower[k] = usually(-0.5f, 3.0f), d.linear_upper[k] = usually(0.5f, 3.0f);
                d.angular_lower[k] = usually(-0.5f, 3.0f), d.angular_upper[k] = usually(0.5f, 3.0f);
            }
            for (int k = 0; k < 6; k++) d.motor_speed[k] = number(5.0f), d.max_motor_force[k] = below(3) ? 0.0f : number(100.0f);
            s = kiln_joint_create_six_dof(w, &d, out), what = "kiln_joint_create_six_dof";
            break;
        }
        case 0: {
            KilnSphericalJointDef d = kiln_default_spherical_joint_def();
            d.base = base;
            d.enable_cone_limit = below(2), d.cone_angle = usually(0.7f, 3.0f);
            d.enable_twist_limit = below(2), d.lower_twist = usually(-0.5f, 3.0f), d.upper_twist = usually(0.5f, 3.0f);
            d.enable_motor = below(2), d.max_motor_torque = usually(5.0f, 50.0f), d.motor_velocity = vec(2.0f);
            d.enable_spring = below(3) == 0, d.hertz = usually(2.0f, 10.0f), d.damping_ratio = usually(0.5f, 1.0f);
            s = kiln_joint_create_spherical(w, below(30) ? &d : NULL, out), what = "kiln_joint_create_spherical";
            break;
        }
        case 1: {
            KilnRevoluteJointDef d = kiln_default_revolute_joint_def();
            d.base = base;
            d.enable_limit = below(2), d.lower = usually(-1.0f, 3.0f), d.upper = usually(1.0f, 3.0f);
            d.enable_motor = below(2), d.motor_speed = usually(2.0f, 20.0f), d.max_motor_torque = usually(50.0f, 100.0f);
            d.enable_spring = below(3) == 0, d.hertz = usually(2.0f, 10.0f), d.target_angle = usually(0.0f, 3.0f);
            if (below(10) == 0) d.struct_size = 3;
            s = kiln_joint_create_revolute(w, &d, out), what = "kiln_joint_create_revolute";
            break;
        }
        case 2: {
            KilnPrismaticJointDef d = kiln_default_prismatic_joint_def();
            d.base = base;
            d.enable_limit = below(2), d.lower = usually(-1.0f, 3.0f), d.upper = usually(1.0f, 3.0f);
            d.enable_motor = below(2), d.motor_speed = usually(1.0f, 5.0f), d.max_motor_force = usually(500.0f, 1000.0f);
            d.enable_spring = below(3) == 0, d.hertz = usually(2.0f, 10.0f), d.target_translation = number(2.0f);
            s = kiln_joint_create_prismatic(w, &d, out), what = "kiln_joint_create_prismatic";
            break;
        }
        case 3: {
            KilnFixedJointDef d = kiln_default_fixed_joint_def();
            d.base = base;
            if (below(3) == 0) d.linear_hertz = number(10.0f), d.angular_hertz = number(10.0f);
            s = kiln_joint_create_fixed(w, &d, out), what = "kiln_joint_create_fixed";
            break;
        }
        default: {
            KilnDistanceJointDef d = kiln_default_distance_joint_def();
            d.base = base;
            d.length = usually(1.0f, 3.0f), d.enable_spring = below(2), d.hertz = usually(1.0f, 10.0f);
            d.enable_limit = below(2), d.min_length = usually(0.5f, 2.0f), d.max_length = usually(2.0f, 5.0f);
            s = kiln_joint_create_distance(w, &d, out), what = "kiln_joint_create_distance";
            break;
        }
        }
        CHECK(s == KILN_OK ? kiln_joint_is_valid(made) : made.index1 == 0);
        if (s == KILN_OK) p->joints[below(MAX_JOINTS)] = made; /* may drop a live handle: the world owns it */
        break;
    }
    case 39: { /* joint settings, values, reactions, events and destroy */
        KilnJointId j = any_joint(p);
        bool on;
        float a, b, c;
        uint32_t type, count;
        KilnVec3 force, torque;
        KilnBodyId ba, bb;
        KilnJointEvent events[4];
        switch (below(11)) {
        case 0: s = kiln_joint_destroy(j), what = "kiln_joint_destroy"; break;
        case 1: s = kiln_joint_set_limits(j, below(2), number(3.0f), number(3.0f)), what = "kiln_joint_set_limits"; break;
        case 2: s = kiln_joint_set_motor(j, below(2), number(10.0f), number(100.0f)), what = "kiln_joint_set_motor"; break;
        case 3:
            s = kiln_joint_set_spring(j, below(2), number(10.0f), number(1.0f), below(2) ? 0.0f : number(2.0f)),
            what = "kiln_joint_set_spring";
            break;
        case 4: s = kiln_joint_set_cone_limit(j, below(2), number(3.0f)), what = "kiln_joint_set_cone_limit"; break;
        case 5:
            s = kiln_joint_get_limits(j, &on, below(20) ? &a : NULL, &b), what = "kiln_joint_get_limits";
            CHECK(s != KILN_OK || a <= b);
            break;
        case 6: s = kiln_joint_get_motor(j, &on, &a, below(20) ? &b : NULL), what = "kiln_joint_get_motor"; break;
        case 7: s = kiln_joint_get_spring(j, &on, &a, &b, below(20) ? &c : NULL), what = "kiln_joint_get_spring"; break;
        case 8:
            s = kiln_joint_get_reaction(j, &force, below(20) ? &torque : NULL), what = "kiln_joint_get_reaction";
            CHECK(s != KILN_OK || (isfinite(force.x) && isfinite(force.y) && isfinite(force.z)));
            break;
        case 9: {
            KilnSixDofJointDef six;
            if (kiln_joint_get_six_dof(j, &six) == KILN_OK && below(2)) {
                six.angular_mode[below(3)] = below(4);
                six.linear_upper[below(3)] = number(3.0f);
                expect_status(p, kiln_joint_set_six_dof(j, &six), "kiln_joint_set_six_dof");
            }
            expect_status(p, kiln_joint_get_type(j, below(20) ? &type : NULL), "kiln_joint_get_type");
            expect_status(p, kiln_joint_get_bodies(j, &ba, below(20) ? &bb : NULL), "kiln_joint_get_bodies");
            s = kiln_joint_get_value(j, &a), what = "kiln_joint_get_value";
            CHECK(s != KILN_OK || !isnan(a));
            break;
        }
        default:
            s = kiln_world_get_joint_events(any_world(p), below(10) ? events : NULL, below(5), &count),
            what = "kiln_world_get_joint_events";
            if (below(2)) {
                KilnDebugDraw draw = kiln_default_debug_draw();
                draw.draw_joint = check_joint_draw;
                expect_status(p, kiln_world_debug_draw(any_world(p), &draw), "kiln_world_debug_draw (joints)");
            }
            break;
        }
        break;
    }
    case 40:
    case 41: { /* world queries: rays, lists, batches, overlaps, shape casts, any filter; events */
        KilnWorldId w = any_world(p);
        KilnQueryFilter filter = kiln_default_query_filter();
        filter.category_bits = below(3) ? 1u : next();
        filter.mask_bits = below(3) ? 0xFFFFFFFFu : next();
        filter.flags = below(8) ? below(64) : next();
        if (below(4) == 0) filter.ignore_body = any_body(p);
        if (below(12) == 0) filter.struct_size = below(2) ? 3u : 100000u;
        const KilnQueryFilter *f = below(6) ? &filter : NULL;
        KilnRay ray = below(8) ? (KilnRay){sane_vec(12.0f), {usually(0.3f, 1.0f), -1.0f, usually(-0.2f, 1.0f)}}
                               : (KilnRay){vec(20.0f), vec(1.0f)};
        float max_distance = usually(60.0f, 60.0f);
        KilnWorldRayHit hits[8];
        KilnQueryTarget targets[16];
        KilnShapeCastHit cast;
        KilnAabb b = box(8.0f);
        KilnTransform at = transform();
        uint32_t count = 0xFFFFFFFFu, capacity = below(17);
        switch (below(8)) {
        case 7: {
            /* The callback cast: answers of every kind, and calls back into Kiln. */
            uint32_t answers[2] = {next(), 0};
            s = kiln_world_cast_ray_callback(w, below(20) ? &ray : NULL, max_distance, f,
                                             below(20) ? fuzz_ray_hit : NULL, answers),
            what = "kiln_world_cast_ray_callback";
            CHECK(answers[1] < 100000u);
            break;
        }
        case 6: {
            KilnSensorEvent sensor_events[8];
            KilnBodyMoveEvent moves[8];
            KilnContactHitEvent hit_events[8];
            expect_status(p, kiln_world_get_sensor_events(w, below(10) ? sensor_events : NULL, below(9), &count),
                          "kiln_world_get_sensor_events");
            uint32_t hit_capacity = below(9);
            int with_array = below(10) != 0;
            KilnStatus hs = kiln_world_get_contact_hit_events(w, with_array ? hit_events : NULL, hit_capacity, &count);
            expect_status(p, hs, "kiln_world_get_contact_hit_events");
            for (uint32_t i = 0; hs == KILN_OK && with_array && i < count && i < hit_capacity; i++)
                CHECK(hit_events[i].approach_speed >= 0.0f);
            expect_status(p, kiln_world_get_move_events(w, below(10) ? moves : NULL, below(9), below(20) ? &count : NULL),
                          "kiln_world_get_move_events");
            KilnWaterEvent water_events[8];
            expect_status(p, kiln_world_get_water_events(w, below(10) ? water_events : NULL, below(9),
                                                         below(20) ? &count : NULL),
                          "kiln_world_get_water_events");
            KilnSubmerged sub;
            s = kiln_body_get_submerged(any_body(p), below(20) ? &sub : NULL), what = "kiln_body_get_submerged";
            CHECK(s != KILN_OK || (sub.volume >= 0.0f && sub.volume <= sub.body_volume * 1.05f + 1e-3f));
            break;
        }
        case 0:
            s = kiln_world_cast_ray(w, below(20) ? &ray : NULL, max_distance, f, below(20) ? hits : NULL),
            what = "kiln_world_cast_ray";
            CHECK(s != KILN_OK || !hits[0].hit || (hits[0].distance >= 0.0f && hits[0].distance <= max_distance));
            break;
        case 1:
            s = kiln_world_cast_ray_all(w, &ray, max_distance, f, below(10) ? hits : NULL, below(9),
                                        below(20) ? &count : NULL),
            what = "kiln_world_cast_ray_all";
            break;
        case 2: {
            KilnRay rays[8];
            uint32_t n = below(9);
            for (uint32_t i = 0; i < n; i++) rays[i] = below(10) ? (KilnRay){sane_vec(12.0f), {0.1f, -1.0f, 0.2f}} : ray;
            s = kiln_world_cast_ray_batch(w, any_runtime(p), below(10) ? rays : NULL, n, max_distance, f,
                                          below(10) ? hits : NULL),
            what = "kiln_world_cast_ray_batch";
            break;
        }
        case 3:
            s = kiln_world_overlap_aabb(w, any_runtime(p), below(20) ? &b : NULL, f, below(10) ? targets : NULL,
                                        capacity, below(20) ? &count : NULL),
            what = "kiln_world_overlap_aabb";
            CHECK(s != KILN_OK || count < 100000u);
            break;
        case 4:
            s = kiln_world_overlap_shape(w, any_runtime(p), any_shape(p), below(20) ? &at : NULL, f,
                                         below(10) ? targets : NULL, capacity, &count),
            what = "kiln_world_overlap_shape";
            break;
        default:
            s = kiln_world_cast_shape(w, any_runtime(p), any_shape(p), &at, below(5) ? sane_vec(10.0f) : vec(10.0f), f,
                                      below(20) ? &cast : NULL),
            what = "kiln_world_cast_shape";
            CHECK(s != KILN_OK || !cast.hit || (cast.fraction >= 0.0f && cast.fraction <= 1.0f));
            break;
        }
        break;
    }
    case 42: s = octree_call(p, &what); break;
    case 43: s = tracer_call(p, &what); break;
    case 44: s = gi_call(p, &what); break;
    case 45: s = snapshot_call(p, &what); break;
    default: {
        uint32_t count;
        s = kiln_body_get_shape_count(any_body(p), &count), what = "kiln_body_get_shape_count";
        break;
    }
    }
    if (what[0]) expect_status(p, s, what);
    for (unsigned w = 0; w < MAX_WORLDS; w++) {
        if (!kiln_world_is_valid(p->worlds[w])) continue;
        KilnStatus v = kiln_world_validate(p->worlds[w]);
        if (v != KILN_OK) fprintf(stderr, "after %s: %s\n", what, kiln_last_error_message());
        CHECK_STATUS(v, KILN_OK);
    }
    for (unsigned k = 0; k < MAX_CHARACTERS; k++) { /* a live character is somewhere */
        KilnVec3 at;
        if (kiln_character_get_position(p->characters[k], &at) != KILN_OK) continue;
        CHECK(isfinite(at.x) && isfinite(at.y) && isfinite(at.z));
    }
}

/* The GPU objects the calls work on: a tracer with a box mesh and one instance, a
 * probe volume over it. Without a device the tracer stays zero (and its calls get
 * stale-handle statuses); KILN_REQUIRE_GPU=1 makes that a failure. */
static void open_gpu(Pools *p) {
    KilnTracerDef def = kiln_default_tracer_def();
    def.validation = true;
    KilnStatus s = kiln_tracer_create(&def, &p->tracer);
    if (s != KILN_OK) {
        const char *required = getenv("KILN_REQUIRE_GPU");
        CHECK(!(required && strcmp(required, "1") == 0));
        printf("fuzz_api: no tracer (%s), its calls meet stale handles only\n", kiln_last_error_message());
        return;
    }
    KilnVec3 corners[8];
    for (unsigned i = 0; i < 8; i++)
        corners[i] = (KilnVec3){i & 1 ? 1.0f : -1.0f, i & 2 ? 1.0f : -1.0f, i & 4 ? 1.0f : -1.0f};
    static const uint32_t faces[36] = {0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
                                       2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5};
    CHECK_STATUS(kiln_tracer_add_mesh(p->tracer, corners, 8, faces, 12, &p->meshes[0]), KILN_OK);
    KilnInstanceDef inst = kiln_default_instance_def();
    inst.mesh = p->meshes[0];
    CHECK_STATUS(kiln_tracer_add_instance(p->tracer, &inst, &p->instances[0]), KILN_OK);
    p->mesh_count = p->instance_count = 1;
    KilnGiDef gdef = kiln_default_gi_def();
    gdef.bounds_min = (KilnVec3){-6.0f, -1.0f, -6.0f};
    gdef.bounds_max = (KilnVec3){6.0f, 4.0f, 6.0f};
    gdef.spacing = 3.0f;
    CHECK_STATUS(kiln_gi_create(p->tracer, &gdef, &p->gi), KILN_OK);
}

/* The runtime, a terrain with a pond, shapes and an octree set; the GPU objects when
 * asked. */
static void open_pools(Pools *p, int gpu) {
    memset(p, 0, sizeof *p);
    KilnRuntimeDef rdef = kiln_default_runtime_def();
    rdef.thread_count = 2;
    CHECK_STATUS(kiln_runtime_create(&rdef, &p->runtime), KILN_OK);
    KilnTerrainDef tdef = kiln_default_terrain_def();
    CHECK_STATUS(kiln_terrain_create(&tdef, &p->terrain), KILN_OK);
    CHECK_STATUS(kiln_terrain_fill(p->terrain, (KilnInt3){-14, -4, -14}, (KilnInt3){14, 0, 14}, KILN_MATERIAL_ROCK, NULL),
                 KILN_OK);
    /* A pond over half the floor, so bodies float and queries meet water. */
    CHECK_STATUS(kiln_terrain_fill(p->terrain, (KilnInt3){-14, 1, -14}, (KilnInt3){0, 2, 14}, KILN_MATERIAL_WATER, NULL),
                 KILN_OK);
    CHECK_STATUS(kiln_terrain_regenerate(p->terrain, p->runtime, NULL), KILN_OK);
    for (unsigned k = 0; k < MAX_SHAPES; k++)
        CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.3f + 0.1f * (float)k, 0.4f, 0.5f}, &p->shapes[k]), KILN_OK);
    CHECK_STATUS(kiln_octree_set_create(&p->octree_set), KILN_OK);
    if (gpu) open_gpu(p);
}

/* Everything goes: destroying worlds frees their bodies; the terrain comes back. */
static void close_pools(Pools *p) {
    for (unsigned k = 0; k < MAX_FRAMES; k++)
        if (kiln_frame_is_valid(p->frames[k])) CHECK_STATUS(kiln_frame_destroy(p->frames[k]), KILN_OK);
    for (unsigned k = 0; k < MAX_CHARACTERS; k++)
        if (kiln_character_is_valid(p->characters[k])) CHECK_STATUS(kiln_character_destroy(p->characters[k]), KILN_OK);
    if (kiln_gi_is_valid(p->gi)) CHECK_STATUS(kiln_gi_destroy(p->gi), KILN_OK);
    if (kiln_tracer_is_valid(p->tracer)) { /* the validation layer saw nothing wrong */
        char text[4096] = "";
        uint32_t messages = 0;
        CHECK_STATUS(kiln_tracer_get_validation_messages(p->tracer, text, sizeof text, &messages), KILN_OK);
        if (messages) fprintf(stderr, "validation: %s\n", text);
        CHECK(messages == 0);
        CHECK_STATUS(kiln_tracer_destroy(p->tracer), KILN_OK);
    }
    for (unsigned w = 0; w < MAX_WORLDS; w++)
        if (kiln_world_is_valid(p->worlds[w])) CHECK_STATUS(kiln_world_destroy(p->worlds[w]), KILN_OK);
    for (unsigned i = 0; i < MAX_BODIES; i++) {
        if (kiln_body_is_valid(p->bodies[i]))
            fprintf(stderr, "body {%u, %u} of world {%u, %u} outlived its world\n", p->bodies[i].index1,
                    p->bodies[i].generation, p->bodies[i].world.index1, p->bodies[i].world.generation);
        CHECK(!kiln_body_is_valid(p->bodies[i]));
    }
    for (unsigned k = 0; k < MAX_SHAPES; k++)
        if (kiln_shape_is_valid(p->shapes[k])) CHECK_STATUS(kiln_shape_destroy(p->shapes[k]), KILN_OK);
    if (kiln_octree_set_is_valid(p->octree_set)) CHECK_STATUS(kiln_octree_set_destroy(p->octree_set), KILN_OK);
    CHECK_STATUS(kiln_terrain_destroy(p->terrain), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(p->runtime), KILN_OK);
}

#ifdef KILN_FUZZ_API_ENTRY
/* libFuzzer's entry (through fuzz/fuzz_targets/api_calls.rs): calls drawn from `data`
 * until it runs out, at most 2,000; any failed check aborts, so the fuzzer keeps the
 * input. */
int kiln_fuzz_api_run(const uint8_t *data, size_t size);
int kiln_fuzz_api_run(const uint8_t *data, size_t size) {
    fuzz_bytes = data, fuzz_left = size;
    Pools p;
    open_pools(&p, 0);
    for (unsigned i = 0; i < 2000 && fuzz_left > 0 && checks_failed == 0; i++) one_call(&p);
    close_pools(&p);
    fuzz_bytes = NULL;
    (void)check_summary;
    if (checks_failed) abort();
    return 0;
}
#else
static void run(uint64_t seed, unsigned calls) {
    rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
    Pools p;
    open_pools(&p, 1);
    for (unsigned i = 0; i < calls; i++) one_call(&p);
    close_pools(&p);
    printf("seed %llu: %u calls, %u ok, %u refused with a status and a message\n", (unsigned long long)seed, p.calls,
           p.ok, p.refused);
    fflush(stdout); /* in order with the failures on stderr */
    CHECK(p.ok > calls / 4 && p.refused > calls / 20);
}

int main(int argc, char **argv) {
    if (kiln_check_linked_abi() != KILN_OK) return 1;
    uint64_t first = argc > 1 ? strtoull(argv[1], NULL, 10) : 1u;
    unsigned calls = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 4000u;
    uint64_t count = argc > 3 ? strtoull(argv[3], NULL, 10) : argc > 1 ? 1u : 4u;
    for (uint64_t seed = first; seed < first + count; seed++) run(seed, calls);
    return check_summary("fuzz_api");
}
#endif

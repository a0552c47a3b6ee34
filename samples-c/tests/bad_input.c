/* Bad input from C: every pointer NULL, stale and forged handles, destroyed
 * runtimes, wrong struct sizes, NaN and infinities, huge counts. Each call must
 * return its specific status, say why, and change nothing. */
#include <math.h>
#include <stdint.h>

#include "kiln.h"
#include "check.h"

static int runs;

static KilnStatus count_run(const KilnPassContext *context, void *user) {
    (void)context;
    (void)user;
    runs++;
    return KILN_OK;
}

static KilnStatus failing(const KilnPassContext *context, void *user) {
    (void)context;
    (void)user;
    return KILN_ERROR_INVALID_ARGUMENT;
}

static void noop_range(uint32_t b, uint32_t e, uint32_t w, void *c) {
    (void)b, (void)e, (void)w, (void)c;
}

/* Shapes, pairwise queries and characters: NaN, infinite, zero and huge numbers,
 * NULL pointers, stale handles and bad quaternions are refused and change nothing. */
static void shapes_and_characters(void) {
    KilnVec3 o = {0, 0, 0};
    KilnShapeId s = {7, 7}, ball, crate;
    CHECK_STATUS(kiln_shape_create_sphere(o, NAN, &s), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("shape refused");
    CHECK_STATUS(kiln_shape_create_sphere(o, -1.0f, &s), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_shape_create_sphere(o, 1e30f, &s), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("MAX_EXTENT");
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){1, 2 * KILN_SHAPE_MAX_EXTENT, 1}, &s), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){1, 0, 1}, &s), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_shape_create_capsule(o, (KilnVec3){0, INFINITY, 0}, 1, &s), KILN_ERROR_INVALID_ARGUMENT);
    KilnVec3 flat[4] = {{0, 0, 0}, {1, 0, 0}, {0, 0, 1}, {1, 0, 1}};
    CHECK_STATUS(kiln_shape_create_hull(flat, 4, &s), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_shape_create_hull(NULL, 4, &s), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_shape_create_hull(flat, UINT32_MAX, &s), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_shape_create_triangle(o, o, o, &s), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_shape_create_compound(NULL, 0, &s), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_shape_create_compound(NULL, UINT32_MAX, &s), KILN_ERROR_INVALID_ARGUMENT);
    CHECK(s.index1 == 7 && s.generation == 7);
    CHECK_STATUS(kiln_shape_create_sphere(o, 0.5f, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_shape_create_sphere(o, 0.5f, &ball), KILN_OK);
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){1, 1, 1}, &crate), KILN_OK);

    KilnTransform id = kiln_transform_identity(), nan_pos = id, zero_rot = id;
    nan_pos.position.x = NAN;
    zero_rot.rotation.w = 0;
    KilnDistanceResult d = {0};
    d.distance = 42;
    CHECK_STATUS(kiln_shape_distance(ball, &nan_pos, crate, &id, &d), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_shape_distance(ball, &id, crate, &zero_rot, &d), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("unit quaternion");
    CHECK_STATUS(kiln_shape_distance(ball, NULL, crate, &id, &d), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_shape_distance(ball, &id, crate, &id, NULL), KILN_ERROR_NULL_POINTER);
    CHECK(d.distance == 42);
    uint32_t count = 0;
    KilnManifold m[1];
    CHECK_STATUS(kiln_shape_contact(ball, &id, crate, &id, NAN, m, 1, &count), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_shape_contact(ball, &id, crate, &id, 0.01f, NULL, 1, &count), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_shape_contact(ball, &id, crate, &id, 0.01f, m, 1, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_shape_contact(ball, &id, crate, &id, 0.01f, NULL, 0, &count), KILN_OK);
    CHECK(count == 1); /* the sphere's centre is inside the box */
    KilnSweep sweep = {id, id, {0, 0, 0}};
    KilnToiResult toi;
    CHECK_STATUS(kiln_shape_time_of_impact(ball, &sweep, crate, &sweep, 2.0f, 0, &toi), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_shape_time_of_impact(ball, &sweep, crate, &sweep, 1.0f, -1, &toi), KILN_ERROR_INVALID_ARGUMENT);
    sweep.local_center.y = INFINITY;
    CHECK_STATUS(kiln_shape_time_of_impact(ball, &sweep, crate, &sweep, 1.0f, 0, &toi), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_shape_get_mass(crate, 0.0f, &(KilnMassProperties){0}), KILN_ERROR_INVALID_ARGUMENT);

    KilnCharacterDef def = kiln_default_character_def();
    KilnCharacterId c = {5, 5}, live;
    KilnCharacterDef bad = def;
    bad.struct_size = 0;
    CHECK_STATUS(kiln_character_create(&bad, o, &c), KILN_ERROR_STRUCT_SIZE);
    bad = def;
    bad.radius = INFINITY;
    CHECK_STATUS(kiln_character_create(&bad, o, &c), KILN_ERROR_INVALID_ARGUMENT);
    bad = def;
    bad.step_height = 1e9f;
    CHECK_STATUS(kiln_character_create(&bad, o, &c), KILN_ERROR_INVALID_ARGUMENT);
    bad = def;
    bad.skin = 2 * def.radius;
    CHECK_STATUS(kiln_character_create(&bad, o, &c), KILN_ERROR_INVALID_ARGUMENT);
    bad = def;
    bad.height = -1;
    CHECK_STATUS(kiln_character_create(&bad, o, &c), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_character_create(&def, (KilnVec3){NAN, 0, 0}, &c), KILN_ERROR_INVALID_ARGUMENT);
    CHECK(c.index1 == 5 && c.generation == 5);
    CHECK_STATUS(kiln_character_create(&def, (KilnVec3){0, 2.5f, 0}, &live), KILN_OK);
    KilnTerrainId no_terrain = {0, 0};
    KilnRuntimeId inline_rt = {0, 0};
    KilnShapeInstance statics[1] = {{crate, id}};
    CHECK_STATUS(kiln_character_move(live, (KilnVec3){NAN, 0, 0}, no_terrain, inline_rt, NULL, 0, NULL),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_character_move(live, (KilnVec3){1e6f, 0, 0}, no_terrain, inline_rt, NULL, 0, NULL),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_character_move(live, o, no_terrain, inline_rt, NULL, 1, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_character_move(live, o, no_terrain, inline_rt, statics, UINT32_MAX, NULL),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_character_move(live, o, (KilnTerrainId){3, 9}, inline_rt, NULL, 0, NULL),
                 KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_character_move(live, (KilnVec3){0, -1, 0}, no_terrain, inline_rt, statics, 1, NULL), KILN_OK);
    KilnVec3 p;
    CHECK_STATUS(kiln_character_get_position(live, &p), KILN_OK);
    CHECK(fabsf(p.y - (1.0f + def.radius + 0.5f * def.height + def.skin)) < 0.01f); /* on the crate */
    CHECK_STATUS(kiln_shape_destroy(crate), KILN_OK);
    CHECK_STATUS(kiln_character_move(live, o, no_terrain, inline_rt, statics, 1, NULL), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_character_set_position(live, (KilnVec3){0, INFINITY, 0}), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_character_destroy(live), KILN_OK);
    bool grounded = true;
    CHECK_STATUS(kiln_character_is_grounded(live, &grounded), KILN_ERROR_INVALID_HANDLE);
    CHECK(grounded);
    CHECK_STATUS(kiln_shape_destroy(ball), KILN_OK);
    CHECK_STATUS(kiln_shape_distance(ball, &id, ball, &id, &d), KILN_ERROR_INVALID_HANDLE);
}

static int reentered_status = -1;

static void reenter(KilnBodyId body, uint32_t index, KilnShapeId shape, const KilnTransform *t, uint32_t color,
                    void *context) {
    (void)index, (void)shape, (void)t, (void)color, (void)context;
    reentered_status = (int)kiln_body_wake(body);
}

/* The world: bad definitions, NaN and huge transforms and velocities, stale bodies,
 * bodies of destroyed worlds, bad strides and a stale handle in a bulk read-back,
 * terrain lending rules, re-entrant calls from a debug-draw callback. */
static void worlds(void) {
    KilnWorldDef def = kiln_default_world_def();
    KilnWorldId world = {5, 5}, other;
    def.substeps = 0;
    CHECK_STATUS(kiln_world_create(&def, &world), KILN_ERROR_INVALID_ARGUMENT);
    def = kiln_default_world_def();
    def.gravity.y = NAN;
    CHECK_STATUS(kiln_world_create(&def, &world), KILN_ERROR_INVALID_ARGUMENT);
    def = kiln_default_world_def();
    def.struct_size = 8;
    CHECK_STATUS(kiln_world_create(&def, &world), KILN_ERROR_STRUCT_SIZE);
    CHECK_STATUS(kiln_world_create(NULL, &world), KILN_ERROR_NULL_POINTER);
    CHECK(world.index1 == 5 && world.generation == 5);
    def = kiln_default_world_def();
    CHECK_STATUS(kiln_world_create(&def, &world), KILN_OK);
    CHECK_STATUS(kiln_world_create(&def, &other), KILN_OK);

    KilnShapeId cube;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 0.5f, 0.5f}, &cube), KILN_OK);
    KilnBodyDef bdef = kiln_default_body_def();
    KilnBodyId body = {0}, foreign;
    bdef.motion_type = 7;
    CHECK_STATUS(kiln_body_create(world, &bdef, &body), KILN_ERROR_INVALID_ARGUMENT);
    bdef = kiln_default_body_def();
    bdef.transform.position.x = INFINITY;
    CHECK_STATUS(kiln_body_create(world, &bdef, &body), KILN_ERROR_INVALID_ARGUMENT);
    bdef = kiln_default_body_def();
    bdef.linear_velocity.z = 1e20f;
    CHECK_STATUS(kiln_body_create(world, &bdef, &body), KILN_ERROR_INVALID_ARGUMENT);
    CHECK(body.index1 == 0);
    bdef = kiln_default_body_def();
    CHECK_STATUS(kiln_body_create(world, &bdef, &body), KILN_OK);
    CHECK_STATUS(kiln_body_create(other, &bdef, &foreign), KILN_OK);
    KilnShapeDef sdef = kiln_default_shape_def();
    sdef.restitution = 2.0f;
    CHECK_STATUS(kiln_body_add_shape(body, cube, &sdef, NULL), KILN_ERROR_INVALID_ARGUMENT);
    sdef = kiln_default_shape_def();
    sdef.density = NAN;
    CHECK_STATUS(kiln_body_add_shape(body, cube, &sdef, NULL), KILN_ERROR_INVALID_ARGUMENT);
    sdef = kiln_default_shape_def();
    KilnShapeId stale_shape = {999, 1};
    CHECK_STATUS(kiln_body_add_shape(body, stale_shape, &sdef, NULL), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_body_add_shape(body, cube, &sdef, NULL), KILN_OK);

    KilnTransform t = kiln_transform_identity(), before;
    CHECK_STATUS(kiln_body_get_transform(body, &before), KILN_OK);
    t.position.y = NAN;
    CHECK_STATUS(kiln_body_set_transform(body, &t), KILN_ERROR_INVALID_ARGUMENT);
    t = kiln_transform_identity();
    t.position.x = 1e30f;
    CHECK_STATUS(kiln_body_set_transform(body, &t), KILN_ERROR_INVALID_ARGUMENT);
    t = kiln_transform_identity();
    t.rotation.w = 0.0f;
    CHECK_STATUS(kiln_body_set_transform(body, &t), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_body_set_transform(body, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_body_apply_force(body, (KilnVec3){NAN, 0, 0}), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_body_apply_impulse(body, (KilnVec3){0, 1, 0}, (KilnVec3){0, INFINITY, 0}),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_body_set_velocity(body, (KilnVec3){0, 0, 0}, (KilnVec3){0, NAN, 0}),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_body_set_target_transform(body, &before, 1.0f / 60.0f), KILN_ERROR_INVALID_STATE);
    CHECK_STATUS(kiln_world_step(world, (KilnRuntimeId){0, 0}, NAN), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_world_step(world, (KilnRuntimeId){0, 0}, -0.01f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_world_step(world, (KilnRuntimeId){0, 0}, 5.0f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_body_get_transform(body, &t), KILN_OK);
    CHECK(memcmp(&t, &before, sizeof t) == 0);

    /* Bulk read-back: bad strides and a foreign body write nothing. */
    float positions[6] = {7, 7, 7, 7, 7, 7};
    KilnBodyId list[2] = {body, foreign};
    CHECK_STATUS(kiln_world_get_transforms(world, list, 1, positions, 4, NULL, 0), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_world_get_transforms(world, list, 2, positions, 0, NULL, 0), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("bodies[1]");
    CHECK_STATUS(kiln_world_get_transforms(world, NULL, 2, positions, 0, NULL, 0), KILN_ERROR_NULL_POINTER);
    CHECK(positions[0] == 7 && positions[5] == 7);
    CHECK_STATUS(kiln_world_get_transforms(world, list, 1, positions, 0, NULL, 0), KILN_OK);
    CHECK(positions[0] == 0 && positions[3] == 7);

    /* A debug-draw callback calling back into its world is refused, not deadlocked. */
    KilnDebugDraw draw = kiln_default_debug_draw();
    draw.draw_shape = reenter;
    CHECK_STATUS(kiln_world_debug_draw(world, &draw), KILN_OK);
    CHECK(reentered_status == (int)KILN_ERROR_INVALID_STATE);
    CHECK_STATUS(kiln_world_debug_draw(world, NULL), KILN_ERROR_NULL_POINTER);

    /* Terrain lending: one world at a time, not destroyed while lent. */
    KilnTerrainDef tdef = kiln_default_terrain_def();
    KilnTerrainId terrain;
    CHECK_STATUS(kiln_terrain_create(&tdef, &terrain), KILN_OK);
    CHECK_STATUS(kiln_world_set_terrain(world, terrain), KILN_OK);
    CHECK_STATUS(kiln_world_set_terrain(other, terrain), KILN_ERROR_INVALID_STATE);
    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("attached");
    CHECK_STATUS(kiln_world_set_terrain(world, (KilnTerrainId){0, 0}), KILN_OK);
    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK);
    CHECK_STATUS(kiln_world_set_terrain(world, terrain), KILN_ERROR_INVALID_HANDLE);

    /* The determinism hash: two worlds holding one body each in the same state hash
     * alike, a step changes it; NULL, null, forged and stale handles write nothing. */
    uint64_t hash = 42, other_hash = 0;
    CHECK_STATUS(kiln_world_hash(world, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_hash((KilnWorldId){0, 0}, &hash), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_hash((KilnWorldId){77, 3}, &hash), KILN_ERROR_INVALID_HANDLE);
    CHECK(hash == 42);
    CHECK_STATUS(kiln_world_hash(world, &hash), KILN_OK);
    CHECK_STATUS(kiln_world_hash(other, &other_hash), KILN_OK);
    CHECK(hash == other_hash && hash != 42);
    CHECK_STATUS(kiln_world_step(world, (KilnRuntimeId){0, 0}, 1.0f / 60.0f), KILN_OK);
    CHECK_STATUS(kiln_world_hash(world, &hash), KILN_OK);
    CHECK(hash != other_hash);

    /* Stale bodies and worlds. */
    CHECK_STATUS(kiln_world_destroy(other), KILN_OK);
    CHECK_STATUS(kiln_world_hash(other, &other_hash), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("stale");
    CHECK(!kiln_body_is_valid(foreign));
    CHECK_STATUS(kiln_body_apply_force(foreign, (KilnVec3){0, 1, 0}), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_body_destroy(body), KILN_OK);
    CHECK_STATUS(kiln_body_destroy(body), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("stale");
    bool awake = true;
    CHECK_STATUS(kiln_body_is_awake(body, &awake), KILN_ERROR_INVALID_HANDLE);
    CHECK(awake);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_world_step(world, (KilnRuntimeId){0, 0}, 0.01f), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_shape_destroy(cube), KILN_OK);
}

/* The null handles and the handle helpers of the header: a null handle is refused
 * where an object is needed, a live one is not null, and a handle equals its copy but
 * not a handle of the same slot after the object was destroyed and made again. */
static void null_handles_and_equality(void) {
    CHECK(KILN_IS_NULL(kiln_null_world_id) && KILN_IS_NULL(kiln_null_body_id));
    CHECK(KILN_IS_NULL(kiln_null_runtime_id) && KILN_IS_NULL(kiln_null_tracer_id));
    KilnTransform xf;
    CHECK_STATUS(kiln_body_get_transform(kiln_null_body_id, &xf), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("null");
    CHECK_STATUS(kiln_world_destroy(kiln_null_world_id), KILN_ERROR_INVALID_HANDLE);
    CHECK(!kiln_shape_is_valid(kiln_null_shape_id));

    KilnWorldDef wdef = kiln_default_world_def();
    KilnWorldId world = kiln_null_world_id;
    CHECK_STATUS(kiln_world_create(&wdef, &world), KILN_OK);
    CHECK(!KILN_IS_NULL(world));
    KilnBodyDef bdef = kiln_default_body_def();
    KilnBodyId a = kiln_null_body_id, b = kiln_null_body_id;
    CHECK_STATUS(kiln_body_create(world, &bdef, &a), KILN_OK);
    KilnBodyId copy = a;
    CHECK(KILN_ID_EQUALS(a, copy));
    CHECK(!KILN_ID_EQUALS(a, kiln_null_body_id));
    CHECK_STATUS(kiln_body_destroy(a), KILN_OK);
    CHECK_STATUS(kiln_body_create(world, &bdef, &b), KILN_OK);
    /* The slot may be reused; the generation tells the two apart. */
    CHECK(!KILN_ID_EQUALS(copy, b));
    CHECK_STATUS(kiln_body_get_transform(copy, &xf), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_body_get_transform(b, &xf), KILN_OK);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
}

int main(void) {
    CHECK_STATUS(kiln_check_linked_abi(), KILN_OK);
    KilnAbiInfo info = {0};
    info.struct_size = (uint32_t)sizeof info;
    CHECK_STATUS(kiln_check_abi(&info), KILN_ERROR_ABI_MISMATCH);
    CHECK_MESSAGE("does not match this program");
    CHECK_STATUS(kiln_check_abi(NULL), KILN_ERROR_NULL_POINTER);
    null_handles_and_equality();

    /* Creation. */
    KilnRuntimeDef def = kiln_default_runtime_def();
    def.thread_count = 2;
    KilnRuntimeId rt = {0, 0}, untouched = {42, 42};
    CHECK_STATUS(kiln_runtime_create(NULL, &untouched), KILN_ERROR_NULL_POINTER);
    CHECK_MESSAGE("`def` is NULL");
    CHECK_STATUS(kiln_runtime_create(&def, NULL), KILN_ERROR_NULL_POINTER);
    KilnRuntimeDef wrong = def;
    wrong.struct_size = 3;
    CHECK_STATUS(kiln_runtime_create(&wrong, &untouched), KILN_ERROR_STRUCT_SIZE);
    CHECK_MESSAGE("struct_size is 3");
    wrong = def;
    wrong.thread_count = 1000000;
    CHECK_STATUS(kiln_runtime_create(&wrong, &untouched), KILN_ERROR_INVALID_ARGUMENT);
    CHECK(untouched.index1 == 42 && untouched.generation == 42);
    CHECK_STATUS(kiln_runtime_create(&def, &rt), KILN_OK);
    CHECK(kiln_runtime_is_valid(rt));

    /* Resources and passes. */
    KilnResourceId res, none = {0, 0};
    CHECK_STATUS(kiln_runtime_add_resource(rt, NULL, &res), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_runtime_add_resource(rt, "", &res), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_runtime_add_resource(rt, "bodies", NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_runtime_add_resource(rt, "bodies", &res), KILN_OK);
    CHECK_STATUS(kiln_runtime_add_resource(rt, "bodies", &none), KILN_ERROR_GRAPH);
    CHECK(none.index1 == 0);

    KilnPassDef pass = kiln_default_pass_def();
    KilnPassId id = {0, 0};
    pass.name = "step";
    pass.writes = &res;
    pass.write_count = 1;
    CHECK_STATUS(kiln_runtime_add_pass(rt, &pass, &id), KILN_ERROR_NULL_POINTER); /* no run */
    pass.run = count_run;
    CHECK_STATUS(kiln_runtime_add_pass(rt, NULL, &id), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_runtime_add_pass(rt, &pass, NULL), KILN_ERROR_NULL_POINTER);
    KilnPassDef bad = pass;
    bad.struct_size = 1;
    CHECK_STATUS(kiln_runtime_add_pass(rt, &bad, &id), KILN_ERROR_STRUCT_SIZE);
    bad = pass;
    bad.write_count = UINT32_MAX;
    CHECK_STATUS(kiln_runtime_add_pass(rt, &bad, &id), KILN_ERROR_INVALID_ARGUMENT);
    bad = pass;
    bad.writes = NULL;
    CHECK_STATUS(kiln_runtime_add_pass(rt, &bad, &id), KILN_ERROR_NULL_POINTER);
    bad = pass;
    bad.queue = 99;
    CHECK_STATUS(kiln_runtime_add_pass(rt, &bad, &id), KILN_ERROR_INVALID_ARGUMENT);
    KilnResourceId forged = {77, res.owner};
    bad = pass;
    bad.writes = &forged;
    CHECK_STATUS(kiln_runtime_add_pass(rt, &bad, &id), KILN_ERROR_INVALID_HANDLE);
    const char *after[] = {"missing"};
    bad = pass;
    bad.after = after;
    bad.after_count = 1;
    CHECK_STATUS(kiln_runtime_add_pass(rt, &bad, &id), KILN_ERROR_GRAPH);
    CHECK_MESSAGE("'missing'");
    CHECK(id.index1 == 0);
    CHECK_STATUS(kiln_runtime_add_pass(rt, &pass, &id), KILN_OK);
    CHECK_STATUS(kiln_runtime_add_pass(rt, &pass, &id), KILN_ERROR_GRAPH); /* duplicate name */

    /* Frames and numbers. */
    CHECK_STATUS(kiln_runtime_run_frame(rt, NAN), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_runtime_run_frame(rt, INFINITY), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_runtime_run_frame(rt, -INFINITY), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_runtime_run_frame(rt, -1.0f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("delta_time");
    CHECK(runs == 0);
    CHECK_STATUS(kiln_runtime_run_frame(rt, 0.0f), KILN_OK);
    CHECK(runs == 1);

    /* parallel_for outside a pass. */
    KilnPassContext fake = {rt, id, 0, 0.0f, 0};
    CHECK_STATUS(kiln_parallel_for(&fake, 10, 1, noop_range, NULL), KILN_ERROR_INVALID_STATE);
    CHECK_STATUS(kiln_parallel_for(NULL, 10, 1, noop_range, NULL), KILN_ERROR_NULL_POINTER);

    /* Profile buffer protocol. */
    uint32_t count = 0;
    KilnPassProfile one[1];
    CHECK_STATUS(kiln_runtime_get_profile(rt, NULL, NULL, 0, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_runtime_get_profile(rt, NULL, NULL, 5, &count), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_runtime_get_profile(rt, NULL, NULL, 0, &count), KILN_OK);
    CHECK(count == 1);
    CHECK_STATUS(kiln_runtime_get_profile(rt, NULL, one, 1, &count), KILN_OK);
    CHECK(strcmp(one[0].name, "step") == 0);

    /* A failing pass stops the frame; the next one works. */
    KilnPassDef fail = kiln_default_pass_def();
    fail.name = "fails";
    fail.run = failing;
    CHECK_STATUS(kiln_runtime_add_pass(rt, &fail, &id), KILN_OK);
    CHECK_STATUS(kiln_runtime_run_frame(rt, 0.01f), KILN_ERROR_PASS_FAILED);
    CHECK_MESSAGE("pass 'fails' failed");

    /* Destroy, then use. */
    CHECK_STATUS(kiln_runtime_destroy(rt), KILN_OK);
    CHECK(!kiln_runtime_is_valid(rt));
    CHECK_STATUS(kiln_runtime_destroy(rt), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_runtime_run_frame(rt, 0.01f), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("stale");
    CHECK_STATUS(kiln_runtime_add_resource(rt, "late", &res), KILN_ERROR_INVALID_HANDLE);
    KilnRuntimeId null_id = {0, 0}, forged_id = {9999, 3};
    CHECK_STATUS(kiln_runtime_run_frame(null_id, 0.01f), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("null handle");
    CHECK_STATUS(kiln_runtime_run_frame(forged_id, 0.01f), KILN_ERROR_INVALID_HANDLE);
    uint32_t workers = 123;
    CHECK_STATUS(kiln_runtime_get_worker_count(forged_id, &workers), KILN_ERROR_INVALID_HANDLE);
    CHECK(workers == 123);
    CHECK(strcmp(kiln_status_name(KILN_ERROR_INTERNAL), "KILN_ERROR_INTERNAL") == 0);
    shapes_and_characters();
    worlds();
    return check_summary("bad_input");
}

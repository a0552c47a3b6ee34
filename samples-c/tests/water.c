/* Water from C: a plank of half the water's density floats with its middle at the
 * waterline and falls asleep, a dense crate sinks to the floor, each enters the water
 * once and a destroyed one leaves once; with water_density 0 nothing floats. Then
 * every water setting and function with NaN, infinite, negative and huge numbers,
 * NULL pointers, stale and null handles: each refused with its status, nothing
 * written. */
#include <math.h>
#include <stdint.h>

#include "kiln.h"
#include "check.h"

static int same_body(KilnBodyId a, KilnBodyId b) {
    return a.index1 == b.index1 && a.generation == b.generation && a.world.index1 == b.world.index1 &&
           a.world.generation == b.world.generation;
}

/* A rock floor whose top is y = -5 under water up to y = 0. */
static KilnWorldId pool(const KilnWorldDef *def, KilnTerrainId *out_terrain) {
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(def, &world), KILN_OK);
    KilnTerrainDef tdef = kiln_default_terrain_def();
    tdef.voxel_size = 1.0f;
    CHECK_STATUS(kiln_terrain_create(&tdef, out_terrain), KILN_OK);
    CHECK_STATUS(kiln_terrain_fill(*out_terrain, (KilnInt3){-12, -7, -12}, (KilnInt3){12, -6, 12}, KILN_MATERIAL_ROCK,
                                   NULL),
                 KILN_OK);
    CHECK_STATUS(kiln_terrain_fill(*out_terrain, (KilnInt3){-12, -5, -12}, (KilnInt3){12, -1, 12},
                                   KILN_MATERIAL_WATER, NULL),
                 KILN_OK);
    CHECK_STATUS(kiln_world_set_terrain(world, *out_terrain), KILN_OK);
    return world;
}

static KilnBodyId box_body(KilnWorldId world, KilnShapeId shape, KilnVec3 at, float density) {
    KilnBodyDef def = kiln_default_body_def();
    def.transform.position = at;
    KilnBodyId id = {0};
    CHECK_STATUS(kiln_body_create(world, &def, &id), KILN_OK);
    KilnShapeDef sdef = kiln_default_shape_def();
    sdef.density = density;
    CHECK_STATUS(kiln_body_add_shape(id, shape, &sdef, NULL), KILN_OK);
    return id;
}

static void floating_and_sinking(KilnRuntimeId rt) {
    KilnWorldDef def = kiln_default_world_def();
    CHECK(def.water_density == 1000.0f && def.water_linear_drag == 0.5f && def.water_angular_drag == 0.05f);
    KilnTerrainId terrain;
    KilnWorldId world = pool(&def, &terrain);
    KilnShapeId plank_shape, crate_shape;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){1.1f, 0.25f, 0.9f}, &plank_shape), KILN_OK);
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 0.5f, 0.5f}, &crate_shape), KILN_OK);
    KilnBodyId plank = box_body(world, plank_shape, (KilnVec3){0.37f, 1.0f, -0.61f}, 500.0f);
    KilnBodyId crate = box_body(world, crate_shape, (KilnVec3){5.2f, 1.0f, 0.4f}, 2000.0f);

    /* Dry before the first step. */
    KilnSubmerged sub = {-1.0f, {0, 0, 0}, 0.0f};
    CHECK_STATUS(kiln_body_get_submerged(plank, &sub), KILN_OK);
    CHECK(sub.volume == 0.0f && fabsf(sub.body_volume - 2.2f * 0.5f * 1.8f) < 1e-4f);

    int plank_enters = 0, crate_enters = 0, leaves = 0;
    for (int step = 0; step < 1200; step++) {
        CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
        KilnWaterEvent events[4];
        uint32_t count = 99;
        CHECK_STATUS(kiln_world_get_water_events(world, events, 4, &count), KILN_OK);
        for (uint32_t i = 0; i < count && i < 4; i++) {
            plank_enters += events[i].begin && same_body(events[i].body, plank);
            crate_enters += events[i].begin && same_body(events[i].body, crate);
            leaves += !events[i].begin;
        }
    }
    CHECK(plank_enters == 1 && crate_enters == 1 && leaves == 0);
    /* Archimedes: half of a body of half the water's density is under water. */
    KilnTransform xf;
    CHECK_STATUS(kiln_body_get_transform(plank, &xf), KILN_OK);
    CHECK(fabsf(xf.position.y) < 0.025f);
    CHECK_STATUS(kiln_body_get_submerged(plank, &sub), KILN_OK);
    CHECK(fabsf(sub.volume / sub.body_volume - 0.5f) < 0.025f);
    CHECK(sub.center.y < 0.0f && sub.center.y > -0.25f);
    bool awake = true;
    CHECK_STATUS(kiln_body_is_awake(plank, &awake), KILN_OK);
    CHECK(!awake);
    /* The crate rests on the floor, all of it under water. */
    CHECK_STATUS(kiln_body_get_transform(crate, &xf), KILN_OK);
    CHECK(fabsf(xf.position.y - -4.5f) < 0.05f);
    CHECK_STATUS(kiln_body_get_submerged(crate, &sub), KILN_OK);
    CHECK(fabsf(sub.volume - 1.0f) < 1e-4f);

    /* Destroyed in the water: one leave with the next step. */
    CHECK_STATUS(kiln_body_destroy(crate), KILN_OK);
    CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
    uint32_t count = 0;
    CHECK_STATUS(kiln_world_get_water_events(world, NULL, 0, &count), KILN_OK);
    CHECK(count == 1);
    KilnWaterEvent events[2];
    CHECK_STATUS(kiln_world_get_water_events(world, events, 2, &count), KILN_OK);
    CHECK(count == 1 && same_body(events[0].body, crate) && !events[0].begin);

    /* Bad input. */
    CHECK_STATUS(kiln_body_get_submerged(plank, NULL), KILN_ERROR_NULL_POINTER);
    sub.volume = -7.0f;
    CHECK_STATUS(kiln_body_get_submerged(crate, &sub), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("stale");
    CHECK_STATUS(kiln_body_get_submerged(kiln_null_body_id, &sub), KILN_ERROR_INVALID_HANDLE);
    CHECK(sub.volume == -7.0f);
    count = 77;
    CHECK_STATUS(kiln_world_get_water_events(world, events, 2, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_get_water_events(world, NULL, 2, &count), KILN_ERROR_NULL_POINTER);
    CHECK(count == 77);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_world_get_water_events(world, NULL, 0, &count), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_get_water_events((KilnWorldId){0, 0}, NULL, 0, &count), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_body_get_submerged(plank, &sub), KILN_ERROR_INVALID_HANDLE);
    CHECK(count == 77 && sub.volume == -7.0f);
    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(plank_shape), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(crate_shape), KILN_OK);
}

/* water_density 0: a light body sinks like a stone and no event comes. */
static void water_off(KilnRuntimeId rt) {
    KilnWorldDef def = kiln_default_world_def();
    def.water_density = 0.0f;
    KilnTerrainId terrain;
    KilnWorldId world = pool(&def, &terrain);
    KilnShapeId shape;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 0.5f, 0.5f}, &shape), KILN_OK);
    KilnBodyId light = box_body(world, shape, (KilnVec3){0, 1, 0}, 100.0f);
    uint32_t events = 0;
    for (int step = 0; step < 300; step++) {
        CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
        uint32_t count = 99;
        CHECK_STATUS(kiln_world_get_water_events(world, NULL, 0, &count), KILN_OK);
        events += count;
    }
    KilnTransform xf;
    CHECK_STATUS(kiln_body_get_transform(light, &xf), KILN_OK);
    CHECK(events == 0 && fabsf(xf.position.y - -4.5f) < 0.05f);
    /* The volume is still measured: the world just applies no lift. */
    KilnSubmerged sub;
    CHECK_STATUS(kiln_body_get_submerged(light, &sub), KILN_OK);
    CHECK(fabsf(sub.volume - 1.0f) < 1e-4f);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(shape), KILN_OK);
}

/* Every water setting out of range: refused, no world made. */
static void bad_settings(void) {
    float bad[] = {NAN, -1.0f, INFINITY, -INFINITY, 1.0e30f};
    for (int i = 0; i < 5; i++) {
        for (int field = 0; field < 3; field++) {
            KilnWorldDef def = kiln_default_world_def();
            float *target = field == 0 ? &def.water_density : field == 1 ? &def.water_linear_drag
                                                                          : &def.water_angular_drag;
            *target = bad[i];
            KilnWorldId never = {0, 0};
            CHECK_STATUS(kiln_world_create(&def, &never), KILN_ERROR_INVALID_ARGUMENT);
            CHECK_MESSAGE("water");
            CHECK(never.index1 == 0);
        }
    }
    /* The limits themselves are allowed. */
    KilnWorldDef def = kiln_default_world_def();
    def.water_density = KILN_WORLD_MAX_WATER_DENSITY;
    def.water_linear_drag = KILN_WORLD_MAX_WATER_DRAG;
    def.water_angular_drag = KILN_WORLD_MAX_WATER_DRAG;
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(&def, &world), KILN_OK);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
}

int main(void) {
    KilnRuntimeDef rdef = kiln_default_runtime_def();
    rdef.thread_count = 2;
    KilnRuntimeId rt;
    CHECK_STATUS(kiln_runtime_create(&rdef, &rt), KILN_OK);
    floating_and_sinking(rt);
    water_off(rt);
    bad_settings();
    CHECK_STATUS(kiln_runtime_destroy(rt), KILN_OK);
    return check_summary("water");
}

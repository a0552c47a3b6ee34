/* World queries from C: rays, lists, batches, box and shape overlaps and shape casts
 * over bodies on a terrain floor, with filters; sensors and their events, contact hit
 * events, body move events, a character among bodies; then every query and event function with NULL pointers, stale, null and
 * foreign handles, NaN, infinite, zero and huge numbers and wrong struct sizes: each
 * refused with its status and a message, nothing written. */
#include <math.h>
#include <stdint.h>

#include "kiln.h"
#include "check.h"

static KilnBodyId body(KilnWorldId world, KilnShapeId shape, uint32_t motion, KilnVec3 at, uint32_t category) {
    KilnBodyDef def = kiln_default_body_def();
    def.motion_type = motion;
    def.transform.position = at;
    def.gravity_scale = 0.0f;
    KilnBodyId id = {0};
    CHECK_STATUS(kiln_body_create(world, &def, &id), KILN_OK);
    KilnShapeDef shape_def = kiln_default_shape_def();
    shape_def.category = category;
    CHECK_STATUS(kiln_body_add_shape(id, shape, &shape_def, NULL), KILN_OK);
    return id;
}

static int same_body(KilnBodyId a, KilnBodyId b) {
    return a.index1 == b.index1 && a.generation == b.generation && a.world.index1 == b.world.index1 &&
           a.world.generation == b.world.generation;
}

/* Field by field: the structs have padding bytes. */
static int same_hit(const KilnWorldRayHit *a, const KilnWorldRayHit *b) {
    return a->hit == b->hit && a->material == b->material && a->distance == b->distance && a->point.x == b->point.x &&
           a->point.y == b->point.y && a->point.z == b->point.z && a->normal.x == b->normal.x &&
           a->normal.y == b->normal.y && a->normal.z == b->normal.z && a->target.kind == b->target.kind &&
           a->target.shape_index == b->target.shape_index && same_body(a->target.body, b->target.body) &&
           a->target.chunk.x == b->target.chunk.x && a->target.chunk.y == b->target.chunk.y &&
           a->target.chunk.z == b->target.chunk.z && a->target.triangle == b->target.triangle;
}

static int near(float a, float b) { return fabsf(a - b) < 1e-3f; }

typedef struct Scene {
    KilnWorldId world;
    KilnBodyId block, ball, lift;
    KilnShapeId cube, sphere;
} Scene;

/* A static 2 m block at (0, 2, 0), a dynamic ball (category 2) at (5, 1, 0), a
 * kinematic 1 m cube at (-5, 2, 0), on a rock floor whose top is y = 0. */
static Scene make_scene(void) {
    Scene s;
    KilnWorldDef wdef = kiln_default_world_def();
    CHECK_STATUS(kiln_world_create(&wdef, &s.world), KILN_OK);
    KilnTerrainDef tdef = kiln_default_terrain_def();
    tdef.voxel_size = 1.0f;
    KilnTerrainId terrain;
    CHECK_STATUS(kiln_terrain_create(&tdef, &terrain), KILN_OK);
    CHECK_STATUS(kiln_terrain_fill(terrain, (KilnInt3){-16, -4, -16}, (KilnInt3){15, -1, 15}, KILN_MATERIAL_ROCK, NULL),
                 KILN_OK);
    CHECK_STATUS(kiln_world_set_terrain(s.world, terrain), KILN_OK);
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){1, 1, 1}, &s.cube), KILN_OK);
    CHECK_STATUS(kiln_shape_create_sphere((KilnVec3){0, 0, 0}, 0.5f, &s.sphere), KILN_OK);
    s.block = body(s.world, s.cube, KILN_MOTION_STATIC, (KilnVec3){0, 2, 0}, 1);
    s.ball = body(s.world, s.sphere, KILN_MOTION_DYNAMIC, (KilnVec3){5, 1, 0}, 2);
    s.lift = body(s.world, s.cube, KILN_MOTION_KINEMATIC, (KilnVec3){-5, 2, 0}, 1);
    return s;
}

static void rays(Scene *s, KilnRuntimeId rt) {
    KilnRay down = {{0, 10, 0}, {0, -2, 0}};
    KilnWorldRayHit hit;
    CHECK_STATUS(kiln_world_cast_ray(s->world, &down, INFINITY, NULL, &hit), KILN_OK);
    CHECK(hit.hit && hit.target.kind == KILN_QUERY_TARGET_BODY && same_body(hit.target.body, s->block));
    CHECK(near(hit.distance, 7.0f) && near(hit.point.y, 3.0f) && near(hit.normal.y, 1.0f) && hit.material == 0);

    /* Without static bodies, or ignoring the block, the floor is hit. */
    KilnQueryFilter filter = kiln_default_query_filter();
    filter.flags = KILN_QUERY_ALL & ~KILN_QUERY_STATIC;
    CHECK_STATUS(kiln_world_cast_ray(s->world, &down, 100.0f, &filter, &hit), KILN_OK);
    CHECK(hit.hit && hit.target.kind == KILN_QUERY_TARGET_TERRAIN && near(hit.distance, 10.0f));
    CHECK(hit.material == KILN_MATERIAL_ROCK && near(hit.normal.y, 1.0f));
    filter = kiln_default_query_filter();
    filter.ignore_body = s->block;
    CHECK_STATUS(kiln_world_cast_ray(s->world, &down, 100.0f, &filter, &hit), KILN_OK);
    CHECK(hit.target.kind == KILN_QUERY_TARGET_TERRAIN);
    /* Without terrain either: nothing; too short: nothing. */
    filter.flags = KILN_QUERY_ALL & ~KILN_QUERY_TERRAIN;
    CHECK_STATUS(kiln_world_cast_ray(s->world, &down, 100.0f, &filter, &hit), KILN_OK);
    CHECK(!hit.hit && hit.distance == 0.0f);
    CHECK_STATUS(kiln_world_cast_ray(s->world, &down, 6.9f, NULL, &hit), KILN_OK);
    CHECK(!hit.hit);

    /* The ball has category 2: a mask without it does not see it. */
    KilnRay at_ball = {{5, 10, 0}, {0, -1, 0}};
    CHECK_STATUS(kiln_world_cast_ray(s->world, &at_ball, 100.0f, NULL, &hit), KILN_OK);
    CHECK(hit.target.kind == KILN_QUERY_TARGET_BODY && same_body(hit.target.body, s->ball) && near(hit.distance, 8.5f));
    filter = kiln_default_query_filter();
    filter.mask_bits = 1;
    CHECK_STATUS(kiln_world_cast_ray(s->world, &at_ball, 100.0f, &filter, &hit), KILN_OK);
    CHECK(hit.target.kind == KILN_QUERY_TARGET_TERRAIN);

    /* All hits: the block, then the floor, sorted; capacity 0 sizes the list. */
    uint32_t count = 99;
    CHECK_STATUS(kiln_world_cast_ray_all(s->world, &down, 100.0f, NULL, NULL, 0, &count), KILN_OK);
    CHECK(count == 2);
    KilnWorldRayHit all[4];
    CHECK_STATUS(kiln_world_cast_ray_all(s->world, &down, 100.0f, NULL, all, 4, &count), KILN_OK);
    CHECK(count == 2 && all[0].target.kind == KILN_QUERY_TARGET_BODY && all[1].target.kind == KILN_QUERY_TARGET_TERRAIN);
    CHECK(all[0].distance < all[1].distance);
    CHECK_STATUS(kiln_world_cast_ray_all(s->world, &down, 100.0f, NULL, all, 1, &count), KILN_OK);
    CHECK(count == 2 && all[0].target.kind == KILN_QUERY_TARGET_BODY);

    /* A batch equals single casts, on the calling thread and on workers. */
    KilnRay batch[3] = {down, at_ball, {{-5, 10, 0.5f}, {0, -1, 0}}};
    KilnWorldRayHit hits[3], single;
    KilnRuntimeId runtimes[2] = {{0, 0}, rt};
    for (int r = 0; r < 2; r++) {
        CHECK_STATUS(kiln_world_cast_ray_batch(s->world, runtimes[r], batch, 3, 100.0f, NULL, hits), KILN_OK);
        for (int i = 0; i < 3; i++) {
            CHECK_STATUS(kiln_world_cast_ray(s->world, &batch[i], 100.0f, NULL, &single), KILN_OK);
            CHECK(same_hit(&single, &hits[i]));
        }
    }
    CHECK(same_body(hits[2].target.body, s->lift) && near(hits[2].distance, 7.0f));
}

static void overlaps_and_casts(Scene *s, KilnRuntimeId rt) {
    KilnQueryTarget targets[8];
    uint32_t count = 99;
    KilnAabb around_ball = {{4.8f, 0.8f, -0.2f}, {5.2f, 1.2f, 0.2f}};
    CHECK_STATUS(kiln_world_overlap_aabb(s->world, rt, &around_ball, NULL, targets, 8, &count), KILN_OK);
    CHECK(count == 1 && targets[0].kind == KILN_QUERY_TARGET_BODY && same_body(targets[0].body, s->ball));
    CHECK(targets[0].shape_index == 0);
    KilnQueryFilter filter = kiln_default_query_filter();
    filter.flags = KILN_QUERY_STATIC | KILN_QUERY_KINEMATIC | KILN_QUERY_TERRAIN;
    CHECK_STATUS(kiln_world_overlap_aabb(s->world, rt, &around_ball, &filter, targets, 8, &count), KILN_OK);
    CHECK(count == 0);
    /* A box down to the floor: the block, then floor triangles. */
    KilnAabb column = {{-0.5f, -0.5f, -0.5f}, {0.5f, 1.5f, 0.5f}};
    CHECK_STATUS(kiln_world_overlap_aabb(s->world, (KilnRuntimeId){0, 0}, &column, NULL, NULL, 0, &count), KILN_OK);
    CHECK(count > 1);
    CHECK_STATUS(kiln_world_overlap_aabb(s->world, rt, &column, NULL, targets, 8, &count), KILN_OK);
    CHECK(same_body(targets[0].body, s->block) && targets[1].kind == KILN_QUERY_TARGET_TERRAIN);
    /* The terrain once: the block and the first of those triangles. */
    KilnQueryTarget all[8];
    memcpy(all, targets, sizeof all);
    filter = kiln_default_query_filter();
    filter.flags = KILN_QUERY_ALL | KILN_QUERY_TERRAIN_ONCE;
    CHECK_STATUS(kiln_world_overlap_aabb(s->world, rt, &column, &filter, targets, 8, &count), KILN_OK);
    CHECK(count == 2 && same_body(targets[0].body, s->block) && targets[1].kind == KILN_QUERY_TARGET_TERRAIN);
    CHECK(targets[1].triangle == all[1].triangle && targets[1].chunk.x == all[1].chunk.x &&
          targets[1].chunk.y == all[1].chunk.y && targets[1].chunk.z == all[1].chunk.z);

    /* A 0.5 m cube probe touching the block's side counts; a millimetre off does not. */
    KilnShapeId probe;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 0.5f, 0.5f}, &probe), KILN_OK);
    KilnTransform at = {{1.5f, 2.0f, 0}, {0, 0, 0, 1}};
    CHECK_STATUS(kiln_world_overlap_shape(s->world, rt, probe, &at, NULL, targets, 8, &count), KILN_OK);
    CHECK(count == 1 && same_body(targets[0].body, s->block));
    at.position.x = 1.501f;
    CHECK_STATUS(kiln_world_overlap_shape(s->world, rt, probe, &at, NULL, targets, 8, &count), KILN_OK);
    CHECK(count == 0);

    /* A ball cast down onto the block stops 0.5 m above its top. */
    KilnShapeCastHit cast;
    KilnTransform start = {{0, 10, 0}, {0, 0, 0, 1}};
    CHECK_STATUS(kiln_world_cast_shape(s->world, rt, s->sphere, &start, (KilnVec3){0, -20, 0}, NULL, &cast), KILN_OK);
    CHECK(cast.hit && same_body(cast.target.body, s->block) && fabsf(cast.fraction - 0.325f) < 1e-4f);
    CHECK(near(cast.normal.y, 1.0f) && near(cast.point.y, 3.0f));
    /* Ignoring the block it lands on the floor; sideways it misses everything. */
    KilnQueryFilter ignore = kiln_default_query_filter();
    ignore.ignore_body = s->block;
    CHECK_STATUS(kiln_world_cast_shape(s->world, rt, s->sphere, &start, (KilnVec3){0, -20, 0}, &ignore, &cast), KILN_OK);
    CHECK(cast.hit && cast.target.kind == KILN_QUERY_TARGET_TERRAIN && fabsf(cast.fraction - 0.475f) < 1e-4f);
    CHECK_STATUS(kiln_world_cast_shape(s->world, rt, s->sphere, &start, (KilnVec3){20, 0, 0}, NULL, &cast), KILN_OK);
    CHECK(!cast.hit && cast.fraction == 0.0f);
    /* Starting inside the block: fraction 0. */
    start.position.y = 2.0f;
    CHECK_STATUS(kiln_world_cast_shape(s->world, rt, s->sphere, &start, (KilnVec3){0, 5, 0}, NULL, &cast), KILN_OK);
    CHECK(cast.hit && cast.fraction == 0.0f && same_body(cast.target.body, s->block));
    CHECK_STATUS(kiln_shape_destroy(probe), KILN_OK);
}

static void bad_input(Scene *s, KilnRuntimeId rt) {
    KilnRay ok = {{0, 10, 0}, {0, -1, 0}};
    KilnWorldRayHit hit = {.hit = true, .distance = 42.0f};
    KilnWorldRayHit untouched = hit;
    /* NULL pointers. */
    CHECK_STATUS(kiln_world_cast_ray(s->world, NULL, 10.0f, NULL, &hit), KILN_ERROR_NULL_POINTER);
    CHECK_MESSAGE("`ray` is NULL");
    CHECK_STATUS(kiln_world_cast_ray(s->world, &ok, 10.0f, NULL, NULL), KILN_ERROR_NULL_POINTER);
    /* Zero, NaN and infinite directions, NaN and huge origins, negative and NaN distances. */
    KilnRay bad[] = {{{0, 10, 0}, {0, 0, 0}},       {{0, 10, 0}, {NAN, -1, 0}}, {{0, 10, 0}, {0, -INFINITY, 0}},
                     {{NAN, 10, 0}, {0, -1, 0}},     {{1e30f, 0, 0}, {0, -1, 0}}};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_STATUS(kiln_world_cast_ray(s->world, &bad[i], 10.0f, NULL, &hit), KILN_ERROR_INVALID_ARGUMENT);
    }
    CHECK_STATUS(kiln_world_cast_ray(s->world, &ok, -1.0f, NULL, &hit), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("max_distance");
    CHECK_STATUS(kiln_world_cast_ray(s->world, &ok, NAN, NULL, &hit), KILN_ERROR_INVALID_ARGUMENT);
    CHECK(same_hit(&hit, &untouched));
    /* Zero distance: only what the origin is in. */
    CHECK_STATUS(kiln_world_cast_ray(s->world, &ok, 0.0f, NULL, &hit), KILN_OK);
    CHECK(!hit.hit);
    hit = untouched;

    /* Filters: wrong size, unknown flags, stale, null-index and foreign ignore bodies. */
    KilnQueryFilter filter = kiln_default_query_filter();
    filter.struct_size = 4;
    CHECK_STATUS(kiln_world_cast_ray(s->world, &ok, 10.0f, &filter, &hit), KILN_ERROR_STRUCT_SIZE);
    filter = kiln_default_query_filter();
    filter.flags = 0x100;
    CHECK_STATUS(kiln_world_cast_ray(s->world, &ok, 10.0f, &filter, &hit), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("KILN_QUERY_ALL");
    KilnShapeDef sdef = kiln_default_shape_def();
    KilnBodyDef bdef = kiln_default_body_def();
    KilnBodyId doomed;
    CHECK_STATUS(kiln_body_create(s->world, &bdef, &doomed), KILN_OK);
    CHECK_STATUS(kiln_body_add_shape(doomed, s->sphere, &sdef, NULL), KILN_OK);
    CHECK_STATUS(kiln_body_destroy(doomed), KILN_OK);
    filter = kiln_default_query_filter();
    filter.ignore_body = doomed;
    CHECK_STATUS(kiln_world_cast_ray(s->world, &ok, 10.0f, &filter, &hit), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("stale");
    filter.ignore_body = (KilnBodyId){0, 7, s->world};
    CHECK_STATUS(kiln_world_cast_ray(s->world, &ok, 10.0f, &filter, &hit), KILN_ERROR_INVALID_HANDLE);
    KilnWorldDef wdef = kiln_default_world_def();
    KilnWorldId other;
    CHECK_STATUS(kiln_world_create(&wdef, &other), KILN_OK);
    KilnBodyId foreign;
    CHECK_STATUS(kiln_body_create(other, &bdef, &foreign), KILN_OK);
    filter.ignore_body = foreign;
    CHECK_STATUS(kiln_world_cast_ray(s->world, &ok, 10.0f, &filter, &hit), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("another world");
    CHECK(same_hit(&hit, &untouched));

    /* Stale and null worlds. */
    CHECK_STATUS(kiln_world_destroy(other), KILN_OK);
    CHECK_STATUS(kiln_world_cast_ray(other, &ok, 10.0f, NULL, &hit), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_cast_ray((KilnWorldId){0, 0}, &ok, 10.0f, NULL, &hit), KILN_ERROR_INVALID_HANDLE);
    uint32_t count = 77;
    CHECK_STATUS(kiln_world_cast_ray_all(other, &ok, 10.0f, NULL, NULL, 0, &count), KILN_ERROR_INVALID_HANDLE);
    CHECK(count == 77);

    /* Lists: NULL buffers with a capacity, NULL counts. */
    KilnQueryTarget targets[2];
    KilnAabb box = {{-1, -1, -1}, {1, 1, 1}};
    CHECK_STATUS(kiln_world_cast_ray_all(s->world, &ok, 10.0f, NULL, NULL, 3, &count), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_cast_ray_all(s->world, &ok, 10.0f, NULL, &hit, 1, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_overlap_aabb(s->world, rt, &box, NULL, NULL, 2, &count), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_overlap_aabb(s->world, rt, &box, NULL, targets, 2, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_overlap_aabb(s->world, rt, NULL, NULL, targets, 2, &count), KILN_ERROR_NULL_POINTER);
    KilnAabb inverted = {{1, 1, 1}, {-1, -1, -1}}, nan_box = {{NAN, 0, 0}, {1, 1, 1}}, huge = {{-1e30f, 0, 0}, {1, 1, 1}};
    CHECK_STATUS(kiln_world_overlap_aabb(s->world, rt, &inverted, NULL, targets, 2, &count), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_world_overlap_aabb(s->world, rt, &nan_box, NULL, targets, 2, &count), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_world_overlap_aabb(s->world, rt, &huge, NULL, targets, 2, &count), KILN_ERROR_INVALID_ARGUMENT);
    CHECK(count == 77);

    /* Batches: a bad ray names its index and nothing is written; count 0 does nothing. */
    KilnRay batch[3] = {ok, ok, {{0, 10, 0}, {0, 0, 0}}};
    KilnWorldRayHit hits[3];
    memset(hits, 0x5a, sizeof hits);
    KilnWorldRayHit before[3];
    memcpy(before, hits, sizeof hits);
    CHECK_STATUS(kiln_world_cast_ray_batch(s->world, rt, batch, 3, 10.0f, NULL, hits), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("rays[2]");
    CHECK(memcmp(hits, before, sizeof hits) == 0);
    CHECK_STATUS(kiln_world_cast_ray_batch(s->world, rt, NULL, 0, 10.0f, NULL, NULL), KILN_OK);
    CHECK_STATUS(kiln_world_cast_ray_batch(s->world, rt, batch, 2, 10.0f, NULL, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_cast_ray_batch(s->world, rt, NULL, 2, 10.0f, NULL, hits), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_cast_ray_batch(s->world, (KilnRuntimeId){9, 9}, batch, 2, 10.0f, NULL, hits),
                 KILN_ERROR_INVALID_HANDLE);

    /* Shapes: stale shapes, bad transforms and translations. */
    KilnShapeId gone;
    CHECK_STATUS(kiln_shape_create_sphere((KilnVec3){0, 0, 0}, 1.0f, &gone), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(gone), KILN_OK);
    KilnTransform at = {{0, 10, 0}, {0, 0, 0, 1}};
    CHECK_STATUS(kiln_world_overlap_shape(s->world, rt, gone, &at, NULL, targets, 2, &count), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_overlap_shape(s->world, rt, s->sphere, NULL, NULL, targets, 2, &count), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_overlap_shape(s->world, rt, s->sphere, &at, NULL, NULL, 2, &count), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_overlap_shape(s->world, rt, s->sphere, &at, NULL, targets, 2, NULL), KILN_ERROR_NULL_POINTER);
    KilnQueryFilter sized = kiln_default_query_filter();
    sized.struct_size = 4;
    CHECK_STATUS(kiln_world_overlap_shape(s->world, rt, s->sphere, &at, &sized, targets, 2, &count), KILN_ERROR_STRUCT_SIZE);
    CHECK_STATUS(kiln_world_overlap_aabb(s->world, rt, &box, &sized, targets, 2, &count), KILN_ERROR_STRUCT_SIZE);
    CHECK_STATUS(kiln_world_overlap_shape(other, rt, s->sphere, &at, NULL, targets, 2, &count), KILN_ERROR_INVALID_HANDLE);
    CHECK(count == 77);
    KilnTransform nan_at = {{0, NAN, 0}, {0, 0, 0, 1}}, far_at = {{1e30f, 0, 0}, {0, 0, 0, 1}};
    KilnTransform zero_rotation = {{0, 0, 0}, {0, 0, 0, 0}};
    CHECK_STATUS(kiln_world_overlap_shape(s->world, rt, s->sphere, &nan_at, NULL, targets, 2, &count),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_world_overlap_shape(s->world, rt, s->sphere, &far_at, NULL, targets, 2, &count),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_world_overlap_shape(s->world, rt, s->sphere, &zero_rotation, NULL, targets, 2, &count),
                 KILN_ERROR_INVALID_ARGUMENT);
    KilnShapeCastHit cast = {.hit = true, .fraction = 0.5f};
    KilnShapeCastHit cast_before = cast;
    CHECK_STATUS(kiln_world_cast_shape(s->world, rt, gone, &at, (KilnVec3){0, -1, 0}, NULL, &cast), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_cast_shape(s->world, rt, s->sphere, &at, (KilnVec3){0, NAN, 0}, NULL, &cast),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_world_cast_shape(s->world, rt, s->sphere, &at, (KilnVec3){0, -1e30f, 0}, NULL, &cast),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_world_cast_shape(s->world, rt, s->sphere, &at, (KilnVec3){0, -1, 0}, NULL, NULL),
                 KILN_ERROR_NULL_POINTER);
    CHECK(memcmp(&cast, &cast_before, sizeof cast) == 0);
    /* A zero translation is an overlap test. */
    CHECK_STATUS(kiln_world_cast_shape(s->world, rt, s->sphere, &at, (KilnVec3){0, 0, 0}, NULL, &cast), KILN_OK);
    CHECK(!cast.hit);
    at.position.y = 2.5f;
    CHECK_STATUS(kiln_world_cast_shape(s->world, rt, s->sphere, &at, (KilnVec3){0, 0, 0}, NULL, &cast), KILN_OK);
    CHECK(cast.hit && cast.fraction == 0.0f);
}

/* What the callback cast's callbacks see and answer. */
typedef struct Visits {
    int count;
    float nearest;
    KilnBodyId skip, nearest_body;
    KilnWorldId world;
    KilnStatus inner;
    float answer; /* > 0: answer this; 0: stop; < 0: clip to each hit, skipping `skip` */
} Visits;

static float on_hit(const KilnWorldRayHit *hit, void *context) {
    Visits *v = context;
    v->count++;
    CHECK(hit->hit && hit->distance >= 0.0f);
    /* Calls on the world being cast are refused, not deadlocked. */
    KilnWorldRayHit again;
    KilnRay probe = {{0, 10, 0}, {0, -1, 0}};
    v->inner = kiln_world_cast_ray(v->world, &probe, 1.0f, NULL, &again);
    if (v->answer >= 0.0f) return v->answer;
    if (hit->target.kind == KILN_QUERY_TARGET_BODY && same_body(hit->target.body, v->skip)) return -1.0f;
    if (hit->distance < v->nearest) v->nearest = hit->distance, v->nearest_body = hit->target.body;
    return hit->distance;
}

/* The callback cast: clipping to each hit finds the closest hit, 0 stops at the
 * first, -1 skips a body; then its bad arguments. */
static void callback_rays(Scene *s) {
    KilnRay down = {{0.1f, 10, 0.1f}, {0, -1, 0}};
    Visits v = {0, INFINITY, {0}, {0}, s->world, KILN_OK, -1.0f};
    CHECK_STATUS(kiln_world_cast_ray_callback(s->world, &down, 100.0f, NULL, on_hit, &v), KILN_OK);
    KilnWorldRayHit closest;
    CHECK_STATUS(kiln_world_cast_ray(s->world, &down, 100.0f, NULL, &closest), KILN_OK);
    CHECK(v.count >= 2 && v.nearest == closest.distance && same_body(v.nearest_body, s->block));
    CHECK(v.inner == KILN_ERROR_INVALID_STATE);
    /* Skip the block: the floor under it is next. */
    v = (Visits){0, INFINITY, s->block, {0}, s->world, KILN_OK, -1.0f};
    CHECK_STATUS(kiln_world_cast_ray_callback(s->world, &down, 100.0f, NULL, on_hit, &v), KILN_OK);
    CHECK(v.nearest > closest.distance + 1.5f && v.nearest_body.index1 == 0);
    /* Stop at the first hit; go on through all of them. */
    v = (Visits){0, INFINITY, {0}, {0}, s->world, KILN_OK, 0.0f};
    CHECK_STATUS(kiln_world_cast_ray_callback(s->world, &down, 100.0f, NULL, on_hit, &v), KILN_OK);
    CHECK(v.count == 1);
    v = (Visits){0, INFINITY, {0}, {0}, s->world, KILN_OK, 1000.0f};
    CHECK_STATUS(kiln_world_cast_ray_callback(s->world, &down, 100.0f, NULL, on_hit, &v), KILN_OK);
    uint32_t all = 0;
    CHECK_STATUS(kiln_world_cast_ray_all(s->world, &down, 100.0f, NULL, NULL, 0, &all), KILN_OK);
    CHECK(v.count == (int)all && all >= 2);
    /* Bad input: nothing is called. */
    v = (Visits){0, INFINITY, {0}, {0}, s->world, KILN_OK, 1000.0f};
    CHECK_STATUS(kiln_world_cast_ray_callback(s->world, &down, 100.0f, NULL, NULL, &v), KILN_ERROR_NULL_POINTER);
    CHECK_MESSAGE("callback");
    CHECK_STATUS(kiln_world_cast_ray_callback(s->world, NULL, 100.0f, NULL, on_hit, &v), KILN_ERROR_NULL_POINTER);
    float bad_lengths[] = {NAN, -1.0f};
    for (int i = 0; i < 2; i++)
        CHECK_STATUS(kiln_world_cast_ray_callback(s->world, &down, bad_lengths[i], NULL, on_hit, &v),
                     KILN_ERROR_INVALID_ARGUMENT);
    KilnRay bad_rays[] = {{{0, 0, 0}, {0, 0, 0}}, {{NAN, 0, 0}, {0, -1, 0}}, {{0, 0, 0}, {INFINITY, 0, 0}}};
    for (int i = 0; i < 3; i++)
        CHECK_STATUS(kiln_world_cast_ray_callback(s->world, &bad_rays[i], 10.0f, NULL, on_hit, &v),
                     KILN_ERROR_INVALID_ARGUMENT);
    KilnQueryFilter wrong = kiln_default_query_filter();
    wrong.struct_size = 3;
    CHECK_STATUS(kiln_world_cast_ray_callback(s->world, &down, 10.0f, &wrong, on_hit, &v), KILN_ERROR_STRUCT_SIZE);
    CHECK_STATUS(kiln_world_cast_ray_callback((KilnWorldId){0, 0}, &down, 10.0f, NULL, on_hit, &v),
                 KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_cast_ray_callback(s->world, &down, INFINITY, NULL, on_hit, &v), KILN_OK);
    CHECK(v.count >= 2);
}

/* A ball falls through a sensor box onto the floor: one begin, one end, one hit as
 * it lands, and the move events follow it until it sleeps. */
static void sensors_and_moves(KilnRuntimeId rt) {
    KilnWorldDef wdef = kiln_default_world_def();
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(&wdef, &world), KILN_OK);
    KilnShapeId floor_shape, sensor_shape, ball_shape;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){20, 1, 20}, &floor_shape), KILN_OK);
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){1, 1, 1}, &sensor_shape), KILN_OK);
    CHECK_STATUS(kiln_shape_create_sphere((KilnVec3){0, 0, 0}, 0.25f, &ball_shape), KILN_OK);
    KilnBodyDef bdef = kiln_default_body_def();
    bdef.motion_type = KILN_MOTION_STATIC;
    bdef.transform.position = (KilnVec3){0, -1, 0};
    KilnBodyId floor_body, trigger, ball;
    KilnShapeDef sdef = kiln_default_shape_def();
    CHECK(!sdef.is_sensor);
    CHECK_STATUS(kiln_body_create(world, &bdef, &floor_body), KILN_OK);
    CHECK_STATUS(kiln_body_add_shape(floor_body, floor_shape, &sdef, NULL), KILN_OK);
    bdef.transform.position = (KilnVec3){0, 4, 0};
    CHECK_STATUS(kiln_body_create(world, &bdef, &trigger), KILN_OK);
    sdef.is_sensor = true;
    CHECK_STATUS(kiln_body_add_shape(trigger, sensor_shape, &sdef, NULL), KILN_OK);
    sdef.is_sensor = false;
    CHECK(!sdef.enable_hit_events && wdef.hit_event_threshold == 1.0f);
    sdef.enable_hit_events = true;
    bdef = kiln_default_body_def();
    bdef.transform.position = (KilnVec3){0.2f, 8, 0};
    CHECK_STATUS(kiln_body_create(world, &bdef, &ball), KILN_OK);
    CHECK_STATUS(kiln_body_add_shape(ball, ball_shape, &sdef, NULL), KILN_OK);

    /* Queries skip the sensor unless asked. */
    KilnRay down = {{0, 6, 0.8f}, {0, -1, 0}};
    KilnWorldRayHit hit;
    CHECK_STATUS(kiln_world_cast_ray(world, &down, 10.0f, NULL, &hit), KILN_OK);
    CHECK(same_body(hit.target.body, floor_body));
    KilnQueryFilter with_sensors = kiln_default_query_filter();
    with_sensors.flags = KILN_QUERY_ALL | KILN_QUERY_SENSORS;
    CHECK_STATUS(kiln_world_cast_ray(world, &down, 10.0f, &with_sensors, &hit), KILN_OK);
    CHECK(same_body(hit.target.body, trigger) && near(hit.distance, 1.0f));

    int begins = 0, ends = 0, asleep = 0, moved = 0, hits = 0;
    float approach = 0.0f;
    for (int step = 0; step < 400; step++) {
        CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
        KilnSensorEvent events[4];
        uint32_t count = 99;
        CHECK_STATUS(kiln_world_get_sensor_events(world, events, 4, &count), KILN_OK);
        for (uint32_t i = 0; i < count && i < 4; i++) {
            CHECK(same_body(events[i].sensor_body, trigger) && same_body(events[i].visitor_body, ball));
            CHECK(events[i].sensor_shape_index == 0 && events[i].visitor_shape_index == 0);
            begins += events[i].begin, ends += !events[i].begin;
        }
        KilnContactHitEvent hit_events[4];
        CHECK_STATUS(kiln_world_get_contact_hit_events(world, hit_events, 4, &count), KILN_OK);
        for (uint32_t i = 0; i < count && i < 4; i++) {
            int ball_first = same_body(hit_events[i].body_a, ball);
            CHECK(same_body(ball_first ? hit_events[i].body_b : hit_events[i].body_a, floor_body));
            approach = hit_events[i].approach_speed;
            hits++;
        }
        KilnBodyMoveEvent moves[4];
        CHECK_STATUS(kiln_world_get_move_events(world, NULL, 0, &count), KILN_OK);
        CHECK(count <= 1);
        CHECK_STATUS(kiln_world_get_move_events(world, moves, 4, &count), KILN_OK);
        if (count == 1) {
            KilnTransform now;
            CHECK_STATUS(kiln_body_get_transform(ball, &now), KILN_OK);
            CHECK(same_body(moves[0].body, ball) && moves[0].transform.position.y == now.position.y);
            moved++, asleep += moves[0].fell_asleep;
        }
    }
    CHECK(begins == 1 && ends == 1);
    CHECK(moved > 60 && asleep == 1);
    /* One landing, at sqrt(2 g h) for the 7.75 m it fell. */
    CHECK(hits == 1 && fabsf(approach - sqrtf(2.0f * 9.81f * 7.75f)) < 0.4f);

    /* Bad input: NULL counts, NULL arrays with a capacity, stale worlds. */
    KilnSensorEvent events[2];
    KilnBodyMoveEvent moves[2];
    uint32_t count = 77;
    CHECK_STATUS(kiln_world_get_sensor_events(world, events, 2, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_get_sensor_events(world, NULL, 2, &count), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_get_move_events(world, moves, 2, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_get_move_events(world, NULL, 2, &count), KILN_ERROR_NULL_POINTER);
    KilnContactHitEvent hit_events[2];
    CHECK_STATUS(kiln_world_get_contact_hit_events(world, hit_events, 2, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_get_contact_hit_events(world, NULL, 2, &count), KILN_ERROR_NULL_POINTER);
    CHECK(count == 77);
    float bad_thresholds[] = {NAN, -1.0f, INFINITY};
    for (int i = 0; i < 3; i++) {
        KilnWorldDef bad = kiln_default_world_def();
        bad.hit_event_threshold = bad_thresholds[i];
        KilnWorldId never = {0, 0};
        CHECK_STATUS(kiln_world_create(&bad, &never), KILN_ERROR_INVALID_ARGUMENT);
        CHECK(never.index1 == 0);
    }
    with_sensors.flags = 64;
    CHECK_STATUS(kiln_world_cast_ray(world, &down, 10.0f, &with_sensors, &hit), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_world_get_sensor_events(world, NULL, 0, &count), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_get_move_events(world, NULL, 0, &count), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_get_move_events((KilnWorldId){0, 0}, NULL, 0, &count), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_get_contact_hit_events(world, NULL, 0, &count), KILN_ERROR_INVALID_HANDLE);
    CHECK(count == 77);
    CHECK_STATUS(kiln_shape_destroy(floor_shape), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(sensor_shape), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(ball_shape), KILN_OK);
}

/* A character among bodies: stopped by a static wall, pushing a light crate; then
 * every bad argument of kiln_character_move_in_world. */
static void character_among_bodies(KilnRuntimeId rt) {
    KilnWorldDef wdef = kiln_default_world_def();
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(&wdef, &world), KILN_OK);
    KilnShapeId floor_shape, wall_shape, crate_shape;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){30, 1, 30}, &floor_shape), KILN_OK);
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 1, 2}, &wall_shape), KILN_OK);
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 0.5f, 0.5f}, &crate_shape), KILN_OK);
    KilnBodyId floor_body = body(world, floor_shape, KILN_MOTION_STATIC, (KilnVec3){0, -1, 0}, 1);
    KilnBodyId wall = body(world, wall_shape, KILN_MOTION_STATIC, (KilnVec3){3, 1, 0}, 1);
    KilnBodyDef bdef = kiln_default_body_def();
    bdef.transform.position = (KilnVec3){1.5f, 0.5f, 6};
    KilnBodyId crate;
    CHECK_STATUS(kiln_body_create(world, &bdef, &crate), KILN_OK);
    KilnShapeDef light = kiln_default_shape_def();
    light.density = 20.0f;
    CHECK_STATUS(kiln_body_add_shape(crate, crate_shape, &light, NULL), KILN_OK);
    KilnCharacterDef cdef = kiln_default_character_def();
    float stand = cdef.height * 0.5f + cdef.radius + 0.02f;
    KilnCharacterId walker, pusher;
    CHECK_STATUS(kiln_character_create(&cdef, (KilnVec3){0, stand, 0}, &walker), KILN_OK);
    CHECK_STATUS(kiln_character_create(&cdef, (KilnVec3){0, stand, 6}, &pusher), KILN_OK);
    KilnCharacterBodies settings = kiln_default_character_bodies();
    CHECK(settings.ride && settings.strength == 500.0f && settings.filter.flags == KILN_QUERY_ALL);
    const float dt = 1.0f / 60.0f;
    KilnMoveResult result;
    for (int i = 0; i < 120; i++) {
        KilnVec3 d = {2.0f * dt, -dt, 0};
        CHECK_STATUS(kiln_character_move_in_world(walker, world, rt, d, dt, NULL, &result), KILN_OK);
        CHECK_STATUS(kiln_character_move_in_world(pusher, world, rt, d, dt, &settings, NULL), KILN_OK);
        CHECK_STATUS(kiln_world_step(world, rt, dt), KILN_OK);
    }
    KilnVec3 at, crate_at;
    CHECK_STATUS(kiln_character_get_position(walker, &at), KILN_OK);
    CHECK(at.x < 2.5f - cdef.radius + 1e-3f && at.x > 2.0f && result.grounded);
    KilnTransform xf;
    CHECK_STATUS(kiln_body_get_transform(crate, &xf), KILN_OK);
    crate_at = xf.position;
    CHECK(crate_at.x > 3.0f);

    /* Bad input: nothing moves. */
    KilnVec3 d = {0.1f, 0, 0};
    KilnCharacterBodies bad = settings;
    bad.struct_size = 4;
    CHECK_STATUS(kiln_character_move_in_world(walker, world, rt, d, dt, &bad, NULL), KILN_ERROR_STRUCT_SIZE);
    bad = settings;
    bad.filter.struct_size = 4;
    CHECK_STATUS(kiln_character_move_in_world(walker, world, rt, d, dt, &bad, NULL), KILN_ERROR_STRUCT_SIZE);
    float bad_strengths[] = {NAN, -1.0f, INFINITY};
    for (int i = 0; i < 3; i++) {
        bad = settings;
        bad.strength = bad_strengths[i];
        CHECK_STATUS(kiln_character_move_in_world(walker, world, rt, d, dt, &bad, NULL), KILN_ERROR_INVALID_ARGUMENT);
    }
    float bad_dts[] = {NAN, -1.0f, INFINITY, 2.0f};
    for (int i = 0; i < 4; i++) {
        CHECK_STATUS(kiln_character_move_in_world(walker, world, rt, d, bad_dts[i], NULL, NULL),
                     KILN_ERROR_INVALID_ARGUMENT);
    }
    KilnVec3 bad_moves[] = {{NAN, 0, 0}, {1e9f, 0, 0}, {0, -INFINITY, 0}};
    for (int i = 0; i < 3; i++) {
        CHECK_STATUS(kiln_character_move_in_world(walker, world, rt, bad_moves[i], dt, NULL, NULL),
                     KILN_ERROR_INVALID_ARGUMENT);
    }
    bad = settings;
    bad.filter.flags = 64;
    CHECK_STATUS(kiln_character_move_in_world(walker, world, rt, d, dt, &bad, NULL), KILN_ERROR_INVALID_ARGUMENT);
    KilnVec3 still;
    CHECK_STATUS(kiln_character_get_position(walker, &still), KILN_OK);
    CHECK(still.x == at.x && still.y == at.y && still.z == at.z);
    /* Its own body may be left out; a stale one may not. */
    settings.filter.ignore_body = wall;
    CHECK_STATUS(kiln_character_move_in_world(walker, world, rt, d, dt, &settings, NULL), KILN_OK);
    CHECK_STATUS(kiln_body_destroy(wall), KILN_OK);
    CHECK_STATUS(kiln_character_move_in_world(walker, world, rt, d, dt, &settings, NULL), KILN_ERROR_INVALID_HANDLE);
    (void)floor_body;
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_character_move_in_world(walker, world, rt, d, dt, NULL, NULL), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_character_destroy(pusher), KILN_OK);
    CHECK_STATUS(kiln_character_move_in_world(pusher, world, rt, d, dt, NULL, NULL), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_character_destroy(walker), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(floor_shape), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(wall_shape), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(crate_shape), KILN_OK);
}

int main(void) {
    KilnRuntimeDef rdef = kiln_default_runtime_def();
    rdef.thread_count = 2;
    KilnRuntimeId rt;
    CHECK_STATUS(kiln_runtime_create(&rdef, &rt), KILN_OK);
    Scene s = make_scene();
    rays(&s, rt);
    overlaps_and_casts(&s, rt);
    /* After steps the ball has fallen onto the floor: the queries see it there. */
    CHECK_STATUS(kiln_body_set_velocity(s.ball, (KilnVec3){0, -30, 0}, (KilnVec3){0, 0, 0}), KILN_OK);
    CHECK_STATUS(kiln_world_step(s.world, rt, 1.0f / 60.0f), KILN_OK);
    KilnTransform ball_at;
    CHECK_STATUS(kiln_body_get_transform(s.ball, &ball_at), KILN_OK);
    KilnRay at_ball = {{5, 10, 0}, {0, -1, 0}};
    KilnWorldRayHit hit;
    CHECK_STATUS(kiln_world_cast_ray(s.world, &at_ball, 100.0f, NULL, &hit), KILN_OK);
    CHECK(same_body(hit.target.body, s.ball) && near(hit.point.y, ball_at.position.y + 0.5f));
    bad_input(&s, rt);
    callback_rays(&s);
    sensors_and_moves(rt);
    character_among_bodies(rt);
    CHECK_STATUS(kiln_world_validate(s.world), KILN_OK);
    CHECK_STATUS(kiln_world_destroy(s.world), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(s.cube), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(s.sphere), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(rt), KILN_OK);
    return check_summary("world_queries");
}

/* falling_bodies: rigid bodies dropped on voxel terrain, through the C API.
 *
 * Builds Kiln's test hills (128 x 128 voxel columns) walled in, lends the terrain
 * to a world,
 * and drops a grid of boxes, spheres and capsules over it. Steps the world at 60 Hz
 * on a runtime's workers, printing once a simulated second how many bodies are awake,
 * how many contacts began and ended, and the step time; then a table of the mean
 * milliseconds per stage. At the end it reads every transform back in one call into
 * an interleaved render array (as an engine would upload to the GPU), counts what a
 * debug draw would draw, and checks that no body sank into the terrain, every body
 * stayed finite and nearly all fell asleep. Exits non-zero when a check fails, so it
 * doubles as a test.
 *
 *   falling_bodies [BODIES] [FRAMES]   (defaults 1000 and 900: 15 s at 60 Hz) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln.h"
#include "tests/check.h"

/* One entry of an engine's render array: the read-back writes positions and
 * rotations straight into it, skipping the other fields by stride. */
typedef struct Instance {
    float position[3];
    uint32_t mesh;
    float rotation[4];
    float color[4];
} Instance;

typedef struct DrawCounts {
    unsigned shapes, sleeping, boxes, contacts, terrain_contacts, nodes;
    float deepest;
} DrawCounts;

static void draw_shape(KilnBodyId body, uint32_t index, KilnShapeId shape, const KilnTransform *transform,
                       uint32_t color, void *context) {
    (void)body, (void)index, (void)shape, (void)transform;
    DrawCounts *counts = context;
    counts->shapes++;
    counts->sleeping += color == KILN_COLOR_SLEEPING;
}

static void draw_box(const KilnAabb *aabb, uint32_t color, void *context) {
    (void)aabb, (void)color;
    ((DrawCounts *)context)->boxes++;
}

static void draw_node(const KilnAabb *aabb, uint32_t depth, void *context) {
    (void)aabb, (void)depth;
    ((DrawCounts *)context)->nodes++;
}

static void draw_contact(const KilnWorldContact *contact, void *context) {
    DrawCounts *counts = context;
    counts->contacts++;
    counts->terrain_contacts += contact->body_b.index1 == 0;
    if (contact->separation < counts->deepest) counts->deepest = contact->separation;
}

/* Height of the terrain surface under (x, z), by a ray cast straight down. */
static float ground(KilnTerrainId terrain, float x, float z) {
    KilnRay ray = {{x, 200.0f, z}, {0.0f, -1.0f, 0.0f}};
    KilnTerrainRayHit hit;
    if (kiln_terrain_ray_cast(terrain, &ray, 400.0f, &hit) != KILN_OK || !hit.hit) return -1000.0f;
    return hit.point.y;
}

int main(int argc, char **argv) {
    unsigned count = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1000u;
    unsigned frames = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 900u;
    if (count < 1 || count > 100000) count = 1000;
    if (kiln_check_linked_abi() != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_last_error_message());
        return 1;
    }

    KilnRuntimeDef rdef = kiln_default_runtime_def();
    KilnRuntimeId runtime;
    CHECK_STATUS(kiln_runtime_create(&rdef, &runtime), KILN_OK);
    uint32_t workers = 0;
    kiln_runtime_get_worker_count(runtime, &workers);

    KilnTerrainDef tdef = kiln_default_terrain_def();
    KilnTerrainId terrain;
    CHECK_STATUS(kiln_terrain_create(&tdef, &terrain), KILN_OK);
    CHECK_STATUS(kiln_terrain_generate_hills(terrain, 128, 7), KILN_OK);
    /* A 2-voxel rock wall 40 m high around the border keeps everything on the map. */
    const KilnInt3 walls[4][2] = {{{0, 0, 0}, {127, 40, 1}},
                                  {{0, 0, 126}, {127, 40, 127}},
                                  {{0, 0, 0}, {1, 40, 127}},
                                  {{126, 0, 0}, {127, 40, 127}}};
    for (int w = 0; w < 4; w++)
        CHECK_STATUS(kiln_terrain_fill(terrain, walls[w][0], walls[w][1], KILN_MATERIAL_ROCK, NULL), KILN_OK);
    CHECK_STATUS(kiln_terrain_regenerate(terrain, runtime, NULL), KILN_OK);

    KilnWorldDef wdef = kiln_default_world_def();
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(&wdef, &world), KILN_OK);
    CHECK_STATUS(kiln_world_set_terrain(world, terrain), KILN_OK);

    KilnShapeId shapes[3];
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.4f, 0.3f, 0.5f}, &shapes[0]), KILN_OK);
    CHECK_STATUS(kiln_shape_create_sphere((KilnVec3){0, 0, 0}, 0.4f, &shapes[1]), KILN_OK);
    CHECK_STATUS(kiln_shape_create_capsule((KilnVec3){-0.4f, 0, 0}, (KilnVec3){0.4f, 0, 0}, 0.25f, &shapes[2]),
                 KILN_OK);

    /* A square grid over the middle of the terrain, 3 m above the ground, rows
     * staggered in height so they do not land all at once. */
    KilnBodyId *bodies = calloc(count, sizeof *bodies);
    unsigned side = (unsigned)ceil(sqrt((double)count));
    float spacing = fminf(2.0f, 96.0f / (float)side);
    for (unsigned i = 0; i < count; i++) {
        unsigned gx = i % side, gz = i / side;
        float x = 16.0f + spacing * ((float)gx + 0.5f), z = 16.0f + spacing * ((float)gz + 0.5f);
        KilnBodyDef def = kiln_default_body_def();
        def.transform = kiln_transform_identity();
        def.transform.position = (KilnVec3){x, ground(terrain, x, z) + 3.0f + 0.5f * (float)(i % 7), z};
        def.angular_velocity = (KilnVec3){0.3f * (float)(i % 3), 0.0f, 0.2f * (float)(i % 5)};
        CHECK_STATUS(kiln_body_create(world, &def, &bodies[i]), KILN_OK);
        KilnShapeDef sdef = kiln_default_shape_def();
        sdef.rolling_resistance = 0.2f; /* spheres and capsules stop rolling on slopes */
        CHECK_STATUS(kiln_body_add_shape(bodies[i], shapes[i % 3], &sdef, NULL), KILN_OK);
    }
    printf("Kiln %s: %u bodies (boxes, spheres, capsules) dropped on 128 x 128 voxel hills, %u workers\n",
           kiln_version_string(), count, workers);
    printf("%6s %8s %10s %8s %8s %9s\n", "time", "awake", "islands", "begins", "ends", "step ms");

    KilnWorldProfile sum = {0};
    KilnContactEvent *events = NULL;
    uint32_t event_capacity = 0;
    unsigned begins = 0, ends = 0;
    KilnWorldCounters counters = {0};
    for (unsigned frame = 1; frame <= frames; frame++) {
        CHECK_STATUS(kiln_world_step(world, runtime, 1.0f / 60.0f), KILN_OK);
        uint32_t n = 0;
        CHECK_STATUS(kiln_world_get_contact_events(world, NULL, 0, &n), KILN_OK);
        if (n > event_capacity) {
            event_capacity = n * 2;
            events = realloc(events, event_capacity * sizeof *events);
        }
        CHECK_STATUS(kiln_world_get_contact_events(world, events, event_capacity, &n), KILN_OK);
        for (uint32_t e = 0; e < n; e++) {
            if (events[e].begin) begins++;
            else ends++;
        }
        KilnWorldProfile p;
        CHECK_STATUS(kiln_world_get_profile(world, &p), KILN_OK);
        sum.broadphase_ms += p.broadphase_ms;
        sum.narrowphase_ms += p.narrowphase_ms;
        sum.prepare_ms += p.prepare_ms;
        sum.solve_ms += p.solve_ms;
        sum.continuous_ms += p.continuous_ms;
        sum.sleep_ms += p.sleep_ms;
        sum.total_ms += p.total_ms;
        CHECK_STATUS(kiln_world_get_counters(world, &counters), KILN_OK);
        if (frame % 60 == 0 || frame == frames) {
            printf("%5.1fs %8u %10u %8u %8u %9.3f\n", (float)frame / 60.0f, counters.awake_body_count,
                   counters.sleeping_island_count, begins, ends, p.total_ms);
        }
    }

    printf("\nmean ms per step over %u steps:\n", frames);
    const char *names[] = {"broadphase", "narrowphase", "prepare", "solve", "continuous", "sleep", "total"};
    float values[] = {sum.broadphase_ms, sum.narrowphase_ms, sum.prepare_ms, sum.solve_ms,
                      sum.continuous_ms, sum.sleep_ms,       sum.total_ms};
    for (int s = 0; s < 7; s++) printf("  %-12s %8.3f\n", names[s], values[s] / (float)(frames ? frames : 1));

    /* Every transform in one call, into the interleaved render array. */
    Instance *instances = calloc(count, sizeof *instances);
    CHECK_STATUS(kiln_world_get_transforms(world, bodies, count, instances[0].position, sizeof(Instance),
                                           instances[0].rotation, sizeof(Instance)),
                 KILN_OK);
    unsigned finite = 0, above = 0;
    float lowest = 1e9f;
    for (unsigned i = 0; i < count; i++) {
        const Instance *in = &instances[i];
        int ok = isfinite(in->position[0]) && isfinite(in->position[1]) && isfinite(in->position[2]);
        finite += ok;
        /* No ground under it (-1000) means it left the map: counted as not above. */
        float depth = in->position[1] - ground(terrain, in->position[0], in->position[2]);
        above += ok && depth > -0.05f && depth < 500.0f;
        if (depth < lowest) lowest = depth;
    }
    printf("\n%u of %u bodies finite, %u above the terrain surface (lowest centre %.3f m above it)\n", finite, count,
           above, lowest);
    printf("%u bodies awake, %u sleeping islands, %u contacts began, %u ended\n", counters.awake_body_count,
           counters.sleeping_island_count, begins, ends);

    DrawCounts drawn = {0};
    KilnDebugDraw draw = kiln_default_debug_draw();
    draw.draw_shape = draw_shape;
    draw.draw_aabb = draw_box;
    draw.draw_contact = draw_contact;
    draw.draw_tree_node = draw_node;
    draw.user_context = &drawn;
    CHECK_STATUS(kiln_world_debug_draw(world, &draw), KILN_OK);
    printf("debug draw: %u shapes (%u sleeping), %u boxes, %u tree nodes, %u contact points (%u on terrain)\n",
           drawn.shapes, drawn.sleeping, drawn.boxes, drawn.nodes, drawn.contacts, drawn.terrain_contacts);

    CHECK(finite == count);
    CHECK(above == count);
    CHECK(begins >= count); /* every body landed */
    CHECK(drawn.shapes == count && drawn.boxes == count && drawn.nodes == 2 * count - 1);
    /* After 15 s nearly everything sleeps (1 of 1,000 and 0 of 400 are awake today);
     * an odd box balanced on a convex terrain ridge may still rock (open in issue 7). */
    if (frames >= 900) CHECK(counters.awake_body_count * 50 <= count);

    free(instances);
    free(events);
    free(bodies);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK); /* given back by the world */
    for (int s = 0; s < 3; s++) CHECK_STATUS(kiln_shape_destroy(shapes[s]), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(runtime), KILN_OK);
    return check_summary("falling_bodies");
}

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
 * stayed finite and nearly all fell asleep.
 *
 * The GPU side (when a Vulkan device is present; lavapipe on machines without a
 * GPU): the terrain's triangles and one mesh per body shape go to a tracer, every
 * body is mirrored by an instance that follows it, and once a simulated second the
 * tracer syncs from the world and rebuilds its TLAS on the GPU. At the end it renders
 * the scene (closest-hit camera rays, any-hit shadow rays), writes it to PNG when
 * given a path, and checks that GPU rays see the same terrain heights as the CPU
 * terrain ray cast and find the bodies where the world says they are.
 *
 * Exits non-zero when a check fails, so it doubles as a test.
 *
 *   falling_bodies [BODIES] [FRAMES] [PNG]   (defaults 1000, 1200 = 20 s at 60 Hz, none) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln.h"
#include "render.h"
#include "tests/check.h"

#define TERRAIN_USER_ID 0xFFFFFFu
#define BODY_MASK 2u

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

static void albedo(uint32_t user_id, const KilnVec3 *normal, float rgb[3]) {
    if (user_id == TERRAIN_USER_ID) {
        float flat = normal->y > 0.8f ? 1.0f : 0.0f;
        rgb[0] = 0.4f - 0.2f * flat, rgb[1] = 0.33f + 0.15f * flat, rgb[2] = 0.2f;
        return;
    }
    const float palette[3][3] = {{0.8f, 0.45f, 0.2f}, {0.25f, 0.45f, 0.85f}, {0.85f, 0.8f, 0.3f}};
    for (int k = 0; k < 3; k++) rgb[k] = palette[user_id % 3][k];
}

int main(int argc, char **argv) {
    unsigned count = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1000u;
    unsigned frames = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1200u;
    const char *png_path = argc > 3 ? argv[3] : NULL;
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

    KilnTerrainId terrain; /* walled in: everything stays on the map */
    CHECK_STATUS(create_walled_hills(128, 40, runtime, &terrain), KILN_OK);

    KilnWorldDef wdef = kiln_default_world_def();
    /* Water off: bodies of the default density (the water's own) would hover in the
     * hills' lakes for half a minute; this sample is about the terrain's contacts
     * (tests/water.c floats things). */
    wdef.water_density = 0.0f;
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

    /* The GPU mirror: terrain triangles, one mesh per shape, an instance per body. */
    KilnTracerId tracer = {0, 0};
    KilnStatus opened = open_tracer(1, &tracer);
    int gpu = opened == KILN_OK;
    if (!gpu) {
        CHECK(!gpu_required()); /* KILN_REQUIRE_GPU=1: a missing device fails */
        printf("GPU passes: SKIPPED (no device; set KILN_REQUIRE_GPU=1 to fail instead)\n");
    } else {
        uint32_t triangles = add_terrain_mesh(tracer, terrain, 1, TERRAIN_USER_ID);
        CHECK(triangles > 0);
        printf("GPU scene: %u terrain triangles", triangles);
        /* Boxes: a unit cube scaled per body; spheres and capsules: their own meshes. */
        Mesh shape_meshes[3] = {{0}, capsule_mesh(0.4f, 0.0f, 10, 16), capsule_mesh(0.25f, 0.4f, 10, 12)};
        KilnMeshId meshes[3];
        CHECK_STATUS(kiln_tracer_add_mesh(tracer, unit_cube_positions, 8, unit_cube_indices, 12, &meshes[0]), KILN_OK);
        for (int k = 1; k < 3; k++)
            CHECK_STATUS(kiln_tracer_add_mesh(tracer, shape_meshes[k].positions, shape_meshes[k].vertex_count,
                                              shape_meshes[k].indices, shape_meshes[k].triangle_count, &meshes[k]),
                         KILN_OK);
        for (int k = 0; k < 3; k++) free(shape_meshes[k].positions), free(shape_meshes[k].indices);
        /* The unit cube is scaled to the box's half extents in the body's frame. */
        const KilnAffine locals[3] = {{{{0.4f, 0, 0, 0}, {0, 0.3f, 0, 0}, {0, 0, 0.5f, 0}}},
                                      {{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}},
                                      {{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}}};
        for (unsigned i = 0; i < count; i++) {
            KilnInstanceDef def = kiln_default_instance_def();
            def.mesh = meshes[i % 3];
            def.mask = BODY_MASK;
            def.user_id = i;
            KilnInstanceId instance;
            CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &instance), KILN_OK);
            CHECK_STATUS(kiln_tracer_follow_body(tracer, instance, bodies[i], &locals[i % 3]), KILN_OK);
        }
        printf(", %u body instances following their bodies\n", count);
    }
    printf("%6s %8s %10s %8s %8s %9s %12s\n", "time", "awake", "islands", "begins", "ends", "step ms",
           gpu ? "gpu sync ms" : "");

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
            /* Once a second: instances follow their bodies, the GPU rebuilds the TLAS. */
            double gpu_ms = 0.0;
            if (gpu) {
                CHECK_STATUS(kiln_tracer_sync_world(tracer, world, NULL), KILN_OK);
                CHECK_STATUS(kiln_tracer_update(tracer), KILN_OK);
                KilnGpuPassTiming t[8];
                uint32_t n_t = 0;
                CHECK_STATUS(kiln_tracer_get_timings(tracer, t, 8, &n_t), KILN_OK);
                for (uint32_t k = 0; k < n_t && k < 8; k++) gpu_ms += t[k].milliseconds;
            }
            printf("%5.1fs %8u %10u %8u %8u %9.3f", (float)frame / 60.0f, counters.awake_body_count,
                   counters.sleeping_island_count, begins, ends, p.total_ms);
            if (gpu) printf(" %12.3f", gpu_ms);
            printf("\n");
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

    if (gpu) {
        /* The picture: the drop zone, seen from above one of its corners. */
        int w = 320, h = 200;
        float extent = spacing * (float)side + 8.0f, mid = 16.0f + 0.5f * spacing * (float)side;
        KilnTraceRay *rays = malloc(sizeof *rays * (size_t)(w * h));
        KilnTraceHit *hits = malloc(sizeof *hits * (size_t)(w * h));
        uint8_t *rgb = malloc((size_t)(3 * w * h));
        const float target[3] = {mid, ground(terrain, mid, mid), mid};
        /* Inside the walls (2 voxels thick, 40 m high). */
        const float eye[3] = {fmaxf(4.0f, mid - 0.45f * extent), target[1] + 0.5f * extent,
                              fmaxf(4.0f, mid - 0.6f * extent)};
        float sun[3] = {0.4f, 0.85f, 0.35f};
        float sl = sqrtf(sun[0] * sun[0] + sun[1] * sun[1] + sun[2] * sun[2]);
        for (int k = 0; k < 3; k++) sun[k] /= sl;
        Camera camera = camera_look_at(eye, target, 45.0f);
        RenderStats stats;
        CHECK_STATUS(kiln_tracer_sync_world(tracer, world, NULL), KILN_OK);
        CHECK_STATUS(render(tracer, &camera, w, h, sun, albedo, rays, hits, rgb, NULL, NULL, &stats), KILN_OK);
        printf("\nGPU render %d x %d: %u of %d camera rays hit, %u in shadow; GPU ms of the shadow rays:\n", w, h,
               stats.primary_hits, w * h, stats.shadowed);
        print_gpu_timings(tracer, "  ");
        CHECK(stats.primary_hits > (uint32_t)(w * h) / 2);
        CHECK(stats.shadowed < stats.primary_hits / 2); /* the sun is high: most of it is lit */
        if (png_path) {
            CHECK(write_png(png_path, w, h, 3, rgb) == 0);
            printf("wrote %s\n", png_path);
        }
        /* GPU rays down onto the terrain see the CPU terrain ray cast's heights (the
         * same triangles), and rays down onto bodies find them where the world says. */
        unsigned agree = 0, samples = 0, found = 0;
        for (unsigned i = 0; i < 64; i++, samples++) {
            float x = 4.0f + 1.87f * (float)i, z = 4.0f + (float)((i * 37) % 120);
            rays[i] = (KilnTraceRay){{x, 200.0f, z}, {0, -1, 0}, 0.0f, INFINITY, 1};
        }
        CHECK_STATUS(kiln_tracer_trace(tracer, rays, samples, KILN_TRACE_CLOSEST, hits), KILN_OK);
        for (unsigned i = 0; i < samples; i++) {
            float cpu = ground(terrain, rays[i].origin.x, rays[i].origin.z);
            agree += hits[i].instance.index1 != 0 && fabsf(200.0f - hits[i].t - cpu) < 1e-3f;
        }
        for (unsigned i = 0; i < count; i++) {
            const Instance *in = &instances[i];
            rays[i] = (KilnTraceRay){{in->position[0], in->position[1] + 1.0f, in->position[2]}, {0, -1, 0}, 0.0f,
                                     2.0f, BODY_MASK};
        }
        CHECK_STATUS(kiln_tracer_trace(tracer, rays, count, KILN_TRACE_CLOSEST, hits), KILN_OK);
        for (unsigned i = 0; i < count; i++) found += hits[i].instance.index1 != 0;
        printf("GPU vs CPU: %u of %u terrain heights agree; %u of %u bodies found by a ray down through them\n", agree,
               samples, found, count);
        CHECK(agree == samples);
        CHECK(found == count);
        uint32_t messages = 0;
        CHECK_STATUS(kiln_tracer_get_validation_messages(tracer, NULL, 0, &messages), KILN_OK);
        CHECK(messages == 0);
        CHECK_STATUS(kiln_tracer_destroy(tracer), KILN_OK);
        free(rays), free(hits), free(rgb);
    }

    CHECK(finite == count);
    CHECK(above == count);
    CHECK(begins >= count); /* every body landed */
    CHECK(drawn.shapes == count && drawn.boxes == count && drawn.nodes == 2 * count - 1);
    /* After 20 s everything sleeps (the last of 1,000, balls and capsules rolling down
     * the hills, stop by 15.3 s). */
    if (frames >= 1200) CHECK(counters.awake_body_count == 0);

    free(instances);
    free(events);
    free(bodies);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK); /* given back by the world */
    for (int s = 0; s < 3; s++) CHECK_STATUS(kiln_shape_destroy(shapes[s]), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(runtime), KILN_OK);
    return check_summary("falling_bodies");
}

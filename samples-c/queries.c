/* queries: a picture of a world drawn with world ray casts, through the C API.
 *
 * Drops 4,096 spheres and cubes on Kiln's test hills (the `rain` scene: 256 x 256
 * voxel columns of 1 m, walled in), steps the world 4 s at 60 Hz until they lie on
 * the ground, then renders it the way a game asks what the player sees: one ray per
 * pixel through `kiln_world_cast_ray_batch` over bodies and terrain at once, and a
 * second batch of shadow rays from every hit towards the sun. Bodies are coloured by
 * kind and terrain by height, lit by the sun with those shadows. Prints rays per
 * second for both batches and writes the PNG when given a directory.
 *
 * Checks that the batch finds what single casts find, that hits lie where the world's
 * bodies are, and that the picture shows both bodies and terrain; exits non-zero
 * when a check fails, so it doubles as a test.
 *
 *   queries [WIDTH HEIGHT] [OUTDIR]   (default 320 x 200, no file) */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln.h"
#include "render.h"
#include "tests/check.h"

enum { SIDE = 64, BODIES = SIDE * SIDE };

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift32: the same scene on every run. */
static float random01(uint32_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return (float)(*state >> 8) / 16777216.0f;
}

static float dot3(KilnVec3 a, KilnVec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }

static uint8_t srgb8(float linear) {
    float c = linear <= 0.0031308f ? 12.92f * linear : 1.055f * powf(linear, 1.0f / 2.4f) - 0.055f;
    c = c < 0.0f ? 0.0f : c > 1.0f ? 1.0f : c;
    return (uint8_t)(c * 255.0f + 0.5f);
}

int main(int argc, char **argv) {
    int width, height;
    const char *outdir;
    image_args(argc, argv, 320, 200, &width, &height, &outdir);

    KilnRuntimeDef rdef = kiln_default_runtime_def();
    KilnRuntimeId rt;
    CHECK_STATUS(kiln_runtime_create(&rdef, &rt), KILN_OK);
    uint32_t workers = 0;
    CHECK_STATUS(kiln_runtime_get_worker_count(rt, &workers), KILN_OK);

    /* The hills, walled in, lent to a world. */
    KilnTerrainDef tdef = kiln_default_terrain_def();
    tdef.voxel_size = 1.0f;
    KilnTerrainId terrain;
    CHECK_STATUS(kiln_terrain_create(&tdef, &terrain), KILN_OK);
    CHECK_STATUS(kiln_terrain_generate_hills(terrain, 256, 7), KILN_OK);
    KilnInt3 walls[4][2] = {{{0, 0, 0}, {255, 40, 1}}, {{0, 0, 254}, {255, 40, 255}},
                            {{0, 0, 0}, {1, 40, 255}}, {{254, 0, 0}, {255, 40, 255}}};
    for (int i = 0; i < 4; i++) {
        CHECK_STATUS(kiln_terrain_fill(terrain, walls[i][0], walls[i][1], KILN_MATERIAL_ROCK, NULL), KILN_OK);
    }
    KilnWorldDef wdef = kiln_default_world_def();
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(&wdef, &world), KILN_OK);
    CHECK_STATUS(kiln_world_set_terrain(world, terrain), KILN_OK);

    /* 4,096 bodies on a grid 35-50 m up, spheres and cubes in turn. */
    KilnShapeId ball, cube;
    CHECK_STATUS(kiln_shape_create_sphere((KilnVec3){0, 0, 0}, 0.5f, &ball), KILN_OK);
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 0.5f, 0.5f}, &cube), KILN_OK);
    static KilnBodyId bodies[BODIES];
    uint32_t state = 7;
    const float spacing = 240.0f / SIDE;
    for (int i = 0; i < BODIES; i++) {
        KilnBodyDef bdef = kiln_default_body_def();
        bdef.transform.position = (KilnVec3){8.0f + (i % SIDE + 0.5f) * spacing, 35.0f + 15.0f * random01(&state),
                                             8.0f + (i / SIDE + 0.5f) * spacing};
        CHECK_STATUS(kiln_body_create(world, &bdef, &bodies[i]), KILN_OK);
        KilnShapeDef sdef = kiln_default_shape_def();
        CHECK_STATUS(kiln_body_add_shape(bodies[i], i % 2 ? cube : ball, &sdef, NULL), KILN_OK);
        CHECK_STATUS(kiln_body_set_user_data(bodies[i], (void *)(intptr_t)(i % 2 + 1)), KILN_OK);
    }
    double start = now_seconds();
    for (int step = 0; step < 240; step++) {
        CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
    }
    printf("queries: %d bodies dropped on the hills, 4 s stepped in %.2f s on %u workers\n", BODIES,
           now_seconds() - start, workers);

    /* One ray per pixel from a camera over a corner of the hills. */
    const float eye[3] = {20.0f, 55.0f, 20.0f}, target[3] = {110.0f, 5.0f, 110.0f};
    Camera camera = camera_look_at(eye, target, 55.0f);
    uint32_t pixels = (uint32_t)(width * height);
    KilnTraceRay *trace_rays = malloc(sizeof *trace_rays * pixels);
    KilnRay *rays = malloc(sizeof *rays * pixels);
    KilnRay *shadow_rays = malloc(sizeof *shadow_rays * pixels);
    KilnWorldRayHit *hits = malloc(sizeof *hits * pixels);
    KilnWorldRayHit *shadow_hits = malloc(sizeof *shadow_hits * pixels);
    uint8_t *rgb = malloc((size_t)pixels * 3);
    CHECK(trace_rays && rays && shadow_rays && hits && shadow_hits && rgb);
    if (!(trace_rays && rays && shadow_rays && hits && shadow_hits && rgb)) return check_summary("queries");
    camera_rays(&camera, width, height, trace_rays);
    for (uint32_t i = 0; i < pixels; i++) rays[i] = (KilnRay){trace_rays[i].origin, trace_rays[i].direction};

    start = now_seconds();
    CHECK_STATUS(kiln_world_cast_ray_batch(world, rt, rays, pixels, 400.0f, NULL, hits), KILN_OK);
    double primary = now_seconds() - start;

    /* Shadow rays towards the sun from just off each hit. */
    const KilnVec3 sun = {0.36f, 0.83f, 0.42f};
    uint32_t lit_count = 0;
    for (uint32_t i = 0; i < pixels; i++) {
        KilnVec3 p = hits[i].point, n = hits[i].normal;
        shadow_rays[i] = (KilnRay){{p.x + n.x * 1e-2f, p.y + n.y * 1e-2f, p.z + n.z * 1e-2f}, sun};
        if (!hits[i].hit) shadow_rays[i].origin = (KilnVec3){0, 500, 0}; /* the sky: a ray that meets nothing */
    }
    start = now_seconds();
    CHECK_STATUS(kiln_world_cast_ray_batch(world, rt, shadow_rays, pixels, 400.0f, NULL, shadow_hits), KILN_OK);
    double shadows = now_seconds() - start;

    uint32_t on_bodies = 0, on_terrain = 0;
    for (uint32_t i = 0; i < pixels; i++) {
        const KilnWorldRayHit *h = &hits[i];
        float albedo[3] = {0.45f, 0.62f, 0.85f}; /* sky */
        float light = 1.0f;
        if (h->hit) {
            if (h->target.kind == KILN_QUERY_TARGET_BODY) {
                on_bodies++;
                void *kind = NULL;
                CHECK_STATUS(kiln_body_get_user_data(h->target.body, &kind), KILN_OK);
                int is_cube = (intptr_t)kind == 2;
                albedo[0] = is_cube ? 0.80f : 0.75f, albedo[1] = is_cube ? 0.35f : 0.70f, albedo[2] = is_cube ? 0.20f : 0.25f;
            } else {
                on_terrain++;
                float t = h->point.y / 30.0f;
                t = t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
                albedo[0] = 0.25f + 0.35f * t, albedo[1] = 0.45f + 0.15f * t, albedo[2] = 0.20f + 0.25f * t;
            }
            float cosine = dot3(h->normal, sun);
            int lit = !shadow_hits[i].hit;
            lit_count += lit;
            light = 0.25f + 0.9f * (cosine > 0.0f && lit ? cosine : 0.0f);
        }
        for (int c = 0; c < 3; c++) rgb[i * 3 + c] = srgb8(albedo[c] * light);
    }
    printf("queries: %ux%u camera rays in %.1f ms = %.2f M rays/s (%u on bodies, %u on terrain); shadow rays %.1f ms "
           "= %.2f M rays/s (%u lit)\n",
           width, height, primary * 1e3, pixels / primary * 1e-6, on_bodies, on_terrain, shadows * 1e3,
           pixels / shadows * 1e-6, lit_count);
    CHECK(on_bodies > pixels / 100 && on_terrain > pixels / 4);
    CHECK(lit_count > 0 && lit_count < on_bodies + on_terrain);

    /* The batch finds what single casts find, and body hits lie on their bodies. */
    for (uint32_t i = 0; i < pixels; i += 97) {
        KilnWorldRayHit one;
        CHECK_STATUS(kiln_world_cast_ray(world, &rays[i], 400.0f, NULL, &one), KILN_OK);
        CHECK(one.hit == hits[i].hit && one.distance == hits[i].distance && one.target.kind == hits[i].target.kind);
        if (one.hit && one.target.kind == KILN_QUERY_TARGET_BODY) {
            KilnTransform xf;
            CHECK_STATUS(kiln_body_get_transform(one.target.body, &xf), KILN_OK);
            float dx = one.point.x - xf.position.x, dy = one.point.y - xf.position.y, dz = one.point.z - xf.position.z;
            CHECK(sqrtf(dx * dx + dy * dy + dz * dz) <= 0.87f); /* within a cube's half diagonal */
        }
    }

    if (outdir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/queries.png", outdir);
        CHECK(write_png(path, width, height, 3, rgb) == 0);
        printf("queries: wrote %s\n", path);
    }
    free(trace_rays), free(rays), free(shadow_rays), free(hits), free(shadow_hits), free(rgb);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK); /* given back by the world */
    CHECK_STATUS(kiln_shape_destroy(ball), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(cube), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(rt), KILN_OK);
    return check_summary("queries");
}

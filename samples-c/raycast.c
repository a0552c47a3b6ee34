/* raycast: ray casts and triangle queries against voxel terrain through the C API.
 *
 * Builds Kiln's test hills (128 x 128 columns of 0.5 m voxels), casts a few rays and
 * prints their hits, then casts 100,000 random rays as one batch on a runtime's
 * workers and prints rays per second and the chunk mesh cache's figures (meshes are
 * built only where rays land). It lists the triangles under a box, digs a hole and
 * shows the next cast see it at once, and runs the same batch with compact meshes.
 * Bad arguments get a status and a message. Exits non-zero when an answer is wrong,
 * so it doubles as a test. Optional argument: the number of batch rays. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln.h"
#include "tests/check.h"

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift32: the same rays on every run. */
static float random01(uint32_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return (float)(*state >> 8) / 16777216.0f;
}

static void print_hit(const char *what, KilnTerrainRayHit h) {
    if (!h.hit) {
        printf("  %-28s miss\n", what);
        return;
    }
    printf("  %-28s %6.2f m to (%6.2f %6.2f %6.2f), normal (%5.2f %5.2f %5.2f), material %u, chunk (%d %d %d)\n",
           what, h.distance, h.point.x, h.point.y, h.point.z, h.normal.x, h.normal.y, h.normal.z, h.material,
           h.chunk.x, h.chunk.y, h.chunk.z);
}

static void print_cache(KilnTerrainId terrain) {
    KilnMeshCacheStats s;
    CHECK_STATUS(kiln_terrain_get_mesh_cache_stats(terrain, &s), KILN_OK);
    printf("  mesh cache: %u chunks, %llu triangles, %.2f MiB of %.0f MiB, %llu built, %llu evicted (%s)\n", s.chunks,
           (unsigned long long)s.triangles, s.bytes / 1048576.0, s.budget / 1048576.0,
           (unsigned long long)s.builds, (unsigned long long)s.evictions,
           s.mesh_mode == KILN_MESH_MODE_COMPACT ? "compact" : "full");
    CHECK(s.bytes <= s.budget);
}

/* Casts `count` random rays from above the hills as one batch; returns the hits. */
static uint32_t batch(KilnTerrainId terrain, KilnRuntimeId runtime, uint32_t count, const char *label) {
    KilnRay *rays = malloc(sizeof(KilnRay) * count);
    KilnTerrainRayHit *hits = malloc(sizeof(KilnTerrainRayHit) * count);
    CHECK(rays != NULL && hits != NULL);
    if (!rays || !hits) return 0;
    uint32_t state = 2026;
    for (uint32_t i = 0; i < count; i++) {
        rays[i].origin = (KilnVec3){4.0f + 56.0f * random01(&state), 20.0f, 4.0f + 56.0f * random01(&state)};
        rays[i].direction = (KilnVec3){random01(&state) - 0.5f, -1.0f, random01(&state) - 0.5f};
    }
    double start = now_seconds();
    CHECK_STATUS(kiln_terrain_ray_cast_batch(terrain, runtime, rays, count, 100.0f, hits), KILN_OK);
    double first = now_seconds() - start;
    start = now_seconds();
    CHECK_STATUS(kiln_terrain_ray_cast_batch(terrain, runtime, rays, count, 100.0f, hits), KILN_OK);
    double warm = now_seconds() - start;
    uint32_t hit_count = 0;
    for (uint32_t i = 0; i < count; i++) {
        hit_count += hits[i].hit;
        /* Rays start in the air: the first surface they meet faces them. */
        const KilnVec3 n = hits[i].normal, d = rays[i].direction;
        CHECK(!hits[i].hit || n.x * d.x + n.y * d.y + n.z * d.z <= 0.0f);
    }
    /* The batch interleaves its rays' walks; each must find what a single cast
     * finds, to the bit. */
    for (uint32_t i = 0; i < count; i += 37) {
        KilnTerrainRayHit one;
        CHECK_STATUS(kiln_terrain_ray_cast(terrain, &rays[i], 100.0f, &one), KILN_OK);
        CHECK(one.hit == hits[i].hit && one.material == hits[i].material && one.triangle == hits[i].triangle);
        CHECK(one.distance == hits[i].distance && one.point.x == hits[i].point.x && one.point.y == hits[i].point.y &&
              one.point.z == hits[i].point.z);
        CHECK(one.normal.x == hits[i].normal.x && one.normal.y == hits[i].normal.y && one.normal.z == hits[i].normal.z);
        CHECK(one.chunk.x == hits[i].chunk.x && one.chunk.y == hits[i].chunk.y && one.chunk.z == hits[i].chunk.z);
    }
    printf("%s: %u rays, %u hits; first batch (meshing on the way) %.1f ms = %.2f M rays/s, warm cache %.1f ms = "
           "%.2f M rays/s\n",
           label, count, hit_count, first * 1e3, count / first * 1e-6, warm * 1e3, count / warm * 1e-6);
    free(rays);
    free(hits);
    return hit_count;
}

int main(int argc, char **argv) {
    uint32_t count = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 100000;
    if (count == 0) count = 1;

    KilnRuntimeDef rdef = kiln_default_runtime_def();
    KilnRuntimeId runtime;
    CHECK_STATUS(kiln_runtime_create(&rdef, &runtime), KILN_OK);
    uint32_t workers = 0;
    CHECK_STATUS(kiln_runtime_get_worker_count(runtime, &workers), KILN_OK);

    KilnTerrainDef def = kiln_default_terrain_def();
    def.voxel_size = 0.5f;
    KilnTerrainId terrain;
    CHECK_STATUS(kiln_terrain_create(&def, &terrain), KILN_OK);
    CHECK_STATUS(kiln_terrain_generate_hills(terrain, 128, 1), KILN_OK);
    CHECK_STATUS(kiln_terrain_regenerate(terrain, runtime, NULL), KILN_OK);

    printf("single rays:\n");
    KilnRay down = {{20.25f, 30.0f, 20.25f}, {0.0f, -1.0f, 0.0f}};
    KilnTerrainRayHit hit;
    CHECK_STATUS(kiln_terrain_ray_cast(terrain, &down, 100.0f, &hit), KILN_OK);
    print_hit("straight down", hit);
    CHECK(hit.hit && hit.normal.y > 0.5f && hit.material >= KILN_MATERIAL_ROCK);
    KilnRay slant = {{-10.0f, 25.0f, -10.0f}, {1.0f, -0.6f, 1.0f}};
    CHECK_STATUS(kiln_terrain_ray_cast(terrain, &slant, 200.0f, &hit), KILN_OK);
    print_hit("slanting in from outside", hit);
    CHECK(hit.hit);
    KilnRay up = {{20.25f, 30.0f, 20.25f}, {0.0f, 1.0f, 0.0f}};
    CHECK_STATUS(kiln_terrain_ray_cast(terrain, &up, 100.0f, &hit), KILN_OK);
    print_hit("straight up into the sky", hit);
    CHECK(!hit.hit);
    KilnRay inside = {{20.25f, -2.0f, 20.25f}, {0.0f, 1.0f, 0.0f}};
    CHECK_STATUS(kiln_terrain_ray_cast(terrain, &inside, 100.0f, &hit), KILN_OK);
    print_hit("up from inside the rock", hit);
    CHECK(hit.hit && hit.normal.y > 0.0f); /* the surface seen from behind */
    print_cache(terrain);

    printf("batch on %u workers:\n", workers);
    uint32_t full_hits = batch(terrain, runtime, count, "  full meshes");
    CHECK(full_hits > count * 9 / 10);
    print_cache(terrain);

    /* Triangles under a 1 m box on the ground where the first ray landed. */
    CHECK_STATUS(kiln_terrain_ray_cast(terrain, &down, 100.0f, &hit), KILN_OK);
    KilnAabb box = {{hit.point.x - 0.5f, hit.point.y - 0.5f, hit.point.z - 0.5f},
                    {hit.point.x + 0.5f, hit.point.y + 0.5f, hit.point.z + 0.5f}};
    uint32_t triangles = 0;
    CHECK_STATUS(kiln_terrain_query_triangles(terrain, runtime, &box, NULL, 0, &triangles), KILN_OK);
    KilnTerrainTriangle listed[64];
    uint32_t again = 0;
    CHECK_STATUS(kiln_terrain_query_triangles(terrain, runtime, &box, listed, 64, &again), KILN_OK);
    printf("triangles under a 1 m box on the ground: %u (first: material %u, chunk (%d %d %d))\n", triangles,
           listed[0].material, listed[0].chunk.x, listed[0].chunk.y, listed[0].chunk.z);
    CHECK(triangles > 0 && again == triangles);

    /* Dig a pit where the ray landed: the next cast sees it, no regenerate needed. */
    float before = hit.distance;
    KilnInt3 voxel = {(int)floorf(hit.point.x / 0.5f), (int)floorf(hit.point.y / 0.5f), (int)floorf(hit.point.z / 0.5f)};
    KilnInt3 lo = {voxel.x - 2, voxel.y - 6, voxel.z - 2}, hi = {voxel.x + 2, voxel.y + 2, voxel.z + 2};
    CHECK_STATUS(kiln_terrain_fill(terrain, lo, hi, KILN_MATERIAL_AIR, NULL), KILN_OK);
    CHECK_STATUS(kiln_terrain_ray_cast(terrain, &down, 100.0f, &hit), KILN_OK);
    printf("after digging a pit: %.2f m instead of %.2f m\n", hit.distance, before);
    CHECK(hit.hit && hit.distance > before + 1.0f);
    CHECK_STATUS(kiln_terrain_regenerate(terrain, runtime, NULL), KILN_OK);

    /* A small budget: the cache stays under it. */
    CHECK_STATUS(kiln_terrain_set_mesh_cache_budget(terrain, 256 * 1024), KILN_OK);
    batch(terrain, runtime, count / 10 + 1, "  full meshes, 256 KiB cache");
    print_cache(terrain);

    /* The same batch with compact (16-bit) meshes. */
    KilnTerrainId compact;
    def.mesh_mode = KILN_MESH_MODE_COMPACT;
    CHECK_STATUS(kiln_terrain_create(&def, &compact), KILN_OK);
    CHECK_STATUS(kiln_terrain_generate_hills(compact, 128, 1), KILN_OK);
    CHECK_STATUS(kiln_terrain_regenerate(compact, runtime, NULL), KILN_OK);
    uint32_t compact_hits = batch(compact, runtime, count, "  compact meshes");
    CHECK(compact_hits == full_hits); /* same rays, same terrain before the pit */
    print_cache(compact);

    /* Bad input: a status and a message, nothing written. */
    KilnRay bad = {{NAN, 0.0f, 0.0f}, {0.0f, -1.0f, 0.0f}};
    CHECK_STATUS(kiln_terrain_ray_cast(terrain, &bad, 1.0f, &hit), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("finite origin");
    CHECK_STATUS(kiln_terrain_ray_cast(terrain, &down, -1.0f, &hit), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("max_distance");
    CHECK_STATUS(kiln_terrain_ray_cast(terrain, NULL, 1.0f, &hit), KILN_ERROR_NULL_POINTER);
    KilnRay pair[2] = {down, {{0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f}}};
    KilnTerrainRayHit pair_hits[2];
    CHECK_STATUS(kiln_terrain_ray_cast_batch(terrain, runtime, pair, 2, 10.0f, pair_hits), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("rays[1]");
    KilnAabb inverted = {box.max, box.min};
    CHECK_STATUS(kiln_terrain_query_triangles(terrain, runtime, &inverted, NULL, 0, &triangles),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("min <= max");
    CHECK_STATUS(kiln_terrain_query_triangles(terrain, runtime, &box, NULL, 4, &triangles), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_terrain_get_mesh_cache_stats(terrain, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_terrain_destroy(compact), KILN_OK);
    CHECK_STATUS(kiln_terrain_ray_cast(compact, &down, 1.0f, &hit), KILN_ERROR_INVALID_HANDLE);

    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(runtime), KILN_OK);
    return check_summary("raycast");
}

/* terrain_rays: the terrain's ray casts with and without region trees, from C.
 *
 * Rays over Kiln's test hills (256 x 256 columns: 2 x 2 regions of 16^3 chunks) are
 * cast with the region trees off, as the reference, then on until trees are built:
 * every hit must match the reference to the bit, batch and single casts alike, on the
 * calling thread and on 3 workers. A crater dug across a region border drops the trees
 * it re-shapes (the casts see it at once and still match the chunk walk); the trees
 * come back after the cool-down; a zero budget holds no trees. Bad arguments get a
 * status and a message. Exits non-zero when an answer is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"
#include "check.h"

#define RAYS 4000u
#define MAX_DISTANCE 400.0f

/* xorshift32: the same rays on every run. */
static float random01(uint32_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return (float)(*state >> 8) / 16777216.0f;
}

/* Rays over the whole hills in metres: steep and shallow rays from above, level rays
 * through the hills across region borders, and rays starting inside the rock. */
static void make_rays(KilnRay *rays, float voxel) {
    uint32_t state = 91;
    const float size = 256.0f * voxel;
    for (uint32_t i = 0; i < RAYS; i++) {
        float x = size * random01(&state), z = size * random01(&state);
        float dx = random01(&state) - 0.5f, dz = random01(&state) - 0.5f;
        switch (i % 4) {
        case 0: rays[i] = (KilnRay){{x, 40.0f * voxel, z}, {0.3f * dx, -1.0f, 0.3f * dz}}; break;
        case 1: rays[i] = (KilnRay){{x, 34.0f * voxel, z}, {dx, -0.15f, dz}}; break;
        case 2: rays[i] = (KilnRay){{x, (10.0f + 14.0f * random01(&state)) * voxel, z}, {dx, 0.0f, dz}}; break;
        default: rays[i] = (KilnRay){{x, -4.0f * voxel, z}, {dx, random01(&state), dz}}; break;
        }
    }
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static int same_hit(const KilnTerrainRayHit *a, const KilnTerrainRayHit *b) {
    return a->hit == b->hit && a->material == b->material && same_bits(a->distance, b->distance) &&
           same_bits(a->point.x, b->point.x) && same_bits(a->point.y, b->point.y) &&
           same_bits(a->point.z, b->point.z) && same_bits(a->normal.x, b->normal.x) &&
           same_bits(a->normal.y, b->normal.y) && same_bits(a->normal.z, b->normal.z) &&
           a->chunk.x == b->chunk.x && a->chunk.y == b->chunk.y && a->chunk.z == b->chunk.z &&
           a->triangle == b->triangle;
}

/* How many of `count` hits differ from `expected`. */
static uint32_t differences(const KilnTerrainRayHit *hits, const KilnTerrainRayHit *expected, uint32_t count) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < count; i++) n += !same_hit(&hits[i], &expected[i]);
    return n;
}

static KilnMeshCacheStats region_stats(KilnTerrainId terrain) {
    KilnMeshCacheStats s;
    memset(&s, 0, sizeof s);
    CHECK_STATUS(kiln_terrain_get_ray_region_stats(terrain, &s), KILN_OK);
    CHECK(s.bytes <= s.budget);
    return s;
}

static void print_regions(const char *what, KilnMeshCacheStats s) {
    printf("  %-34s %u trees, %llu triangles, %.2f MiB, %llu built, %llu evicted, %llu dropped by edits\n", what,
           s.chunks, (unsigned long long)s.triangles, s.bytes / 1048576.0, (unsigned long long)s.builds,
           (unsigned long long)s.evictions, (unsigned long long)s.invalidations);
}

/* Casts the batch `rounds` times (region trees become due as rays reach regions). */
static void cast(KilnTerrainId terrain, KilnRuntimeId runtime, const KilnRay *rays, KilnTerrainRayHit *hits,
                 int rounds) {
    for (int r = 0; r < rounds; r++)
        CHECK_STATUS(kiln_terrain_ray_cast_batch(terrain, runtime, rays, RAYS, MAX_DISTANCE, hits), KILN_OK);
}

int main(void) {
    KilnRuntimeDef rdef = kiln_default_runtime_def();
    rdef.thread_count = 3;
    KilnRuntimeId runtime;
    CHECK_STATUS(kiln_runtime_create(&rdef, &runtime), KILN_OK);
    const KilnRuntimeId caller = {0, 0};

    KilnTerrainDef def = kiln_default_terrain_def();
    KilnTerrainId terrain;
    CHECK_STATUS(kiln_terrain_create(&def, &terrain), KILN_OK);
    CHECK_STATUS(kiln_terrain_generate_hills(terrain, 256, 5), KILN_OK);
    CHECK_STATUS(kiln_terrain_regenerate(terrain, runtime, NULL), KILN_OK);

    KilnRay *rays = malloc(sizeof(KilnRay) * RAYS);
    KilnTerrainRayHit *reference = malloc(sizeof(KilnTerrainRayHit) * RAYS);
    KilnTerrainRayHit *hits = malloc(sizeof(KilnTerrainRayHit) * RAYS);
    if (!rays || !reference || !hits) return 1;
    make_rays(rays, def.voxel_size);

    /* The reference: the chunk walk alone. */
    CHECK_STATUS(kiln_terrain_set_ray_regions(terrain, false), KILN_OK);
    cast(terrain, runtime, rays, reference, 3);
    KilnMeshCacheStats s = region_stats(terrain);
    CHECK(s.chunks == 0 && s.builds == 0 && s.bytes == 0);
    uint32_t hit_count = 0;
    for (uint32_t i = 0; i < RAYS; i++) hit_count += reference[i].hit;
    printf("terrain_rays: %u rays, %u hit the hills\n", RAYS, hit_count);
    CHECK(hit_count > RAYS / 2 && hit_count < RAYS);

    /* Trees on: built as rays reach regions, the same hits throughout. */
    CHECK_STATUS(kiln_terrain_set_ray_regions(terrain, true), KILN_OK);
    for (int round = 0; round < 3; round++) {
        cast(terrain, caller, rays, hits, 1);
        CHECK(differences(hits, reference, RAYS) == 0);
    }
    s = region_stats(terrain);
    print_regions("after three batches:", s);
    CHECK(s.chunks >= 4 && s.builds == s.chunks && s.triangles > 0 && s.evictions == 0);
    cast(terrain, runtime, rays, hits, 1);
    CHECK(differences(hits, reference, RAYS) == 0);
    uint32_t single_misses = 0;
    for (uint32_t i = 0; i < RAYS; i += 7) {
        KilnTerrainRayHit one;
        CHECK_STATUS(kiln_terrain_ray_cast(terrain, &rays[i], MAX_DISTANCE, &one), KILN_OK);
        single_misses += !same_hit(&one, &reference[i]);
    }
    CHECK(single_misses == 0);
    /* Rarely reached regions may have warmed up since; none was built twice. */
    s = region_stats(terrain);
    CHECK(s.builds == s.chunks && s.evictions == 0 && s.invalidations == 0);
    const uint32_t trees = s.chunks;

    /* A crater across the border of the four regions: its trees are dropped, the
     * casts see the crater at once and still agree with the chunk walk. */
    uint64_t changed = 0;
    CHECK_STATUS(kiln_terrain_fill(terrain, (KilnInt3){112, 0, 112}, (KilnInt3){143, 40, 143}, KILN_MATERIAL_AIR,
                                   &changed),
                 KILN_OK);
    CHECK(changed > 0);
    CHECK_STATUS(kiln_terrain_regenerate(terrain, runtime, NULL), KILN_OK);
    cast(terrain, runtime, rays, hits, 2);
    s = region_stats(terrain);
    print_regions("after the crater:", s);
    CHECK(s.invalidations >= 4 && s.chunks + 4 <= trees); /* cooling down: not rebuilt */
    CHECK(differences(hits, reference, RAYS) > 0); /* the crater is seen */
    KilnTerrainRayHit *dug = malloc(sizeof(KilnTerrainRayHit) * RAYS);
    if (!dug) return 1;
    CHECK_STATUS(kiln_terrain_set_ray_regions(terrain, false), KILN_OK);
    cast(terrain, runtime, rays, dug, 1);
    CHECK(differences(hits, dug, RAYS) == 0);
    CHECK(region_stats(terrain).chunks == 0);

    /* After the cool-down (regenerations without edits) the trees come back. */
    CHECK_STATUS(kiln_terrain_set_ray_regions(terrain, true), KILN_OK);
    for (int i = 0; i < 31; i++) CHECK_STATUS(kiln_terrain_regenerate(terrain, runtime, NULL), KILN_OK);
    uint64_t builds = region_stats(terrain).builds;
    cast(terrain, runtime, rays, hits, 3);
    s = region_stats(terrain);
    print_regions("after the cool-down:", s);
    CHECK(s.builds > builds && s.chunks >= 4);
    CHECK(differences(hits, dug, RAYS) == 0);

    /* A zero budget holds no trees (nor meshes) and changes no hit. */
    CHECK_STATUS(kiln_terrain_set_mesh_cache_budget(terrain, 0), KILN_OK);
    s = region_stats(terrain);
    CHECK(s.chunks == 0 && s.bytes == 0 && s.budget == 0 && s.evictions > 0);
    cast(terrain, runtime, rays, hits, 2);
    CHECK(differences(hits, dug, RAYS) == 0);
    CHECK(region_stats(terrain).chunks == 0);

    /* Bad input: a status and a message, nothing written. */
    CHECK_STATUS(kiln_terrain_get_ray_region_stats(terrain, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_MESSAGE("out_stats");
    const KilnTerrainId null_terrain = {0, 0};
    CHECK_STATUS(kiln_terrain_set_ray_regions(null_terrain, true), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_terrain_get_ray_region_stats(null_terrain, &s), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK);
    memset(&s, 0xAB, sizeof s);
    CHECK_STATUS(kiln_terrain_set_ray_regions(terrain, false), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_terrain_get_ray_region_stats(terrain, &s), KILN_ERROR_INVALID_HANDLE);
    CHECK(s.chunks == 0xABABABABu);

    CHECK_STATUS(kiln_runtime_destroy(runtime), KILN_OK);
    free(rays);
    free(reference);
    free(hits);
    free(dug);
    return check_summary("terrain_rays");
}

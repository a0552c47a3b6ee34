/* octree_pick: what a level editor asks under the cursor, through the C API.
 *
 * Builds three octrees of different positions and sizes: a 16 m ground slab edited
 * by path, a 4 m tower loaded from a compact byte description and overlapping the
 * ground, and a 1 m crate nested inside the tower's box. Prints the pick of a few
 * rays (octree, cube path, face, hit point, nearest corner and edge, distance), the
 * same at a coarse editor grid, then picks a 256 x 256 camera image in one batch on
 * a runtime's workers and reports picks per second. Exits non-zero when an answer is
 * wrong, so it doubles as a test. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln.h"
#include "tests/check.h"

static const char *const FACE_NAMES[6] = {"left", "right", "front", "back", "top", "bottom"};

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static KilnOctreeId make_octree(KilnOctreeSetId set, float x, float y, float z, float size) {
    KilnOctreeDef def = kiln_default_octree_def();
    def.position = (KilnVec3){x, y, z};
    def.size = size;
    KilnOctreeId id = {0, 0, 0};
    CHECK_STATUS(kiln_octree_create(set, &def, &id), KILN_OK);
    return id;
}

static void print_pick(const char *what, KilnOctreePick p) {
    if (!p.hit) {
        printf("  %-26s miss\n", what);
        return;
    }
    char path[64] = "root";
    int at = 0;
    for (uint32_t i = 0; i < p.depth; i++) at += snprintf(path + at, sizeof path - (size_t)at, "%s%u", i ? "." : "", p.path[i]);
    printf("  %-26s octree %u cube %-8s face %-6s at (%.2f, %.2f, %.2f) corner %u edge %2u distance %.2f\n", what,
           p.octree.index1, path, FACE_NAMES[p.face], p.point.x, p.point.y, p.point.z, p.corner, p.edge, p.distance);
}

static KilnOctreePick pick(KilnOctreeSetId set, KilnVec3 origin, KilnVec3 direction, uint32_t max_depth) {
    KilnRay ray = {origin, direction};
    KilnOctreePick p;
    CHECK_STATUS(kiln_octree_pick(set, &ray, INFINITY, max_depth, &p), KILN_OK);
    return p;
}

int main(void) {
    KilnOctreeSetId set;
    CHECK_STATUS(kiln_octree_set_create(&set), KILN_OK);

    /* Ground: a 16 m cube at y = -8 whose lower half (children 0, 1, 4, 5) is solid,
     * with a 2 m pit dug at depth 3. */
    KilnOctreeId ground = make_octree(set, -8.0f, -8.0f, -8.0f, 16.0f);
    const uint8_t lower[4] = {0, 1, 4, 5};
    for (int i = 0; i < 4; i++) CHECK_STATUS(kiln_octree_set_cube(set, ground, &lower[i], 1, KILN_CUBE_SOLID), KILN_OK);
    const uint8_t pit[3] = {5, 2, 2}; /* x [0, 2), y [-2, 0), z [0, 2) */
    CHECK_STATUS(kiln_octree_set_cube(set, ground, pit, 3, KILN_CUBE_EMPTY), KILN_OK);

    /* Tower: 4 m at (4, -1, 4), loaded from bytes (2 bits per cube in pre-order):
     * an octant whose lower children (0, 1, 4, 5) are solid and whose upper ones are
     * octants with only their child 0 solid. */
    KilnOctreeId tower = make_octree(set, 4.0f, -1.0f, 4.0f, 4.0f);
    const uint8_t tower_bytes[] = {
        0x96, 0x01, 0x00, 0x06, 0x00, 0x94, 0x01, 0x00, 0x06, 0x00, 0x00,
    };
    CHECK_STATUS(kiln_octree_load(set, tower, tower_bytes, sizeof tower_bytes), KILN_OK);
    uint32_t saved = 0;
    CHECK_STATUS(kiln_octree_save(set, tower, NULL, 0, &saved), KILN_OK);
    CHECK(saved == sizeof tower_bytes);

    /* Crate: 1 m, solid, nested in the tower's box and overlapping one of its cubes. */
    KilnOctreeId crate = make_octree(set, 4.5f, 1.5f, 4.5f, 1.0f);
    CHECK_STATUS(kiln_octree_set_cube(set, crate, NULL, 0, KILN_CUBE_SOLID), KILN_OK);

    printf("octree_pick: ground (16 m), tower (4 m, %u description bytes), crate (1 m)\n", saved);
    KilnVec3 down = {0.0f, -1.0f, 0.0f};

    KilnOctreePick p = pick(set, (KilnVec3){-4.5f, 20.0f, -3.2f}, down, KILN_OCTREE_MAX_DEPTH);
    print_pick("down onto the ground", p);
    CHECK(p.hit && p.octree.index1 == ground.index1 && p.face == KILN_FACE_TOP && p.depth == 1);
    CHECK(fabsf(p.distance - 20.0f) < 1e-5f);

    p = pick(set, (KilnVec3){1.0f, 20.0f, 1.0f}, down, KILN_OCTREE_MAX_DEPTH);
    print_pick("down into the pit", p);
    CHECK(p.hit && p.octree.index1 == ground.index1 && p.depth == 3 && fabsf(p.point.y + 2.0f) < 1e-5f);

    p = pick(set, (KilnVec3){1.0f, 20.0f, 1.0f}, down, 1);
    print_pick("same, editor grid depth 1", p);
    CHECK(p.hit && p.depth == 1 && fabsf(p.point.y) < 1e-5f);

    p = pick(set, (KilnVec3){4.6f, 20.0f, 4.6f}, down, KILN_OCTREE_MAX_DEPTH);
    print_pick("down onto the crate", p);
    CHECK(p.hit && p.octree.index1 == crate.index1 && p.face == KILN_FACE_TOP && p.corner == 2);

    p = pick(set, (KilnVec3){-6.0f, 0.5f, 5.0f}, (KilnVec3){1.0f, 0.0f, 0.0f}, KILN_OCTREE_MAX_DEPTH);
    print_pick("sideways into the tower", p);
    CHECK(p.hit && p.octree.index1 == tower.index1 && p.face == KILN_FACE_LEFT && fabsf(p.distance - 10.0f) < 1e-5f);

    p = pick(set, (KilnVec3){2.0f, 30.0f, 2.0f}, (KilnVec3){0.3f, 1.0f, 0.1f}, KILN_OCTREE_MAX_DEPTH);
    print_pick("up into the sky", p);
    CHECK(!p.hit);

    /* A camera image in one batch on the runtime's workers. */
    enum { W = 256, H = 256 };
    KilnRay *rays = malloc(sizeof(KilnRay) * W * H);
    KilnOctreePick *picks = malloc(sizeof(KilnOctreePick) * W * H);
    if (!rays || !picks) return 2;
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            KilnVec3 eye = {-14.0f, 12.0f, -14.0f};
            KilnVec3 dir = {1.0f + 0.8f * ((float)x / W - 0.5f), -0.8f + 0.8f * ((float)y / H - 0.5f),
                            1.0f - 0.8f * ((float)x / W - 0.5f)};
            rays[y * W + x] = (KilnRay){eye, dir};
        }
    }
    KilnRuntimeDef rdef = kiln_default_runtime_def();
    KilnRuntimeId runtime;
    CHECK_STATUS(kiln_runtime_create(&rdef, &runtime), KILN_OK);
    uint32_t workers = 0;
    CHECK_STATUS(kiln_runtime_get_worker_count(runtime, &workers), KILN_OK);
    double t0 = now_seconds();
    CHECK_STATUS(kiln_octree_pick_batch(set, runtime, rays, W * H, INFINITY, KILN_OCTREE_MAX_DEPTH, picks), KILN_OK);
    double seconds = now_seconds() - t0;
    int hits[3] = {0, 0, 0};
    for (int i = 0; i < W * H; i++) {
        if (!picks[i].hit) continue;
        hits[picks[i].octree.index1 == ground.index1 ? 0 : picks[i].octree.index1 == tower.index1 ? 1 : 2]++;
    }
    printf("batch: %d picks on %u workers in %.2f ms (%.2f M picks/s): ground %d, tower %d, crate %d, sky %d\n",
           W * H, workers, seconds * 1e3, W * H / seconds / 1e6, hits[0], hits[1], hits[2],
           W * H - hits[0] - hits[1] - hits[2]);
    CHECK(hits[0] > 0 && hits[1] > 0 && hits[2] > 0);
    /* Every batch result equals the single pick. */
    int same = 1;
    for (int i = 0; i < W * H; i += 97) {
        KilnOctreePick single = pick(set, rays[i].origin, rays[i].direction, KILN_OCTREE_MAX_DEPTH);
        same &= single.hit == picks[i].hit && single.distance == picks[i].distance && single.face == picks[i].face;
    }
    CHECK(same);

    /* Bad input: a status and a message, nothing written. */
    KilnRay bad = {{0.0f, NAN, 0.0f}, {0.0f, -1.0f, 0.0f}};
    KilnOctreePick untouched = {.distance = -1.0f};
    CHECK_STATUS(kiln_octree_pick(set, &bad, INFINITY, 16, &untouched), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("origin");
    CHECK(untouched.distance == -1.0f);
    const uint8_t bad_path[1] = {9};
    CHECK_STATUS(kiln_octree_set_cube(set, ground, bad_path, 1, KILN_CUBE_SOLID), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("0..=7");
    CHECK_STATUS(kiln_octree_set_cube(set, ground, NULL, 2, KILN_CUBE_SOLID), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_octree_set_cube(set, ground, NULL, 0, KILN_CUBE_OCTANT), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("kiln_octree_subdivide");
    CHECK_STATUS(kiln_octree_subdivide(set, ground, pit, 3), KILN_ERROR_INVALID_ARGUMENT); /* the pit is empty */
    const uint8_t truncated[1] = {0x02};
    CHECK_STATUS(kiln_octree_load(set, tower, truncated, 1), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("description");
    CHECK_STATUS(kiln_octree_load(set, tower, NULL, 4), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_octree_save(set, tower, NULL, 4, &saved), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_octree_get_cube(set, tower, NULL, 0, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_octree_get_info(set, tower, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_octree_pick(set, NULL, INFINITY, 16, &untouched), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_octree_pick(set, &bad, INFINITY, 17, &untouched), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_octree_pick_batch(set, runtime, NULL, 4, INFINITY, 16, picks), KILN_ERROR_NULL_POINTER);
    KilnOctreeDef zero = kiln_default_octree_def();
    zero.size = 0.0f;
    KilnOctreeId none = {0, 0, 0};
    CHECK_STATUS(kiln_octree_create(set, &zero, &none), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("size");
    CHECK(none.index1 == 0);
    KilnOctreeInfo info;
    CHECK_STATUS(kiln_octree_get_info(set, tower, &info), KILN_OK);
    CHECK(info.has_solid && info.size == 4.0f && info.description_bytes == sizeof tower_bytes);
    CHECK_STATUS(kiln_octree_destroy(set, crate), KILN_OK);
    CHECK_STATUS(kiln_octree_destroy(set, crate), KILN_ERROR_INVALID_HANDLE);
    KilnOctreeSetId stale = set;
    stale.generation += 1;
    CHECK_STATUS(kiln_octree_pick(stale, &rays[0], INFINITY, 16, &untouched), KILN_ERROR_INVALID_HANDLE);
    CHECK(untouched.distance == -1.0f);

    free(rays);
    free(picks);
    CHECK_STATUS(kiln_runtime_destroy(runtime), KILN_OK);
    CHECK_STATUS(kiln_octree_set_destroy(set), KILN_OK);
    return check_summary("octree_pick");
}

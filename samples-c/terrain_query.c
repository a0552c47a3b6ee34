/* terrain_query: voxel terrain and its bit broadphase through the C API.
 *
 * Builds Kiln's test hills (128 x 128 columns), regenerates the broadphase masks on a
 * runtime's workers, prints the memory figures, then asks what boxes touch: one high
 * in the air, one on the ground, one in the lake, a wide one listing its chunks. It
 * digs a shaft, regenerates, and shows the query change; bad arguments get a status
 * and a message. Exits non-zero when an answer is wrong, so it doubles as a test. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln.h"
#include "tests/check.h"

static KilnAabb box_at(float x, float y, float z, float half) {
    KilnAabb b = {{x - half, y - half, z - half}, {x + half, y + half, z + half}};
    return b;
}

/* Height of the first air voxel above the ground in column (x, z), or -1. */
static int surface_height(KilnTerrainId terrain, int x, int z) {
    for (int y = 40; y >= -8; y--) {
        uint8_t m = KILN_MATERIAL_AIR;
        kiln_terrain_get_voxel(terrain, (KilnInt3){x, y, z}, &m);
        if (m >= KILN_MATERIAL_ROCK) return y + 1;
    }
    return -1;
}

static void print_overlap(const char *what, KilnTerrainOverlap o) {
    printf("  %-34s solid %-3s water %s\n", what, o.solid ? "yes" : "no", o.water ? "yes" : "no");
}

int main(void) {
    KilnRuntimeDef rdef = kiln_default_runtime_def();
    rdef.thread_count = 1;
    KilnRuntimeId runtime;
    CHECK_STATUS(kiln_runtime_create(&rdef, &runtime), KILN_OK);

    KilnTerrainDef def = kiln_default_terrain_def();
    KilnTerrainId terrain;
    CHECK_STATUS(kiln_terrain_create(&def, &terrain), KILN_OK);
    CHECK_STATUS(kiln_terrain_generate_hills(terrain, 128, 1), KILN_OK);

    uint32_t regenerated = 0;
    CHECK_STATUS(kiln_terrain_regenerate(terrain, runtime, &regenerated), KILN_OK);
    KilnTerrainStats stats;
    CHECK_STATUS(kiln_terrain_get_stats(terrain, &stats), KILN_OK);
    double volume = 128.0 * 128.0 * 48.0; /* columns times y -8..40 */
    printf("terrain: %u chunks stored, %u regenerated, %u with masks, %u full (no masks)\n", stats.stored_chunks,
           regenerated, stats.mixed_chunks, stats.full_chunks);
    printf("mask memory: %llu bytes, %.3f bytes per voxel (%.2f bits; at most 2)\n",
           (unsigned long long)stats.mask_bytes, stats.mask_bytes / volume, stats.mask_bytes * 8.0 / volume);
    CHECK(stats.dirty_chunks == 0);
    CHECK(stats.mask_bytes * 8.0 / volume <= 2.0);

    /* A column on dry land and one under the lake. */
    int dry_x = -1, dry_h = 0, wet_x = -1, wet_h = 0;
    for (int x = 0; x < 128 && (dry_x < 0 || wet_x < 0); x++) {
        int h = surface_height(terrain, x, 64);
        if (h > 16 && dry_x < 0) dry_x = x, dry_h = h;
        if (h > 0 && h < 10 && wet_x < 0) wet_x = x, wet_h = h;
    }
    CHECK(dry_x >= 0 && wet_x >= 0);

    printf("queries (boxes of half-size 0.4 m):\n");
    KilnTerrainOverlap o;
    KilnAabb sky = box_at(64.0f, 80.0f, 64.0f, 0.4f);
    CHECK_STATUS(kiln_terrain_overlap(terrain, &sky, &o), KILN_OK);
    print_overlap("high in the air", o);
    CHECK(!o.solid && !o.water);

    KilnAabb ground = box_at(dry_x + 0.5f, dry_h + 0.5f, 64.5f, 0.4f);
    CHECK_STATUS(kiln_terrain_overlap(terrain, &ground, &o), KILN_OK);
    print_overlap("resting on a hill", o);
    CHECK(o.solid && !o.water);

    KilnAabb lake = box_at(wet_x + 0.5f, 11.5f, 64.5f, 0.4f);
    CHECK_STATUS(kiln_terrain_overlap(terrain, &lake, &o), KILN_OK);
    print_overlap("floating in the lake", o);
    CHECK(o.water);
    (void)wet_h;

    /* A 20 m box: size the chunk list, then fetch it. */
    KilnAabb wide = {{40.0f, 0.0f, 40.0f}, {60.0f, 20.0f, 60.0f}};
    uint32_t count = 0;
    CHECK_STATUS(kiln_terrain_overlap_chunks(terrain, &wide, NULL, 0, &count), KILN_OK);
    KilnChunkOverlap *chunks = malloc(sizeof *chunks * (count ? count : 1));
    uint32_t written = 0;
    CHECK_STATUS(kiln_terrain_overlap_chunks(terrain, &wide, chunks, count, &written), KILN_OK);
    CHECK(written == count && count > 0);
    printf("a 20 m box touches %u chunks; the first: (%d, %d, %d)\n", count, count ? chunks[0].chunk.x : 0,
           count ? chunks[0].chunk.y : 0, count ? chunks[0].chunk.z : 0);
    free(chunks);

    /* Dig a 3x3 shaft down from the hill top: the ground box now hangs in air. */
    uint64_t changed = 0;
    KilnInt3 lo = {dry_x - 3, dry_h - 6, 61}, hi = {dry_x + 3, dry_h + 2, 67};
    CHECK_STATUS(kiln_terrain_fill(terrain, lo, hi, KILN_MATERIAL_AIR, &changed), KILN_OK);
    CHECK_STATUS(kiln_terrain_get_stats(terrain, &stats), KILN_OK);
    printf("dug %llu voxels; %u chunks dirty\n", (unsigned long long)changed, stats.dirty_chunks);
    CHECK(changed > 0 && stats.dirty_chunks > 0);
    CHECK_STATUS(kiln_terrain_regenerate(terrain, runtime, &regenerated), KILN_OK);
    CHECK_STATUS(kiln_terrain_overlap(terrain, &ground, &o), KILN_OK);
    print_overlap("same box after digging", o);
    CHECK(!o.solid);

    /* Bad input: a status and a message, nothing else. */
    KilnAabb nan_box = box_at(NAN, 0.0f, 0.0f, 1.0f);
    CHECK_STATUS(kiln_terrain_overlap(terrain, &nan_box, &o), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("not a finite box");
    CHECK_STATUS(kiln_terrain_overlap(terrain, NULL, &o), KILN_ERROR_NULL_POINTER);
    KilnInt3 huge_lo = {-100000, -100000, -100000}, huge_hi = {100000, 100000, 100000};
    CHECK_STATUS(kiln_terrain_fill(terrain, huge_lo, huge_hi, KILN_MATERIAL_ROCK, NULL), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_terrain_fill(terrain, hi, lo, KILN_MATERIAL_ROCK, NULL), KILN_ERROR_INVALID_ARGUMENT);
    printf("bad input refused: %s\n", kiln_last_error_message());

    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK);
    CHECK(!kiln_terrain_is_valid(terrain));
    CHECK_STATUS(kiln_terrain_overlap(terrain, &ground, &o), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_runtime_destroy(runtime), KILN_OK);
    return check_summary("terrain_query");
}

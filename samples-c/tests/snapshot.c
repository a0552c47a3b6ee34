/* World snapshots from C.
 *
 * Run with no arguments: a world of boxes, balls and hulls (five sharing one hull)
 * on generated hills, a hinged pendulum chain and a sensor is stepped 90 steps, a
 * pit dug under the rain at step 45, and saved; stepping on (a second pit dug 40
 * steps after the save), restoring and stepping again (the second pit dug again)
 * gives the same hash at every step, and the restore fills the second pit in. The
 * snapshot is then written to a file with the 150 hashes that follow it, and this
 * program runs itself again as a second process ("load FILE"): a fresh world with
 * the same hills, never dug, restores the file (the first pit comes with it) and
 * must step the same 150 hashes.
 * Then every refusal: NULL pointers, stale and null handles, zero and huge sizes, a
 * buffer too small, truncated, corrupted (random bytes), wrong-version and
 * foreign-terrain snapshots — each with its status, nothing written, the world
 * unchanged (its hash and the bytes it saves). Awake-only snapshots
 * (kiln_world_save_awake): smaller, restored in a rollback, refused once a static
 * body is added, and the same refusals. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"
#include "check.h"

#define AFTER 150

static KilnRuntimeId runtime(void) {
    KilnRuntimeDef def = kiln_default_runtime_def();
    def.thread_count = 2;
    KilnRuntimeId rt;
    CHECK_STATUS(kiln_runtime_create(&def, &rt), KILN_OK);
    return rt;
}

/* A world on hills of `seed`; with bodies when `populate`. */
static KilnWorldId make_world(uint32_t seed, int populate, KilnTerrainId *out_terrain) {
    KilnWorldDef def = kiln_default_world_def();
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(&def, &world), KILN_OK);
    KilnTerrainDef tdef = kiln_default_terrain_def();
    tdef.voxel_size = 1.0f;
    CHECK_STATUS(kiln_terrain_create(&tdef, out_terrain), KILN_OK);
    CHECK_STATUS(kiln_terrain_generate_hills(*out_terrain, 32, seed), KILN_OK);
    CHECK_STATUS(kiln_world_set_terrain(world, *out_terrain), KILN_OK);
    if (!populate) {
        return world;
    }
    KilnShapeId box, ball, hull, big_hull;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.4f, 0.3f, 0.5f}, &box), KILN_OK);
    CHECK_STATUS(kiln_shape_create_sphere((KilnVec3){0, 0, 0}, 0.45f, &ball), KILN_OK);
    KilnVec3 points[9];
    for (int i = 0; i < 8; i++) {
        points[i] = (KilnVec3){(float)(i & 1) - 0.5f, (float)(i >> 1 & 1) - 0.5f, (float)(i >> 2) - 0.5f};
    }
    points[8] = (KilnVec3){0.0f, 0.9f, 0.0f};
    CHECK_STATUS(kiln_shape_create_hull(points, 9, &hull), KILN_OK);
    CHECK_STATUS(kiln_shape_create_hull(points, 8, &big_hull), KILN_OK);
    KilnShapeDef sdef = kiln_default_shape_def();
    for (int i = 0; i < 48; i++) {
        KilnBodyDef bdef = kiln_default_body_def();
        bdef.transform.position = (KilnVec3){8.0f + (float)(i % 7) * 2.3f, 30.0f + (float)(i / 7) * 1.7f,
                                             9.0f + (float)(i % 5) * 2.9f};
        KilnBodyId id;
        CHECK_STATUS(kiln_body_create(world, &bdef, &id), KILN_OK);
        KilnShapeId shape = i % 8 < 5 ? (i % 2 ? box : ball) : (i % 8 < 7 ? hull : big_hull);
        CHECK_STATUS(kiln_body_add_shape(id, shape, &sdef, NULL), KILN_OK);
    }
    /* A pendulum chain of 6 hinged boxes from a static anchor. */
    KilnBodyDef anchor_def = kiln_default_body_def();
    anchor_def.motion_type = KILN_MOTION_STATIC;
    anchor_def.transform.position = (KilnVec3){16.0f, 24.0f, 16.0f};
    KilnBodyId prev;
    CHECK_STATUS(kiln_body_create(world, &anchor_def, &prev), KILN_OK);
    for (int i = 0; i < 6; i++) {
        KilnBodyDef link = kiln_default_body_def();
        link.transform.position = (KilnVec3){16.0f + 1.0f * (float)(i + 1), 24.0f, 16.0f};
        KilnBodyId id;
        CHECK_STATUS(kiln_body_create(world, &link, &id), KILN_OK);
        CHECK_STATUS(kiln_body_add_shape(id, box, &sdef, NULL), KILN_OK);
        KilnRevoluteJointDef jdef = kiln_default_revolute_joint_def();
        jdef.base.body_a = prev;
        jdef.base.body_b = id;
        jdef.base.frame_a.position = (KilnVec3){i == 0 ? 0.0f : 0.5f, 0, 0};
        jdef.base.frame_b.position = (KilnVec3){-0.5f, 0, 0};
        KilnJointId joint;
        CHECK_STATUS(kiln_joint_create_revolute(world, &jdef, &joint), KILN_OK);
        prev = id;
    }
    /* A static sensor box where the rain lands. */
    KilnBodyDef sensor_def = kiln_default_body_def();
    sensor_def.motion_type = KILN_MOTION_STATIC;
    sensor_def.transform.position = (KilnVec3){14.0f, 12.0f, 14.0f};
    KilnBodyId sensor;
    CHECK_STATUS(kiln_body_create(world, &sensor_def, &sensor), KILN_OK);
    KilnShapeId zone;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){6.0f, 6.0f, 6.0f}, &zone), KILN_OK);
    KilnShapeDef zone_def = kiln_default_shape_def();
    zone_def.is_sensor = true;
    CHECK_STATUS(kiln_body_add_shape(sensor, zone, &zone_def, NULL), KILN_OK);
    KilnShapeId shapes[] = {box, ball, hull, big_hull, zone};
    for (int i = 0; i < 5; i++) {
        CHECK_STATUS(kiln_shape_destroy(shapes[i]), KILN_OK);
    }
    return world;
}

/* The terrain edits of the run: the first pit before the save, the second after. */
static void dig(KilnTerrainId terrain, int second) {
    KilnInt3 lo = second ? (KilnInt3){16, 4, 8} : (KilnInt3){8, 4, 10};
    KilnInt3 hi = second ? (KilnInt3){23, 30, 15} : (KilnInt3){14, 30, 17};
    uint64_t changed = 0;
    CHECK_STATUS(kiln_terrain_fill(terrain, lo, hi, 0, &changed), KILN_OK);
    CHECK(changed > 100);
}

/* The material of a voxel in the second pit: air once dug, ground before. */
static uint8_t second_pit(KilnTerrainId terrain) {
    uint8_t m = 99;
    CHECK_STATUS(kiln_terrain_get_voxel(terrain, (KilnInt3){20, 5, 12}, &m), KILN_OK);
    return m;
}

static uint64_t hash_of(KilnWorldId world) {
    uint64_t h = 0;
    CHECK_STATUS(kiln_world_hash(world, &h), KILN_OK);
    return h;
}

static uint8_t *save(KilnWorldId world, uint64_t *out_size) {
    uint64_t size = 0;
    CHECK_STATUS(kiln_world_snapshot_size(world, &size), KILN_OK);
    uint8_t *buffer = malloc(size + 1024);
    CHECK(buffer != NULL);
    CHECK_STATUS(kiln_world_save(world, buffer, size + 1024, out_size), KILN_OK);
    CHECK(*out_size == size);
    return buffer;
}

/* The second process: restore FILE into a fresh world and step its hashes. */
static int load(const char *path) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) {
        return check_summary("snapshot (load)");
    }
    uint64_t size = 0, hashes[AFTER];
    CHECK(fread(&size, sizeof size, 1, f) == 1);
    uint8_t *bytes = malloc(size);
    CHECK(bytes != NULL && fread(bytes, 1, size, f) == size);
    CHECK(fread(hashes, sizeof hashes[0], AFTER, f) == AFTER);
    fclose(f);
    KilnRuntimeId rt = runtime();
    KilnTerrainId terrain;
    KilnWorldId world = make_world(7, 0, &terrain);
    CHECK_STATUS(kiln_world_restore(world, bytes, size), KILN_OK);
    int same = 0;
    for (int step = 0; step < AFTER; step++) {
        if (step == 40) {
            dig(terrain, 1);
        }
        CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
        same += hash_of(world) == hashes[step];
    }
    printf("snapshot (load): %d of %d steps with the saving process's hash\n", same, AFTER);
    CHECK(same == AFTER);
    free(bytes);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(rt), KILN_OK);
    return check_summary("snapshot (load)");
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "load") == 0) {
        return load(argv[2]);
    }
    KilnRuntimeId rt = runtime();
    KilnTerrainId terrain;
    KilnWorldId world = make_world(7, 1, &terrain);
    for (int step = 0; step < 90; step++) {
        if (step == 45) {
            dig(terrain, 0);
        }
        CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
    }
    uint64_t size = 0;
    uint8_t *saved = save(world, &size);
    uint64_t saved_hash = hash_of(world), hashes[AFTER];
    uint8_t ground = second_pit(terrain);
    CHECK(ground >= 2);
    for (int step = 0; step < AFTER; step++) {
        if (step == 40) {
            dig(terrain, 1);
        }
        CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
        hashes[step] = hash_of(world);
    }
    CHECK(second_pit(terrain) == 0);
    /* Rollback in place: the ground is back, and the same hashes again. */
    CHECK_STATUS(kiln_world_restore(world, saved, size), KILN_OK);
    CHECK(hash_of(world) == saved_hash);
    CHECK(second_pit(terrain) == ground);
    int same = 0;
    for (int step = 0; step < AFTER; step++) {
        if (step == 40) {
            dig(terrain, 1);
        }
        CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
        same += hash_of(world) == hashes[step];
    }
    CHECK(same == AFTER);

    /* Another process: the file holds the size, the snapshot and the hashes. */
    char path[4096], command[8400];
    snprintf(path, sizeof path, "%s.snapshot", argv[0]);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        CHECK(fwrite(&size, sizeof size, 1, f) == 1 && fwrite(saved, 1, size, f) == size &&
              fwrite(hashes, sizeof hashes[0], AFTER, f) == AFTER);
        fclose(f);
        snprintf(command, sizeof command, "'%s' load '%s'", argv[0], path);
        CHECK(system(command) == 0);
        remove(path);
    }

    /* Awake only: the chain's anchor, the sensor and the sleeping bodies left out. */
    uint64_t awake_size = 0, full_size = 0;
    CHECK_STATUS(kiln_world_save_awake(world, NULL, 0, &awake_size), KILN_ERROR_BUFFER_TOO_SMALL);
    CHECK_STATUS(kiln_world_snapshot_size(world, &full_size), KILN_OK);
    CHECK(awake_size > 56 && awake_size < full_size);
    uint8_t *awake = malloc(awake_size);
    uint64_t written = 0;
    CHECK_STATUS(kiln_world_save_awake(world, awake, awake_size, &written), KILN_OK);
    CHECK(written == awake_size);
    uint64_t awake_hash = hash_of(world), awake_hashes[8];
    for (int step = 0; step < 8; step++) {
        CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
        awake_hashes[step] = hash_of(world);
    }
    CHECK_STATUS(kiln_world_restore(world, awake, awake_size), KILN_OK);
    CHECK(hash_of(world) == awake_hash);
    same = 0;
    for (int step = 0; step < 8; step++) {
        CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
        same += hash_of(world) == awake_hashes[step];
    }
    CHECK(same == 8);
    /* A static body added since: refused, nothing changed; gone again: restored. */
    KilnBodyDef post_def = kiln_default_body_def();
    post_def.motion_type = KILN_MOTION_STATIC;
    post_def.transform.position = (KilnVec3){2.0f, 40.0f, 2.0f};
    KilnBodyId post;
    CHECK_STATUS(kiln_body_create(world, &post_def, &post), KILN_OK);
    uint64_t with_post = hash_of(world);
    CHECK_STATUS(kiln_world_restore(world, awake, awake_size), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("awake bodies only");
    CHECK(hash_of(world) == with_post);
    CHECK_STATUS(kiln_body_destroy(post), KILN_OK);
    CHECK_STATUS(kiln_world_restore(world, awake, awake_size), KILN_OK);
    CHECK(hash_of(world) == awake_hash);
    /* Its null, stale and short cases. */
    uint64_t untouched = 77;
    CHECK_STATUS(kiln_world_save_awake(world, awake, awake_size, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_save_awake(world, NULL, 64, &untouched), KILN_ERROR_NULL_POINTER);
    CHECK(untouched == 77);
    CHECK_STATUS(kiln_world_save_awake(world, awake, 100, &untouched), KILN_ERROR_BUFFER_TOO_SMALL);
    CHECK(untouched == awake_size);
    CHECK_STATUS(kiln_world_save_awake((KilnWorldId){0, 0}, awake, awake_size, &untouched),
                 KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_restore(world, awake, awake_size - 1), KILN_ERROR_INVALID_ARGUMENT);
    free(awake);

    /* A new terrain base: later snapshots carry no edits; the earlier one, saved
     * against the old base, is refused. */
    uint64_t before_rebase = 0, rebased_size = 0;
    CHECK_STATUS(kiln_world_snapshot_size(world, &before_rebase), KILN_OK);
    CHECK_STATUS(kiln_terrain_rebase(terrain), KILN_OK);
    CHECK_STATUS(kiln_world_snapshot_size(world, &rebased_size), KILN_OK);
    printf("snapshot: %llu bytes with the terrain's edits, %llu after a rebase\n", (unsigned long long)before_rebase,
           (unsigned long long)rebased_size);
    CHECK(rebased_size + 512 * 4 < before_rebase);
    CHECK_STATUS(kiln_world_restore(world, saved, size), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("another base");
    CHECK_STATUS(kiln_terrain_rebase((KilnTerrainId){0, 0}), KILN_ERROR_INVALID_HANDLE);
    uint8_t *rebased = save(world, &rebased_size);
    free(saved);
    saved = rebased;
    size = rebased_size;

    /* Refusals. The world's state first, to prove each leaves it unchanged. */
    uint64_t now_size = 0;
    uint8_t *now = save(world, &now_size);
    uint64_t now_hash = hash_of(world);
    uint64_t out = 77;
    CHECK_STATUS(kiln_world_snapshot_size(world, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_save(world, now, now_size, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_save(world, NULL, 64, &out), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_restore(world, NULL, size), KILN_ERROR_NULL_POINTER);
    CHECK(out == 77);
    /* Size queries: NULL with 0, and a buffer too small. */
    CHECK_STATUS(kiln_world_save(world, NULL, 0, &out), KILN_ERROR_BUFFER_TOO_SMALL);
    CHECK(out == now_size);
    uint8_t small[100];
    out = 0;
    CHECK_STATUS(kiln_world_save(world, small, sizeof small, &out), KILN_ERROR_BUFFER_TOO_SMALL);
    CHECK(out == now_size);
    CHECK_MESSAGE("needs");
    /* Zero, short, huge and one-too-long sizes. */
    CHECK_STATUS(kiln_world_restore(world, saved, 0), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("not a Kiln world snapshot");
    CHECK_STATUS(kiln_world_restore(world, saved, 40), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_world_restore(world, saved, size / 2), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("shorter or longer");
    CHECK_STATUS(kiln_world_restore(world, saved, UINT64_MAX), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_world_restore(world, saved, size + 1), KILN_ERROR_INVALID_ARGUMENT);
    /* Random bytes over the payload, and random bytes alone. */
    uint8_t *bad = malloc(size);
    uint32_t seed = 12345;
    for (int k = 0; k < 64; k++) {
        memcpy(bad, saved, size);
        for (int j = 0; j < 1 + k % 4; j++) {
            seed = seed * 1664525u + 1013904223u;
            bad[56 + seed % (uint32_t)(size - 56)] ^= (uint8_t)(1 + (seed >> 24) % 255);
        }
        CHECK_STATUS(kiln_world_restore(world, bad, size), KILN_ERROR_INVALID_ARGUMENT);
    }
    CHECK_MESSAGE("damaged");
    for (uint64_t i = 0; i < size; i++) {
        seed = seed * 1664525u + 1013904223u;
        bad[i] = (uint8_t)(seed >> 24);
    }
    CHECK_STATUS(kiln_world_restore(world, bad, size), KILN_ERROR_INVALID_ARGUMENT);
    /* Another format version, another library version. */
    memcpy(bad, saved, size);
    bad[8] = (uint8_t)(KILN_SNAPSHOT_FORMAT + 1);
    CHECK_STATUS(kiln_world_restore(world, bad, size), KILN_ERROR_ABI_MISMATCH);
    CHECK_MESSAGE("format");
    memcpy(bad, saved, size);
    bad[13] ^= 1;
    CHECK_STATUS(kiln_world_restore(world, bad, size), KILN_ERROR_ABI_MISMATCH);
    free(bad);
    CHECK(hash_of(world) == now_hash);
    uint64_t again_size = 0;
    uint8_t *again = save(world, &again_size);
    CHECK(again_size == now_size && memcmp(again, now, now_size) == 0);
    free(again);

    /* Foreign terrain: other hills, or none. */
    KilnTerrainId other_terrain;
    KilnWorldId other = make_world(8, 0, &other_terrain);
    CHECK_STATUS(kiln_world_restore(other, saved, size), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("another terrain");
    KilnWorldDef bare_def = kiln_default_world_def();
    KilnWorldId bare;
    CHECK_STATUS(kiln_world_create(&bare_def, &bare), KILN_OK);
    uint64_t bare_hash = hash_of(bare);
    CHECK_STATUS(kiln_world_restore(bare, saved, size), KILN_ERROR_INVALID_STATE);
    CHECK(hash_of(bare) == bare_hash);

    /* Stale and null handles. */
    KilnWorldId null_world = {0, 0};
    CHECK_STATUS(kiln_world_snapshot_size(null_world, &out), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_destroy(other), KILN_OK);
    CHECK_STATUS(kiln_world_snapshot_size(other, &out), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_save(other, now, now_size, &out), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_save_awake(other, now, now_size, &out), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_terrain_rebase(other_terrain), KILN_OK);
    CHECK_STATUS(kiln_world_restore(other, saved, size), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_restore(null_world, saved, size), KILN_ERROR_INVALID_HANDLE);
    CHECK(out == now_size);

    free(now);
    free(saved);
    CHECK_STATUS(kiln_world_destroy(bare), KILN_OK);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_terrain_destroy(other_terrain), KILN_OK);
    CHECK_STATUS(kiln_terrain_rebase(other_terrain), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(rt), KILN_OK);
    return check_summary("snapshot");
}

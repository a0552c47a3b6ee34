/* character: shapes, pairwise queries and a capsule character walking on voxel terrain.
 *
 * First a few shape queries with known answers: the distance from a sphere to a box,
 * the contact of a box resting on another (four points at the sinking depth), and
 * the time a falling sphere hits the box. Then Kiln's test hills, and a character
 * that walks a square loop over them at 4 m/s with gravity, past a crate placed as a
 * static shape, jumping when a ledge higher than its step blocks it, printing its
 * path once a second. It checks the walk stays finite,
 * stands on ground most of the time and gets around the loop; exits non-zero when an
 * answer is wrong, so it doubles as a test.
 *
 *   character [FRAMES]   (default 1200: 20 s at 60 Hz) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln.h"
#include "tests/check.h"

static KilnTransform at(float x, float y, float z) {
    KilnTransform t = kiln_transform_identity();
    t.position = (KilnVec3){x, y, z};
    return t;
}

static void shape_queries(void) {
    KilnShapeId ball, crate;
    CHECK_STATUS(kiln_shape_create_sphere((KilnVec3){0, 0, 0}, 0.5f, &ball), KILN_OK);
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 0.5f, 0.5f}, &crate), KILN_OK);
    KilnTransform origin = kiln_transform_identity();

    KilnTransform above = at(0, 3, 0);
    KilnDistanceResult d;
    CHECK_STATUS(kiln_shape_distance(crate, &origin, ball, &above, &d), KILN_OK);
    printf("sphere 3 m above a 1 m box: distance %.4f m, normal (%.2f %.2f %.2f)\n", d.distance, d.normal.x,
           d.normal.y, d.normal.z);
    CHECK(fabsf(d.distance - 2.0f) < 1e-4f && fabsf(d.normal.y - 1.0f) < 1e-4f);

    KilnTransform resting = at(0.1f, 0.99f, -0.2f);
    KilnManifold manifolds[2];
    uint32_t count = 0;
    CHECK_STATUS(kiln_shape_contact(crate, &origin, crate, &resting, 0.02f, manifolds, 2, &count), KILN_OK);
    CHECK(count == 1 && manifolds[0].point_count == 4);
    if (count == 1) {
        printf("box resting 1 cm deep on a box: %u points\n", manifolds[0].point_count);
        for (uint32_t i = 0; i < manifolds[0].point_count; i++) {
            KilnContactPoint p = manifolds[0].points[i];
            printf("  (%6.3f %6.3f %6.3f) separation %.4f id %08x\n", p.point.x, p.point.y, p.point.z, p.separation,
                   p.id);
            CHECK(fabsf(p.separation + 0.01f) < 1e-4f);
        }
    }

    KilnSweep fall = {at(0, 3, 0), at(0, -3, 0), {0, 0, 0}};
    KilnSweep still = {origin, origin, {0, 0, 0}};
    KilnToiResult toi;
    CHECK_STATUS(kiln_shape_time_of_impact(ball, &fall, crate, &still, 1.0f, 0.0f, &toi), KILN_OK);
    printf("sphere dropped 6 m onto the box: %s at t = %.4f (expected 1/3), %u iterations\n",
           toi.state == KILN_TOI_HIT ? "hit" : "no hit", toi.t, toi.iterations);
    CHECK(toi.state == KILN_TOI_HIT && fabsf(toi.t - 1.0f / 3.0f) < 1e-3f);

    CHECK_STATUS(kiln_shape_destroy(ball), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(crate), KILN_OK);
}

/* The ground height under (x, z), by a ray cast down. */
static float ground_at(KilnTerrainId terrain, float x, float z) {
    KilnRay ray = {{x, 60, z}, {0, -1, 0}};
    KilnTerrainRayHit hit;
    if (kiln_terrain_ray_cast(terrain, &ray, 200, &hit) != KILN_OK || !hit.hit) return 0;
    return hit.point.y;
}

int main(int argc, char **argv) {
    int frames = argc > 1 ? atoi(argv[1]) : 1200;
    if (frames < 1) frames = 1200;
    shape_queries();

    KilnRuntimeDef rdef = kiln_default_runtime_def();
    rdef.thread_count = 2;
    KilnRuntimeId runtime;
    CHECK_STATUS(kiln_runtime_create(&rdef, &runtime), KILN_OK);
    KilnTerrainDef tdef = kiln_default_terrain_def();
    KilnTerrainId terrain;
    CHECK_STATUS(kiln_terrain_create(&tdef, &terrain), KILN_OK);
    CHECK_STATUS(kiln_terrain_generate_hills(terrain, 96, 3), KILN_OK);
    CHECK_STATUS(kiln_terrain_regenerate(terrain, runtime, NULL), KILN_OK);

    /* A 1 m crate on the first leg of the loop, as a static shape: it jumps on it. */
    const float corners[4][2] = {{20, 20}, {70, 20}, {70, 70}, {20, 70}};
    KilnShapeId crate;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 0.5f, 0.5f}, &crate), KILN_OK);
    KilnShapeInstance statics[1] = {{crate, at(45, ground_at(terrain, 45, 20.2f) + 0.4f, 20.2f)}};

    KilnCharacterDef def = kiln_default_character_def();
    KilnCharacterId character;
    float half_height = def.radius + 0.5f * def.height;
    KilnVec3 start = {corners[0][0], ground_at(terrain, corners[0][0], corners[0][1]) + half_height + 0.05f,
                      corners[0][1]};
    CHECK_STATUS(kiln_character_create(&def, start, &character), KILN_OK);

    const float dt = 1.0f / 60.0f, speed = 4.0f, gravity = -9.81f, jump_speed = 5.5f;
    float fall_speed = 0, walked = 0;
    int target = 1, grounded_frames = 0, recovered = 0, finite = 1, corners_reached = 0, jumps = 0;
    KilnMoveResult r = {0};
    printf("\nwalking a %dx%d m loop on the hills from (%.1f %.1f %.1f):\n", 50, 50, start.x, start.y, start.z);
    printf("   time        x        y        z  grounded  ground normal y\n");
    for (int frame = 0; frame < frames; frame++) {
        KilnVec3 p;
        CHECK_STATUS(kiln_character_get_position(character, &p), KILN_OK);
        float dx = corners[target][0] - p.x, dz = corners[target][1] - p.z;
        float len = sqrtf(dx * dx + dz * dz);
        if (len < 1.0f) {
            target = (target + 1) % 4;
            corners_reached++;
            continue;
        }
        /* Gravity, a push down while grounded so it sticks to slopes, and a jump
         * when a ledge higher than step_height blocked the last move (not while a
         * jump still rises: the ground probe can still touch the ledge's foot). */
        float wanted = speed * dt, progress = sqrtf(r.moved.x * r.moved.x + r.moved.z * r.moved.z);
        if (r.grounded && frame > 0 && progress < 0.3f * wanted && fall_speed <= 0) {
            fall_speed = jump_speed;
            jumps++;
        } else if (r.grounded && fall_speed <= 0) {
            fall_speed = -speed; /* follows slopes down to 45 degrees */
        } else {
            fall_speed += gravity * dt;
        }
        KilnVec3 step = {dx / len * wanted, fall_speed * dt, dz / len * wanted};
        if (kiln_character_move(character, step, terrain, runtime, statics, 1, &r) != KILN_OK) {
            fprintf(stderr, "move failed: %s\n", kiln_last_error_message());
            checks_failed++;
            break;
        }
        finite &= isfinite(r.position.x) && isfinite(r.position.y) && isfinite(r.position.z);
        grounded_frames += r.grounded;
        recovered += r.recovered;
        walked += sqrtf(r.moved.x * r.moved.x + r.moved.z * r.moved.z);
        if (frame % 60 == 0) {
            printf("  %5.1fs %8.2f %8.2f %8.2f  %-8s  %.3f\n", frame * dt, r.position.x, r.position.y, r.position.z,
                   r.grounded ? "yes" : "no", r.ground_normal.y);
        }
    }
    printf("walked %.1f m in %.1f s, %d corners reached, %d jumps, grounded %.0f%% of frames, %d recoveries\n",
           walked, frames * dt, corners_reached, jumps, 100.0 * grounded_frames / frames, recovered);
    CHECK(finite);
    CHECK(grounded_frames > frames / 2);
    /* At 4 m/s the walk covers most of the distance; hills and the crate slow it. */
    CHECK(walked > 0.5f * speed * frames * dt);
    CHECK(frames < 1200 || corners_reached >= 1);

    CHECK_STATUS(kiln_character_destroy(character), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(crate), KILN_OK);
    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(runtime), KILN_OK);
    return check_summary("character");
}

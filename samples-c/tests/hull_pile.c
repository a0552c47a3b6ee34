/* A pile of convex hulls from C: 27 hulls of 32 points fall onto a ground box and
 * come to rest on it; the step's counters show the hull pairs that kept apart along
 * last step's separating axis, those skipped as too far apart to touch, and those
 * given the whole test. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kiln.h"
#include "check.h"

/* Points on a sphere of radius `r`, from a xorshift generator. */
static void sphere_points(uint32_t *state, KilnVec3 *out, int n, float r) {
    for (int i = 0; i < n; i++) {
        float v[3], len2;
        do {
            for (int k = 0; k < 3; k++) {
                *state ^= *state << 13, *state ^= *state >> 17, *state ^= *state << 5;
                v[k] = (float)(*state >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
            }
            len2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        } while (len2 < 0.01f || len2 > 1.0f);
        float s = r / sqrtf(len2);
        out[i] = (KilnVec3){v[0] * s, v[1] * s, v[2] * s};
    }
}

int main(void) {
    CHECK_STATUS(kiln_check_linked_abi(), KILN_OK);
    KilnRuntimeDef rdef = kiln_default_runtime_def();
    rdef.thread_count = 1;
    KilnRuntimeId runtime;
    CHECK_STATUS(kiln_runtime_create(&rdef, &runtime), KILN_OK);
    KilnWorldDef wdef = kiln_default_world_def();
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(&wdef, &world), KILN_OK);
    KilnShapeDef sdef = kiln_default_shape_def();

    KilnShapeId ground_box;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){20.0f, 1.0f, 20.0f}, &ground_box), KILN_OK);
    KilnBodyDef bdef = kiln_default_body_def();
    bdef.motion_type = KILN_MOTION_STATIC;
    bdef.transform.position = (KilnVec3){0.0f, -1.0f, 0.0f};
    KilnBodyId ground;
    CHECK_STATUS(kiln_body_create(world, &bdef, &ground), KILN_OK);
    CHECK_STATUS(kiln_body_add_shape(ground, ground_box, &sdef, NULL), KILN_OK);

    enum { SIDE = 3, COUNT = SIDE * SIDE * SIDE, POINTS = 32 };
    KilnBodyId hulls[COUNT];
    uint32_t state = 2463534242u;
    for (int i = 0; i < COUNT; i++) {
        KilnVec3 points[POINTS];
        sphere_points(&state, points, POINTS, 0.5f);
        KilnShapeId hull;
        CHECK_STATUS(kiln_shape_create_hull(points, POINTS, &hull), KILN_OK);
        bdef = kiln_default_body_def();
        bdef.transform.position = (KilnVec3){1.3f * (float)(i % SIDE) - 1.3f, 0.8f + 1.3f * (float)(i / (SIDE * SIDE)),
                                             1.3f * (float)(i / SIDE % SIDE) - 1.3f};
        CHECK_STATUS(kiln_body_create(world, &bdef, &hulls[i]), KILN_OK);
        CHECK_STATUS(kiln_body_add_shape(hulls[i], hull, &sdef, NULL), KILN_OK);
        CHECK_STATUS(kiln_shape_destroy(hull), KILN_OK); /* the body keeps its copy */
    }

    uint64_t full = 0, cached = 0, skipped = 0;
    KilnWorldCounters counters = {0};
    for (int frame = 0; frame < 600; frame++) {
        CHECK_STATUS(kiln_world_step(world, runtime, 1.0f / 60.0f), KILN_OK);
        CHECK_STATUS(kiln_world_get_counters(world, &counters), KILN_OK);
        full += counters.hull_pair_full_count;
        cached += counters.hull_pair_cached_count;
        skipped += counters.hull_pair_skipped_count;
    }
    int resting = 0;
    for (int i = 0; i < COUNT; i++) {
        KilnTransform xf;
        CHECK_STATUS(kiln_body_get_transform(hulls[i], &xf), KILN_OK);
        resting += xf.position.y > 0.2f && xf.position.y < 4.0f;
    }
    printf("hull pile: %d of %d hulls rest on the ground; hull pairs: %llu tested in full, %llu kept apart by "
           "last step's axis, %llu skipped (too far to touch); %u bodies awake\n",
           resting, COUNT, (unsigned long long)full, (unsigned long long)cached, (unsigned long long)skipped,
           counters.awake_body_count);
    CHECK(resting == COUNT);
    CHECK(full > 0);
    CHECK(cached > 0);
    CHECK(skipped > 0);
    CHECK(counters.awake_body_count == 0); /* all asleep after 10 s */

    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(ground_box), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(runtime), KILN_OK);
    return check_summary("hull_pile");
}

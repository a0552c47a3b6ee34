/* bridge: a plank bridge on hinges with boxes crossing it, through the C API.
 *
 * 40 planks (1 m x 0.1 m x 2 m, 20 kg each) hang between two static posts 38 m
 * apart, each tied to the next by a revolute joint about z at their common end, the
 * first and last to the posts: 2 m of slack, as a rope bridge hangs. Boxes (65 kg)
 * are dropped on the deck one a second and pushed across at 3 m/s. Steps at 60 Hz
 * for 12 s, printing once a second the deck's sag and how far the boxes have come;
 * then the mean milliseconds per stage. Checks: no joint broke, every hinge's
 * anchors together within 2 cm, the deck hangs as deep as its slack says and swings
 * little, and every box stayed on the deck.
 *
 * Exits non-zero when a check fails, so it doubles as a test.
 *
 *   bridge [FRAMES]   (default 720 = 12 s at 60 Hz) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln.h"
#include "tests/check.h"

enum { PLANKS = 40, BOXES = 6, HINGES = PLANKS + 1 };

/* A box body at `at`, turned by `turn` rad about z, with `friction`. */
static KilnBodyId box_body(KilnWorldId world, uint32_t motion, KilnVec3 at, KilnVec3 half, float density, float turn,
                           float friction) {
    KilnBodyDef def = kiln_default_body_def();
    def.motion_type = motion;
    def.transform.position = at;
    def.transform.rotation = (KilnQuat){0, 0, sinf(0.5f * turn), cosf(0.5f * turn)};
    def.allow_sleep = false;
    KilnBodyId id = {0};
    CHECK_STATUS(kiln_body_create(world, &def, &id), KILN_OK);
    KilnShapeId shape;
    CHECK_STATUS(kiln_shape_create_box(half, &shape), KILN_OK);
    KilnShapeDef sdef = kiln_default_shape_def();
    sdef.density = density;
    sdef.friction = friction;
    CHECK_STATUS(kiln_body_add_shape(id, shape, &sdef, NULL), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(shape), KILN_OK);
    return id;
}

/* A hinge about z ties `a` (centred at `a_center`, turned by `a_turn` about z) and `b`
 * at the world point `at`. One per gap: a hinge already keeps the deck from
 * twisting, and a second one on the same axis (one at each edge of the deck) made
 * two joints fight over the same rotation, which loaded with boxes pulled the
 * anchors 10 cm apart. */
static void hinge(KilnWorldId world, KilnBodyId a, KilnVec3 a_center, float a_turn, KilnBodyId b, KilnVec3 b_center,
                  float b_turn, KilnVec3 at, KilnJointId *out) {
    {
        float z = 0.0f;
        KilnRevoluteJointDef def = kiln_default_revolute_joint_def();
        def.base.body_a = a;
        def.base.body_b = b;
        /* The anchor in each body's frame: the offset turned back by the body's turn.
         * The joint frame's rotation undoes the body's, so z stays the world's z. */
        float ax = at.x - a_center.x, ay = at.y - a_center.y, bx = at.x - b_center.x, by = at.y - b_center.y;
        float ca = cosf(a_turn), sa = sinf(a_turn), cb = cosf(b_turn), sb = sinf(b_turn);
        def.base.frame_a.position = (KilnVec3){ca * ax + sa * ay, -sa * ax + ca * ay, z};
        def.base.frame_b.position = (KilnVec3){cb * bx + sb * by, -sb * bx + cb * by, z};
        def.base.frame_a.rotation = (KilnQuat){0, 0, -sinf(0.5f * a_turn), cosf(0.5f * a_turn)};
        def.base.frame_b.rotation = (KilnQuat){0, 0, -sinf(0.5f * b_turn), cosf(0.5f * b_turn)};
        def.enable_motor = true, def.max_motor_torque = 5.0f; /* a little friction in the hinges */
        CHECK_STATUS(kiln_joint_create_revolute(world, &def, out), KILN_OK);
    }
}

typedef struct Gaps {
    unsigned count;
    float worst;
} Gaps;

static void measure(const KilnJointDraw *joint, void *user) {
    Gaps *gaps = user;
    float dx = joint->frame_b.position.x - joint->frame_a.position.x;
    float dy = joint->frame_b.position.y - joint->frame_a.position.y;
    float dz = joint->frame_b.position.z - joint->frame_a.position.z;
    float gap = sqrtf(dx * dx + dy * dy + dz * dz);
    gaps->count++;
    if (gap > gaps->worst) gaps->worst = gap;
}

int main(int argc, char **argv) {
    unsigned frames = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 720u;
    if (frames < 60 || frames > 100000) frames = 720;
    if (kiln_check_linked_abi() != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_last_error_message());
        return 1;
    }
    KilnRuntimeDef rdef = kiln_default_runtime_def();
    KilnRuntimeId runtime;
    CHECK_STATUS(kiln_runtime_create(&rdef, &runtime), KILN_OK);
    KilnWorldDef wdef = kiln_default_world_def();
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(&wdef, &world), KILN_OK);

    /* Posts 38 m apart, their tops at y = 10; 40 planks 1 m long between them, laid
     * in a shallow V (each half sloping by acos(0.95)) so the deck has 2 m of slack
     * and hangs as a rope bridge does. */
    const float top = 10.0f, length = 1.0f, span = 38.0f;
    const float c = span / (PLANKS * length), sn = sqrtf(1.0f - c * c);
    KilnVec3 post_half = {0.5f, 0.5f, 1.0f};
    KilnVec3 left_at = {-0.5f, top - 0.5f, 0}, right_at = {span + 0.5f, top - 0.5f, 0};
    KilnBodyId left = box_body(world, KILN_MOTION_STATIC, left_at, post_half, 1000.0f, 0.0f, 0.8f);
    KilnBodyId right = box_body(world, KILN_MOTION_STATIC, right_at, post_half, 1000.0f, 0.0f, 0.8f);
    KilnBodyId planks[PLANKS];
    KilnVec3 ends[PLANKS + 1], centers[PLANKS];
    float turns[PLANKS];
    ends[0] = (KilnVec3){0, top, 0};
    for (int i = 0; i < PLANKS; i++) {
        float dy = i < PLANKS / 2 ? -sn : sn;
        ends[i + 1] = (KilnVec3){ends[i].x + c * length, ends[i].y + dy * length, 0};
        centers[i] = (KilnVec3){0.5f * (ends[i].x + ends[i + 1].x), 0.5f * (ends[i].y + ends[i + 1].y) - 0.05f, 0};
        turns[i] = atan2f(dy, c);
        planks[i] = box_body(world, KILN_MOTION_DYNAMIC, centers[i], (KilnVec3){0.49f, 0.05f, 1.0f}, 200.0f, turns[i], 0.8f);
    }
    KilnJointId hinges[HINGES];
    hinge(world, left, left_at, 0.0f, planks[0], centers[0], turns[0], ends[0], &hinges[0]);
    for (int i = 1; i < PLANKS; i++)
        hinge(world, planks[i - 1], centers[i - 1], turns[i - 1], planks[i], centers[i], turns[i], ends[i], &hinges[i]);
    hinge(world, planks[PLANKS - 1], centers[PLANKS - 1], turns[PLANKS - 1], right, right_at, 0.0f, ends[PLANKS],
          &hinges[PLANKS]);

    KilnBodyId boxes[BOXES];
    unsigned dropped = 0;
    printf("Kiln %s: a bridge of %d planks on %d hinges, %d boxes crossing\n", kiln_version_string(), PLANKS, HINGES,
           BOXES);
    printf("%6s %8s %12s %9s\n", "time", "sag m", "lead box x", "step ms");
    KilnWorldProfile sum = {0};
    float sag = 0.0f, bare = 0.0f, before = 0.0f;
    unsigned broken = 0;
    for (unsigned frame = 0; frame < frames; frame++) {
        /* A box every second from 1 s, dropped at the left end and pushed right. */
        if (frame >= 60 && frame % 60 == 0 && dropped < BOXES) {
            boxes[dropped] = box_body(world, KILN_MOTION_DYNAMIC, (KilnVec3){2.0f, top + 0.5f, 0},
                                      (KilnVec3){0.3f, 0.3f, 0.3f}, 300.0f, 0.0f, 0.3f);
            CHECK_STATUS(kiln_body_set_velocity(boxes[dropped], (KilnVec3){3.0f, 0, 0}, (KilnVec3){0, 0, 0}), KILN_OK);
            dropped++;
        }
        CHECK_STATUS(kiln_world_step(world, runtime, 1.0f / 60.0f), KILN_OK);
        uint32_t events = 0;
        CHECK_STATUS(kiln_world_get_joint_events(world, NULL, 0, &events), KILN_OK);
        broken += events;
        KilnWorldProfile p;
        CHECK_STATUS(kiln_world_get_profile(world, &p), KILN_OK);
        sum.broadphase_ms += p.broadphase_ms, sum.narrowphase_ms += p.narrowphase_ms;
        sum.prepare_ms += p.prepare_ms, sum.solve_ms += p.solve_ms;
        sum.continuous_ms += p.continuous_ms, sum.sleep_ms += p.sleep_ms, sum.total_ms += p.total_ms;
        sag = 0.0f;
        for (int i = 0; i < PLANKS; i++) {
            KilnTransform t;
            CHECK_STATUS(kiln_body_get_transform(planks[i], &t), KILN_OK);
            if (top - t.position.y > sag) sag = top - t.position.y;
        }
        if (frame == 59) bare = sag;           /* the bare bridge's sag at 1 s */
        if (frame == frames - 61) before = sag; /* a second before the end */
        if ((frame + 1) % 60 == 0) {
            float lead = 0.0f;
            for (unsigned b = 0; b < dropped; b++) {
                KilnTransform t;
                CHECK_STATUS(kiln_body_get_transform(boxes[b], &t), KILN_OK);
                if (t.position.x > lead) lead = t.position.x;
            }
            printf("%5.1fs %8.3f %12.2f %9.3f\n", (float)(frame + 1) / 60.0f, sag, lead, p.total_ms);
        }
    }
    printf("\nmean ms per step over %u steps:\n", frames);
    const char *names[] = {"broadphase", "narrowphase", "prepare", "solve", "continuous", "sleep", "total"};
    float values[] = {sum.broadphase_ms, sum.narrowphase_ms, sum.prepare_ms, sum.solve_ms,
                      sum.continuous_ms, sum.sleep_ms,       sum.total_ms};
    for (int s = 0; s < 7; s++) printf("  %-12s %8.3f\n", names[s], values[s] / (float)frames);

    /* Every box on the deck (above the lowest plank less its own size) or past it. */
    unsigned on_deck = 0;
    for (unsigned b = 0; b < dropped; b++) {
        KilnTransform t;
        CHECK_STATUS(kiln_body_get_transform(boxes[b], &t), KILN_OK);
        on_deck += isfinite(t.position.y) && t.position.y > top - sag - 1.0f && fabsf(t.position.z) < 1.0f;
    }
    KilnDebugDraw draw = kiln_default_debug_draw();
    Gaps gaps = {0};
    draw.draw_joint = measure;
    draw.user_context = &gaps;
    CHECK_STATUS(kiln_world_debug_draw(world, &draw), KILN_OK);
    unsigned whole = 0;
    for (int k = 0; k < HINGES; k++) whole += kiln_joint_is_valid(hinges[k]);
    printf("\nsag bare %.3f m, loaded %.3f m (a second before %.3f m); %u of %u boxes on the deck; %u of %d hinges "
           "whole, %u broke, anchors apart by at most %.4f m\n",
           bare, sag, before, on_deck, dropped, whole, HINGES, broken, gaps.worst);
    /* 40 m of deck over a 38 m span hangs about 5.3 m (a catenary's 8 h^2 / 3 L of
     * slack); the soft hinges stretch it a little more. It swings no more than the
     * boxes moving on it make it. */
    CHECK(bare > 4.5f && bare < 6.5f && sag < 8.0f && fabsf(sag - before) < 0.5f);
    CHECK(dropped == BOXES && on_deck == BOXES);
    CHECK(whole == HINGES && broken == 0 && gaps.count == HINGES && gaps.worst < 0.02f);
    (void)right;
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(runtime), KILN_OK);
    return check_summary("bridge");
}

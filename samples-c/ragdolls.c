/* ragdolls: ragdolls raining on voxel hills, through the C API.
 *
 * Each ragdoll is 14 capsules (pelvis, spine, chest, head; per side the upper arm,
 * forearm, hand, thigh and shin) on 13 joints: spherical joints with swing cones and
 * twist limits at the waist, neck, shoulders, wrists and hips, revolute joints with
 * limits at the elbows and knees, every joint with a little friction (a zero-speed
 * motor) so limp limbs come to rest. They fall on Kiln's walled test hills, 128 x
 * 128 voxel columns. Steps at 60 Hz on a runtime's workers, printing once a second
 * how many bodies are awake and how many islands sleep; then the mean milliseconds
 * per stage. With an output directory it writes side views of the scene (every
 * capsule seen along z, awake orange, asleep blue) at 0, 2 and 5 s and at the end.
 * Checks: no joint broke, every body finite and above the terrain, every ragdoll
 * asleep as one island by the end, and the joints where they were put (anchors
 * within 2 cm).
 *
 * Exits non-zero when a check fails, so it doubles as a test.
 *
 *   ragdolls [COUNT] [FRAMES] [OUTDIR]   (defaults 300, 900 = 15 s at 60 Hz, no PNGs) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln.h"
#include "render.h"
#include "tests/check.h"

enum { PARTS = 14, JOINTS = 13, WIDTH = 768, HEIGHT = 256 };

/* One capsule of a ragdoll: its segment in the ragdoll's frame, and its radius. */
typedef struct Part {
    KilnVec3 from, to;
    float radius;
} Part;

static KilnVec3 add(KilnVec3 a, KilnVec3 b) { return (KilnVec3){a.x + b.x, a.y + b.y, a.z + b.z}; }
static KilnVec3 sub(KilnVec3 a, KilnVec3 b) { return (KilnVec3){a.x - b.x, a.y - b.y, a.z - b.z}; }
static KilnVec3 scale(KilnVec3 a, float s) { return (KilnVec3){a.x * s, a.y * s, a.z * s}; }

/* The rotation taking z onto the unit `axis` (axes here are +-x, +-y). */
static KilnQuat z_to(KilnVec3 axis) {
    float d = axis.z;
    if (d < -0.999f) return (KilnQuat){1, 0, 0, 0};
    KilnVec3 c = {-axis.y, axis.x, 0.0f}; /* z x axis */
    float w = 1.0f + d, n = sqrtf(c.x * c.x + c.y * c.y + w * w);
    return (KilnQuat){c.x / n, c.y / n, 0.0f, w / n};
}

static KilnVec3 rotate(const float q[4], KilnVec3 v) {
    KilnVec3 u = {q[0], q[1], q[2]};
    KilnVec3 t = scale((KilnVec3){u.y * v.z - u.z * v.y, u.z * v.x - u.x * v.z, u.x * v.y - u.y * v.x}, 2.0f);
    KilnVec3 c = {u.y * t.z - u.z * t.y, u.z * t.x - u.x * t.z, u.x * t.y - u.y * t.x};
    return add(add(v, scale(t, q[3])), c);
}

static const float FRICTION = 0.2f; /* N m: see the header */

/* How many joints debug drawing reported, and their frames' largest gap. */
typedef struct JointGaps {
    unsigned count;
    float worst;
} JointGaps;

static void measure_joint(const KilnJointDraw *joint, void *user) {
    JointGaps *gaps = user;
    KilnVec3 d = sub(joint->frame_b.position, joint->frame_a.position);
    float gap = sqrtf(d.x * d.x + d.y * d.y + d.z * d.z);
    gaps->count++;
    if (gap > gaps->worst) gaps->worst = gap;
}

/* Creates a ragdoll standing with its pelvis at `at`: bodies into `bodies` (14),
 * joints into `joints` (13). Each body's frame sits at its capsule's centre. */
static void ragdoll(KilnWorldId world, KilnVec3 at, KilnBodyId *bodies, KilnJointId *joints, Part *parts) {
    const Part shape[PARTS] = {
        {{-0.1f, 0.0f, 0}, {0.1f, 0.0f, 0}, 0.12f},    {{0, 0.15f, 0}, {0, 0.3f, 0}, 0.13f},
        {{0, 0.4f, 0}, {0, 0.5f, 0}, 0.15f},           {{0, 0.75f, 0}, {0, 0.8f, 0}, 0.1f},
        {{-0.27f, 0.55f, 0}, {-0.5f, 0.55f, 0}, 0.06f}, {{-0.58f, 0.55f, 0}, {-0.78f, 0.55f, 0}, 0.05f},
        {{-0.86f, 0.55f, 0}, {-0.9f, 0.55f, 0}, 0.05f}, {{-0.12f, -0.12f, 0}, {-0.12f, -0.45f, 0}, 0.08f},
        {{-0.12f, -0.58f, 0}, {-0.12f, -0.9f, 0}, 0.07f}, {{0.27f, 0.55f, 0}, {0.5f, 0.55f, 0}, 0.06f},
        {{0.58f, 0.55f, 0}, {0.78f, 0.55f, 0}, 0.05f},  {{0.86f, 0.55f, 0}, {0.9f, 0.55f, 0}, 0.05f},
        {{0.12f, -0.12f, 0}, {0.12f, -0.45f, 0}, 0.08f}, {{0.12f, -0.58f, 0}, {0.12f, -0.9f, 0}, 0.07f},
    };
    for (int i = 0; i < PARTS; i++) {
        KilnVec3 mid = scale(add(shape[i].from, shape[i].to), 0.5f);
        KilnBodyDef def = kiln_default_body_def();
        def.transform.position = add(at, mid);
        CHECK_STATUS(kiln_body_create(world, &def, &bodies[i]), KILN_OK);
        KilnShapeId capsule;
        parts[i] = (Part){sub(shape[i].from, mid), sub(shape[i].to, mid), shape[i].radius};
        CHECK_STATUS(kiln_shape_create_capsule(parts[i].from, parts[i].to, parts[i].radius, &capsule), KILN_OK);
        KilnShapeDef sdef = kiln_default_shape_def();
        CHECK_STATUS(kiln_body_add_shape(bodies[i], capsule, &sdef, NULL), KILN_OK);
        CHECK_STATUS(kiln_shape_destroy(capsule), KILN_OK); /* the body keeps a copy */
    }
    /* a, b, anchor (ragdoll frame), axis, kind: 0 spherical (cone, twist), 1 hinge. */
    const struct {
        int a, b;
        KilnVec3 anchor, axis;
        int hinge;
        float x, y;
    } spec[JOINTS] = {
        {0, 1, {0, 0.08f, 0}, {0, 1, 0}, 0, 0.4f, 0.3f},        {1, 2, {0, 0.35f, 0}, {0, 1, 0}, 0, 0.3f, 0.3f},
        {2, 3, {0, 0.65f, 0}, {0, 1, 0}, 0, 0.5f, 0.6f},        {2, 4, {-0.22f, 0.55f, 0}, {-1, 0, 0}, 0, 1.2f, 0.5f},
        {4, 5, {-0.54f, 0.55f, 0}, {0, 1, 0}, 1, 0.0f, 2.5f},    {5, 6, {-0.82f, 0.55f, 0}, {-1, 0, 0}, 0, 0.6f, 0.3f},
        {0, 7, {-0.12f, -0.05f, 0}, {0, -1, 0}, 0, 0.8f, 0.3f}, {7, 8, {-0.12f, -0.52f, 0}, {1, 0, 0}, 1, -2.5f, 0.0f},
        {2, 9, {0.22f, 0.55f, 0}, {1, 0, 0}, 0, 1.2f, 0.5f},     {9, 10, {0.54f, 0.55f, 0}, {0, 1, 0}, 1, 0.0f, 2.5f},
        {10, 11, {0.82f, 0.55f, 0}, {1, 0, 0}, 0, 0.6f, 0.3f},   {0, 12, {0.12f, -0.05f, 0}, {0, -1, 0}, 0, 0.8f, 0.3f},
        {12, 13, {0.12f, -0.52f, 0}, {1, 0, 0}, 1, -2.5f, 0.0f},
    };
    for (int k = 0; k < JOINTS; k++) {
        KilnVec3 mid_a = scale(add(shape[spec[k].a].from, shape[spec[k].a].to), 0.5f);
        KilnVec3 mid_b = scale(add(shape[spec[k].b].from, shape[spec[k].b].to), 0.5f);
        KilnJointBase base = kiln_default_spherical_joint_def().base;
        base.body_a = bodies[spec[k].a];
        base.body_b = bodies[spec[k].b];
        base.frame_a = (KilnTransform){sub(spec[k].anchor, mid_a), z_to(spec[k].axis)};
        base.frame_b = (KilnTransform){sub(spec[k].anchor, mid_b), z_to(spec[k].axis)};
        if (spec[k].hinge) {
            KilnRevoluteJointDef def = kiln_default_revolute_joint_def();
            def.base = base;
            def.enable_limit = true, def.lower = spec[k].x, def.upper = spec[k].y;
            def.enable_motor = true, def.max_motor_torque = FRICTION;
            CHECK_STATUS(kiln_joint_create_revolute(world, &def, &joints[k]), KILN_OK);
        } else {
            KilnSphericalJointDef def = kiln_default_spherical_joint_def();
            def.base = base;
            def.enable_cone_limit = true, def.cone_angle = spec[k].x;
            def.enable_twist_limit = true, def.lower_twist = -spec[k].y, def.upper_twist = spec[k].y;
            def.enable_motor = true, def.max_motor_torque = FRICTION;
            CHECK_STATUS(kiln_joint_create_spherical(world, &def, &joints[k]), KILN_OK);
        }
    }
}

/* Draws every capsule seen along z into `pixels` (x 0..128 m across, y 0..128/3 m
 * up): awake orange, asleep blue. */
static void side_view(KilnWorldId world, const KilnBodyId *bodies, const Part *parts, unsigned count, uint8_t *pixels) {
    for (int i = 0; i < WIDTH * HEIGHT; i++) pixels[3 * i] = 235, pixels[3 * i + 1] = 240, pixels[3 * i + 2] = 245;
    float px_per_m = (float)WIDTH / 128.0f;
    float (*positions)[3] = malloc(count * sizeof *positions);
    float (*rotations)[4] = malloc(count * sizeof *rotations);
    CHECK_STATUS(kiln_world_get_transforms(world, bodies, count, positions[0], 0, rotations[0], 0), KILN_OK);
    for (unsigned i = 0; i < count; i++) {
        bool awake = false;
        kiln_body_is_awake(bodies[i], &awake);
        const uint8_t color[3] = {(uint8_t)(awake ? 230 : 70), (uint8_t)(awake ? 140 : 90), (uint8_t)(awake ? 40 : 170)};
        const Part *part = &parts[i % PARTS];
        KilnVec3 center = {positions[i][0], positions[i][1], positions[i][2]};
        KilnVec3 a = add(center, rotate(rotations[i], part->from)), b = add(center, rotate(rotations[i], part->to));
        for (int s = 0; s <= 8; s++) {
            KilnVec3 p = add(a, scale(sub(b, a), (float)s / 8.0f));
            int cx = (int)(p.x * px_per_m), cy = HEIGHT - 1 - (int)(p.y * px_per_m);
            int r = (int)ceilf(part->radius * px_per_m);
            for (int y = cy - r; y <= cy + r; y++)
                for (int x = cx - r; x <= cx + r; x++)
                    if (x >= 0 && y >= 0 && x < WIDTH && y < HEIGHT && (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r)
                        for (int c = 0; c < 3; c++) pixels[3 * (y * WIDTH + x) + c] = color[c];
        }
    }
    free(positions);
    free(rotations);
}

int main(int argc, char **argv) {
    unsigned count = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 300u;
    unsigned frames = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 900u;
    const char *outdir = argc > 3 ? argv[3] : NULL;
    if (count < 1 || count > 5000) count = 300;
    if (kiln_check_linked_abi() != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_last_error_message());
        return 1;
    }
    KilnRuntimeDef rdef = kiln_default_runtime_def();
    KilnRuntimeId runtime;
    CHECK_STATUS(kiln_runtime_create(&rdef, &runtime), KILN_OK);
    uint32_t workers = 0;
    kiln_runtime_get_worker_count(runtime, &workers);
    KilnTerrainId terrain;
    CHECK_STATUS(create_walled_hills(128, 40, runtime, &terrain), KILN_OK);
    KilnWorldDef wdef = kiln_default_world_def();
    /* Water off: bodies of the default density (the water's own) would hover in the
     * hills' lakes for half a minute; this sample is about the terrain's contacts
     * (tests/water.c floats things). */
    wdef.water_density = 0.0f;
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(&wdef, &world), KILN_OK);
    CHECK_STATUS(kiln_world_set_terrain(world, terrain), KILN_OK);

    /* A grid over the middle of the hills, each ragdoll 3 to 6 m above the ground. */
    unsigned n = count * PARTS;
    KilnBodyId *bodies = calloc(n, sizeof *bodies);
    KilnJointId *joints = calloc(count * JOINTS, sizeof *joints);
    Part *parts = calloc(PARTS, sizeof *parts);
    unsigned side = (unsigned)ceil(sqrt((double)count));
    float spacing = fminf(4.0f, 100.0f / (float)side);
    for (unsigned i = 0; i < count; i++) {
        float x = 14.0f + spacing * ((float)(i % side) + 0.5f), z = 14.0f + spacing * ((float)(i / side) + 0.5f);
        KilnVec3 at = {x, ground(terrain, x, z) + 3.0f + (float)(i % 4), z};
        ragdoll(world, at, &bodies[i * PARTS], &joints[i * JOINTS], parts);
    }
    printf("Kiln %s: %u ragdolls (%u capsules, %u joints) on 128 x 128 voxel hills, %u workers\n",
           kiln_version_string(), count, n, count * JOINTS, workers);
    printf("%6s %8s %10s %9s\n", "time", "awake", "sleeping", "step ms");

    uint8_t *pixels = outdir ? malloc(3 * WIDTH * HEIGHT) : NULL;
    KilnWorldProfile sum = {0};
    KilnWorldCounters counters = {0};
    unsigned broken = 0, pictures = 0;
    for (unsigned frame = 0; frame <= frames; frame++) {
        int picture = frame == 0 || frame == 120 || frame == 300 || frame == frames;
        if (pixels && picture) {
            char path[1024];
            snprintf(path, sizeof path, "%s/ragdolls_%04u.png", outdir, frame);
            side_view(world, bodies, parts, n, pixels);
            if (write_png(path, WIDTH, HEIGHT, 3, pixels) == 0) pictures++;
        }
        if (frame == frames) break;
        CHECK_STATUS(kiln_world_step(world, runtime, 1.0f / 60.0f), KILN_OK);
        uint32_t events = 0;
        CHECK_STATUS(kiln_world_get_joint_events(world, NULL, 0, &events), KILN_OK);
        broken += events;
        KilnWorldProfile p;
        CHECK_STATUS(kiln_world_get_profile(world, &p), KILN_OK);
        sum.broadphase_ms += p.broadphase_ms, sum.narrowphase_ms += p.narrowphase_ms;
        sum.prepare_ms += p.prepare_ms, sum.solve_ms += p.solve_ms;
        sum.continuous_ms += p.continuous_ms, sum.sleep_ms += p.sleep_ms, sum.total_ms += p.total_ms;
        CHECK_STATUS(kiln_world_get_counters(world, &counters), KILN_OK);
        if ((frame + 1) % 60 == 0)
            printf("%5.1fs %8u %10u %9.3f\n", (float)(frame + 1) / 60.0f, counters.awake_body_count,
                   counters.sleeping_island_count, p.total_ms);
    }
    printf("\nmean ms per step over %u steps:\n", frames);
    const char *names[] = {"broadphase", "narrowphase", "prepare", "solve", "continuous", "sleep", "total"};
    float values[] = {sum.broadphase_ms, sum.narrowphase_ms, sum.prepare_ms, sum.solve_ms,
                      sum.continuous_ms, sum.sleep_ms,       sum.total_ms};
    for (int s = 0; s < 7; s++) printf("  %-12s %8.3f\n", names[s], values[s] / (float)(frames ? frames : 1));

    /* Every body finite and above the ground; every joint whole, its anchors together. */
    unsigned finite = 0, above = 0, whole = 0, asleep = 0;
    float worst_gap = 0.0f;
    for (unsigned i = 0; i < n; i++) {
        KilnTransform t;
        CHECK_STATUS(kiln_body_get_transform(bodies[i], &t), KILN_OK);
        int ok = isfinite(t.position.x) && isfinite(t.position.y) && isfinite(t.position.z);
        finite += ok;
        above += ok && t.position.y - ground(terrain, t.position.x, t.position.z) > -0.1f;
        bool awake = true;
        CHECK_STATUS(kiln_body_is_awake(bodies[i], &awake), KILN_OK);
        asleep += !awake;
    }
    for (unsigned k = 0; k < count * JOINTS; k++) {
        whole += kiln_joint_is_valid(joints[k]);
        KilnVec3 force, torque;
        CHECK_STATUS(kiln_joint_get_reaction(joints[k], &force, &torque), KILN_OK);
        CHECK(isfinite(force.x + force.y + force.z + torque.x + torque.y + torque.z));
    }
    /* The anchors of every joint together, as debug drawing reports the frames. */
    KilnDebugDraw draw = kiln_default_debug_draw();
    JointGaps gaps = {0};
    draw.draw_joint = measure_joint;
    draw.user_context = &gaps;
    CHECK_STATUS(kiln_world_debug_draw(world, &draw), KILN_OK);
    worst_gap = gaps.worst;
    printf("\n%u of %u bodies finite, %u above the terrain, %u asleep; %u of %u joints whole, %u broke, anchors "
           "apart by at most %.4f m; %u pictures\n",
           finite, n, above, asleep, whole, count * JOINTS, broken, worst_gap, pictures);
    CHECK(finite == n && above == n);
    CHECK(whole == count * JOINTS && broken == 0 && gaps.count == count * JOINTS && worst_gap < 0.02f);
    CHECK(asleep >= n * 9 / 10); /* nearly all asleep by 15 s */
    CHECK(!outdir || pictures == 4);
    free(pixels);
    free(parts);
    free(joints);
    free(bodies);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(runtime), KILN_OK);
    return check_summary("ragdolls");
}

/* Joints from C: a hinge motor spins a wheel, a rope holds a ball at its length, a
 * weld breaks once under load and says so; then every joint function with NULL
 * pointers, stale, null and foreign handles, NaN, infinite, zero and huge numbers,
 * wrong struct sizes: each refused with its status and a message, nothing changed. */
#include <math.h>
#include <stdint.h>

#include "kiln.h"
#include "check.h"

static KilnBodyId body(KilnWorldId world, KilnShapeId shape, uint32_t motion, float x, float y) {
    KilnBodyDef def = kiln_default_body_def();
    def.motion_type = motion;
    def.transform.position = (KilnVec3){x, y, 0};
    def.allow_sleep = false;
    KilnBodyId id = {0};
    CHECK_STATUS(kiln_body_create(world, &def, &id), KILN_OK);
    KilnShapeDef shape_def = kiln_default_shape_def();
    CHECK_STATUS(kiln_body_add_shape(id, shape, &shape_def, NULL), KILN_OK);
    return id;
}

typedef struct Drawn {
    uint32_t count;
    KilnJointDraw last;
} Drawn;

static void draw_joint(const KilnJointDraw *joint, void *user) {
    Drawn *drawn = user;
    drawn->count++;
    drawn->last = *joint;
}

static uint32_t joint_events(KilnWorldId world, KilnJointEvent *events, uint32_t capacity) {
    uint32_t count = 99;
    CHECK_STATUS(kiln_world_get_joint_events(world, events, capacity, &count), KILN_OK);
    return count;
}

/* The joints work from C: values, motors, springs, limits and breaking. */
static void working_joints(KilnRuntimeId rt, KilnShapeId box, KilnShapeId ball) {
    KilnWorldDef wdef = kiln_default_world_def();
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(&wdef, &world), KILN_OK);
    KilnBodyId post = body(world, box, KILN_MOTION_STATIC, 0, 10);

    /* A wheel on a hinge along z, driven at 5 rad/s. */
    KilnBodyId wheel = body(world, box, KILN_MOTION_DYNAMIC, 0, 10);
    KilnRevoluteJointDef hinge = kiln_default_revolute_joint_def();
    hinge.base.body_a = post;
    hinge.base.body_b = wheel;
    hinge.enable_motor = true;
    hinge.motor_speed = 5.0f;
    hinge.max_motor_torque = 1e4f;
    KilnJointId motor;
    CHECK_STATUS(kiln_joint_create_revolute(world, &hinge, &motor), KILN_OK);
    uint32_t type = 99;
    CHECK_STATUS(kiln_joint_get_type(motor, &type), KILN_OK);
    CHECK(type == KILN_JOINT_REVOLUTE);

    /* A ball on a 2 m rope: a distance joint with a zero-frequency spring and a
     * limit, anchored 2 m to the side so it swings down. */
    KilnBodyId bob = body(world, ball, KILN_MOTION_DYNAMIC, 12, 10);
    KilnDistanceJointDef rope = kiln_default_distance_joint_def();
    rope.base.body_a = post;
    rope.base.body_b = bob;
    rope.base.frame_a.position = (KilnVec3){10, 0, 0};
    rope.length = 2.0f;
    rope.enable_spring = true;
    rope.enable_limit = true;
    rope.min_length = 0.0f;
    rope.max_length = 2.0f;
    KilnJointId rope_id;
    CHECK_STATUS(kiln_joint_create_distance(world, &rope, &rope_id), KILN_OK);

    /* A crate on a weld that breaks at twice its weight, pulled harder later. */
    KilnBodyId crate = body(world, box, KILN_MOTION_DYNAMIC, -5, 8);
    KilnFixedJointDef weld = kiln_default_fixed_joint_def();
    weld.base.body_a = post;
    weld.base.body_b = crate;
    weld.base.frame_a.position = (KilnVec3){-5, -2, 0};
    float mass = 0;
    CHECK_STATUS(kiln_body_get_mass(crate, &mass), KILN_OK);
    weld.base.break_force = 2.0f * mass * 9.81f;
    KilnJointId weld_id;
    CHECK_STATUS(kiln_joint_create_fixed(world, &weld, &weld_id), KILN_OK);

    KilnJointEvent events[4];
    uint32_t broke = 0;
    float longest = 0;
    for (int step = 0; step < 120; step++) {
        if (step >= 60) CHECK_STATUS(kiln_body_apply_force(crate, (KilnVec3){0, -4.0f * mass * 9.81f, 0}), KILN_OK);
        CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
        uint32_t n = joint_events(world, events, 4);
        for (uint32_t i = 0; i < n && i < 4; i++) {
            CHECK(events[i].kind == KILN_JOINT_EVENT_BROKE && events[i].joint.index1 == weld_id.index1);
            broke++;
        }
        float length = 0;
        CHECK_STATUS(kiln_joint_get_value(rope_id, &length), KILN_OK);
        if (length > longest) longest = length;
    }
    CHECK(broke == 1);
    CHECK(!kiln_joint_is_valid(weld_id));
    CHECK(longest < 2.01f);
    KilnVec3 v, w;
    CHECK_STATUS(kiln_body_get_velocity(wheel, &v, &w), KILN_OK);
    CHECK(fabsf(w.z - 5.0f) < 0.05f);
    KilnVec3 force, torque;
    CHECK_STATUS(kiln_joint_get_reaction(motor, &force, &torque), KILN_OK);
    CHECK(isfinite(force.y) && isfinite(torque.z));

    /* Debug drawing: the two joints left, the motor's frames together on its axis. */
    KilnDebugDraw draw = kiln_default_debug_draw();
    Drawn drawn = {0};
    draw.draw_joint = draw_joint;
    draw.user_context = &drawn;
    CHECK_STATUS(kiln_world_debug_draw(world, &draw), KILN_OK);
    CHECK(drawn.count == 2);
    KilnJointDraw first = drawn.last;
    CHECK(first.joint.index1 == rope_id.index1 && first.joint_type == KILN_JOINT_DISTANCE);
    CHECK(first.limit_enabled && first.upper == 2.0f);
    draw.draw_joint = NULL;
    drawn.count = 0;
    CHECK_STATUS(kiln_world_debug_draw(world, &draw), KILN_OK);
    CHECK(drawn.count == 0);

    /* Settings read back as set; a stopped motor brakes the wheel. */
    CHECK_STATUS(kiln_joint_set_motor(motor, true, 0.0f, 1e4f), KILN_OK);
    bool enabled = false;
    float speed = 1, max = 0, lower = 0, upper = 0, hz = 0, zeta = 0, target = 0;
    CHECK_STATUS(kiln_joint_get_motor(motor, &enabled, &speed, &max), KILN_OK);
    CHECK(enabled && speed == 0.0f && max == 1e4f);
    CHECK_STATUS(kiln_joint_set_limits(motor, true, -0.5f, 0.5f), KILN_OK);
    CHECK_STATUS(kiln_joint_get_limits(motor, &enabled, &lower, &upper), KILN_OK);
    CHECK(enabled && lower == -0.5f && upper == 0.5f);
    CHECK_STATUS(kiln_joint_set_spring(rope_id, true, 2.0f, 0.5f, 1.5f), KILN_OK);
    CHECK_STATUS(kiln_joint_get_spring(rope_id, &enabled, &hz, &zeta, &target), KILN_OK);
    CHECK(enabled && hz == 2.0f && zeta == 0.5f && target == 1.5f);
    for (int step = 0; step < 30; step++) CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
    CHECK_STATUS(kiln_body_get_velocity(wheel, &v, &w), KILN_OK);
    CHECK(fabsf(w.z) < 0.05f);

    /* Destroying a body takes its joints along, reported with the next step. */
    KilnBodyId a, b;
    CHECK_STATUS(kiln_joint_get_bodies(rope_id, &a, &b), KILN_OK);
    CHECK(a.index1 == post.index1 && b.index1 == bob.index1);
    CHECK_STATUS(kiln_body_destroy(post), KILN_OK);
    CHECK(!kiln_joint_is_valid(motor) && !kiln_joint_is_valid(rope_id));
    CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
    CHECK(joint_events(world, NULL, 0) == 2);
    CHECK(joint_events(world, events, 1) == 2);
    CHECK(events[0].kind == KILN_JOINT_EVENT_BODY_DESTROYED);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
}

/* Every joint function refuses bad input with its status and a message. */
static void bad_joints(KilnRuntimeId rt, KilnShapeId box) {
    KilnWorldDef wdef = kiln_default_world_def();
    KilnWorldId world, other;
    CHECK_STATUS(kiln_world_create(&wdef, &world), KILN_OK);
    CHECK_STATUS(kiln_world_create(&wdef, &other), KILN_OK);
    KilnBodyId ground = body(world, box, KILN_MOTION_STATIC, 0, 0);
    KilnBodyId ground2 = body(world, box, KILN_MOTION_STATIC, 5, 0);
    KilnBodyId a = body(world, box, KILN_MOTION_DYNAMIC, 0, 2);
    KilnBodyId foreign = body(other, box, KILN_MOTION_DYNAMIC, 0, 2);
    KilnBodyId stale = body(world, box, KILN_MOTION_DYNAMIC, 0, 4);
    CHECK_STATUS(kiln_body_destroy(stale), KILN_OK);

    KilnSphericalJointDef def = kiln_default_spherical_joint_def();
    def.base.body_a = ground;
    def.base.body_b = a;
    KilnJointId j = {7, 7, world};
    CHECK_STATUS(kiln_joint_create_spherical(world, NULL, &j), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_joint_create_spherical(world, &def, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_joint_create_spherical((KilnWorldId){0, 0}, &def, &j), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("another world");
    KilnSphericalJointDef bad = def;
    bad.struct_size = 4;
    CHECK_STATUS(kiln_joint_create_spherical(world, &bad, &j), KILN_ERROR_STRUCT_SIZE);
    bad = def;
    bad.base.body_b = a;
    bad.base.body_a = a;
    CHECK_STATUS(kiln_joint_create_spherical(world, &bad, &j), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("same body");
    bad = def;
    bad.base.body_b = ground2;
    CHECK_STATUS(kiln_joint_create_spherical(world, &bad, &j), KILN_ERROR_INVALID_ARGUMENT);
    bad = def;
    bad.base.body_b = stale;
    CHECK_STATUS(kiln_joint_create_spherical(world, &bad, &j), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("stale");
    bad = def;
    bad.base.body_b = foreign;
    CHECK_STATUS(kiln_joint_create_spherical(world, &bad, &j), KILN_ERROR_INVALID_ARGUMENT);
    bad.base.body_b = (KilnBodyId){0};
    CHECK_STATUS(kiln_joint_create_spherical(world, &bad, &j), KILN_ERROR_INVALID_ARGUMENT);
    bad = def;
    bad.base.frame_a.position.x = NAN;
    CHECK_STATUS(kiln_joint_create_spherical(world, &bad, &j), KILN_ERROR_INVALID_ARGUMENT);
    bad = def;
    bad.base.frame_a.position.y = 1e30f;
    CHECK_STATUS(kiln_joint_create_spherical(world, &bad, &j), KILN_ERROR_INVALID_ARGUMENT);
    bad = def;
    bad.base.frame_b.rotation.w = 0.0f;
    CHECK_STATUS(kiln_joint_create_spherical(world, &bad, &j), KILN_ERROR_INVALID_ARGUMENT);
    bad = def;
    bad.base.break_force = NAN;
    CHECK_STATUS(kiln_joint_create_spherical(world, &bad, &j), KILN_ERROR_INVALID_ARGUMENT);
    bad = def;
    bad.cone_angle = INFINITY;
    CHECK_STATUS(kiln_joint_create_spherical(world, &bad, &j), KILN_ERROR_INVALID_ARGUMENT);
    bad = def;
    bad.lower_twist = 1.0f, bad.upper_twist = -1.0f;
    CHECK_STATUS(kiln_joint_create_spherical(world, &bad, &j), KILN_ERROR_INVALID_ARGUMENT);
    KilnRevoluteJointDef hinge = kiln_default_revolute_joint_def();
    hinge.base = def.base;
    hinge.max_motor_torque = -1.0f;
    CHECK_STATUS(kiln_joint_create_revolute(world, &hinge, &j), KILN_ERROR_INVALID_ARGUMENT);
    hinge.max_motor_torque = 0.0f, hinge.lower = 1e30f, hinge.upper = 1e30f;
    CHECK_STATUS(kiln_joint_create_revolute(world, &hinge, &j), KILN_ERROR_INVALID_ARGUMENT);
    KilnPrismaticJointDef slider = kiln_default_prismatic_joint_def();
    slider.base = def.base;
    slider.motor_speed = NAN;
    CHECK_STATUS(kiln_joint_create_prismatic(world, &slider, &j), KILN_ERROR_INVALID_ARGUMENT);
    KilnFixedJointDef weld = kiln_default_fixed_joint_def();
    weld.base = def.base;
    weld.linear_hertz = -INFINITY;
    CHECK_STATUS(kiln_joint_create_fixed(world, &weld, &j), KILN_ERROR_INVALID_ARGUMENT);
    KilnDistanceJointDef rope = kiln_default_distance_joint_def();
    rope.base = def.base;
    rope.min_length = 2.0f, rope.max_length = 1.0f;
    CHECK_STATUS(kiln_joint_create_distance(world, &rope, &j), KILN_ERROR_INVALID_ARGUMENT);
    CHECK(j.index1 == 7 && j.generation == 7);
    /* Nothing was created: the world steps with no joint events. */
    CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
    CHECK(joint_events(world, NULL, 0) == 0);

    /* A real joint, then the functions on it with bad arguments. */
    CHECK_STATUS(kiln_joint_create_spherical(world, &def, &j), KILN_OK);
    uint32_t type;
    bool on;
    float x, y, z, t;
    KilnVec3 f, q;
    KilnBodyId ba, bb;
    CHECK_STATUS(kiln_joint_get_type(j, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_joint_get_bodies(j, &ba, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_joint_get_reaction(j, NULL, &q), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_joint_get_value(j, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_joint_get_limits(j, &on, NULL, &y), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_joint_get_motor(j, &on, &x, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_joint_get_spring(j, &on, &x, &y, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_joint_get_cone_limit(j, NULL, &x), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_get_joint_events(world, NULL, 1, &type), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_world_get_joint_events(world, NULL, 0, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_joint_set_limits(j, true, NAN, 0.0f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_joint_set_limits(j, true, 1.0f, -1.0f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_joint_set_cone_limit(j, true, -1.0f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_joint_set_cone_limit(j, true, 1e30f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_joint_set_motor(j, true, INFINITY, 1.0f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_joint_set_motor(j, true, 1.0f, -1.0f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_joint_set_spring(j, true, NAN, 1.0f, 0.0f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_joint_set_spring(j, true, 1.0f, 1.0f, 0.5f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("target 0");
    /* The settings are unchanged. */
    CHECK_STATUS(kiln_joint_get_limits(j, &on, &x, &y), KILN_OK);
    CHECK(!on && x == def.lower_twist && y == def.upper_twist);
    CHECK_STATUS(kiln_joint_get_cone_limit(j, &on, &x), KILN_OK);
    CHECK(!on && x == def.cone_angle);
    /* Settings a kind does not have. */
    KilnJointId w;
    CHECK_STATUS(kiln_joint_create_fixed(world, &weld, &w), KILN_ERROR_INVALID_ARGUMENT);
    weld.linear_hertz = 0.0f;
    CHECK_STATUS(kiln_joint_create_fixed(world, &weld, &w), KILN_OK);
    CHECK_STATUS(kiln_joint_set_limits(w, true, 0.0f, 1.0f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("no limits");
    /* A weld's spring: bad numbers refused even when switching it off; a soft weld reads back. */
    CHECK_STATUS(kiln_joint_set_spring(w, false, NAN, 1.0f, 0.0f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_joint_set_spring(w, true, 5.0f, -1.0f, 0.0f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_joint_set_spring(w, true, 5.0f, 0.7f, 0.0f), KILN_OK);
    CHECK_STATUS(kiln_joint_get_spring(w, &on, &x, &y, &z), KILN_OK);
    CHECK(on && x == 5.0f && y == 0.7f);
    CHECK_STATUS(kiln_joint_set_spring(w, false, 0.0f, 0.0f, 0.0f), KILN_OK);
    CHECK_STATUS(kiln_joint_get_spring(w, &on, &x, &y, &z), KILN_OK);
    CHECK(!on && x == 0.0f);
    CHECK_STATUS(kiln_joint_set_motor(w, true, 0.0f, 1.0f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_joint_get_cone_limit(w, &on, &x), KILN_ERROR_INVALID_ARGUMENT);

    /* Six-DOF: modes and limits checked, settings read back and replaced. */
    KilnSixDofJointDef six = kiln_default_six_dof_joint_def();
    six.base = def.base;
    KilnJointId g;
    six.linear_mode[1] = 7;
    CHECK_STATUS(kiln_joint_create_six_dof(world, &six, &g), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("KILN_DOF_");
    six.linear_mode[1] = KILN_DOF_LIMITED, six.linear_lower[1] = 1.0f, six.linear_upper[1] = -1.0f;
    CHECK_STATUS(kiln_joint_create_six_dof(world, &six, &g), KILN_ERROR_INVALID_ARGUMENT);
    six.linear_upper[1] = INFINITY;
    CHECK_STATUS(kiln_joint_create_six_dof(world, &six, &g), KILN_ERROR_INVALID_ARGUMENT);
    six.linear_upper[1] = 2.0f;
    six.angular_mode[2] = KILN_DOF_LIMITED, six.angular_lower[2] = -4.0f;
    CHECK_STATUS(kiln_joint_create_six_dof(world, &six, &g), KILN_ERROR_INVALID_ARGUMENT);
    six.angular_lower[2] = -1.0f, six.max_motor_force[3] = -1.0f;
    CHECK_STATUS(kiln_joint_create_six_dof(world, &six, &g), KILN_ERROR_INVALID_ARGUMENT);
    six.max_motor_force[3] = 10.0f, six.motor_speed[3] = NAN;
    CHECK_STATUS(kiln_joint_create_six_dof(world, &six, &g), KILN_ERROR_INVALID_ARGUMENT);
    six.motor_speed[3] = 1.0f;
    CHECK_STATUS(kiln_joint_create_six_dof(world, NULL, &g), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_joint_create_six_dof(world, &six, &g), KILN_OK);
    CHECK_STATUS(kiln_joint_get_type(g, &type), KILN_OK);
    CHECK(type == KILN_JOINT_SIX_DOF);
    KilnSixDofJointDef back;
    CHECK_STATUS(kiln_joint_get_six_dof(g, &back), KILN_OK);
    CHECK(back.linear_mode[1] == KILN_DOF_LIMITED && back.linear_upper[1] == 2.0f && back.angular_lower[2] == -1.0f);
    CHECK(back.base.body_b.index1 == a.index1 && back.motor_speed[3] == 1.0f && back.max_motor_force[3] == 10.0f);
    back.angular_mode[0] = 9;
    CHECK_STATUS(kiln_joint_set_six_dof(g, &back), KILN_ERROR_INVALID_ARGUMENT);
    back.angular_mode[0] = KILN_DOF_FREE;
    CHECK_STATUS(kiln_joint_set_six_dof(g, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_joint_get_six_dof(g, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_joint_set_six_dof(g, &back), KILN_OK);
    CHECK_STATUS(kiln_joint_get_six_dof(g, &back), KILN_OK);
    CHECK(back.angular_mode[0] == KILN_DOF_FREE);
    CHECK_STATUS(kiln_joint_set_six_dof(j, &back), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_joint_get_six_dof(j, &back), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_joint_set_limits(g, true, 0.0f, 1.0f), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_joint_destroy(g), KILN_OK);
    CHECK_STATUS(kiln_joint_get_six_dof(g, &back), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_joint_set_six_dof(g, &back), KILN_ERROR_INVALID_HANDLE);

    /* Stale, null and forged joint handles. */
    KilnJointId gone = w;
    CHECK_STATUS(kiln_joint_destroy(w), KILN_OK);
    KilnJointId handles[3] = {gone, {0, 0, world}, {j.index1, j.generation + 1, world}};
    for (int k = 0; k < 3; k++) {
        KilnJointId h = handles[k];
        CHECK(!kiln_joint_is_valid(h));
        CHECK_STATUS(kiln_joint_destroy(h), KILN_ERROR_INVALID_HANDLE);
        CHECK_STATUS(kiln_joint_get_type(h, &type), KILN_ERROR_INVALID_HANDLE);
        CHECK_STATUS(kiln_joint_get_bodies(h, &ba, &bb), KILN_ERROR_INVALID_HANDLE);
        CHECK_STATUS(kiln_joint_get_reaction(h, &f, &q), KILN_ERROR_INVALID_HANDLE);
        CHECK_STATUS(kiln_joint_get_value(h, &x), KILN_ERROR_INVALID_HANDLE);
        CHECK_STATUS(kiln_joint_set_limits(h, true, 0.0f, 1.0f), KILN_ERROR_INVALID_HANDLE);
        CHECK_STATUS(kiln_joint_get_limits(h, &on, &x, &y), KILN_ERROR_INVALID_HANDLE);
        CHECK_STATUS(kiln_joint_set_cone_limit(h, true, 1.0f), KILN_ERROR_INVALID_HANDLE);
        CHECK_STATUS(kiln_joint_get_cone_limit(h, &on, &x), KILN_ERROR_INVALID_HANDLE);
        CHECK_STATUS(kiln_joint_set_motor(h, true, 1.0f, 1.0f), KILN_ERROR_INVALID_HANDLE);
        CHECK_STATUS(kiln_joint_get_motor(h, &on, &x, &y), KILN_ERROR_INVALID_HANDLE);
        CHECK_STATUS(kiln_joint_set_spring(h, true, 1.0f, 1.0f, 0.0f), KILN_ERROR_INVALID_HANDLE);
        CHECK_STATUS(kiln_joint_get_spring(h, &on, &x, &y, &z), KILN_ERROR_INVALID_HANDLE);
    }
    (void)t;
    /* A destroyed world: its joints and its events are gone with it. */
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK(!kiln_joint_is_valid(j));
    CHECK_STATUS(kiln_joint_get_value(j, &x), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_get_joint_events(world, NULL, 0, &type), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_world_destroy(other), KILN_OK);
}

int main(void) {
    KilnRuntimeDef rdef = kiln_default_runtime_def();
    rdef.thread_count = 1;
    KilnRuntimeId rt;
    CHECK_STATUS(kiln_runtime_create(&rdef, &rt), KILN_OK);
    KilnShapeId box, ball;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 0.5f, 0.5f}, &box), KILN_OK);
    CHECK_STATUS(kiln_shape_create_sphere((KilnVec3){0, 0, 0}, 0.2f, &ball), KILN_OK);
    working_joints(rt, box, ball);
    bad_joints(rt, box);
    CHECK_STATUS(kiln_shape_destroy(box), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(ball), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(rt), KILN_OK);
    return check_summary("joints");
}

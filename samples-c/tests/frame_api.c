/* frame_api: the integrated frame's C API (kiln_frame_*).
 *
 * - The physics it runs is the world's own step: bit-identical to kiln_world_step
 *   and to itself on runtimes of 1 and 4 threads and on the calling thread.
 * - Between runs the world, tracer and volume handles work as always; a run gives
 *   them back whether it succeeds or fails. During a run (probed from inside it,
 *   through a host job system's enqueue callback) the frame, its world and the
 *   world's bodies answer KILN_ERROR_INVALID_STATE with a message, nothing waits
 *   or deadlocks, and the run's result is the same as without the probes.
 * - Bad input gets the documented status and changes nothing: NULLs, struct sizes,
 *   null, stale and mismatched handles, NaN, infinite, negative and huge dt,
 *   queries before the first run, a world, tracer or volume destroyed under a frame.
 * - With a Vulkan device: the tracer's instances show the previous run's poses
 *   (rays find the bodies there), every run updates the volume's probe budget, and
 *   the validation layer stays silent.
 *
 * Exits non-zero when a check fails (or, with KILN_REQUIRE_GPU=1, without a device). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"
#include "../render.h"
#include "check.h"

#define BODIES 120
#define STEPS 90
static const float DT = 1.0f / 60.0f;

typedef struct Scene {
    KilnTerrainId terrain;
    KilnWorldId world;
    KilnBodyId bodies[BODIES];
} Scene;

/* Hills 32 x 32 m with boxes and balls dropped on them: the same bits every time. */
static void scene_create(Scene *s, KilnShapeId box, KilnShapeId ball) {
    KilnTerrainDef tdef = kiln_default_terrain_def();
    CHECK_STATUS(kiln_terrain_create(&tdef, &s->terrain), KILN_OK);
    CHECK_STATUS(kiln_terrain_generate_hills(s->terrain, 32, 5), KILN_OK);
    CHECK_STATUS(kiln_terrain_regenerate(s->terrain, (KilnRuntimeId){0, 0}, NULL), KILN_OK);
    KilnWorldDef wdef = kiln_default_world_def();
    CHECK_STATUS(kiln_world_create(&wdef, &s->world), KILN_OK);
    CHECK_STATUS(kiln_world_set_terrain(s->world, s->terrain), KILN_OK);
    for (int i = 0; i < BODIES; i++) {
        KilnBodyDef def = kiln_default_body_def();
        def.transform.position = (KilnVec3){6.0f + 2.0f * (float)(i % 10), 30.0f + 1.2f * (float)(i / 10),
                                            6.0f + 2.0f * (float)((i / 10) % 10)};
        def.angular_velocity = (KilnVec3){0.3f * (float)(i % 3), 0.1f, 0.2f * (float)(i % 4)};
        CHECK_STATUS(kiln_body_create(s->world, &def, &s->bodies[i]), KILN_OK);
        KilnShapeDef sdef = kiln_default_shape_def();
        CHECK_STATUS(kiln_body_add_shape(s->bodies[i], i % 2 ? ball : box, &sdef, NULL), KILN_OK);
    }
}

static void scene_destroy(Scene *s) {
    CHECK_STATUS(kiln_world_destroy(s->world), KILN_OK);
    CHECK_STATUS(kiln_terrain_destroy(s->terrain), KILN_OK);
}

/* Every body's position and rotation, for bitwise comparison. */
static void read_state(const Scene *s, float out[BODIES][7]) {
    CHECK_STATUS(kiln_world_get_transforms(s->world, s->bodies, BODIES, &out[0][0], sizeof out[0], &out[0][3],
                                           sizeof out[0]),
                 KILN_OK);
}

/* Runs STEPS frames of a physics-only frame on `runtime`; writes the final state. */
static void run_physics(KilnRuntimeId runtime, KilnShapeId box, KilnShapeId ball, float out[BODIES][7]) {
    Scene s;
    scene_create(&s, box, ball);
    KilnFrameDef def = kiln_default_frame_def();
    def.world = s.world;
    KilnFrameId frame;
    CHECK_STATUS(kiln_frame_create(&def, &frame), KILN_OK);
    for (int i = 0; i < STEPS; i++) CHECK_STATUS(kiln_frame_run(frame, runtime, DT), KILN_OK);
    read_state(&s, out);
    KilnFrameTiming timing;
    CHECK_STATUS(kiln_frame_get_timing(frame, &timing), KILN_OK);
    CHECK(timing.frame_index == STEPS - 1 && timing.gpu_ms == 0.0 && timing.probes_updated == 0);
    CHECK(timing.cpu_ms > 0.0 && timing.physics_ms > 0.0 && timing.instance_count == 0);
    CHECK_STATUS(kiln_frame_destroy(frame), KILN_OK);
    scene_destroy(&s);
}

static void check_determinism(KilnShapeId box, KilnShapeId ball) {
    static float reference[BODIES][7], inline_run[BODIES][7], one[BODIES][7], four[BODIES][7];
    Scene s;
    scene_create(&s, box, ball);
    for (int i = 0; i < STEPS; i++) CHECK_STATUS(kiln_world_step(s.world, (KilnRuntimeId){0, 0}, DT), KILN_OK);
    read_state(&s, reference);
    scene_destroy(&s);

    KilnRuntimeDef rdef = kiln_default_runtime_def();
    KilnRuntimeId runtimes[2];
    rdef.thread_count = 0;
    CHECK_STATUS(kiln_runtime_create(&rdef, &runtimes[0]), KILN_OK);
    rdef.thread_count = 3;
    CHECK_STATUS(kiln_runtime_create(&rdef, &runtimes[1]), KILN_OK);
    run_physics((KilnRuntimeId){0, 0}, box, ball, inline_run);
    run_physics(runtimes[0], box, ball, one);
    run_physics(runtimes[1], box, ball, four);
    CHECK(memcmp(reference, inline_run, sizeof reference) == 0);
    CHECK(memcmp(reference, one, sizeof reference) == 0);
    CHECK(memcmp(reference, four, sizeof reference) == 0);
    printf("physics through kiln_frame_run: bit-identical to kiln_world_step on the calling thread, 1 and 4 "
           "threads\n");
    for (int r = 0; r < 2; r++) CHECK_STATUS(kiln_runtime_destroy(runtimes[r]), KILN_OK);
}

/* A host job system that runs every task inline and, while it does, calls on the
 * handles the running frame holds: all of them must be busy. */
typedef struct Prober {
    KilnFrameId frame;
    KilnWorldId world;
    KilnBodyId body;
    unsigned tasks, probes, busy, with_message;
} Prober;

static void probe(Prober *p, KilnStatus s, const char *what) {
    p->probes++;
    if (s != KILN_ERROR_INVALID_STATE) fprintf(stderr, "during a run: %s -> %s\n", what, kiln_status_name(s));
    p->busy += s == KILN_ERROR_INVALID_STATE;
    p->with_message += s == KILN_ERROR_INVALID_STATE && strstr(kiln_last_error_message(), "in use") != NULL;
}

static void *probing_enqueue(KilnTaskFn task, uint32_t item_count, uint32_t min_range, void *task_context,
                             void *user_context) {
    (void)min_range;
    Prober *p = user_context;
    if (p->tasks++ < 3) { /* a few per run is plenty */
        KilnTransform t;
        KilnFrameTiming timing;
        KilnWorldCounters counters;
        probe(p, kiln_body_get_transform(p->body, &t), "kiln_body_get_transform");
        probe(p, kiln_body_apply_impulse(p->body, (KilnVec3){0, 50, 0}, (KilnVec3){10, 20, 10}),
              "kiln_body_apply_impulse");
        probe(p, kiln_world_get_counters(p->world, &counters), "kiln_world_get_counters");
        probe(p, kiln_world_step(p->world, (KilnRuntimeId){0, 0}, DT), "kiln_world_step");
        probe(p, kiln_world_destroy(p->world), "kiln_world_destroy");
        probe(p, kiln_frame_run(p->frame, (KilnRuntimeId){0, 0}, DT), "kiln_frame_run");
        probe(p, kiln_frame_get_timing(p->frame, &timing), "kiln_frame_get_timing");
        probe(p, kiln_frame_destroy(p->frame), "kiln_frame_destroy");
    }
    task(0, item_count, 0, task_context);
    return NULL;
}

static void never_finish(void *user_task, void *user_context) {
    (void)user_task, (void)user_context;
    CHECK(0); /* every task ran inline */
}

static void check_busy_during_run(KilnShapeId box, KilnShapeId ball) {
    static float reference[BODIES][7], probed[BODIES][7];
    Scene s;
    scene_create(&s, box, ball);
    for (int i = 0; i < 30; i++) CHECK_STATUS(kiln_world_step(s.world, (KilnRuntimeId){0, 0}, DT), KILN_OK);
    read_state(&s, reference);
    scene_destroy(&s);

    scene_create(&s, box, ball);
    Prober prober = {.world = s.world, .body = s.bodies[7]};
    KilnRuntimeDef rdef = kiln_default_runtime_def();
    rdef.enqueue_task = probing_enqueue;
    rdef.finish_task = never_finish;
    rdef.user_task_context = &prober;
    rdef.host_worker_count = 1;
    KilnRuntimeId host;
    CHECK_STATUS(kiln_runtime_create(&rdef, &host), KILN_OK);
    KilnFrameDef def = kiln_default_frame_def();
    def.world = s.world;
    CHECK_STATUS(kiln_frame_create(&def, &prober.frame), KILN_OK);
    for (int i = 0; i < 30; i++) {
        prober.tasks = 0;
        CHECK_STATUS(kiln_frame_run(prober.frame, host, DT), KILN_OK);
        CHECK(prober.tasks > 0);
    }
    read_state(&s, probed);
    CHECK(prober.probes == 30 * 3 * 8);
    CHECK(prober.busy == prober.probes);
    CHECK(prober.with_message == prober.probes);
    CHECK(memcmp(reference, probed, sizeof reference) == 0); /* no probe changed anything */
    /* Between runs everything answers again. */
    KilnFrameTiming timing;
    CHECK_STATUS(kiln_frame_get_timing(prober.frame, &timing), KILN_OK);
    CHECK(timing.frame_index == 29);
    CHECK_STATUS(kiln_world_step(s.world, (KilnRuntimeId){0, 0}, DT), KILN_OK);
    printf("during a run: %u calls on the frame, its world and a body answered busy (%u with a message); the run "
           "stepped as if alone\n",
           prober.busy, prober.with_message);
    CHECK_STATUS(kiln_frame_destroy(prober.frame), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(host), KILN_OK);
    scene_destroy(&s);
}

static void check_bad_input(KilnShapeId box, KilnShapeId ball) {
    Scene s;
    scene_create(&s, box, ball);
    KilnFrameDef def = kiln_default_frame_def();
    KilnFrameId frame = {0, 0}, untouched = {77, 77};
    CHECK(def.struct_size == sizeof def && def.overlap);
    CHECK_STATUS(kiln_frame_create(NULL, &frame), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_frame_create(&def, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_frame_create(&def, &untouched), KILN_ERROR_INVALID_HANDLE); /* no world */
    CHECK_MESSAGE("world");
    CHECK(untouched.index1 == 77 && untouched.generation == 77);
    def.world = s.world;
    def.struct_size = 4;
    CHECK_STATUS(kiln_frame_create(&def, &frame), KILN_ERROR_STRUCT_SIZE);
    def = kiln_default_frame_def();
    def.world = s.world;
    def.gi = (KilnGiId){1, 1}; /* a volume without its tracer */
    CHECK_STATUS(kiln_frame_create(&def, &frame), KILN_ERROR_INVALID_HANDLE);
    def.gi = (KilnGiId){0, 0};
    def.tracer = (KilnTracerId){9, 9};
    CHECK_STATUS(kiln_frame_create(&def, &frame), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("tracer");
    def.tracer = (KilnTracerId){0, 0};
    CHECK_STATUS(kiln_frame_create(&def, &frame), KILN_OK);
    CHECK(kiln_frame_is_valid(frame));

    KilnFrameTiming timing = {0};
    uint32_t count = 5;
    CHECK_STATUS(kiln_frame_get_timing(frame, &timing), KILN_ERROR_INVALID_STATE); /* not run yet */
    CHECK_STATUS(kiln_frame_get_passes(frame, NULL, NULL, 0, &count), KILN_ERROR_INVALID_STATE);
    CHECK(count == 5);
    const float bad_dt[] = {NAN, INFINITY, -INFINITY, -DT, 1.5f, 1e30f};
    for (size_t i = 0; i < sizeof bad_dt / sizeof bad_dt[0]; i++) {
        CHECK_STATUS(kiln_frame_run(frame, (KilnRuntimeId){0, 0}, bad_dt[i]), KILN_ERROR_INVALID_ARGUMENT);
        CHECK_MESSAGE("dt");
    }
    CHECK_STATUS(kiln_frame_run(frame, (KilnRuntimeId){5, 5}, DT), KILN_ERROR_INVALID_HANDLE); /* no runtime */
    CHECK_STATUS(kiln_frame_run((KilnFrameId){0, 0}, (KilnRuntimeId){0, 0}, DT), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_frame_get_timing(frame, &timing), KILN_ERROR_INVALID_STATE); /* still not run */

    /* Nothing moved, and the world works between runs. */
    KilnTransform before, after;
    CHECK_STATUS(kiln_body_get_transform(s.bodies[0], &before), KILN_OK);
    CHECK_STATUS(kiln_frame_run(frame, (KilnRuntimeId){0, 0}, 0.0f), KILN_OK); /* dt 0: contacts only */
    CHECK_STATUS(kiln_body_get_transform(s.bodies[0], &after), KILN_OK);
    CHECK(memcmp(&before, &after, sizeof before) == 0);
    CHECK_STATUS(kiln_frame_run(frame, (KilnRuntimeId){0, 0}, DT), KILN_OK);
    CHECK_STATUS(kiln_body_apply_impulse(s.bodies[0], (KilnVec3){0, 5, 0}, before.position), KILN_OK);
    CHECK_STATUS(kiln_world_validate(s.world), KILN_OK);

    /* The profile: nine passes, the GPU ones first and last (empty without a tracer). */
    CHECK_STATUS(kiln_frame_get_passes(frame, NULL, NULL, 1, &count), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_frame_get_passes(frame, NULL, NULL, 0, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_frame_get_passes(frame, NULL, NULL, 0, &count), KILN_OK);
    CHECK(count == 9);
    KilnPassProfile passes[16];
    KilnProfile totals;
    CHECK_STATUS(kiln_frame_get_passes(frame, &totals, passes, 4, &count), KILN_OK); /* first 4 */
    CHECK(count == 9 && totals.pass_count == 9 && totals.frame_index == 1);
    CHECK_STATUS(kiln_frame_get_passes(frame, &totals, passes, 16, &count), KILN_OK);
    CHECK(strcmp(passes[0].name, "gpu.submit") == 0 && strcmp(passes[1].name, "physics.broadphase") == 0);
    CHECK(strcmp(passes[8].name, "gpu.wait") == 0 && passes[8].level > passes[6].level);
    CHECK(passes[0].level == passes[1].level); /* the submission shares the step's first level */
    KilnGpuPassTiming gpu[4];
    CHECK_STATUS(kiln_frame_get_gpu_passes(frame, gpu, 4, &count), KILN_OK);
    CHECK(count == 0);
    CHECK_STATUS(kiln_frame_get_gpu_passes(frame, NULL, 4, &count), KILN_ERROR_NULL_POINTER);

    /* A world destroyed under the frame: the run is refused, nothing else breaks. */
    CHECK_STATUS(kiln_world_destroy(s.world), KILN_OK);
    CHECK_STATUS(kiln_frame_run(frame, (KilnRuntimeId){0, 0}, DT), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("world");
    CHECK_STATUS(kiln_frame_get_timing(frame, &timing), KILN_OK); /* the last good run's */
    CHECK(timing.frame_index == 1);
    CHECK_STATUS(kiln_frame_destroy(frame), KILN_OK);
    CHECK_STATUS(kiln_frame_destroy(frame), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_frame_run(frame, (KilnRuntimeId){0, 0}, DT), KILN_ERROR_INVALID_HANDLE);
    CHECK(!kiln_frame_is_valid(frame));
    CHECK_STATUS(kiln_terrain_destroy(s.terrain), KILN_OK);
}

/* The GPU side: instances follow the bodies one run late; probes update. */
static void check_gpu(KilnTracerId tracer, KilnShapeId box, KilnShapeId ball) {
    Scene s, other;
    scene_create(&s, box, ball);
    scene_create(&other, box, ball);
    CHECK(add_terrain_mesh(tracer, s.terrain, 1, 0xFFFFFFu) > 0);
    KilnMeshId cube;
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, unit_cube_positions, 8, unit_cube_indices, 12, &cube), KILN_OK);
    const KilnAffine half = {{{0.5f, 0, 0, 0}, {0, 0.5f, 0, 0}, {0, 0, 0.5f, 0}}};
    for (int i = 0; i < BODIES; i++) {
        KilnInstanceDef def = kiln_default_instance_def();
        def.mesh = cube;
        def.mask = 2;
        def.user_id = (uint32_t)i;
        KilnInstanceId instance;
        CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &instance), KILN_OK);
        CHECK_STATUS(kiln_tracer_follow_body(tracer, instance, s.bodies[i], &half), KILN_OK);
    }
    KilnGiDef gdef = kiln_default_gi_def();
    gdef.bounds_min = (KilnVec3){2, 4, 2};
    gdef.bounds_max = (KilnVec3){30, 28, 30};
    gdef.spacing = 4.0f;
    gdef.rays_per_probe = 32;
    gdef.probes_per_frame = 64;
    KilnGiId gi;
    CHECK_STATUS(kiln_gi_create(tracer, &gdef, &gi), KILN_OK);
    CHECK_STATUS(kiln_gi_bake(gi), KILN_OK);
    KilnGiStats stats;
    CHECK_STATUS(kiln_gi_get_stats(gi, &stats), KILN_OK);

    KilnFrameDef def = kiln_default_frame_def();
    KilnFrameId frame;
    def.world = other.world; /* the tracer follows bodies of s.world */
    def.tracer = tracer;
    CHECK_STATUS(kiln_frame_create(&def, &frame), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("follow");
    def.world = s.world;
    def.tracer = (KilnTracerId){0, 0};
    def.gi = gi; /* the volume's tracer must come with it */
    CHECK_STATUS(kiln_frame_create(&def, &frame), KILN_ERROR_INVALID_ARGUMENT);
    def.tracer = tracer;
    CHECK_STATUS(kiln_frame_create(&def, &frame), KILN_OK);

    KilnRuntimeDef rdef = kiln_default_runtime_def();
    rdef.thread_count = 1;
    KilnRuntimeId runtime;
    CHECK_STATUS(kiln_runtime_create(&rdef, &runtime), KILN_OK);
    static float shown[BODIES][7];
    uint32_t budget_runs = 0, expected = stats.probe_count < 64 ? stats.probe_count : 64;
    for (int i = 0; i < 40; i++) {
        read_state(&s, shown); /* what the next run's GPU work shows */
        CHECK_STATUS(kiln_frame_run(frame, runtime, DT), KILN_OK);
        KilnFrameTiming t;
        CHECK_STATUS(kiln_frame_get_timing(frame, &t), KILN_OK);
        budget_runs += t.probes_updated == expected && t.instance_count == BODIES + 1;
    }
    CHECK(budget_runs == 40);
    KilnFrameTiming t;
    CHECK_STATUS(kiln_frame_get_timing(frame, &t), KILN_OK);
    CHECK(t.hidden_fraction >= 0.0 && t.hidden_fraction <= 1.0 && t.blocked_ms >= 0.0);
    KilnGpuPassTiming gpu[16];
    uint32_t count = 0;
    CHECK_STATUS(kiln_frame_get_gpu_passes(frame, gpu, 16, &count), KILN_OK);
    KilnDeviceInfo info;
    CHECK_STATUS(kiln_tracer_get_device(tracer, &info), KILN_OK);
    if (info.timestamps) {
        double sum = 0.0;
        int tlas = 0;
        for (uint32_t k = 0; k < count && k < 16; k++) {
            sum += gpu[k].milliseconds;
            tlas += strcmp(gpu[k].name, "tlas build") == 0;
        }
        CHECK(count > 2 && tlas == 1 && t.gpu_ms > 0.0 && fabs(sum - t.gpu_ms) < 1e-6 * (1.0 + sum));
    }
    printf("GPU frame: %.3f ms on the GPU, %.3f ms of step meanwhile, wait blocked %.3f ms, %u probes, %u passes\n",
           t.gpu_ms, t.overlapped_cpu_ms, t.blocked_ms, t.probes_updated, count);

    /* The tracer is back and shows the last run's starting poses: a ray down onto
     * each body's shown position hits its instance. */
    KilnTraceRay rays[BODIES];
    KilnTraceHit hits[BODIES];
    for (int i = 0; i < BODIES; i++)
        rays[i] = (KilnTraceRay){{shown[i][0], shown[i][1] + 3.0f, shown[i][2]}, {0, -1, 0}, 0.0f, 3.2f, 2};
    CHECK_STATUS(kiln_tracer_trace(tracer, rays, BODIES, KILN_TRACE_CLOSEST, hits), KILN_OK);
    int found = 0;
    for (int i = 0; i < BODIES; i++) found += hits[i].instance.index1 != 0 && hits[i].user_id == (uint32_t)i;
    CHECK(found == BODIES);

    /* Sequential mode: the wait follows the submission at once. */
    CHECK_STATUS(kiln_frame_destroy(frame), KILN_OK);
    def.overlap = false;
    CHECK_STATUS(kiln_frame_create(&def, &frame), KILN_OK);
    CHECK_STATUS(kiln_frame_run(frame, runtime, DT), KILN_OK);
    CHECK_STATUS(kiln_frame_get_timing(frame, &t), KILN_OK);
    CHECK(t.overlapped_cpu_ms == 0.0 && t.probes_updated == expected);
    uint32_t last_good = 0;
    CHECK_STATUS(kiln_frame_get_gpu_passes(frame, gpu, 16, &last_good), KILN_OK);

    /* A volume destroyed under the frame: refused, the world and tracer unharmed. */
    CHECK_STATUS(kiln_gi_destroy(gi), KILN_OK);
    static float before[BODIES][7], after[BODIES][7];
    read_state(&s, before);
    CHECK_STATUS(kiln_frame_run(frame, runtime, DT), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("gi volume");
    read_state(&s, after);
    CHECK(memcmp(before, after, sizeof before) == 0);
    KilnFrameTiming kept; /* a refused run keeps the last good run's timing and passes */
    CHECK_STATUS(kiln_frame_get_timing(frame, &kept), KILN_OK);
    CHECK(kept.frame_index == t.frame_index && kept.probes_updated == expected);
    CHECK_STATUS(kiln_frame_get_gpu_passes(frame, gpu, 16, &count), KILN_OK);
    CHECK(count == last_good);
    CHECK_STATUS(kiln_world_step(s.world, runtime, DT), KILN_OK);
    CHECK_STATUS(kiln_tracer_update(tracer), KILN_OK);
    CHECK(validation_message_count(tracer) == 0);
    CHECK_STATUS(kiln_frame_destroy(frame), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(runtime), KILN_OK);
    scene_destroy(&s);
    scene_destroy(&other);
}

int main(void) {
    if (kiln_check_linked_abi() != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_last_error_message());
        return 1;
    }
    KilnShapeId box, ball;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 0.5f, 0.5f}, &box), KILN_OK);
    CHECK_STATUS(kiln_shape_create_sphere((KilnVec3){0, 0, 0}, 0.5f, &ball), KILN_OK);
    check_determinism(box, ball);
    check_bad_input(box, ball);
    check_busy_during_run(box, ball);
    KilnTracerId tracer;
    if (open_tracer(1, &tracer) == KILN_OK) {
        check_gpu(tracer, box, ball);
        CHECK_STATUS(kiln_tracer_destroy(tracer), KILN_OK);
    } else {
        CHECK(!gpu_required());
        printf("GPU part: SKIPPED (no device; set KILN_REQUIRE_GPU=1 to fail instead)\n");
    }
    CHECK_STATUS(kiln_shape_destroy(box), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(ball), KILN_OK);
    return check_summary("frame_api");
}

/* demo: Kiln's integrated frame, the README's first command.
 *
 * A voxel terrain (Kiln's test hills, 128 x 128 m, walled in) with boxes, balls and
 * capsules raining onto it and a character walking a loop through them (a capsule
 * character controller on the terrain, mirrored by a kinematic body that shoves
 * the bodies aside). A tracer holds the terrain's triangles and one instance per
 * body, each following its body; a DDGI probe volume over the terrain is baked once
 * and then updated every frame, a budget of probes per frame, so the light under
 * and around the bodies changes as they move.
 *
 * Every frame is one `kiln_frame_run`: the GPU work for the last step's poses
 * (instances, BLAS refit, TLAS rebuild, the probe update) is submitted first and
 * runs while the CPU steps the physics on the runtime's workers; the frame waits
 * for it at the end. The demo prints the device it runs on, then per-stage CPU and
 * GPU times and how much of the GPU's time the step hid. At four moments it renders
 * the scene with the probes' light (a camera ray, a shadow ray and an irradiance
 * sample per pixel) to OUTDIR/demo_N.png.
 *
 * It checks what it can know for certain and exits non-zero when a check fails: no
 * body fell through the terrain or left it, every state is finite, the character
 * walked its loop, every frame updated its probe budget, the GPU scene followed
 * the bodies, and the validation layer stayed silent. Without a Vulkan device it
 * runs the physics alone (and fails with KILN_REQUIRE_GPU=1). With 1,000 frames or
 * more it also checks that the resident set did not grow (within 1% from frame 600,
 * when the rain has landed and the world's contact structures have their size, or
 * from the first picture when that comes later, since the first picture sizes the
 * tracer's per-pixel buffers, to the end) and prints the C heap's live and free
 * bytes every 1,000 frames.
 *
 *   demo [FRAMES] [OUTDIR] [BODIES]   (defaults 240 frames = 4 s at 60 Hz, no
 *                                      images, 300 bodies)
 *
 * KILN_RENDERDOC_FRAME=N: when run under `renderdoccmd capture`, capture frame N (see
 * capture_open). */
#if defined(__linux__)
#define _GNU_SOURCE /* RTLD_NOLOAD */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <dlfcn.h>

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic" /* the header's enums go past INT_MAX */
#endif
#include "third_party/renderdoc_app.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif

#include "kiln.h"
#include "render.h"
#include "tests/check.h"

#define SIZE 128 /* voxel columns, 1 m each */
#define WALL 40  /* wall height, m */
#define TERRAIN_USER_ID 0xFFFFFFu
#define CHARACTER_USER_ID 0xFFFFFEu
#define MAX_PASSES 32
#define IMAGES 4

static const float DT = 1.0f / 60.0f;

/* RenderDoc's in-application API (third_party/renderdoc_app.h, MIT). Kiln never
 * presents, so RenderDoc sees no frames by itself: with KILN_RENDERDOC_FRAME=N set and
 * RenderDoc's library in the process (`renderdoccmd capture` preloads it), the demo
 * brackets frame N with StartFrameCapture / EndFrameCapture. docs/gpu.md's Profiling
 * section has the steps. */
typedef struct {
#if defined(__linux__)
    RENDERDOC_API_1_1_2 *api;
#endif
    unsigned frame; /* 0: no capture */
} Capture;

static Capture capture_open(int gpu) {
    Capture capture;
    memset(&capture, 0, sizeof capture);
    const char *frame = getenv("KILN_RENDERDOC_FRAME");
    if (!frame || !*frame) return capture;
    if (!gpu) {
        printf("KILN_RENDERDOC_FRAME is set, but there are no GPU passes to capture\n");
        return capture;
    }
#if defined(__linux__)
    void *library = dlopen("librenderdoc.so", RTLD_NOW | RTLD_NOLOAD);
    void *symbol = library ? dlsym(library, "RENDERDOC_GetAPI") : NULL;
    pRENDERDOC_GetAPI get_api = NULL;
    if (symbol) memcpy(&get_api, &symbol, sizeof get_api); /* object to function pointer, as POSIX allows */
    void *api = NULL;
    if (get_api && get_api(eRENDERDOC_API_Version_1_1_2, &api) == 1 && api) {
        capture.api = api;
        capture.frame = (unsigned)strtoul(frame, NULL, 10);
        int major = 0, minor = 0, patch = 0;
        capture.api->GetAPIVersion(&major, &minor, &patch);
        printf("RenderDoc is in the process (in-application API %d.%d.%d): capturing frame %u\n", major, minor, patch,
               capture.frame);
        return capture;
    }
#endif
    printf("KILN_RENDERDOC_FRAME is set, but RenderDoc's library is not in the process (run the demo under "
           "`renderdoccmd capture`): no capture\n");
    return capture;
}

/* Starts (before == 1) or ends (before == 0) the capture around frame f. */
static void capture_frame(const Capture *capture, unsigned f, int before) {
#if defined(__linux__)
    if (!capture->api || f != capture->frame) return;
    if (before) {
        capture->api->StartFrameCapture(NULL, NULL);
        return;
    }
    uint32_t ok = capture->api->EndFrameCapture(NULL, NULL);
    char path[1024];
    uint32_t length = sizeof path;
    uint32_t count = capture->api->GetNumCaptures();
    if (ok && count > 0 && capture->api->GetCapture(count - 1, path, &length, NULL) == 1)
        printf("RenderDoc captured frame %u to %s\n", f, path);
    else
        printf("RenderDoc did not capture frame %u\n", f);
    CHECK(ok == 1);
#else
    (void)capture, (void)f, (void)before;
#endif
}

static void albedo(uint32_t user_id, const KilnVec3 *normal, float rgb[3]) {
    if (user_id == TERRAIN_USER_ID) {
        float flat = normal->y > 0.8f ? 1.0f : 0.0f;
        rgb[0] = 0.45f - 0.2f * flat, rgb[1] = 0.38f + 0.17f * flat, rgb[2] = 0.25f;
        return;
    }
    if (user_id == CHARACTER_USER_ID) {
        rgb[0] = 0.9f, rgb[1] = 0.9f, rgb[2] = 0.9f;
        return;
    }
    const float palette[3][3] = {{0.85f, 0.4f, 0.15f}, {0.2f, 0.45f, 0.9f}, {0.9f, 0.8f, 0.25f}};
    for (int k = 0; k < 3; k++) rgb[k] = palette[user_id % 3][k];
}

/* Resident set size in KiB (Linux; 0 elsewhere). */
static unsigned long resident_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0, resident = 0;
    if (!f) return 0;
    if (fscanf(f, "%lu %lu", &pages, &resident) != 2) resident = 0;
    fclose(f);
    return resident * 4; /* 4 KiB pages */
}

/* One line on the process's memory: the resident set and, with glibc, what the C heap
 * holds in live blocks and in free blocks it keeps (every thread's arena, the
 * Vulkan driver's included). Growth in live blocks is a leak; growth in free blocks
 * alone is the heap holding on to memory it does not use. */
static void print_memory(unsigned frame) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    struct mallinfo2 m = mallinfo2();
    printf("memory at frame %u: resident %lu KiB; C heap %zu KiB live, %zu KiB free, %zu KiB mapped\n", frame,
           resident_kib(), m.uordblks / 1024, m.fordblks / 1024, m.hblkhd / 1024);
#else
    printf("memory at frame %u: resident %lu KiB\n", frame, resident_kib());
#endif
}

/* The walking character: a capsule controller on the terrain, walking the corners
 * of a square, jumping when a ledge blocks it, and heading for the next corner when
 * it got no closer to this one for two seconds (a wall of voxels it cannot jump);
 * a kinematic body follows it. */
typedef struct Walker {
    KilnCharacterId character;
    KilnBodyId body;
    float fall_speed, walked, half_height, best; /* best: nearest it came to the target */
    int target, corners_reached, grounded_frames, jumps, stalled, skipped;
    KilnMoveResult last;
} Walker;

static const float loop_corners[4][2] = {{34, 34}, {94, 34}, {94, 94}, {34, 94}};

static void walker_step(Walker *w, KilnTerrainId terrain, KilnRuntimeId runtime) {
    const float speed = 4.0f, gravity = -9.81f, jump_speed = 5.5f;
    KilnVec3 p;
    CHECK_STATUS(kiln_character_get_position(w->character, &p), KILN_OK);
    float dx = loop_corners[w->target][0] - p.x, dz = loop_corners[w->target][1] - p.z;
    float len = sqrtf(dx * dx + dz * dz);
    if (len < w->best - 0.5f) {
        w->best = len;
        w->stalled = 0;
    }
    int stuck = ++w->stalled > 120;
    if (len < 1.0f || stuck) {
        w->target = (w->target + 1) % 4;
        w->corners_reached += !stuck;
        w->skipped += stuck;
        w->best = 1e30f;
        w->stalled = 0;
        return;
    }
    const KilnMoveResult *r = &w->last;
    float wanted = speed * DT, progress = sqrtf(r->moved.x * r->moved.x + r->moved.z * r->moved.z);
    if (r->grounded && progress < 0.3f * wanted && w->fall_speed <= 0) { /* not while a jump rises */
        w->fall_speed = jump_speed;
        w->jumps++;
    }
    else if (r->grounded && w->fall_speed <= 0) w->fall_speed = -speed;
    else w->fall_speed += gravity * DT;
    KilnVec3 step = {dx / len * wanted, w->fall_speed * DT, dz / len * wanted};
    CHECK_STATUS(kiln_character_move(w->character, step, terrain, runtime, NULL, 0, &w->last), KILN_OK);
    w->walked += sqrtf(w->last.moved.x * w->last.moved.x + w->last.moved.z * w->last.moved.z);
    w->grounded_frames += w->last.grounded;
    /* The body reaches the character's new position over the next step. */
    KilnTransform target = kiln_transform_identity();
    target.position = w->last.position;
    CHECK_STATUS(kiln_body_set_target_transform(w->body, &target, DT), KILN_OK);
}

/* Sums of per-pass times over the frames, by pass index. */
typedef struct Totals {
    double cpu_ms[MAX_PASSES], cpu_max_ms[MAX_PASSES], gpu_pass_ms[MAX_PASSES];
    char cpu_names[MAX_PASSES][32], gpu_names[MAX_PASSES][32];
    uint32_t cpu_levels[MAX_PASSES], cpu_count, gpu_count, frames;
    double frame_ms, physics_ms, gpu_ms, overlapped_ms, blocked_ms;
    uint64_t probes;
} Totals;

static void add_frame(Totals *t, KilnFrameId frame) {
    KilnPassProfile passes[MAX_PASSES];
    KilnGpuPassTiming gpu[MAX_PASSES];
    KilnFrameTiming timing;
    uint32_t n = 0, g = 0;
    CHECK_STATUS(kiln_frame_get_timing(frame, &timing), KILN_OK);
    CHECK_STATUS(kiln_frame_get_passes(frame, NULL, passes, MAX_PASSES, &n), KILN_OK);
    CHECK_STATUS(kiln_frame_get_gpu_passes(frame, gpu, MAX_PASSES, &g), KILN_OK);
    t->cpu_count = n < MAX_PASSES ? n : MAX_PASSES;
    for (uint32_t i = 0; i < t->cpu_count; i++) {
        double ms = (double)passes[i].duration_ns * 1e-6;
        snprintf(t->cpu_names[i], sizeof t->cpu_names[i], "%.31s", passes[i].name);
        t->cpu_levels[i] = passes[i].level;
        t->cpu_ms[i] += ms;
        if (ms > t->cpu_max_ms[i]) t->cpu_max_ms[i] = ms;
    }
    /* The GPU passes depend on the frame (a scene update without probes has fewer);
     * sum by name. */
    for (uint32_t i = 0; i < g && i < MAX_PASSES; i++) {
        uint32_t k = 0;
        while (k < t->gpu_count && strcmp(t->gpu_names[k], gpu[i].name) != 0) k++;
        if (k == t->gpu_count) {
            if (k == MAX_PASSES) continue;
            snprintf(t->gpu_names[k], sizeof t->gpu_names[k], "%.31s", gpu[i].name);
            t->gpu_count++;
        }
        t->gpu_pass_ms[k] += gpu[i].milliseconds;
    }
    t->frames++;
    t->frame_ms += timing.cpu_ms;
    t->physics_ms += timing.physics_ms;
    t->gpu_ms += timing.gpu_ms;
    t->overlapped_ms += timing.overlapped_cpu_ms;
    t->blocked_ms += timing.blocked_ms;
    t->probes += timing.probes_updated;
}

static void print_totals(const Totals *t) {
    double n = t->frames ? (double)t->frames : 1.0;
    printf("\nper-stage times, mean over %u frames (max for CPU passes):\n", t->frames);
    printf("  %-22s %5s %10s %10s\n", "CPU pass", "level", "mean ms", "max ms");
    for (uint32_t i = 0; i < t->cpu_count; i++)
        printf("  %-22s %5u %10.3f %10.3f\n", t->cpu_names[i], t->cpu_levels[i], t->cpu_ms[i] / n,
               t->cpu_max_ms[i]);
    if (t->gpu_count) {
        printf("  %-22s %5s %10s\n", "GPU pass", "", "mean ms");
        for (uint32_t i = 0; i < t->gpu_count; i++) printf("  %-22s %5s %10.3f\n", t->gpu_names[i], "", t->gpu_pass_ms[i] / n);
    }
    printf("  %-22s %5s %10.3f   (physics step %.3f)\n", "frame, CPU wall clock", "", t->frame_ms / n,
           t->physics_ms / n);
    if (t->gpu_count) {
        double hidden = t->gpu_ms > 0.0 ? 100.0 * (t->gpu_ms - t->blocked_ms) / t->gpu_ms : 0.0;
        printf("  %-22s %5s %10.3f   the CPU stepped %.3f ms meanwhile; the wait blocked %.3f ms "
               "(%.0f%% of the GPU's time hidden)\n",
               "frame, GPU", "", t->gpu_ms / n, t->overlapped_ms / n, t->blocked_ms / n, hidden < 0 ? 0 : hidden);
        printf("  %-22s %5s %10.1f\n", "probes updated", "", (double)t->probes / n);
    }
}

int main(int argc, char **argv) {
    unsigned frames = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 240u;
    const char *outdir = argc > 2 && argv[2][0] ? argv[2] : NULL;
    unsigned count = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 300u;
    if (frames < 1 || frames > 1000000) frames = 240;
    if (count < 1 || count > 20000) count = 300;
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines as they come, also in a pipe */
#if defined(__GLIBC__)
    /* A long-running process's allocator setting: blocks of 128 KiB and more always
     * come from mmap and go back to the system when freed. glibc's default raises
     * that threshold each time such a block is freed, after which the same blocks
     * (the Vulkan driver's, every frame) land in the heap and fragment it: with the
     * default the resident set grows about 1 MiB per 1,000 frames for the first
     * 6,000 while the live heap stays flat (see docs/gpu.md, "Memory over long runs"). */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
    if (kiln_check_linked_abi() != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_last_error_message());
        return 1;
    }

    KilnRuntimeDef rdef = kiln_default_runtime_def();
    KilnRuntimeId runtime;
    CHECK_STATUS(kiln_runtime_create(&rdef, &runtime), KILN_OK);
    uint32_t workers = 0;
    kiln_runtime_get_worker_count(runtime, &workers);

    /* The hills, walled in by 2 voxels of rock 40 m high. */
    KilnTerrainId terrain;
    CHECK_STATUS(create_walled_hills(SIZE, WALL, runtime, &terrain), KILN_OK);

    KilnWorldDef wdef = kiln_default_world_def();
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(&wdef, &world), KILN_OK);
    CHECK_STATUS(kiln_world_set_terrain(world, terrain), KILN_OK);

    /* Bodies over the middle of the map, in layers 1.5 m apart: it rains for a
     * while. Boxes, balls and capsules in turn. */
    KilnShapeId shapes[3];
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 0.4f, 0.6f}, &shapes[0]), KILN_OK);
    CHECK_STATUS(kiln_shape_create_sphere((KilnVec3){0, 0, 0}, 0.5f, &shapes[1]), KILN_OK);
    CHECK_STATUS(kiln_shape_create_capsule((KilnVec3){-0.5f, 0, 0}, (KilnVec3){0.5f, 0, 0}, 0.3f, &shapes[2]),
                 KILN_OK);
    KilnBodyId *bodies = calloc(count, sizeof *bodies);
    if (!bodies) return 1;
    const unsigned per_layer = 100; /* 10 x 10, 5 m apart, over [40, 90] */
    for (unsigned i = 0; i < count; i++) {
        unsigned layer = i / per_layer, cell = i % per_layer;
        float x = 40.0f + 5.0f * (float)(cell % 10) + 0.7f * (float)(layer % 3);
        float z = 40.0f + 5.0f * (float)(cell / 10) + 0.5f * (float)(layer % 4);
        KilnBodyDef def = kiln_default_body_def();
        def.transform.position = (KilnVec3){x, ground(terrain, x, z) + 4.0f + 1.5f * (float)layer, z};
        def.angular_velocity = (KilnVec3){0.4f * (float)(i % 3), 0.0f, 0.3f * (float)(i % 5)};
        CHECK_STATUS(kiln_body_create(world, &def, &bodies[i]), KILN_OK);
        KilnShapeDef sdef = kiln_default_shape_def();
        sdef.rolling_resistance = 0.2f;
        CHECK_STATUS(kiln_body_add_shape(bodies[i], shapes[i % 3], &sdef, NULL), KILN_OK);
    }

    /* The character and the kinematic capsule (axis along y) that follows it. */
    KilnCharacterDef cdef = kiln_default_character_def();
    Walker walker = {0};
    walker.best = 1e30f;
    walker.half_height = cdef.radius + 0.5f * cdef.height;
    KilnVec3 start = {loop_corners[0][0], 0.0f, loop_corners[0][1]};
    start.y = ground(terrain, start.x, start.z) + walker.half_height + 0.05f;
    CHECK_STATUS(kiln_character_create(&cdef, start, &walker.character), KILN_OK);
    KilnShapeId pusher;
    CHECK_STATUS(kiln_shape_create_capsule((KilnVec3){0, -0.5f * cdef.height, 0}, (KilnVec3){0, 0.5f * cdef.height, 0},
                                           cdef.radius, &pusher),
                 KILN_OK);
    KilnBodyDef kdef = kiln_default_body_def();
    kdef.motion_type = KILN_MOTION_KINEMATIC;
    kdef.transform.position = start;
    CHECK_STATUS(kiln_body_create(world, &kdef, &walker.body), KILN_OK);
    KilnShapeDef psdef = kiln_default_shape_def();
    CHECK_STATUS(kiln_body_add_shape(walker.body, pusher, &psdef, NULL), KILN_OK);

    printf("Kiln %s demo: %u bodies raining on %d x %d m of voxel hills, a character walking among them; "
           "%u workers\n",
           kiln_version_string(), count, SIZE, SIZE, workers);

    /* The GPU side: terrain triangles, a mesh per shape, an instance per body. */
    KilnTracerId tracer = {0, 0};
    KilnGiId gi = {0, 0};
    KilnGiLighting light = kiln_default_gi_lighting();
    KilnStatus opened = open_tracer(1, &tracer);
    int gpu = opened == KILN_OK;
    uint32_t instance_count = 0, probe_budget = 128, probe_count = 0;
    if (!gpu) {
        CHECK(!gpu_required()); /* KILN_REQUIRE_GPU=1: a missing device fails */
        printf("GPU passes: SKIPPED (no device; set KILN_REQUIRE_GPU=1 to fail instead)\n");
    } else {
        uint32_t triangles = add_terrain_mesh(tracer, terrain, 1, TERRAIN_USER_ID);
        CHECK(triangles > 0);
        Mesh ball = capsule_mesh(0.5f, 0.0f, 12, 16), capsule = capsule_mesh(0.3f, 0.5f, 10, 12);
        Mesh person = capsule_mesh(cdef.radius, 0.5f * cdef.height, 10, 12);
        KilnMeshId meshes[4];
        CHECK_STATUS(kiln_tracer_add_mesh(tracer, unit_cube_positions, 8, unit_cube_indices, 12, &meshes[0]), KILN_OK);
        const Mesh *own[3] = {&ball, &capsule, &person};
        for (int k = 0; k < 3; k++) {
            CHECK_STATUS(kiln_tracer_add_mesh(tracer, own[k]->positions, own[k]->vertex_count, own[k]->indices,
                                              own[k]->triangle_count, &meshes[k + 1]),
                         KILN_OK);
            free(own[k]->positions), free(own[k]->indices);
        }
        /* Instance 0 is the terrain; body i is instance i + 1; the character last. */
        const KilnAffine locals[4] = {{{{0.5f, 0, 0, 0}, {0, 0.4f, 0, 0}, {0, 0, 0.6f, 0}}}, /* unit cube */
                                      {{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}},
                                      {{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}},
                                      {{{0, -1, 0, 0}, {1, 0, 0, 0}, {0, 0, 1, 0}}}}; /* x axis up */
        KilnVec3 *albedos = malloc(sizeof *albedos * (count + 1));
        KilnInstanceId *albedo_of = malloc(sizeof *albedo_of * (count + 1));
        if (!albedos || !albedo_of) return 1;
        float a[3];
        KilnVec3 up = {0, 1, 0};
        albedo(TERRAIN_USER_ID, &up, a);
        light.default_albedo = (KilnVec3){a[0], a[1], a[2]}; /* the terrain: the one instance without its own */
        for (unsigned i = 0; i <= count; i++) {
            int character = i == count;
            KilnInstanceDef def = kiln_default_instance_def();
            def.mesh = character ? meshes[3] : meshes[i % 3];
            def.mask = 2;
            def.user_id = character ? CHARACTER_USER_ID : i;
            KilnInstanceId instance;
            CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &instance), KILN_OK);
            CHECK_STATUS(kiln_tracer_follow_body(tracer, instance, character ? walker.body : bodies[i],
                                                 &locals[character ? 3 : i % 3]),
                         KILN_OK);
            albedo(def.user_id, &up, a);
            albedos[i] = (KilnVec3){a[0], a[1], a[2]};
            albedo_of[i] = instance;
        }
        instance_count = count + 2;

        /* Probes every 8 m from 2 m above the lowest ground to the wall tops, only
         * near the terrain. */
        KilnGiDef def = kiln_default_gi_def();
        def.bounds_min = (KilnVec3){4.0f, 2.0f, 4.0f};
        def.bounds_max = (KilnVec3){SIZE - 4.0f, 34.0f, SIZE - 4.0f};
        def.spacing = 8.0f;
        def.dilation = 8.0f;
        def.rays_per_probe = 64;
        def.hysteresis = 0.9f;
        def.probes_per_frame = probe_budget;
        CHECK_STATUS(kiln_gi_create(tracer, &def, &gi), KILN_OK);
        CHECK_STATUS(kiln_gi_set_lighting(gi, &light), KILN_OK);
        CHECK_STATUS(kiln_gi_set_albedo(gi, albedo_of, albedos, count + 1), KILN_OK);
        free(albedos), free(albedo_of);
        CHECK_STATUS(kiln_gi_bake(gi), KILN_OK);
        KilnGiStats stats;
        CHECK_STATUS(kiln_gi_get_stats(gi, &stats), KILN_OK);
        probe_count = stats.probe_count;
        printf("GPU scene: %u terrain triangles, %u instances following bodies; %u probes (%u dead) baked, "
               "%u updated per frame\n",
               triangles, count + 1, stats.probe_count, stats.dead_probes, probe_budget);
    }

    KilnFrameDef fdef = kiln_default_frame_def();
    fdef.world = world;
    fdef.tracer = tracer;
    fdef.gi = gi;
    KilnFrameId frame;
    CHECK_STATUS(kiln_frame_create(&fdef, &frame), KILN_OK);

    int width = 640, height = 400;
    size_t pixels = (size_t)width * (size_t)height;
    GiScratch scratch = {malloc(pixels * sizeof(KilnTraceRay)),  malloc(pixels * sizeof(KilnTraceHit)),
                         malloc(pixels * sizeof(KilnTraceRay)),  malloc(pixels * sizeof(KilnTraceHit)),
                         malloc(pixels * sizeof(KilnVec3)),      malloc(pixels * sizeof(KilnVec3)),
                         malloc(pixels * sizeof(KilnVec3)),      malloc(pixels * sizeof(KilnVec3))};
    uint8_t *rgb = malloc(3 * pixels);
    if (!scratch.rays || !scratch.hits || !scratch.shadow || !scratch.shadow_hits || !scratch.points ||
        !scratch.normals || !scratch.views || !scratch.irradiance || !rgb)
        return 1;
    /* Over the south-west edge of the drop zone, looking across it. */
    const float look[3] = {62.0f, ground(terrain, 62.0f, 58.0f), 58.0f};
    const float eye[3] = {36.0f, look[1] + 14.0f, 30.0f};
    Camera camera = camera_look_at(eye, look, 55.0f);

    Totals totals = {0};
    Capture capture = capture_open(gpu);
    unsigned long rss_start = 0, rss_end = 0, rss_first = 0;
    unsigned rss_frame = 600; /* where the memory baseline is taken; see the top comment */
    unsigned budget_frames = 0, image = 0;
    printf("\n%6s %8s %9s %9s %9s %9s\n", "time", "awake", "frame ms", "step ms", "gpu ms", "blocked");
    for (unsigned f = 1; f <= frames; f++) {
        walker_step(&walker, terrain, runtime);
        capture_frame(&capture, f, 1);
        CHECK_STATUS(kiln_frame_run(frame, runtime, DT), KILN_OK);
        capture_frame(&capture, f, 0);
        KilnFrameTiming timing;
        CHECK_STATUS(kiln_frame_get_timing(frame, &timing), KILN_OK);
        add_frame(&totals, frame);
        uint32_t wanted = probe_budget < probe_count ? probe_budget : probe_count;
        budget_frames += timing.probes_updated == wanted && timing.instance_count == instance_count;
        if (f == 60 || (frames < 60 && f == 1)) rss_first = resident_kib();
        if (f == rss_frame) rss_start = resident_kib();
        if (frames >= 1000 && (f == 60 || f == 600 || f % 1000 == 0)) print_memory(f);
        if (f % 60 == 0 || f == frames) {
            KilnWorldCounters counters;
            CHECK_STATUS(kiln_world_get_counters(world, &counters), KILN_OK);
            printf("%5.1fs %8u %9.2f %9.2f %9.2f %9.2f\n", (float)f * DT, counters.awake_body_count, timing.cpu_ms,
                   timing.physics_ms, timing.gpu_ms, timing.blocked_ms);
        }
        /* Four pictures, from a quarter of the way in to the end. */
        if (gpu && outdir && f * IMAGES >= (image + 1) * frames) {
            CHECK_STATUS(kiln_tracer_sync_world(tracer, world, NULL), KILN_OK);
            camera_rays(&camera, width, height, scratch.rays);
            CHECK_STATUS(shade_gi(tracer, gi, &light, true, (uint32_t)pixels, albedo, 1.0f, &scratch, rgb), KILN_OK);
            char path[1024];
            snprintf(path, sizeof path, "%s/demo_%u.png", outdir, image);
            CHECK(write_png(path, width, height, 3, rgb) == 0);
            printf("wrote %s (frame %u)\n", path, f);
            if (image == 0 && f >= rss_frame) rss_frame = f, rss_start = resident_kib();
            image++;
        }
    }
    rss_end = resident_kib();
    print_totals(&totals);

    /* What must hold. */
    unsigned finite = 0, above = 0;
    for (unsigned i = 0; i < count; i++) {
        KilnTransform t;
        CHECK_STATUS(kiln_body_get_transform(bodies[i], &t), KILN_OK);
        int ok = isfinite(t.position.x) && isfinite(t.position.y) && isfinite(t.position.z);
        float depth = t.position.y - ground(terrain, t.position.x, t.position.z);
        finite += ok;
        above += ok && depth > -0.05f && depth < 500.0f;
    }
    printf("\n%u of %u bodies finite, %u above the terrain; the character walked %.1f m (%d corners reached, %d "
           "given up, %d jumps), grounded %.0f%% of frames\n",
           finite, count, above, walker.walked, walker.corners_reached, walker.skipped, walker.jumps,
           100.0 * walker.grounded_frames / (double)frames);
    CHECK(finite == count);
    CHECK(above == count);
    CHECK(walker.walked > 0.5f * 4.0f * (float)frames * DT);
    if (gpu) {
        printf("%u of %u frames updated %u probes with all %u instances\n", budget_frames, frames,
               probe_budget < probe_count ? probe_budget : probe_count, instance_count);
        CHECK(budget_frames == frames);
        CHECK(validation_message_count(tracer) == 0);
        CHECK(!outdir || image == IMAGES);
    }
    if (rss_start && frames >= 1000) {
        double growth = 100.0 * ((double)rss_end - (double)rss_start) / (double)rss_start;
        printf("resident set: %lu KiB at frame 60, %lu KiB at frame %u, %lu KiB at frame %u (%+.2f%% from frame "
               "%u)\n",
               rss_first, rss_start, rss_frame, rss_end, frames, growth, rss_frame);
        CHECK(growth <= 1.0);
    }

    CHECK_STATUS(kiln_frame_destroy(frame), KILN_OK);
    if (gpu) {
        CHECK_STATUS(kiln_gi_destroy(gi), KILN_OK);
        CHECK_STATUS(kiln_tracer_destroy(tracer), KILN_OK);
    }
    free(scratch.rays), free(scratch.hits), free(scratch.shadow), free(scratch.shadow_hits);
    free(scratch.points), free(scratch.normals), free(scratch.views), free(scratch.irradiance), free(rgb);
    free(bodies);
    CHECK_STATUS(kiln_character_destroy(walker.character), KILN_OK);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_terrain_destroy(terrain), KILN_OK);
    for (int s = 0; s < 3; s++) CHECK_STATUS(kiln_shape_destroy(shapes[s]), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(pusher), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(runtime), KILN_OK);
    return check_summary("demo");
}

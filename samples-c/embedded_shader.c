/* Embedded mode, GPU side: the engine's own compute shaders trace Kiln's scene and
 * sample Kiln's probes.
 *
 * This program plays an engine (engine.h) that hands its Vulkan device to Kiln. Each
 * frame it records, into one command buffer of its own, Kiln's scene update
 * (kiln_tracer_record_update) and then its own dispatch of shaders/engine_trace.comp,
 * which includes the installed kiln_trace.glsl and traces one ray per pixel with
 * kiln_trace() through the buffers of kiln_tracer_get_trace_buffers. Then Kiln bakes
 * and updates DDGI probes over the scene, and shaders/engine_gi.comp (including
 * kiln_ddgi.glsl) samples their irradiance at every pixel's hit with
 * kiln_gi_irradiance() through kiln_gi_get_gpu_buffers. No result is read back
 * through Kiln: the engine reads its own buffers after its own fence.
 *
 * Checks: every pixel's hit equals kiln_tracer_trace's on a standalone tracer holding
 * the same scene (same instance, same triangle, same distance within 1e-5), in
 * closest-hit and any-hit mode, after an instance moved, and after the scene outgrew
 * its buffers (the buffers' version changes); the irradiance at the 10,000 and more
 * hit points equals kiln_gi_sample's within 1e-3, and that of a fine volume blended
 * into a coarse one kiln_gi_sample_cascades'; the engine's validation messenger
 * stays silent; bad input is refused with a status. Writes embedded_shader.png (the
 * engine's hits, lit by their normals) and embedded_shader_gi.png (lit by the
 * engine-side irradiance) to OUTDIR.
 *
 *   embedded_shader [TRACE_SPIRV GI_SPIRV] [OUTDIR]
 *   (defaults: the build's engine_trace.spv and engine_gi.spv, $TMPDIR or /tmp)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "engine.h"
#include "kiln.h"
#include "render.h"
#include "tests/check.h"

#ifndef ENGINE_TRACE_SPV
#define ENGINE_TRACE_SPV "engine_trace.spv"
#endif
#ifndef ENGINE_GI_SPV
#define ENGINE_GI_SPV "engine_gi.spv"
#endif

#define WIDTH 160
#define HEIGHT 120
#define PIXELS (WIDTH * HEIGHT)

/* kiln_layout.glsl's KilnRay and KilnHit (std430), as the engine's buffers hold them. */
struct shader_ray {
    float origin[3], t_min, dir[3], t_max;
    uint32_t mask, pad[3];
};
struct shader_hit {
    float t;
    uint32_t instance, primitive, flags;
    float normal[3], u, v;
    uint32_t user_id, pad[2];
};
_Static_assert(sizeof(struct shader_ray) == 48 && sizeof(struct shader_hit) == 48, "std430 sizes");

/* engine_trace.comp's push constants: KilnTraceScene (six addresses), then the engine's. */
struct push {
    uint64_t scene[6];
    uint64_t rays, hits;
    uint32_t count, any_hit;
};
_Static_assert(sizeof(struct push) == 72, "push constant size");

/* engine_gi.comp's push constants. */
struct gi_push {
    uint64_t gi, coarse, queries, irradiance;
    uint32_t count, cascades;
};
_Static_assert(sizeof(struct gi_push) == 40, "push constant size");

static const uint32_t NO_HIT = 0xffffffffu; /* KILN_NO_HIT */

/* A ground quad, 4 x 4 boxes of different heights and a capsule (the instance that
 * moves), user ids 1, 100.., 200. Returns the capsule. */
static KilnInstanceId build_scene(KilnTracerId tracer, KilnMeshId *box_mesh) {
    const KilnVec3 ground[4] = {{-30, 0, -30}, {30, 0, -30}, {30, 0, 30}, {-30, 0, 30}};
    const uint32_t quad[6] = {0, 2, 1, 0, 3, 2};
    KilnMeshId mesh;
    KilnInstanceId instance;
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, ground, 4, quad, 2, &mesh), KILN_OK);
    KilnInstanceDef def = kiln_default_instance_def();
    def.mesh = mesh;
    def.user_id = 1;
    CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &instance), KILN_OK);
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, unit_cube_positions, 8, unit_cube_indices, 12, box_mesh), KILN_OK);
    for (int i = 0; i < 16; i++) {
        float height = 0.5f + (float)((i * 7) % 5) * 0.6f;
        def = kiln_default_instance_def();
        def.mesh = *box_mesh;
        def.user_id = 100 + (uint32_t)i;
        def.transform = (KilnAffine){{{1.2f, 0, 0, (float)(i % 4) * 6.0f - 9.0f},
                                      {0, height, 0, height},
                                      {0, 0, 1.2f, (float)(i / 4) * 6.0f - 9.0f}}};
        CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &instance), KILN_OK);
    }
    Mesh capsule = capsule_mesh(1.0f, 1.5f, 8, 16);
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, capsule.positions, capsule.vertex_count, capsule.indices,
                                      capsule.triangle_count, &mesh),
                 KILN_OK);
    free(capsule.positions);
    free(capsule.indices);
    def = kiln_default_instance_def();
    def.mesh = mesh;
    def.user_id = 200;
    def.transform = (KilnAffine){{{1, 0, 0, -2.0f}, {0, 1, 0, 1.5f}, {0, 0, 1, -13.0f}}};
    CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &instance), KILN_OK);
    return instance;
}

/* Many small boxes in a row: past the 64 instances the buffers first had room for. */
static void add_row(KilnTracerId tracer, KilnMeshId box_mesh) {
    for (int i = 0; i < 80; i++) {
        KilnInstanceDef def = kiln_default_instance_def();
        def.mesh = box_mesh;
        def.user_id = 300 + (uint32_t)i;
        def.transform = (KilnAffine){{{0.2f, 0, 0, (float)i * 0.45f - 18.0f}, {0, 0.2f, 0, 0.2f}, {0, 0, 0.2f, 12.0f}}};
        KilnInstanceId instance;
        CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &instance), KILN_OK);
    }
}

/* One engine frame: Kiln's update and the engine's dispatch in one command buffer,
 * submitted and waited for by the engine. Fills `buffers` with what was traced. */
static void engine_frame(struct engine *e, KilnTracerId tracer, VkPipelineLayout layout, VkPipeline pipeline,
                         const struct engine_buffer *rays, const struct engine_buffer *hits, uint32_t any_hit,
                         KilnTraceBuffers *buffers) {
    VkCommandBuffer cmd = engine_begin(e);
    CHECK_STATUS(kiln_tracer_record_update(tracer, cmd, 0), KILN_OK);
    CHECK_STATUS(kiln_tracer_get_trace_buffers(tracer, buffers), KILN_OK);
    struct push push = {{buffers->tlas.device_address, buffers->instances.device_address,
                         buffers->blas_refs.device_address, buffers->blas_nodes.device_address,
                         buffers->triangles.device_address, buffers->positions.device_address},
                        rays->address,
                        hits->address,
                        PIXELS,
                        any_hit};
    /* Kiln's exit barrier made its writes visible to every later stage; Kiln bound
     * its own pipeline, so the engine binds its own. */
    engine_dispatch(cmd, pipeline, layout, &push, sizeof push, PIXELS);
    CHECK(engine_submit_and_wait(e) == 0);
}

/* Pixels whose engine-side hit differs from the standalone tracer's. Any-hit mode
 * compares only whether something was hit (which one is the first found). */
static int mismatches(const struct shader_hit *got, const KilnTraceHit *want, int any_hit, int *hit_count) {
    int bad = 0;
    *hit_count = 0;
    for (int i = 0; i < PIXELS; i++) {
        int hit = got[i].instance != NO_HIT, want_hit = want[i].instance.index1 != 0;
        *hit_count += hit;
        if (hit != want_hit) {
            bad++;
        } else if (hit && !any_hit) {
            float tolerance = 1e-5f * fmaxf(1.0f, want[i].t);
            bad += got[i].user_id != want[i].user_id || got[i].primitive != want[i].primitive ||
                   fabsf(got[i].t - want[i].t) > tolerance;
        }
    }
    return bad;
}

/* Traces the same rays on the standalone tracer and compares them with the engine's. */
static void compare(KilnTracerId reference, const KilnTraceRay *rays, const struct engine_buffer *hits,
                    KilnTraceHit *expected, int any_hit, const char *what) {
    CHECK_STATUS(kiln_tracer_trace(reference, rays, PIXELS, any_hit ? KILN_TRACE_ANY : KILN_TRACE_CLOSEST,
                                   expected),
                 KILN_OK);
    int hit_count;
    int bad = mismatches(hits->mapped, expected, any_hit, &hit_count);
    printf("%-34s %d of %d pixels as kiln_tracer_trace (%d hits)\n", what, PIXELS - bad, PIXELS, hit_count);
    CHECK(bad == 0);
    CHECK(hit_count > PIXELS / 2);
}

/* Pixels whose engine-side hit has a user id in [lo, hi]. */
static int pixels_of(const struct shader_hit *hits, uint32_t lo, uint32_t hi) {
    int n = 0;
    for (int i = 0; i < PIXELS; i++) n += hits[i].instance != NO_HIT && hits[i].user_id >= lo && hits[i].user_id <= hi;
    return n;
}

/* Lights the engine's hits by their normals and user ids into `rgb`. */
static void shade(const struct shader_hit *hits, uint8_t *rgb) {
    const float sun[3] = {0.40f, 0.82f, 0.41f};
    for (int i = 0; i < PIXELS; i++) {
        float c[3] = {0.55f, 0.70f, 0.95f};
        if (hits[i].instance != NO_HIT) {
            float lit = fmaxf(0.0f, hits[i].normal[0] * sun[0] + hits[i].normal[1] * sun[1] +
                                        hits[i].normal[2] * sun[2]);
            uint32_t id = hits[i].user_id;
            float base[3] = {id == 1 ? 0.6f : 0.3f + 0.05f * (float)(id % 10), id >= 200 ? 0.3f : 0.6f,
                             id >= 100 && id < 200 ? 0.8f : 0.35f};
            for (int k = 0; k < 3; k++) c[k] = base[k] * (0.25f + 0.75f * lit);
        }
        for (int k = 0; k < 3; k++) rgb[3 * i + k] = (uint8_t)(fminf(1.0f, c[k]) * 255.0f + 0.5f);
    }
}

/* Cascades: a coarser volume (3 m) around the fine one (`fine`, 1.5 m, which ends
 * above the ground): the engine's shader blends them with
 * kiln_gi_irradiance_cascades, which must equal kiln_gi_sample_cascades within
 * 1e-3; some points take the fine volume alone, some the coarse one alone (the
 * ground, outside the fine volume) and some a blend of both. Then the call's bad
 * input. */
static void blend_cascades(struct engine *e, KilnTracerId tracer, KilnGiId fine, const KilnGiDef *fine_def,
                           VkPipelineLayout layout, VkPipeline pipeline, const struct engine_buffer *queries,
                           const struct engine_buffer *irradiance, const KilnVec3 *points, const KilnVec3 *normals,
                           const KilnVec3 *views, uint32_t count) {
    KilnGiDef def = *fine_def;
    def.bounds_min = (KilnVec3){-19.0f, -4.0f, -19.0f};
    def.bounds_max = (KilnVec3){19.0f, 11.0f, 20.0f};
    def.spacing = 3.0f;
    def.dilation = 4.0f;
    KilnGiId coarse;
    CHECK_STATUS(kiln_gi_create(tracer, &def, &coarse), KILN_OK);
    for (int half = 0; half < 2; half++) {
        bool done = false;
        CHECK_STATUS(kiln_gi_record_bake(coarse, engine_begin(e), 0, &done), KILN_OK);
        CHECK(engine_submit_and_wait(e) == 0 && done == (half == 1));
    }
    for (int i = 0; i < 2; i++) {
        CHECK_STATUS(kiln_gi_record_update(coarse, engine_begin(e), 0, NULL), KILN_OK);
        CHECK(engine_submit_and_wait(e) == 0);
    }
    KilnGiBuffers fine_buffers, coarse_buffers;
    CHECK_STATUS(kiln_gi_get_gpu_buffers(fine, &fine_buffers), KILN_OK);
    CHECK_STATUS(kiln_gi_get_gpu_buffers(coarse, &coarse_buffers), KILN_OK);
    struct gi_push push = {fine_buffers.params.device_address, coarse_buffers.params.device_address, queries->address,
                           irradiance->address, count, 2};
    VkCommandBuffer cmd = engine_begin(e);
    engine_dispatch(cmd, pipeline, layout, &push, sizeof push, count);
    CHECK(engine_submit_and_wait(e) == 0);

    static KilnVec3 blended[PIXELS], alone_fine[PIXELS], alone_coarse[PIXELS];
    const KilnGiId cascades[2] = {fine, coarse};
    CHECK_STATUS(kiln_gi_sample_cascades(cascades, 2, points, normals, views, count, true, blended), KILN_OK);
    CHECK_STATUS(kiln_gi_sample(fine, points, normals, views, count, true, alone_fine), KILN_OK);
    CHECK_STATUS(kiln_gi_sample(coarse, points, normals, views, count, true, alone_coarse), KILN_OK);
    const float *got = irradiance->mapped;
    float worst = 0.0f;
    int bad = 0, fine_only = 0, coarse_only = 0, mixed = 0;
    for (uint32_t i = 0; i < count; i++) {
        const float want[3] = {blended[i].x, blended[i].y, blended[i].z};
        for (int k = 0; k < 3; k++) {
            float error = fabsf(got[4 * i + k] - want[k]) / fmaxf(1.0f, fabsf(want[k]));
            worst = fmaxf(worst, error);
            bad += !(error <= 1e-3f);
        }
        bool is_fine = memcmp(&blended[i], &alone_fine[i], sizeof blended[i]) == 0;
        bool is_coarse = memcmp(&blended[i], &alone_coarse[i], sizeof blended[i]) == 0;
        fine_only += is_fine && !is_coarse;
        coarse_only += is_coarse && !is_fine;
        mixed += !is_fine && !is_coarse;
    }
    printf("cascades 1.5 m into 3 m, engine shader at %u points: largest difference to kiln_gi_sample_cascades "
           "%.2e; %d fine alone, %d coarse alone, %d blended\n",
           count, (double)worst, fine_only, coarse_only, mixed);
    CHECK(bad == 0 && fine_only > 100 && coarse_only > 100 && mixed > 100);

    /* Bad input: a status, a message, nothing written. */
    KilnVec3 untouched = {-7.0f, -7.0f, -7.0f}, out = untouched;
    const KilnGiId reversed[2] = {coarse, fine}, twice[2] = {fine, fine};
    CHECK_STATUS(kiln_gi_sample_cascades(reversed, 2, points, normals, views, 1, true, &out),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("finest first");
    CHECK_STATUS(kiln_gi_sample_cascades(twice, 2, points, normals, views, 1, true, &out),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("repeats");
    CHECK_STATUS(kiln_gi_sample_cascades(cascades, 0, points, normals, views, 1, true, &out),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_sample_cascades(cascades, 9, points, normals, views, 1, true, &out),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_sample_cascades(cascades, UINT32_MAX, points, normals, views, 1, true, &out),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_sample_cascades(NULL, 2, points, normals, views, 1, true, &out), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_gi_sample_cascades(cascades, 2, NULL, normals, views, 1, true, &out), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_gi_sample_cascades(cascades, 2, points, normals, views, 1, true, NULL), KILN_ERROR_NULL_POINTER);
    const KilnVec3 nan_point = {NAN, 0.0f, 0.0f}, long_normal = {0.0f, 2.0f, 0.0f};
    CHECK_STATUS(kiln_gi_sample_cascades(cascades, 2, &nan_point, normals, NULL, 1, true, &out),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_sample_cascades(cascades, 2, points, &long_normal, NULL, 1, true, &out),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK(memcmp(&out, &untouched, sizeof out) == 0);
    CHECK_STATUS(kiln_gi_sample_cascades(cascades, 2, NULL, NULL, NULL, 0, true, NULL), KILN_OK); /* nothing to do */
    CHECK_STATUS(kiln_gi_sample_cascades(cascades, 1, points, normals, NULL, 1, true, &out), KILN_OK);
    CHECK_STATUS(kiln_gi_sample(fine, points, normals, NULL, 1, true, &untouched), KILN_OK);
    CHECK(memcmp(&out, &untouched, sizeof out) == 0); /* one cascade is the volume alone */
    /* Embedded volumes refresh and scroll by recording: the submitting calls are refused. */
    KilnGiRefresh refresh;
    CHECK_STATUS(kiln_gi_refresh(fine, (KilnVec3){0, 0, 0}, (KilnVec3){1, 1, 1}, &refresh), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("kiln_gi_record_refresh");
    KilnGiScroll scroll;
    CHECK_STATUS(kiln_gi_scroll_to(fine, (KilnVec3){0, 0, 0}, &scroll), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("kiln_gi_record_scroll_to");
    CHECK_STATUS(kiln_gi_destroy(coarse), KILN_OK);
    CHECK_STATUS(kiln_gi_sample_cascades(cascades, 2, points, normals, views, 1, true, &out),
                 KILN_ERROR_INVALID_HANDLE); /* stale */
    const KilnGiId null_cascade[1] = {{0, 0}};
    CHECK_STATUS(kiln_gi_sample_cascades(null_cascade, 1, points, normals, views, 1, true, &out),
                 KILN_ERROR_INVALID_HANDLE);
}

/* Probes over the embedded tracer's scene, baked and updated by Kiln; the engine's
 * shader (engine_gi.comp) samples their irradiance at every pixel's hit (at least
 * 10,000 points), which must equal kiln_gi_sample within 1e-3 (relative above 1),
 * and lights the picture with it. */
static void sample_probes(struct engine *e, KilnTracerId tracer, KilnTracerId reference, const char *spirv,
                          const struct shader_hit *hits, const KilnTraceRay *rays, const char *outdir) {
    VkPipelineLayout layout;
    VkPipeline pipeline;
    struct engine_buffer queries, irradiance;
    CHECK(engine_pipeline_create(e, spirv, sizeof(struct gi_push), &layout, &pipeline) == 0);
    CHECK(engine_buffer_create(e, PIXELS * 3 * 4 * sizeof(float), &queries) == 0);
    CHECK(engine_buffer_create(e, PIXELS * 4 * sizeof(float), &irradiance) == 0);
    KilnGiDef def = kiln_default_gi_def();
    def.bounds_min = (KilnVec3){-13.0f, 0.5f, -15.0f};
    def.bounds_max = (KilnVec3){13.0f, 6.5f, 14.0f};
    def.spacing = 1.5f;
    def.dilation = 2.0f;
    def.hysteresis = 0.5f;
    def.probes_per_frame = 4096;
    KilnGiId gi;
    CHECK_STATUS(kiln_gi_create(tracer, &def, &gi), KILN_OK);
    KilnGiLighting light = kiln_default_gi_lighting();
    light.sun_direction = (KilnVec3){0.40f, 0.82f, 0.41f};
    CHECK_STATUS(kiln_gi_set_lighting(gi, &light), KILN_OK);
    KilnGiBuffers buffers;
    CHECK_STATUS(kiln_gi_get_gpu_buffers(gi, &buffers), KILN_ERROR_INVALID_STATE); /* nothing on the device yet */
    CHECK_MESSAGE("record a bake or an update first");
    /* The bake the engine's way: two recordings into its command buffers. */
    for (int half = 0; half < 2; half++) {
        bool done = half == 0;
        CHECK_STATUS(kiln_gi_record_bake(gi, engine_begin(e), 0, &done), KILN_OK);
        CHECK(done == (half == 1));
        CHECK(engine_submit_and_wait(e) == 0);
    }
    KilnGiStats stats;
    CHECK_STATUS(kiln_gi_get_stats(gi, &stats), KILN_OK);
    printf("bake recorded in two engine frames: %u probes, %u dead, %u blocks\n", stats.probe_count,
           stats.dead_probes, stats.blocks);
    CHECK(stats.baked && stats.blocks > 0);
    /* Kiln submits nothing on the engine's device: the submitting calls are refused,
       nothing changed, and their recording twins do the work. */
    CHECK_STATUS(kiln_gi_update(gi, NULL), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("kiln_gi_record_update");
    CHECK_STATUS(kiln_gi_bake(gi), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("kiln_gi_record_bake");
    CHECK_STATUS(kiln_tracer_update(tracer), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("kiln_tracer_record_update");
    KilnTraceRay down = {{0.0f, 50.0f, 0.0f}, {0.0f, -1.0f, 0.0f}, 0.0f, INFINITY, ~0u};
    KilnTraceHit down_hit;
    CHECK_STATUS(kiln_tracer_trace(tracer, &down, 1, KILN_TRACE_CLOSEST, &down_hit), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("kiln_tracer_record_trace");
    for (int i = 0; i < 2; i++) {
        uint32_t updated = 0;
        CHECK_STATUS(kiln_gi_record_update(gi, engine_begin(e), 0, &updated), KILN_OK);
        CHECK(engine_submit_and_wait(e) == 0 && updated > 0);
    }
    CHECK_STATUS(kiln_gi_get_gpu_buffers(gi, &buffers), KILN_OK);
    CHECK(buffers.params.size >= 272 && buffers.params.device_address != 0 && buffers.irradiance.buffer != 0);

    /* Every pixel that hit: its point, normal and view, on the CPU and in the engine's buffer. */
    static KilnVec3 points[PIXELS], normals[PIXELS], views[PIXELS], expected[PIXELS];
    static int pixel_of[PIXELS];
    uint32_t count = 0;
    float *q = queries.mapped;
    for (int i = 0; i < PIXELS; i++) {
        if (hits[i].instance == NO_HIT) continue;
        const KilnTraceRay *r = &rays[i];
        float t = hits[i].t;
        points[count] = (KilnVec3){r->origin.x + t * r->direction.x, r->origin.y + t * r->direction.y,
                                   r->origin.z + t * r->direction.z};
        normals[count] = (KilnVec3){hits[i].normal[0], hits[i].normal[1], hits[i].normal[2]};
        views[count] = (KilnVec3){-r->direction.x, -r->direction.y, -r->direction.z};
        const KilnVec3 *v[3] = {&points[count], &normals[count], &views[count]};
        for (int k = 0; k < 3; k++) {
            float *w = q + 12 * count + 4 * k;
            w[0] = v[k]->x, w[1] = v[k]->y, w[2] = v[k]->z, w[3] = 0.0f;
        }
        pixel_of[count++] = i;
    }

    /* Two frames the engine's way: Kiln's update recorded into the engine's command
     * buffer, the engine's sampling right after it in the same one. */
    const float *got = irradiance.mapped;
    for (int frame = 0; frame < 2; frame++) {
        /* Several recordings in one frame: a trace with read-back, then the probes. */
        VkCommandBuffer cmd = engine_begin(e);
        CHECK_STATUS(kiln_tracer_begin_frame(tracer, 0), KILN_OK);
        CHECK_STATUS(kiln_tracer_record_trace(tracer, cmd, 0, rays, 4096, KILN_TRACE_CLOSEST), KILN_OK);
        uint32_t updated = 0;
        CHECK_STATUS(kiln_gi_record_update(gi, cmd, 0, &updated), KILN_OK);
        CHECK_STATUS(kiln_gi_get_gpu_buffers(gi, &buffers), KILN_OK);
        struct gi_push push = {buffers.params.device_address, 0, queries.address, irradiance.address, count, 0};
        engine_dispatch(cmd, pipeline, layout, &push, sizeof push, count);
        CHECK(engine_submit_and_wait(e) == 0);
        static KilnTraceHit traced[4096], want_hits[4096];
        CHECK_STATUS(kiln_tracer_read_hits(tracer, 0, traced, 4096), KILN_OK);
        CHECK_STATUS(kiln_tracer_trace(reference, rays, 4096, KILN_TRACE_CLOSEST, want_hits), KILN_OK);
        int same = 0;
        for (int i = 0; i < 4096; i++)
            same += traced[i].primitive == want_hits[i].primitive && traced[i].t == want_hits[i].t &&
                    traced[i].user_id == want_hits[i].user_id;
        CHECK(same == 4096);
        /* After the engine's fence: kiln_gi_sample reads what the recording read back. */
        CHECK_STATUS(kiln_gi_sample(gi, points, normals, views, count, true, expected), KILN_OK);
        float worst = 0.0f, brightest = 0.0f;
        int bad = 0;
        for (uint32_t i = 0; i < count; i++) {
            const float want[3] = {expected[i].x, expected[i].y, expected[i].z};
            for (int k = 0; k < 3; k++) {
                float error = fabsf(got[4 * i + k] - want[k]) / fmaxf(1.0f, fabsf(want[k]));
                worst = fmaxf(worst, error);
                brightest = fmaxf(brightest, want[k]);
                bad += !(error <= 1e-3f);
            }
        }
        printf("recorded update of %u probes, engine shader irradiance at %u points: largest difference to "
               "kiln_gi_sample %.2e (values up to %.2f)\n",
               updated, count, (double)worst, (double)brightest);
        CHECK(updated > 0 && count >= 10000 && bad == 0 && brightest > 0.1f);
    }

    static uint8_t rgb[PIXELS * 3];
    for (int i = 0; i < PIXELS; i++) rgb[3 * i] = 140, rgb[3 * i + 1] = 180, rgb[3 * i + 2] = 240;
    for (uint32_t i = 0; i < count; i++)
        for (int k = 0; k < 3; k++) {
            float c = 1.0f - expf(-0.6f * 0.7f / 3.14159265f * got[4 * i + k]);
            rgb[3 * pixel_of[i] + k] = (uint8_t)(fminf(1.0f, sqrtf(c)) * 255.0f + 0.5f);
        }
    char path[1024];
    snprintf(path, sizeof path, "%s/embedded_shader_gi.png", outdir);
    CHECK(write_png(path, WIDTH, HEIGHT, 3, rgb) == 0);
    printf("wrote %s\n", path);

    blend_cascades(e, tracer, gi, &def, layout, pipeline, &queries, &irradiance, points, normals, views, count);

    /* Bad input: refused with a status. */
    CHECK_STATUS(kiln_gi_get_gpu_buffers(gi, NULL), KILN_ERROR_NULL_POINTER);
    KilnGiBuffers again;
    CHECK_STATUS(kiln_gi_get_gpu_buffers(gi, &again), KILN_OK);
    CHECK(memcmp(&again, &buffers, sizeof again) == 0);
    KilnGiId standalone;
    CHECK_STATUS(kiln_gi_create(reference, &def, &standalone), KILN_OK);
    CHECK_STATUS(kiln_gi_get_gpu_buffers(standalone, &again), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("not embedded");
    CHECK_STATUS(kiln_gi_record_update(standalone, e->cmd[1], 0, NULL), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("kiln_gi_update");
    CHECK_STATUS(kiln_gi_record_update(gi, NULL, 0, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_gi_record_bake(standalone, e->cmd[1], 0, NULL), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("kiln_gi_bake");
    CHECK_STATUS(kiln_gi_record_bake(gi, NULL, 0, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_gi_record_bake(gi, e->cmd[1], UINT32_MAX, NULL), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_record_update(gi, e->cmd[1], SLOTS, NULL), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_record_update(gi, e->cmd[1], UINT32_MAX, NULL), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_destroy(standalone), KILN_OK);
    CHECK_STATUS(kiln_gi_destroy(gi), KILN_OK);
    CHECK_STATUS(kiln_gi_get_gpu_buffers(gi, &again), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_gi_record_update(gi, e->cmd[1], 0, NULL), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_gi_record_bake(gi, e->cmd[1], 0, NULL), KILN_ERROR_INVALID_HANDLE);
    engine_buffer_destroy(e, &queries);
    engine_buffer_destroy(e, &irradiance);
    vkDestroyPipeline(e->device, pipeline, NULL);
    vkDestroyPipelineLayout(e->device, layout, NULL);
}

/* A stats record compared field by field that the two paths must share. */
static int same_stats(const KilnGiStats *a, const KilnGiStats *b) {
    return a->probe_count == b->probe_count && a->dead_probes == b->dead_probes &&
           a->moved_probes == b->moved_probes && a->blocks == b->blocks && a->bytes == b->bytes &&
           a->visibility_bytes == b->visibility_bytes;
}

/* A recorded job on a volume: its bake, a refresh of [lo, hi], or a scroll toward
 * `centre` (not used once the scroll started). */
enum job_kind { JOB_BAKE, JOB_REFRESH, JOB_SCROLL };
struct job {
    enum job_kind kind;
    KilnGiId gi;
    KilnVec3 lo, hi, centre;
    KilnGiRefresh *refresh;
    KilnGiScroll *scroll;
};

static KilnStatus record_step(const struct job *j, VkCommandBuffer cmd, bool *done) {
    switch (j->kind) {
    case JOB_BAKE: return kiln_gi_record_bake(j->gi, cmd, 0, done);
    case JOB_REFRESH: return kiln_gi_record_refresh(j->gi, j->lo, j->hi, cmd, 0, done, j->refresh);
    default: return kiln_gi_record_scroll_to(j->gi, j->centre, cmd, 0, done, j->scroll);
    }
}

/* Records the job a step per engine frame until it is done; returns the frames. */
static int record_until_done(struct engine *e, const struct job *j) {
    bool done = false;
    int frames = 0;
    while (!done && frames < 10) {
        KilnStatus status = record_step(j, engine_begin(e), &done);
        CHECK(engine_submit_and_wait(e) == 0);
        CHECK_STATUS(status, KILN_OK);
        if (status != KILN_OK) break;
        frames++;
    }
    CHECK(done);
    return frames;
}

/* The world changes under an embedded volume that relocates and classifies its
 * probes: a wall appears (kiln_gi_record_refresh) and the camera moves
 * (kiln_gi_record_scroll_to), each recorded into the engine's command buffers a
 * step per frame. A standalone twin on the reference tracer does the same with
 * kiln_gi_bake, kiln_gi_refresh and kiln_gi_scroll_to: the reports, the moved and
 * inactive probes and the compressed visibility are the same, and after two
 * updates each the irradiance is too. */
static void follow_recorded(struct engine *e, KilnTracerId tracer, KilnTracerId reference, KilnMeshId box_mesh,
                            KilnMeshId box_mesh_reference) {
    KilnGiDef def = kiln_default_gi_def();
    def.bounds_min = (KilnVec3){-6.0f, 0.5f, -6.0f};
    def.bounds_max = (KilnVec3){6.0f, 6.5f, 6.0f};
    def.spacing = 1.5f;
    def.dilation = -1.0f; /* dense: it scrolls */
    def.hysteresis = 0.5f;
    def.probes_per_frame = 4096;
    def.relocate_probes = true;
    def.classify_probes = true;
    KilnGiId emb, twin;
    CHECK_STATUS(kiln_gi_create(tracer, &def, &emb), KILN_OK);
    CHECK_STATUS(kiln_gi_create(reference, &def, &twin), KILN_OK);
    const KilnVec3 lo = {-0.2f, 0.0f, -7.0f}, hi = {0.2f, 4.0f, 1.0f};
    bool done = true;
    KilnGiRefresh refresh = {0}, twin_refresh = {0};
    CHECK_STATUS(kiln_gi_record_refresh(emb, lo, hi, e->cmd[1], 0, &done, &refresh), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("not baked");
    CHECK_STATUS(kiln_gi_record_bake(emb, engine_begin(e), 0, &done), KILN_OK);
    CHECK(engine_submit_and_wait(e) == 0 && !done);
    CHECK_STATUS(kiln_gi_record_refresh(emb, lo, hi, e->cmd[1], 0, &done, NULL), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("bake is in progress"); /* the re-bakes wait for the bake */
    const struct job bake = {JOB_BAKE, emb, lo, hi, lo, NULL, NULL};
    int frames = record_until_done(e, &bake);
    printf("recorded bake with relocation and classification: %d engine frames\n", 1 + frames);
    CHECK(frames >= 2);
    CHECK_STATUS(kiln_gi_bake(twin), KILN_OK);
    KilnGiStats stats, twin_stats;
    CHECK_STATUS(kiln_gi_get_stats(emb, &stats), KILN_OK);
    CHECK_STATUS(kiln_gi_get_stats(twin, &twin_stats), KILN_OK);
    printf("  %u probes, %u moved, %u inactive (standalone: %u moved, %u inactive)\n", stats.probe_count,
           stats.moved_probes, stats.dead_probes, twin_stats.moved_probes, twin_stats.dead_probes);
    CHECK(same_stats(&stats, &twin_stats) && stats.probe_count == 9 * 5 * 9 && stats.moved_probes > 0);

    /* The wall, in both scenes: the embedded scene's update goes into the refresh's recording. */
    KilnInstanceDef wall = kiln_default_instance_def();
    wall.transform = (KilnAffine){{{0.2f, 0, 0, 0.0f}, {0, 2.0f, 0, 2.0f}, {0, 0, 4.0f, -3.0f}}};
    wall.user_id = 900;
    KilnInstanceId walls[2];
    wall.mesh = box_mesh;
    CHECK_STATUS(kiln_tracer_add_instance(tracer, &wall, &walls[0]), KILN_OK);
    wall.mesh = box_mesh_reference;
    CHECK_STATUS(kiln_tracer_add_instance(reference, &wall, &walls[1]), KILN_OK);
    CHECK_STATUS(kiln_gi_record_refresh(emb, lo, hi, engine_begin(e), 0, &done, &refresh), KILN_OK);
    CHECK(engine_submit_and_wait(e) == 0 && !done && refresh.probes == 0); /* the report waits for the finish */
    KilnGiScroll scroll = {{0, 0, 0}, 0, 0};
    CHECK_STATUS(kiln_gi_record_scroll_to(emb, (KilnVec3){3.2f, 3.5f, 0.0f}, e->cmd[1], 0, &done, &scroll),
                 KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("refresh is in progress");
    const KilnVec3 bad_lo = {NAN, 0.0f, 0.0f};
    CHECK_STATUS(kiln_gi_record_refresh(emb, bad_lo, hi, e->cmd[1], 0, &done, NULL), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_record_refresh(emb, hi, lo, e->cmd[1], 0, &done, NULL), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_record_refresh(emb, lo, hi, e->cmd[1], SLOTS, &done, NULL), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_record_refresh(emb, lo, hi, NULL, 0, &done, NULL), KILN_ERROR_NULL_POINTER);
    const struct job refreshing = {JOB_REFRESH, emb, lo, hi, lo, &refresh, NULL};
    frames = record_until_done(e, &refreshing);
    CHECK_STATUS(kiln_gi_refresh(twin, lo, hi, &twin_refresh), KILN_OK);
    CHECK_STATUS(kiln_gi_get_stats(emb, &stats), KILN_OK);
    CHECK_STATUS(kiln_gi_get_stats(twin, &twin_stats), KILN_OK);
    printf("recorded refresh over the new wall in %d engine frames: %u probes re-baked, %u blocks matched, %u "
           "added, %u reclaimed (standalone: %u, %u, %u, %u)\n",
           1 + frames, refresh.probes, refresh.blocks_matched, refresh.blocks_added, refresh.blocks_reclaimed, twin_refresh.probes,
           twin_refresh.blocks_matched, twin_refresh.blocks_added, twin_refresh.blocks_reclaimed);
    CHECK(refresh.probes > 0 && refresh.blocks_added > 0);
    CHECK(memcmp(&refresh, &twin_refresh, sizeof refresh) == 0 && same_stats(&stats, &twin_stats));

    /* The camera moves 3.2 m along x: two planes enter. An update recorded between the halves sees the old place. */
    KilnGiBuffers before, after;
    CHECK_STATUS(kiln_gi_get_gpu_buffers(emb, &before), KILN_OK);
    const KilnVec3 centre = {3.2f, 3.5f, 0.0f};
    CHECK_STATUS(kiln_gi_record_scroll_to(emb, centre, engine_begin(e), 0, &done, &scroll), KILN_OK);
    CHECK(engine_submit_and_wait(e) == 0 && !done);
    CHECK_STATUS(kiln_gi_record_refresh(emb, lo, hi, e->cmd[1], 0, &done, NULL), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("scroll is in progress");
    CHECK_STATUS(kiln_gi_record_update(emb, engine_begin(e), 0, NULL), KILN_OK);
    CHECK(engine_submit_and_wait(e) == 0);
    CHECK_STATUS(kiln_gi_update(twin, NULL), KILN_OK);
    /* The calls that take it on: their centre is not used. */
    const struct job scrolling = {JOB_SCROLL, emb, lo, hi, {99.0f, 0.0f, 0.0f}, NULL, &scroll};
    frames = record_until_done(e, &scrolling);
    KilnGiScroll twin_scroll;
    CHECK_STATUS(kiln_gi_scroll_to(twin, centre, &twin_scroll), KILN_OK);
    CHECK_STATUS(kiln_gi_get_gpu_buffers(emb, &after), KILN_OK);
    CHECK_STATUS(kiln_gi_get_stats(emb, &stats), KILN_OK);
    CHECK_STATUS(kiln_gi_get_stats(twin, &twin_stats), KILN_OK);
    printf("recorded scroll by {%d, %d, %d} in %d engine frames: %u planes, %u probes entered (standalone: %u "
           "planes, %u probes)\n",
           scroll.shift[0], scroll.shift[1], scroll.shift[2], 1 + frames, scroll.planes, scroll.probes, twin_scroll.planes,
           twin_scroll.probes);
    CHECK(scroll.shift[0] == 2 && scroll.shift[1] == 0 && scroll.shift[2] == 0 && scroll.planes == 2 &&
          scroll.probes == 2 * 5 * 9);
    CHECK(memcmp(&scroll, &twin_scroll, sizeof scroll) == 0 && same_stats(&stats, &twin_stats));
    CHECK(after.version != before.version);

    /* Two updates each (the new probes first): the same light at points across the old and new planes. */
    for (int i = 0; i < 2; i++) {
        CHECK_STATUS(kiln_gi_record_update(emb, engine_begin(e), 0, NULL), KILN_OK);
        CHECK(engine_submit_and_wait(e) == 0);
        CHECK_STATUS(kiln_gi_update(twin, NULL), KILN_OK);
    }
    KilnVec3 points[40], normals[40], got[40], want[40];
    for (int i = 0; i < 40; i++) {
        points[i] = (KilnVec3){-3.0f + 0.3f * (float)i, 0.0f, 2.5f};
        normals[i] = (KilnVec3){0.0f, 1.0f, 0.0f};
    }
    CHECK_STATUS(kiln_gi_sample(emb, points, normals, NULL, 40, true, got), KILN_OK);
    CHECK_STATUS(kiln_gi_sample(twin, points, normals, NULL, 40, true, want), KILN_OK);
    float worst = 0.0f, brightest = 0.0f;
    for (int i = 0; i < 40; i++) {
        worst = fmaxf(worst, fmaxf(fabsf(got[i].x - want[i].x), fmaxf(fabsf(got[i].y - want[i].y),
                                                                       fabsf(got[i].z - want[i].z))));
        brightest = fmaxf(brightest, want[i].y);
    }
    printf("after the scroll and two updates each: irradiance at 40 points within %.2e of the standalone "
           "volume's (values up to %.2f)\n",
           (double)worst, (double)brightest);
    CHECK(worst <= 1e-4f && brightest > 0.1f);

    /* Bad input. */
    CHECK_STATUS(kiln_gi_record_scroll_to(emb, (KilnVec3){INFINITY, 0, 0}, e->cmd[1], 0, &done, NULL),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_record_scroll_to(emb, centre, NULL, 0, &done, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_gi_record_scroll_to(emb, centre, e->cmd[1], UINT32_MAX, &done, NULL),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_record_scroll_to(twin, centre, e->cmd[1], 0, &done, NULL), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("kiln_gi_scroll_to");
    CHECK_STATUS(kiln_gi_record_refresh(twin, lo, hi, e->cmd[1], 0, &done, NULL), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("kiln_gi_refresh");
    def.dilation = 2.0f; /* around geometry: it does not scroll */
    KilnGiId placed;
    CHECK_STATUS(kiln_gi_create(tracer, &def, &placed), KILN_OK);
    CHECK_STATUS(kiln_gi_record_scroll_to(placed, centre, e->cmd[1], 0, &done, NULL), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("every grid point");
    CHECK_STATUS(kiln_gi_destroy(placed), KILN_OK);
    CHECK_STATUS(kiln_gi_destroy(emb), KILN_OK);
    CHECK_STATUS(kiln_gi_destroy(twin), KILN_OK);
    CHECK_STATUS(kiln_gi_record_refresh(emb, lo, hi, e->cmd[1], 0, &done, NULL), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_gi_record_scroll_to(emb, centre, e->cmd[1], 0, &done, NULL), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_remove_instance(tracer, walls[0]), KILN_OK);
    CHECK_STATUS(kiln_tracer_remove_instance(reference, walls[1]), KILN_OK);
    CHECK_STATUS(kiln_tracer_record_update(tracer, engine_begin(e), 0), KILN_OK);
    CHECK(engine_submit_and_wait(e) == 0);
}

#define FALLING 8

/* The integrated frame on the engine's device: a world of falling boxes whose
 * instances follow their bodies; kiln_frame_run_into records the frame's GPU work
 * (the instances' upload and the TLAS rebuild) into the engine's command buffer and
 * the engine's shader traces right after it, in the same command buffer: a ray
 * straight down onto each body's pose of the previous run (the frame shows the
 * world one run late) hits that body's box. */
static void run_frames(struct engine *e, const KilnEmbeddedDef *def, KilnTracerId standalone, VkPipelineLayout layout,
                       VkPipeline pipeline, const struct engine_buffer *rays, const struct engine_buffer *hits) {
    KilnTracerId tracer;
    CHECK_STATUS(kiln_tracer_create_embedded(def, &tracer), KILN_OK);
    KilnWorldDef wdef = kiln_default_world_def();
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(&wdef, &world), KILN_OK);
    KilnShapeId box;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 0.5f, 0.5f}, &box), KILN_OK);
    KilnMeshId cube;
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, unit_cube_positions, 8, unit_cube_indices, 12, &cube), KILN_OK);
    const KilnAffine half = {{{0.5f, 0, 0, 0}, {0, 0.5f, 0, 0}, {0, 0, 0.5f, 0}}};
    KilnBodyId bodies[FALLING];
    for (int i = 0; i < FALLING; i++) {
        KilnBodyDef bdef = kiln_default_body_def();
        bdef.transform.position = (KilnVec3){(float)i * 3.0f - 10.0f, 20.0f + (float)i, 0.0f};
        bdef.angular_velocity = (KilnVec3){0.5f, 0.2f * (float)i, 0.0f};
        CHECK_STATUS(kiln_body_create(world, &bdef, &bodies[i]), KILN_OK);
        KilnShapeDef sdef = kiln_default_shape_def();
        CHECK_STATUS(kiln_body_add_shape(bodies[i], box, &sdef, NULL), KILN_OK);
        KilnInstanceDef idef = kiln_default_instance_def();
        idef.mesh = cube;
        idef.user_id = 500 + (uint32_t)i;
        KilnInstanceId instance;
        CHECK_STATUS(kiln_tracer_add_instance(tracer, &idef, &instance), KILN_OK);
        CHECK_STATUS(kiln_tracer_follow_body(tracer, instance, bodies[i], &half), KILN_OK);
    }
    KilnFrameDef fdef = kiln_default_frame_def();
    fdef.world = world;
    fdef.tracer = tracer;
    KilnFrameId frame;
    CHECK_STATUS(kiln_frame_create(&fdef, &frame), KILN_OK);
    const KilnRuntimeId inline_jobs = {0, 0};
    int traced = 0, hit = 0;
    for (int run = 0; run < 30; run++) {
        float state[FALLING][7];
        CHECK_STATUS(kiln_world_get_transforms(world, bodies, FALLING, &state[0][0], sizeof state[0], &state[0][3],
                                               sizeof state[0]),
                     KILN_OK);
        struct shader_ray *down = rays->mapped;
        for (int i = 0; i < FALLING; i++)
            down[i] = (struct shader_ray){{state[i][0], 100.0f, state[i][2]}, 0.0f, {0, -1, 0}, 1e30f, ~0u, {0, 0, 0}};
        VkCommandBuffer cmd = engine_begin(e);
        CHECK_STATUS(kiln_frame_run_into(frame, inline_jobs, 1.0f / 60.0f, cmd, 0), KILN_OK);
        KilnTraceBuffers buffers;
        CHECK_STATUS(kiln_tracer_get_trace_buffers(tracer, &buffers), KILN_OK);
        struct push push = {{buffers.tlas.device_address, buffers.instances.device_address,
                             buffers.blas_refs.device_address, buffers.blas_nodes.device_address,
                             buffers.triangles.device_address, buffers.positions.device_address},
                            rays->address,
                            hits->address,
                            FALLING,
                            0};
        engine_dispatch(cmd, pipeline, layout, &push, sizeof push, FALLING);
        CHECK(engine_submit_and_wait(e) == 0);
        if (run == 0) continue; /* no poses before the first step */
        const struct shader_hit *h = hits->mapped;
        for (int i = 0; i < FALLING; i++) traced++, hit += h[i].instance != NO_HIT && h[i].user_id == 500u + (uint32_t)i;
    }
    KilnFrameTiming timing;
    CHECK_STATUS(kiln_frame_get_timing(frame, &timing), KILN_OK);
    printf("%llu recorded frames: %d of %d rays down onto the shown poses hit their own box (GPU time %.1f ms: not "
           "measured when recorded)\n",
           (unsigned long long)timing.frame_index + 1, hit, traced, timing.gpu_ms);
    CHECK(hit == traced && timing.frame_index == 29 && timing.instance_count == FALLING);

    /* Bad input: refused with a status, nothing run. */
    VkCommandBuffer cmd = e->cmd[1];
    CHECK_STATUS(kiln_frame_run_into(frame, inline_jobs, 1.0f / 60.0f, NULL, 0), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_frame_run_into(frame, inline_jobs, NAN, cmd, 0), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_frame_run_into(frame, inline_jobs, 1.0f / 60.0f, cmd, SLOTS), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("frame_slot");
    CHECK_STATUS(kiln_frame_run_into(frame, inline_jobs, 1.0f / 60.0f, cmd, UINT32_MAX), KILN_ERROR_INVALID_ARGUMENT);
    KilnFrameDef physics_only = kiln_default_frame_def();
    physics_only.world = world;
    KilnFrameId bare;
    CHECK_STATUS(kiln_frame_create(&physics_only, &bare), KILN_OK);
    CHECK_STATUS(kiln_frame_run_into(bare, inline_jobs, 1.0f / 60.0f, cmd, 0), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("no tracer");
    CHECK_STATUS(kiln_frame_destroy(bare), KILN_OK);
    physics_only.tracer = standalone;
    CHECK_STATUS(kiln_frame_create(&physics_only, &bare), KILN_OK);
    CHECK_STATUS(kiln_frame_run_into(bare, inline_jobs, 1.0f / 60.0f, cmd, 0), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("not embedded");
    CHECK_STATUS(kiln_frame_destroy(bare), KILN_OK);
    CHECK_STATUS(kiln_frame_run(frame, inline_jobs, 1.0f / 60.0f), KILN_ERROR_INVALID_STATE); /* would submit */
    CHECK_MESSAGE("kiln_frame_run_into");
    CHECK_STATUS(kiln_frame_get_timing(frame, &timing), KILN_OK);
    CHECK(timing.frame_index == 29);
    CHECK_STATUS(kiln_frame_destroy(frame), KILN_OK);
    CHECK_STATUS(kiln_frame_run_into(frame, inline_jobs, 1.0f / 60.0f, cmd, 0), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_destroy(tracer), KILN_OK);
    CHECK_STATUS(kiln_world_destroy(world), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(box), KILN_OK);
}

int main(int argc, char **argv) {
    const char *spirv = argc > 1 ? argv[1] : ENGINE_TRACE_SPV;
    const char *spirv_gi = argc > 2 ? argv[2] : ENGINE_GI_SPV;
    const char *outdir = argc > 3 ? argv[3] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    KilnTracerId reference;
    int done = start_gpu_sample("embedded_shader", &reference);
    if (done >= 0) return done;
    struct engine e;
    if (engine_create(&e) != 0) {
        engine_destroy(&e);
        kiln_tracer_destroy(reference);
        fprintf(stderr, "embedded_shader: the engine could not create its Vulkan device\n");
        return gpu_required() ? 1 : 0;
    }
    VkPipelineLayout layout;
    VkPipeline pipeline;
    CHECK(engine_pipeline_create(&e, spirv, sizeof(struct push), &layout, &pipeline) == 0);
    struct engine_buffer rays, hits;
    CHECK(engine_buffer_create(&e, PIXELS * sizeof(struct shader_ray), &rays) == 0);
    CHECK(engine_buffer_create(&e, PIXELS * sizeof(struct shader_hit), &hits) == 0);
    if (checks_failed) {
        engine_destroy(&e);
        kiln_tracer_destroy(reference);
        return check_summary("embedded_shader");
    }

    KilnEmbeddedDef def = engine_embedded_def(&e);
    KilnTracerId tracer;
    CHECK_STATUS(kiln_tracer_create_embedded(&def, &tracer), KILN_OK);
    KilnTraceBuffers buffers;
    /* Nothing on the device yet: refused, not zeros. An empty scene records nothing. */
    CHECK_STATUS(kiln_tracer_get_trace_buffers(tracer, &buffers), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("no scene on the device");
    CHECK_STATUS(kiln_tracer_record_update(tracer, e.cmd[1], 0), KILN_OK);

    KilnMeshId box_mesh, box_mesh_reference;
    KilnInstanceId capsule = build_scene(tracer, &box_mesh);
    KilnInstanceId capsule_reference = build_scene(reference, &box_mesh_reference);
    const float eye[3] = {14.0f, 9.0f, -18.0f}, target[3] = {0.0f, 1.0f, 0.0f};
    Camera camera = camera_look_at(eye, target, 55.0f);
    static KilnTraceRay pixel_rays[PIXELS];
    static KilnTraceHit expected[PIXELS];
    camera_rays(&camera, WIDTH, HEIGHT, pixel_rays);
    struct shader_ray *shader_rays = rays.mapped;
    for (int i = 0; i < PIXELS; i++) {
        const KilnTraceRay *r = &pixel_rays[i];
        shader_rays[i] = (struct shader_ray){{r->origin.x, r->origin.y, r->origin.z}, r->t_min,
                                             {r->direction.x, r->direction.y, r->direction.z}, r->t_max, r->mask,
                                             {0, 0, 0}};
    }

    engine_frame(&e, tracer, layout, pipeline, &rays, &hits, 0, &buffers);
    printf("engine shader over %u instances: TLAS %llu B, BLAS nodes %llu B, version %llu\n", buffers.instance_count,
           (unsigned long long)buffers.tlas.size, (unsigned long long)buffers.blas_nodes.size,
           (unsigned long long)buffers.version);
    CHECK(buffers.instance_count == 18 && buffers.tlas.buffer != 0 && buffers.reserved == 0);
    CHECK(buffers.tlas.size >= (2 * 18 - 1) * 32 && buffers.instances.size >= 18 * 112);
    compare(reference, pixel_rays, &hits, expected, 0, "closest hit:");
    static uint8_t rgb[PIXELS * 3];
    shade(hits.mapped, rgb);
    char path[1024];
    snprintf(path, sizeof path, "%s/embedded_shader.png", outdir);
    CHECK(write_png(path, WIDTH, HEIGHT, 3, rgb) == 0);
    printf("wrote %s\n", path);

    int capsule_before = pixels_of(hits.mapped, 200, 200);
    engine_frame(&e, tracer, layout, pipeline, &rays, &hits, 1, &buffers);
    compare(reference, pixel_rays, &hits, expected, 1, "any hit:");

    /* A moved instance: until the update is recorded, the buffers are refused. */
    KilnAffine moved = {{{1, 0, 0, 2.0f}, {0, 1, 0, 1.5f}, {0, 0, 1, -6.0f}}};
    CHECK_STATUS(kiln_tracer_set_transforms(tracer, &capsule, &moved, 1), KILN_OK);
    CHECK_STATUS(kiln_tracer_set_transforms(reference, &capsule_reference, &moved, 1), KILN_OK);
    CHECK_STATUS(kiln_tracer_get_trace_buffers(tracer, &buffers), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("record the update first");
    uint64_t version = buffers.version;
    engine_frame(&e, tracer, layout, pipeline, &rays, &hits, 0, &buffers);
    CHECK(buffers.version == version);
    compare(reference, pixel_rays, &hits, expected, 0, "after a move:");
    int capsule_after = pixels_of(hits.mapped, 200, 200);
    printf("the capsule covers %d pixels, then %d after its move\n", capsule_before, capsule_after);
    CHECK(capsule_after > 0 && capsule_after != capsule_before);

    /* Past the room of the instance buffers: new buffers, a new version. */
    add_row(tracer, box_mesh);
    add_row(reference, box_mesh_reference);
    engine_frame(&e, tracer, layout, pipeline, &rays, &hits, 0, &buffers);
    printf("98 instances: version %llu (was %llu)\n", (unsigned long long)buffers.version,
           (unsigned long long)version);
    CHECK(buffers.instance_count == 98 && buffers.version != version);
    compare(reference, pixel_rays, &hits, expected, 0, "after the scene grew:");
    CHECK(pixels_of(hits.mapped, 300, 379) > 0);
    sample_probes(&e, tracer, reference, spirv_gi, hits.mapped, pixel_rays, outdir);
    follow_recorded(&e, tracer, reference, box_mesh, box_mesh_reference);
    run_frames(&e, &def, reference, layout, pipeline, &rays, &hits);

    /* Bad input: refused with a status, nothing changed. */
    CHECK_STATUS(kiln_tracer_record_update(tracer, NULL, 0), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_tracer_record_update(tracer, e.cmd[1], SLOTS), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("frame_slot");
    CHECK_STATUS(kiln_tracer_record_update(tracer, e.cmd[1], UINT32_MAX), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_tracer_record_update(reference, e.cmd[1], 0), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("not embedded");
    CHECK_STATUS(kiln_tracer_begin_frame(tracer, SLOTS), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_tracer_begin_frame(tracer, UINT32_MAX), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_tracer_begin_frame(reference, 0), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("not embedded");
    CHECK_STATUS(kiln_tracer_get_trace_buffers(tracer, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_tracer_get_trace_buffers(reference, &buffers), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("not embedded");
    KilnTraceBuffers again;
    CHECK_STATUS(kiln_tracer_get_trace_buffers(tracer, &again), KILN_OK);
    CHECK(memcmp(&again, &buffers, sizeof again) == 0);

    CHECK(validation_message_count(tracer) == 0);
    CHECK(validation_message_count(reference) == 0);
    CHECK_STATUS(kiln_tracer_destroy(tracer), KILN_OK);
    CHECK_STATUS(kiln_tracer_record_update(tracer, e.cmd[1], 0), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_get_trace_buffers(tracer, &buffers), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_begin_frame(tracer, 0), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_destroy(reference), KILN_OK);
    engine_buffer_destroy(&e, &rays);
    engine_buffer_destroy(&e, &hits);
    vkDestroyPipeline(e.device, pipeline, NULL);
    vkDestroyPipelineLayout(e.device, layout, NULL);
    engine_destroy(&e);
    printf("the engine's validation messenger reported %d messages\n", e.messages);
    CHECK(e.messages == 0);
    return check_summary("embedded_shader");
}

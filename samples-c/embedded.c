/* Embedded mode: this program plays an engine that owns its Vulkan instance, device,
 * queue and command buffers. It hands them to Kiln (kiln_tracer_create_embedded),
 * lets Kiln record its passes into its own command buffers with two frames in
 * flight, submits them itself, and reads the hits after its own fences. Every frame's
 * hits must equal those of a standalone tracer over the same scene, the engine's own
 * validation messenger must stay silent, and bad input is refused with a status.
 *
 *   embedded [FRAMES]        (default 8)
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

#define RAYS 4096

/* The same scene in both tracers: a ground quad and 3x3 boxes. Returns the first
   box, the one that moves. */
static KilnInstanceId build_scene(KilnTracerId tracer) {
    const KilnVec3 ground[4] = {{-20, 0, -20}, {20, 0, -20}, {20, 0, 20}, {-20, 0, 20}};
    const uint32_t quad[6] = {0, 2, 1, 0, 3, 2};
    KilnVec3 box[8];
    for (int i = 0; i < 8; i++) box[i] = (KilnVec3){i & 1 ? 1.0f : -1.0f, i & 2 ? 2.0f : 0.0f, i & 4 ? 1.0f : -1.0f};
    const uint32_t faces[36] = {0, 1, 3, 0, 3, 2, 4, 6, 7, 4, 7, 5, 0, 4, 5, 0, 5, 1,
                                2, 3, 7, 2, 7, 6, 0, 2, 6, 0, 6, 4, 1, 5, 7, 1, 7, 3};
    KilnMeshId mesh;
    KilnInstanceId instance;
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, ground, 4, quad, 2, &mesh), KILN_OK);
    KilnInstanceDef def = kiln_default_instance_def();
    def.mesh = mesh;
    CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &instance), KILN_OK);
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, box, 8, faces, 12, &mesh), KILN_OK);
    KilnInstanceId first = {0};
    for (int i = 0; i < 9; i++) {
        def.mesh = mesh;
        def.user_id = 100 + (uint32_t)i;
        def.transform.rows[0][3] = (float)(i % 3) * 5.0f - 5.0f;
        def.transform.rows[2][3] = (float)(i / 3) * 5.0f - 5.0f;
        CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &instance), KILN_OK);
        if (i == 0) first = instance;
    }
    return first;
}

/* Rays from a camera circling the scene, different every frame. */
static void frame_rays(int frame, KilnTraceRay *rays) {
    float eye_x = 18.0f * (float)(frame % 4 - 2) / 2.0f, eye_z = -18.0f;
    for (int i = 0; i < RAYS; i++) {
        float x = (float)(i % 64) / 63.0f - 0.5f, y = (float)(i / 64) / 63.0f - 0.5f;
        KilnVec3 dir = {-eye_x / 18.0f + x, -0.5f + y, 1.0f};
        rays[i] = (KilnTraceRay){{eye_x, 8.0f, eye_z}, dir, 0.0f, INFINITY, 0xffffffffu};
    }
}

static int same_hits(const KilnTraceHit *a, const KilnTraceHit *b, int n) {
    for (int i = 0; i < n; i++)
        /* The tracers differ, so the handles' tracer fields do; slot and generation agree. */
        if (a[i].instance.index1 != b[i].instance.index1 || a[i].instance.generation != b[i].instance.generation ||
            a[i].primitive != b[i].primitive || a[i].t != b[i].t)
            return 0;
    return 1;
}

int main(int argc, char **argv) {
    int frames = argc > 1 ? atoi(argv[1]) : 8;
    if (frames < SLOTS || frames > 10000) frames = 8;
    KilnTracerId reference;
    int done = start_gpu_sample("embedded", &reference);
    if (done >= 0) return done;
    struct engine e;
    if (engine_create(&e) != 0) {
        engine_destroy(&e);
        kiln_tracer_destroy(reference);
        fprintf(stderr, "embedded: the engine could not create its Vulkan device\n");
        return gpu_required() ? 1 : 0;
    }

    KilnEmbeddedDef def = engine_embedded_def(&e);

    /* Refused before anything is created. */
    KilnTracerId tracer = {0, 0};
    KilnEmbeddedDef bad = kiln_default_embedded_def();
    CHECK_STATUS(kiln_tracer_create_embedded(NULL, &tracer), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_tracer_create_embedded(&def, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_tracer_create_embedded(&bad, &tracer), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("get_instance_proc_addr");
    bad = def, bad.struct_size = 4;
    CHECK_STATUS(kiln_tracer_create_embedded(&bad, &tracer), KILN_ERROR_STRUCT_SIZE);
    bad = def, bad.device = NULL;
    CHECK_STATUS(kiln_tracer_create_embedded(&bad, &tracer), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("device is null");
    bad = def, bad.queue_family = 99;
    CHECK_STATUS(kiln_tracer_create_embedded(&bad, &tracer), KILN_ERROR_INVALID_ARGUMENT);
    bad = def, bad.frames_in_flight = 0;
    CHECK_STATUS(kiln_tracer_create_embedded(&bad, &tracer), KILN_ERROR_INVALID_ARGUMENT);
    CHECK(!kiln_tracer_is_valid(tracer));

    CHECK_STATUS(kiln_tracer_create_embedded(&def, &tracer), KILN_OK);
    KilnDeviceInfo info;
    CHECK_STATUS(kiln_tracer_get_device(tracer, &info), KILN_OK);
    printf("embedded tracer on the engine's device: %s\n", info.name);
    KilnInstanceId moving = build_scene(tracer), moving_reference = build_scene(reference);

    static KilnTraceRay rays[RAYS];
    static KilnTraceHit hits[RAYS], expected[SLOTS][RAYS];
    int recorded[SLOTS] = {0}, matched = 0, compared = 0;
    for (int frame = 0; frame < frames + SLOTS; frame++) {
        int slot = frame % SLOTS;
        /* The engine's frame loop: wait for this slot's previous submission, then
         * read what Kiln traced in it. */
        vkWaitForFences(e.device, 1, &e.fence[slot], VK_TRUE, UINT64_MAX);
        if (recorded[slot]) {
            CHECK_STATUS(kiln_tracer_read_hits(tracer, (uint32_t)slot, hits, RAYS), KILN_OK);
            matched += same_hits(hits, expected[slot], RAYS);
            compared++;
            recorded[slot] = 0;
        }
        if (frame >= frames) continue;
        /* Move one box every frame (the TLAS is rebuilt inside the recording). */
        KilnAffine moved = {{{1, 0, 0, (float)frame * 0.5f - 5.0f}, {0, 1, 0, 0}, {0, 0, 1, -5.0f}}};
        CHECK_STATUS(kiln_tracer_set_transforms(tracer, &moving, &moved, 1), KILN_OK);
        CHECK_STATUS(kiln_tracer_set_transforms(reference, &moving_reference, &moved, 1), KILN_OK);
        frame_rays(frame, rays);
        vkResetFences(e.device, 1, &e.fence[slot]);
        vkResetCommandBuffer(e.cmd[slot], 0);
        VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        vkBeginCommandBuffer(e.cmd[slot], &begin);
        CHECK_STATUS(kiln_tracer_record_trace(tracer, e.cmd[slot], (uint32_t)slot, rays, RAYS, KILN_TRACE_CLOSEST),
                     KILN_OK);
        vkEndCommandBuffer(e.cmd[slot]);
        VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                               .pCommandBuffers = &e.cmd[slot]};
        CHECK(vkQueueSubmit(e.queue, 1, &submit, e.fence[slot]) == VK_SUCCESS);
        recorded[slot] = 1;
        /* The standalone tracer traces the same rays now, for comparison later. */
        CHECK_STATUS(kiln_tracer_trace(reference, rays, RAYS, KILN_TRACE_CLOSEST, expected[slot]), KILN_OK);
    }
    printf("%d frames, %d in flight: %d of %d read-backs equal the standalone tracer's hits\n", frames, SLOTS,
           matched, compared);
    CHECK(compared == frames && matched == compared);
    int seen = 0;
    for (int i = 0; i < RAYS; i++) seen += hits[i].instance.index1 != 0 && hits[i].user_id >= 100;
    CHECK(seen > RAYS / 20);

    /* Refused after creation, changing nothing. */
    vkResetCommandBuffer(e.cmd[0], 0);
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    vkBeginCommandBuffer(e.cmd[0], &begin);
    CHECK_STATUS(kiln_tracer_record_trace(tracer, e.cmd[0], SLOTS, rays, RAYS, KILN_TRACE_CLOSEST),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("frame_slot");
    CHECK_STATUS(kiln_tracer_record_trace(tracer, NULL, 0, rays, RAYS, KILN_TRACE_CLOSEST), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_tracer_record_trace(tracer, e.cmd[0], 0, NULL, RAYS, KILN_TRACE_CLOSEST),
                 KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_tracer_record_trace(tracer, e.cmd[0], 0, rays, RAYS, 7), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_tracer_record_trace(reference, e.cmd[0], 0, rays, RAYS, KILN_TRACE_CLOSEST),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("not embedded");
    rays[5].direction = (KilnVec3){0, 0, 0};
    CHECK_STATUS(kiln_tracer_record_trace(tracer, e.cmd[0], 0, rays, RAYS, KILN_TRACE_CLOSEST),
                 KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_tracer_read_hits(tracer, 0, hits, RAYS - 1), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("count");
    CHECK_STATUS(kiln_tracer_read_hits(tracer, 0, NULL, RAYS), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_tracer_read_hits(tracer, 9, hits, RAYS), KILN_ERROR_INVALID_ARGUMENT);
    /* No rays: nothing recorded, nothing to read. */
    CHECK_STATUS(kiln_tracer_record_trace(tracer, e.cmd[0], 0, NULL, 0, KILN_TRACE_ANY), KILN_OK);
    CHECK_STATUS(kiln_tracer_read_hits(tracer, 0, NULL, 0), KILN_OK);
    vkEndCommandBuffer(e.cmd[0]);

    CHECK(validation_message_count(tracer) == 0);
    CHECK(validation_message_count(reference) == 0);
    /* Kiln's objects go first, then the engine's device. */
    CHECK_STATUS(kiln_tracer_destroy(tracer), KILN_OK);
    CHECK_STATUS(kiln_tracer_record_trace(tracer, e.cmd[0], 0, rays, 1, KILN_TRACE_ANY), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_read_hits(tracer, 0, hits, RAYS), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_destroy(reference), KILN_OK);
    engine_destroy(&e);
    printf("the engine's validation messenger reported %d messages\n", e.messages);
    CHECK(e.messages == 0);
    return check_summary("embedded");
}

/* A lost device through the C API. KILN_GPU_LOSE_AFTER=N makes a tracer's device
 * report itself lost at its (N+1)-th fence wait, where a GPU hang or reset shows. For
 * every N until the whole sequence below runs clean (so the loss lands once in each of
 * its waits: tracer creation, scene upload, traces, probe volume creation and updates):
 *  - the call that meets the loss, and every later call on the tracer or its probe
 *    volume, answers KILN_ERROR_DEVICE_LOST with a message (a tracer creation that
 *    meets it answers the same and leaves no tracer);
 *  - destroying the probe volume and the tracer then succeeds;
 * and a tracer created afterwards, without the variable, traces and hits. Each N
 * runs in a child process.
 * Without a device it skips, unless KILN_REQUIRE_GPU=1. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kiln.h"
#include "check.h"

static const KilnVec3 corners[8] = {{-1, -1, -1}, {1, -1, -1}, {-1, 1, -1}, {1, 1, -1},
                                    {-1, -1, 1},  {1, -1, 1},  {-1, 1, 1},  {1, 1, 1}};
static const uint32_t faces[36] = {0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
                                   2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5};

/* Once lost, every call answers KILN_ERROR_DEVICE_LOST; before, KILN_OK. Returns
 * whether this call met the loss. */
static int expect(int *lost, KilnStatus s, const char *what) {
    if (*lost) {
        if (s != KILN_ERROR_DEVICE_LOST) fprintf(stderr, "%s after the loss: %s\n", what, kiln_status_name(s));
        CHECK_STATUS(s, KILN_ERROR_DEVICE_LOST);
        return 0;
    }
    if (s == KILN_ERROR_DEVICE_LOST) {
        CHECK(kiln_last_error_message()[0] != '\0');
        *lost = 1;
        return 1;
    }
    if (s != KILN_OK) fprintf(stderr, "%s: %s (%s)\n", what, kiln_status_name(s), kiln_last_error_message());
    CHECK_STATUS(s, KILN_OK);
    return 0;
}

/* Tracer, box, instance, a trace, a probe volume, two updates and a sample. Returns
 * whether the loss came (0: the sequence ran clean). */
static int sequence(unsigned lose_after) {
    char value[16];
    snprintf(value, sizeof value, "%u", lose_after);
    setenv("KILN_GPU_LOSE_AFTER", value, 1);
    KilnTracerDef def = kiln_default_tracer_def();
    KilnTracerId tracer = {0, 0};
    KilnStatus created = kiln_tracer_create(&def, &tracer);
    unsetenv("KILN_GPU_LOSE_AFTER");
    if (created == KILN_ERROR_DEVICE_LOST) {
        CHECK(!kiln_tracer_is_valid(tracer) && kiln_last_error_message()[0] != '\0');
        return 1;
    }
    CHECK_STATUS(created, KILN_OK);
    int lost = 0, met = 0;
    KilnMeshId mesh = {0};
    KilnInstanceId instance = {0};
    uint32_t updated = 0;
    met += expect(&lost, kiln_tracer_add_mesh(tracer, corners, 8, faces, 12, &mesh), "kiln_tracer_add_mesh");
    KilnInstanceDef inst = kiln_default_instance_def();
    inst.mesh = mesh;
    met += expect(&lost, kiln_tracer_add_instance(tracer, &inst, &instance), "kiln_tracer_add_instance");
    met += expect(&lost, kiln_tracer_update(tracer), "kiln_tracer_update");
    KilnTraceRay ray = {{0.2f, 5.0f, 0.1f}, {0.0f, -1.0f, 0.0f}, 0.0f, 100.0f, ~0u};
    KilnTraceHit hit;
    met += expect(&lost, kiln_tracer_trace(tracer, &ray, 1, KILN_TRACE_CLOSEST, &hit), "kiln_tracer_trace");
    KilnGiDef gdef = kiln_default_gi_def();
    gdef.bounds_min = (KilnVec3){-4.0f, -4.0f, -4.0f};
    gdef.bounds_max = (KilnVec3){4.0f, 4.0f, 4.0f};
    gdef.spacing = 4.0f;
    KilnGiId gi = {0, 0};
    met += expect(&lost, kiln_gi_create(tracer, &gdef, &gi), "kiln_gi_create");
    if (kiln_gi_is_valid(gi)) {
        met += expect(&lost, kiln_gi_update(gi, &updated), "kiln_gi_update");
        met += expect(&lost, kiln_gi_update(gi, &updated), "kiln_gi_update");
        KilnVec3 at = {0.0f, 2.0f, 0.0f}, up = {0.0f, 1.0f, 0.0f}, down = {0.0f, -1.0f, 0.0f}, light;
        met += expect(&lost, kiln_gi_sample(gi, &at, &up, &down, 1, false, &light), "kiln_gi_sample");
        CHECK_STATUS(kiln_gi_destroy(gi), KILN_OK);
    }
    /* Once lost, the tracer stays lost. */
    if (lost) expect(&lost, kiln_tracer_trace(tracer, &ray, 1, KILN_TRACE_CLOSEST, &hit), "trace after the loss");
    CHECK(met <= 1);
    CHECK_STATUS(kiln_tracer_destroy(tracer), KILN_OK);
    CHECK(!kiln_tracer_is_valid(tracer));
    return lost;
}

int main(void) {
    if (kiln_check_linked_abi() != KILN_OK) return 1;
    KilnTracerDef def = kiln_default_tracer_def();
    KilnTracerId probe;
    if (kiln_tracer_create(&def, &probe) != KILN_OK) {
        const char *required = getenv("KILN_REQUIRE_GPU");
        if (required && strcmp(required, "1") == 0) {
            fprintf(stderr, "device_lost: KILN_REQUIRE_GPU=1 but no tracer: %s\n", kiln_last_error_message());
            return 1;
        }
        printf("device_lost: SKIPPED (no Vulkan device; set KILN_REQUIRE_GPU=1 to fail instead)\n");
        return 0;
    }
    CHECK_STATUS(kiln_tracer_destroy(probe), KILN_OK);
    /* Each N in a child process of its own: the checks are per process, and lavapipe
     * keeps memory across many devices that met a loss in one process (LLVM's, freed
     * at no vkDestroy*), which LeakSanitizer would report at exit. */
    unsigned losses = 0, n = 0;
    for (; n < 64; n++) {
        fflush(stdout);
        pid_t child = fork();
        if (child == 0) {
            int lost = sequence(n);
            exit(checks_failed ? 2 : lost);
        }
        int status = 0;
        CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status));
        CHECK(WEXITSTATUS(status) < 2);
        if (WEXITSTATUS(status) != 1) break;
        losses++;
    }
    printf("device_lost: the loss met at %u fence waits, each answered KILN_ERROR_DEVICE_LOST\n", losses);
    CHECK(losses >= 4 && n < 64);
    /* A tracer made after all that works. */
    KilnTracerId tracer;
    KilnMeshId mesh;
    KilnInstanceId instance;
    CHECK_STATUS(kiln_tracer_create(&def, &tracer), KILN_OK);
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, corners, 8, faces, 12, &mesh), KILN_OK);
    KilnInstanceDef inst = kiln_default_instance_def();
    inst.mesh = mesh;
    CHECK_STATUS(kiln_tracer_add_instance(tracer, &inst, &instance), KILN_OK);
    CHECK_STATUS(kiln_tracer_update(tracer), KILN_OK);
    KilnTraceRay ray = {{0.2f, 5.0f, 0.1f}, {0.0f, -1.0f, 0.0f}, 0.0f, 100.0f, ~0u};
    KilnTraceHit hit;
    CHECK_STATUS(kiln_tracer_trace(tracer, &ray, 1, KILN_TRACE_CLOSEST, &hit), KILN_OK);
    CHECK(hit.instance.index1 == instance.index1 && hit.instance.generation == instance.generation && hit.t > 3.9f &&
          hit.t < 4.1f);
    CHECK_STATUS(kiln_tracer_destroy(tracer), KILN_OK);
    return check_summary("device_lost");
}

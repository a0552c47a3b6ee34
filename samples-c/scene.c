#include "scene.h"

#include <stdio.h>
#include <stdlib.h>

static void integrate_range(uint32_t begin, uint32_t end, uint32_t worker, void *context) {
    Scene *scene = (Scene *)context;
    const float dt = 1.0f / 60.0f;
    (void)worker;
    for (uint32_t i = begin; i < end; ++i) {
        scene->vel[i][1] -= 9.81f * dt;
        for (int k = 0; k < 3; ++k) {
            scene->pos[i][k] += scene->vel[i][k] * dt;
        }
        if (scene->pos[i][1] < 0.0f) {
            scene->pos[i][1] = -scene->pos[i][1] * 0.5f;
            scene->vel[i][1] = -scene->vel[i][1] * 0.7f;
        }
    }
}

static KilnStatus integrate(const KilnPassContext *context, void *user) {
    return kiln_parallel_for(context, SCENE_PARTICLES, SCENE_GRAIN, integrate_range, user);
}

static void energy_range(uint32_t begin, uint32_t end, uint32_t worker, void *context) {
    Scene *scene = (Scene *)context;
    double sum = 0.0;
    (void)worker;
    for (uint32_t i = begin; i < end; ++i) {
        float v2 = scene->vel[i][0] * scene->vel[i][0] + scene->vel[i][1] * scene->vel[i][1] +
                   scene->vel[i][2] * scene->vel[i][2];
        sum += 0.5 * v2 + 9.81 * scene->pos[i][1];
    }
    scene->chunk_energy[begin / SCENE_GRAIN] = sum;
}

static KilnStatus energy(const KilnPassContext *context, void *user) {
    Scene *scene = (Scene *)user;
    KilnStatus status = kiln_parallel_for(context, SCENE_PARTICLES, SCENE_GRAIN, energy_range, user);
    if (status != KILN_OK) {
        return status;
    }
    scene->energy = 0.0;
    for (uint32_t c = 0; c < SCENE_CHUNKS; ++c) {
        scene->energy += scene->chunk_energy[c];
    }
    return KILN_OK;
}

static KilnStatus report(const KilnPassContext *context, void *user) {
    Scene *scene = (Scene *)user;
    if (context->frame_index % 60u == 0u) {
        printf("  frame %3llu: energy %.6e J/kg\n", (unsigned long long)context->frame_index, scene->energy);
        scene->frames_reported++;
    }
    return KILN_OK;
}

KilnStatus scene_build(Scene *scene, KilnRuntimeId runtime) {
    for (uint32_t i = 0; i < SCENE_PARTICLES; ++i) {
        scene->pos[i][0] = (float)i * 0.01f;
        scene->pos[i][1] = 10.0f + (float)(i % 7u);
        scene->pos[i][2] = 0.0f;
        scene->vel[i][0] = (float)((i * 31u) % 17u) * 0.1f;
        scene->vel[i][1] = 0.0f;
        scene->vel[i][2] = 0.5f;
    }
    scene->energy = 0.0;
    scene->frames_reported = 0;

    KilnResourceId particles, energy_total;
    KilnStatus status = kiln_runtime_add_resource(runtime, "particles", &particles);
    if (status == KILN_OK) {
        status = kiln_runtime_add_resource(runtime, "energy", &energy_total);
    }
    if (status != KILN_OK) {
        return status;
    }

    KilnPassId pass;
    KilnPassDef def = kiln_default_pass_def();
    def.name = "integrate";
    def.writes = &particles;
    def.write_count = 1;
    def.run = integrate;
    def.user_context = scene;
    if ((status = kiln_runtime_add_pass(runtime, &def, &pass)) != KILN_OK) {
        return status;
    }

    def = kiln_default_pass_def();
    def.name = "energy";
    def.reads = &particles;
    def.read_count = 1;
    def.writes = &energy_total;
    def.write_count = 1;
    def.run = energy;
    def.user_context = scene;
    if ((status = kiln_runtime_add_pass(runtime, &def, &pass)) != KILN_OK) {
        return status;
    }

    def = kiln_default_pass_def();
    def.name = "report";
    def.reads = &energy_total;
    def.read_count = 1;
    def.run = report;
    def.user_context = scene;
    return kiln_runtime_add_pass(runtime, &def, &pass);
}

KilnStatus scene_print_profile(KilnRuntimeId runtime) {
    uint32_t count = 0;
    KilnProfile totals;
    KilnStatus status = kiln_runtime_get_profile(runtime, &totals, NULL, 0, &count);
    if (status != KILN_OK) {
        return status;
    }
    KilnPassProfile *passes = (KilnPassProfile *)calloc(count, sizeof(KilnPassProfile));
    if (passes == NULL) {
        return KILN_ERROR_INVALID_STATE;
    }
    status = kiln_runtime_get_profile(runtime, &totals, passes, count, &count);
    if (status == KILN_OK) {
        printf("  profile of frame %llu (%u workers): total %.1f us\n", (unsigned long long)totals.frame_index,
               totals.worker_count, (double)totals.total_ns / 1000.0);
        printf("    %-12s %5s %6s %10s %10s\n", "pass", "level", "worker", "start us", "time us");
        for (uint32_t i = 0; i < count; ++i) {
            printf("    %-12s %5u %6u %10.1f %10.1f\n", passes[i].name, passes[i].level, passes[i].worker_index,
                   (double)passes[i].start_ns / 1000.0, (double)passes[i].duration_ns / 1000.0);
        }
    }
    free(passes);
    return status;
}

int scene_run(Scene *scene, KilnRuntimeId runtime, unsigned frames) {
    KilnStatus status = scene_build(scene, runtime);
    if (status != KILN_OK) {
        return scene_fail("scene_build", status);
    }
    for (unsigned f = 0; f < frames; ++f) {
        if ((status = kiln_runtime_run_frame(runtime, 1.0f / 60.0f)) != KILN_OK) {
            return scene_fail("kiln_runtime_run_frame", status);
        }
    }
    if ((status = scene_print_profile(runtime)) != KILN_OK) {
        return scene_fail("kiln_runtime_get_profile", status);
    }
    if ((status = kiln_runtime_destroy(runtime)) != KILN_OK) {
        return scene_fail("kiln_runtime_destroy", status);
    }
    return 0;
}

int scene_fail(const char *what, KilnStatus status) {
    fprintf(stderr, "%s failed: %s: %s\n", what, kiln_status_name(status), kiln_last_error_message());
    return 1;
}

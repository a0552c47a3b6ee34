/* A small particle scene built from C passes: the samples share it. */
#ifndef KILN_SAMPLE_SCENE_H
#define KILN_SAMPLE_SCENE_H

#include "kiln.h"

#define SCENE_PARTICLES 20000u
#define SCENE_GRAIN 512u
#define SCENE_CHUNKS ((SCENE_PARTICLES + SCENE_GRAIN - 1u) / SCENE_GRAIN)

typedef struct Scene {
    float pos[SCENE_PARTICLES][3];
    float vel[SCENE_PARTICLES][3];
    /* One slot per chunk, summed in chunk order: same bits for any worker count. */
    double chunk_energy[SCENE_CHUNKS];
    double energy;
    unsigned frames_reported;
} Scene;

/* Fills the particles and adds resources and passes ("integrate", "energy", "report"). */
KilnStatus scene_build(Scene *scene, KilnRuntimeId runtime);

/* Builds the scene on `runtime`, runs `frames` frames at 60 Hz, prints the profile,
 * destroys the runtime. Returns 0 on success, 1 after printing what failed. */
int scene_run(Scene *scene, KilnRuntimeId runtime, unsigned frames);

/* Prints the last frame's profile as a table. */
KilnStatus scene_print_profile(KilnRuntimeId runtime);

/* Prints the failing call's status and message and returns 1. */
int scene_fail(const char *what, KilnStatus status);

#endif

/* hello: create a runtime, print the version, run frames of a small particle scene,
 * print the profile, destroy. The first sample to read. */
#include <stdio.h>
#include <stdlib.h>

#include "kiln.h"
#include "scene.h"

static void log_line(uint32_t level, const char *message, void *context) {
    (void)context;
    printf("  [kiln %s] %s\n", level == KILN_LOG_ERROR ? "error" : level == KILN_LOG_WARNING ? "warn" : "info",
           message);
}

int main(int argc, char **argv) {
    unsigned frames = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 240u;
    KilnStatus status = kiln_check_linked_abi();
    if (status != KILN_OK) {
        return scene_fail("kiln_check_linked_abi", status);
    }
    printf("Kiln %s (ABI %u)\n", kiln_version_string(), kiln_abi_version());

    KilnRuntimeDef def = kiln_default_runtime_def();
    def.log = log_line;
    KilnRuntimeId runtime;
    if ((status = kiln_runtime_create(&def, &runtime)) != KILN_OK) {
        return scene_fail("kiln_runtime_create", status);
    }
    uint32_t workers = 0;
    kiln_runtime_get_worker_count(runtime, &workers);
    printf("  %u workers (background threads + the calling thread)\n", workers);

    static Scene scene;
    if (scene_run(&scene, runtime, frames) != 0) {
        return 1;
    }
    printf("hello: %u frames, final energy %.6e J/kg\n", frames, scene.energy);
    return scene.frames_reported > 0 ? 0 : 1;
}

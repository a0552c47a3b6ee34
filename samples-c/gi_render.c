/* gi_render: DDGI irradiance probes through the C API, rendered to PNG.
 *
 * A room on a ground slab: 10 cm walls (one red, one green), a roof, a door in the
 * east wall that lets the sun onto the floor, and a crate with probes inside it.
 * A probe volume is created around the scene's triangles, its visibility baked and
 * compressed on the GPU, and its irradiance updated frame after frame, a budget of
 * probes per frame, with the sun, the sky and the probes' own light (multi-bounce).
 * Then the room is rendered from inside: direct sun with shadow rays plus the
 * probes' irradiance, once with their visibility maps and once without. Without,
 * the sunlit roof and walls leak through the 10 cm into the room.
 * Then the door closes (a 20 cm slab): the room is dark, but the probes' maps were
 * baked with the doorway open and see through the new door, so light leaks in
 * until kiln_gi_refresh re-bakes the probes near it.
 * Writes gi_visibility.png, gi_no_visibility.png, gi_door_stale.png and
 * gi_door_refreshed.png to OUTDIR (when given), prints the probe figures and the
 * GPU time of each update pass, and checks what it can know for certain: the leak
 * is there without visibility and gone with it, the closed door leaks until the
 * refresh and not after, a dense volume scrolls without a jump in its light, bad
 * input is refused with the documented status and changes nothing, stale handles
 * are refused, and the validation layer stayed silent. Exits non-zero on a failed
 * check (or on a missing device when KILN_REQUIRE_GPU=1).
 *
 *   gi_render [WIDTH HEIGHT] [OUTDIR]   (defaults 160 100, no files) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"
#include "render.h"
#include "tests/check.h"

/* Box i of the scene: lower and upper corner, albedo. Instance i is box i. */
typedef struct Box {
    float lo[3], hi[3], albedo[3];
} Box;

#define W 0.05f /* half a wall's thickness */
static const Box boxes[] = {
    {{-6.0f, -0.2f, -6.0f}, {13.0f, 0.0f, 13.0f}, {0.55f, 0.55f, 0.5f}}, /* ground */
    {{-W, 0.0f, -W}, {W, 3.0f + W, 7.0f + W}, {0.75f, 0.12f, 0.1f}},     /* west wall, red */
    {{-W, 0.0f, -W}, {7.0f + W, 3.0f + W, W}, {0.7f, 0.7f, 0.7f}},       /* north wall */
    {{-W, 0.0f, 7.0f - W}, {7.0f + W, 3.0f + W, 7.0f + W}, {0.12f, 0.6f, 0.15f}}, /* south, green */
    {{7.0f - W, 0.0f, -W}, {7.0f + W, 3.0f + W, 2.5f}, {0.7f, 0.7f, 0.7f}},       /* east wall... */
    {{7.0f - W, 0.0f, 4.5f}, {7.0f + W, 3.0f + W, 7.0f + W}, {0.7f, 0.7f, 0.7f}}, /* ...the door */
    {{7.0f - W, 2.2f, 2.5f}, {7.0f + W, 3.0f + W, 4.5f}, {0.7f, 0.7f, 0.7f}},     /* ...and lintel */
    {{-W, 3.0f - W, -W}, {7.0f + W, 3.0f + W, 7.0f + W}, {0.7f, 0.7f, 0.7f}},     /* roof */
    {{2.0f, 0.0f, 3.0f}, {3.0f, 1.0f, 4.0f}, {0.8f, 0.6f, 0.3f}},                 /* crate */
};
#define BOX_COUNT (sizeof boxes / sizeof boxes[0])

static const float sun_dir[3] = {0.5f, 0.75f, 0.2f}; /* normalised in main */

static void box_albedo(uint32_t user_id, const KilnVec3 *normal, float rgb[3]) {
    (void)normal;
    for (int k = 0; k < 3; k++) rgb[k] = boxes[user_id].albedo[k];
}

static float luminance(KilnVec3 e) { return 0.2126f * e.x + 0.7152f * e.y + 0.0722f * e.z; }

/* Mean irradiance luminance at `count` points with one normal. */
static float mean_irradiance(KilnGiId gi, const KilnVec3 *points, int count, KilnVec3 normal, bool visibility) {
    KilnVec3 normals[16] = {{0, 0, 0}}, out[16] = {{0, 0, 0}};
    for (int i = 0; i < count; i++) normals[i] = normal;
    if (kiln_gi_sample(gi, points, normals, NULL, (uint32_t)count, visibility, out) != KILN_OK) return -1.0f;
    float sum = 0.0f;
    for (int i = 0; i < count; i++) sum += luminance(out[i]);
    return sum / (float)count;
}

/* Bad input: every call refused with its status, nothing changed. */
static void check_bad_input(KilnTracerId tracer, KilnGiId gi, const KilnInstanceId *instances) {
    KilnGiId out = {77, 77};
    KilnGiDef def = kiln_default_gi_def();
    CHECK_STATUS(kiln_gi_create(tracer, NULL, &out), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_gi_create(tracer, &def, NULL), KILN_ERROR_NULL_POINTER);
    def.struct_size = 5;
    CHECK_STATUS(kiln_gi_create(tracer, &def, &out), KILN_ERROR_STRUCT_SIZE);
    KilnGiDef bad[10];
    for (int i = 0; i < 10; i++) bad[i] = kiln_default_gi_def();
    bad[0].bounds_min = (KilnVec3){1, 0, 0}; /* min > max */
    bad[1].spacing = NAN;
    bad[2].spacing = 0.0f;
    bad[3].bounds_max = (KilnVec3){1e6f, 1e6f, 1e6f}; /* 10^18 grid points */
    bad[4].rays_per_probe = 0;
    bad[5].rays_per_probe = 5000;
    bad[6].hysteresis = 1.5f;
    bad[7].probes_per_frame = 0;
    bad[8].dilation = INFINITY;
    bad[9].occluder_mask = 0;
    for (int i = 0; i < 10; i++) {
        CHECK_STATUS(kiln_gi_create(tracer, &bad[i], &out), KILN_ERROR_INVALID_ARGUMENT);
    }
    CHECK_MESSAGE("occluder_mask");
    CHECK(out.index1 == 77 && out.generation == 77); /* untouched */
    CHECK_STATUS(kiln_gi_create((KilnTracerId){0, 0}, &def, &out), KILN_ERROR_STRUCT_SIZE);
    def = kiln_default_gi_def();
    CHECK_STATUS(kiln_gi_create((KilnTracerId){0, 0}, &def, &out), KILN_ERROR_INVALID_HANDLE);

    KilnGiLighting light = kiln_default_gi_lighting();
    CHECK_STATUS(kiln_gi_set_lighting(gi, NULL), KILN_ERROR_NULL_POINTER);
    light.sun_direction = (KilnVec3){0, 0, 0};
    CHECK_STATUS(kiln_gi_set_lighting(gi, &light), KILN_ERROR_INVALID_ARGUMENT);
    light = kiln_default_gi_lighting();
    light.sky_radiance.y = -1.0f;
    CHECK_STATUS(kiln_gi_set_lighting(gi, &light), KILN_ERROR_INVALID_ARGUMENT);
    light = kiln_default_gi_lighting();
    light.default_albedo.x = 1.5f;
    CHECK_STATUS(kiln_gi_set_lighting(gi, &light), KILN_ERROR_INVALID_ARGUMENT);
    light = kiln_default_gi_lighting();
    light.struct_size = 0;
    CHECK_STATUS(kiln_gi_set_lighting(gi, &light), KILN_ERROR_STRUCT_SIZE);
    KilnVec3 albedo[2] = {{0.5f, 0.5f, 0.5f}, {0.5f, NAN, 0.5f}};
    CHECK_STATUS(kiln_gi_set_albedo(gi, instances, albedo, 2), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("albedo[1]");
    albedo[1].y = 1.5f;
    CHECK_STATUS(kiln_gi_set_albedo(gi, instances, albedo, 2), KILN_ERROR_INVALID_ARGUMENT);
    albedo[1].y = 0.5f;
    CHECK_STATUS(kiln_gi_set_albedo(gi, NULL, albedo, 2), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_gi_set_albedo(gi, instances, NULL, 2), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_gi_set_albedo(gi, NULL, NULL, UINT32_MAX), KILN_ERROR_NULL_POINTER); /* huge, nothing read */
    KilnInstanceId forged[2] = {instances[0], instances[1]};
    forged[1].generation += 7; /* stale */
    CHECK_STATUS(kiln_gi_set_albedo(gi, forged, albedo, 2), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("instances[1]");
    forged[1] = (KilnInstanceId){0}; /* null */
    CHECK_STATUS(kiln_gi_set_albedo(gi, forged, albedo, 2), KILN_ERROR_INVALID_HANDLE);
    KilnGiId no_gi = {0, 0};
    CHECK_STATUS(kiln_gi_set_albedo(no_gi, instances, albedo, 2), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_gi_set_albedo(gi, NULL, NULL, 0), KILN_OK); /* clears */

    KilnVec3 p[2] = {{1, 1, 1}, {2, 1, 2}}, nrm[2] = {{0, 1, 0}, {0, 1, 0}};
    KilnVec3 e[2] = {{-7, -7, -7}, {-7, -7, -7}};
    KilnVec3 nan_point[2] = {{1, 1, 1}, {NAN, 1, 2}}, long_normal[2] = {{0, 1, 0}, {0, 2, 0}};
    CHECK_STATUS(kiln_gi_sample(gi, nan_point, nrm, NULL, 2, true, e), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("points[1]");
    CHECK_STATUS(kiln_gi_sample(gi, p, long_normal, NULL, 2, true, e), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_sample(gi, p, nrm, long_normal, 2, true, e), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_sample(gi, p, nrm, NULL, 2, true, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_gi_sample(gi, NULL, nrm, NULL, 2, true, e), KILN_ERROR_NULL_POINTER);
    CHECK(e[0].x == -7.0f && e[1].z == -7.0f); /* untouched */
    CHECK_STATUS(kiln_gi_sample(gi, NULL, NULL, NULL, 0, true, NULL), KILN_OK);
    CHECK_STATUS(kiln_gi_get_stats(gi, NULL), KILN_ERROR_NULL_POINTER);

    KilnGiRefresh report = {77, 77, 77, 77, 77, 77};
    KilnVec3 lo = {6.9f, 0.0f, 2.5f}, hi = {7.1f, 2.2f, 4.5f};
    CHECK_STATUS(kiln_gi_refresh(gi, lo, hi, &report), KILN_ERROR_INVALID_STATE); /* not baked */
    CHECK_MESSAGE("kiln_gi_bake");
    CHECK_STATUS(kiln_gi_refresh(gi, hi, lo, &report), KILN_ERROR_INVALID_ARGUMENT); /* inverted */
    CHECK_MESSAGE("box_min");
    CHECK_STATUS(kiln_gi_refresh(gi, (KilnVec3){NAN, 0, 0}, hi, &report), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_refresh(gi, lo, (KilnVec3){8, INFINITY, 5}, NULL), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_gi_refresh(no_gi, lo, hi, &report), KILN_ERROR_INVALID_HANDLE);
    CHECK(report.probes == 77 && report.blocks_reclaimed == 77); /* untouched */
}

/* The light on the door's inner face (facing into the room) and its outer face. */
static void door_light(KilnGiId gi, float *inner, float *outer) {
    KilnVec3 in[8], out[8];
    for (int i = 0; i < 8; i++) {
        float y = 0.3f + 0.5f * (float)(i % 4), z = 2.9f + 0.4f * (float)(i / 4) * 3.0f;
        in[i] = (KilnVec3){6.9f, y, z};
        out[i] = (KilnVec3){7.1f, y, z};
    }
    *inner = mean_irradiance(gi, in, 8, (KilnVec3){-1, 0, 0}, true);
    *outer = mean_irradiance(gi, out, 8, (KilnVec3){1, 0, 0}, true);
}

int main(int argc, char **argv) {
    int width, height;
    const char *outdir;
    image_args(argc, argv, 160, 100, &width, &height, &outdir);
    KilnTracerId tracer;
    int early = start_gpu_sample("gi_render", &tracer);
    if (early >= 0) return early;
    KilnMeshId cube;
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, unit_cube_positions, 8, unit_cube_indices, 12, &cube), KILN_OK);
    KilnVec3 albedo[BOX_COUNT];
    KilnInstanceId box_instances[BOX_COUNT];
    for (uint32_t i = 0; i < BOX_COUNT; i++) {
        const Box *b = &boxes[i];
        KilnInstanceDef inst = kiln_default_instance_def();
        inst.mesh = cube;
        inst.user_id = i;
        for (int r = 0; r < 3; r++) {
            inst.transform.rows[r][r] = 0.5f * (b->hi[r] - b->lo[r]);
            inst.transform.rows[r][3] = 0.5f * (b->hi[r] + b->lo[r]);
        }
        CHECK_STATUS(kiln_tracer_add_instance(tracer, &inst, &box_instances[i]), KILN_OK);
        albedo[i] = (KilnVec3){b->albedo[0], b->albedo[1], b->albedo[2]};
    }

    /* Probes on half-integer x and z, so none sits in a wall; 1.5 m around geometry. */
    KilnGiDef def = kiln_default_gi_def();
    def.bounds_min = (KilnVec3){-3.5f, 0.5f, -3.5f};
    def.bounds_max = (KilnVec3){10.5f, 5.5f, 10.5f};
    def.spacing = 1.0f;
    def.dilation = 1.5f;
    def.hysteresis = 0.5f; /* converge in few frames for a sample; 0.97 is the default */
    def.relocate_probes = true; /* off the walls, out of the crate */
    def.classify_probes = true; /* probes left in solid: inactive */
    def.probes_per_frame = 256;
    KilnGiId gi;
    CHECK_STATUS(kiln_gi_create(tracer, &def, &gi), KILN_OK);
    check_bad_input(tracer, gi, box_instances);

    KilnGiLighting light = kiln_default_gi_lighting();
    float len = sqrtf(sun_dir[0] * sun_dir[0] + sun_dir[1] * sun_dir[1] + sun_dir[2] * sun_dir[2]);
    light.sun_direction = (KilnVec3){sun_dir[0] / len, sun_dir[1] / len, sun_dir[2] / len};
    CHECK_STATUS(kiln_gi_set_lighting(gi, &light), KILN_OK);
    CHECK_STATUS(kiln_gi_set_albedo(gi, box_instances, albedo, BOX_COUNT), KILN_OK);

    CHECK_STATUS(kiln_gi_bake(gi), KILN_OK);
    printf("bake:\n");
    print_gpu_timings(tracer, "  ");
    KilnGiStats stats;
    CHECK_STATUS(kiln_gi_get_stats(gi, &stats), KILN_OK);
    /* Dead probes (nothing within their clip distance) are neither updated nor sampled. */
    uint32_t live = stats.probe_count - stats.dead_probes;
    uint32_t sweeps = 10, frames = sweeps * ((live + 255) / 256), updated = 0;
    for (uint32_t f = 0; f < frames; f++) {
        CHECK_STATUS(kiln_gi_update(gi, &updated), KILN_OK);
    }
    printf("update of %u probes (last frame):\n", updated);
    print_gpu_timings(tracer, "  ");
    CHECK_STATUS(kiln_gi_get_stats(gi, &stats), KILN_OK);
    printf("probes: %u of %llu grid points, %u moved, %u dead or inactive, %u visibility blocks; %llu bytes in all (%.1f per live "
           "probe), visibility %llu of %llu bytes (%.1f%%); %u frames\n",
           stats.probe_count, (unsigned long long)stats.grid_points, stats.moved_probes, stats.dead_probes, stats.blocks,
           (unsigned long long)stats.bytes, (double)stats.bytes / (double)(live ? live : 1),
           (unsigned long long)stats.visibility_bytes, (unsigned long long)stats.visibility_bytes_uncompressed,
           100.0 * (double)stats.visibility_bytes / (double)stats.visibility_bytes_uncompressed, stats.frames);
    CHECK(stats.baked && stats.frames == frames);
    CHECK(stats.probe_count > 200 && stats.probe_count < stats.grid_points);
    CHECK(updated == (live < 256 ? live : 256) && stats.last_update_probes == updated);
    /* Blocks are quadrants of maps (four per probe, 10 to 98 B each); neighbours share them. */
    CHECK(stats.blocks > 0 && stats.blocks < 2 * (stats.probe_count - stats.dead_probes));
    CHECK(stats.visibility_bytes < stats.visibility_bytes_uncompressed);

    /* Under the roof in the room's far corner, facing down, and on the inner face of
     * the north wall, facing south: each cell they sample straddles 10 cm of wall
     * or roof with sunlit probes on the other side. */
    KilnVec3 ceiling[8], wall[8];
    for (int i = 0; i < 8; i++) {
        ceiling[i] = (KilnVec3){0.8f + 0.4f * (float)(i % 4), 2.9f, 0.8f + 0.5f * (float)(i / 4)};
        wall[i] = (KilnVec3){0.8f + 0.5f * (float)(i % 4), 0.6f + 0.7f * (float)(i / 4), 0.1f};
    }
    float ceiling_on = mean_irradiance(gi, ceiling, 8, (KilnVec3){0, -1, 0}, true);
    float ceiling_off = mean_irradiance(gi, ceiling, 8, (KilnVec3){0, -1, 0}, false);
    float wall_on = mean_irradiance(gi, wall, 8, (KilnVec3){0, 0, 1}, true);
    float wall_off = mean_irradiance(gi, wall, 8, (KilnVec3){0, 0, 1}, false);
    KilnVec3 outside[4] = {{-2.0f, 0.0f, -2.0f}, {9.0f, 0.0f, 9.0f}, {-2.0f, 0.0f, 9.0f}, {9.0f, 0.0f, 1.0f}};
    float ground = mean_irradiance(gi, outside, 4, (KilnVec3){0, 1, 0}, true);
    printf("irradiance (luminance): ceiling %.3f with visibility, %.3f without; north wall %.3f / %.3f; "
           "ground outside %.3f\n",
           ceiling_on, ceiling_off, wall_on, wall_off, ground);
    CHECK(ground > 0.5f);
    CHECK(ceiling_on > 0.0f && ceiling_on < 0.6f * ceiling_off);
    CHECK(wall_on > 0.0f && wall_on < 0.8f * wall_off);

    size_t n = (size_t)width * (size_t)height;
    KilnTraceRay *rays = malloc(n * sizeof *rays), *shadow = malloc(n * sizeof *shadow);
    KilnTraceHit *hits = malloc(n * sizeof *hits), *shadow_hits = malloc(n * sizeof *shadow_hits);
    KilnVec3 *points = malloc(4 * n * sizeof *points);
    uint8_t *rgb = malloc(3 * n);
    if (!rays || !shadow || !hits || !shadow_hits || !points || !rgb) return 1;
    const float eye[3] = {0.6f, 1.7f, 6.4f}, target[3] = {6.0f, 1.0f, 1.5f};
    Camera camera = camera_look_at(eye, target, 75.0f);
    camera_rays(&camera, width, height, rays);
    const char *names[2] = {"gi_visibility.png", "gi_no_visibility.png"};
    for (int pass = 0; pass < 2; pass++) {
        GiScratch scratch = {rays, hits, shadow, shadow_hits, points, points + n, points + 2 * n, points + 3 * n};
        CHECK_STATUS(shade_gi(tracer, gi, &light, pass == 0, (uint32_t)n, box_albedo, 2.0f, &scratch, rgb), KILN_OK);
        if (outdir) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", outdir, names[pass]);
            CHECK(write_png(path, width, height, 3, rgb) == 0);
            printf("wrote %s\n", path);
        }
    }

    /* The door closes. The probes go on updating against the closed room, first with
     * the maps baked while the doorway was open, then refreshed where the door is. */
    KilnInstanceDef door = kiln_default_instance_def();
    door.mesh = cube;
    door.user_id = 2; /* grey, as the north wall */
    const float door_lo[3] = {6.9f, 0.0f, 2.5f}, door_hi[3] = {7.1f, 2.2f, 4.5f};
    for (int r = 0; r < 3; r++) {
        door.transform.rows[r][r] = 0.5f * (door_hi[r] - door_lo[r]);
        door.transform.rows[r][3] = 0.5f * (door_hi[r] + door_lo[r]);
    }
    KilnInstanceId door_id;
    CHECK_STATUS(kiln_tracer_add_instance(tracer, &door, &door_id), KILN_OK);
    float stale_in, stale_out, fresh_in, fresh_out;
    for (uint32_t f = 0; f < frames; f++) CHECK_STATUS(kiln_gi_update(gi, NULL), KILN_OK);
    door_light(gi, &stale_in, &stale_out);
    const char *door_names[2] = {"gi_door_stale.png", "gi_door_refreshed.png"};
    KilnGiRefresh report = {0};
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            KilnVec3 lo = {door_lo[0], door_lo[1], door_lo[2]}, hi = {door_hi[0], door_hi[1], door_hi[2]};
            CHECK_STATUS(kiln_gi_refresh(gi, lo, hi, &report), KILN_OK);
            printf("refresh: %u probes re-baked, %u came alive, %u died; blocks %u matched, %u added, %u "
                   "reclaimed\n",
                   report.probes, report.activated, report.deactivated, report.blocks_matched, report.blocks_added,
                   report.blocks_reclaimed);
            print_gpu_timings(tracer, "  ");
            for (uint32_t f = 0; f < frames; f++) CHECK_STATUS(kiln_gi_update(gi, NULL), KILN_OK);
            door_light(gi, &fresh_in, &fresh_out);
        }
        GiScratch scratch = {rays, hits, shadow, shadow_hits, points, points + n, points + 2 * n, points + 3 * n};
        CHECK_STATUS(shade_gi(tracer, gi, &light, true, (uint32_t)n, box_albedo, 2.0f, &scratch, rgb), KILN_OK);
        if (outdir) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", outdir, door_names[pass]);
            CHECK(write_png(path, width, height, 3, rgb) == 0);
            printf("wrote %s\n", path);
        }
    }
    printf("door, inner face (luminance): %.4f stale, %.4f refreshed; outer face %.3f\n", stale_in, fresh_in,
           fresh_out);
    CHECK(report.probes > 0 && report.probes < stats.probe_count / 2);
    CHECK(fresh_in <= 0.05f * fresh_out);
    CHECK(stale_in > 2.0f * fresh_in);
    KilnGiStats after;
    CHECK_STATUS(kiln_gi_get_stats(gi, &after), KILN_OK);
    CHECK(after.blocks == stats.blocks + report.blocks_added - report.blocks_reclaimed);
    /* A volume placed around geometry does not scroll; one with a probe at every
     * grid point follows a point: 2 m along x brings in 2 planes, and a point
     * inside the volume before and after samples the same light. */
    KilnGiScroll scroll = {{77, 77, 77}, 77, 77};
    CHECK_STATUS(kiln_gi_scroll_to(gi, (KilnVec3){5, 1, 5}, &scroll), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("dilation");
    KilnGiDef dense_def = def;
    dense_def.dilation = -1.0f;
    dense_def.bounds_min = (KilnVec3){-2.5f, 0.5f, -2.5f};
    dense_def.bounds_max = (KilnVec3){9.5f, 4.5f, 9.5f};
    dense_def.probes_per_frame = 1024;
    dense_def.relocate_probes = dense_def.classify_probes = false;
    KilnGiId dense;
    CHECK_STATUS(kiln_gi_create(tracer, &dense_def, &dense), KILN_OK);
    CHECK_STATUS(kiln_gi_scroll_to(dense, (KilnVec3){5.5f, 2.5f, 3.5f}, &scroll), KILN_ERROR_INVALID_STATE);
    CHECK_MESSAGE("kiln_gi_bake");
    CHECK_STATUS(kiln_gi_bake(dense), KILN_OK);
    CHECK_STATUS(kiln_gi_set_lighting(dense, &light), KILN_OK);
    CHECK_STATUS(kiln_gi_scroll_to(dense, (KilnVec3){NAN, 2.5f, 3.5f}, &scroll), KILN_ERROR_INVALID_ARGUMENT);
    CHECK(scroll.planes == 77 && scroll.probes == 77); /* untouched */
    for (int f = 0; f < 2; f++) CHECK_STATUS(kiln_gi_update(dense, NULL), KILN_OK);
    KilnVec3 fixed_point[2] = {{8.3f, 0.0f, 1.2f}, {8.8f, 0.0f, 5.7f}}; /* on the ground, east of the room */
    float light_before = mean_irradiance(dense, fixed_point, 2, (KilnVec3){0, 1, 0}, true);
    CHECK_STATUS(kiln_gi_scroll_to(dense, (KilnVec3){3.6f, 2.5f, 3.4f}, &scroll), KILN_OK); /* the middle already */
    CHECK(scroll.probes == 0 && scroll.shift[0] == 0);
    CHECK_STATUS(kiln_gi_scroll_to(dense, (KilnVec3){5.5f, 2.5f, 3.5f}, &scroll), KILN_OK);
    float light_after = mean_irradiance(dense, fixed_point, 2, (KilnVec3){0, 1, 0}, true);
    printf("scroll: shift {%d, %d, %d}, %u planes, %u probes baked; light at a fixed point %.6f before, %.6f after\n",
           scroll.shift[0], scroll.shift[1], scroll.shift[2], scroll.planes, scroll.probes, light_before, light_after);
    CHECK(scroll.shift[0] == 2 && scroll.shift[1] == 0 && scroll.shift[2] == 0);
    CHECK(scroll.planes == 2 && scroll.probes == 2 * 5 * 13);
    CHECK(light_before > 0.1f && fabsf(light_after - light_before) <= 1e-5f * light_before);
    CHECK_STATUS(kiln_gi_scroll_to(dense, (KilnVec3){1e30f, 2.5f, 3.5f}, NULL), KILN_OK); /* huge: every probe */
    CHECK_STATUS(kiln_gi_destroy(dense), KILN_OK);
    CHECK_STATUS(kiln_gi_scroll_to(dense, (KilnVec3){0, 0, 0}, NULL), KILN_ERROR_INVALID_HANDLE);

    /* A box around everything re-bakes every probe. */
    CHECK_STATUS(kiln_gi_refresh(gi, (KilnVec3){-1e30f, -1e30f, -1e30f}, (KilnVec3){1e30f, 1e30f, 1e30f}, &report),
                 KILN_OK);
    CHECK(report.probes == stats.probe_count);

    CHECK(validation_message_count(tracer) == 0);

    /* The volume outlives nothing: a destroyed tracer leaves it unusable, not broken. */
    CHECK_STATUS(kiln_tracer_destroy(tracer), KILN_OK);
    CHECK_STATUS(kiln_gi_update(gi, NULL), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("tracer");
    CHECK_STATUS(kiln_gi_get_stats(gi, &stats), KILN_OK);
    CHECK_STATUS(kiln_gi_destroy(gi), KILN_OK);
    CHECK_STATUS(kiln_gi_destroy(gi), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_gi_bake(gi), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_gi_refresh(gi, (KilnVec3){0, 0, 0}, (KilnVec3){1, 1, 1}, NULL), KILN_ERROR_INVALID_HANDLE);
    CHECK(!kiln_gi_is_valid(gi));
    free(rays), free(shadow), free(hits), free(shadow_hits), free(points), free(rgb);
    return check_summary("gi_render");
}

/* trace: GPU ray tracing of an instanced scene through the C API, rendered to PNG.
 *
 * Registers three meshes with a tracer (a 64 x 64 hilly terrain, a unit_cube_positions, a 16 x 4
 * banner), places 1 terrain, 240 cubes (instances of one mesh: random rotations and
 * sizes) and one skinned banner whose 4 bones bend it, then renders the scene from
 * a camera: closest-hit rays for the image, any-hit shadow rays towards the sun.
 * Writes trace_shaded.png, trace_normals.png and trace_depth.png to OUTDIR (when
 * given), prints
 * the GPU time of each pass, and checks what it can know for certain: rays straight
 * down hit the terrain at its vertex heights, instance masks hide what they should,
 * moving an instance moves its hits, bad input is refused with the documented
 * status and changes nothing, and the validation layer stayed silent. Exits non-zero
 * on a failed check (or on a missing device when KILN_REQUIRE_GPU=1).
 *
 *   trace [WIDTH HEIGHT] [OUTDIR]   (defaults 320 200, no files) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"
#include "render.h"
#include "tests/check.h"

#define GRID 64
#define CUBES 240
#define TERRAIN_ID 1
#define BANNER_ID 2
#define CUBE_ID0 100

static float height_at(float x, float z) { return 2.0f * sinf(0.15f * x) * cosf(0.12f * z) + 0.5f * sinf(0.4f * x + 0.3f * z); }

static uint32_t rng_state = 12345u;
static float frand(float lo, float hi) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(rng_state >> 8) / 16777216.0f;
}

static void albedo(uint32_t user_id, const KilnVec3 *normal, float rgb[3]) {
    if (user_id == TERRAIN_ID) { /* grass on flats, earth on slopes */
        float flat = normal->y > 0.85f ? 1.0f : 0.0f;
        rgb[0] = 0.35f - 0.15f * flat, rgb[1] = 0.28f + 0.2f * flat, rgb[2] = 0.15f;
    } else if (user_id == BANNER_ID) {
        rgb[0] = 0.8f, rgb[1] = 0.1f, rgb[2] = 0.1f;
    } else {
        uint32_t h = (user_id * 2654435761u) >> 8;
        rgb[0] = 0.3f + 0.6f * (float)(h & 255) / 255.0f;
        rgb[1] = 0.3f + 0.6f * (float)((h >> 8) & 255) / 255.0f;
        rgb[2] = 0.3f + 0.6f * (float)((h >> 16) & 255) / 255.0f;
    }
}

static KilnAffine translation(float x, float y, float z) {
    return (KilnAffine){{{1, 0, 0, x}, {0, 1, 0, y}, {0, 0, 1, z}}};
}

/* A ray straight down from y = 50 at (x, z). */
/* Handles are equal when every field is (slot, generation and tracer). */
static int same_instance(KilnInstanceId a, KilnInstanceId b) {
    return a.index1 == b.index1 && a.generation == b.generation && a.tracer.index1 == b.tracer.index1 &&
           a.tracer.generation == b.tracer.generation;
}

static KilnTraceRay down_ray(float x, float z, uint32_t mask) {
    return (KilnTraceRay){{x, 50.0f, z}, {0.0f, -1.0f, 0.0f}, 0.0f, INFINITY, mask};
}

int main(int argc, char **argv) {
    int width, height;
    const char *outdir;
    image_args(argc, argv, 320, 200, &width, &height, &outdir);
    KilnTracerId tracer;
    int early = start_gpu_sample("trace", &tracer);
    if (early >= 0) return early;

    /* Terrain: (GRID + 1)^2 vertices 1 m apart, centred on the origin. */
    const uint32_t row = GRID + 1;
    KilnVec3 *terrain = malloc(sizeof *terrain * row * row);
    uint32_t *terrain_idx = malloc(sizeof *terrain_idx * 6 * GRID * GRID);
    for (uint32_t z = 0; z < row; z++)
        for (uint32_t x = 0; x < row; x++) {
            float wx = (float)x - GRID / 2, wz = (float)z - GRID / 2;
            terrain[z * row + x] = (KilnVec3){wx, height_at(wx, wz), wz};
        }
    for (uint32_t z = 0, t = 0; z < GRID; z++)
        for (uint32_t x = 0; x < GRID; x++, t += 6) {
            uint32_t i = z * row + x;
            uint32_t quad[6] = {i, i + row, i + 1, i + 1, i + row, i + row + 1}; /* counter-clockwise from +y */
            memcpy(&terrain_idx[t], quad, sizeof quad);
        }
    KilnMeshId terrain_mesh, cube_mesh;
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, terrain, row * row, terrain_idx, 2 * GRID * GRID, &terrain_mesh), KILN_OK);
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, unit_cube_positions, 8, unit_cube_indices, 12, &cube_mesh), KILN_OK);

    KilnInstanceDef def = kiln_default_instance_def();
    def.mesh = terrain_mesh;
    def.mask = 1;
    def.user_id = TERRAIN_ID;
    KilnInstanceId terrain_instance;
    CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &terrain_instance), KILN_OK);
    KilnInstanceId first_cube = {0};
    for (uint32_t c = 0; c < CUBES; c++) {
        float x = frand(-26.0f, 26.0f), z = frand(-26.0f, 26.0f), s = frand(0.3f, 1.2f);
        float ax = frand(-1, 1), ay = frand(-1, 1), az = frand(-1, 1), angle = frand(0.0f, 3.14f);
        float len = sqrtf(ax * ax + ay * ay + az * az) + 1e-6f, sn = sinf(angle / 2) / len;
        KilnTransform pose = {{x, height_at(x, z) + s, z}, {ax * sn, ay * sn, az * sn, cosf(angle / 2)}};
        def = kiln_default_instance_def();
        def.mesh = cube_mesh;
        def.mask = 2;
        def.user_id = CUBE_ID0 + c;
        def.transform = kiln_affine_from_transform(pose, (KilnVec3){s, s, s});
        KilnInstanceId instance;
        CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &instance), KILN_OK);
        if (c == 0) first_cube = instance;
    }

    /* The banner: 16 x 4 quads in the xy plane, one bone per 4 columns. */
    enum { BW = 16, BH = 4, BONES = 4 };
    KilnVec3 banner[(BW + 1) * (BH + 1)];
    uint16_t joints[4 * (BW + 1) * (BH + 1)];
    float weights[4 * (BW + 1) * (BH + 1)];
    uint32_t banner_idx[6 * BW * BH];
    for (int y = 0, v = 0; y <= BH; y++)
        for (int x = 0; x <= BW; x++, v++) {
            banner[v] = (KilnVec3){(float)x, (float)y, 0.0f};
            int bone = x * BONES / (BW + 1);
            uint16_t j[4] = {(uint16_t)bone, 0, 0, 0};
            float w[4] = {1, 0, 0, 0};
            memcpy(&joints[4 * v], j, sizeof j);
            memcpy(&weights[4 * v], w, sizeof w);
        }
    for (int y = 0, t = 0; y < BH; y++)
        for (int x = 0; x < BW; x++, t += 6) {
            uint32_t i = (uint32_t)(y * (BW + 1) + x), r = BW + 1;
            uint32_t quad[6] = {i, i + 1, i + r, i + 1, i + r + 1, i + r};
            memcpy(&banner_idx[t], quad, sizeof quad);
        }
    KilnSkinnedMeshDef skinned = kiln_default_skinned_mesh_def();
    skinned.positions = banner;
    skinned.joints = joints;
    skinned.weights = weights;
    skinned.vertex_count = (BW + 1) * (BH + 1);
    skinned.indices = banner_idx;
    skinned.triangle_count = 2 * BW * BH;
    skinned.bone_count = BONES;
    KilnAffine place = translation(-8.0f, 6.0f, -6.0f);
    KilnMeshId banner_mesh;
    CHECK_STATUS(kiln_tracer_add_skinned_mesh(tracer, &skinned, &banner_mesh), KILN_OK);
    KilnInstanceDef banner_def = kiln_default_instance_def();
    banner_def.mesh = banner_mesh;
    banner_def.transform = place;
    banner_def.mask = 2;
    banner_def.user_id = BANNER_ID;
    KilnInstanceId banner_instance;
    CHECK_STATUS(kiln_tracer_add_skinned_instance(tracer, &banner_def, &banner_instance), KILN_OK);
    /* Bend it: bone b turns by 0.25 rad per bone about y through its own left edge. */
    KilnAffine bones[BONES];
    for (int b = 0; b < BONES; b++) {
        float a = 0.25f * (float)b, c = cosf(a), s = sinf(a), px = 4.0f * (float)b;
        bones[b] = (KilnAffine){{{c, 0, s, px - c * px}, {0, 1, 0, 0}, {-s, 0, c, s * px}}};
    }
    CHECK_STATUS(kiln_tracer_set_bones(tracer, banner_instance, bones, BONES), KILN_OK);

    /* The picture. */
    uint32_t n = (uint32_t)(width * height);
    KilnTraceRay *rays = malloc(sizeof *rays * n);
    KilnTraceHit *hits = malloc(sizeof *hits * n);
    uint8_t *rgb = malloc(3u * n), *normals = malloc(3u * n), *depth = malloc(n);
    const float eye[3] = {-30.0f, 22.0f, 34.0f}, target[3] = {0.0f, 0.0f, 0.0f};
    float sun[3] = {0.5f, 0.8f, 0.3f};
    float sl = sqrtf(sun[0] * sun[0] + sun[1] * sun[1] + sun[2] * sun[2]);
    for (int k = 0; k < 3; k++) sun[k] /= sl;
    Camera camera = camera_look_at(eye, target, 50.0f);
    RenderStats stats;
    CHECK_STATUS(render(tracer, &camera, width, height, sun, albedo, rays, hits, rgb, normals, depth, &stats), KILN_OK);
    printf("%d x %d: %u of %u primary rays hit (%.1f to %.1f m), %u hits in shadow\n", width, height,
           stats.primary_hits, n, stats.nearest, stats.farthest, stats.shadowed);
    printf("GPU passes of the shadow trace:\n");
    print_gpu_timings(tracer, "  ");
    const char *names[3] = {"trace_shaded.png", "trace_normals.png", "trace_depth.png"};
    const uint8_t *images[3] = {rgb, normals, depth};
    for (int i = 0; outdir && i < 3; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", outdir, names[i]);
        int ok = write_png(path, width, height, i == 2 ? 1 : 3, images[i]) == 0;
        CHECK(ok);
        if (ok) printf("wrote %s\n", path);
    }
    CHECK(stats.primary_hits > n / 2);       /* the terrain fills the lower half and more */
    CHECK(stats.shadowed > 0 && stats.shadowed < stats.primary_hits);

    /* Straight down onto terrain vertices: the hit height is the vertex height. */
    KilnTraceRay probe[4];
    KilnTraceHit got[4];
    const float xs[4] = {-30.0f, -11.0f, 5.0f, 29.0f}, zs[4] = {30.0f, 7.0f, -13.0f, -29.0f};
    for (int i = 0; i < 4; i++) probe[i] = down_ray(xs[i], zs[i], 1); /* terrain only */
    CHECK_STATUS(kiln_tracer_trace(tracer, probe, 4, KILN_TRACE_CLOSEST, got), KILN_OK);
    for (int i = 0; i < 4; i++) {
        CHECK(same_instance(got[i].instance, terrain_instance) && got[i].user_id == TERRAIN_ID);
        CHECK(fabsf(50.0f - got[i].t - height_at(xs[i], zs[i])) < 1e-3f);
        CHECK(got[i].normal.y > 0.5f && !(got[i].flags & KILN_HIT_BACKFACE));
    }
    /* Masks: a ray that sees only mask 4 sees nothing. */
    probe[0] = down_ray(0.0f, 0.0f, 4);
    CHECK_STATUS(kiln_tracer_trace(tracer, probe, 1, KILN_TRACE_CLOSEST, got), KILN_OK);
    CHECK(got[0].instance.index1 == 0 && isinf(got[0].t)); /* a miss: the null instance */
    /* Moving the first cube over (0, 20, 0) puts it in the way of a ray down there. */
    KilnAffine moved = translation(0.0f, 20.0f, 0.0f);
    CHECK_STATUS(kiln_tracer_set_transforms(tracer, &first_cube, &moved, 1), KILN_OK);
    probe[0] = down_ray(0.0f, 0.0f, 0xFFFFFFFFu);
    CHECK_STATUS(kiln_tracer_trace(tracer, probe, 1, KILN_TRACE_CLOSEST, got), KILN_OK);
    CHECK(same_instance(got[0].instance, first_cube) && got[0].user_id == CUBE_ID0 && fabsf(got[0].t - 29.0f) < 1e-4f);
    CHECK(got[0].normal.y > 0.999f);

    /* Bad input: a status and a message, nothing changed. */
    KilnTraceRay bad = down_ray(0.0f, 0.0f, 0xFFFFFFFFu);
    bad.origin.x = NAN;
    CHECK_STATUS(kiln_tracer_trace(tracer, &bad, 1, KILN_TRACE_CLOSEST, got), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("rays[0]");
    bad = down_ray(0.0f, 0.0f, 1);
    bad.t_min = 2.0f, bad.t_max = 1.0f;
    CHECK_STATUS(kiln_tracer_trace(tracer, &bad, 1, KILN_TRACE_CLOSEST, got), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_tracer_trace(tracer, probe, 1, 7, got), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_tracer_trace(tracer, probe, 1, KILN_TRACE_CLOSEST, NULL), KILN_ERROR_NULL_POINTER);
    KilnAffine singular = {{{0}}};
    KilnInstanceId moves[2] = {first_cube, first_cube};
    moves[1].index1 = 99999;
    KilnAffine two[2] = {moved, moved};
    CHECK_STATUS(kiln_tracer_set_transforms(tracer, moves, two, 2), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("instances[1]");
    CHECK_STATUS(kiln_tracer_set_transforms(tracer, &first_cube, &singular, 1), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_tracer_set_bones(tracer, banner_instance, bones, BONES - 1), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_tracer_set_bones(tracer, terrain_instance, bones, BONES), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_tracer_set_bones(tracer, banner_instance, bones, UINT32_MAX), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("bone_count");
    CHECK_STATUS(kiln_tracer_set_bones(tracer, banner_instance, NULL, BONES), KILN_ERROR_NULL_POINTER);
    KilnAffine nan_bones[BONES];
    memcpy(nan_bones, bones, sizeof bones);
    nan_bones[2].rows[0][3] = NAN;
    CHECK_STATUS(kiln_tracer_set_bones(tracer, banner_instance, nan_bones, BONES), KILN_ERROR_INVALID_ARGUMENT);
    uint32_t out;
    KilnMeshId out_mesh;
    KilnInstanceId out_instance;
    const uint32_t out_of_range[3] = {0, 1, 9999};
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, unit_cube_positions, 8, out_of_range, 1, &out_mesh), KILN_ERROR_INVALID_ARGUMENT);
    KilnVec3 nan_cube[8];
    memcpy(nan_cube, unit_cube_positions, sizeof nan_cube);
    nan_cube[3].y = INFINITY;
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, nan_cube, 8, unit_cube_indices, 12, &out_mesh), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_tracer_add_mesh(tracer, unit_cube_positions, 0, unit_cube_indices, 0, &out_mesh), KILN_ERROR_INVALID_ARGUMENT);
    uint16_t bad_joints[4 * (BW + 1) * (BH + 1)];
    memcpy(bad_joints, joints, sizeof joints);
    bad_joints[4 * 7] = BONES; /* one past the last bone */
    KilnSkinnedMeshDef bad_skin = skinned;
    bad_skin.joints = bad_joints;
    CHECK_STATUS(kiln_tracer_add_skinned_mesh(tracer, &bad_skin, &out_mesh), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("joint");
    bad_skin = skinned;
    bad_skin.weights = NULL;
    CHECK_STATUS(kiln_tracer_add_skinned_mesh(tracer, &bad_skin, &out_mesh), KILN_ERROR_NULL_POINTER);
    bad_skin = skinned;
    bad_skin.bone_count = 0;
    CHECK_STATUS(kiln_tracer_add_skinned_mesh(tracer, &bad_skin, &out_mesh), KILN_ERROR_INVALID_ARGUMENT);
    bad_skin = skinned;
    bad_skin.vertex_count = UINT32_MAX; /* huge: refused before any array is read */
    CHECK_STATUS(kiln_tracer_add_skinned_mesh(tracer, &bad_skin, &out_mesh), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("too large");
    banner[0].x = NAN;
    CHECK_STATUS(kiln_tracer_add_skinned_mesh(tracer, &skinned, &out_mesh), KILN_ERROR_INVALID_ARGUMENT);
    banner[0].x = 0.0f;
    CHECK_STATUS(kiln_tracer_add_skinned_mesh(tracer, NULL, &out_mesh), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_tracer_add_skinned_mesh(tracer, &skinned, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_tracer_add_skinned_mesh((KilnTracerId){0}, &skinned, &out_mesh), KILN_ERROR_INVALID_HANDLE);
    KilnInstanceDef bad_place = banner_def;
    bad_place.transform = singular;
    CHECK_STATUS(kiln_tracer_add_skinned_instance(tracer, &bad_place, &out_instance), KILN_ERROR_INVALID_ARGUMENT);
    bad_place.transform.rows[1][3] = NAN;
    CHECK_STATUS(kiln_tracer_add_skinned_instance(tracer, &bad_place, &out_instance), KILN_ERROR_INVALID_ARGUMENT);
    bad_place = banner_def;
    bad_place.mesh = cube_mesh; /* a rigid mesh has no skin */
    CHECK_STATUS(kiln_tracer_add_skinned_instance(tracer, &bad_place, &out_instance), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("not a skinned mesh");
    bad_place.mesh = (KilnMeshId){0};
    CHECK_STATUS(kiln_tracer_add_skinned_instance(tracer, &bad_place, &out_instance), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_add_skinned_instance(tracer, NULL, &out_instance), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_tracer_add_skinned_instance(tracer, &banner_def, NULL), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_tracer_add_skinned_instance((KilnTracerId){0}, &banner_def, &out_instance),
                 KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_get_timings(tracer, NULL, 4, &out), KILN_ERROR_NULL_POINTER);
    CHECK_STATUS(kiln_tracer_get_timings(tracer, NULL, 0, NULL), KILN_ERROR_NULL_POINTER);
    def = kiln_default_instance_def(); /* the null mesh */
    CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &out_instance), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("null");
    def.mesh = cube_mesh;
    def.mesh.index1 = 77;
    CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &out_instance), KILN_ERROR_INVALID_HANDLE);
    def.struct_size = 3;
    CHECK_STATUS(kiln_tracer_add_instance(tracer, &def, &out_instance), KILN_ERROR_STRUCT_SIZE);
    CHECK_STATUS(kiln_tracer_trace(tracer, probe, 1, KILN_TRACE_CLOSEST, got), KILN_OK);
    CHECK(same_instance(got[0].instance, first_cube) && fabsf(got[0].t - 29.0f) < 1e-4f); /* unchanged */

    /* Removal: the cube leaves the next trace and its handle is refused from then on;
       the banner's own mesh copy is freed on the device; a mesh in use stays. */
    uint64_t held, after;
    CHECK_STATUS(kiln_tracer_get_memory(tracer, &held, NULL), KILN_OK);
    CHECK_STATUS(kiln_tracer_remove_instance(tracer, first_cube), KILN_OK);
    CHECK_STATUS(kiln_tracer_trace(tracer, probe, 1, KILN_TRACE_CLOSEST, got), KILN_OK);
    CHECK(got[0].instance.index1 != 0 && !same_instance(got[0].instance, first_cube) && got[0].t > 40.0f);
    CHECK_STATUS(kiln_tracer_remove_instance(tracer, first_cube), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("stale");
    CHECK_STATUS(kiln_tracer_set_transforms(tracer, &first_cube, &moved, 1), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_unfollow(tracer, first_cube), KILN_ERROR_INVALID_HANDLE);
    KilnInstanceId null_instance = {0};
    CHECK_STATUS(kiln_tracer_remove_instance(tracer, null_instance), KILN_ERROR_INVALID_HANDLE);
    CHECK_MESSAGE("null");
    CHECK_STATUS(kiln_tracer_remove_mesh(tracer, cube_mesh), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("remove them first");
    CHECK_STATUS(kiln_tracer_remove_mesh(tracer, banner_mesh), KILN_ERROR_INVALID_ARGUMENT); /* in use */
    CHECK_STATUS(kiln_tracer_remove_instance(tracer, banner_instance), KILN_OK);
    CHECK_STATUS(kiln_tracer_remove_mesh(tracer, banner_mesh), KILN_OK);
    CHECK_STATUS(kiln_tracer_add_skinned_instance(tracer, &banner_def, &out_instance), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_update(tracer), KILN_OK);
    CHECK_STATUS(kiln_tracer_get_memory(tracer, &after, NULL), KILN_OK);
    CHECK(after < held); /* the banner's mold, skin and transient segment went back */
    CHECK_STATUS(kiln_tracer_set_bones(tracer, banner_instance, bones, BONES), KILN_ERROR_INVALID_HANDLE);

    /* A voxel terrain mirrored chunk by chunk (mask 8): a ray down meets a hill's top;
       the hill dug away and the terrain synced, the next trace passes where it was. */
    KilnTerrainDef tdef = kiln_default_terrain_def();
    tdef.voxel_size = 0.5f;
    KilnTerrainId land, other_land;
    CHECK_STATUS(kiln_terrain_create(&tdef, &land), KILN_OK);
    CHECK_STATUS(kiln_terrain_create(&tdef, &other_land), KILN_OK);
    CHECK_STATUS(kiln_terrain_fill(land, (KilnInt3){0, 0, 0}, (KilnInt3){63, 3, 63}, KILN_MATERIAL_ROCK, NULL), KILN_OK);
    CHECK_STATUS(kiln_terrain_fill(land, (KilnInt3){20, 4, 20}, (KilnInt3){27, 19, 27}, KILN_MATERIAL_ROCK, NULL), KILN_OK);
    uint32_t land_triangles = 0, remeshed = 99;
    CHECK_STATUS(kiln_tracer_add_terrain(tracer, land, 8, 555, &land_triangles), KILN_OK);
    CHECK(land_triangles > 0);
    KilnTraceRay onto_hill = {{12.0f, 50.0f, 12.0f}, {0, -1, 0}, 0.0f, INFINITY, 8};
    CHECK_STATUS(kiln_tracer_trace(tracer, &onto_hill, 1, KILN_TRACE_CLOSEST, got), KILN_OK);
    CHECK(got[0].user_id == 555 && fabsf(got[0].t - 40.0f) < 1e-3f); /* the hill's top, y = 10 */
    CHECK_STATUS(kiln_tracer_sync_terrain(tracer, land, &remeshed), KILN_OK);
    CHECK(remeshed == 0); /* no edit, nothing meshed */
    CHECK_STATUS(kiln_terrain_fill(land, (KilnInt3){20, 4, 20}, (KilnInt3){27, 19, 27}, KILN_MATERIAL_AIR, NULL), KILN_OK);
    CHECK_STATUS(kiln_tracer_sync_terrain(tracer, land, &remeshed), KILN_OK);
    CHECK(remeshed > 0 && remeshed <= 81);
    CHECK_STATUS(kiln_tracer_trace(tracer, &onto_hill, 1, KILN_TRACE_CLOSEST, got), KILN_OK);
    CHECK(got[0].user_id == 555 && fabsf(got[0].t - 48.0f) < 1e-3f); /* the ground below, y = 2 */
    CHECK_STATUS(kiln_tracer_sync_terrain(tracer, other_land, NULL), KILN_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("mirrors terrain");
    KilnTerrainId no_land = {0, 0};
    CHECK_STATUS(kiln_tracer_sync_terrain(tracer, no_land, NULL), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_add_terrain(tracer, no_land, 8, 0, NULL), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_terrain_destroy(other_land), KILN_OK);
    CHECK_STATUS(kiln_tracer_add_terrain(tracer, other_land, 8, 0, NULL), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_terrain_destroy(land), KILN_OK);
    CHECK_STATUS(kiln_tracer_sync_terrain(tracer, land, NULL), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_trace(tracer, &onto_hill, 1, KILN_TRACE_CLOSEST, got), KILN_OK);
    CHECK(got[0].user_id == 555); /* the mirror stays until replaced or the tracer goes */

    CHECK(validation_message_count(tracer) == 0);

    CHECK_STATUS(kiln_tracer_destroy(tracer), KILN_OK);
    CHECK_STATUS(kiln_tracer_trace(tracer, probe, 1, KILN_TRACE_CLOSEST, got), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_remove_mesh(tracer, cube_mesh), KILN_ERROR_INVALID_HANDLE);
    CHECK_STATUS(kiln_tracer_destroy(tracer), KILN_ERROR_INVALID_HANDLE);
    CHECK(!kiln_tracer_is_valid(tracer));
    free(terrain), free(terrain_idx), free(rays), free(hits), free(rgb), free(normals), free(depth);
    return check_summary("trace");
}

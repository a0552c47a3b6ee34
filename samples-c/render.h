/* render: what the C samples share to look at a Kiln tracer's scene: a pinhole
 * camera that makes one ray per pixel, a shader that lights closest hits by a sun
 * (with any-hit shadow rays) and a sky, and PNG output through libpng. */
#ifndef KILN_SAMPLE_RENDER_H
#define KILN_SAMPLE_RENDER_H
#include <stdint.h>

#include "kiln.h"

typedef struct Camera {
    float eye[3], forward[3], right[3], up[3];
    float tan_half_fov; /* vertical */
} Camera;

/* A camera at `eye` looking at `target`, +y up, vertical field of view in degrees. */
Camera camera_look_at(const float eye[3], const float target[3], float fov_degrees);

/* One ray per pixel of a width x height image, rows top to bottom, unit directions. */
void camera_rays(const Camera *camera, int width, int height, KilnTraceRay *rays);

/* The colour of a surface: by its instance's user id, and its normal. */
typedef void (*AlbedoFn)(uint32_t user_id, const KilnVec3 *normal, float rgb[3]);

/* What `render` returns besides the image. */
typedef struct RenderStats {
    uint32_t primary_hits, shadowed;
    float nearest, farthest; /* hit distances */
} RenderStats;

/* Traces the camera's rays (closest hit) and a shadow ray towards `sun` (unit,
 * pointing at the sun) from every hit (any hit); writes sRGB8 colour to `rgb`
 * (3 bytes per pixel) and, when not NULL, the normal image (normal * 0.5 + 0.5) to
 * `normals_rgb` and the depth image (near white, far black) to `depth_gray`.
 * `rays` and `hits` are scratch arrays of width * height entries. */
KilnStatus render(KilnTracerId tracer, const Camera *camera, int width, int height, const float sun[3],
                  AlbedoFn albedo, KilnTraceRay *rays, KilnTraceHit *hits, uint8_t *rgb, uint8_t *normals_rgb,
                  uint8_t *depth_gray, RenderStats *stats);

/* Scratch arrays of one entry per pixel for `shade_gi`; `rays` holds the camera's. */
typedef struct GiScratch {
    KilnTraceRay *rays;
    KilnTraceHit *hits;
    KilnTraceRay *shadow;
    KilnTraceHit *shadow_hits;
    KilnVec3 *points, *normals, *views, *irradiance;
} GiScratch;

/* Shades `count` camera rays (in `scratch->rays`) with a probe volume: closest hit,
 * then albedo / pi * (sun * cos * lit + probe irradiance) with an any-hit shadow
 * ray per hit, sky radiance on a miss; colour c becomes 1 - exp(-exposure * c),
 * then sRGB8 in `rgb` (3 bytes each).
 * With `visibility` false the probes' depth maps are ignored (light leaks). */
KilnStatus shade_gi(KilnTracerId tracer, KilnGiId gi, const KilnGiLighting *light, bool visibility, uint32_t count,
                    AlbedoFn albedo, float exposure, GiScratch *scratch, uint8_t *rgb);

/* Writes an 8-bit RGB (channels 3) or gray (channels 1) PNG; 0 on success. */
int write_png(const char *path, int width, int height, int channels, const uint8_t *pixels);

/* A cube of half extent 1 around the origin, wound counter-clockwise seen from
 * outside: vertex i has x from bit 0, y from bit 1, z from bit 2. */
extern const KilnVec3 unit_cube_positions[8];
extern const uint32_t unit_cube_indices[36];

/* A triangle mesh the sample builds (free both arrays). */
typedef struct Mesh {
    KilnVec3 *positions;
    uint32_t *indices;
    uint32_t vertex_count, triangle_count;
} Mesh;

/* A capsule around the x axis: a UV sphere of `radius` split at x = 0, halves moved
 * to +-half_length and joined by a cylinder (half_length 0: a sphere). */
Mesh capsule_mesh(float radius, float half_length, uint32_t rings, uint32_t segments);

/* Adds every triangle of `terrain` to `tracer` as one mesh with one instance of
 * `mask` and `user_id`; returns the triangle count (0 after printing a failure). */
uint32_t add_terrain_mesh(KilnTracerId tracer, KilnTerrainId terrain, uint32_t mask, uint32_t user_id);

/* Kiln's test hills (`kiln_terrain_generate_hills`, seed 7) over size x size voxel
 * columns, walled in by 2 voxels of rock `wall` m high, masks regenerated on
 * `runtime`. The terrain the demo and falling_bodies share. */
KilnStatus create_walled_hills(int size, int wall, KilnRuntimeId runtime, KilnTerrainId *out_terrain);

/* Height of the terrain surface under (x, z), by a ray cast straight down from
 * y = 200 (-1000 where it finds nothing). */
float ground(KilnTerrainId terrain, float x, float z);

/* Prints the GPU time of each pass of the tracer's last trace or update. */
void print_gpu_timings(KilnTracerId tracer, const char *indent);

/* Opens a tracer on the best device, with validation when `validation` is set. On
 * KILN_ERROR_NO_DEVICE it prints why; the caller decides whether that fails (it does
 * when KILN_REQUIRE_GPU=1, see `gpu_required`). */
KilnStatus open_tracer(int validation, KilnTracerId *tracer);

/* The number of validation-layer messages the tracer collected, printed when there
 * are any (UINT32_MAX when they cannot be read). */
uint32_t validation_message_count(KilnTracerId tracer);

/* Whether KILN_REQUIRE_GPU=1: then a missing device is a failure, never a skip. */
int gpu_required(void);

/* The arguments of the image samples, `[WIDTH HEIGHT] [OUTDIR]`: sizes outside
 * 8..4096 fall back to the defaults; `*outdir` is NULL when none is given. */
void image_args(int argc, char **argv, int default_width, int default_height, int *width, int *height,
                const char **outdir);

/* The start of every GPU sample: checks the linked library's ABI and opens a
 * validating tracer. Returns -1 when the tracer is open and the sample goes on;
 * otherwise the exit code to return: 1 on an ABI mismatch or a missing device with
 * KILN_REQUIRE_GPU=1, 0 (after printing "NAME: SKIPPED") on a missing device. */
int start_gpu_sample(const char *name, KilnTracerId *tracer);
#endif

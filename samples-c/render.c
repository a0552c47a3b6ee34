/* See render.h. */
#include "render.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const KilnVec3 unit_cube_positions[8] = {{-1, -1, -1}, {1, -1, -1}, {-1, 1, -1}, {1, 1, -1},
                                         {-1, -1, 1},  {1, -1, 1},  {-1, 1, 1},  {1, 1, 1}};
const uint32_t unit_cube_indices[36] = {0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5, 0, 1, 5, 0, 5, 4,
                                        2, 6, 7, 2, 7, 3, 0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6};

static void normalize3(float v[3]) {
    float len = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (len > 0.0f)
        for (int k = 0; k < 3; k++) v[k] /= len;
}

static void cross3(const float a[3], const float b[3], float out[3]) {
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

Camera camera_look_at(const float eye[3], const float target[3], float fov_degrees) {
    Camera c;
    const float world_up[3] = {0.0f, 1.0f, 0.0f};
    for (int k = 0; k < 3; k++) {
        c.eye[k] = eye[k];
        c.forward[k] = target[k] - eye[k];
    }
    normalize3(c.forward);
    cross3(c.forward, world_up, c.right);
    normalize3(c.right);
    cross3(c.right, c.forward, c.up);
    c.tan_half_fov = tanf(fov_degrees * 0.5f * 3.14159265f / 180.0f);
    return c;
}

void camera_rays(const Camera *c, int width, int height, KilnTraceRay *rays) {
    float aspect = (float)width / (float)height;
    for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x++) {
            float sx = (2.0f * ((float)x + 0.5f) / (float)width - 1.0f) * c->tan_half_fov * aspect;
            float sy = (1.0f - 2.0f * ((float)y + 0.5f) / (float)height) * c->tan_half_fov;
            float d[3];
            for (int k = 0; k < 3; k++) d[k] = c->forward[k] + sx * c->right[k] + sy * c->up[k];
            normalize3(d);
            KilnTraceRay *r = &rays[y * width + x];
            r->origin = (KilnVec3){c->eye[0], c->eye[1], c->eye[2]};
            r->direction = (KilnVec3){d[0], d[1], d[2]};
            r->t_min = 0.0f;
            r->t_max = INFINITY;
            r->mask = 0xFFFFFFFFu;
        }
    }
}

static uint8_t to_srgb8(float linear) {
    float c = linear <= 0.0f ? 0.0f : linear >= 1.0f ? 1.0f : linear;
    c = c <= 0.0031308f ? 12.92f * c : 1.055f * powf(c, 1.0f / 2.4f) - 0.055f;
    return (uint8_t)(c * 255.0f + 0.5f);
}

KilnStatus render(KilnTracerId tracer, const Camera *camera, int width, int height, const float sun[3],
                  AlbedoFn albedo, KilnTraceRay *rays, KilnTraceHit *hits, uint8_t *rgb, uint8_t *normals_rgb,
                  uint8_t *depth_gray, RenderStats *stats) {
    uint32_t n = (uint32_t)width * (uint32_t)height;
    camera_rays(camera, width, height, rays);
    KilnStatus status = kiln_tracer_trace(tracer, rays, n, KILN_TRACE_CLOSEST, hits);
    if (status != KILN_OK) return status;
    *stats = (RenderStats){0, 0, INFINITY, 0.0f};
    /* Shade what the primary rays saw; misses get the sky. Then turn the rays into
     * shadow rays in place (a miss keeps a ray that cannot hit: t_max = 0). */
    float *color = malloc(sizeof(float) * 3 * n);
    float *cosines = malloc(sizeof(float) * n); /* sun cosine per hit, -1 on a miss */
    if (!color || !cosines) {
        free(color);
        free(cosines);
        return KILN_ERROR_INVALID_STATE;
    }
    for (uint32_t i = 0; i < n; i++) {
        const KilnTraceHit *h = &hits[i];
        KilnTraceRay *r = &rays[i];
        float *c = &color[3 * i];
        if (h->instance.index1 == 0) {
            float up = r->direction.y > 0.0f ? r->direction.y : 0.0f;
            c[0] = 0.35f + 0.2f * (1.0f - up), c[1] = 0.5f + 0.2f * (1.0f - up), c[2] = 0.9f;
            if (normals_rgb) memset(&normals_rgb[3 * i], 0, 3);
            if (depth_gray) depth_gray[i] = 0;
            r->t_max = 0.0f;
            cosines[i] = -1.0f;
            continue;
        }
        stats->primary_hits++;
        if (h->t < stats->nearest) stats->nearest = h->t;
        if (h->t > stats->farthest) stats->farthest = h->t;
        KilnVec3 nrm = h->normal;
        if (h->flags & KILN_HIT_BACKFACE) nrm = (KilnVec3){-nrm.x, -nrm.y, -nrm.z};
        albedo(h->user_id, &nrm, c);
        if (normals_rgb) {
            normals_rgb[3 * i + 0] = (uint8_t)(127.5f * (nrm.x + 1.0f));
            normals_rgb[3 * i + 1] = (uint8_t)(127.5f * (nrm.y + 1.0f));
            normals_rgb[3 * i + 2] = (uint8_t)(127.5f * (nrm.z + 1.0f));
        }
        if (depth_gray) depth_gray[i] = (uint8_t)(255.0f / (1.0f + 0.02f * h->t));
        float p[3] = {r->origin.x + h->t * r->direction.x, r->origin.y + h->t * r->direction.y,
                      r->origin.z + h->t * r->direction.z};
        r->origin = (KilnVec3){p[0] + 1e-3f * nrm.x, p[1] + 1e-3f * nrm.y, p[2] + 1e-3f * nrm.z};
        r->direction = (KilnVec3){sun[0], sun[1], sun[2]};
        r->t_min = 0.0f;
        r->t_max = INFINITY;
        float cosine = nrm.x * sun[0] + nrm.y * sun[1] + nrm.z * sun[2];
        cosines[i] = cosine > 0.0f ? cosine : 0.0f;
    }
    status = kiln_tracer_trace(tracer, rays, n, KILN_TRACE_ANY, hits);
    if (status == KILN_OK) {
        for (uint32_t i = 0; i < n; i++) {
            float *c = &color[3 * i];
            if (cosines[i] >= 0.0f) {
                int shadowed = hits[i].instance.index1 != 0;
                stats->shadowed += shadowed;
                float light = 0.25f + (shadowed ? 0.0f : 0.9f * cosines[i]);
                for (int k = 0; k < 3; k++) c[k] *= light;
            }
            for (int k = 0; k < 3; k++) rgb[3 * i + k] = to_srgb8(c[k]);
        }
    }
    free(cosines);
    free(color);
    return status;
}

int write_png(const char *path, int width, int height, int channels, const uint8_t *pixels) {
    FILE *file = fopen(path, "wb");
    if (!file) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(file);
        return -1;
    }
    png_init_io(png, file);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8,
                 channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < height; y++) png_write_row(png, pixels + (size_t)y * (size_t)width * (size_t)channels);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return fclose(file) == 0 ? 0 : -1;
}

void print_gpu_timings(KilnTracerId tracer, const char *indent) {
    KilnGpuPassTiming timings[16];
    uint32_t count = 0;
    if (kiln_tracer_get_timings(tracer, timings, 16, &count) != KILN_OK) return;
    for (uint32_t i = 0; i < count && i < 16; i++)
        printf("%s%-18s %9.3f ms\n", indent, timings[i].name, timings[i].milliseconds);
}

int gpu_required(void) {
    const char *required = getenv("KILN_REQUIRE_GPU");
    return required && strcmp(required, "1") == 0;
}

KilnStatus open_tracer(int validation, KilnTracerId *tracer) {
    KilnTracerDef def = kiln_default_tracer_def();
    def.validation = validation != 0;
    KilnStatus status = kiln_tracer_create(&def, tracer);
    if (status == KILN_ERROR_NO_DEVICE) {
        printf("no Vulkan device: %s\n", kiln_last_error_message());
    } else if (status == KILN_OK) {
        KilnDeviceInfo info;
        if (kiln_tracer_get_device(*tracer, &info) == KILN_OK) {
            printf("GPU passes on %s (%s, %s)%s\n", info.name,
                   info.kind == KILN_DEVICE_CPU ? "software Vulkan on the CPU" : "Vulkan GPU", info.driver,
                   validation ? ", validation on" : "");
        }
    }
    return status;
}

void image_args(int argc, char **argv, int default_width, int default_height, int *width, int *height,
                const char **outdir) {
    *width = argc > 2 ? atoi(argv[1]) : default_width;
    *height = argc > 2 ? atoi(argv[2]) : default_height;
    *outdir = argc == 2 ? argv[1] : argc > 3 ? argv[3] : NULL;
    if (*width < 8 || *height < 8 || *width > 4096 || *height > 4096) *width = default_width, *height = default_height;
}

int start_gpu_sample(const char *name, KilnTracerId *tracer) {
    if (kiln_check_linked_abi() != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_last_error_message());
        return 1;
    }
    if (open_tracer(1, tracer) == KILN_OK) return -1;
    if (gpu_required()) {
        fprintf(stderr, "%s: KILN_REQUIRE_GPU=1 but no tracer: %s\n", name, kiln_last_error_message());
        return 1;
    }
    printf("%s: SKIPPED (set KILN_REQUIRE_GPU=1 to fail instead)\n", name);
    return 0;
}

uint32_t validation_message_count(KilnTracerId tracer) {
    uint32_t messages = 0;
    char text[2048];
    if (kiln_tracer_get_validation_messages(tracer, text, sizeof text, &messages) != KILN_OK) return UINT32_MAX;
    if (messages) printf("validation messages:\n%s\n", text);
    return messages;
}

KilnStatus shade_gi(KilnTracerId tracer, KilnGiId gi, const KilnGiLighting *light, bool visibility, uint32_t n,
                    AlbedoFn albedo, float exposure, GiScratch *scratch, uint8_t *rgb) {
    const KilnTraceRay *rays = scratch->rays;
    KilnTraceHit *hits = scratch->hits, *shadow_hits = scratch->shadow_hits;
    KilnTraceRay *shadow = scratch->shadow;
    uint32_t m = 0;
    KilnStatus s = kiln_tracer_trace(tracer, rays, n, KILN_TRACE_CLOSEST, hits);
    if (s != KILN_OK) return s;
    for (uint32_t i = 0; i < n; i++) {
        const KilnTraceRay *r = &rays[i];
        const KilnTraceHit *h = &hits[i];
        shadow[i] = (KilnTraceRay){{0, 0, 0}, {0, 1, 0}, 0.0f, 0.0f, 0u}; /* mask 0: a miss */
        if (h->instance.index1 == 0) continue;
        KilnVec3 p = {r->origin.x + r->direction.x * h->t, r->origin.y + r->direction.y * h->t,
                      r->origin.z + r->direction.z * h->t};
        shadow[i] = (KilnTraceRay){{p.x + h->normal.x * 1e-3f, p.y + h->normal.y * 1e-3f, p.z + h->normal.z * 1e-3f},
                                   light->sun_direction, 0.0f, INFINITY, 0xFFFFFFFFu};
        scratch->points[m] = p;
        scratch->normals[m] = h->normal;
        scratch->views[m] = (KilnVec3){-r->direction.x, -r->direction.y, -r->direction.z};
        m++;
    }
    if ((s = kiln_tracer_trace(tracer, shadow, n, KILN_TRACE_ANY, shadow_hits)) != KILN_OK) return s;
    s = kiln_gi_sample(gi, scratch->points, scratch->normals, scratch->views, m, visibility, scratch->irradiance);
    if (s != KILN_OK) return s;
    const float *sun = &light->sun_irradiance.x, *sky = &light->sky_radiance.x;
    m = 0;
    for (uint32_t i = 0; i < n; i++) {
        const KilnTraceHit *h = &hits[i];
        float c[3];
        if (h->instance.index1 == 0) {
            for (int k = 0; k < 3; k++) c[k] = sky[k];
        } else {
            float a[3];
            albedo(h->user_id, &h->normal, a);
            const float *e = &scratch->irradiance[m++].x;
            const KilnVec3 *nn = &h->normal;
            float cosine = nn->x * light->sun_direction.x + nn->y * light->sun_direction.y +
                           nn->z * light->sun_direction.z;
            float lit = shadow_hits[i].instance.index1 == 0 && cosine > 0.0f ? cosine : 0.0f;
            for (int k = 0; k < 3; k++) c[k] = a[k] / 3.14159265f * (sun[k] * lit + e[k]);
        }
        for (int k = 0; k < 3; k++) {
            float t = 1.0f - expf(-exposure * c[k]);
            t = t <= 0.0031308f ? 12.92f * t : 1.055f * powf(t, 1.0f / 2.4f) - 0.055f;
            rgb[3 * i + (uint32_t)k] = (uint8_t)(t * 255.0f + 0.5f);
        }
    }
    return KILN_OK;
}

Mesh capsule_mesh(float radius, float half_length, uint32_t rings, uint32_t segments) {
    /* Ring i at polar angle pi * i / rings from +x; the equator ring appears twice
     * (once per half) when the halves are apart. */
    uint32_t ring_count = half_length > 0.0f ? rings + 2 : rings + 1;
    Mesh m = {malloc(sizeof(KilnVec3) * ring_count * segments),
              malloc(sizeof(uint32_t) * 6 * (ring_count - 1) * segments), ring_count * segments,
              2 * (ring_count - 1) * segments};
    if (!m.positions || !m.indices) {
        free(m.positions), free(m.indices);
        return (Mesh){0};
    }
    for (uint32_t r = 0, v = 0; r < ring_count; r++) {
        uint32_t i = r <= rings / 2 ? r : r - (ring_count - rings - 1);
        float theta = 3.14159265f * (float)i / (float)rings;
        float shift = r <= rings / 2 ? half_length : -half_length;
        for (uint32_t s = 0; s < segments; s++, v++) {
            float phi = 2.0f * 3.14159265f * (float)s / (float)segments;
            m.positions[v] = (KilnVec3){radius * cosf(theta) + shift, radius * sinf(theta) * cosf(phi),
                                        radius * sinf(theta) * sinf(phi)};
        }
    }
    for (uint32_t r = 0, t = 0; r + 1 < ring_count; r++)
        for (uint32_t s = 0; s < segments; s++, t += 6) {
            uint32_t a = r * segments + s, b = r * segments + (s + 1) % segments;
            uint32_t c = a + segments, d = b + segments;
            uint32_t quad[6] = {a, c, b, b, c, d};
            for (int k = 0; k < 6; k++) m.indices[t + k] = quad[k];
        }
    return m;
}

uint32_t add_terrain_mesh(KilnTracerId tracer, KilnTerrainId terrain, uint32_t mask, uint32_t user_id) {
    KilnAabb all = {{-1e4f, -1e4f, -1e4f}, {1e4f, 1e4f, 1e4f}};
    uint32_t count = 0;
    KilnMeshId mesh = {0};
    KilnInstanceId instance = {0};
    KilnStatus s = kiln_terrain_query_triangles(terrain, (KilnRuntimeId){0, 0}, &all, NULL, 0, &count);
    KilnTerrainTriangle *tris = s == KILN_OK ? malloc(sizeof *tris * count) : NULL;
    Mesh m = {malloc(sizeof(KilnVec3) * 3 * count), malloc(sizeof(uint32_t) * 3 * count), 3 * count, count};
    if (tris && m.positions && m.indices)
        s = kiln_terrain_query_triangles(terrain, (KilnRuntimeId){0, 0}, &all, tris, count, &count);
    else if (s == KILN_OK)
        s = KILN_ERROR_OUT_OF_MEMORY;
    for (uint32_t t = 0; s == KILN_OK && t < count; t++)
        for (int k = 0; k < 3; k++) {
            m.positions[3 * t + k] = tris[t].vertices[k];
            m.indices[3 * t + k] = 3 * t + (uint32_t)k;
        }
    if (s == KILN_OK) s = kiln_tracer_add_mesh(tracer, m.positions, m.vertex_count, m.indices, count, &mesh);
    KilnInstanceDef def = kiln_default_instance_def();
    def.mesh = mesh;
    def.mask = mask;
    def.user_id = user_id;
    if (s == KILN_OK) s = kiln_tracer_add_instance(tracer, &def, &instance);
    free(tris), free(m.positions), free(m.indices);
    if (s != KILN_OK) {
        fprintf(stderr, "add_terrain_mesh: %s\n", kiln_last_error_message());
        return 0;
    }
    return count;
}

KilnStatus create_walled_hills(int size, int wall, KilnRuntimeId runtime, KilnTerrainId *out_terrain) {
    KilnTerrainDef def = kiln_default_terrain_def();
    KilnTerrainId terrain;
    KilnStatus s = kiln_terrain_create(&def, &terrain);
    if (s != KILN_OK) return s;
    const KilnInt3 walls[4][2] = {{{0, 0, 0}, {size - 1, wall, 1}},
                                  {{0, 0, size - 2}, {size - 1, wall, size - 1}},
                                  {{0, 0, 0}, {1, wall, size - 1}},
                                  {{size - 2, 0, 0}, {size - 1, wall, size - 1}}};
    s = kiln_terrain_generate_hills(terrain, size, 7);
    for (int w = 0; w < 4 && s == KILN_OK; w++)
        s = kiln_terrain_fill(terrain, walls[w][0], walls[w][1], KILN_MATERIAL_ROCK, NULL);
    if (s == KILN_OK) s = kiln_terrain_regenerate(terrain, runtime, NULL);
    if (s != KILN_OK) {
        kiln_terrain_destroy(terrain);
        return s;
    }
    *out_terrain = terrain;
    return KILN_OK;
}

float ground(KilnTerrainId terrain, float x, float z) {
    KilnRay ray = {{x, 200.0f, z}, {0.0f, -1.0f, 0.0f}};
    KilnTerrainRayHit hit;
    if (kiln_terrain_ray_cast(terrain, &ray, 400.0f, &hit) != KILN_OK || !hit.hit) return -1000.0f;
    return hit.point.y;
}

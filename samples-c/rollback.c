/* Rollback netcode with Kiln snapshots: two simulated peers, each steering a ball
 * through a yard of crates on generated hills, exchange their inputs over a link
 * that delivers each input DELAY frames late. Each peer steps ahead at once,
 * predicting the other's input as its last known one; when the real input arrives
 * and differs from the prediction, the peer restores the snapshot it saved before
 * that frame and steps again to the present with what it now knows. Now and then a
 * player digs a pit under their ball: a mispredicted dig is rolled back with the
 * rest (the snapshot puts the ground back) and dug again where it belongs.
 *
 * Every frame whose inputs are all known is confirmed, and its world hash is kept.
 * At the end both peers' confirmed hashes must equal, frame for frame, those of a
 * reference world stepped straight with every input on time.
 *
 *   rollback [FRAMES]        (default 600) */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"
#include "tests/check.h"

#define DELAY 4
#define RING 16 /* snapshots kept: more than DELAY + 1 frames back */
#define MAX_FRAMES 4000

typedef struct Peer {
    KilnWorldId world;
    KilnTerrainId terrain;
    KilnBodyId ball[2];
    int me;
    int frame; /* frames stepped */
    uint8_t input[MAX_FRAMES][2];
    bool known[MAX_FRAMES][2];
    uint8_t used[MAX_FRAMES];      /* the other's input each frame was last stepped with */
    uint64_t hash_after[MAX_FRAMES]; /* the hash after each frame was last stepped */
    uint8_t *ring[RING];
    uint64_t ring_size[RING], capacity;
    uint64_t confirmed[MAX_FRAMES]; /* the hash of each frame once its inputs are known */
    int rollbacks, resimulated;
} Peer;

static KilnWorldId yard(KilnTerrainId *terrain, KilnBodyId ball[2]) {
    KilnWorldDef def = kiln_default_world_def();
    KilnWorldId world;
    CHECK_STATUS(kiln_world_create(&def, &world), KILN_OK);
    KilnTerrainDef tdef = kiln_default_terrain_def();
    tdef.voxel_size = 1.0f;
    CHECK_STATUS(kiln_terrain_create(&tdef, terrain), KILN_OK);
    CHECK_STATUS(kiln_terrain_generate_hills(*terrain, 32, 3), KILN_OK);
    CHECK_STATUS(kiln_world_set_terrain(world, *terrain), KILN_OK);
    KilnShapeId crate, sphere;
    CHECK_STATUS(kiln_shape_create_box((KilnVec3){0.5f, 0.5f, 0.5f}, &crate), KILN_OK);
    CHECK_STATUS(kiln_shape_create_sphere((KilnVec3){0, 0, 0}, 0.6f, &sphere), KILN_OK);
    KilnShapeDef sdef = kiln_default_shape_def();
    for (int i = 0; i < 40; i++) {
        KilnBodyDef bdef = kiln_default_body_def();
        bdef.transform.position = (KilnVec3){10.0f + (float)(i % 5) * 3.0f, 28.0f + (float)(i / 5), 10.0f + (float)(i % 8) * 1.6f};
        KilnBodyId id;
        CHECK_STATUS(kiln_body_create(world, &bdef, &id), KILN_OK);
        CHECK_STATUS(kiln_body_add_shape(id, crate, &sdef, NULL), KILN_OK);
    }
    for (int p = 0; p < 2; p++) {
        KilnBodyDef bdef = kiln_default_body_def();
        bdef.transform.position = (KilnVec3){12.0f + 8.0f * (float)p, 32.0f, 16.0f};
        bdef.allow_sleep = false;
        CHECK_STATUS(kiln_body_create(world, &bdef, &ball[p]), KILN_OK);
        CHECK_STATUS(kiln_body_add_shape(ball[p], sphere, &sdef, NULL), KILN_OK);
    }
    CHECK_STATUS(kiln_shape_destroy(crate), KILN_OK);
    CHECK_STATUS(kiln_shape_destroy(sphere), KILN_OK);
    return world;
}

#define DIG 16

/* Player `p`'s input at `frame`: four direction bits, held for 6 to 25 frames, and
 * a dig every 90 frames. */
static uint8_t player_input(int p, int frame) {
    uint32_t x = (uint32_t)(frame / (6 + 19 * p + (frame / 97) % 7)) * 2654435761u + (uint32_t)p * 40503u;
    x ^= x >> 13;
    return (uint8_t)(x * 2246822519u >> 28) | (frame % 90 == 45 + 20 * p ? DIG : 0);
}

/* Steps `world` one frame with the two players' inputs: a push, and a dig of the
 * 5x3x5 voxels under the ball. */
static void step(KilnWorldId world, KilnRuntimeId rt, KilnTerrainId terrain, const KilnBodyId ball[2],
                 const uint8_t input[2]) {
    for (int p = 0; p < 2; p++) {
        uint8_t in = input[p];
        if (in & DIG) {
            KilnTransform xf;
            CHECK_STATUS(kiln_body_get_transform(ball[p], &xf), KILN_OK);
            int x = (int)floorf(xf.position.x), y = (int)floorf(xf.position.y), z = (int)floorf(xf.position.z);
            KilnInt3 lo = {x - 2, y - 3, z - 2}, hi = {x + 2, y - 1, z + 2};
            CHECK_STATUS(kiln_terrain_fill(terrain, lo, hi, 0, NULL), KILN_OK);
        }
        KilnVec3 push = {(float)((in & 1) - (in >> 1 & 1)) * 4.0f, 0.0f, (float)((in >> 2 & 1) - (in >> 3 & 1)) * 4.0f};
        KilnTransform xf;
        CHECK_STATUS(kiln_body_get_transform(ball[p], &xf), KILN_OK);
        CHECK_STATUS(kiln_body_apply_impulse(ball[p], push, xf.position), KILN_OK);
    }
    CHECK_STATUS(kiln_world_step(world, rt, 1.0f / 60.0f), KILN_OK);
}

static uint64_t hash_of(KilnWorldId world) {
    uint64_t h = 0;
    CHECK_STATUS(kiln_world_hash(world, &h), KILN_OK);
    return h;
}

/* Saves the state before frame `peer->frame` into its ring slot, growing it when short. */
static void save(Peer *peer) {
    int slot = peer->frame % RING;
    KilnStatus s = kiln_world_save(peer->world, peer->ring[slot], peer->capacity, &peer->ring_size[slot]);
    if (s == KILN_ERROR_BUFFER_TOO_SMALL) {
        peer->capacity = peer->ring_size[slot] * 2;
        for (int i = 0; i < RING; i++) {
            peer->ring[i] = realloc(peer->ring[i], peer->capacity);
        }
        s = kiln_world_save(peer->world, peer->ring[slot], peer->capacity, &peer->ring_size[slot]);
    }
    CHECK_STATUS(s, KILN_OK);
}

/* Steps the peer's next frame: its own input, the other's if known, else predicted. */
static void advance(Peer *peer, KilnRuntimeId rt) {
    int f = peer->frame, other = 1 - peer->me;
    save(peer);
    uint8_t input[2];
    input[peer->me] = peer->input[f][peer->me];
    if (peer->known[f][other]) {
        input[other] = peer->input[f][other];
    } else {
        int g = f;
        while (g > 0 && !peer->known[g][other]) {
            g--;
        }
        input[other] = peer->known[g][other] ? peer->input[g][other] : 0;
    }
    peer->used[f] = input[other];
    step(peer->world, rt, peer->terrain, peer->ball, input);
    peer->frame++;
    peer->hash_after[f] = hash_of(peer->world);
}

/* The other's input for `frame` arrives (in frame order): roll back when it was
 * mispredicted. Then every frame up to `frame` has its real inputs, and its hash is
 * confirmed. */
static void receive(Peer *peer, int frame, uint8_t input, KilnRuntimeId rt) {
    int other = 1 - peer->me;
    peer->input[frame][other] = input;
    peer->known[frame][other] = true;
    CHECK(frame < peer->frame); /* the link delays: an input is for a frame stepped */
    if (peer->used[frame] != input) {
        int now = peer->frame, slot = frame % RING;
        CHECK_STATUS(kiln_world_restore(peer->world, peer->ring[slot], peer->ring_size[slot]), KILN_OK);
        peer->frame = frame;
        peer->rollbacks++;
        peer->resimulated += now - frame;
        while (peer->frame < now) {
            advance(peer, rt);
        }
    }
    peer->confirmed[frame] = peer->hash_after[frame];
}

int main(int argc, char **argv) {
    int frames = argc > 1 ? atoi(argv[1]) : 600;
    if (frames < DELAY + 2 || frames > MAX_FRAMES) {
        fprintf(stderr, "usage: rollback [FRAMES from %d to %d]\n", DELAY + 2, MAX_FRAMES);
        return 2;
    }
    KilnRuntimeDef rdef = kiln_default_runtime_def();
    rdef.thread_count = 1;
    KilnRuntimeId rt;
    CHECK_STATUS(kiln_runtime_create(&rdef, &rt), KILN_OK);

    /* The reference: every input on time. */
    KilnTerrainId ref_terrain;
    KilnBodyId ref_ball[2];
    KilnWorldId reference = yard(&ref_terrain, ref_ball);
    uint64_t *truth = calloc((size_t)frames, sizeof *truth);
    for (int f = 0; f < frames; f++) {
        uint8_t input[2] = {player_input(0, f), player_input(1, f)};
        step(reference, rt, ref_terrain, ref_ball, input);
        truth[f] = hash_of(reference);
    }

    static Peer peers[2];
    for (int p = 0; p < 2; p++) {
        Peer *peer = &peers[p];
        peer->me = p;
        peer->world = yard(&peer->terrain, peer->ball);
        CHECK_STATUS(kiln_world_snapshot_size(peer->world, &peer->capacity), KILN_OK);
        peer->capacity *= 4;
        for (int i = 0; i < RING; i++) {
            peer->ring[i] = malloc(peer->capacity);
        }
    }
    for (int t = 0; t < frames; t++) {
        for (int p = 0; p < 2; p++) {
            peers[p].input[t][p] = player_input(p, t);
            peers[p].known[t][p] = true;
        }
        /* The link: inputs of frame t - DELAY arrive now. */
        if (t >= DELAY) {
            for (int p = 0; p < 2; p++) {
                receive(&peers[p], t - DELAY, player_input(1 - p, t - DELAY), rt);
            }
        }
        for (int p = 0; p < 2; p++) {
            advance(&peers[p], rt);
        }
    }
    /* The last DELAY frames' inputs arrive after the last frame. */
    for (int g = frames - DELAY; g < frames; g++) {
        for (int p = 0; p < 2; p++) {
            receive(&peers[p], g, player_input(1 - p, g), rt);
        }
    }

    int agree = 0;
    for (int f = 0; f < frames; f++) {
        agree += peers[0].confirmed[f] == truth[f] && peers[1].confirmed[f] == truth[f];
    }
    printf("rollback: %d frames, input delay %d frames; peers rolled back %d and %d times, re-stepping %d and %d "
           "frames; snapshots of %llu bytes\n",
           frames, DELAY, peers[0].rollbacks, peers[1].rollbacks, peers[0].resimulated, peers[1].resimulated,
           (unsigned long long)peers[0].ring_size[0]);
    printf("rollback: both peers agree with the on-time world on %d of %d confirmed hashes\n", agree, frames);
    CHECK(agree == frames);
    CHECK(peers[0].rollbacks > 0 && peers[1].rollbacks > 0);

    for (int p = 0; p < 2; p++) {
        for (int i = 0; i < RING; i++) {
            free(peers[p].ring[i]);
        }
        CHECK_STATUS(kiln_world_destroy(peers[p].world), KILN_OK);
        CHECK_STATUS(kiln_terrain_destroy(peers[p].terrain), KILN_OK);
    }
    free(truth);
    CHECK_STATUS(kiln_world_destroy(reference), KILN_OK);
    CHECK_STATUS(kiln_terrain_destroy(ref_terrain), KILN_OK);
    CHECK_STATUS(kiln_runtime_destroy(rt), KILN_OK);
    return check_summary("rollback");
}

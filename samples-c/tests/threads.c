/* The thread contract from C, with pthreads.
 *
 * 1. Eight threads each build and step their own world at once (four inline, four on
 *    a runtime of their own with two workers): every one ends with the same state hash
 *    as the same world stepped by one thread alone, before the others started.
 * 2. Four threads hammer one world at once: one steps it, one creates and destroys
 *    bodies and sets velocities, one casts rays and overlaps boxes, one reads
 *    transforms and counters and finally destroys the world while the others run.
 *    A body of the world is reported valid for as long as the world lives, however
 *    busy it is (the validity check waits instead of answering "invalid").
 *    Every call answers KILN_OK, KILN_ERROR_INVALID_STATE (the world was busy in
 *    another thread) or KILN_ERROR_INVALID_HANDLE (a body destroyed by another thread,
 *    or the world destroyed at the end): never another status, never a crash.
 *
 * 3. From inside one of a world's own callbacks, kiln_body_is_valid answers false
 *    (the world is busy in this very thread) instead of waiting for itself forever.
 *
 * The Makefile builds it under AddressSanitizer and UndefinedBehaviorSanitizer;
 * scripts/sanitize.sh builds it and libkiln under ThreadSanitizer. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kiln.h"
#include "check.h"

#define OWN_WORLDS 8
#define STEPS 150
#define HAMMER_ROUNDS 400

/* A ground box and a 6 x 6 grid of boxes and spheres dropped on it, three high. */
static KilnWorldId build_world(KilnBodyId *bodies, uint32_t *count) {
    KilnWorldDef def = kiln_default_world_def();
    KilnWorldId world = {0, 0};
    if (kiln_world_create(&def, &world) != KILN_OK) return world;
    KilnShapeId ground_shape, box, ball;
    kiln_shape_create_box((KilnVec3){20.0f, 0.5f, 20.0f}, &ground_shape);
    kiln_shape_create_box((KilnVec3){0.4f, 0.4f, 0.4f}, &box);
    kiln_shape_create_sphere((KilnVec3){0.0f, 0.0f, 0.0f}, 0.45f, &ball);
    KilnBodyDef ground = kiln_default_body_def();
    ground.motion_type = KILN_MOTION_STATIC;
    ground.transform.position = (KilnVec3){0.0f, -0.5f, 0.0f};
    KilnShapeDef shape_def = kiln_default_shape_def();
    KilnBodyId id;
    if (kiln_body_create(world, &ground, &id) == KILN_OK) kiln_body_add_shape(id, ground_shape, &shape_def, NULL);
    *count = 0;
    for (int layer = 0; layer < 3; layer++) {
        for (int i = 0; i < 36; i++) {
            KilnBodyDef def_body = kiln_default_body_def();
            def_body.transform.position =
                (KilnVec3){(float)(i % 6) * 1.1f - 2.75f + 0.07f * (float)layer, 1.0f + 1.2f * (float)layer,
                           (float)(i / 6) * 1.1f - 2.75f};
            if (kiln_body_create(world, &def_body, &id) != KILN_OK) continue;
            kiln_body_add_shape(id, (i + layer) % 3 == 0 ? ball : box, &shape_def, NULL);
            bodies[(*count)++] = id;
        }
    }
    kiln_shape_destroy(ground_shape);
    kiln_shape_destroy(box);
    kiln_shape_destroy(ball);
    return world;
}

typedef struct OwnWorld {
    int use_runtime;
    uint64_t hash;
    int failures;
} OwnWorld;

static uint64_t step_own_world(int use_runtime, int *failures) {
    KilnRuntimeId runtime = {0, 0};
    if (use_runtime) {
        KilnRuntimeDef def = kiln_default_runtime_def();
        def.thread_count = 1;
        if (kiln_runtime_create(&def, &runtime) != KILN_OK) (*failures)++;
    }
    KilnBodyId bodies[128];
    uint32_t count = 0;
    KilnWorldId world = build_world(bodies, &count);
    for (int step = 0; step < STEPS; step++) {
        if (kiln_world_step(world, runtime, 1.0f / 60.0f) != KILN_OK) (*failures)++;
    }
    uint64_t hash = 0;
    if (count != 108 || kiln_world_hash(world, &hash) != KILN_OK) (*failures)++;
    /* The pile landed: every body rests on the ground or on another, none fell through. */
    for (uint32_t i = 0; i < count; i++) {
        KilnTransform transform;
        if (kiln_body_get_transform(bodies[i], &transform) != KILN_OK || !(transform.position.y > 0.3f) ||
            !(transform.position.y < 3.0f)) {
            (*failures)++;
        }
    }
    if (kiln_world_destroy(world) != KILN_OK) (*failures)++;
    if (use_runtime && kiln_runtime_destroy(runtime) != KILN_OK) (*failures)++;
    return hash;
}

static void *own_world_thread(void *arg) {
    OwnWorld *own = arg;
    own->hash = step_own_world(own->use_runtime, &own->failures);
    return NULL;
}

static void worlds_of_their_own(void) {
    int failures = 0;
    uint64_t alone = step_own_world(0, &failures);
    CHECK(alone != 0 && failures == 0);
    OwnWorld own[OWN_WORLDS];
    pthread_t threads[OWN_WORLDS];
    for (int i = 0; i < OWN_WORLDS; i++) {
        own[i] = (OwnWorld){i % 2, 0, 0};
        CHECK(pthread_create(&threads[i], NULL, own_world_thread, &own[i]) == 0);
    }
    for (int i = 0; i < OWN_WORLDS; i++) {
        pthread_join(threads[i], NULL);
        CHECK(own[i].failures == 0);
        CHECK(own[i].hash == alone);
    }
    printf("  eight worlds on eight threads: hash %016llx, as one thread alone\n", (unsigned long long)alone);
}

/* Shared by the hammering threads. */
typedef struct Hammer {
    KilnWorldId world;
    KilnBodyId bodies[128];
    uint32_t count;
    atomic_int rounds_done[4]; /* each thread's finished rounds: the destroy waits for all */
    atomic_int world_dying; /* set before the destroy starts */
    atomic_int world_gone;  /* set after it succeeded */
} Hammer;

typedef struct Tally {
    unsigned ok, busy, stale, other;
} Tally;

static void tally(Tally *t, KilnStatus status) {
    if (status == KILN_OK) {
        t->ok++;
    } else if (status == KILN_ERROR_INVALID_STATE) {
        t->busy++;
    } else if (status == KILN_ERROR_INVALID_HANDLE) {
        t->stale++;
    } else if (t->other++ == 0) {
        fprintf(stderr, "threads: unexpected status %s: %s\n", kiln_status_name(status), kiln_last_error_message());
    }
}

/* A call that finds the world busy is tried again a few times, as a game would. */
#define CALL(t, status, expr)                                                                          \
    do {                                                                                              \
        for (int tries_ = 0; tries_ < 32; tries_++) {                                                 \
            (status) = (expr);                                                                        \
            if ((status) != KILN_ERROR_INVALID_STATE) break;                                          \
            (t)->busy++;                                                                              \
            sched_yield();                                                                            \
        }                                                                                             \
        tally((t), (status));                                                                         \
    } while (0)

typedef struct Worker {
    Hammer *hammer;
    int role;
    Tally tally;
    unsigned invalid_while_alive;
} Worker;

static void hammer_round(Worker *w, int round, KilnShapeId box, KilnBodyId *mine) {
    Hammer *h = w->hammer;
    Tally *t = &w->tally;
    KilnStatus status;
    switch (w->role) {
    case 0: /* steps */
        CALL(t, status, kiln_world_step(h->world, (KilnRuntimeId){0, 0}, 1.0f / 60.0f));
        break;
    case 1: { /* body edits: create with a shape and a velocity, destroy */
        KilnBodyId *slot = &mine[round % 8];
        if (slot->index1 != 0) {
            CALL(t, status, kiln_body_destroy(*slot));
            *slot = (KilnBodyId){0};
        } else {
            KilnBodyDef def = kiln_default_body_def();
            def.transform.position = (KilnVec3){(float)(round % 8) - 4.0f, 6.0f, 3.0f};
            KilnBodyId id = {0};
            CALL(t, status, kiln_body_create(h->world, &def, &id));
            if (status == KILN_OK) {
                KilnShapeDef shape_def = kiln_default_shape_def();
                CALL(t, status, kiln_body_add_shape(id, box, &shape_def, NULL));
                CALL(t, status, kiln_body_set_velocity(id, (KilnVec3){0.0f, 1.0f, 0.0f}, (KilnVec3){0.0f, 0.0f, 0.0f}));
                *slot = id;
            }
        }
        CALL(t, status,
             kiln_body_set_velocity(h->bodies[round % h->count], (KilnVec3){0.1f, 0.0f, 0.0f},
                                    (KilnVec3){0.0f, 0.0f, 0.0f}));
        break;
    }
    case 2: { /* queries */
        KilnRay ray = {{(float)(round % 9) - 4.0f, 10.0f, 0.5f}, {0.0f, -1.0f, 0.0f}};
        KilnWorldRayHit hit;
        CALL(t, status, kiln_world_cast_ray(h->world, &ray, 100.0f, NULL, &hit));
        KilnAabb bounds = {{-1.0f, 0.0f, -1.0f}, {1.0f, 2.0f, 1.0f}};
        KilnQueryTarget targets[16];
        uint32_t found = 0;
        CALL(t, status, kiln_world_overlap_aabb(h->world, (KilnRuntimeId){0, 0}, &bounds, NULL, targets, 16, &found));
        /* Validity waits for a busy world rather than answering "invalid": a body
         * of the pile is valid for as long as its world lives. */
        bool valid = kiln_body_is_valid(h->bodies[round % h->count]);
        if (!valid && !atomic_load(&h->world_dying)) w->invalid_while_alive++;
        break;
    }
    case 3: { /* reads; halfway, once every thread is halfway too, the world's end */
        float positions[128 * 3];
        CALL(t, status, kiln_world_get_transforms(h->world, h->bodies, h->count, positions, 0, NULL, 0));
        KilnTransform transform;
        CALL(t, status, kiln_body_get_transform(h->bodies[round % h->count], &transform));
        KilnWorldCounters counters;
        CALL(t, status, kiln_world_get_counters(h->world, &counters));
        if (round == HAMMER_ROUNDS / 2) {
            for (int other = 0; other < 3; other++) {
                while (atomic_load(&h->rounds_done[other]) < HAMMER_ROUNDS / 2) sched_yield();
            }
            atomic_store(&h->world_dying, 1);
            while ((status = kiln_world_destroy(h->world)) == KILN_ERROR_INVALID_STATE) {
                t->busy++;
                sched_yield();
            }
            tally(t, status);
            atomic_store(&h->world_gone, 1);
        }
        break;
    }
    }
}

static void *hammer_thread(void *arg) {
    Worker *w = arg;
    KilnShapeId box = {0, 0};
    if (w->role == 1) kiln_shape_create_box((KilnVec3){0.3f, 0.3f, 0.3f}, &box);
    KilnBodyId mine[8] = {{0}};
    for (int round = 0; round < HAMMER_ROUNDS; round++) {
        hammer_round(w, round, box, mine);
        atomic_fetch_add(&w->hammer->rounds_done[w->role], 1);
    }
    if (box.index1 != 0) kiln_shape_destroy(box);
    return NULL;
}

static void four_threads_on_one_world(void) {
    static Hammer hammer;
    hammer.world = build_world(hammer.bodies, &hammer.count);
    CHECK(hammer.count == 108);
    Worker workers[4];
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        workers[i] = (Worker){&hammer, i, {0, 0, 0, 0}, 0};
        CHECK(pthread_create(&threads[i], NULL, hammer_thread, &workers[i]) == 0);
    }
    unsigned ok = 0, busy = 0, stale = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        CHECK(workers[i].tally.other == 0);
        CHECK(workers[i].tally.ok > 0);
        CHECK(workers[i].invalid_while_alive == 0);
        ok += workers[i].tally.ok, busy += workers[i].tally.busy, stale += workers[i].tally.stale;
    }
    /* The world is gone for every thread: the calls after its end found it stale. */
    CHECK(atomic_load(&hammer.world_gone) == 1);
    CHECK(!kiln_world_is_valid(hammer.world));
    CHECK(stale > 0);
    KilnTransform transform;
    CHECK_STATUS(kiln_body_get_transform(hammer.bodies[0], &transform), KILN_ERROR_INVALID_HANDLE);
    printf("  four threads on one world: %u ok, %u busy, %u stale\n", ok, busy, stale);
}

/* From inside one of the world's own callbacks the world is busy: a validity check
 * answers false there instead of waiting for itself forever, and other calls on the
 * world are refused. */
typedef struct CallbackAsks {
    KilnWorldId world;
    unsigned hits, valid, step_refused;
} CallbackAsks;

static float ask_from_callback(const KilnWorldRayHit *hit, void *context) {
    CallbackAsks *asks = context;
    if (hit->target.body.index1 == 0) return -1.0f;
    asks->hits++;
    asks->valid += kiln_body_is_valid(hit->target.body);
    asks->step_refused += kiln_world_step(asks->world, (KilnRuntimeId){0, 0}, 1.0f / 60.0f) ==
                          KILN_ERROR_INVALID_STATE;
    return -1.0f;
}

static void validity_from_a_callback(void) {
    KilnBodyId bodies[128];
    uint32_t count = 0;
    CallbackAsks asks = {build_world(bodies, &count), 0, 0, 0};
    KilnRay ray = {{0.25f, 10.0f, 0.25f}, {0.0f, -1.0f, 0.0f}};
    CHECK_STATUS(kiln_world_cast_ray_callback(asks.world, &ray, 100.0f, NULL, ask_from_callback, &asks), KILN_OK);
    CHECK(asks.hits > 0);
    CHECK(asks.valid == 0);
    CHECK(asks.step_refused == asks.hits);
    /* Outside the callback the same bodies are valid. */
    CHECK(kiln_body_is_valid(bodies[0]));
    CHECK_STATUS(kiln_world_destroy(asks.world), KILN_OK);
}

int main(void) {
    if (kiln_check_linked_abi() != KILN_OK) {
        fprintf(stderr, "threads: %s\n", kiln_last_error_message());
        return 1;
    }
    worlds_of_their_own();
    four_threads_on_one_world();
    validity_from_a_callback();
    return check_summary("threads");
}

/* host_jobs: runs Kiln on a tiny pthread job system handed in through
 * KilnRuntimeDef's enqueue_task / finish_task callbacks (Box2D v3's interface), then
 * checks the result is bit-identical to Kiln's own pool.
 *
 * The job system: a mutex-protected queue of ranges, THREADS worker threads with
 * indices 1..THREADS, and finish_task, which runs queued ranges while it waits (so a
 * pass that calls kiln_parallel_for from inside a task cannot deadlock). The thread
 * that calls kiln_runtime_run_frame is worker 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"
#include "scene.h"

#define THREADS 3
#define MAX_RANGES 4096

typedef struct Task {
    KilnTaskFn fn;
    void *context;
    int remaining; /* ranges not yet finished, guarded by the pool mutex */
} Task;

typedef struct Range {
    Task *task;
    uint32_t begin, end;
} Range;

typedef struct Pool {
    pthread_mutex_t mutex;
    pthread_cond_t work;  /* a range was queued, or stop */
    pthread_cond_t done;  /* a range finished */
    Range queue[MAX_RANGES];
    int head, count;
    int stop;
    pthread_t threads[THREADS];
    unsigned long long tasks_enqueued;
} Pool;

static _Thread_local uint32_t worker_index = 0;

/* Pops one range (mutex held) and runs it (mutex released). Returns 0 if none. */
static int run_one(Pool *pool) {
    if (pool->count == 0) {
        return 0;
    }
    Range range = pool->queue[pool->head];
    pool->head = (pool->head + 1) % MAX_RANGES;
    pool->count--;
    pthread_mutex_unlock(&pool->mutex);
    range.task->fn(range.begin, range.end, worker_index, range.task->context);
    pthread_mutex_lock(&pool->mutex);
    range.task->remaining--;
    pthread_cond_broadcast(&pool->done);
    return 1;
}

typedef struct ThreadArg {
    Pool *pool;
    uint32_t index;
} ThreadArg;

static void *worker_main(void *arg) {
    ThreadArg *thread = (ThreadArg *)arg;
    Pool *pool = thread->pool;
    worker_index = thread->index;
    pthread_mutex_lock(&pool->mutex);
    while (!pool->stop) {
        if (!run_one(pool)) {
            pthread_cond_wait(&pool->work, &pool->mutex);
        }
    }
    pthread_mutex_unlock(&pool->mutex);
    return NULL;
}

static void *enqueue_task(KilnTaskFn fn, uint32_t item_count, uint32_t min_range, void *task_context,
                          void *user_context) {
    Pool *pool = (Pool *)user_context;
    uint32_t per = item_count / (THREADS * 4u) + 1u;
    if (per < min_range) {
        per = min_range;
    }
    Task *task = (Task *)malloc(sizeof(Task));
    if (task == NULL) { /* out of memory: run it inline, as the contract allows */
        fn(0, item_count, worker_index, task_context);
        return NULL;
    }
    task->fn = fn;
    task->context = task_context;
    task->remaining = 0;
    pthread_mutex_lock(&pool->mutex);
    pool->tasks_enqueued++;
    for (uint32_t begin = 0; begin < item_count; begin += per) {
        if (pool->count == MAX_RANGES) { /* queue full: run this range here */
            pthread_mutex_unlock(&pool->mutex);
            fn(begin, begin + per < item_count ? begin + per : item_count, worker_index, task_context);
            pthread_mutex_lock(&pool->mutex);
            continue;
        }
        Range *range = &pool->queue[(pool->head + pool->count) % MAX_RANGES];
        range->task = task;
        range->begin = begin;
        range->end = begin + per < item_count ? begin + per : item_count;
        pool->count++;
        task->remaining++;
    }
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->mutex);
    return task;
}

static void finish_task(void *user_task, void *user_context) {
    Pool *pool = (Pool *)user_context;
    Task *task = (Task *)user_task;
    pthread_mutex_lock(&pool->mutex);
    while (task->remaining > 0) {
        if (!run_one(pool)) {
            pthread_cond_wait(&pool->done, &pool->mutex);
        }
    }
    pthread_mutex_unlock(&pool->mutex);
    free(task);
}

static int run_scene(KilnRuntimeDef *def, Scene *scene, unsigned frames) {
    KilnRuntimeId runtime;
    KilnStatus status = kiln_runtime_create(def, &runtime);
    if (status != KILN_OK) {
        return scene_fail("kiln_runtime_create", status);
    }
    return scene_run(scene, runtime, frames);
}

int main(void) {
    if (kiln_check_linked_abi() != KILN_OK) {
        return scene_fail("kiln_check_linked_abi", KILN_ERROR_ABI_MISMATCH);
    }
    static Pool pool;
    pthread_mutex_init(&pool.mutex, NULL);
    pthread_cond_init(&pool.work, NULL);
    pthread_cond_init(&pool.done, NULL);
    ThreadArg args[THREADS];
    for (uint32_t i = 0; i < THREADS; ++i) {
        args[i].pool = &pool;
        args[i].index = i + 1;
        pthread_create(&pool.threads[i], NULL, worker_main, &args[i]);
    }

    static Scene on_host, on_pool;
    KilnRuntimeDef def = kiln_default_runtime_def();
    def.enqueue_task = enqueue_task;
    def.finish_task = finish_task;
    def.user_task_context = &pool;
    def.host_worker_count = THREADS + 1;
    printf("host job system (%d threads + caller):\n", THREADS);
    int failed = run_scene(&def, &on_host, 120);

    pthread_mutex_lock(&pool.mutex);
    pool.stop = 1;
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.mutex);
    for (int i = 0; i < THREADS; ++i) {
        pthread_join(pool.threads[i], NULL);
    }

    def = kiln_default_runtime_def();
    def.thread_count = 2;
    printf("Kiln's own pool (2 threads + caller):\n");
    failed |= run_scene(&def, &on_pool, 120);

    int same = memcmp(&on_host.energy, &on_pool.energy, sizeof(double)) == 0 &&
               memcmp(on_host.pos, on_pool.pos, sizeof(on_host.pos)) == 0;
    printf("host_jobs: %llu tasks through the host; energy %.6e (host) vs %.6e (pool): %s\n",
           pool.tasks_enqueued, on_host.energy, on_pool.energy, same ? "bit-identical" : "DIFFERENT");
    return failed || !same || pool.tasks_enqueued == 0;
}

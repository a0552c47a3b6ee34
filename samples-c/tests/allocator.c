/* Allocator hooks: installed first, they see every allocation Kiln makes; every
 * free matches an allocation of theirs; steady-state frames allocate nothing. */
#define _POSIX_C_SOURCE 200112L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "kiln.h"
#include "check.h"

#define MAX_LIVE 65536

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *live[MAX_LIVE];
static size_t live_count, allocations, frees, bad_frees, user_seen;

static void *hook_alloc(size_t size, size_t alignment, void *user) {
    void *p = NULL;
    if (user == (void *)&lock) {
        user_seen = 1;
    }
    if (posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *) : alignment, size ? size : 1) != 0) {
        return NULL;
    }
    pthread_mutex_lock(&lock);
    allocations++;
    if (live_count < MAX_LIVE) {
        live[live_count++] = p;
    }
    pthread_mutex_unlock(&lock);
    return p;
}

static void hook_free(void *p, size_t size, size_t alignment, void *user) {
    (void)size, (void)alignment, (void)user;
    pthread_mutex_lock(&lock);
    frees++;
    size_t i = 0;
    while (i < live_count && live[i] != p) {
        i++;
    }
    if (i == live_count) {
        bad_frees++;
    } else {
        live[i] = live[--live_count];
    }
    pthread_mutex_unlock(&lock);
    free(p);
}

static KilnStatus touch(const KilnPassContext *context, void *user) {
    (void)context, (void)user;
    return KILN_OK;
}

int main(void) {
    KilnAllocator hooks = {(uint32_t)sizeof(KilnAllocator), hook_alloc, hook_free, &lock};
    CHECK_STATUS(kiln_set_allocator(&hooks), KILN_OK);
    CHECK_STATUS(kiln_set_allocator(&hooks), KILN_ERROR_INVALID_STATE); /* only once */
    CHECK_STATUS(kiln_check_linked_abi(), KILN_OK);

    KilnRuntimeDef def = kiln_default_runtime_def();
    def.thread_count = 2;
    KilnRuntimeId rt;
    CHECK_STATUS(kiln_runtime_create(&def, &rt), KILN_OK);
    KilnResourceId r;
    CHECK_STATUS(kiln_runtime_add_resource(rt, "r", &r), KILN_OK);
    KilnPassDef pass = kiln_default_pass_def();
    KilnPassId id;
    const char *names[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; ++i) {
        pass.name = names[i];
        pass.run = touch;
        pass.reads = &r;
        pass.read_count = i % 2;
        pass.writes = &r;
        pass.write_count = 1 - i % 2;
        CHECK_STATUS(kiln_runtime_add_pass(rt, &pass, &id), KILN_OK);
    }
    for (int f = 0; f < 20; ++f) {
        CHECK_STATUS(kiln_runtime_run_frame(rt, 0.01f), KILN_OK);
    }
    pthread_mutex_lock(&lock);
    size_t before = allocations;
    pthread_mutex_unlock(&lock);
    for (int f = 0; f < 500; ++f) {
        CHECK_STATUS(kiln_runtime_run_frame(rt, 0.01f), KILN_OK);
    }
    pthread_mutex_lock(&lock);
    size_t steady = allocations - before;
    pthread_mutex_unlock(&lock);
    CHECK(steady == 0);
    CHECK_STATUS(kiln_runtime_destroy(rt), KILN_OK);

    CHECK(user_seen);
    CHECK(allocations > 10);
    CHECK(frees > 10);
    CHECK(bad_frees == 0);
    printf("allocator: %zu allocations, %zu frees through the hooks, %zu in 500 steady frames, %zu live after destroy\n",
           allocations, frees, steady, live_count);
    return check_summary("allocator");
}

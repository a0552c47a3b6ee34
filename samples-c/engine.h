/* engine: what the embedded samples share to play an engine that owns its Vulkan
 * instance, device, queue and command buffers (Kiln runs on them through
 * kiln_tracer_create_embedded): the objects any Vulkan renderer already has, a
 * validation messenger that counts messages, host-visible buffers with device
 * addresses, and a compute pipeline of the engine's own. */
#ifndef KILN_SAMPLE_ENGINE_H
#define KILN_SAMPLE_ENGINE_H
#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "kiln.h"

#define SLOTS 2

/* The engine's side: what any Vulkan renderer already has. */
struct engine {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkDevice device;
    uint32_t family;
    VkQueue queue;
    VkCommandPool pool;
    VkCommandBuffer cmd[SLOTS];
    VkFence fence[SLOTS];
    int messages;
    int debug_utils;
};

/* Instance (1.2, validation layer + debug utils when installed), the best device
 * with a compute queue, and the features Kiln's embedded mode documents; command
 * buffers and signalled fences for SLOTS frames. 0 on success. */
int engine_create(struct engine *e);

/* Waits for the device, then destroys what engine_create made. */
void engine_destroy(struct engine *e);

/* What kiln_tracer_create_embedded needs, from the engine's objects. */
KilnEmbeddedDef engine_embedded_def(const struct engine *e);

/* A host-visible, coherent buffer of `size` bytes for storage with a device address. */
struct engine_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *mapped;
    VkDeviceAddress address;
};

/* 0 on success. */
int engine_buffer_create(struct engine *e, VkDeviceSize size, struct engine_buffer *out);
void engine_buffer_destroy(struct engine *e, struct engine_buffer *b);

/* Waits for slot 0's previous submission and begins its command buffer. */
VkCommandBuffer engine_begin(struct engine *e);

/* Records a dispatch of `pipeline` over `count` invocations (workgroups of 64) with
 * `push_bytes` of push constants, then a barrier that makes its writes visible to
 * the host. */
void engine_dispatch(VkCommandBuffer cmd, VkPipeline pipeline, VkPipelineLayout layout, const void *push,
                     uint32_t push_bytes, uint32_t count);

/* Ends slot 0's command buffer, submits it and waits for it. 0 on success. */
int engine_submit_and_wait(struct engine *e);

/* A compute pipeline from the SPIR-V file at `path` (entry point "main") with
 * `push_bytes` of push constants and no descriptor sets. 0 on success. */
int engine_pipeline_create(struct engine *e, const char *path, uint32_t push_bytes, VkPipelineLayout *layout,
                           VkPipeline *pipeline);
#endif

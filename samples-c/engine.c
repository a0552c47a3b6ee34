/* engine: see engine.h. */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)severity, (void)types;
    struct engine *e = user;
    e->messages++;
    fprintf(stderr, "engine validation: %s\n", data->pMessage);
    return VK_FALSE;
}

static int has_layer(const char *name) {
    uint32_t count = 0;
    vkEnumerateInstanceLayerProperties(&count, NULL);
    VkLayerProperties *layers = calloc(count ? count : 1, sizeof *layers);
    vkEnumerateInstanceLayerProperties(&count, layers);
    int found = 0;
    for (uint32_t i = 0; i < count; i++) found |= strcmp(layers[i].layerName, name) == 0;
    free(layers);
    return found;
}

/* Kiln's own preference: discrete, integrated, virtual, then CPU (lavapipe). */
static int rank(VkPhysicalDeviceType type) {
    switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
    }
}

int engine_create(struct engine *e) {
    memset(e, 0, sizeof *e);
    int validation = has_layer("VK_LAYER_KHRONOS_validation");
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
    /* With the layer and KILN_GPU_SYNC_VALIDATION=1 (as for Kiln's own instance),
     * synchronisation validation too: hazards between Kiln's commands and the
     * engine's in one command buffer are reported. CTest sets it; the ASan build
     * does not, because the layer's synchronisation state leaks at exit. */
    const char *sync = getenv("KILN_GPU_SYNC_VALIDATION");
    int sync_validation = validation && sync && strcmp(sync, "1") == 0;
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                        .enabledValidationFeatureCount = 1,
                                        .pEnabledValidationFeatures = enables};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                 .pNext = sync_validation ? &features : NULL,
                                 .pApplicationInfo = &app,
                                 .enabledLayerCount = validation ? 1 : 0,
                                 .ppEnabledLayerNames = layers,
                                 .enabledExtensionCount = sync_validation ? 2 : 1,
                                 .ppEnabledExtensionNames = extensions};
    if (vkCreateInstance(&info, NULL, &e->instance) != VK_SUCCESS) {
        /* no debug utils: go on without labels or synchronisation validation */
        info.pNext = NULL, info.enabledExtensionCount = 0;
        if (vkCreateInstance(&info, NULL, &e->instance) != VK_SUCCESS) return 1;
    } else {
        e->debug_utils = 1;
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(e->instance, "vkCreateDebugUtilsMessengerEXT");
        VkDebugUtilsMessengerCreateInfoEXT m = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
            .messageSeverity =
                VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
            .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
            .pfnUserCallback = on_message,
            .pUserData = e};
        if (create) create(e->instance, &m, NULL, &e->messenger);
    }
    printf("engine instance: validation layer %s, debug utils %s\n",
           validation ? (e->debug_utils && sync_validation ? "on with synchronisation validation" : "on")
                      : "not installed",
           e->debug_utils ? "on" : "off");

    uint32_t count = 0;
    vkEnumeratePhysicalDevices(e->instance, &count, NULL);
    VkPhysicalDevice *devices = calloc(count ? count : 1, sizeof *devices);
    vkEnumeratePhysicalDevices(e->instance, &count, devices);
    int best = -1;
    for (uint32_t i = 0; i < count; i++) {
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(devices[i], &props);
        if (props.apiVersion < VK_API_VERSION_1_2) continue;
        if (best < 0 || rank(props.deviceType) > best) best = rank(props.deviceType), e->physical = devices[i];
    }
    free(devices);
    if (best < 0) return 1;

    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(e->physical, &families, NULL);
    VkQueueFamilyProperties *props = calloc(families ? families : 1, sizeof *props);
    vkGetPhysicalDeviceQueueFamilyProperties(e->physical, &families, props);
    e->family = UINT32_MAX;
    for (uint32_t i = 0; i < families && e->family == UINT32_MAX; i++)
        if (props[i].queueFlags & VK_QUEUE_COMPUTE_BIT) e->family = i;
    free(props);
    if (e->family == UINT32_MAX) return 1;

    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                     .queueFamilyIndex = e->family,
                                     .queueCount = 1,
                                     .pQueuePriorities = &priority};
    /* What KilnEmbeddedDef documents: these three Vulkan 1.2 features enabled. */
    VkPhysicalDeviceVulkan12Features v12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .bufferDeviceAddress = VK_TRUE,
                                            .vulkanMemoryModel = VK_TRUE,
                                            .vulkanMemoryModelDeviceScope = VK_TRUE};
    VkDeviceCreateInfo device = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                 .pNext = &v12,
                                 .queueCreateInfoCount = 1,
                                 .pQueueCreateInfos = &queue};
    if (vkCreateDevice(e->physical, &device, NULL, &e->device) != VK_SUCCESS) return 1;
    vkGetDeviceQueue(e->device, e->family, 0, &e->queue);
    VkCommandPoolCreateInfo pool = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = e->family};
    if (vkCreateCommandPool(e->device, &pool, NULL, &e->pool) != VK_SUCCESS) return 1;
    VkCommandBufferAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                         .commandPool = e->pool,
                                         .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                         .commandBufferCount = SLOTS};
    if (vkAllocateCommandBuffers(e->device, &alloc, e->cmd) != VK_SUCCESS) return 1;
    VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, .flags = VK_FENCE_CREATE_SIGNALED_BIT};
    for (int i = 0; i < SLOTS; i++)
        if (vkCreateFence(e->device, &fence, NULL, &e->fence[i]) != VK_SUCCESS) return 1;
    return 0;
}

void engine_destroy(struct engine *e) {
    if (e->device) {
        vkDeviceWaitIdle(e->device);
        for (int i = 0; i < SLOTS; i++)
            if (e->fence[i]) vkDestroyFence(e->device, e->fence[i], NULL);
        if (e->pool) vkDestroyCommandPool(e->device, e->pool, NULL);
        vkDestroyDevice(e->device, NULL);
    }
    if (e->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(e->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(e->instance, e->messenger, NULL);
    }
    if (e->instance) vkDestroyInstance(e->instance, NULL);
}

KilnEmbeddedDef engine_embedded_def(const struct engine *e) {
    KilnEmbeddedDef def = kiln_default_embedded_def();
    /* The double cast keeps -Wcast-function-type quiet: Vulkan's handle types are
     * opaque pointers, Kiln's are void pointers. */
    def.get_instance_proc_addr = (KilnGetInstanceProcAddr)(void (*)(void))vkGetInstanceProcAddr;
    def.instance = e->instance;
    def.physical_device = e->physical;
    def.device = e->device;
    def.queue_family = e->family;
    def.frames_in_flight = SLOTS;
    def.debug_utils = e->debug_utils != 0;
    def.validation = true;
    return def;
}

int engine_buffer_create(struct engine *e, VkDeviceSize size, struct engine_buffer *out) {
    memset(out, 0, sizeof *out);
    VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                               .size = size,
                               .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                        VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT,
                               .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    if (vkCreateBuffer(e->device, &info, NULL, &out->buffer) != VK_SUCCESS) return 1;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(e->device, out->buffer, &req);
    VkPhysicalDeviceMemoryProperties props;
    vkGetPhysicalDeviceMemoryProperties(e->physical, &props);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < props.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) && (props.memoryTypes[i].propertyFlags & want) == want) type = i;
    if (type == UINT32_MAX) return 1;
    VkMemoryAllocateFlagsInfo flags = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                       .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                  .pNext = &flags,
                                  .allocationSize = req.size,
                                  .memoryTypeIndex = type};
    if (vkAllocateMemory(e->device, &alloc, NULL, &out->memory) != VK_SUCCESS) return 1;
    if (vkBindBufferMemory(e->device, out->buffer, out->memory, 0) != VK_SUCCESS) return 1;
    if (vkMapMemory(e->device, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped) != VK_SUCCESS) return 1;
    VkBufferDeviceAddressInfo address = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = out->buffer};
    out->address = vkGetBufferDeviceAddress(e->device, &address);
    return 0;
}

void engine_buffer_destroy(struct engine *e, struct engine_buffer *b) {
    if (b->buffer) vkDestroyBuffer(e->device, b->buffer, NULL);
    if (b->memory) vkFreeMemory(e->device, b->memory, NULL);
    memset(b, 0, sizeof *b);
}

VkCommandBuffer engine_begin(struct engine *e) {
    vkWaitForFences(e->device, 1, &e->fence[0], VK_TRUE, UINT64_MAX);
    vkResetFences(e->device, 1, &e->fence[0]);
    vkResetCommandBuffer(e->cmd[0], 0);
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    vkBeginCommandBuffer(e->cmd[0], &begin);
    return e->cmd[0];
}

void engine_dispatch(VkCommandBuffer cmd, VkPipeline pipeline, VkPipelineLayout layout, const void *push,
                     uint32_t push_bytes, uint32_t count) {
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
    vkCmdDispatch(cmd, (count + 63) / 64, 1, 1);
    VkMemoryBarrier to_host = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                               .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                               .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0,
                         NULL, 0, NULL);
}

int engine_submit_and_wait(struct engine *e) {
    vkEndCommandBuffer(e->cmd[0]);
    VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                           .pCommandBuffers = &e->cmd[0]};
    if (vkQueueSubmit(e->queue, 1, &submit, e->fence[0]) != VK_SUCCESS) return 1;
    return vkWaitForFences(e->device, 1, &e->fence[0], VK_TRUE, UINT64_MAX) != VK_SUCCESS;
}

int engine_pipeline_create(struct engine *e, const char *path, uint32_t push_bytes, VkPipelineLayout *layout,
                           VkPipeline *pipeline) {
    *layout = VK_NULL_HANDLE, *pipeline = VK_NULL_HANDLE;
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "engine: cannot open %s\n", path);
        return 1;
    }
    fseek(file, 0, SEEK_END);
    long bytes = ftell(file);
    fseek(file, 0, SEEK_SET);
    uint32_t *code = bytes > 0 && bytes % 4 == 0 ? malloc((size_t)bytes) : NULL;
    size_t read = code ? fread(code, 1, (size_t)bytes, file) : 0;
    fclose(file);
    if (!code || read != (size_t)bytes) {
        free(code);
        fprintf(stderr, "engine: %s is not SPIR-V\n", path);
        return 1;
    }
    VkShaderModuleCreateInfo module_info = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                            .codeSize = (size_t)bytes,
                                            .pCode = code};
    VkShaderModule module;
    VkResult made = vkCreateShaderModule(e->device, &module_info, NULL, &module);
    free(code);
    if (made != VK_SUCCESS) return 1;
    VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = push_bytes};
    VkPipelineLayoutCreateInfo layout_info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                              .pushConstantRangeCount = 1,
                                              .pPushConstantRanges = &range};
    int status = 1;
    if (vkCreatePipelineLayout(e->device, &layout_info, NULL, layout) == VK_SUCCESS) {
        VkComputePipelineCreateInfo info = {
            .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
            .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                      .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                      .module = module,
                      .pName = "main"},
            .layout = *layout};
        status = vkCreateComputePipelines(e->device, VK_NULL_HANDLE, 1, &info, NULL, pipeline) != VK_SUCCESS;
    }
    vkDestroyShaderModule(e->device, module, NULL);
    return status;
}

/* Linked into the sanitizer builds only (make SANITIZE=1): keeps Mesa's lavapipe
 * mapped until the process exits.
 *
 * On AMD Zen processors lavapipe's CPU detection (Mesa's util_cpu_detect) stores the
 * L3 cache affinity masks in a global it never frees. The Vulkan loader unloads the
 * driver when the last instance is destroyed; the masks then lose their only
 * reference and LeakSanitizer reports 128 bytes from "<unknown module>". Loading
 * the driver once more with RTLD_NODELETE keeps its globals where the leak check
 * can see them, so leaks of Kiln and of the samples are still reported and the
 * driver's own bookkeeping is not. Without lavapipe it does nothing. */
#include <dlfcn.h>

__attribute__((constructor)) static void kiln_keep_lavapipe_mapped(void) {
    (void)dlopen("libvulkan_lvp.so", RTLD_NOW | RTLD_NODELETE);
}

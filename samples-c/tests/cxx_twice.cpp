// The header in a C++ translation unit, included twice: include guard and C linkage.
#include "kiln.h"
#include "kiln.h"

#include <cstdio>

int main() {
    static_assert(sizeof(KilnRuntimeId) == 8, "handles are two uint32_t");
    if (kiln_check_linked_abi() != KILN_OK) {
        std::fprintf(stderr, "ABI mismatch: %s\n", kiln_last_error_message());
        return 1;
    }
    KilnRuntimeDef def = kiln_default_runtime_def();
    def.thread_count = 0;
    KilnRuntimeId runtime{};
    if (kiln_runtime_create(&def, &runtime) != KILN_OK || kiln_runtime_destroy(runtime) != KILN_OK) {
        return 1;
    }
    std::printf("cxx_twice: 1 passed, 0 failed\n");
    return 0;
}

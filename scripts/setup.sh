#!/usr/bin/env bash
# Installs what the build and tests need on a fresh Debian/Ubuntu machine: system
# packages through apt (as root, or with sudo), and checks for the Rust toolchain.
# Sourced by scripts/demo.sh and scripts/test.sh.
set -euo pipefail

kiln_missing=()
command -v cc >/dev/null 2>&1 || kiln_missing+=(gcc libc6-dev)
command -v c++ >/dev/null 2>&1 || kiln_missing+=(g++)
command -v make >/dev/null 2>&1 || kiln_missing+=(make)
command -v cmake >/dev/null 2>&1 || kiln_missing+=(cmake)
command -v pkg-config >/dev/null 2>&1 || kiln_missing+=(pkg-config)
command -v nm >/dev/null 2>&1 || kiln_missing+=(binutils)
# Vulkan: the loader, Mesa's lavapipe (the software device used when there is no GPU),
# the Khronos validation layer, and glslc + spirv-val for the shader freshness check.
[ -e /usr/lib/x86_64-linux-gnu/libvulkan.so.1 ] || ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1 ' \
    || kiln_missing+=(libvulkan1)
ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || kiln_missing+=(mesa-vulkan-drivers)
ls /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json >/dev/null 2>&1 \
    || kiln_missing+=(vulkan-validationlayers)
# libvulkan-dev: the embedded sample creates its own Vulkan device, as an engine does.
[ -e /usr/include/vulkan/vulkan.h ] || kiln_missing+=(libvulkan-dev)
# libpng: the C samples write the rendered images as PNG.
[ -e /usr/include/png.h ] || kiln_missing+=(libpng-dev)
command -v glslc >/dev/null 2>&1 || kiln_missing+=(glslc)
command -v spirv-val >/dev/null 2>&1 || kiln_missing+=(spirv-tools)
if ((${#kiln_missing[@]})); then
    echo "installing: ${kiln_missing[*]}"
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${kiln_missing[@]}" >/dev/null
    elif command -v sudo >/dev/null 2>&1; then
        sudo apt-get update -qq
        sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${kiln_missing[@]}" >/dev/null
    else
        echo "missing packages: ${kiln_missing[*]} (run as root or install them with apt)" >&2
        exit 1
    fi
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo not found: install the Rust toolchain (https://rustup.rs) and retry" >&2
    exit 1
fi

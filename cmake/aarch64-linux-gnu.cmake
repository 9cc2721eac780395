# SPDX-License-Identifier: BSD-3-Clause
# Cross build for arm64 (a BlueField-3's Arm cores) on a Debian 12 x86-64 box: Debian's
# aarch64-linux-gnu GCC with its own C and C++ libraries, DPDK and the other libraries
# from Debian's arm64 packages unpacked into a sysroot (not installed: libdpdk-dev:arm64
# cannot be installed beside libdpdk-dev:amd64, rdma-core and libevent-dev are not
# Multi-Arch), tests run under qemu-user. scripts/cross-arm64.sh makes the sysroot and
# runs it all:
#
#   cmake -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DDPUMESH_ARM64_SYSROOT=/path/to/sysroot
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# the sysroot: a cache variable, or the environment (try_compile() projects get it too)
if(NOT DPUMESH_ARM64_SYSROOT AND DEFINED ENV{DPUMESH_ARM64_SYSROOT})
  set(DPUMESH_ARM64_SYSROOT $ENV{DPUMESH_ARM64_SYSROOT})
endif()
if(NOT DPUMESH_ARM64_SYSROOT OR NOT EXISTS ${DPUMESH_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu)
  message(FATAL_ERROR "DPUMESH_ARM64_SYSROOT (\"${DPUMESH_ARM64_SYSROOT}\") is not a sysroot "
    "of Debian arm64 packages: scripts/cross-arm64.sh makes one")
endif()
set(ENV{DPUMESH_ARM64_SYSROOT} ${DPUMESH_ARM64_SYSROOT})
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES DPUMESH_ARM64_SYSROOT)
set(sr ${DPUMESH_ARM64_SYSROOT})

# libraries, headers and CMake packages from the sysroot (and the cross compiler's own);
# programs (python3, bash, riscv64-unknown-elf-gcc) are the build machine's
set(CMAKE_FIND_ROOT_PATH ${sr} /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config reads the sysroot's .pc files and prefixes their paths with it
set(ENV{PKG_CONFIG_LIBDIR} ${sr}/usr/lib/aarch64-linux-gnu/pkgconfig:${sr}/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} ${sr})
# the multiarch headers (openssl/opensslconf.h), which the cross compiler looks for only
# under its own tree
set(CMAKE_C_FLAGS_INIT "-isystem ${sr}/usr/include/aarch64-linux-gnu")
set(CMAKE_CXX_FLAGS_INIT "-isystem ${sr}/usr/include/aarch64-linux-gnu")
# the libraries' own dependencies (librte_eal.so needs libnuma.so.1, ...) at link time
foreach(kind EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT
    "-Wl,-rpath-link,${sr}/usr/lib/aarch64-linux-gnu:${sr}/lib/aarch64-linux-gnu")
endforeach()

# CTest runs each test program under qemu-user, with the sysroot's loader and libraries
find_program(DPUMESH_QEMU_AARCH64 qemu-aarch64)
if(DPUMESH_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${DPUMESH_QEMU_AARCH64} -L ${sr})
endif()

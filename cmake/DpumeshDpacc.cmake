# SPDX-License-Identifier: BSD-3-Clause
# The dpacc rule: the DPA kernels and their DOCA device mapping compiled by NVIDIA's dpacc
# into the `dpumesh_dpa` DPA program (a host static library holding the device executable
# and the `struct doca_dpa_app *dpumesh_dpa` symbol the runtime passes to doca_dpa_set_app).
# Used by dpa_kernels/CMakeLists.txt with -DDPUMESH_DOCA=ON, and by the dpacc_rule test with
# a fake dpacc that records its arguments (no DOCA here: docs/doca.md).
#
#   include(DpumeshDpacc)
#   dpumesh_dpa_app(dpumesh_dpa_app ROOT ${PROJECT_SOURCE_DIR} DPACC ${DPUMESH_DPACC})
#   target_link_libraries(dpumesh PRIVATE dpumesh_dpa_app)
#
# dpacc's options are from the DPACC compiler guide of DOCA 2.9 / 2.10: inputs, -hostcc,
# -mcpu, -o, --app-name, -flto, -device-libs; -devicecc-options (the device compiler's
# include paths and defines) is UNVERIFIED in spelling (docs/doca.md).

# The sources and include directories of the DPA program, relative to the source tree.
set(DPUMESH_DPA_APP_SOURCES
  dpa_kernels/tx_kernel.c dpa_kernels/rx_kernel.c dpa_kernels/dispatch.c
  dpa_kernels/doca/dpa_dev_doca.c)
set(DPUMESH_DPA_APP_INCLUDES
  dpa_kernels/include dpa_kernels/doca lib/abi/include lib/podlayout/include lib/ring/include)
set(DPUMESH_DPA_APP_NAME dpumesh_dpa)

# dpumesh_dpacc_args(<out-var> ROOT <source tree> OUTPUT <library> HOSTCC <host compiler>)
# The dpacc command line (without the dpacc program itself).
function(dpumesh_dpacc_args out)
  cmake_parse_arguments(A "" "ROOT;OUTPUT;HOSTCC" "" ${ARGN})
  foreach(req ROOT OUTPUT HOSTCC)
    if(NOT A_${req})
      message(FATAL_ERROR "dpumesh_dpacc_args: ${req} is required")
    endif()
  endforeach()
  set(args "")
  foreach(src ${DPUMESH_DPA_APP_SOURCES})
    list(APPEND args ${A_ROOT}/${src})
  endforeach()
  set(device_opts "-DDPUMESH_DOCA_REAL -DDOCA_ALLOW_EXPERIMENTAL_API -std=c11")
  foreach(inc ${DPUMESH_DPA_APP_INCLUDES})
    string(APPEND device_opts " -I${A_ROOT}/${inc}")
  endforeach()
  list(APPEND args
    -hostcc=${A_HOSTCC}
    -mcpu=nv-dpa-bf3
    --app-name=${DPUMESH_DPA_APP_NAME}
    -flto
    "-devicecc-options=${device_opts}"
    "-device-libs=-ldoca_dpa_dev -ldoca_dpa_dev_comm"
    -o ${A_OUTPUT})
  set(${out} ${args} PARENT_SCOPE)
endfunction()

# dpumesh_dpa_app(<target> ROOT <source tree> DPACC <dpacc program> [HOSTCC <cc>])
# Defines <target>, an INTERFACE library that links the DPA program dpacc builds into
# ${CMAKE_CURRENT_BINARY_DIR}/lib<app name>.a (rebuilt when a source or header changes).
function(dpumesh_dpa_app target)
  cmake_parse_arguments(A "" "ROOT;DPACC;HOSTCC" "" ${ARGN})
  if(NOT A_DPACC)
    message(FATAL_ERROR "dpumesh_dpa_app: no dpacc (install NVIDIA's dpacc package, or set DPUMESH_DPACC)")
  endif()
  if(NOT A_HOSTCC)
    set(A_HOSTCC ${CMAKE_C_COMPILER})
  endif()
  set(lib ${CMAKE_CURRENT_BINARY_DIR}/lib${DPUMESH_DPA_APP_NAME}.a)
  dpumesh_dpacc_args(args ROOT ${A_ROOT} OUTPUT ${lib} HOSTCC ${A_HOSTCC})
  set(deps "")
  foreach(src ${DPUMESH_DPA_APP_SOURCES})
    list(APPEND deps ${A_ROOT}/${src})
  endforeach()
  foreach(inc ${DPUMESH_DPA_APP_INCLUDES})
    file(GLOB hdrs ${A_ROOT}/${inc}/*.h ${A_ROOT}/${inc}/*/*.h ${A_ROOT}/${inc}/*/*/*.h)
    list(APPEND deps ${hdrs})
  endforeach()
  add_custom_command(OUTPUT ${lib}
    COMMAND ${A_DPACC} ${args}
    DEPENDS ${deps}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
    COMMENT "dpacc: DPA program ${DPUMESH_DPA_APP_NAME} (kernels + DOCA device mapping)"
    VERBATIM)
  add_custom_target(${target}_build DEPENDS ${lib})
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_build)
  target_link_libraries(${target} INTERFACE ${lib})
endfunction()

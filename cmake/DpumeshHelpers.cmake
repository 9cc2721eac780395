# SPDX-License-Identifier: BSD-3-Clause
# One helper for every library, program and test, so each folder's CMakeLists.txt stays short.
#
#   dpumesh_library(NAME name SRCS ... [HDRS_DIR dir] [DEPS ...] [C])
#     -> target dpumesh_<name>, alias dpumesh::<name>; public include dir <folder>/include
#   dpumesh_program(NAME name SRCS ... DEPS ...)
#   dpumesh_test(NAME name SRCS ... DEPS ... LABELS unit|integration|e2e [TIMEOUT s])

function(dpumesh_library)
  cmake_parse_arguments(A "INTERFACE" "NAME" "SRCS;DEPS;PRIVATE_DEPS" ${ARGN})
  set(t dpumesh_${A_NAME})
  if(A_INTERFACE)
    add_library(${t} INTERFACE)
    target_include_directories(${t} INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}/include)
    target_link_libraries(${t} INTERFACE ${A_DEPS})
  else()
    add_library(${t} STATIC ${A_SRCS})
    target_include_directories(${t} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
                                       PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    target_link_libraries(${t} PUBLIC ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS})
    set_target_properties(${t} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  endif()
  add_library(dpumesh::${A_NAME} ALIAS ${t})
endfunction()

function(dpumesh_program)
  cmake_parse_arguments(A "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS})
  set_target_properties(${A_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
endfunction()

function(dpumesh_test)
  cmake_parse_arguments(A "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${A_NAME} PRIVATE
    DPUMESH_SOURCE_DIR="${PROJECT_SOURCE_DIR}" DPUMESH_BINARY_DIR="${PROJECT_BINARY_DIR}")
  set_target_properties(${A_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 120)
  endif()
  # One CTest entry per test program; gtest prints each case, CTest prints the summary.
  add_test(NAME ${A_NAME} COMMAND ${A_NAME} --gtest_color=no)
  set_tests_properties(${A_NAME} PROPERTIES LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT})
endfunction()

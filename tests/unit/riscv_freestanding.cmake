# SPDX-License-Identifier: BSD-3-Clause
# Compiles SRC freestanding for RISC-V (as for the DPA) and fails if the object needs any
# symbol from outside (libc is absent there). Run by CTest: cmake -DCC= -DNM= -DSRC= -DOUT=
# -DINCLUDES= -P riscv_freestanding.cmake
set(inc_flags)
foreach(d ${INCLUDES})
  list(APPEND inc_flags -I${d})
endforeach()
foreach(opt -O2 -O0 -Os)
  execute_process(
    COMMAND ${CC} -std=c11 -ffreestanding -nostdlib -Werror -Wall -Wextra ${opt}
      ${inc_flags} -c ${SRC} -o ${OUT}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CC} ${opt} failed (${rc}):\n${out}${err}")
  endif()
  execute_process(COMMAND ${NM} -u ${OUT} RESULT_VARIABLE rc OUTPUT_VARIABLE undef)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${OUT}")
  endif()
  if(NOT undef STREQUAL "")
    message(FATAL_ERROR "freestanding object (${opt}) needs outside symbols:\n${undef}")
  endif()
  message(STATUS "${opt}: ${SRC} builds freestanding for RISC-V, no outside symbols")
endforeach()

# SPDX-License-Identifier: BSD-3-Clause
# Compiles every kernel source freestanding for RISC-V (-O2 and -Os) and fails if an object
# needs a symbol that is neither defined by the kernels nor part of dpa_dev.h's runtime API
# (dpa_* functions): no libc, no compiler-emitted memcpy/memset. With -DALLOW=<regex> the
# external symbols allowed are those matching it instead (the DOCA mapping's check: only
# doca_dpa_dev_*, dpacc intrinsics and the security-core calls not mapped yet).
file(MAKE_DIRECTORY ${OUT})
foreach(opt -O2 -Os)
  set(objs "")
  foreach(src ${SRCS})
    get_filename_component(n ${src} NAME_WE)
    set(obj ${OUT}/${n}${opt}.o)
    execute_process(COMMAND ${CC} -std=c11 -ffreestanding -nostdlib -fno-builtin
        -march=rv64imac -mabi=lp64 -Wall -Wextra -Werror ${opt} -I${INC1} -I${INC2} ${EXTRA_FLAGS}
        -c ${src} -o ${obj}
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "riscv build of ${src} (${opt}) failed:\n${out}${err}")
    endif()
    list(APPEND objs ${obj})
  endforeach()
  string(REPLACE "gcc" "nm" NM ${CC})
  execute_process(COMMAND ${NM} -u ${objs} OUTPUT_VARIABLE undef)
  execute_process(COMMAND ${NM} --defined-only ${objs} OUTPUT_VARIABLE defined)
  string(REGEX MATCHALL "U [A-Za-z_][A-Za-z0-9_]*" refs "${undef}")
  foreach(r ${refs})
    string(SUBSTRING "${r}" 2 -1 sym)
    if(NOT ALLOW)
      set(ALLOW "^dpa_")
    endif()
    if(sym MATCHES "${ALLOW}" AND NOT defined MATCHES " T ${sym}\n")
      continue() # runtime API, provided by the DPA runtime (or DOCA)
    endif()
    if(NOT defined MATCHES " T ${sym}\n")
      message(FATAL_ERROR "freestanding kernels (${opt}) need external symbol ${sym}")
    endif()
  endforeach()
  message(STATUS "kernels build freestanding for RISC-V (${opt}); external symbols: ${ALLOW} only")
endforeach()

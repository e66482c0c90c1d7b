# sluice_bpf_object(<name> <source.bpf.c> [BENCH_ONLY] [DEFINES D...] [HEADERS H...])
#
# BENCH_ONLY: not built by default (scripts/bench.sh builds it by name): the
# build variants only the benchmarks load, which no test needs.
# HEADERS: headers outside the source's folder that it includes (its own
# folder's are found), so that the object is rebuilt when they change.
#
# clang -target bpf -> <name>.bpf.o -> bpftool gen skeleton -> <name>.skel.h,
# exposed as the INTERFACE target <name>_skel that C++ links (it carries the
# include directory of the generated header and libbpf). The object itself is
# installed next to nothing: the skeleton embeds it.
find_program(BPF_CLANG NAMES clang clang-16 clang-15 clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBBPF REQUIRED IMPORTED_TARGET libbpf)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|amd64")
  set(BPF_TARGET_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(BPF_TARGET_ARCH arm64)
else()
  set(BPF_TARGET_ARCH ${CMAKE_SYSTEM_PROCESSOR})
endif()

# The multiarch include directory carries asm/types.h for linux/types.h.
execute_process(COMMAND ${CMAKE_C_COMPILER} -print-multiarch
                OUTPUT_VARIABLE BPF_MULTIARCH OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET)
if(NOT BPF_MULTIARCH)
  # clang has no -print-multiarch (the fuzz build's C compiler): CMake's own
  # detection gives the same triplet on Debian.
  set(BPF_MULTIARCH ${CMAKE_LIBRARY_ARCHITECTURE})
endif()

function(sluice_bpf_object name source)
  cmake_parse_arguments(ARG "BENCH_ONLY" "" "DEFINES;HEADERS" ${ARGN})
  set(obj ${CMAKE_CURRENT_BINARY_DIR}/${name}.bpf.o)
  set(skel_dir ${CMAKE_CURRENT_BINARY_DIR}/skel)
  set(skel ${skel_dir}/${name}.skel.h)
  set(defs)
  foreach(d IN LISTS ARG_DEFINES)
    list(APPEND defs -D${d})
  endforeach()
  get_filename_component(src_abs ${source} ABSOLUTE)
  get_filename_component(src_dir ${src_abs} DIRECTORY)
  file(GLOB bpf_headers ${src_dir}/*.h)
  add_custom_command(
    OUTPUT ${obj}
    # -mcpu=v3: BPF atomics (compare-and-swap) and 32-bit jumps.
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_${BPF_TARGET_ARCH}
            -Wall -Werror ${defs}
            -I${src_dir} -I/usr/include/${BPF_MULTIARCH}
            -c ${src_abs} -o ${obj}
    DEPENDS ${src_abs} ${bpf_headers} ${ARG_HEADERS}
    COMMENT "BPF ${name}.bpf.o"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${skel_dir}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name} > ${skel}
    DEPENDS ${obj}
    COMMENT "BPF skeleton ${name}.skel.h"
    VERBATIM)
  if(ARG_BENCH_ONLY)
    add_custom_target(${name}_skel_gen DEPENDS ${skel} ${obj})
  else()
    add_custom_target(${name}_skel_gen ALL DEPENDS ${skel} ${obj})
  endif()
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${skel_dir} ${src_dir})
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF)
  set_property(TARGET ${name}_skel PROPERTY BPF_OBJECT ${obj})
endfunction()

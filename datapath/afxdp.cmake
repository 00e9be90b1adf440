# AF_XDP port (kind "afxdp"), included by datapath/CMakeLists.txt after it
# defines metaroce_datapath. Built when pkg-config found libxdp and libbpf and
# clang can compile the XDP program; otherwise says why, at configure time.
#
# The XDP program (src/afxdp/metaroce_xdp.bpf.c) is compiled with
# `clang -O2 -g -target bpf`, stripped of DWARF (BTF is kept) when llvm-strip
# is around, and embedded into the library as a byte array, so binaries need
# no object file at run time.
#
# Results for other directories (tests/datapath/afxdp.cmake reads them):
#   global property METAROCE_AFXDP_BUILT   TRUE or FALSE
#   global property METAROCE_AFXDP_REASON  why not, when FALSE
set(_mr_afxdp_dir "${CMAKE_CURRENT_LIST_DIR}/src/afxdp")
set(_mr_afxdp_reason "")

if(NOT DEFINED LIBXDP_FOUND OR NOT DEFINED LIBBPF_FOUND)
  # The top level normally did this; repeat it so the fragment stands alone.
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(LIBXDP IMPORTED_TARGET GLOBAL libxdp)
    pkg_check_modules(LIBBPF IMPORTED_TARGET GLOBAL libbpf)
  endif()
endif()

if(NOT TARGET metaroce_datapath)
  set(_mr_afxdp_reason "target metaroce_datapath is not defined before afxdp.cmake")
elseif(NOT LIBXDP_FOUND OR NOT TARGET PkgConfig::LIBXDP)
  set(_mr_afxdp_reason "libxdp not found by pkg-config (install libxdp-dev)")
elseif(NOT LIBBPF_FOUND OR NOT TARGET PkgConfig::LIBBPF)
  set(_mr_afxdp_reason "libbpf not found by pkg-config (install libbpf-dev)")
else()
  find_program(METAROCE_BPF_CLANG NAMES clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14
    DOC "clang that compiles the AF_XDP port's XDP program (-target bpf)")
  find_file(METAROCE_BPF_HELPERS_H bpf/bpf_helpers.h HINTS ${LIBBPF_INCLUDE_DIRS}
    DOC "libbpf's bpf_helpers.h, included by the XDP program")
  if(NOT METAROCE_BPF_CLANG)
    set(_mr_afxdp_reason "clang not found (needed to compile the XDP program; install clang)")
  elseif(NOT METAROCE_BPF_HELPERS_H)
    set(_mr_afxdp_reason "bpf/bpf_helpers.h not found (install libbpf-dev)")
  endif()
endif()

if(_mr_afxdp_reason)
  message(STATUS "metaroce: AF_XDP port not built: ${_mr_afxdp_reason}")
  set_property(GLOBAL PROPERTY METAROCE_AFXDP_BUILT FALSE)
  set_property(GLOBAL PROPERTY METAROCE_AFXDP_REASON "${_mr_afxdp_reason}")
  return()
endif()

find_program(METAROCE_BPF_STRIP NAMES llvm-strip llvm-strip-19 llvm-strip-18 llvm-strip-17 llvm-strip-16
  llvm-strip-15 llvm-strip-14 DOC "strips DWARF from the XDP object before it is embedded (optional)")

# Include paths for the BPF compile: libbpf's headers, and on multiarch
# systems (Debian) the directory holding <asm/types.h>, which -target bpf
# does not search by itself.
set(_mr_bpf_includes "")
foreach(_dir IN LISTS LIBBPF_INCLUDE_DIRS LIBXDP_INCLUDE_DIRS)
  list(APPEND _mr_bpf_includes "-I${_dir}")
endforeach()
if(CMAKE_LIBRARY_ARCHITECTURE AND EXISTS "/usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/asm")
  list(APPEND _mr_bpf_includes "-I/usr/include/${CMAKE_LIBRARY_ARCHITECTURE}")
endif()

set(_mr_bpf_src "${_mr_afxdp_dir}/metaroce_xdp.bpf.c")
set(_mr_bpf_out "${CMAKE_CURRENT_BINARY_DIR}/afxdp")
set(_mr_bpf_obj "${_mr_bpf_out}/metaroce_xdp.bpf.o")
set(_mr_bpf_cc "${_mr_bpf_out}/metaroce_xdp_object.cc")
set(_mr_bpf_strip_cmd "")
if(METAROCE_BPF_STRIP)
  set(_mr_bpf_strip_cmd COMMAND "${METAROCE_BPF_STRIP}" -g "${_mr_bpf_obj}")
endif()
add_custom_command(
  OUTPUT "${_mr_bpf_obj}"
  COMMAND "${CMAKE_COMMAND}" -E make_directory "${_mr_bpf_out}"
  COMMAND "${METAROCE_BPF_CLANG}" -O2 -g -target bpf -Wall -Werror ${_mr_bpf_includes}
          -c "${_mr_bpf_src}" -o "${_mr_bpf_obj}"
  ${_mr_bpf_strip_cmd}
  DEPENDS "${_mr_bpf_src}"
  COMMENT "Compiling XDP program metaroce_xdp.bpf.c (clang -target bpf)"
  VERBATIM)
add_custom_command(
  OUTPUT "${_mr_bpf_cc}"
  COMMAND "${CMAKE_COMMAND}" "-DINPUT=${_mr_bpf_obj}" "-DOUTPUT=${_mr_bpf_cc}"
          -P "${_mr_afxdp_dir}/embed_object.cmake"
  DEPENDS "${_mr_bpf_obj}" "${_mr_afxdp_dir}/embed_object.cmake"
  COMMENT "Embedding metaroce_xdp.bpf.o into metaroce_datapath"
  VERBATIM)

target_sources(metaroce_datapath PRIVATE
  "${_mr_afxdp_dir}/afxdp_port.cc"
  "${_mr_afxdp_dir}/xdp_program.cc"
  "${_mr_bpf_cc}")
# The generated source includes xdp_object.h from the source tree.
set_source_files_properties("${_mr_bpf_cc}" PROPERTIES INCLUDE_DIRECTORIES "${_mr_afxdp_dir}")
target_link_libraries(metaroce_datapath PRIVATE PkgConfig::LIBXDP PkgConfig::LIBBPF)
target_compile_definitions(metaroce_datapath PUBLIC METAROCE_HAVE_AFXDP=1)

message(STATUS "metaroce: AF_XDP port built (libxdp ${LIBXDP_VERSION}, libbpf ${LIBBPF_VERSION}, "
               "XDP program compiled by ${METAROCE_BPF_CLANG})")
set_property(GLOBAL PROPERTY METAROCE_AFXDP_BUILT TRUE)
set_property(GLOBAL PROPERTY METAROCE_AFXDP_REASON "")

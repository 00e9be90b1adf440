# Build-time helper (cmake -P): writes a C++ source holding the bytes of the
# compiled XDP object, so libmetaroce_datapath carries its own program and
# binaries stay relocatable (no object file to install or find at run time).
#
#   cmake -DINPUT=<file.o> -DOUTPUT=<file.cc> -P embed_object.cmake
#
# The generated file defines metaroce::datapath::afxdp::kXdpObject and
# kXdpObjectSize, declared in xdp_object.h.
if(NOT INPUT OR NOT OUTPUT)
  message(FATAL_ERROR "embed_object.cmake: pass -DINPUT=<object> -DOUTPUT=<source>")
endif()
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR size "${hex_len} / 2")
if(size EQUAL 0)
  message(FATAL_ERROR "embed_object.cmake: ${INPUT} is empty")
endif()
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# 16 bytes a line (CMake regexes have no {n} repetition).
set(b "0x[0-9a-f][0-9a-f],")
string(REGEX REPLACE "(${b}${b}${b}${b}${b}${b}${b}${b}${b}${b}${b}${b}${b}${b}${b}${b})" "\\1\n  " bytes "${bytes}")
get_filename_component(name "${INPUT}" NAME)
set(text "// Generated at build time by datapath/src/afxdp/embed_object.cmake from ${name}.
// Do not edit.
#include \"xdp_object.h\"

namespace metaroce::datapath::afxdp {

alignas(8) extern const unsigned char kXdpObject[${size}] = {
  ${bytes}
};
extern const size_t kXdpObjectSize = ${size};

}  // namespace metaroce::datapath::afxdp
")
# Rewrite only on change, so an unchanged program does not relink everything.
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE "${OUTPUT}" "${text}")

// The compiled XDP program (metaroce_xdp.bpf.c), embedded into the library at
// build time by embed_object.cmake; the definition is a generated source.
#pragma once

#include <cstddef>

namespace metaroce::datapath::afxdp {

extern const unsigned char kXdpObject[];  // an ELF BPF object file
extern const size_t kXdpObjectSize;

}  // namespace metaroce::datapath::afxdp

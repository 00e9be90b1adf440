# DPDK port backend (PortConfig::kind "dpdk"), included by datapath/CMakeLists.txt
# after metaroce_datapath is defined. Built only when the top level found libdpdk
# (pkg_check_modules(DPDK IMPORTED_TARGET libdpdk)).
#
# The DPDK sources are an object library of their own, so DPDK's compile flags
# (-include rte_config.h, -march=..., its include directories, as SYSTEM so that
# its headers' -Wpedantic warnings stay quiet) apply to these two files only;
# metaroce_datapath gets the objects and DPDK's libraries, not its flags.
if(DPDK_FOUND)
  add_library(metaroce_datapath_dpdk OBJECT
    ${CMAKE_CURRENT_LIST_DIR}/src/dpdk/eal.cc          # process-wide EAL init/cleanup (control plane)
    ${CMAKE_CURRENT_LIST_DIR}/src/dpdk/dpdk_port.cc)   # per-port set-up and the per-burst datapath
  target_include_directories(metaroce_datapath_dpdk PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/include ${CMAKE_CURRENT_LIST_DIR}/src)
  target_link_libraries(metaroce_datapath_dpdk PRIVATE PkgConfig::DPDK)
  target_compile_definitions(metaroce_datapath_dpdk PRIVATE METAROCE_HAVE_DPDK=1)
  if(BUILD_SHARED_LIBS)
    set_target_properties(metaroce_datapath_dpdk PROPERTIES POSITION_INDEPENDENT_CODE ON)
  endif()

  target_sources(metaroce_datapath PRIVATE $<TARGET_OBJECTS:metaroce_datapath_dpdk>)
  target_link_libraries(metaroce_datapath PRIVATE $<LINK_ONLY:PkgConfig::DPDK>)
  target_compile_definitions(metaroce_datapath PUBLIC METAROCE_HAVE_DPDK=1)
  message(STATUS "metaroce: DPDK port built (libdpdk ${DPDK_VERSION})")
else()
  message(STATUS "metaroce: DPDK port not built: libdpdk not found")
endif()

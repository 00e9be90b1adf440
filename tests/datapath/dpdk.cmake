# DPDK port tests, included from tests/datapath/CMakeLists.txt.
#
# Built when metaroce_datapath carries METAROCE_HAVE_DPDK (datapath/dpdk.cmake
# found libdpdk). Otherwise a placeholder test prints why, and ctest reports it
# as skipped instead of passing silently.
#
# Each test runs in its own process (gtest_discover_tests): DPDK's EAL is once
# per process, and the binary is written so that all tests can also share one
# process (run it directly). Needs root for the namespace tests; those skip,
# visibly, elsewhere.
if(TARGET metaroce_datapath)
  get_target_property(_metaroce_datapath_defs metaroce_datapath INTERFACE_COMPILE_DEFINITIONS)
else()
  set(_metaroce_datapath_defs "")
endif()

set(_metaroce_dpdk_tests_skip "")
if(NOT _metaroce_datapath_defs OR NOT "METAROCE_HAVE_DPDK=1" IN_LIST _metaroce_datapath_defs)
  set(_metaroce_dpdk_tests_skip "DPDK support not built")
else()
  # The tests build net_ring pairs with rte_eth_from_rings (a driver API, not in libdpdk.pc's libraries).
  find_library(METAROCE_RTE_NET_RING NAMES rte_net_ring HINTS ${DPDK_LIBDIR} ${DPDK_LIBRARY_DIRS})
  if(NOT METAROCE_RTE_NET_RING)
    set(_metaroce_dpdk_tests_skip "DPDK support built, but librte_net_ring (for the test's ring pairs) not found")
  endif()
endif()

if(_metaroce_dpdk_tests_skip STREQUAL "")
  add_executable(dpdk_port_tests ${CMAKE_CURRENT_LIST_DIR}/dpdk_port_test.cc)
  target_include_directories(dpdk_port_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(dpdk_port_tests PRIVATE
    metaroce_datapath metaroce_wire GTest::gtest_main PkgConfig::DPDK ${METAROCE_RTE_NET_RING})
  # One label: CMake 3.25's gtest_discover_tests flattens a "a;b" LABELS list
  # into separate property arguments (only the first would apply).
  gtest_discover_tests(dpdk_port_tests
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS dpdk TIMEOUT 60)
else()
  add_test(NAME dpdk_port_tests COMMAND ${CMAKE_COMMAND} -E echo "SKIPPED: ${_metaroce_dpdk_tests_skip}")
  set_tests_properties(dpdk_port_tests PROPERTIES SKIP_REGULAR_EXPRESSION "SKIPPED" LABELS dpdk)
endif()

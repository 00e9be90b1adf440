# AF_XDP port tests (netns + veth), included from tests/datapath/CMakeLists.txt.
# Built only when datapath/afxdp.cmake built the port; otherwise one test that
# prints why and that ctest reports as skipped, so the gap stays visible.
if(NOT TARGET GTest::gtest_main)
  find_package(GTest CONFIG REQUIRED)
endif()
include(GoogleTest)

get_property(_mr_afxdp_built GLOBAL PROPERTY METAROCE_AFXDP_BUILT)
get_property(_mr_afxdp_reason GLOBAL PROPERTY METAROCE_AFXDP_REASON)
if(NOT TARGET metaroce_datapath)
  set(_mr_afxdp_built FALSE)
  set(_mr_afxdp_reason "target metaroce_datapath is not defined (add_subdirectory(datapath) before the tests)")
elseif(NOT _mr_afxdp_built AND NOT _mr_afxdp_reason)
  # datapath/afxdp.cmake did not run; trust the library's own definition.
  get_target_property(_mr_defs metaroce_datapath INTERFACE_COMPILE_DEFINITIONS)
  if(_mr_defs MATCHES "METAROCE_HAVE_AFXDP")
    set(_mr_afxdp_built TRUE)
  else()
    set(_mr_afxdp_reason "datapath/afxdp.cmake was not included")
  endif()
endif()

if(_mr_afxdp_built)
  add_executable(afxdp_port_tests ${CMAKE_CURRENT_LIST_DIR}/afxdp_port_test.cc)
  target_include_directories(afxdp_port_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR})  # netns.h
  target_link_libraries(afxdp_port_tests PRIVATE metaroce_datapath metaroce_wire GTest::gtest_main)
  # Each test makes its own namespaces (unique names), so they may run in
  # parallel. gtest_discover_tests already maps GTEST_SKIP (not root, no
  # AF_XDP) to a ctest skip. One label only: CMake 3.25's discovery flattens
  # a label list into separate property arguments.
  gtest_discover_tests(afxdp_port_tests
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "afxdp" TIMEOUT 60)
else()
  add_test(NAME afxdp_port_tests
    COMMAND ${CMAKE_COMMAND} -E echo "SKIPPED: AF_XDP support not built: ${_mr_afxdp_reason}")
  set_tests_properties(afxdp_port_tests PROPERTIES
    LABELS "afxdp" SKIP_REGULAR_EXPRESSION "SKIPPED:")
endif()

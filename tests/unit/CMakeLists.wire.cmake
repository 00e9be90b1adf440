# Wire-layer unit tests (tests/unit/wire_*.cc), as an includable fragment.
#
# include() it from any CMake directory where the metaroce_wire target already
# exists, e.g. tests/unit/CMakeLists.txt:
#
#   include(${CMAKE_CURRENT_SOURCE_DIR}/CMakeLists.wire.cmake)
#
# It defines the GoogleTest executable `wire_tests` and registers every test
# case with CTest through gtest_discover_tests (labels: unit, wire). The tests
# are deterministic (fixed seeds, no sleeps, no sockets) and take well under a
# second in an optimised build, a few seconds under ASan/UBSan.
include_guard(GLOBAL)

if(NOT TARGET metaroce_wire)
  message(FATAL_ERROR "CMakeLists.wire.cmake: define the metaroce_wire target before including this file")
endif()
if(NOT TARGET GTest::gtest_main)
  find_package(GTest REQUIRED)
endif()
include(GoogleTest)

file(GLOB METAROCE_WIRE_TEST_SOURCES CONFIGURE_DEPENDS "${CMAKE_CURRENT_LIST_DIR}/wire_*.cc")
add_executable(wire_tests ${METAROCE_WIRE_TEST_SOURCES})
target_compile_features(wire_tests PRIVATE cxx_std_20)
target_link_libraries(wire_tests PRIVATE metaroce_wire GTest::gtest_main)
gtest_discover_tests(wire_tests
  DISCOVERY_TIMEOUT 60
  PROPERTIES LABELS "wire" TIMEOUT 120)
# Never batched in the sanitized unity build: its files define helpers of the
# same name, each local to its file.
set_target_properties(wire_tests PROPERTIES UNITY_BUILD OFF)

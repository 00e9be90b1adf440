# Datapath port tests (memory and UDP socket ports) and lab tests.
# Included from tests/datapath/CMakeLists.txt; paths are relative to this file
# so the fragment also works from a scratch project.
if(NOT TARGET GTest::gtest_main)
  find_package(GTest CONFIG REQUIRED)
endif()
include(GoogleTest)

# port_tests: hermetic (in-memory channels, UDP on loopback with kernel-chosen
# ports, the endpoint worker against a scripted port), no privileges needed.
add_executable(port_tests
  ${CMAKE_CURRENT_LIST_DIR}/memory_port_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/udp_port_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/worker_test.cc)
target_link_libraries(port_tests PRIVATE metaroce_datapath GTest::gtest_main)
gtest_discover_tests(port_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "datapath" TIMEOUT 120)

# lab_tests: description parsing always; up/down/status need root (network
# namespaces) and say SKIPPED with the reason otherwise. Each test uses its own
# lab prefix and removes what it made.
if(NOT TARGET nlohmann_json::nlohmann_json)
  find_package(nlohmann_json CONFIG REQUIRED)
endif()
add_executable(lab_tests ${CMAKE_CURRENT_LIST_DIR}/lab_test.cc)
target_include_directories(lab_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(lab_tests PRIVATE metaroce_lab_core nlohmann_json::nlohmann_json GTest::gtest_main)
target_compile_definitions(lab_tests PRIVATE
  METAROCE_LAB_EXE="$<TARGET_FILE:metaroce_lab>"
  METAROCE_LAB_DEFAULT_YAML="${CMAKE_CURRENT_LIST_DIR}/../../configs/labs/default.yaml")
add_dependencies(lab_tests metaroce_lab)
# One label only: CMake 3.25 discovery flattens a label list into separate properties.
gtest_discover_tests(lab_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "lab" TIMEOUT 300)
target_include_directories(lab_tests PRIVATE ${PROJECT_SOURCE_DIR}/datapath/include)  # ScopedNetns (header only)
# Never batched in the sanitized unity build: its files define helpers of the
# same name, each local to its file.
set_target_properties(port_tests PROPERTIES UNITY_BUILD OFF)

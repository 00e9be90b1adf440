# Every shipped scenario, in the simulator and on a netns lab with live
# daemons (the latter SKIPPED without root/netns/AF_XDP), checked end to end
# through metarocectl and its report.
file(GLOB METAROCE_SHIPPED_SCENARIOS CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/configs/scenarios/*.yaml")
foreach(file ${METAROCE_SHIPPED_SCENARIOS})
  get_filename_component(name ${file} NAME_WE)
  foreach(mode sim live)
    add_test(NAME scenario_${mode}.${name}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/check_report.sh ${mode} ${file}
              ${CMAKE_CURRENT_BINARY_DIR}/out/${mode}-${name} ${CMAKE_BINARY_DIR})
    set_tests_properties(scenario_${mode}.${name} PROPERTIES LABELS "scenario" SKIP_RETURN_CODE 77 TIMEOUT 600)
  endforeach()
  set_tests_properties(scenario_live.${name} PROPERTIES RUN_SERIAL TRUE)
endforeach()

# A deliberately overloaded live run must be INCONCLUSIVE, never PASS.
add_test(NAME scenario_live_overloaded
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/check_overload.sh ${CMAKE_CURRENT_BINARY_DIR}/out/live-overloaded ${CMAKE_BINARY_DIR})
set_tests_properties(scenario_live_overloaded PROPERTIES LABELS "scenario" SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL TRUE)

# A shipped sweep run point by point (--point I) and merged (scenario merge)
# is the whole sweep: the same report files apart from started_at; bad input refused.
add_test(NAME scenario_sweep_merge
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/check_sweep_merge.sh ${PROJECT_SOURCE_DIR}/configs/scenarios/loss-sweep.yaml
          ${CMAKE_CURRENT_BINARY_DIR}/out/sweep-merge ${CMAKE_BINARY_DIR})
set_tests_properties(scenario_sweep_merge PROPERTIES LABELS "scenario" TIMEOUT 600)

# A live scenario with its daemons reached over TCP with mutual TLS between
# network namespaces (certificates made at test time): handshake, refusals
# (no certificate, another CA, plain TCP) and a report with a verdict.
add_test(NAME scenario_live_mtls
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/check_mtls_multihost.sh ${CMAKE_CURRENT_SOURCE_DIR}/mtls-multihost.yaml
          ${CMAKE_CURRENT_BINARY_DIR}/out/live-mtls ${CMAKE_BINARY_DIR})
set_tests_properties(scenario_live_mtls PROPERTIES LABELS "scenario" SKIP_RETURN_CODE 77 TIMEOUT 180 RUN_SERIAL TRUE)

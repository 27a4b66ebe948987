# The architecture as a test (tests/tst_architecture.sh): layers and who may include whom, file
# and function sizes, what the window and the headless build link. Included from CMakeLists.txt.
set(_probe "-")
if(DEDLOC_GUI)
  add_executable(dedloc_ui_link_probe architecture/UiLinkProbe.cpp)
  # Every library on the link line becomes a DT_NEEDED entry, used or not: the probe shows what
  # linking the window's library drags in.
  target_link_options(dedloc_ui_link_probe PRIVATE -Wl,--no-as-needed)
  target_link_libraries(dedloc_ui_link_probe PRIVATE dedloc_ui)
  set(_probe $<TARGET_FILE:dedloc_ui_link_probe>)
endif()
if(DEDLOC_GUI)
  set(_gui ON)
  # dedloc as a DEDLOC_GUI=OFF build links it (the same objects, NoWindow instead of Window): the
  # test reads what it needs, so that one build proves both configurations.
  add_executable(dedloc_headless_probe ${PROJECT_SOURCE_DIR}/app/dedloc/NoWindow.cpp)
  target_link_libraries(dedloc_headless_probe PRIVATE dedloc_main dedloc_cli dedloc_core Qt6::Core)
  set(_headless $<TARGET_FILE:dedloc_headless_probe>)
else()
  set(_gui OFF)
  set(_headless $<TARGET_FILE:dedloc>)
endif()
add_test(NAME architecture COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tst_architecture.sh ${CMAKE_SOURCE_DIR}
  $<TARGET_FILE:dedloc> ${_gui} ${_probe} ${_headless})
set_tests_properties(architecture PROPERTIES TIMEOUT 120 LABELS architecture RUN_SERIAL TRUE)

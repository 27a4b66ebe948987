# Install layout beyond the executables (app/CMakeLists.txt installs dedloc, dedloc-lead and the
# default run; core/CMakeLists.txt the SentencePiece shim; ui/CMakeLists.txt the .desktop and icon) and CPack DEB + TGZ packages.
# installers/build-packages.sh drives it; docs/LEAD_GUIDE.md explains the whole release.
#
#   <prefix>/bin/dedloc, dedloc-lead
#   <prefix>/lib/dedloc/libdedloc_sentencepiece.so
#   <prefix>/share/dedloc/default-run/      manifest.json(.minisig), lead.pub, tokenizer, corpus,
#                                           eval/bn_sib200_topic (the downstream task, CC BY-SA 4.0)
#   <prefix>/share/metainfo/org.dedloc.Desktop.metainfo.xml
#   <prefix>/share/applications/dedloc.desktop, share/icons/hicolor/scalable/apps/dedloc.svg
#   <prefix>/lib/systemd/user/dedloc.service   (headless volunteers: systemctl --user enable --now dedloc)

set(_res ${CMAKE_CURRENT_SOURCE_DIR}/resources)
install(FILES ${_res}/packaging/org.dedloc.Desktop.metainfo.xml DESTINATION share/metainfo)
install(FILES ${_res}/packaging/dedloc.service DESTINATION lib/systemd/user)
# The menu entry and icon (resources/dedloc.desktop, resources/icons/dedloc.svg) are installed by
# ui/CMakeLists.txt; the metainfo's launchable names that desktop file.

set(CPACK_PACKAGE_NAME "dedloc-desktop")
set(CPACK_PACKAGE_VENDOR "DeDLOC Desktop project")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Donate idle GPU/CPU time to a collaborative training run (DeDLOC)")
set(CPACK_PACKAGE_CONTACT "DeDLOC Desktop project lead <lead@example.invalid>")
set(CPACK_RESOURCE_FILE_README ${CMAKE_CURRENT_SOURCE_DIR}/README.md)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_FILE_NAME "${CPACK_PACKAGE_NAME}-${PROJECT_VERSION}-${CMAKE_SYSTEM_NAME}-${CMAKE_SYSTEM_PROCESSOR}")
if(NOT CPACK_GENERATOR)
  set(CPACK_GENERATOR "DEB;TGZ")
endif()
# DEB: installs under /usr; library dependencies computed by dpkg-shlibdeps (libtorch, Qt, ...).
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libtorch reaches BLAS through libblas.so.3, which dpkg-shlibdeps satisfies with the reference
# BLAS: about 18x slower training. An optimised OpenBLAS wins the libblas.so.3 alternative by
# priority once installed (docs/DECISIONS.md "BLAS"); CPack appends the computed dependencies.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0-openmp | libopenblas0-pthread")
# The window can speak Bengali (ui/Language.h): a font with Bengali glyphs draws it, any of these.
if(DEDLOC_GUI)
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "fonts-lohit-beng-bengali | fonts-noto-core | fonts-beng")
endif()
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.invalid/dedloc-desktop")
# TGZ: relocatable tree (bin/, lib/, share/); the programs find their files relative to bin/.
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)
set(CPACK_INCLUDE_TOPLEVEL_DIRECTORY ON)
include(CPack)

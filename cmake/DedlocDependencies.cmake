# Every third-party dependency is found here, once. All come from Debian packages
# (installers/install-deps.sh); a CUDA libtorch can be given with -DCMAKE_PREFIX_PATH=/path/to/libtorch.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

find_package(Torch REQUIRED)
# TORCH_CXX_FLAGS carries -D_GLIBCXX_USE_CXX11_ABI for official builds.
if(TORCH_CXX_FLAGS)
  separate_arguments(_dedloc_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  add_compile_options(${_dedloc_torch_flags})
endif()

find_package(Qt6 REQUIRED COMPONENTS Core Network Test) # Network: the local control socket (QLocalServer)
find_package(nlohmann_json 3.10 REQUIRED)

pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET libzmq)
# cppzmq is header-only (zmq.hpp, zmq_addon.hpp from cppzmq-dev).
pkg_check_modules(OPENDHT REQUIRED IMPORTED_TARGET opendht)
# HTTP for `dedloc-lead serve`'s read-only status (Debian libcpp-httplib-dev; docs/DECISIONS.md).
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# Port mappings on the home router (net/PortMapping): UPnP-IGD (libminiupnpc-dev) and NAT-PMP
# (libnatpmp-dev, which ships no pkg-config file).
pkg_check_modules(MINIUPNPC REQUIRED IMPORTED_TARGET miniupnpc)
find_library(NATPMP_LIBRARY natpmp REQUIRED)
find_path(NATPMP_INCLUDE_DIR natpmp.h REQUIRED)
add_library(dedloc::natpmp UNKNOWN IMPORTED)
set_target_properties(dedloc::natpmp PROPERTIES IMPORTED_LOCATION "${NATPMP_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${NATPMP_INCLUDE_DIR}")
if(DEDLOC_GUI)
  find_package(Qt6 REQUIRED COMPONENTS Widgets Charts Svg)  # the volunteer window (ui/)
  pkg_check_modules(XCB REQUIRED IMPORTED_TARGET xcb)       # the full-screen probe (ui/FullScreenProbe)
endif()

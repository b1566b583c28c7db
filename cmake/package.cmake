# Debian packages from the install components (cpack -G DEB, in the build directory):
#   libdlcp0.1      the shared library (named for its SONAME, as Debian's policy asks)
#   libdlcp-dev     headers, CMake package, pkg-config file
#   dlcp-tools      the dlcp command and its data
#   python3-dlcp    the Python package and the PyTorch integration
# Depends come from dpkg-shlibdeps (Debian's package names for every shared library a binary
# needs) plus what the binaries start or import.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dlcp)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "bounded-loss, priority-aware gradient communication for data-parallel training")
set(CPACK_PACKAGE_CONTACT "dlcp maintainers <dlcp@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(dlcp_runtime_package libdlcp${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${dlcp_runtime_package})
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libdlcp-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEVELOPMENT_DEPENDS runtime)
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME dlcp-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
# The testbed drives ip, tc and nft; the demo draws its plot with matplotlib; the baselines run
# under mpirun.
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "iproute2, nftables, openmpi-bin")
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "python3-matplotlib")
set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-dlcp)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
  "python3 (>= 3.11), python3 (<< 3.12), python3-numpy, python3-torch")

set(CPACK_COMPONENTS_ALL runtime development)
if(DLCP_BUILD_TOOLS)
  list(APPEND CPACK_COMPONENTS_ALL tools)
endif()
if(DLCP_BUILD_PYTHON)
  list(APPEND CPACK_COMPONENTS_ALL python)
endif()
include(CPack)

# What `cmake --install` puts where, by component (the Debian packages follow them, see
# package.cmake):
#   runtime      libdlcp.so.<version> and its SONAME link
#   development  public headers, libdlcp.so, dlcp::dlcp for find_package(dlcp), dlcp.pc
#   tools        the dlcp command and its data (model profiles, the demo's plot script)
#   python       the dlcp Python package (python/CMakeLists.txt)
include(CMakePackageConfigHelpers)

set(DLCP_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/dlcp)

install(TARGETS dlcp EXPORT dlcpTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
    NAMELINK_COMPONENT development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/dlcp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT development)
install(EXPORT dlcpTargets NAMESPACE dlcp:: DESTINATION ${DLCP_CMAKE_INSTALL_DIR}
  COMPONENT development)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/dlcpConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/dlcpConfig.cmake INSTALL_DESTINATION ${DLCP_CMAKE_INSTALL_DIR})
# Before 1.0 a minor version may change the API: only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/dlcpConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/dlcpConfig.cmake
  ${CMAKE_BINARY_DIR}/cmake/dlcpConfigVersion.cmake
  DESTINATION ${DLCP_CMAKE_INSTALL_DIR} COMPONENT development)

# pkg-config: the prefix is found from the .pc file's own place, so the installed tree (or an
# unpacked Debian package) can move.
file(RELATIVE_PATH dlcp_pc_prefix_from_pcfiledir
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_CURRENT_LIST_DIR}/dlcp.pc.in ${CMAKE_BINARY_DIR}/cmake/dlcp.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/dlcp.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT development)

# Data the tools, the testbed and the simulator read (workload/data_files.hpp): copied into
# <build>/share/dlcp so that programs in the build tree find it as installed ones do.
if(DLCP_BUILD_TOOLS OR DLCP_BUILD_SIM)
  file(GLOB dlcp_model_files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/models/*.json)
  set(dlcp_data_files)
  foreach(model ${dlcp_model_files})
    get_filename_component(name ${model} NAME)
    configure_file(${model} ${CMAKE_BINARY_DIR}/share/dlcp/models/${name} COPYONLY)
  endforeach()
  configure_file(${PROJECT_SOURCE_DIR}/tools/plot_demo.py ${CMAKE_BINARY_DIR}/share/dlcp/plot_demo.py
    COPYONLY)
endif()
if(DLCP_BUILD_TOOLS)
  install(TARGETS dlcp_cli dlcp_bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
  install(DIRECTORY ${CMAKE_BINARY_DIR}/share/dlcp DESTINATION ${CMAKE_INSTALL_DATADIR}
    COMPONENT tools)
endif()

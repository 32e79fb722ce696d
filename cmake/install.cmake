# Install rules and the CMake package, so engines can `find_package(mxi CONFIG)`.
include(CMakePackageConfigHelpers)

set(mxi_targets mxi_headers mxi)
if(TARGET mxi_device)
  list(APPEND mxi_targets mxi_device)
endif()
install(TARGETS ${mxi_targets} EXPORT mxi-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/mxi DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(mxi_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/mxi)
install(EXPORT mxi-targets NAMESPACE mxi:: DESTINATION ${mxi_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/mxi-config.cmake.in
  ${PROJECT_BINARY_DIR}/mxi-config.cmake INSTALL_DESTINATION ${mxi_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mxi-config-version.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mxi-config.cmake ${PROJECT_BINARY_DIR}/mxi-config-version.cmake
        DESTINATION ${mxi_cmake_dir})

# `cmake --install build [--prefix DIR]`: the library as a CMake package, the CLI and its fetch
# script. A program outside this tree then builds with
#   find_package(lazyllm 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE lazyllm::lazyllm)
# (examples/simple). The package's headers are include/lazyllm/ alone; the folder libraries are
# static archives, so lazyllmConfig.cmake finds what they link (OpenMP, fmt, oneDNN, PCRE2, ...).
include(CMakePackageConfigHelpers)  # GNUInstallDirs: the root CMakeLists.txt

set(lazyllm_folder_libraries lazyllm_base lazyllm_gguf lazyllm_kernels lazyllm_tokenizer
    lazyllm_prune lazyllm_model lazyllm_runtime)
foreach(lib ${lazyllm_folder_libraries})
  string(REPLACE "lazyllm_" "" short ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${short})  # lazyllm::kernels, ...
endforeach()
set_target_properties(lazyllm_core PROPERTIES EXPORT_NAME lazyllm)  # lazyllm::lazyllm

set(lazyllm_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/lazyllm)
install(TARGETS ${lazyllm_folder_libraries} lazyllm_core EXPORT lazyllmTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}/lazyllm)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/lazyllm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT lazyllmTargets NAMESPACE lazyllm:: DESTINATION ${lazyllm_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/lazyllmConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/lazyllmConfig.cmake
                              INSTALL_DESTINATION ${lazyllm_cmake_dir})
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/lazyllmConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/lazyllmConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/lazyllmConfigVersion.cmake
        DESTINATION ${lazyllm_cmake_dir})

# The same for pkg-config (`pkg-config --cflags --libs lazyllm`), relocatable: its prefix is
# the .pc file's folder, up as many levels as LIBDIR/pkgconfig has (absolute LIBDIR or
# INCLUDEDIR: those paths as they are).
file(RELATIVE_PATH lazyllm_pc_up /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
set(lazyllm_pc_prefix "\${pcfiledir}/${lazyllm_pc_up}")
set(lazyllm_pc_libdir "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
set(lazyllm_pc_includedir "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(lazyllm_pc_prefix "${CMAKE_INSTALL_PREFIX}")  # not relocatable
  set(lazyllm_pc_libdir "${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(lazyllm_pc_includedir "${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/lazyllm.pc.in ${CMAKE_CURRENT_BINARY_DIR}/lazyllm.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/lazyllm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The CLI, and the script it runs to fetch a named model (tools/cli/common.cpp looks for it in
# share/lazyllm/ above its binary).
install(TARGETS lazyllm RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/fetch_model.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lazyllm)

# The Arcade Learning Environment's C++ core, built from the ale-py source
# distribution on PyPI (never copied into this repository). ALE is
# GPL-2.0-only: an extension built with it is a GPL-2.0 combined work.
#
# The sdist comes from FASTVEC_ALE_SDIST (a cache variable, or the
# environment variable of that name) when set: offline builds and CI caches.
# Otherwise pip downloads it into the build tree (cmake/sdist.cmake).

# FASTVEC_ALE_VERSION comes from pyproject.toml's pin (CMakeLists.txt); this is
# the SHA-256 of that release's sdist on PyPI.
set(FASTVEC_ALE_SHA256 c503d574c5983e1063b451201ccb779d935919c0f6bf116fb0f4f8aa4c86d249)
set(_ale_root "${CMAKE_BINARY_DIR}/_ale")
fastvec_pypi_sdist(_ale_sdist ale-py ${FASTVEC_ALE_VERSION} ale_py-${FASTVEC_ALE_VERSION}.tar.gz
                   ${FASTVEC_ALE_SHA256} FASTVEC_ALE_SDIST FASTVEC_ATARI "${_ale_root}")
set(_ale_src "${_ale_root}/ale_py-${FASTVEC_ALE_VERSION}/src")
if(NOT EXISTS "${_ale_root}/extracted-${FASTVEC_ALE_SHA256}")
  file(REMOVE_RECURSE "${_ale_root}/ale_py-${FASTVEC_ALE_VERSION}")
  file(ARCHIVE_EXTRACT INPUT "${_ale_sdist}" DESTINATION "${_ale_root}"
       PATTERNS "ale_py-${FASTVEC_ALE_VERSION}/src/ale/*" "ale_py-${FASTVEC_ALE_VERSION}/LICENSE.md")
  file(TOUCH "${_ale_root}/extracted-${FASTVEC_ALE_SHA256}")
endif()

# Only the emulator and the games: no SDL, no Python module, no vectorizer.
set(_ale "${_ale_src}/ale")
file(GLOB _ale_sources CONFIGURE_DEPENDS
  "${_ale}/common/*.cpp" "${_ale}/common/*.cxx"
  "${_ale}/emucore/*.cxx"
  "${_ale}/environment/*.cpp"
  "${_ale}/games/*.cpp" "${_ale}/games/supported/*.cpp")
list(APPEND _ale_sources "${_ale}/ale_interface.cpp")
# Colour averaging (never enabled by fastvec) costs 0.15 s and 0.5 MB per emulator at construction:
# fastvec compiles its own constructor-only stand-in instead.
list(REMOVE_ITEM _ale_sources "${_ale}/environment/phosphor_blend.cpp")
list(APPEND _ale_sources "${CMAKE_CURRENT_SOURCE_DIR}/src/envs/atari/ale_phosphor_blend.cpp")

set(ALE_VERSION ${FASTVEC_ALE_VERSION})
string(REPLACE "." ";" _ale_parts ${FASTVEC_ALE_VERSION})
list(GET _ale_parts 0 ALE_VERSION_MAJOR)
list(GET _ale_parts 1 ALE_VERSION_MINOR)
list(GET _ale_parts 2 ALE_VERSION_PATCH)
set(ALE_VERSION_GIT_SHA "sdist")
configure_file("${_ale}/version.hpp.in" "${_ale_root}/gen/version.hpp")

find_package(ZLIB REQUIRED)
add_library(fastvec_ale STATIC ${_ale_sources})
target_include_directories(fastvec_ale SYSTEM PUBLIC "${_ale_src}" "${_ale_root}/gen")
target_compile_features(fastvec_ale PUBLIC cxx_std_17)
target_compile_options(fastvec_ale PRIVATE -O3)
fastvec_third_party_library(fastvec_ale)  # (ALE's own build enables LTO: here it is off, as for Box2D)
target_link_libraries(fastvec_ale PUBLIC ZLIB::ZLIB Threads::Threads)

# Binaries built with ALE are GPL-2.0 combined works: ship ALE's licence with them.
install(FILES "${_ale_root}/ale_py-${FASTVEC_ALE_VERSION}/LICENSE.md" DESTINATION fastvec RENAME LICENSE-ALE.md)

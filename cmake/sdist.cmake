# Third-party C++ sources from a source distribution on PyPI (never copied into this repository), and the build
# settings every such static library shares. Used by cmake/ale.cmake and cmake/box2d.cmake.

# fastvec_pypi_sdist(<out-var> <package> <version> <file> <sha256> <cache-var> <off-option> <dir>)
#
# Sets <out-var> to the path of <package> <version>'s sdist <file> (e.g. ale_py-0.12.1.tar.gz): the file named by
# <cache-var> (a cache variable, or the environment variable of that name) when set, for offline builds and CI
# caches; otherwise downloaded by pip into <dir> (in the build tree). Either way its SHA-256 must be <sha256>.
# <off-option> names the option that builds without it, for the error message.
function(fastvec_pypi_sdist out_var package version file sha256 cache_var off_option dir)
  set(${cache_var} "$ENV{${cache_var}}" CACHE FILEPATH "Path to ${file} (downloaded with pip when empty)")
  if(${cache_var})
    set(_sdist "${${cache_var}}")
  else()
    set(_sdist "${dir}/${file}")
    if(NOT EXISTS "${_sdist}")
      message(STATUS "fastvec: downloading the ${package} ${version} sdist from PyPI with pip")
      # --no-build-isolation: pip reads the sdist's metadata with what this build environment already has.
      execute_process(
        COMMAND "${Python_EXECUTABLE}" -m pip download --no-deps --no-binary ${package} --no-build-isolation
                --disable-pip-version-check -d "${dir}" "${package}==${version}"
        RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
      if(NOT _rc EQUAL 0 OR NOT EXISTS "${_sdist}")
        message(FATAL_ERROR "fastvec: could not download the ${package} ${version} sdist with pip:\n${_out}\n"
                            "Download it yourself (pip download --no-deps --no-binary ${package} ${package}==${version}) "
                            "and set ${cache_var} to the file, or build without it (-D${off_option}=OFF).")
      endif()
    endif()
  endif()
  file(SHA256 "${_sdist}" _hash)
  if(NOT _hash STREQUAL "${sha256}")
    message(FATAL_ERROR "fastvec: ${_sdist} has SHA-256 ${_hash}, expected ${sha256} (${package} ${version} from PyPI)")
  endif()
  set(${out_var} "${_sdist}" PARENT_SCOPE)
endfunction()

# fastvec_third_party_library(<target>): a static library of third-party sources linked into the extension:
# position-independent, its symbols hidden from the extension's exports, no LTO (the link takes half the time, at
# no measurable cost), no warnings of its own code, and the sanitizer the build asks for.
function(fastvec_third_party_library target)
  set_target_properties(${target} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    INTERPROCEDURAL_OPTIMIZATION OFF
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_compile_options(${target} PRIVATE -w)
  if(FASTVEC_SANITIZER STREQUAL "address")
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
  elseif(FASTVEC_SANITIZER STREQUAL "thread")
    target_compile_options(${target} PRIVATE -fsanitize=thread)
  endif()
endfunction()

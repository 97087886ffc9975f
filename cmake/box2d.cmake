# Box2D 2.3's C++ sources, from the `box2d` 2.3.2 source distribution on PyPI (pybox2d; never copied into this
# repository): gymnasium's Box2D envs run on pybox2d (`box2d` 2.3.10, of which PyPI has wheels only), whose
# Box2D/ directory is the same in every sdist since 2.3.2. Box2D is zlib-licensed.
#
# The sdist comes from FASTVEC_BOX2D_SDIST (a cache variable, or the environment variable of that name) when
# set: offline builds and CI caches. Otherwise pip downloads it into the build tree (cmake/sdist.cmake).

set(FASTVEC_BOX2D_VERSION 2.3.2)
set(FASTVEC_BOX2D_SHA256 d1557dffdf9c1d6c796ec5df53e3d93227bb026c14b8411d22c295edaa2fb225)
set(_box2d_root "${CMAKE_BINARY_DIR}/_box2d")
fastvec_pypi_sdist(_box2d_sdist box2d ${FASTVEC_BOX2D_VERSION} Box2D-${FASTVEC_BOX2D_VERSION}.tar.gz
                   ${FASTVEC_BOX2D_SHA256} FASTVEC_BOX2D_SDIST FASTVEC_BOX2D "${_box2d_root}")
set(_box2d_name "Box2D-${FASTVEC_BOX2D_VERSION}")
set(_box2d_src "${_box2d_root}/${_box2d_name}")
# (the stamp names the edits below: a build tree extracted before an edit was added extracts again)
set(_box2d_stamp "${_box2d_root}/extracted-${FASTVEC_BOX2D_SHA256}-thread-local-counters")
if(NOT EXISTS "${_box2d_stamp}")
  file(REMOVE_RECURSE "${_box2d_src}")
  file(ARCHIVE_EXTRACT INPUT "${_box2d_sdist}" DESTINATION "${_box2d_root}"
       PATTERNS "${_box2d_name}/Box2D/*")
  # pybox2d's b2Settings.h makes a failed b2Assert set a Python exception and throw b2AssertException (its
  # asserts are on whatever NDEBUG says). The envs keep the throw, which they turn into an EnvError, without
  # Python: they run on the pool's threads, which do not hold the GIL.
  set(_settings "${_box2d_src}/Box2D/Common/b2Settings.h")
  file(READ "${_settings}" _text)
  string(REPLACE "#include <Python.h>\n" "" _text "${_text}")
  string(REPLACE "PyErr_SetString(PyExc_AssertionError, #A); " "" _text "${_text}")
  if(_text MATCHES "Py(Err|Exc)_")
    message(FATAL_ERROR "fastvec: ${_settings} is not the b2Settings.h cmake/box2d.cmake knows")
  endif()
  file(WRITE "${_settings}" "${_text}")
  # Box2D counts its time-of-impact and GJK calls in globals (statistics for its testbed, never read by the
  # physics), incremented by every world: worlds stepped on several pool threads at once race on them
  # (ThreadSanitizer reported it). Each thread counts its own.
  foreach(_file_and_line
      "Collision/b2TimeOfImpact.cpp|float32 b2_toiTime, b2_toiMaxTime;"
      "Collision/b2TimeOfImpact.cpp|int32 b2_toiCalls, b2_toiIters, b2_toiMaxIters;"
      "Collision/b2TimeOfImpact.cpp|int32 b2_toiRootIters, b2_toiMaxRootIters;"
      "Collision/b2Distance.cpp|int32 b2_gjkCalls, b2_gjkIters, b2_gjkMaxIters;")
    string(REPLACE "|" ";" _pair "${_file_and_line}")
    list(GET _pair 0 _file)
    list(GET _pair 1 _line)
    file(READ "${_box2d_src}/Box2D/${_file}" _text)
    string(FIND "${_text}" "\n${_line}" _at)
    if(_at EQUAL -1)
      message(FATAL_ERROR "fastvec: ${_file} has no '${_line}' (not the Box2D cmake/box2d.cmake knows)")
    endif()
    string(REPLACE "\n${_line}" "\nthread_local ${_line}" _text "${_text}")
    file(WRITE "${_box2d_src}/Box2D/${_file}" "${_text}")
  endforeach()
  file(TOUCH "${_box2d_stamp}")
endif()

set(_b2 "${_box2d_src}/Box2D")
file(GLOB _box2d_sources CONFIGURE_DEPENDS
  "${_b2}/Collision/*.cpp" "${_b2}/Collision/Shapes/*.cpp" "${_b2}/Common/*.cpp"
  "${_b2}/Dynamics/*.cpp" "${_b2}/Dynamics/Contacts/*.cpp" "${_b2}/Dynamics/Joints/*.cpp")

add_library(fastvec_box2d STATIC ${_box2d_sources})
target_include_directories(fastvec_box2d SYSTEM PUBLIC "${_box2d_src}")
# pybox2d's arithmetic: its setup.py builds with Python's flags (-O3 -fwrapv -DNDEBUG), float32 Box2D, no
# fast-math; its x86-64 wheel has no fused multiply-adds, which -ffp-contract=off guarantees here whatever -march.
target_compile_options(fastvec_box2d PRIVATE -O3 -fwrapv -ffp-contract=off -DNDEBUG)
fastvec_third_party_library(fastvec_box2d)

install(FILES "${_b2}/Box2D-License.txt" DESTINATION fastvec RENAME LICENSE-Box2D.txt)

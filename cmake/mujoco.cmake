# The MuJoCo backend: MuJoCo's C headers and library from the mujoco-core wheel (what the `mujoco` package
# depends on), installed in the Python that builds fastvec (a build requirement in pyproject.toml, pinned to
# the same release as the runtime dependency). Nothing of MuJoCo is copied into this repository or the wheel:
# the extension links the installed package's libmujoco.so.<version> (its SONAME; the wheel has no unversioned
# name) and finds it at run time through an rpath to that package, next to fastvec in site-packages.
file(READ "${CMAKE_CURRENT_SOURCE_DIR}/pyproject.toml" _fastvec_pyproject)
if(NOT _fastvec_pyproject MATCHES "\"mujoco-core==([0-9.]+)[;\"]")
  message(FATAL_ERROR "fastvec: pyproject.toml must pin mujoco-core (\"mujoco-core==X.Y.Z\")")
endif()
set(FASTVEC_MUJOCO_VERSION "${CMAKE_MATCH_1}")

execute_process(
  COMMAND "${Python_EXECUTABLE}" -c
          "import importlib.util, os; s = importlib.util.find_spec('mujoco'); print(os.path.dirname(s.origin) if s else '')"
  OUTPUT_VARIABLE FASTVEC_MUJOCO_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
set(_mujoco_lib "${FASTVEC_MUJOCO_DIR}/libmujoco.so.${FASTVEC_MUJOCO_VERSION}")
if(FASTVEC_MUJOCO_DIR STREQUAL "" OR NOT EXISTS "${FASTVEC_MUJOCO_DIR}/include/mujoco/mujoco.h" OR NOT EXISTS "${_mujoco_lib}")
  message(FATAL_ERROR "fastvec: the MuJoCo backend builds against mujoco-core==${FASTVEC_MUJOCO_VERSION} installed in "
                      "${Python_EXECUTABLE} (found: '${FASTVEC_MUJOCO_DIR}'): pip install mujoco-core==${FASTVEC_MUJOCO_VERSION}, "
                      "or build without it: -DFASTVEC_MUJOCO=OFF")
endif()
message(STATUS "fastvec: MuJoCo ${FASTVEC_MUJOCO_VERSION} from ${FASTVEC_MUJOCO_DIR}")

add_library(fastvec_mujoco INTERFACE)
target_include_directories(fastvec_mujoco SYSTEM INTERFACE "${FASTVEC_MUJOCO_DIR}/include")
target_link_libraries(fastvec_mujoco INTERFACE "${_mujoco_lib}")

# fastvec's xla() (src/bindings/xla_ffi.cpp): XLA FFI's C API header, xla/ffi/api/c_api.h, from the jaxlib
# installed in the Python that builds fastvec (a build requirement in pyproject.toml; jaxlib ships the header
# for this use, as jax.ffi.include_dir()). Nothing of XLA is copied into this repository or linked: the
# handlers use the C API's structs alone, XLA's stable binary interface, so the module works with the jaxlib
# installed at run time whichever one it was built with. FASTVEC_XLA_INCLUDE_DIR names another directory.
set(FASTVEC_XLA_INCLUDE_DIR "" CACHE PATH "A directory holding xla/ffi/api/c_api.h (default: jaxlib's include/)")
if(FASTVEC_XLA_INCLUDE_DIR STREQUAL "")
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
            "import importlib.util, os; s = importlib.util.find_spec('jaxlib'); print(os.path.join(os.path.dirname(s.origin), 'include') if s else '')"
    OUTPUT_VARIABLE _fastvec_xla_dir OUTPUT_STRIP_TRAILING_WHITESPACE)
else()
  set(_fastvec_xla_dir "${FASTVEC_XLA_INCLUDE_DIR}")
endif()
if(_fastvec_xla_dir STREQUAL "" OR NOT EXISTS "${_fastvec_xla_dir}/xla/ffi/api/c_api.h")
  if(FASTVEC_XLA STREQUAL "ON")
    message(FATAL_ERROR "fastvec: xla() builds against XLA FFI's C API header from jaxlib, installed in "
                        "${Python_EXECUTABLE} (found: '${_fastvec_xla_dir}'): pip install jaxlib, or build without "
                        "it: -DFASTVEC_XLA=OFF")
  endif()
  message(STATUS "fastvec: no jaxlib in ${Python_EXECUTABLE}: building without xla()")
  set(FASTVEC_WITH_XLA OFF)
else()
  message(STATUS "fastvec: xla() with XLA FFI's C API from ${_fastvec_xla_dir}")
  set(FASTVEC_WITH_XLA ON)
  add_library(fastvec_xla INTERFACE)
  target_include_directories(fastvec_xla SYSTEM INTERFACE "${_fastvec_xla_dir}")
endif()

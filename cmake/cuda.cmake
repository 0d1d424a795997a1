# The CUDA example (examples/train_mlp_cuda.cu -> build/examples/train_mlp_cuda), built only when
# a working nvcc is found: everything else in tprof builds and tests without CUDA. libtprof itself
# never links CUDA; the example links the CUDA runtime as a shared library, so tprof's Nsight
# mirroring finds cudaProfilerStart in it.
# The CUPTI conversion benchmark (bench/bench_cupti.c) reads CUDA's CUPTI record structs.
# (build/bench/libcupti_floor.so, below, is CUPTI's floor for the GPU checks.)
if(TARGET bench_cupti AND TPROF_GPU_CUPTI)
  target_include_directories(bench_cupti SYSTEM PRIVATE ${TPROF_CUDA_INCLUDES})
  target_compile_definitions(bench_cupti PRIVATE TPROF_HAVE_CUPTI_HEADERS)
endif()

if(TPROF_PYTHON_PACKAGE) # the wheel holds no examples
  return()
endif()

# CUPTI's own cost without tprof (bench/gpu/cupti_floor.c): a CUDA injection library that
# bench/gpu/check.sh loads into the example through CUDA_INJECTION64_PATH. libcupti is opened
# with dlopen, as libtprof opens it.
if(TPROF_GPU_CUPTI AND NOT TPROF_SANITIZE)
  add_library(cupti_floor MODULE bench/gpu/cupti_floor.c)
  target_include_directories(cupti_floor SYSTEM PRIVATE ${TPROF_CUDA_INCLUDES})
  # src/gpu/cupti_ids.h: tprof's lists of launch and query functions, so that "tprof's kinds"
  # under CUPTI alone are tprof's own
  target_include_directories(cupti_floor PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(cupti_floor PRIVATE ${CMAKE_DL_LIBS})
  set_target_properties(cupti_floor PROPERTIES PREFIX "lib"
    LIBRARY_OUTPUT_DIRECTORY ${TPROF_OUT}/bench)
  # and the stack of a crash there, where no debugger runs (bench/gpu/stack_on_fault.c)
  add_library(stack_on_fault MODULE bench/gpu/stack_on_fault.c)
  set_target_properties(stack_on_fault PROPERTIES PREFIX "lib"
    LIBRARY_OUTPUT_DIRECTORY ${TPROF_OUT}/bench)
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  message(STATUS "tprof: no CUDA compiler; the CUDA example is not built")
  return()
endif()
if(TPROF_SANITIZE)
  # nvcc does not take the sanitizer flags the rest of the build uses
  message(STATUS "tprof: sanitizer build; the CUDA example is not built")
  return()
endif()
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  # Ampere and Hopper natively, PTX of Hopper for anything newer (compiled by the driver)
  set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
endif()
enable_language(CUDA)

add_executable(train_mlp_cuda examples/train_mlp_cuda.cu)
# The C warning flags of the top-level build are not nvcc's: the host compiler gets its own.
set(tprof_cuda_host_flags -Wall -Wextra -Wshadow)
if(TPROF_WERROR)
  list(APPEND tprof_cuda_host_flags -Werror)
endif()
list(JOIN tprof_cuda_host_flags "," tprof_cuda_host_flags)
set_property(TARGET train_mlp_cuda PROPERTY COMPILE_OPTIONS
  "-Xcompiler=${tprof_cuda_host_flags}" $<$<BOOL:${TPROF_WERROR}>:-Werror=all-warnings>)
set_target_properties(train_mlp_cuda PROPERTIES
  CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON CUDA_RUNTIME_LIBRARY Shared
  RUNTIME_OUTPUT_DIRECTORY ${TPROF_OUT}/examples)
target_compile_definitions(train_mlp_cuda PRIVATE _GNU_SOURCE)
target_link_libraries(train_mlp_cuda PRIVATE tprof_static)

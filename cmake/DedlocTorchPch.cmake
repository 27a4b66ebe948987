# dedloc_use_torch_pch(<target> [WITHOUT_TORCH <source>...]) gives <target> dedloc_core's
# precompiled <torch/torch.h> (DEDLOC_TORCH_PCH). The header is forced into every file of the
# target, where parsing torch costs ~40 s and loading the PCH ~10 s: files that include no torch
# header (AUTOMOC's mocs_compilation.cpp, those listed after WITHOUT_TORCH) are compiled without it.
# The target needs -fPIC like dedloc_core (GCC ignores a PCH built with other PIC settings).
function(dedloc_use_torch_pch target)
  if(NOT DEDLOC_TORCH_PCH)
    return()
  endif()
  cmake_parse_arguments(P "" "" "WITHOUT_TORCH" ${ARGN})
  target_precompile_headers(${target} REUSE_FROM dedloc_core)
  target_compile_options(${target} PRIVATE -fPIC)
  set_source_files_properties(${CMAKE_CURRENT_BINARY_DIR}/${target}_autogen/mocs_compilation.cpp ${P_WITHOUT_TORCH}
    PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
endfunction()

# Per-library include paths: the layering of docs/ARCHITECTURE is enforced by
# the build. Sources keep spelling includes from the repository root
# (`#include "ir/Function.h"`), but there is no root include directory: a file
# sees only
#   - the public headers of the libraries its target links (transitively
#     through PUBLIC links), each exposed under
#     ${CMAKE_BINARY_DIR}/include/<target>/<folder>/ as a symlink to the
#     source header, and
#   - every header of its own library's folder (its private include dir,
#     ${CMAKE_BINARY_DIR}/include-private/<target>/<folder>, a symlink to the
#     folder), used PRIVATE.
# So including a header of a library the target does not link, or a header
# another library keeps private, fails with "No such file or directory".
# Symlinks (not copies): an edited header is seen at once, and the compiler's
# dependency files name the link, whose time stamp is the header's.

# The folder of the calling CMakeLists.txt relative to the source root.
function(_tsl_default_folder out)
  file(RELATIVE_PATH folder ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  set(${out} ${folder} PARENT_SCOPE)
endfunction()

# tsl_private_folder(target [FOLDER dir])
# Lets the sources of <target> include every header under the source folder
# <dir> (default: the folder of the calling CMakeLists.txt) as "<dir>/X.h".
# Used PRIVATE: nothing that links <target> sees these headers.
function(tsl_private_folder target)
  cmake_parse_arguments(ARG "" "FOLDER" "" ${ARGN})
  if(NOT ARG_FOLDER)
    _tsl_default_folder(ARG_FOLDER)
  endif()
  set(root ${CMAKE_BINARY_DIR}/include-private/${target})
  get_filename_component(parent ${root}/${ARG_FOLDER} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${CMAKE_SOURCE_DIR}/${ARG_FOLDER} ${root}/${ARG_FOLDER} SYMBOLIC)
  target_include_directories(${target} PRIVATE $<BUILD_INTERFACE:${root}>)
endfunction()

# tsl_public_headers(target [FOLDER dir] headers...)
# Exposes exactly <headers> (paths relative to <dir>, default: the folder of
# the calling CMakeLists.txt) to every target that links <target>, spelled
# "<dir>/<header>"; the other headers of <dir> stay private to <target>
# (tsl_private_folder). A header that does not exist is a configure error. A
# public header may include only public headers of <target> and of the
# libraries <target> links PUBLIC, or its users fail to compile.
function(tsl_public_headers target)
  cmake_parse_arguments(ARG "" "FOLDER" "" ${ARGN})
  if(NOT ARG_FOLDER)
    _tsl_default_folder(ARG_FOLDER)
  endif()
  set(root ${CMAKE_BINARY_DIR}/include/${target})
  file(REMOVE_RECURSE ${root})
  foreach(header ${ARG_UNPARSED_ARGUMENTS})
    set(source ${CMAKE_SOURCE_DIR}/${ARG_FOLDER}/${header})
    if(NOT EXISTS ${source})
      message(FATAL_ERROR "tsl_public_headers(${target}): no header ${ARG_FOLDER}/${header}")
    endif()
    get_filename_component(parent ${root}/${ARG_FOLDER}/${header} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${source} ${root}/${ARG_FOLDER}/${header} SYMBOLIC)
  endforeach()
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}>)
  tsl_private_folder(${target} FOLDER ${ARG_FOLDER})
endfunction()

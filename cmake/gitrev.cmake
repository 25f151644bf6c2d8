# Writes OUT with "#define BH_GIT_REVISION "<rev>"": the source tree's git revision (with
# "-dirty" when it has changes), or "unknown" outside a git checkout or without git.  Run at
# every build; the file is rewritten only when the revision changed, so nothing else rebuilds.
set(_rev "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SRC} describe --always --dirty --abbrev=12
                  OUTPUT_VARIABLE _out RESULT_VARIABLE _rc ERROR_QUIET
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_rc EQUAL 0 AND _out)
    set(_rev "${_out}")
  endif()
endif()
set(_text "#define BH_GIT_REVISION \"${_rev}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} _old)
endif()
if(NOT "${_old}" STREQUAL "${_text}")
  file(WRITE ${OUT} "${_text}")
endif()

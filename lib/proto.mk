# proto sources of libkubehsm (lib_libkubehsm_la_SOURCES += ...)

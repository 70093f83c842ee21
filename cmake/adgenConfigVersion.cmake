# adgen 0.1.0 (tests/test_cmake.py keeps this in step with pyproject.toml): compatible with a
# request for this version or an older one of the same major number.
set(PACKAGE_VERSION "0.1.0")
if(PACKAGE_FIND_VERSION AND (PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION
                             OR NOT PACKAGE_FIND_VERSION_MAJOR EQUAL 0))
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()

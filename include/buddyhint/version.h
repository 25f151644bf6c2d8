/* libbuddyhint version: defined here once, read by the build (CMakeLists.txt). */
#ifndef BUDDYHINT_VERSION_H
#define BUDDYHINT_VERSION_H

#define BH_VERSION_MAJOR 0
#define BH_VERSION_MINOR 2
#define BH_VERSION_PATCH 0

#define BH__STR2(x) #x
#define BH__STR(x) BH__STR2(x)
#define BH_VERSION_STRING                                                                          \
  BH__STR(BH_VERSION_MAJOR) "." BH__STR(BH_VERSION_MINOR) "." BH__STR(BH_VERSION_PATCH)
#define BH_VERSION_NUMBER (BH_VERSION_MAJOR * 10000 + BH_VERSION_MINOR * 100 + BH_VERSION_PATCH)

#endif

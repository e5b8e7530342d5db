# cmake configure (try_compile, test programs run in the view), build, install to a prefix, rebuild
command -v cmake >/dev/null || { echo cmake not installed; exit 0; }
mkdir -p proj/src
cat > proj/CMakeLists.txt <<'C'
cmake_minimum_required(VERSION 3.10)
project(demo C)
include(CheckIncludeFile)
include(CheckFunctionExists)
check_include_file(unistd.h HAVE_UNISTD_H)
check_function_exists(renameat2 HAVE_RENAMEAT2)
configure_file(config.h.in config.h)
add_library(demo STATIC src/lib.c)
add_executable(app src/main.c)
target_include_directories(app PRIVATE ${CMAKE_BINARY_DIR})
target_link_libraries(app demo)
install(TARGETS app DESTINATION bin)
C
printf '#cmakedefine HAVE_UNISTD_H 1\n#cmakedefine HAVE_RENAMEAT2 1\n' > proj/config.h.in
printf 'int add(int a, int b) { return a + b; }\n' > proj/src/lib.c
printf '#include <stdio.h>\n#include "config.h"\nint add(int,int);\nint main(void){\n#ifdef HAVE_UNISTD_H\nputs("unistd");\n#endif\nprintf("%%d\\n", add(40, 2));return 0;}\n' > proj/src/main.c
cmake -S proj -B build -DCMAKE_INSTALL_PREFIX="$PWD/prefix" >/dev/null 2>cmake.err || cat cmake.err
cmake --build build -j 4 >/dev/null && ./build/app
cmake --install build >/dev/null && ./prefix/bin/app
printf 'int add(int a, int b) { return a * b; }\n' > proj/src/lib.c
cmake --build build 2>&1 | grep -c 'Linking' ; ./build/app
cmake --build build --target clean >/dev/null && ls build | grep -c app
rm -rf build cmake.err
find prefix | sort

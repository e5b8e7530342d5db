# a shared library built in the view, loaded by a program built in the view (rpath, dlopen)
printf 'int sq(int x){return x*x;}\n' > sq.c
printf '#include <stdio.h>\nint sq(int);\nint main(void){printf("sq=%%d\\n", sq(7));return 0;}\n' > m.c
mkdir lib
gcc -shared -fPIC -o lib/libsq.so sq.c
gcc -o m m.c -Llib -lsq -Wl,-rpath,'$ORIGIN/lib'
./m
LD_LIBRARY_PATH=lib ./m
cat > dl.c <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int c, char **v){ void *h = dlopen(v[1], RTLD_NOW); if(!h){puts("dlopen failed");return 1;}
 int (*f)(int) = (int(*)(int))dlsym(h, "sq"); printf("%d\n", f(9)); return 0; }
C
gcc -o dl dl.c -ldl && ./dl ./lib/libsq.so
printf 'int sq(int x){return x*x*x;}\n' > sq.c && gcc -shared -fPIC -o lib/libsq.so sq.c && ./m && ./dl ./lib/libsq.so
mv lib lib2 && ./m 2>&1 | sed 's/^.*error while loading shared libraries/ERR/' | cut -c1-30
ln -s lib2 lib && ./m

# make decides by mtimes: rebuild after touching a source, nothing after touching the target
cat > Makefile <<'M'
all: prog
prog: main.o util.o
	gcc -o $@ main.o util.o
%.o: %.c util.h
	gcc -c -o $@ $<
clean:
	rm -f prog *.o
.PHONY: all clean
M
printf '#include "util.h"\n#include <stdio.h>\nint main(void){printf("%%d\\n", twice(21));return 0;}\n' > main.c
printf 'int twice(int x);\n' > util.h
printf '#include "util.h"\nint twice(int x){return 2*x;}\n' > util.c
make
./prog
make
touch -d '2001-01-01 UTC' util.c main.c util.h && make
sleep 0; touch util.h && make
printf '#include "util.h"\nint twice(int x){return 3*x;}\n' > util.c && make && ./prog
make -q; echo q=$?
make clean && ls
make -j4 -s && ./prog
ar rcs libu.a util.o && gcc -o prog2 main.o -L. -lu && ./prog2

# scripts written in the transaction run at once: a new one, one edited after a first run, one
# reached through a symlink; a file without the x bit, a missing interpreter and a directory fail
printf '#!/bin/sh\necho new-script "$@"\n' > s1 && chmod +x s1 && ./s1 x y
./exec.sh before
printf '#!/bin/sh\necho edited "$0"\n' > exec.sh && ./exec.sh
ln -s s1 s1-link && ./s1-link via-link
printf '#!/bin/sh\necho no\n' > noexec
./noexec 2>/dev/null; echo "no x bit: $?"
printf '#!/nonexistent/interp\n' > badint && chmod +x badint
./badint 2>/dev/null; echo "missing interpreter: $?"
./dir1 2>/dev/null; echo "directory: $?"
mkdir bin && mv s1 bin/tool && PATH=$PWD/bin:$PATH tool from-path
sh -c 'exec ./bin/tool exec-from-sh'

# exec: scripts without #!, #! to a script made in the view, missing x bit, directories, PATH lookup
mkdir bin
printf 'echo no-shebang "$@"\n' > bin/noshebang; chmod +x bin/noshebang
printf '#!/bin/sh\necho interp-script "$@"\n' > bin/interp; chmod +x bin/interp
printf '#!%s/bin/interp -x\nbody\n' "$PWD" > bin/nested; chmod +x bin/nested
printf '#!/usr/bin/env python3\nimport sys; print("py", sys.argv[1:])\n' > bin/py; chmod +x bin/py
printf '#!/bin/sh\necho noexec\n' > bin/nox
cp /bin/echo bin/myecho
PATH=$PWD/bin:$PATH
noshebang a b
interp c
nested d 2>&1
py e
nox 2>&1 | sed 's/.*nox: //'
./bin/nox 2>&1 | sed 's/.*nox: //'; echo rc=$?
sh bin/nox
myecho copied-binary
./dir1 2>&1 | sed 's/.*dir1: //'
ln -s myecho bin/echolink && echolink via-link
ln bin/myecho bin/echohard && echohard via-hardlink
chmod 700 bin/myecho && setpriv --reuid 1000 --regid 1000 --clear-groups ./exec.sh as-user 2>&1
mv bin/interp bin/interp2; nested gone 2>&1 | sed 's/.*nested: //'
python3 -c 'import subprocess; print(subprocess.run(["bin/py", "x"], capture_output=True, text=True).stdout, end="")'
python3 -c 'import os; os.execv("bin/myecho", ["e", "execv"])'

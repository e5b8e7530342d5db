# the working directory renamed or removed under the process: getcwd, pwd, relative opens and
# creating files in a removed cwd
mkdir -p w/x
cd w/x
mv ../../w ../../w2
pwd -P; /bin/pwd; python3 -c 'import os; print(os.getcwd())'
echo rel > rel.txt; cat ../../w2/x/rel.txt
rmdir ../../empty
cd ../../w2/x
rm -r ../../w2
python3 - <<'PY'
import os, errno
try: print(os.getcwd())
except OSError as e: print("getcwd", errno.errorcode[e.errno])
for f in [lambda: open("new", "w"), lambda: os.mkdir("d"), lambda: os.listdir("."), lambda: os.stat("."), lambda: os.stat("..")]:
    try: r = f(); print("ok", type(r).__name__, r if isinstance(r, list) else "")
    except OSError as e: print(errno.errorcode[e.errno])
PY
cd /; cd - >/dev/null 2>&1; echo "cd-back $?"

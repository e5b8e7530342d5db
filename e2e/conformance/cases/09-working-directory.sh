# a process's working directory: made in the transaction, moved while in it, reached through a
# symlink (pwd -L and -P), and relative paths from it after each change
mkdir -p work/in && cd work/in
echo here > f && pwd -P | sed 's|.*/||'
cd .. && mv in moved && cd moved && cat f && basename "$(pwd -P)"
cd ../.. && ln -s work/moved w && cd w
pwd -L | sed 's|.*/||'; pwd -P | sed 's|.*/||'
cd .. && cd work && mv moved ../top && cd ../top && ls
sh -c 'cd /; cd - >/dev/null && ls f'
python3 -c 'import os; os.chdir(".."); print(sorted(os.listdir("top")))'

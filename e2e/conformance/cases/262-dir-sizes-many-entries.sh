# Directory sizes and link counts after hundreds of entries are added and removed, in a
# directory the transaction made and in the fixture's.
mkdir big && i=0; while [ $i -lt 700 ]; do : > big/file-with-a-longish-name-$i; i=$((i+1)); done
stat -c '%n %s %h' big
i=0; while [ $i -lt 300 ]; do rm big/file-with-a-longish-name-$i; i=$((i+1)); done
stat -c '%n %s %h' big
mkdir big/d1 big/d2; rmdir big/d1
stat -c '%n %s %h' big
i=0; while [ $i -lt 200 ]; do : > dir1/added-name-$i; i=$((i+1)); done
stat -c '%n %s %h' dir1
rm dir1/added-name-1*
stat -c '%n %s %h' dir1
for d in */; do stat -c '%n %s %h' "$d"; done
stat -c '%n %s %h' .
ls -l | awk 'NR > 1 {print $1, $2, $5, $NF}'

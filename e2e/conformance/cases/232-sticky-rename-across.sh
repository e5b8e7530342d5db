# rename across directories involving a sticky directory: move out of / into sticky dirs
# owned by others, replace others' files, directories as targets
mkdir st1 st2 && chmod 1777 st1 st2
u() { n=$1; shift; setpriv --reuid "$n" --regid "$n" --clear-groups sh -c "$*" 2>&1 | sed 's/^[^:]*: //'; }
u 1000 'echo a > st1/a; mkdir st1/ad; echo y > st1/ad/y'
u 1001 'echo b > st2/b; mkdir st2/bd'
u 1001 'mv st1/a st2/a'
u 1000 'mv st1/a st2/a && echo moved-own'
u 1000 'mv st2/a st2/b'
u 1001 'mv st2/b st2/a'
u 1000 'mv st1/ad st2/bd'
u 1001 'mv st2/bd st1/ad'
u 1000 'mv st1/ad st2/ad && echo dir-moved'
u 1000 'mv st2/ad/y st1/y && echo moved-out-of-own-dir'
u 1001 'mv st2/ad st1/x'
mkdir st1/rootdir
u 1000 'mv st1/y st1/rootdir/'
u 1000 'rm -rf st2/ad && echo removed-own-tree'
chmod 1775 st2
u 1000 'echo z > st2/z'
u 1001 'mv st2/b st1/b2'
ls -ln st1 st2 | awk 'NF>2 {print $1, $3, $NF}'

# rsync -a within the tree: fresh copy, update in place and by temp file, --delete, --inplace,
# hard links (-H), --backup, a second run that changes nothing
command -v rsync >/dev/null || { echo rsync not installed; exit 0; }
rsync -a dir1/ copy/
find copy -printf '%p %y %m %TY\n' | sort
echo changed >> dir1/c.txt
touch -d '2010-10-10 UTC' dir1/c.txt
rm dir1/sub/d.txt && echo new > dir1/sub/n.txt
rsync -a --delete dir1/ copy/ && find copy | sort && cat copy/c.txt
rsync -a --itemize-changes dir1/ copy/ | wc -l
ln a.txt dir1/a-hard
rsync -aH . ../dest-not-allowed 2>/dev/null; mkdir hcopy && rsync -aH --exclude=fifo --exclude=hcopy --exclude=copy ./ hcopy/
stat -c '%n %h' hcopy/a.txt hcopy/hard-a hcopy/dir1/a-hard
echo edit > src.txt && rsync --inplace src.txt b.txt && cat b.txt && stat -c %a b.txt
rsync -b --suffix=.old a.txt ro.txt && cat ro.txt ro.txt.old
rsync -a --remove-source-files exec.sh moved.sh && ls exec.sh moved.sh 2>&1
rsync -rl --safe-links link-to-a dangling lnks/ && ls -l lnks | awk 'NR>1{print $1, $9, $10, $11}'

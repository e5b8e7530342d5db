# root without CAP_DAC_OVERRIDE, CAP_FOWNER or CAP_CHOWN is checked like anyone
as() { setpriv --bounding-set "$1" --inh-caps "$1" sh -c "$2" 2>&1; }
as -dac_override 'echo x >> user.txt; echo rc=$?'
as -dac_override 'cat user.txt; echo r=$?'
as -dac_override,-dac_read_search 'echo y > userdir/new; echo rc=$?'
as -dac_override,-dac_read_search 'chmod 700 userdir; ls userdir >/dev/null; echo ls=$?'
as -fowner 'chmod 600 user.txt; echo chmod=$?; touch -d 2001-01-02 user.txt; echo touch=$?'
as -chown 'chown 1001 a.txt; echo chown=$?; chown 0 a.txt; echo chown-same=$?'
as -fsetid 'chmod 4755 exec.sh; echo x >> exec.sh; stat -c %a exec.sh'
stat -c '%n %a %u' user.txt userdir a.txt exec.sh
ls userdir

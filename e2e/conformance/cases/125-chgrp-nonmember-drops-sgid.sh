# chgrp by an unprivileged owner who is not in the file's current group drops set-group-ID even
# without group execute (setattr_should_drop_sgid); txexec's root supervisor keeps it
echo x > f && chown 1000:0 f && chmod 2644 f
setpriv --reuid 1000 --regid 1000 --groups 1234 chgrp 1234 f
stat -c '%n %a %g' f

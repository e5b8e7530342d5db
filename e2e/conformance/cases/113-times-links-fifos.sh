# explicit times on symlinks and FIFOs, new and old, kept through renames, links and chown
ln -s a.txt nl && touch -h -d '2002-02-02 UTC' nl && mv nl dir1/nl-moved
touch -h -d '2003-03-03 UTC' link-to-a && mv link-to-a dir1/ && chown -h 1000:1000 dir1/link-to-a
mkfifo nf && touch -d '2004-04-04 UTC' nf && ln nf nf2 && mv nf dir1/
touch -d '2005-05-05 UTC' fifo && chmod 600 fifo && ln fifo fifo-h
ln -s dangling-target dl && touch -h -d '2006-06-06 UTC' dl && chown -h 1000 dl
python3 -c '
import os
os.utime("dangling", ns=(1, 2 * 10**9 + 5), follow_symlinks=False)
print(os.lstat("dangling").st_mtime_ns)'
stat -c '%n %Y %h %u' dir1/nl-moved dir1/link-to-a dir1/nf nf2 fifo fifo-h dl dangling

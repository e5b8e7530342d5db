# A tree deeper than PATH_MAX (4096 bytes), made with relative mkdir and chdir: Linux builds it
# (each call's path is short); txexec must write it through (the paths of its redo ops are
# longer than PATH_MAX). The files of the deepest levels are listed and removed again, so that
# the tree comparison (which stats files by their relative paths) stays below PATH_MAX; their
# creation and removal are still written through.
perl -e '
for my $n (0..44) {
  my $d = sprintf("dir_%0100d", $n);
  mkdir $d or die "mkdir $n: $!";
  chdir $d or die "chdir $n: $!";
  open(my $f, ">", "f.txt") or die "open $n: $!"; print $f "level $n\n"; close $f;
  symlink("f.txt", "l") or die "symlink $n: $!";
}
chdir ".." for 1..6;
for my $n (reverse 0..5) {
  chdir sprintf("dir_%0100d", 44 - $n) or die "chdir: $!";
}
open(my $f, "<", "f.txt") or die "reopen: $!"; print <$f>; close $f;
for my $n (reverse 38..44) {
  opendir(my $dh, ".") or die; print "$n: ", join(" ", sort grep !/^\./, readdir $dh), "\n"; closedir $dh;
  unlink "f.txt", "l" or die "unlink $n: $!";
  chdir ".." or die;
}
print "done\n";
'

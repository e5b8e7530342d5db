# perl file operations: unlink/chmod/utime return counts, rename errors, -e/-d/-f/-l/-s/-w
# tests, mkdir/rmdir, opendir/readdir after changes, link/symlink, sysopen O_EXCL
perl -e '
use Fcntl; use Errno;
print "unlink count: ", unlink("a.txt", "nope", "dir1/c.txt", "empty"), "\n";
print "chmod count: ", chmod(0640, "b.txt", "nope", "ro.txt"), "\n";
print "utime count: ", utime(1000000000, 1000000001, "b.txt", "nope", "dir1"), "\n";
my @s = stat("b.txt"); printf "b: %o %d %d\n", $s[2] & 07777, $s[8], $s[9];
print "rename missing: ", (rename("nope", "x") ? 1 : 0), " $!{ENOENT}\n";
print "rename dir over file: ", (rename("dir1", "b.txt") ? 1 : 0), " ", ($!{ENOTDIR}?"ENOTDIR":"$!"), "\n";
print "rename ok: ", rename("b.txt", "empty/b") ? 1 : 0, "\n";
for my $f (qw(a.txt hard-a dir1 empty/b link-to-a dangling fifo big.bin ro.txt dir-ro)) {
  printf "%-10s e%d d%d f%d l%d s%s p%d r%d w%d x%d\n", $f, -e $f ?1:0, -d $f ?1:0, -f $f ?1:0, -l $f ?1:0, (-s $f) // "u", -p $f ?1:0, -r $f ?1:0, -w $f ?1:0, -x $f ?1:0;
}
mkdir("pd") or die; mkdir("pd") or print "mkdir again: ", ($!{EEXIST}?"EEXIST":"$!"), "\n";
rmdir("dir1") or print "rmdir nonempty: ", ($!{ENOTEMPTY}?"ENOTEMPTY":"$!"), "\n";
sysopen(my $fh, "pd/x", O_WRONLY|O_CREAT|O_EXCL, 0600) or die; print $fh "x\n"; close $fh;
sysopen($fh, "pd/x", O_WRONLY|O_CREAT|O_EXCL) or print "excl: ", ($!{EEXIST}?"EEXIST":"$!"), "\n";
symlink("x", "pd/sl") or die; link("pd/x", "pd/hl") or die;
print "readlink: ", readlink("pd/sl"), " nlink: ", (stat("pd/x"))[3], "\n";
opendir(my $d, "pd") or die; my @n = sort grep !/^\.\.?$/, readdir $d; closedir $d; print "pd: @n\n";
rename("pd/x", "pd/y"); unlink("pd/hl");
opendir($d, "pd") or die; @n = sort grep !/^\.\.?$/, readdir $d; closedir $d; print "pd: @n\n";
print "dangling sl: ", (-e "pd/sl" ? 1 : 0), "\n";
open(my $a, ">>", "pd/y") or die; print $a "more\n"; close $a;
open($a, "<", "pd/y"); local $/; print "y: ", <$a>; close $a;
truncate("pd/y", 2); print "size: ", -s "pd/y", "\n";
'

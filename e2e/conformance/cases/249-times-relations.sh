# which operations change mtime/ctime of the object and of its directories: rename (ctime of
# the moved object, both parents' mtime), link, unlink of another name, chmod, truncate to the
# same size, open O_TRUNC of an empty file, utime to the same value, write of 0 bytes
python3 - <<'PY'
import os, time
def snap(paths):
    return {p: (os.lstat(p).st_mtime_ns, os.lstat(p).st_ctime_ns) for p in paths}
def step(label, f, watch):
    before = snap(watch); time.sleep(0.02); f(); 
    after = snap([w if os.path.lexists(w) else None for w in watch if os.path.lexists(w)])
    out = []
    for w in watch:
        if w not in after and w in before:
            # a renamed object: report it under its new name if given
            pass
        if w not in after: out.append(w + ":gone"); continue
        m = "M" if after[w][0] != before[w][0] else "-"
        c = "C" if after[w][1] != before[w][1] else "-"
        out.append(w + ":" + m + c)
    print(label.ljust(24), " ".join(out))
def ct(p): return os.lstat(p).st_ctime_ns
c0 = ct("dir1/c.txt"); os.rename("dir1/c.txt", "c-moved"); print("host file rename ctime", ct("c-moved") != c0)
c0 = ct("dir1/sub"); os.rename("dir1/sub", "sub-moved"); print("host dir rename ctime", ct("sub-moved") != c0)
c0 = ct("link-to-a"); os.rename("link-to-a", "l-moved"); print("host symlink rename ctime", ct("l-moved") != c0)
c0 = ct("ro.txt"); os.link("ro.txt", "ro2"); print("host file link ctime", ct("ro.txt") != c0, ct("ro2") == ct("ro.txt"))
c0 = ct("a.txt"); os.unlink("hard-a"); print("host file unlink other name ctime", ct("a.txt") != c0)
c0 = ct("user.txt"); os.rename("ro2", "user.txt"); print("rename of a second name over a file, ctime", ct("ro.txt") != c0, os.stat("ro.txt").st_nlink)
time_order = [ct(p) for p in ["c-moved", "sub-moved", "l-moved", "a.txt", "ro.txt"]]
print("ctimes in order of the changes", time_order == sorted(time_order))
os.mkdir("t1"); os.mkdir("t2"); open("t1/f", "w").write("x"); open("t1/e", "w").close(); os.mkdir("t1/d")
f_ino = os.stat("t1/f").st_ctime_ns
step("rename across", lambda: os.rename("t1/f", "t2/f"), ["t1", "t2", "t1/f", "t1/e"])
print("moved file ctime changed", os.stat("t2/f").st_ctime_ns != f_ino)
step("rename file ctime", lambda: os.rename("t2/f", "t2/g"), ["t2", "t2/f"])
step("rename dir", lambda: os.rename("t1/d", "t2/d"), ["t1", "t2"])
step("moved dir itself", lambda: os.rename("t2/d", "t2/d2"), ["t2/d"])
print("after rename", snap(["t2/d2"])["t2/d2"][1] > os.stat("t1").st_ctime_ns)
step("link", lambda: os.link("t2/g", "t1/g2"), ["t1", "t2", "t2/g"])
step("unlink other name", lambda: os.unlink("t1/g2"), ["t1", "t2/g"])
step("chmod same", lambda: os.chmod("t2/g", 0o644), ["t2/g", "t2"])
step("chown same", lambda: os.chown("t2/g", 0, 0), ["t2/g"])
step("truncate same size", lambda: os.truncate("t2/g", 1), ["t2/g"])
step("truncate bigger", lambda: os.truncate("t2/g", 5), ["t2/g"])
step("O_TRUNC empty", lambda: os.close(os.open("t1/e", os.O_WRONLY | os.O_TRUNC)), ["t1/e"])
step("O_TRUNC nonempty", lambda: os.close(os.open("t2/g", os.O_WRONLY | os.O_TRUNC)), ["t2/g"])
step("open O_WRONLY only", lambda: os.close(os.open("t2/g", os.O_WRONLY)), ["t2/g"])
def w0():
    fd = os.open("t2/g", os.O_WRONLY); os.write(fd, b""); os.close(fd)
step("write 0 bytes", w0, ["t2/g"])
step("utime same", lambda: os.utime("t2/g", ns=(os.stat("t2/g").st_atime_ns, os.stat("t2/g").st_mtime_ns)), ["t2/g"])
step("setxattr", lambda: os.setxattr("t2/g", "user.a", b"1"), ["t2/g", "t2"])
step("mkdir in", lambda: os.mkdir("t1/n"), ["t1", "t2/d2"])
step("rmdir in", lambda: os.rmdir("t1/n"), ["t1"])
step("symlink in", lambda: os.symlink("x", "t1/s"), ["t1"])
step("chown symlink", lambda: os.lchown("t1/s", 1, 1), ["t1/s", "t1"])
step("rename over", lambda: os.rename("t1/e", "t2/g"), ["t1", "t2"])
step("rename same hardlink", lambda: (os.link("t2/g", "t2/h"), os.rename("t2/g", "t2/h")), ["t2", "t2/g"])
PY

package syscalls

import (
	"encoding/binary"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"

	"txexec/interpose"
	"txexec/vfs"
)

// Getdents64 implements getdents64(2). A directory whose listing the view
// did not change is read by the kernel (CONTINUE: the decision uses the
// descriptor number alone, no memory). A changed one is served from the
// merged listing; the position is kept in the descriptor's own file offset
// as the d_off cookie of the last entry returned, so lseek, telldir and
// seekdir work and dup'ed descriptors share it, as in Linux.
func Getdents64(k *Kernel, c *interpose.Call) interpose.Reply {
	return getdents(k, c, true)
}

// Getdents implements the old getdents(2) (struct linux_dirent).
func Getdents(k *Kernel, c *interpose.Call) interpose.Reply {
	return getdents(k, c, false)
}

func getdents(k *Kernel, c *interpose.Call, is64 bool) interpose.Reply {
	fd := c.Args[0].Int()
	bufAddr := c.Args[1].Pointer()
	count := c.Args[2].Uint()
	if fd < 0 {
		return interpose.Fail(unix.EBADF)
	}
	cl, release, err := k.caller(c)
	if err != nil {
		return k.reply(c, 0, err)
	}
	defer release()
	ofd, err := c.GetFD(int(fd))
	if err != nil {
		return k.reply(c, 0, err)
	}
	h, err := k.View.HandleOf(cl, ofd)
	if err != nil {
		unix.Close(ofd)
		return k.reply(c, 0, err)
	}
	defer h.Release()
	ents, merged, err := k.View.Listing(cl, h)
	if err != nil {
		return k.reply(c, 0, err)
	}
	if !merged {
		return interpose.Continue()
	}
	pos, err := unix.Seek(h.FD(), 0, 1 /* SEEK_CUR */)
	if err != nil {
		return k.reply(c, 0, err)
	}
	buf, last := packDirents(ents, uint64(pos), int(count), is64)
	if len(buf) == 0 && last != uint64(pos) {
		return interpose.Fail(unix.EINVAL) // the buffer cannot hold one entry
	}
	if err := c.Write(bufAddr, buf); err != nil {
		return k.reply(c, 0, err)
	}
	if _, err := unix.Seek(h.FD(), int64(last), 0 /* SEEK_SET */); err != nil {
		return k.reply(c, 0, err)
	}
	return interpose.Return(int64(len(buf)))
}

// packDirents encodes the entries whose cookie is after pos (ents are in
// cookie order; cookie 0 is the start of the directory) into at most count
// bytes, and returns the bytes and the cookie of the last entry packed.
func packDirents(ents []vfs.Dirent, pos uint64, count int, is64 bool) ([]byte, uint64) {
	var out []byte
	last := pos
	start := sort.Search(len(ents), func(i int) bool { return ents[i].Off > pos })
	for _, e := range ents[start:] {
		var rec []byte
		if is64 {
			// struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
			reclen := (19 + len(e.Name) + 1 + 7) &^ 7
			rec = make([]byte, reclen)
			binary.NativeEndian.PutUint64(rec[0:], e.Ino)
			binary.NativeEndian.PutUint64(rec[8:], e.Off)
			binary.NativeEndian.PutUint16(rec[16:], uint16(reclen))
			rec[18] = e.Type
			copy(rec[19:], e.Name)
		} else {
			// struct linux_dirent { ulong d_ino; ulong d_off; u16 d_reclen; char d_name[]; char pad; char d_type; }
			reclen := (18 + len(e.Name) + 2 + 7) &^ 7
			rec = make([]byte, reclen)
			binary.NativeEndian.PutUint64(rec[0:], e.Ino)
			binary.NativeEndian.PutUint64(rec[8:], e.Off)
			binary.NativeEndian.PutUint16(rec[16:], uint16(reclen))
			copy(rec[18:], e.Name)
			rec[reclen-1] = e.Type
		}
		if len(out)+len(rec) > count {
			if len(out) == 0 {
				return nil, pos + 1 // signal "too small"
			}
			break
		}
		out = append(out, rec...)
		last = e.Off
	}
	return out, last
}

// InotifyAddWatch implements inotify_add_watch(2) on the object the path
// names in the caller's view.
func InotifyAddWatch(k *Kernel, c *interpose.Call) interpose.Reply {
	ifd := c.Args[0].Int()
	pathAddr := c.Args[1].Pointer()
	mask := c.Args[2].Uint()
	return k.pathCall(c, unix.AT_FDCWD, pathAddr, func(cl *vfs.Caller, at *vfs.Handle, path string) (int64, error) {
		if path == "" {
			return 0, unix.ENOENT
		}
		access := unix.AT_EACCESS
		if mask&unix.IN_DONT_FOLLOW != 0 {
			access |= unix.AT_SYMLINK_NOFOLLOW
		}
		// inotify(7): watching needs read permission on the object.
		if err := k.View.Access(cl, at, path, unix.R_OK, access); err != nil {
			return 0, err
		}
		ours, err := c.GetFD(int(ifd))
		if err != nil {
			return 0, err
		}
		defer unix.Close(ours)
		how := vfs.OpenHow{Flags: unix.O_PATH}
		if mask&unix.IN_DONT_FOLLOW != 0 {
			how.Flags |= unix.O_NOFOLLOW
		}
		if mask&unix.IN_ONLYDIR != 0 {
			how.Flags |= unix.O_DIRECTORY
		}
		obj, err := k.View.Open(cl, at, path, how)
		if err != nil {
			return 0, err
		}
		defer unix.Close(obj)
		wd, err := unix.InotifyAddWatch(ours, "/proc/self/fd/"+strconv.Itoa(obj), mask)
		return int64(wd), err
	})
}

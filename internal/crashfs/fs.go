package crashfs

import (
	"bytes"
	"maps"
	"path"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// fs serves one tree on one mount. After a cut (or when the mount is
// replaced) it is frozen: every request fails with EIO and the tree is not
// changed again.
type fs struct {
	fuse.RawFileSystem // ENOSYS for what is not served

	mu      sync.Mutex
	tree    *tree
	frozen  bool
	handles map[uint64]*handle
	nextFh  uint64

	// boundaries are the kinds of the boundary operations performed
	// since the last arm; cutAt is the number allowed before the cut (-1:
	// no cut), onCut runs at the cut.
	boundaries []string
	cutAt      int
	onCut      func()
	cut        bool

	// fsyncs counts fsync requests since the last FailFsync; failNth
	// (> 0) and failPath select those that fail.
	fsyncs   int
	failNth  int
	failPath string
	failed   int
}

// handle is an open file or directory.
type handle struct {
	ino     uint64
	listing []fuse.DirEntry // a directory's entries, read at open and at rewind
}

func newFS(t *tree) *fs {
	return &fs{RawFileSystem: fuse.NewDefaultRawFileSystem(), tree: t, handles: map[uint64]*handle{}, nextFh: 1, cutAt: -1}
}

func (f *fs) String() string { return "crashfs" }

// begin locks the file system for a request; a frozen one refuses it.
func (f *fs) begin() fuse.Status {
	f.mu.Lock()
	if f.frozen {
		f.mu.Unlock()
		return fuse.EIO
	}
	return fuse.OK
}

// boundary locks the file system for a boundary operation of a kind: it
// counts it, and cuts the power instead when it is the one armed.
func (f *fs) boundary(kind string) fuse.Status {
	if st := f.begin(); st != fuse.OK {
		return st
	}
	if f.cutAt >= 0 && len(f.boundaries) >= f.cutAt {
		f.frozen, f.cut = true, true
		if f.onCut != nil {
			f.onCut()
		}
		f.mu.Unlock()
		return fuse.EIO
	}
	f.boundaries = append(f.boundaries, kind)
	return fuse.OK
}

func (f *fs) node(ino uint64) *inode { return f.tree.inodes[ino] }

// fill describes n for the kernel. Nothing is cached: the attributes and
// entries the kernel holds would outlive a cut otherwise.
func (f *fs) fill(n *inode, a *fuse.Attr) {
	v := n.vol
	size := uint64(len(v.data))
	*a = fuse.Attr{
		Ino: n.ino, Size: size, Blocks: (size + 511) / 512, Mode: v.mode, Nlink: f.tree.nlink(n),
		Owner: fuse.Owner{Uid: v.uid, Gid: v.gid}, Rdev: v.rdev, Blksize: 4096,
	}
	a.SetTimes(&v.atime, &v.mtime, &v.ctime)
}

func (f *fs) fillEntry(n *inode, out *fuse.EntryOut) {
	out.NodeId, out.Generation = n.ino, 1
	f.fill(n, &out.Attr)
}

func (f *fs) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if st := f.begin(); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	ino, ok := f.node(h.NodeId).entries[name]
	if !ok {
		return fuse.ENOENT
	}
	f.fillEntry(f.node(ino), out)
	return fuse.OK
}

func (f *fs) Forget(uint64, uint64) {}

func (f *fs) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if st := f.begin(); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	f.fill(f.node(in.NodeId), &out.Attr)
	return fuse.OK
}

func (f *fs) SetAttr(_ <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	if st := f.boundary("setattr"); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	n := f.node(in.NodeId)
	now := time.Now()
	v := &n.vol
	if in.Valid&fuse.FATTR_MODE != 0 {
		v.mode = v.mode&syscall.S_IFMT | in.Mode&0o7777
	}
	if in.Valid&fuse.FATTR_UID != 0 {
		v.uid = in.Uid
	}
	if in.Valid&fuse.FATTR_GID != 0 {
		v.gid = in.Gid
	}
	if in.Valid&fuse.FATTR_SIZE != 0 {
		if v.isDir() {
			return fuse.EISDIR
		}
		v.data = resize(v.data, int(in.Size))
		v.mtime = now
	}
	switch {
	case in.Valid&fuse.FATTR_ATIME_NOW != 0:
		v.atime = now
	case in.Valid&fuse.FATTR_ATIME != 0:
		v.atime = time.Unix(int64(in.Atime), int64(in.Atimensec))
	}
	switch {
	case in.Valid&fuse.FATTR_MTIME_NOW != 0:
		v.mtime = now
	case in.Valid&fuse.FATTR_MTIME != 0:
		v.mtime = time.Unix(int64(in.Mtime), int64(in.Mtimensec))
	}
	v.ctime = now
	if in.Valid&fuse.FATTR_CTIME != 0 {
		v.ctime = time.Unix(int64(in.Ctime), int64(in.Ctimensec))
	}
	f.fill(n, &out.Attr)
	return fuse.OK
}

func resize(b []byte, size int) []byte {
	if size <= len(b) {
		return b[:size:size]
	}
	return append(b, make([]byte, size-len(b))...)
}

// make creates name in directory dir as the caller: owner and group as
// the kernel gives them, or the directory's group under set-group-ID,
// which a new directory inherits.
func (f *fs) make(h *fuse.InHeader, name string, mode, rdev uint32, data []byte) (*inode, fuse.Status) {
	dir := f.node(h.NodeId)
	if _, ok := dir.entries[name]; ok {
		return nil, fuse.Status(syscall.EEXIST)
	}
	now := time.Now()
	v := version{mode: mode, uid: h.Uid, gid: h.Gid, rdev: rdev, atime: now, mtime: now, ctime: now, data: data}
	if dir.vol.mode&syscall.S_ISGID != 0 {
		v.gid = dir.vol.gid
		if v.isDir() {
			v.mode |= syscall.S_ISGID
		}
	}
	n := f.tree.create(v)
	f.tree.change(entryChange{dir: dir.ino, name: name, ino: n.ino})
	return n, fuse.OK
}

func (f *fs) Mknod(_ <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	if st := f.begin(); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	n, st := f.make(&in.InHeader, name, in.Mode, in.Rdev, nil)
	if st == fuse.OK {
		f.fillEntry(n, out)
	}
	return st
}

func (f *fs) Mkdir(_ <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	if st := f.begin(); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	n, st := f.make(&in.InHeader, name, syscall.S_IFDIR|in.Mode&0o7777, 0, nil)
	if st == fuse.OK {
		f.fillEntry(n, out)
	}
	return st
}

func (f *fs) Symlink(_ <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	if st := f.begin(); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	n, st := f.make(h, name, syscall.S_IFLNK|0o777, 0, []byte(target))
	if st == fuse.OK {
		f.fillEntry(n, out)
	}
	return st
}

func (f *fs) Readlink(_ <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	if st := f.begin(); st != fuse.OK {
		return nil, st
	}
	defer f.mu.Unlock()
	return slices.Clone(f.node(h.NodeId).vol.data), fuse.OK
}

func (f *fs) Create(_ <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	if st := f.begin(); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	n, st := f.make(&in.InHeader, name, syscall.S_IFREG|in.Mode&0o7777, 0, nil)
	if st != fuse.OK {
		return st
	}
	f.fillEntry(n, &out.EntryOut)
	out.Fh = f.open(n.ino)
	return fuse.OK
}

func (f *fs) open(ino uint64) uint64 {
	fh := f.nextFh
	f.nextFh++
	f.handles[fh] = &handle{ino: ino}
	return fh
}

func (f *fs) Unlink(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return f.remove(h, name, false)
}

func (f *fs) Rmdir(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return f.remove(h, name, true)
}

func (f *fs) remove(h *fuse.InHeader, name string, dir bool) fuse.Status {
	kind := "unlink"
	if dir {
		kind = "rmdir"
	}
	if st := f.boundary(kind); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	ino, ok := f.node(h.NodeId).entries[name]
	if !ok {
		return fuse.ENOENT
	}
	n := f.node(ino)
	switch {
	case dir && !n.vol.isDir():
		return fuse.ENOTDIR
	case !dir && n.vol.isDir():
		return fuse.Status(syscall.EISDIR)
	case dir && len(n.entries) > 0:
		return fuse.Status(syscall.ENOTEMPTY)
	}
	f.tree.change(entryChange{dir: h.NodeId, name: name})
	return fuse.OK
}

func (f *fs) Rename(_ <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	if st := f.boundary("rename"); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	from, to := f.node(in.NodeId), f.node(in.Newdir)
	src, ok := from.entries[oldName]
	if !ok {
		return fuse.ENOENT
	}
	dst, exists := to.entries[newName]
	switch {
	case in.Flags&^(unixRenameNoreplace|unixRenameExchange) != 0:
		return fuse.EINVAL
	case in.Flags&unixRenameExchange != 0:
		if !exists {
			return fuse.ENOENT
		}
		f.tree.change(entryChange{from.ino, oldName, dst}, entryChange{to.ino, newName, src})
		f.touch(src, dst)
		return fuse.OK
	case exists && in.Flags&unixRenameNoreplace != 0:
		return fuse.Status(syscall.EEXIST)
	case exists && dst == src:
		// Two names of one file: rename does nothing.
		return fuse.OK
	case exists && f.node(dst).vol.isDir() != f.node(src).vol.isDir():
		if f.node(dst).vol.isDir() {
			return fuse.Status(syscall.EISDIR)
		}
		return fuse.ENOTDIR
	case exists && len(f.node(dst).entries) > 0:
		return fuse.Status(syscall.ENOTEMPTY)
	}
	f.tree.change(entryChange{from.ino, oldName, 0}, entryChange{to.ino, newName, src})
	f.touch(src)
	return fuse.OK
}

// Linux's renameat2 flags.
const (
	unixRenameNoreplace = 1 << 0
	unixRenameExchange  = 1 << 1
)

// touch moves the ctime of inodes a rename moved.
func (f *fs) touch(inos ...uint64) {
	now := time.Now()
	for _, ino := range inos {
		f.node(ino).vol.ctime = now
	}
}

func (f *fs) Link(_ <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	if st := f.boundary("link"); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	if _, ok := f.node(in.NodeId).entries[name]; ok {
		return fuse.Status(syscall.EEXIST)
	}
	f.tree.change(entryChange{dir: in.NodeId, name: name, ino: in.Oldnodeid})
	n := f.node(in.Oldnodeid)
	f.touch(n.ino)
	f.fillEntry(n, out)
	return fuse.OK
}

func (f *fs) GetXAttr(_ <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	if st := f.begin(); st != fuse.OK {
		return 0, st
	}
	defer f.mu.Unlock()
	val, ok := f.node(h.NodeId).vol.xattrs[attr]
	if !ok {
		return 0, fuse.ENOATTR
	}
	if len(dest) < len(val) {
		return uint32(len(val)), fuse.ERANGE
	}
	return uint32(copy(dest, val)), fuse.OK
}

func (f *fs) ListXAttr(_ <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	if st := f.begin(); st != fuse.OK {
		return 0, st
	}
	defer f.mu.Unlock()
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(f.node(h.NodeId).vol.xattrs)) {
		b.WriteString(k)
		b.WriteByte(0)
	}
	if len(dest) < b.Len() {
		return uint32(b.Len()), fuse.ERANGE
	}
	return uint32(copy(dest, b.Bytes())), fuse.OK
}

// Linux's setxattr flags.
const (
	xattrCreate  = 1
	xattrReplace = 2
)

func (f *fs) SetXAttr(_ <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	if st := f.boundary("setxattr"); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	v := &f.node(in.NodeId).vol
	_, exists := v.xattrs[attr]
	switch {
	case exists && in.Flags&xattrCreate != 0:
		return fuse.Status(syscall.EEXIST)
	case !exists && in.Flags&xattrReplace != 0:
		return fuse.ENOATTR
	}
	if v.xattrs == nil {
		v.xattrs = map[string][]byte{}
	}
	v.xattrs[attr] = slices.Clone(data)
	v.ctime = time.Now()
	return fuse.OK
}

func (f *fs) RemoveXAttr(_ <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	if st := f.boundary("removexattr"); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	v := &f.node(h.NodeId).vol
	if _, ok := v.xattrs[attr]; !ok {
		return fuse.ENOATTR
	}
	delete(v.xattrs, attr)
	v.ctime = time.Now()
	return fuse.OK
}

func (f *fs) Open(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if st := f.begin(); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	n := f.node(in.NodeId)
	if in.Flags&syscall.O_TRUNC != 0 && len(n.vol.data) > 0 {
		n.vol.data = nil
		n.vol.mtime, n.vol.ctime = time.Now(), time.Now()
	}
	out.Fh = f.open(in.NodeId)
	return fuse.OK
}

func (f *fs) Read(_ <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	if st := f.begin(); st != fuse.OK {
		return nil, st
	}
	defer f.mu.Unlock()
	data := f.node(in.NodeId).vol.data
	if in.Offset >= uint64(len(data)) {
		return fuse.ReadResultData(nil), fuse.OK
	}
	k := copy(buf, data[in.Offset:])
	return fuse.ReadResultData(buf[:k]), fuse.OK
}

func (f *fs) Write(_ <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	if st := f.begin(); st != fuse.OK {
		return 0, st
	}
	defer f.mu.Unlock()
	v := &f.node(in.NodeId).vol
	end := int(in.Offset) + len(data)
	if end > len(v.data) {
		v.data = resize(v.data, end)
	}
	copy(v.data[in.Offset:], data)
	v.mtime, v.ctime = time.Now(), time.Now()
	return uint32(len(data)), fuse.OK
}

func (f *fs) Fallocate(_ <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	if st := f.begin(); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	if in.Mode != 0 {
		return fuse.Status(syscall.EOPNOTSUPP)
	}
	v := &f.node(in.NodeId).vol
	if end := int(in.Offset + in.Length); end > len(v.data) {
		v.data = resize(v.data, end)
	}
	return fuse.OK
}

func (f *fs) Flush(<-chan struct{}, *fuse.FlushIn) fuse.Status { return fuse.OK }

func (f *fs) Release(_ <-chan struct{}, in *fuse.ReleaseIn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.handles, in.Fh)
}

func (f *fs) Fsync(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if in.FsyncFlags&1 != 0 {
		return f.fsync(in, "fdatasync")
	}
	return f.fsync(in, "fsync")
}

func (f *fs) FsyncDir(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	return f.fsync(in, "fsyncdir")
}

// fsync makes the object durable (see the package doc), unless a fault
// makes it fail.
func (f *fs) fsync(in *fuse.FsyncIn, kind string) fuse.Status {
	if st := f.boundary(kind); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	f.fsyncs++
	if f.failNth > 0 && f.fsyncs == f.failNth || f.failPath != "" && f.matches(in.NodeId, f.failPath) {
		f.failed++
		return fuse.EIO
	}
	f.tree.syncInode(f.node(in.NodeId), in.FsyncFlags&1 != 0)
	return fuse.OK
}

func (f *fs) matches(ino uint64, pattern string) bool {
	for _, p := range f.tree.paths(ino) {
		if ok, _ := path.Match(pattern, p); ok {
			return true
		}
	}
	return false
}

func (f *fs) OpenDir(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if st := f.begin(); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	out.Fh = f.open(in.NodeId)
	return fuse.OK
}

// listing is what readdir returns of dir: ".", "..", then its entries
// by name.
func (f *fs) listing(dir *inode) []fuse.DirEntry {
	ls := []fuse.DirEntry{{Name: ".", Mode: syscall.S_IFDIR, Ino: dir.ino}, {Name: "..", Mode: syscall.S_IFDIR}}
	for _, name := range slices.Sorted(maps.Keys(dir.entries)) {
		n := f.node(dir.entries[name])
		ls = append(ls, fuse.DirEntry{Name: name, Mode: n.vol.mode, Ino: n.ino})
	}
	for i := range ls {
		ls[i].Off = uint64(i + 1)
	}
	return ls
}

func (f *fs) ReadDir(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if st := f.begin(); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	h := f.handles[in.Fh]
	if h == nil {
		return fuse.EBADF
	}
	if in.Offset == 0 || h.listing == nil {
		h.listing = f.listing(f.node(in.NodeId))
	}
	for _, e := range h.listing[min(int(in.Offset), len(h.listing)):] {
		if !out.AddDirEntry(e) {
			break
		}
	}
	return fuse.OK
}

func (f *fs) ReleaseDir(in *fuse.ReleaseIn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.handles, in.Fh)
}

func (f *fs) StatFs(_ <-chan struct{}, _ *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	if st := f.begin(); st != fuse.OK {
		return st
	}
	defer f.mu.Unlock()
	*out = fuse.StatfsOut{Blocks: 1 << 24, Bfree: 1 << 23, Bavail: 1 << 23, Files: 1 << 20, Ffree: 1 << 19,
		Bsize: 4096, NameLen: 255, Frsize: 4096}
	return fuse.OK
}

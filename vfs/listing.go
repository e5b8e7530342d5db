package vfs

import (
	"hash/fnv"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Listing implements View: the entries of a directory of the view — its
// host entries as the transaction first read them, less whiteouts, plus
// the entries it made. Every directory of the view is listed this way,
// changed or not: a reader stays in one cookie space when the listing
// changes under it (readdir while deleting), and sees the inode numbers
// stat shows (a copied-up file has its staged object's). Only passthrough
// directories are listed by the kernel.
//
// Order and cookies: host entries keep the host's order (a program lists
// an unchanged directory as it would natively: tar and find write the same
// archive, the same output), with cookie i+1 for the i-th entry of the
// host listing, "." and ".." included; entries the transaction made follow,
// each with the next cookie when a listing first shows it. Cookies never
// move, so removals and additions never make a reader skip or repeat
// others (an entry added behind its position is not seen, as POSIX
// allows).
//
// The slice returned is shared (Tx.listed) and must not be modified.
func (v *Tx) Listing(c *Caller, dir *Handle) ([]Dirent, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := dir.node
	if n != nil && n.removed {
		// A removed directory lists nothing, not even "." and "..".
		return nil, true, nil
	}
	if n == nil || !n.isDir() || n.passthrough {
		return nil, false, nil
	}
	if v.listedDir == n && v.listedGen == v.gen {
		return v.listed, true, nil
	}
	ents, dot, dotdot, err := v.listLocked(n)
	if err != nil {
		return nil, false, err
	}
	self := v.inoLocked(n)
	parent := self
	if n.parent != nil {
		parent = v.inoLocked(n.parent)
	}
	out := append(ents, Dirent{Off: dot, Name: ".", Ino: self, Type: unix.DT_DIR},
		Dirent{Off: dotdot, Name: "..", Ino: parent, Type: unix.DT_DIR})
	sort.Slice(out, func(i, j int) bool { return out[i].Off < out[j].Off })
	v.listedDir, v.listed, v.listedGen = n, out, v.gen
	return out, true, nil
}

// listLocked returns a directory's entries in the view, without "." and
// "..", with their cookies (see Listing), and the cookies of "." and "..".
//
// Preconditions: v.mu held; n is a directory.
func (v *Tx) listLocked(n *Node) (ents []Dirent, dot, dotdot uint64, err error) {
	byName := map[string]Dirent{}
	dot, dotdot = 1, 2
	base := uint64(3)
	if !n.opaque && n.hostFd >= 0 {
		host, err := v.hostListLocked(n)
		if err != nil {
			return nil, 0, 0, err
		}
		if v.SortedListings {
			host = sortedByName(host)
		}
		for i, e := range host {
			e.Off = uint64(i + 1)
			switch e.Name {
			case ".":
				dot = e.Off
				continue
			case "..":
				dotdot = e.Off
				continue
			}
			if k := v.nodes[FileID{Dev: n.host.Dev, Ino: e.Ino}]; k != nil {
				e.Ino = v.inoLocked(k)
			} else if v.VirtualInodes {
				e.Ino = v.virtualInoLocked(FileID{Dev: n.host.Dev, Ino: e.Ino})
			}
			byName[e.Name] = e
		}
		base = uint64(len(host) + 1)
	}
	var fresh []string
	for name, e := range n.entries {
		if e == nil {
			delete(byName, name)
			continue
		}
		d := Dirent{Name: name, Ino: v.inoLocked(e), Type: dtype(e.typ)}
		if old, ok := byName[name]; ok {
			d.Off = old.Off // recreated: the host name's place
		} else if off, ok := n.cookies[name]; ok {
			d.Off = off
		} else {
			fresh = append(fresh, name)
		}
		byName[name] = d
	}
	sort.Strings(fresh)
	for _, name := range fresh {
		if n.cookies == nil {
			n.cookies = map[string]uint64{}
		}
		d := byName[name]
		d.Off = base + uint64(len(n.cookies))
		n.cookies[name] = d.Off
		byName[name] = d
	}
	ents = make([]Dirent, 0, len(byName)+2)
	for _, e := range byName {
		ents = append(ents, e)
	}
	return ents, dot, dotdot, nil
}

// sortedByName returns a copy of a host listing with "." and ".." first
// and the other entries by name (byte order), for Tx.SortedListings.
func sortedByName(ents []Dirent) []Dirent {
	out := append([]Dirent(nil), ents...)
	rank := func(name string) int {
		switch name {
		case ".":
			return 0
		case "..":
			return 1
		}
		return 2
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank(out[i].Name), rank(out[j].Name)
		if ri != rj {
			return ri < rj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func dtype(t uint32) uint8 {
	switch t {
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFLNK:
		return unix.DT_LNK
	case unix.S_IFIFO:
		return unix.DT_FIFO
	case unix.S_IFSOCK:
		return unix.DT_SOCK
	case unix.S_IFCHR:
		return unix.DT_CHR
	case unix.S_IFBLK:
		return unix.DT_BLK
	}
	return unix.DT_UNKNOWN
}

// readHostDir lists a host directory (without "." and "..").
func readHostDir(pathFd int) ([]Dirent, error) {
	all, err := readHostDirAll(pathFd)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, e := range all {
		if e.Name != "." && e.Name != ".." {
			out = append(out, e)
		}
	}
	return out, nil
}

// readHostDirAll lists a host directory in the kernel's order, "." and ".."
// included where the kernel puts them, staging areas left out (isAreaName).
func readHostDirAll(pathFd int) ([]Dirent, error) {
	fd, err := openHostOriginal(pathFd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOATIME)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var out []Dirent
	buf := make([]byte, 32768)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		for off := 0; off < n; {
			reclen := int(uint16(buf[off+16]) | uint16(buf[off+17])<<8)
			ino := uint64(0)
			for i := 7; i >= 0; i-- {
				ino = ino<<8 | uint64(buf[off+i])
			}
			typ := buf[off+18]
			name := buf[off+19 : off+reclen]
			if i := strings.IndexByte(string(name), 0); i >= 0 {
				name = name[:i]
			}
			if !isAreaName(string(name)) {
				out = append(out, Dirent{Name: string(name), Ino: ino, Type: typ})
			}
			off += reclen
		}
	}
}

// hostListLocked returns a host directory's entries as the transaction
// first read them ("." and ".." included), recording the listing in the
// read set.
//
// Preconditions: v.mu held; n is a host directory.
func (v *Tx) hostListLocked(n *Node) ([]Dirent, error) {
	if n.hostList != nil {
		return n.hostList, nil
	}
	ents, err := readHostDirAll(n.hostFd)
	if err != nil {
		return nil, err
	}
	if ents == nil {
		ents = []Dirent{}
	}
	if !n.passthrough {
		n.hostList = ents
		if n.hostPath != "" {
			var names []Dirent
			for _, e := range ents {
				if e.Name != "." && e.Name != ".." {
					names = append(names, e)
				}
			}
			r := v.reads[n.hostPath]
			r.exists, r.id, r.typ = true, n.host, n.typ
			r.listing, r.listingChecksum = true, listingChecksum(names)
			v.reads[n.hostPath] = r
		}
	}
	return ents, nil
}

func listingChecksum(ents []Dirent) uint64 {
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name
	}
	sort.Strings(names)
	h := fnv.New64a()
	for _, s := range names {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

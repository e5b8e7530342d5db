package fastlookup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"txexec/internal/testenv"
)

// TestLayoutMatchesC compiles a program against fastlookup.h that prints
// every constant, size, offset and a few keys, and checks them against the
// Go declarations: the agent and the supervisor must read the same bytes
// and hash the same way.
func TestLayoutMatchesC(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		testenv.SkipOrFail(t, "no C compiler: %v", err)
	}
	var tr treeLayout
	var rec recordLayout
	var ring ringLayout
	paths := []string{"/", "/usr", "/usr/include/stdio.h", "/a/b/c", "", strings.Repeat("x/", 100)}
	objects := [][2]uint64{{0, 0}, {2049, 131}, {1 << 63, ^uint64(0)}, {0x1234_5678_9abc_def0, 7}}
	want := []struct {
		c     string
		goVal uint64
	}{
		{"FL_LAYOUT_VERSION", LayoutVersion},
		{"FL_CHANGED_N", ChangedN}, {"FL_OBJECTS_N", ObjectsN}, {"FL_FASTDIRS_N", FastDirsN},
		{"FL_RING_N", RingN}, {"FL_SEEN_N", SeenN}, {"FL_PATH_MAX", PathMax}, {"FL_LINKS_N", LinksN}, {"FL_NATIVES_N", NativesN},
		{"FL_KEY_EMPTY", KeyEmpty}, {"FL_KEY_REMOVED", KeyRemoved},
		{"FL_CHANGED_SELF", uint64(ChangedSelf)}, {"FL_CHANGED_SUBTREE", uint64(ChangedSubtree)},
		{"(uint64_t)(int64_t)FL_NR_NONE", nrNone()}, {"FL_OBSERVED", flObserved}, {"FL_RELATIVE", flRelative}, {"FL_DESCRIPTOR", flDescriptor},
		{"sizeof(struct fl_tree)", uint64(unsafe.Sizeof(tr))},
		{"offsetof(struct fl_tree, version)", uint64(unsafe.Offsetof(tr.version))},
		{"offsetof(struct fl_tree, enabled)", uint64(unsafe.Offsetof(tr.enabled))},
		{"offsetof(struct fl_tree, generation)", uint64(unsafe.Offsetof(tr.generation))},
		{"offsetof(struct fl_tree, changed)", uint64(unsafe.Offsetof(tr.changed))},
		{"offsetof(struct fl_tree, objects)", uint64(unsafe.Offsetof(tr.objects))},
		{"offsetof(struct fl_tree, fastdirs)", uint64(unsafe.Offsetof(tr.fastDirs))},
		{"offsetof(struct fl_tree, dirids)", uint64(unsafe.Offsetof(tr.dirIDs))},
		{"offsetof(struct fl_tree, links)", uint64(unsafe.Offsetof(tr.links))},
		{"offsetof(struct fl_tree, natives)", uint64(unsafe.Offsetof(tr.natives))},
		{"sizeof(struct fl_native)", uint64(unsafe.Sizeof(nativeEntry{}))},
		{"offsetof(struct fl_native, dev)", uint64(unsafe.Offsetof(nativeEntry{}.dev))},
		{"offsetof(struct fl_native, ino)", uint64(unsafe.Offsetof(nativeEntry{}.ino))},
		{"sizeof(struct fl_link)", uint64(unsafe.Sizeof(linkEntry{}))},
		{"offsetof(struct fl_link, target)", uint64(unsafe.Offsetof(linkEntry{}.target))},
		{"sizeof(struct fl_dirid)", uint64(unsafe.Sizeof(dirIDEntry{}))},
		{"offsetof(struct fl_dirid, prefix)", uint64(unsafe.Offsetof(dirIDEntry{}.prefix))},
		{"offsetof(struct fl_dirid, dev)", uint64(unsafe.Offsetof(dirIDEntry{}.dev))},
		{"offsetof(struct fl_dirid, ino)", uint64(unsafe.Offsetof(dirIDEntry{}.ino))},
		{"sizeof(struct fl_changed)", uint64(unsafe.Sizeof(changedEntry{}))},
		{"offsetof(struct fl_changed, kind)", uint64(unsafe.Offsetof(changedEntry{}.kind))},
		{"sizeof(struct fl_fastdir)", uint64(unsafe.Sizeof(fastDirEntry{}))},
		{"offsetof(struct fl_fastdir, dev)", uint64(unsafe.Offsetof(fastDirEntry{}.dev))},
		{"offsetof(struct fl_fastdir, ino)", uint64(unsafe.Offsetof(fastDirEntry{}.ino))},
		{"sizeof(struct fl_record)", uint64(unsafe.Sizeof(rec))},
		{"offsetof(struct fl_record, seq)", uint64(unsafe.Offsetof(rec.seq))},
		{"offsetof(struct fl_record, generation)", uint64(unsafe.Offsetof(rec.generation))},
		{"offsetof(struct fl_record, nr)", uint64(unsafe.Offsetof(rec.nr))},
		{"offsetof(struct fl_record, path_len)", uint64(unsafe.Offsetof(rec.pathLen))},
		{"offsetof(struct fl_record, result)", uint64(unsafe.Offsetof(rec.result))},
		{"offsetof(struct fl_record, dev)", uint64(unsafe.Offsetof(rec.dev))},
		{"offsetof(struct fl_record, ino)", uint64(unsafe.Offsetof(rec.ino))},
		{"offsetof(struct fl_record, mode)", uint64(unsafe.Offsetof(rec.mode))},
		{"offsetof(struct fl_record, uid)", uint64(unsafe.Offsetof(rec.uid))},
		{"offsetof(struct fl_record, gid)", uint64(unsafe.Offsetof(rec.gid))},
		{"offsetof(struct fl_record, flags)", uint64(unsafe.Offsetof(rec.flags))},
		{"offsetof(struct fl_record, size)", uint64(unsafe.Offsetof(rec.size))},
		{"offsetof(struct fl_record, mtime_sec)", uint64(unsafe.Offsetof(rec.mtimeSec))},
		{"offsetof(struct fl_record, mtime_nsec)", uint64(unsafe.Offsetof(rec.mtimeNsec))},
		{"offsetof(struct fl_record, ctime_sec)", uint64(unsafe.Offsetof(rec.ctimeSec))},
		{"offsetof(struct fl_record, ctime_nsec)", uint64(unsafe.Offsetof(rec.ctimeNsec))},
		{"offsetof(struct fl_record, dir_dev)", uint64(unsafe.Offsetof(rec.dirDev))},
		{"offsetof(struct fl_record, dir_ino)", uint64(unsafe.Offsetof(rec.dirIno))},
		{"offsetof(struct fl_record, path)", uint64(unsafe.Offsetof(rec.path))},
		{"sizeof(struct fl_ring)", uint64(unsafe.Sizeof(ring))},
		{"offsetof(struct fl_ring, seen)", uint64(unsafe.Offsetof(ring.seen))},
		{"offsetof(struct fl_ring, head)", uint64(unsafe.Offsetof(ring.head))},
		{"offsetof(struct fl_ring, tail)", uint64(unsafe.Offsetof(ring.tail))},
		{"offsetof(struct fl_ring, slots)", uint64(unsafe.Offsetof(ring.slots))},
	}
	for _, p := range paths {
		want = append(want, struct {
			c     string
			goVal uint64
		}{fmt.Sprintf("fl_path_key(%q, %d)", p, len(p)), PathKey(p)})
	}
	for _, o := range objects {
		want = append(want, struct {
			c     string
			goVal uint64
		}{fmt.Sprintf("fl_object_key(%dull, %dull)", o[0], o[1]), ObjectKey(o[0], o[1])})
	}
	var src strings.Builder
	src.WriteString("#include <stddef.h>\n#include <stdio.h>\n#include \"fastlookup.h\"\nint main(void) {\n")
	for _, w := range want {
		fmt.Fprintf(&src, "\tprintf(\"%%llu\\n\", (unsigned long long)(%s));\n", w.c)
	}
	src.WriteString("\treturn 0;\n}\n")
	dir := t.TempDir()
	csrc, bin := filepath.Join(dir, "layout.c"), filepath.Join(dir, "layout")
	require.NoError(t, os.WriteFile(csrc, []byte(src.String()), 0o644))
	hdr, err := filepath.Abs(".")
	require.NoError(t, err)
	out, err := exec.Command(cc, "-std=c11", "-Wall", "-Werror", "-I", hdr, "-o", bin, csrc).CombinedOutput()
	require.NoError(t, err, "cc: %s", out)
	out, err = exec.Command(bin).Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, len(want))
	for i, w := range want {
		got, err := strconv.ParseUint(lines[i], 10, 64)
		require.NoError(t, err)
		assert.Equal(t, w.goVal, got, "%s: C says %d, Go %d", w.c, got, w.goVal)
	}
}

func nrNone() uint64 {
	n := int64(NrNone)
	return uint64(n)
}

func ptrAt(b []byte, off int) unsafe.Pointer { return unsafe.Pointer(&b[off]) }

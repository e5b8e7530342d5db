package bench

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The dpkg workload installs and removes a real package on this machine.
// It is Debian's hello when apt-get can download it, else benchPkg built
// here with dpkg-deb in its likeness (a program, its manual page, its
// documentation and 40 translations). Either is installed only if it was
// not installed before the benchmark, and purged when the benchmark ends.
const benchPkg = "txexec-bench-hello"

// dpkgLocked matches dpkg's complaint that another dpkg holds its lock
// (another engineer's test, say): the run is repeated a little later.
var dpkgLocked = regexp.MustCompile(`locked by another process`)

func dpkgWorkload(b *testing.B) workloadPlan {
	for _, p := range []string{"dpkg", "dpkg-query", "dpkg-deb"} {
		if _, err := exec.LookPath(p); err != nil {
			b.Skipf("bench: no %s in PATH: %v", p, err)
		}
	}
	// A package left unfinished by an interrupted dpkg (a benchmark's own
	// native run killed mid-trigger leaves man-db half-configured) would
	// have its configuration retried by every phase, natively and under
	// txexec alike, and the numbers would measure that.
	if out, err := exec.Command("dpkg", "--audit").Output(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		b.Fatalf("bench: dpkg --audit reports unfinished packages (%v); finish them with `dpkg --configure -a` first:\n%s", err, out)
	}
	deb, pkg, metric := benchPackage(b)
	if dpkgInstalled(pkg) {
		b.Skipf("bench: %s is already installed on this machine; the benchmark must not remove it", pkg)
	}
	b.Cleanup(func() {
		if dpkgInstalled(pkg) {
			exec.Command("dpkg", "--purge", pkg).Run()
		}
	})
	what := "`dpkg -i` of Debian's hello (fetched with apt-get download), then `dpkg -r hello`; its man page runs man-db's trigger"
	if pkg != "hello" {
		what = fmt.Sprintf("`dpkg -i` then `dpkg -r` of %s, built with dpkg-deb in hello's likeness (apt-get could not download hello: no network?)", pkg)
	}
	return workloadPlan{
		what:   what,
		metric: metric,
		phases: []workloadPhase{
			{name: "install", argv: []string{"dpkg", "-i", deb}, transient: dpkgLocked, check: func(b *testing.B, _ string) {
				if !dpkgInstalled(pkg) {
					b.Fatalf("bench: dpkg -i %s: %s is not installed afterwards (not committed?)", deb, pkg)
				}
			}},
			{name: "remove", argv: []string{"dpkg", "-r", pkg}, transient: dpkgLocked, check: func(b *testing.B, _ string) {
				if dpkgInstalled(pkg) {
					b.Fatalf("bench: dpkg -r %s: still installed afterwards (not committed?)", pkg)
				}
			}},
		},
	}
}

func dpkgInstalled(pkg string) bool {
	out, _ := exec.Command("dpkg-query", "-W", "-f=${Status}", pkg).Output()
	return strings.Contains(string(out), "install ok installed")
}

var (
	debOnce   sync.Once
	debPath   string
	debName   string
	debMetric string
	debErr    error
)

// benchPackage returns the package file the dpkg workload installs, the
// package's name, and the metric that says which one it is (apt-hello or
// built-deb), made once per test process.
func benchPackage(b *testing.B) (deb, pkg, metric string) {
	b.Helper()
	debOnce.Do(func() {
		var dir string
		dir, debErr = os.MkdirTemp(workloadDir, "txexec-bench-deb-")
		if debErr != nil {
			return
		}
		onceDirs = append(onceDirs, dir)
		// apt-get downloads as the _apt user when it can write there.
		os.Chmod(dir, 0o755)
		if p, err := aptDownload(dir, "hello"); err == nil {
			debPath, debName, debMetric = p, "hello", "apt-hello"
			return
		}
		debPath, debErr = buildBenchDeb(dir)
		debName, debMetric = benchPkg, "built-deb"
	})
	if debErr != nil {
		b.Fatalf("bench: dpkg package: %v", debErr)
	}
	return debPath, debName, debMetric
}

// aptDownload fetches pkg's .deb into dir with apt-get download, after
// apt-get update if the package lists do not have it yet.
func aptDownload(dir, pkg string) (string, error) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", err
	}
	download := func() error {
		cmd := exec.Command("apt-get", "download", pkg)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get download %s: %v: %s", pkg, err, out)
		}
		return nil
	}
	if err := download(); err != nil {
		exec.Command("apt-get", "update", "-qq").Run()
		if err := download(); err != nil {
			return "", err
		}
	}
	debs, _ := filepath.Glob(filepath.Join(dir, pkg+"_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s: %d packages in %s", pkg, len(debs), dir)
	}
	return debs[0], nil
}

// buildBenchDeb builds benchPkg in dir with dpkg-deb.
func buildBenchDeb(dir string) (string, error) {
	root := filepath.Join(dir, benchPkg)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	fmt.Fprintf(zw, ".TH %s 1\n.SH NAME\n%s \\- greet\n.SH SYNOPSIS\n.B %s\n", strings.ToUpper(benchPkg), benchPkg, benchPkg)
	zw.Close()
	files := map[string][]byte{
		"DEBIAN/control": []byte(fmt.Sprintf("Package: %s\nVersion: 1.0\nArchitecture: all\n"+
			"Maintainer: txexec benchmarks <bench@txexec.invalid>\nDescription: txexec benchmark package\n"+
			" Installed and removed by txexec's dpkg workload benchmark.\n", benchPkg)),
		"usr/bin/" + benchPkg:                      []byte("#!/bin/sh\necho 'Hello, world!'\n"),
		"usr/share/man/man1/" + benchPkg + ".1.gz": gz.Bytes(),
		"usr/share/doc/" + benchPkg + "/copyright": bytes.Repeat([]byte("Public domain benchmark fixture.\n"), 60),
		"usr/share/doc/" + benchPkg + "/changelog": bytes.Repeat([]byte("* Version 1.0.\n"), 200),
		"usr/share/info/" + benchPkg + ".info":     bytes.Repeat([]byte("Greeting.\n"), 1000),
	}
	for i := 0; i < 40; i++ {
		files[fmt.Sprintf("usr/share/locale/x%02d/LC_MESSAGES/%s.mo", i, benchPkg)] = bytes.Repeat([]byte{byte('a' + i%26)}, 1500+40*i)
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "usr/bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, content, mode); err != nil {
			return "", err
		}
	}
	deb := filepath.Join(dir, benchPkg+".deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", root, deb).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb --build: %v: %s", err, out)
	}
	return deb, nil
}

func TestBuildBenchDeb(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skipf("no dpkg-deb: %v", err)
	}
	deb, err := buildBenchDeb(t.TempDir())
	require.NoError(t, err)
	out, err := exec.Command("dpkg-deb", "--field", deb, "Package").Output()
	require.NoError(t, err)
	assert.Equal(t, benchPkg, strings.TrimSpace(string(out)))
	out, err = exec.Command("dpkg-deb", "--contents", deb).Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), "./usr/bin/"+benchPkg)
	assert.Contains(t, string(out), "./usr/share/man/man1/"+benchPkg+".1.gz")
}

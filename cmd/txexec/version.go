package main

import (
	"runtime/debug"
	"strings"
)

// versionString is txexec's version: the one make build links in (git
// describe), else what the Go toolchain recorded: the module's version
// when built by go install from a tagged module, or the VCS revision of a
// go build in a checkout (with "-dirty" for uncommitted changes), else
// "devel".
func versionString() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return fromBuildInfo(info)
}

func fromBuildInfo(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	rev = rev[:min(len(rev), 12)]
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + strings.TrimSpace(rev)
}

// Package version is the build information of Parley's binaries (the manager and kubectl
// parley). Release builds set Version, Commit and Date with -ldflags -X (make build does);
// anything left empty is read from what the Go toolchain recorded in the binary, so a plain
// `go build` or `go install` still says which module version and commit it is.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at link time: -X github.com/parley-dev/parley/internal/version.Version=v0.1.0 and so on.
var (
	Version = ""
	Commit  = ""
	Date    = ""
)

// Info describes a build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Date      string `json:"date,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns this binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Version, Commit, Date, bi, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
}

// resolve fills what the linker did not set from the Go toolchain's build information.
func resolve(version, commit, date string, bi *debug.BuildInfo, goVersion, platform string) Info {
	info := Info{Version: version, Commit: commit, Date: date, GoVersion: goVersion, Platform: platform}
	if bi != nil {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.time":
				if info.Date == "" {
					info.Date = s.Value
				}
			case "vcs.modified":
				info.Modified = info.Modified || s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	return info
}

// String is the one line a --version flag prints.
func (i Info) String() string {
	s := i.Version
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += " (commit " + c
		if i.Modified {
			s += ", modified"
		}
		if i.Date != "" {
			s += ", " + i.Date
		}
		s += ")"
	}
	return fmt.Sprintf("%s %s %s", s, i.GoVersion, i.Platform)
}

package version

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"},
		{Key: "vcs.time", Value: "2026-11-23T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	cases := map[string]struct {
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
		line                  string
	}{
		"nothing known": {
			want: Info{Version: "dev", GoVersion: "go1.26", Platform: "linux/amd64"},
			line: "dev go1.26 linux/amd64",
		},
		"a go build in a checkout: the commit from the toolchain": {
			bi: vcs,
			want: Info{
				Version: "dev", Commit: "0123456789abcdef0123", Date: "2026-11-23T10:00:00Z", Modified: true,
				GoVersion: "go1.26", Platform: "linux/amd64",
			},
			line: "dev (commit 0123456789ab, modified, 2026-11-23T10:00:00Z) go1.26 linux/amd64",
		},
		"go install of a tagged module": {
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}},
			want: Info{Version: "v0.2.0", GoVersion: "go1.26", Platform: "linux/amd64"},
			line: "v0.2.0 go1.26 linux/amd64",
		},
		"linker flags win over the toolchain": {
			version: "v0.1.0", commit: "abc", date: "2026-11-24", bi: vcs,
			want: Info{Version: "v0.1.0", Commit: "abc", Date: "2026-11-24", Modified: true, GoVersion: "go1.26", Platform: "linux/amd64"},
			line: "v0.1.0 (commit abc, modified, 2026-11-24) go1.26 linux/amd64",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := resolve(tc.version, tc.commit, tc.date, tc.bi, "go1.26", "linux/amd64")
			if got != tc.want {
				t.Fatalf("resolve = %+v, want %+v", got, tc.want)
			}
			if got.String() != tc.line {
				t.Fatalf("String = %q, want %q", got.String(), tc.line)
			}
		})
	}
}

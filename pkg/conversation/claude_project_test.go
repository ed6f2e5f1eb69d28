package conversation

import (
	"strings"
	"testing"
)

// TestClaudeProjectName: the expected names were printed by the Claude CLI's own function
// (copied from 2.1.197's bundled JavaScript; 2.1.330 has the same code under other names),
// run with node:
//
//	function jCe(e){let t=0;for(let n=0;n<e.length;n++)t=(t<<5)-t+e.charCodeAt(n)|0;return t}
//	function $E(e){let t=e.replace(/[^a-zA-Z0-9]/g,"-");if(t.length<=200)return t;return`${t.slice(0,200)}-${Math.abs(jCe(e)).toString(36)}`}
//	console.log($E(input))
func TestClaudeProjectName(t *testing.T) {
	long := "/work/" + strings.Repeat("a-very-long-directory-name-", 8)
	longName := "-work-a-very-long-directory-name-a-very-long-directory-name-a-very-long-directory-name-" +
		"a-very-long-directory-name-a-very-long-directory-name-a-very-long-directory-name-a-very-long-directory-name-a-ver"
	for _, tc := range []struct{ name, cwd, want string }{
		{"punctuation", "/home/me/my_project.v2", "-home-me-my-project-v2"},
		{"precomposed é is one code unit", "/tmp/caf\u00e9", "-tmp-caf-"},
		{"decomposed é is two", "/tmp/cafe\u0301", "-tmp-cafe-"},
		{"an emoji is a surrogate pair", "/tmp/\U0001F600x", "-tmp---x"},
		{"CJK", "/srv/\u00fcber/\u65e5\u672c", "-srv--ber---"},
		{"root", "/", "-"},
		{"empty", "", ""},
		{"200 units: whole", "/w/" + strings.Repeat("x", 197), "-w-" + strings.Repeat("x", 197)},
		{"201 units: cut and hashed", "/w/" + strings.Repeat("x", 198), "-w-" + strings.Repeat("x", 197) + "-qvwt6v"},
		{"long, negative hash", long, longName + "-3eme1d"},
		{"long, hash over code units past the cut", long + "\u00e9\U0001F600", longName + "-u4uj3x"},
		// hash = -2^31: Math.abs keeps it positive in JavaScript, so must Go.
		{"long, hash -2^31", "/w/" + strings.Repeat("m", 200) + "/\u4ffa\u4e00\u4e0e\u4e10\u4e10", "-w-" + strings.Repeat("m", 197) + "-zik0zk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClaudeProjectName(tc.cwd); got != tc.want {
				t.Errorf("ClaudeProjectName(%q)\n got %q\nwant %q", tc.cwd, got, tc.want)
			}
		})
	}
}

func TestJavaStringHash(t *testing.T) {
	for s, want := range map[string]int32{
		"/home/me/my_project.v2": 549331982,
		"/tmp/caf\u00e9":         -1836875448,
		"/tmp/\U0001F600x":       -835676306,
		"/":                      47,
		"":                       0,
	} {
		if got := javaStringHash(utf16Units(s)); got != want {
			t.Errorf("hash(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestClaudePaths(t *testing.T) {
	if got := ClaudeProjectDir("/home/me/my_project.v2"); got != "projects/-home-me-my-project-v2" {
		t.Errorf("got %s", got)
	}
	if got := ClaudeTranscriptPath("/w", "s"); got != "projects/-w/s.jsonl" {
		t.Errorf("got %s", got)
	}
	if got := ClaudeSubagentPath("/w", "s", "a1"); got != "projects/-w/s/subagents/agent-a1.jsonl" {
		t.Errorf("got %s", got)
	}
	// A name of the CLI's longest form fits in a file name (255 bytes on ext4).
	if got := ClaudeProjectName("/" + strings.Repeat("\U0001F600", 2000)); len(got) > 255 {
		t.Errorf("name of %d bytes", len(got))
	}
}

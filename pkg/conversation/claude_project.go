package conversation

import (
	"path"
	"strconv"
	"strings"
	"unicode/utf16"
)

// claudeProjectNameMax is the longest project folder name the Claude CLI writes whole; a
// longer name is cut to this length and given a hash of the path (see ClaudeProjectName).
const claudeProjectNameMax = 200

// ClaudeProjectName is the folder name the Claude CLI (Claude Code, and the Agent SDK, which
// runs it) files a working directory's sessions under, inside projects/ of the config
// directory. It is the CLI's own rule, read from its bundled JavaScript (the same function
// in 2.1.197 and 2.1.330):
//
//	function name(cwd) {
//	  let n = cwd.replace(/[^a-zA-Z0-9]/g, "-");
//	  if (n.length <= 200) return n;
//	  return `${n.slice(0, 200)}-${Math.abs(hash(cwd)).toString(36)}`;
//	}
//	function hash(s) { let h = 0; for (let i = 0; i < s.length; i++) h = (h << 5) - h + s.charCodeAt(i) | 0; return h }
//
// JavaScript strings are UTF-16, so every code unit outside [A-Za-z0-9] becomes one '-' ("é"
// is one, an emoji, a surrogate pair, two), lengths count code units, and the hash is Java's
// String.hashCode over the code units of the whole, unsanitised path.
//
// cwd must be the path as the CLI sees it: the real path of its working directory, symlinks
// resolved (the CLI takes realpath(process.cwd())). This function is pure and cannot resolve
// anything; a caller that runs where the path exists resolves it first (see
// ClaudeExportOptions.RealPath).
func ClaudeProjectName(cwd string) string {
	units := utf16Units(cwd)
	name := make([]byte, len(units))
	for i, u := range units {
		if u < 0x80 && isASCIIAlnum(byte(u)) {
			name[i] = byte(u)
		} else {
			name[i] = '-'
		}
	}
	if len(name) <= claudeProjectNameMax {
		return string(name)
	}
	return string(name[:claudeProjectNameMax]) + "-" + strconv.FormatInt(abs64(int64(javaStringHash(units))), 36)
}

// utf16Units is the string as JavaScript holds it (invalid UTF-8 bytes become U+FFFD, as
// when the CLI decodes a path).
func utf16Units(s string) []uint16 { return utf16.Encode([]rune(s)) }

// javaStringHash is Java's String.hashCode over UTF-16 code units, with 32-bit wrap-around
// (the CLI computes it in JavaScript with `| 0`).
func javaStringHash(units []uint16) int32 {
	var h int32
	for _, u := range units {
		h = h*31 + int32(u)
	}
	return h
}

// abs64 is Math.abs on a 32-bit value held in 64 bits, so -2^31 stays positive as it does in
// JavaScript.
func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func isASCIIAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// ClaudeProjectDir is the directory the Claude CLI keeps a working directory's sessions in,
// relative to the config directory (CLAUDE_CONFIG_DIR): projects/<ClaudeProjectName(cwd)>.
func ClaudeProjectDir(cwd string) string {
	return path.Join("projects", ClaudeProjectName(cwd))
}

// ClaudeTranscriptPath is the main transcript of a session, relative to the config directory.
func ClaudeTranscriptPath(cwd, sessionID string) string {
	return path.Join(ClaudeProjectDir(cwd), sessionID+".jsonl")
}

// claudeFileID reports whether id can be a session or agent id in a transcript's path: one path
// component, so that no id from a transcript or an agent's event can place a file outside the
// project directory.
func claudeFileID(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, "/\\\x00")
}

// ClaudeSubagentPath is a subagent's transcript, relative to the config directory.
func ClaudeSubagentPath(cwd, sessionID, agentID string) string {
	return path.Join(ClaudeProjectDir(cwd), sessionID, "subagents", "agent-"+agentID+".jsonl")
}

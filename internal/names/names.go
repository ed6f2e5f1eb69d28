// Package names derives the names of the objects the controllers create for a Conversation
// (Checkpoints, agent pods, bundle ConfigMaps): deterministic, so a restarted manager or a
// retried reconcile finds what it created instead of creating a second one.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxLength is the longest object name (a DNS-1123 subdomain).
const MaxLength = 253

// Child is "<base>-<suffix>", with base cut and marked by a short hash of it when the whole
// would not be a valid name.
func Child(base, suffix string) string {
	if len(base)+1+len(suffix) <= MaxLength {
		return base + "-" + suffix
	}
	sum := sha256.Sum256([]byte(base))
	h := hex.EncodeToString(sum[:])[:8]
	keep := MaxLength - len(suffix) - len(h) - 2
	// A cut ending in '.' or '-' would put ".-" in the name, which no DNS subdomain allows.
	return strings.TrimRight(base[:keep], "-.") + "-" + h + "-" + suffix
}

// Label is name usable as a label value (at most 63 characters): cut and marked by a short hash
// when longer.
func Label(name string) string {
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:54] + "-" + hex.EncodeToString(sum[:])[:8]
}

package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// maxConfigMapKey is the longest ConfigMap key the API server accepts.
const maxConfigMapKey = 253

// ConfigMapData is the bundle as a ConfigMap's data plus the items of the configMap volume
// that mounts it with the bundle's directory layout (a key cannot hold '/'). A file's key is
// its path with '/' replaced by '_' (no bundle path holds a '_', so keys never collide), or,
// when that is longer than a key may be, "f-" and a hash of the path. Items are sorted by
// path. Mount the ConfigMap with exactly these items.
func (f Files) ConfigMapData() (map[string]string, []corev1.KeyToPath) {
	data := make(map[string]string, len(f))
	items := make([]corev1.KeyToPath, 0, len(f))
	for _, p := range f.Paths() {
		key := configMapKey(p)
		data[key] = string(f[p])
		items = append(items, corev1.KeyToPath{Key: key, Path: p})
	}
	return data, items
}

func configMapKey(p string) string {
	if key := strings.ReplaceAll(p, "/", "_"); len(key) <= maxConfigMapKey {
		return key
	}
	sum := sha256.Sum256([]byte(p))
	return "f-" + hex.EncodeToString(sum[:20])
}

// ConfigMapLimit is the API server's bound on a ConfigMap's data (the sum of its values): 1 MiB.
const ConfigMapLimit = 1 << 20

// MaxConfigMapBytes is how large a bundle (Files.Size) may be: ConfigMapLimit less 24 KiB kept
// for what the controller adds to the same ConfigMap (the Session API's CA certificates, two
// during a rotation).
const MaxConfigMapBytes = ConfigMapLimit - 24*1024

// ErrTooLarge is returned (wrapped) by CheckConfigMapSize for a bundle no ConfigMap holds.
var ErrTooLarge = errors.New("the resume bundle is larger than a ConfigMap holds")

// CheckConfigMapSize refuses a bundle larger than MaxConfigMapBytes, saying what to do: Parley
// has no other way to hand a larger one to the agent yet.
func (f Files) CheckConfigMapSize() error {
	if n := f.Size(); n > MaxConfigMapBytes {
		return fmt.Errorf("%w: %d bytes, past the %d a bundle may take (the API server's %d-byte ConfigMap limit less room for the CA); "+
			"Parley does not fetch larger bundles: shrink the history the agent resumes from with a compaction (spec.context) "+
			"or kubectl parley reset; the whole history stays readable through the Session API",
			ErrTooLarge, n, MaxConfigMapBytes, ConfigMapLimit)
	}
	return nil
}

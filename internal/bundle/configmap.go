package bundle

import (
	"crypto/sha256"
	"encoding/hex"
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

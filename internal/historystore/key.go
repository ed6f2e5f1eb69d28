// Package historystore is the one seam between a Conversation and its history.History: it
// names the history, builds and caches one store per backend configuration (credentials from
// Secrets, rebuilt when they change), proves an object store honours conditional writes before
// trusting it, passes the Conversation as owner of in-cluster objects, and releases idle
// handles. The controllers, the Session API (on every replica) and the restore step all open
// histories through it, so they agree on names and stores.
package historystore

import (
	"fmt"
	"strings"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// maxConfigMapPrefix bounds the readable prefix of ConfigMap names so that the longest one,
// "<prefix>-<session id>-history.ckpt.<64 hex>", stays within 253 characters.
const maxConfigMapPrefix = 128

// Key is the name of a Conversation's history in its store. It is derived from the session id,
// not from the object's name: a deleted and re-created Conversation of the same name gets a
// new session id and so never inherits a retained history, while one that pins the same
// spec.sessionID deliberately continues it (objectStore; ConfigMap histories are owned by, and
// garbage-collected with, the Conversation that created them).
//
//	configMap:   <namespace>/<prefix>-<session id>   (ConfigMaps <prefix>-<session id>-history…)
//	objectStore: <namespace>/<session id>            (objects <prefix>/<namespace>/<session id>/…)
func Key(conv *parleyv1alpha1.Conversation) (string, error) {
	sid := conv.Status.SessionID
	if sid == "" {
		return "", fmt.Errorf("conversation %s/%s has no session id yet", conv.Namespace, conv.Name)
	}
	if conv.Spec.History.ConfigMap != nil {
		return conv.Namespace + "/" + configMapPrefix(conv) + "-" + sid, nil
	}
	return conv.Namespace + "/" + sid, nil
}

// configMapPrefix is spec.history.configMap.name or the Conversation's name, cut to fit.
func configMapPrefix(conv *parleyv1alpha1.Conversation) string {
	p := conv.Name
	if n := conv.Spec.History.ConfigMap.Name; n != "" {
		p = n
	}
	if len(p) > maxConfigMapPrefix {
		p = strings.TrimRight(p[:maxConfigMapPrefix], "-.")
	}
	return p
}

// Location is where a history lives, for status and events: configmap://NAMESPACE/INDEX or
// s3://BUCKET/PREFIX/NAMESPACE/SESSION/. It names no credentials.
func Location(conv *parleyv1alpha1.Conversation) string {
	key, err := Key(conv)
	if err != nil {
		return ""
	}
	h := conv.Spec.History
	switch {
	case h.ConfigMap != nil:
		ns, name, _ := strings.Cut(key, "/")
		return "configmap://" + ns + "/" + name + "-history"
	case h.ObjectStore != nil:
		p := strings.Trim(h.ObjectStore.Prefix, "/")
		if p != "" {
			p += "/"
		}
		return "s3://" + h.ObjectStore.Bucket + "/" + p + key + "/"
	}
	return ""
}

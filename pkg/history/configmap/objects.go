package configmap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
)

// Labels and annotations on every ConfigMap of a history.
const (
	LabelManagedBy    = "app.kubernetes.io/managed-by"
	LabelConversation = "parley.dev/conversation"
	// LabelPart is index, tail, segment or checkpoint.
	LabelPart      = "parley.dev/history-part"
	annotationKey  = "parley.dev/history-key"
	annotationSize = "parley.dev/history-size"
	dataKey        = "data"
	managedBy      = "parley"
)

type backend struct {
	client    client.Client
	namespace string
}

func (b *backend) Objects(name string, owner *metav1.OwnerReference) (engine.Objects, error) {
	namespace := b.namespace
	if namespace == "" {
		var ok bool
		if namespace, name, ok = strings.Cut(name, "/"); !ok || len(validation.IsDNS1123Label(namespace)) > 0 {
			return nil, fmt.Errorf("configmap history: %q is not <namespace>/<name> (the store has no fixed namespace)", namespace+"/"+name)
		}
	}
	// The longest key is a checkpoint: "ckpt." and 64 hex digits.
	if errs := validation.IsDNS1123Subdomain(indexName(name) + ".ckpt." + strings.Repeat("0", 64)); len(errs) > 0 {
		return nil, fmt.Errorf("configmap history: name %q is unusable (ConfigMap names would be invalid: %s)", name, strings.Join(errs, "; "))
	}
	o := &objects{backend: b, namespace: namespace, name: name, conversationLabel: labelValue(name)}
	if owner != nil {
		o.owner = []metav1.OwnerReference{*owner}
	}
	return o, nil
}

// indexName is the index ConfigMap; the others add ".<key>".
func indexName(name string) string { return name + "-history" }

// labelValue is the name itself when it fits a label, else a stable hash.
func labelValue(name string) string {
	if len(validation.IsValidLabelValue(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "h-" + hex.EncodeToString(sum[:])[:40]
}

type objects struct {
	*backend
	namespace         string
	name              string
	conversationLabel string
	owner             []metav1.OwnerReference
}

func (o *objects) configMapName(key string) string {
	if key == "index" {
		return indexName(o.name)
	}
	return indexName(o.name) + "." + key
}

func part(key string) string {
	switch {
	case key == "index":
		return "index"
	case strings.HasPrefix(key, "ckpt."):
		return "checkpoint"
	case engine.IsTailKey(key):
		return "tail"
	default:
		return "segment"
	}
}

func (o *objects) Get(ctx context.Context, key string) ([]byte, string, error) {
	var cm corev1.ConfigMap
	if err := o.client.Get(ctx, client.ObjectKey{Namespace: o.namespace, Name: o.configMapName(key)}, &cm); err != nil {
		return nil, "", mapError(key, err)
	}
	data, ok := cm.BinaryData[dataKey]
	if !ok {
		data = []byte(cm.Data[dataKey])
	}
	// The API server bounds what a ConfigMap holds; whoever may edit ConfigMaps in the
	// namespace chooses the bytes, and nothing this backend writes is longer than this.
	if limit := engine.ReadLimit(maxObjectBytes); int64(len(data)) > limit {
		return nil, "", engine.ErrObjectTooLong(key, limit)
	}
	return data, cm.ResourceVersion, nil
}

func (o *objects) Create(ctx context.Context, key string, data []byte) (string, error) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      o.configMapName(key),
			Namespace: o.namespace,
			Labels: map[string]string{
				LabelManagedBy:    managedBy,
				LabelConversation: o.conversationLabel,
				LabelPart:         part(key),
			},
			Annotations: map[string]string{
				annotationKey:  key,
				annotationSize: strconv.Itoa(len(data)),
			},
			OwnerReferences: o.owner,
		},
	}
	if key != "index" {
		immutable := true
		cm.Immutable = &immutable
	}
	setData(cm, data)
	if err := o.client.Create(ctx, cm); err != nil {
		return "", mapError(key, err)
	}
	return cm.ResourceVersion, nil
}

// setData keeps text readable in kubectl (Data) and anything else exact (BinaryData).
func setData(cm *corev1.ConfigMap, data []byte) {
	if utf8.Valid(data) {
		cm.Data, cm.BinaryData = map[string]string{dataKey: string(data)}, nil
	} else {
		cm.Data, cm.BinaryData = nil, map[string][]byte{dataKey: data}
	}
}

// Replace is one merge patch carrying the expected resourceVersion, which
// the API server checks as a precondition: a compare-and-swap in one request.
// Only the index is ever replaced, and it is always text.
func (o *objects) Replace(ctx context.Context, key string, data []byte, version string) (string, error) {
	if !utf8.Valid(data) {
		return "", fmt.Errorf("configmap %s: replace needs text data", key)
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"resourceVersion": version,
			"annotations":     map[string]string{annotationSize: strconv.Itoa(len(data))},
		},
		"data": map[string]string{dataKey: string(data)},
	})
	if err != nil {
		return "", err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: o.configMapName(key), Namespace: o.namespace}}
	if err := o.client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return "", mapError(key, err)
	}
	return cm.ResourceVersion, nil
}

func (o *objects) Delete(ctx context.Context, key string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: o.configMapName(key), Namespace: o.namespace}}
	if err := o.client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return mapError(key, err)
	}
	return nil
}

// List reads only metadata: keys and sizes are in annotations, so listing
// a long history does not download its segments.
func (o *objects) List(ctx context.Context, prefix string) ([]engine.ObjectInfo, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	err := o.client.List(ctx, list, client.InNamespace(o.namespace),
		client.MatchingLabels{LabelManagedBy: managedBy, LabelConversation: o.conversationLabel})
	if err != nil {
		return nil, mapError("list", err)
	}
	var out []engine.ObjectInfo
	for _, item := range list.Items {
		key := item.Annotations[annotationKey]
		if !strings.HasPrefix(key, prefix) || item.Name != o.configMapName(key) {
			continue // another history whose name hashes to the same label
		}
		size, _ := strconv.ParseInt(item.Annotations[annotationSize], 10, 64)
		out = append(out, engine.ObjectInfo{Key: key, Size: size})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// mapError turns API errors into the history package's typed errors.
func mapError(key string, err error) error {
	var netErr net.Error
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case apierrors.IsNotFound(err):
		return fmt.Errorf("configmap %s: %w", key, history.ErrNotFound)
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return fmt.Errorf("configmap %s: %w: %w", key, history.ErrConflict, err)
	case apierrors.IsRequestEntityTooLargeError(err),
		apierrors.IsInvalid(err) && strings.Contains(err.Error(), "Too long"):
		return fmt.Errorf("configmap %s: %w: %w%s", key, history.ErrTooLarge, err, tooLargeHint)
	case apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err), apierrors.IsUnexpectedServerError(err),
		errors.As(err, &netErr):
		return fmt.Errorf("configmap %s: %w: %w", key, history.ErrUnavailable, err)
	default:
		return fmt.Errorf("configmap %s: %w", key, err)
	}
}

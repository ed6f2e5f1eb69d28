package historystore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/configmap"
	"github.com/parley-dev/parley/pkg/history/s3"
)

// Defaults of Stores.
const (
	// DefaultIdleAfter releases a history handle (its id cache and commit queue) this long
	// after its last use.
	DefaultIdleAfter = 10 * time.Minute
	// DefaultSecretTTL is how long a Secret read is trusted before it is read again, so a
	// rotated credential is picked up without a Get per reconcile.
	DefaultSecretTTL = 30 * time.Second
	// secretReadTimeout bounds one shared read of a Secret.
	secretReadTimeout = 30 * time.Second
	// probeFailureTTL keeps a failed conditional-write probe from being repeated on every
	// reconcile of every conversation that shares the store.
	probeFailureTTL = time.Minute
)

// ConfigMap histories: objects read, listed (metadata only), created, the index patched with a
// precondition, and deleted, through an uncached client in the Conversation's namespace; the
// objectStore credentials Secret is read on demand.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;create;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Stores maps Conversations to their histories. It is safe for concurrent use and serves
// every manager replica: it holds no leader-only state.
type Stores struct {
	// ConfigMaps reads and writes ConfigMaps on the API server itself, not through an informer
	// cache: the ConfigMap backend's compare-and-swap relies on fresh reads.
	ConfigMaps client.Client
	// Secrets reads the objectStore credential and CA Secrets (the manager's API reader: no
	// cluster-wide Secret informer).
	Secrets client.Reader
	// Clock drives idle release and Secret caching; a real clock when nil.
	Clock clock.PassiveClock
	// IdleAfter is DefaultIdleAfter when zero.
	IdleAfter time.Duration
	// SecretTTL is DefaultSecretTTL when zero.
	SecretTTL time.Duration
	// S3 is applied to every objectStore configuration (timeouts, retries, seal size); its
	// endpoint, bucket and credentials are taken from the Conversation.
	S3 s3.Config
	// ConfigMap is applied to every ConfigMap configuration; MaxBytes comes from the spec.
	ConfigMap configmap.Config

	mu         sync.Mutex
	configMaps map[int64]history.Store
	objects    map[string]*objectStore
	secrets    map[types.NamespacedName]secretRead
	// secretReads lets concurrent misses of one Secret share one read.
	secretReads singleflight.Group
	used        map[handle]time.Time
	// lastStore remembers the store each history was last opened with, so a history whose
	// Secret was deleted first (a namespace being deleted) can still be removed.
	lastStore map[string]history.Store
}

// objectStore is one S3 store, built from one configuration and one credential.
type objectStore struct {
	store    history.Store
	probed   bool
	probeErr error
	probedAt time.Time
	lastUsed time.Time
}

type secretRead struct {
	secret *corev1.Secret // nil: not found
	at     time.Time
}

// handle is an open history of one store.
type handle struct {
	store history.Store
	name  string
}

// Open returns the Conversation's history. create makes a missing history; without it a
// missing history is ErrNotFound. Errors are *Error with a condition reason, or history errors.
func (s *Stores) Open(ctx context.Context, conv *parleyv1alpha1.Conversation, create bool) (history.History, error) {
	key, err := Key(conv)
	if err != nil {
		return nil, err
	}
	store, err := s.storeFor(ctx, conv)
	if err != nil {
		return nil, err
	}
	// A Conversation whose status records no history is almost always opened to create it:
	// creating before reading saves the read that would find nothing.
	opts := history.OpenOptions{Create: create, ProbablyNew: create && conv.Status.History == nil}
	if conv.Spec.History.ConfigMap != nil {
		opts.Owner = ownerOf(conv)
	}
	h, err := store.Open(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	s.touch(store, key)
	return h, nil
}

// Delete removes everything the Conversation's history stored (every epoch and checkpoint).
// A missing history is not an error.
func (s *Stores) Delete(ctx context.Context, conv *parleyv1alpha1.Conversation) error {
	key, err := Key(conv)
	if err != nil {
		return err
	}
	store, err := s.storeFor(ctx, conv)
	if err != nil {
		s.mu.Lock()
		known, ok := s.lastStore[key]
		s.mu.Unlock()
		if !ok {
			return err
		}
		store = known
	}
	if err := store.Delete(ctx, key); err != nil && !errors.Is(err, history.ErrNotFound) {
		return err
	}
	s.forget(store, key)
	return nil
}

// Release drops this process's handle of the Conversation's history, if one is open.
func (s *Stores) Release(conv *parleyv1alpha1.Conversation) {
	key, err := Key(conv)
	if err != nil {
		return
	}
	s.mu.Lock()
	var released []handle
	for h := range s.used {
		if h.name == key {
			released = append(released, h)
			delete(s.used, h)
		}
	}
	s.mu.Unlock()
	for _, h := range released {
		h.store.Release(h.name)
	}
}

// Start releases idle handles and closes unused object stores until ctx ends. It runs on
// every replica (see NeedLeaderElection).
func (s *Stores) Start(ctx context.Context) error {
	tick := time.NewTicker(s.idleAfter() / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			s.closeAll()
			return nil
		case <-tick.C:
			s.ReleaseIdle()
		}
	}
}

// NeedLeaderElection is false: the Session API on every replica opens histories.
func (s *Stores) NeedLeaderElection() bool { return false }

// ReleaseIdle releases every handle unused for IdleAfter and closes object stores with no
// recent use (e.g. built from a credential that was since rotated).
func (s *Stores) ReleaseIdle() {
	now := s.now()
	s.mu.Lock()
	var released []handle
	for h, at := range s.used {
		if now.Sub(at) >= s.idleAfter() {
			released = append(released, h)
			delete(s.used, h)
		}
	}
	var closed []history.Store
	for k, o := range s.objects {
		if now.Sub(o.lastUsed) >= s.idleAfter() && !s.inUse(o.store) {
			closed = append(closed, o.store)
			delete(s.objects, k)
			for name, st := range s.lastStore {
				if st == o.store {
					delete(s.lastStore, name)
				}
			}
		}
	}
	s.mu.Unlock()
	for _, h := range released {
		h.store.Release(h.name)
	}
	for _, st := range closed {
		_ = st.Close()
	}
}

// OpenHandles counts the history handles this process holds (a metric and a test hook).
func (s *Stores) OpenHandles() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.used)
}

func (s *Stores) inUse(st history.Store) bool {
	for h := range s.used {
		if h.store == st {
			return true
		}
	}
	return false
}

func (s *Stores) closeAll() {
	s.mu.Lock()
	stores := make([]history.Store, 0, len(s.configMaps)+len(s.objects))
	for _, st := range s.configMaps {
		stores = append(stores, st)
	}
	for _, o := range s.objects {
		stores = append(stores, o.store)
	}
	s.configMaps, s.objects, s.used, s.lastStore = nil, nil, nil, nil
	s.mu.Unlock()
	for _, st := range stores {
		_ = st.Close()
	}
}

func (s *Stores) touch(store history.Store, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used == nil {
		s.used = map[handle]time.Time{}
		s.lastStore = map[string]history.Store{}
	}
	s.used[handle{store, key}] = s.now()
	s.lastStore[key] = store
}

func (s *Stores) forget(store history.Store, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.used, handle{store, key})
	delete(s.lastStore, key)
}

// storeFor returns the store of the Conversation's backend configuration, building it once.
func (s *Stores) storeFor(ctx context.Context, conv *parleyv1alpha1.Conversation) (history.Store, error) {
	switch h := conv.Spec.History; {
	case h.ConfigMap != nil:
		return s.configMapStore(h.ConfigMap)
	case h.ObjectStore != nil:
		return s.objectStore(ctx, conv.Namespace, h.ObjectStore)
	default:
		return nil, errorf(parleyv1alpha1.ReasonStoreMisconfigured, nil, "spec.history names no backend")
	}
}

// configMapStore returns the cluster-wide ConfigMap store of one size cap: MaxBytes is a
// store option, so conversations with the same cap share a store (and its group commits).
func (s *Stores) configMapStore(spec *parleyv1alpha1.ConfigMapHistory) (history.Store, error) {
	maxBytes := spec.GetMaxBytes()
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.configMaps[maxBytes]; ok {
		return st, nil
	}
	if s.ConfigMaps == nil {
		return nil, errors.New("historystore: no ConfigMap client configured")
	}
	cfg := s.ConfigMap
	cfg.Client, cfg.Namespace, cfg.MaxBytes = s.ConfigMaps, "", maxBytes
	st, err := configmap.New(cfg)
	if err != nil {
		return nil, err
	}
	if s.configMaps == nil {
		s.configMaps = map[int64]history.Store{}
	}
	s.configMaps[maxBytes] = st
	return st, nil
}

// objectStore returns the S3 store of a configuration and the current content of its
// Secrets, probing conditional writes once before handing it out.
func (s *Stores) objectStore(ctx context.Context, namespace string, spec *parleyv1alpha1.ObjectStoreHistory) (history.Store, error) {
	cfg, err := s.s3Config(ctx, namespace, spec)
	if err != nil {
		return nil, err
	}
	id := s3ConfigID(cfg)
	now := s.now()

	s.mu.Lock()
	o, ok := s.objects[id]
	if !ok {
		st, err := s3.New(cfg)
		if err != nil {
			s.mu.Unlock()
			return nil, errorf(parleyv1alpha1.ReasonStoreMisconfigured, err, "spec.history.objectStore cannot be used")
		}
		o = &objectStore{store: st}
		if s.objects == nil {
			s.objects = map[string]*objectStore{}
		}
		s.objects[id] = o
	}
	o.lastUsed = now
	probed, probeErr, probedAt := o.probed, o.probeErr, o.probedAt
	s.mu.Unlock()

	if probed && probeErr == nil {
		return o.store, nil
	}
	if probed && now.Sub(probedAt) < probeFailureTTL {
		return nil, probeErr
	}
	probeErr = classifyProbe(spec, s3.CheckConditionalWrites(ctx, cfg))
	if probeErr != nil && Reason(probeErr) == parleyv1alpha1.ReasonStoreUnavailable {
		// A transient failure proves nothing about the store: try again on the next call.
		return nil, probeErr
	}
	s.mu.Lock()
	o.probed, o.probeErr, o.probedAt = true, probeErr, now
	s.mu.Unlock()
	if probeErr != nil {
		return nil, probeErr
	}
	logf.FromContext(ctx).V(1).Info("object store honours conditional writes", "bucket", spec.Bucket)
	return o.store, nil
}

func classifyProbe(spec *parleyv1alpha1.ObjectStoreHistory, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, s3.ErrConditionalWritesUnsupported):
		return errorf(parleyv1alpha1.ReasonConditionalWritesUnsupported, err,
			"the object store at %s ignores conditional writes (If-None-Match / If-Match), so two writers could both win; "+
				"Parley does not use it. Use a store that supports them (AWS S3, MinIO, versitygw, Ceph RGW)", spec.Endpoint)
	case errors.Is(err, history.ErrNotFound):
		return errorf(parleyv1alpha1.ReasonBucketNotFound, err, "bucket %q does not exist at %s; create it", spec.Bucket, spec.Endpoint)
	case errors.Is(err, history.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return errorf(parleyv1alpha1.ReasonStoreUnavailable, err, "the object store at %s is unreachable", spec.Endpoint)
	default:
		return errorf(parleyv1alpha1.ReasonStoreError, err, "the object store at %s refused a test write to bucket %q", spec.Endpoint, spec.Bucket)
	}
}

// s3Config builds the S3 configuration of a spec with the credentials of its Secrets.
func (s *Stores) s3Config(ctx context.Context, namespace string, spec *parleyv1alpha1.ObjectStoreHistory) (s3.Config, error) {
	cfg := s.S3
	cfg.Endpoint, cfg.Bucket, cfg.Prefix, cfg.Region, cfg.Insecure = spec.Endpoint, spec.Bucket, spec.Prefix, spec.Region, spec.Insecure
	cfg.MaxBytes = spec.GetMaxBytes()
	if spec.ForcePathStyle {
		cfg.Addressing = s3.AddressingPath
	}
	ref := spec.CredentialsSecretRef
	if ref == nil || ref.Name == "" {
		return cfg, errorf(parleyv1alpha1.ReasonSecretNotFound, nil, "spec.history.objectStore.credentialsSecretRef names no Secret")
	}
	secret, err := s.secret(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name})
	if err != nil {
		return cfg, err
	}
	if secret == nil {
		return cfg, errorf(parleyv1alpha1.ReasonSecretNotFound, nil,
			"Secret %s/%s (spec.history.objectStore.credentialsSecretRef) does not exist; create it with the keys %s and %s",
			namespace, ref.Name, s3.SecretAccessKeyID, s3.SecretSecretAccessKey)
	}
	if cfg, err = s3.ConfigFromSecret(secret, cfg); err != nil {
		return cfg, errorf(parleyv1alpha1.ReasonSecretInvalid, nil,
			"Secret %s/%s (spec.history.objectStore.credentialsSecretRef) needs non-empty keys %s and %s",
			namespace, ref.Name, s3.SecretAccessKeyID, s3.SecretSecretAccessKey)
	}
	if ca := spec.CABundleSecretRef; ca != nil {
		caSecret, err := s.secret(ctx, types.NamespacedName{Namespace: namespace, Name: ca.Name})
		if err != nil {
			return cfg, err
		}
		if caSecret == nil {
			return cfg, errorf(parleyv1alpha1.ReasonSecretNotFound, nil,
				"Secret %s/%s (spec.history.objectStore.caBundleSecretRef) does not exist", namespace, ca.Name)
		}
		bundle := caSecret.Data[s3.SecretCABundle]
		if len(bundle) == 0 {
			return cfg, errorf(parleyv1alpha1.ReasonSecretInvalid, nil,
				"Secret %s/%s (spec.history.objectStore.caBundleSecretRef) has no key %s", namespace, ca.Name, s3.SecretCABundle)
		}
		cfg.CABundle = bundle
	}
	return cfg, nil
}

// secret reads a Secret, trusting a read for SecretTTL; nil means it does not exist.
func (s *Stores) secret(ctx context.Context, key types.NamespacedName) (*corev1.Secret, error) {
	now := s.now()
	s.mu.Lock()
	r, ok := s.secrets[key]
	s.mu.Unlock()
	if ok && now.Sub(r.at) < s.secretTTL() {
		return r.secret, nil
	}
	if s.Secrets == nil {
		return nil, errors.New("historystore: no Secret reader configured")
	}
	// When the TTL runs out, every busy conversation using the Secret misses at once: they
	// share one read instead of each making its own. The read does not end with the first
	// caller's context, which would fail the others with it.
	v, err, _ := s.secretReads.Do(key.String(), func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), secretReadTimeout)
		defer cancel()
		secret := &corev1.Secret{}
		if err := s.Secrets.Get(ctx, key, secret); err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, errorf(parleyv1alpha1.ReasonStoreUnavailable, err, "reading Secret %s", key)
			}
			secret = nil
		}
		s.mu.Lock()
		if s.secrets == nil {
			s.secrets = map[types.NamespacedName]secretRead{}
		}
		s.secrets[key] = secretRead{secret: secret, at: now}
		s.mu.Unlock()
		return secret, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*corev1.Secret), nil
}

// s3ConfigID identifies a configuration with its credentials, without keeping them readable.
func s3ConfigID(cfg s3.Config) string {
	h := sha256.New()
	for _, part := range []string{
		cfg.Endpoint, cfg.Bucket, cfg.Prefix, cfg.Region, fmt.Sprint(cfg.Insecure), fmt.Sprint(cfg.MaxBytes),
		string(cfg.Addressing), cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken, string(cfg.CABundle),
	} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func ownerOf(conv *parleyv1alpha1.Conversation) *metav1.OwnerReference {
	return metav1.NewControllerRef(conv, parleyv1alpha1.GroupVersion.WithKind("Conversation"))
}

func (s *Stores) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}

func (s *Stores) idleAfter() time.Duration {
	if s.IdleAfter > 0 {
		return s.IdleAfter
	}
	return DefaultIdleAfter
}

func (s *Stores) secretTTL() time.Duration {
	if s.SecretTTL > 0 {
		return s.SecretTTL
	}
	return DefaultSecretTTL
}

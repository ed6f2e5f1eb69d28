package sessionapi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CASecretName is the Secret (in the manager's namespace) holding the CA keys the replicas
// sign their serving certificates with. Only the manager may read it (config/rbac); clients
// read the certificates from the ConfigMap CAConfigMapName.
const CASecretName = "parley-session-api-ca"

// The CA Secret's keys beyond tls.crt and tls.key (the signing CA, as every version wrote it).
const (
	secretNextCert     = "next.crt"
	secretNextKey      = "next.key"
	secretPreviousCert = "previous.crt"
)

// caStore keeps the replicas' CA set.
type caStore interface {
	// load returns the stored set, or found false when there is none yet.
	load(ctx context.Context) (s caSet, found bool, err error)
	// create stores the first set; an error satisfying apierrors.IsAlreadyExists when another
	// replica stored one first.
	create(ctx context.Context, s caSet) error
	// update replaces the set last loaded; a conflict when another replica changed it since.
	update(ctx context.Context, s caSet) error
}

// secretCAStore keeps the set in the Secret CASecretName, shared by the replicas.
type secretCAStore struct {
	client    client.Client
	namespace string
	// loaded is the Secret last read, for update's optimistic lock.
	loaded *corev1.Secret
}

func (st *secretCAStore) key() client.ObjectKey {
	return client.ObjectKey{Namespace: st.namespace, Name: CASecretName}
}

func (st *secretCAStore) load(ctx context.Context) (caSet, bool, error) {
	secret := &corev1.Secret{}
	if err := st.client.Get(ctx, st.key(), secret); apierrors.IsNotFound(err) {
		return caSet{}, false, nil
	} else if err != nil {
		return caSet{}, false, fmt.Errorf("reading the Session API CA Secret %s: %w", st.key(), err)
	}
	s, err := decodeCASecret(secret.Data)
	if err != nil {
		return caSet{}, false, fmt.Errorf("the Session API CA Secret %s: %w", st.key(), err)
	}
	st.loaded = secret
	return s, true, nil
}

func (st *secretCAStore) create(ctx context.Context, s caSet) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: st.namespace, Name: CASecretName, Labels: map[string]string{"app.kubernetes.io/name": "parley"}},
		Type:       corev1.SecretTypeTLS,
		Data:       encodeCASecret(s),
	}
	return st.client.Create(ctx, secret)
}

func (st *secretCAStore) update(ctx context.Context, s caSet) error {
	secret := st.loaded.DeepCopy()
	secret.Data = encodeCASecret(s)
	if err := st.client.Update(ctx, secret); err != nil {
		return fmt.Errorf("updating the Session API CA Secret %s: %w", st.key(), err)
	}
	st.loaded = secret
	return nil
}

// decodeCASecret reads a set from a Secret's data. A Secret written before rotation existed
// holds only tls.crt and tls.key: its CA signs, and is rotated like any other.
func decodeCASecret(data map[string][]byte) (caSet, error) {
	cur, err := parseSigner(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return caSet{}, err
	}
	s := caSet{current: cur}
	if len(data[secretNextCert]) > 0 {
		next, err := parseSigner(data[secretNextCert], data[secretNextKey])
		if err != nil {
			return caSet{}, fmt.Errorf("%s: %w", secretNextCert, err)
		}
		s.next = &next
	}
	if s.previous, err = parseCertificates(data[secretPreviousCert]); err != nil {
		return caSet{}, fmt.Errorf("%s: %w", secretPreviousCert, err)
	}
	return s, nil
}

func encodeCASecret(s caSet) map[string][]byte {
	data := map[string][]byte{corev1.TLSCertKey: s.current.certPEM, corev1.TLSPrivateKeyKey: s.current.keyPEM}
	if s.next != nil {
		data[secretNextCert], data[secretNextKey] = s.next.certPEM, s.next.keyPEM
	}
	if len(s.previous) > 0 {
		prev := make([]byte, 0, 1024*len(s.previous))
		for _, c := range s.previous {
			prev = append(prev, encodeCertificate(c)...)
		}
		data[secretPreviousCert] = prev
	}
	return data
}

// memoryCAStore keeps the set in this process: a manager outside a cluster, with no Secret to
// share it through.
type memoryCAStore struct {
	set   caSet
	found bool
}

func (st *memoryCAStore) load(context.Context) (caSet, bool, error) { return st.set, st.found, nil }

func (st *memoryCAStore) create(_ context.Context, s caSet) error {
	st.set, st.found = s, true
	return nil
}

func (st *memoryCAStore) update(_ context.Context, s caSet) error {
	st.set = s
	return nil
}

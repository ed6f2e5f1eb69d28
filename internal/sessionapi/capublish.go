package sessionapi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CAConfigMapName is the ConfigMap (in the manager's namespace) publishing the certificates
// that clients of the Session API trust, under the key CAConfigMapKey. It holds no key: the
// session-api-user Role (config/rbac) grants reading it, and nothing but the manager reads the
// Secret CASecretName.
const CAConfigMapName = "parley-session-api-ca"

// CAConfigMapKey is the key of the PEM bundle in CAConfigMapName.
const CAConfigMapKey = "ca.crt"

// caPublisher writes the CA bundle clients trust to the ConfigMap CAConfigMapName.
type caPublisher struct {
	client    client.Client
	namespace string
}

// publish creates or updates the ConfigMap when its bundle differs from bundle.
func (p *caPublisher) publish(ctx context.Context, bundle []byte) error {
	key := client.ObjectKey{Namespace: p.namespace, Name: CAConfigMapName}
	cm := &corev1.ConfigMap{}
	err := p.client.Get(ctx, key, cm)
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: CAConfigMapName, Labels: map[string]string{"app.kubernetes.io/name": "parley"}},
			Data:       map[string]string{CAConfigMapKey: string(bundle)},
		}
		if err = p.client.Create(ctx, cm); err == nil || !apierrors.IsAlreadyExists(err) {
			return wrapPublish(key, err)
		}
		err = p.client.Get(ctx, key, cm)
	}
	if err != nil {
		return wrapPublish(key, err)
	}
	if cm.Data[CAConfigMapKey] == string(bundle) {
		return nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[CAConfigMapKey] = string(bundle)
	return wrapPublish(key, p.client.Update(ctx, cm))
}

func wrapPublish(key client.ObjectKey, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("publishing the Session API CA in the ConfigMap %s: %w", key, err)
}

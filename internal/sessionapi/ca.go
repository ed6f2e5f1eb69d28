package sessionapi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CASecretName is the Secret (in the manager's namespace) holding the Session API CA that
// every replica signs its serving certificate with.
const CASecretName = "parley-session-api-ca"

// SharedCA returns the Session API CA stored in the Secret namespace/name, creating it when it
// does not exist yet. Replicas starting together race on the create: the loser reads the
// winner's, so all sign with one CA and agents trust one certificate.
func SharedCA(ctx context.Context, c client.Client, namespace, name string) (certPEM, keyPEM []byte, err error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	err = c.Get(ctx, key, secret)
	if apierrors.IsNotFound(err) {
		certPEM, keyPEM, err = NewCA()
		if err != nil {
			return nil, nil, err
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app.kubernetes.io/name": "parley"}},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
		}
		if err = c.Create(ctx, secret); err == nil {
			return certPEM, keyPEM, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, nil, fmt.Errorf("creating the Session API CA Secret %s: %w", key, err)
		}
		err = c.Get(ctx, key, secret)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the Session API CA Secret %s: %w", key, err)
	}
	certPEM, keyPEM = secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, nil, fmt.Errorf("the Session API CA Secret %s lacks %s or %s", key, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	return certPEM, keyPEM, nil
}

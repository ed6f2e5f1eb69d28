package cluster

import (
	"context"
	"errors"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/pkg/wire"
)

// Tenant sets up a namespace as a team using Parley has it: the Secret "s3" holding the S3
// server's credentials, and the ServiceAccount "agent" with a Role granting get and create on
// conversations/history. It returns a token of that ServiceAccount for the Session API
// (audience parley, bound to no pod).
func (cl *Cluster) Tenant(ctx context.Context, namespace string) (string, error) {
	c, srv := cl.Client, cl.S3
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"}},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{"parley.dev"}, Resources: []string{"conversations/history"}, Verbs: []string{"get", "create"},
			}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "agent"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: namespace, Name: "agent"}},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "s3"},
			Data: map[string][]byte{
				s3.SecretAccessKeyID: []byte(srv.AccessKey), s3.SecretSecretAccessKey: []byte(srv.SecretKey),
			},
		},
	} {
		if err := c.Create(ctx, o); err != nil {
			return "", err
		}
	}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{wire.Audience}}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// WaitFor polls conv until ok says yes, for up to a minute (200 ms apart is enough: it waits on
// the controller).
func WaitFor(ctx context.Context, c client.Client, conv *parleyv1alpha1.Conversation, ok func(*parleyv1alpha1.Conversation) bool) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(conv), conv); err == nil && ok(conv) {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("timed out after a minute")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

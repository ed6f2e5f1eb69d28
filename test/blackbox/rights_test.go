package blackbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// allowed asks the API server's authorizer whether user (with groups) may do attrs.
func (e *env) allowed(ctx context.Context, t *testing.T, user string, groups []string, attrs authzv1.ResourceAttributes) bool {
	t.Helper()
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs}}
	if err := e.admin.Create(ctx, sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// managerMintsNoTokens: whoever takes over the manager must not mint a token for another
// ServiceAccount, nor gain rights by other routes an operator's review would look for.
func managerMintsNoTokens(ctx context.Context, t *testing.T, e *env) {
	user := "system:serviceaccount:" + systemNS + ":" + managerSA
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + systemNS, "system:authenticated"}
	for _, ns := range []string{"kube-system", systemNS, "default"} {
		for _, a := range []authzv1.ResourceAttributes{
			{Namespace: ns, Verb: "create", Resource: "serviceaccounts", Subresource: "token"},
			{Namespace: ns, Verb: "create", Resource: "serviceaccounts", Subresource: "token", Name: managerSA},
			{Namespace: ns, Verb: "impersonate", Resource: "serviceaccounts"},
			{Namespace: ns, Verb: "create", Group: rbacv1.GroupName, Resource: "rolebindings"},
			{Namespace: ns, Verb: "list", Resource: "secrets"},
			{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec"},
		} {
			if e.allowed(ctx, t, user, groups, a) {
				t.Errorf("the manager's ServiceAccount may %s %s/%s in %s", a.Verb, a.Resource, a.Subresource, ns)
			}
		}
	}
	for _, a := range []authzv1.ResourceAttributes{
		{Verb: "impersonate", Resource: "users"},
		{Verb: "escalate", Group: rbacv1.GroupName, Resource: "clusterroles"},
		{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles"},
	} {
		if e.allowed(ctx, t, user, groups, a) {
			t.Errorf("the manager's ServiceAccount may %s %s", a.Verb, a.Resource)
		}
	}
	// The same through the API: the manager's own credentials cannot mint a token.
	tok := e.token(ctx, t, systemNS, managerSA, time.Hour, "", nil)
	mgr := e.bearer(t, tok)
	err := mgr.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "default"}},
		&authnv1.TokenRequest{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("the manager's token asked for a token of kube-system/default: %v, want Forbidden", err)
	}
}

// caKeyIsPrivate: the Secret holding the Session API CA's key is readable by no role Parley
// ships for people or agents, each bound cluster-wide (or in the manager's namespace for a
// Role), while the certificate is published where those people can read it.
func caKeyIsPrivate(ctx context.Context, t *testing.T, e *env) {
	secret := &corev1.Secret{}
	if err := e.admin.Get(ctx, types.NamespacedName{Namespace: systemNS, Name: caName}, secret); err != nil {
		t.Fatalf("the CA Secret %s/%s: %v", systemNS, caName, err)
	}
	hasKey := false
	for _, v := range secret.Data {
		hasKey = hasKey || strings.Contains(string(v), "PRIVATE KEY")
	}
	if !hasKey {
		t.Fatalf("the CA Secret %s/%s holds no private key: the case tests nothing", systemNS, caName)
	}
	cm := &corev1.ConfigMap{}
	if err := e.admin.Get(ctx, types.NamespacedName{Namespace: systemNS, Name: caName}, cm); err != nil {
		t.Fatal(err)
	}
	for k, v := range cm.Data {
		if strings.Contains(v, "PRIVATE KEY") {
			t.Errorf("the published ConfigMap %s/%s holds a private key under %s", systemNS, caName, k)
		}
	}
	if !strings.Contains(cm.Data[caKey], "BEGIN CERTIFICATE") {
		t.Errorf("the published ConfigMap %s/%s has no certificate under %s", systemNS, caName, caKey)
	}

	clusterRoles := &rbacv1.ClusterRoleList{}
	if err := e.admin.List(ctx, clusterRoles); err != nil {
		t.Fatal(err)
	}
	var checked int
	for _, cr := range clusterRoles.Items {
		if !strings.HasPrefix(cr.Name, "parley-") || cr.Name == "parley-manager-role" || cr.Name == "parley-metrics-auth-role" {
			continue // the manager's own
		}
		user := "holder-of-" + cr.Name
		e.create(ctx, t, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user}},
		})
		e.mayNotReadCAKey(ctx, t, user)
		checked++
	}
	roles := &rbacv1.RoleList{}
	if err := e.admin.List(ctx, roles); err != nil {
		t.Fatal(err)
	}
	for _, r := range roles.Items {
		if r.Namespace != systemNS || r.Name == "parley-session-api-ca-role" || r.Name == "parley-leader-election-role" {
			continue // the manager's own
		}
		user := "holder-of-" + r.Name
		e.bindRole(ctx, t, systemNS, "Role", r.Name, rbacv1.Subject{Kind: rbacv1.UserKind, Name: user})
		e.mayNotReadCAKey(ctx, t, user)
		checked++
	}
	if checked < 8 {
		t.Errorf("checked %d roles for people and agents, want every one dist/install.yaml ships (at least 8)", checked)
	}
	// An agent's own token.
	ns := e.namespace(ctx, t, "ca-agents")
	e.mayNotReadCAKey(ctx, t, "system:serviceaccount:"+ns+":agent")
}

func (e *env) mayNotReadCAKey(ctx context.Context, t *testing.T, user string) {
	t.Helper()
	for _, verb := range []string{"get", "list", "watch"} {
		if e.allowed(ctx, t, user, []string{"system:authenticated"}, authzv1.ResourceAttributes{
			Namespace: systemNS, Verb: verb, Resource: "secrets", Name: caName,
		}) {
			t.Errorf("%s may %s Secret %s/%s, which holds the CA key", user, verb, systemNS, caName)
		}
	}
	err := e.user(user).Get(ctx, types.NamespacedName{Namespace: systemNS, Name: caName}, &corev1.Secret{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s reads Secret %s/%s: %v, want Forbidden", user, systemNS, caName, err)
	}
}

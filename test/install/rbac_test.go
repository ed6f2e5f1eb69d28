package install_test

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/repopath"
)

// TestSessionAPICAAccess installs the RBAC of dist/install.yaml on a real API server (envtest
// authorises with RBAC), binds each role it ships for people and agents to a user of its own,
// and asks as that user: no shipped role reads the Secret holding the Session API CA's key, the
// session-api-user Role reads the ConfigMap publishing its certificate, and the manager's
// ServiceAccount reads both.
func TestSessionAPICAAccess(t *testing.T) {
	const (
		caName    = "parley-session-api-ca"
		managerSA = "parley-controller-manager"
		userRole  = "parley-session-api-user-role"
	)
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	assets, err := kubeenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest from %s: %v", assets, err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	scheme := runtime.NewScheme()
	must(t, corev1.AddToScheme(scheme))
	must(t, rbacv1.AddToScheme(scheme))
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	must(t, err)

	// The install's namespace, ServiceAccount and RBAC, as kubectl apply would create them.
	var roles []client.Object
	boundToManager := map[string]bool{}
	installed := objects(t, mustRead(t, filepath.Join(root, "dist", "install.yaml")))
	keys := make([]string, 0, len(installed))
	for k := range installed {
		keys = append(keys, k)
	}
	// The Namespace first: everything else of the install lives in it.
	sort.Slice(keys, func(i, j int) bool {
		return installed[keys[i]].GetKind() == "Namespace" && installed[keys[j]].GetKind() != "Namespace"
	})
	for _, k := range keys {
		u := installed[k]
		var obj client.Object
		switch u.GetKind() {
		case "Namespace":
			obj = &corev1.Namespace{}
		case "ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "Role":
			obj = &rbacv1.Role{}
		case "ClusterRole":
			obj = &rbacv1.ClusterRole{}
		case "RoleBinding":
			obj = &rbacv1.RoleBinding{}
		case "ClusterRoleBinding":
			obj = &rbacv1.ClusterRoleBinding{}
		default:
			continue
		}
		must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj))
		switch o := obj.(type) {
		case *rbacv1.Role, *rbacv1.ClusterRole:
			roles = append(roles, o)
		case *rbacv1.RoleBinding:
			boundToManager[o.RoleRef.Kind+"/"+o.RoleRef.Name] = true
		case *rbacv1.ClusterRoleBinding:
			boundToManager[o.RoleRef.Kind+"/"+o.RoleRef.Name] = true
		}
		if err := admin.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	installNS := "parley-system"
	must(t, admin.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: installNS, Name: caName},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: []byte("cert"), corev1.TLSPrivateKeyKey: []byte("key")},
	}))
	must(t, admin.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: installNS, Name: caName}, Data: map[string]string{"ca.crt": "cert"},
	}))

	as := func(user string, groups ...string) client.Client {
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
		cl, err := client.New(c, client.Options{Scheme: scheme})
		must(t, err)
		return cl
	}
	caKey := client.ObjectKey{Namespace: installNS, Name: caName}

	var people []string
	for _, r := range roles {
		kind := "ClusterRole"
		if _, ok := r.(*rbacv1.Role); ok {
			kind = "Role"
		}
		if boundToManager[kind+"/"+r.GetName()] {
			continue // the manager's own
		}
		people = append(people, r.GetName())
		user := "user-of-" + r.GetName()
		subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
		if kind == "Role" {
			must(t, admin.Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: r.GetNamespace(), Name: user},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: r.GetName()}, Subjects: subject,
			}))
		} else {
			// Bound cluster-wide: the broadest grant of the role there is.
			must(t, admin.Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: user},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: r.GetName()}, Subjects: subject,
			}))
		}
		c := as(user)
		if err := c.Get(ctx, caKey, &corev1.Secret{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s: get Secret %s: %v, want forbidden", r.GetName(), caKey, err)
		}
		if err := c.List(ctx, &corev1.SecretList{}, client.InNamespace(installNS)); !apierrors.IsForbidden(err) {
			t.Errorf("%s: list Secrets in %s: %v, want forbidden", r.GetName(), installNS, err)
		}
		if r.GetName() == userRole {
			if err := c.Get(ctx, caKey, &corev1.ConfigMap{}); err != nil {
				t.Errorf("%s: get ConfigMap %s: %v", userRole, caKey, err)
			}
		}
	}
	sort.Strings(people)
	if !strings.Contains(strings.Join(people, ","), userRole) || len(people) < 5 {
		t.Fatalf("the roles for people and agents found in dist/install.yaml: %v", people)
	}
	t.Logf("no role of %v reads the CA Secret", people)

	manager := as("system:serviceaccount:"+installNS+":"+managerSA, "system:serviceaccounts", "system:serviceaccounts:"+installNS, "system:authenticated")
	if err := manager.Get(ctx, caKey, &corev1.Secret{}); err != nil {
		t.Errorf("the manager: get Secret %s: %v", caKey, err)
	}
	if err := manager.Get(ctx, caKey, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the manager: get ConfigMap %s: %v", caKey, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

package install_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/test/support/repopath"
)

// installed is what the NetworkPolicy test needs: the manager from dist/install.yaml and the
// policies of the optional component config/network-policy, as kustomize places them.
type installed struct {
	policies []networkingv1.NetworkPolicy
	manager  *appsv1.Deployment
}

func readInstall(t *testing.T) installed {
	t.Helper()
	root, err := repopath.Root()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "dist", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out installed
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "NetworkPolicy":
			var p networkingv1.NetworkPolicy
			if err := yaml.UnmarshalStrict(doc, &p); err != nil {
				t.Fatal(err)
			}
			out.policies = append(out.policies, p)
		case "Deployment":
			var d appsv1.Deployment
			if err := yaml.UnmarshalStrict(doc, &d); err != nil {
				t.Fatal(err)
			}
			if d.Name == "parley-controller-manager" {
				out.manager = &d
			}
		}
	}
	if out.manager == nil {
		t.Fatal("dist/install.yaml holds no Deployment parley-controller-manager")
	}
	if len(out.policies) > 0 {
		t.Fatal("dist/install.yaml holds NetworkPolicies; they are an optional component (config/network-policy)")
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "network-policy", "allow-*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p networkingv1.NetworkPolicy
		if err := yaml.UnmarshalStrict(raw, &p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		p.Namespace, p.Name = out.manager.Namespace, "parley-"+p.Name // config/default's namespace and namePrefix
		out.policies = append(out.policies, p)
	}
	return out
}

// source is where a connection to the manager comes from.
type source struct {
	namespace       string
	namespaceLabels map[string]string
	podLabels       map[string]string
}

// admits evaluates the NetworkPolicy rules Kubernetes defines for ingress to a pod (labels
// target, namespace ns) from src on a TCP port: a pod no policy selects takes everything; a
// selected pod takes what one of its policies' rules allows (peers by pod and namespace
// selector; ipBlock peers never match a pod here).
func admits(t *testing.T, policies []networkingv1.NetworkPolicy, ns string, target map[string]string, src source, port int32) bool {
	t.Helper()
	sel := func(s *metav1.LabelSelector) labels.Selector {
		out, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	isolated := false
	for _, p := range policies {
		if p.Namespace != ns || !sel(&p.Spec.PodSelector).Matches(labels.Set(target)) {
			continue
		}
		ingress := len(p.Spec.PolicyTypes) == 0
		for _, ty := range p.Spec.PolicyTypes {
			ingress = ingress || ty == networkingv1.PolicyTypeIngress
		}
		if !ingress {
			continue
		}
		isolated = true
		for _, rule := range p.Spec.Ingress {
			if !portAllowed(rule.Ports, port) {
				continue
			}
			if len(rule.From) == 0 {
				return true
			}
			for _, peer := range rule.From {
				if peer.IPBlock != nil {
					continue
				}
				nsOK := src.namespace == p.Namespace
				if peer.NamespaceSelector != nil {
					nsOK = sel(peer.NamespaceSelector).Matches(labels.Set(src.namespaceLabels))
				}
				podOK := peer.PodSelector == nil || sel(peer.PodSelector).Matches(labels.Set(src.podLabels))
				if nsOK && podOK {
					return true
				}
			}
		}
	}
	return !isolated
}

func portAllowed(ports []networkingv1.NetworkPolicyPort, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		if p.Port == nil || p.Port.IntVal == port {
			return true
		}
	}
	return false
}

// TestNetworkPolicies checks the NetworkPolicies of config/network-policy against the manager they
// protect: the Session API port admits the agent pods agentpod.Build makes in namespaces
// labelled parley.dev/agents=enabled (a pod label alone is not enough: whoever may create pods
// sets it) and pods of namespaces labelled parley.dev/session-api=enabled, and nothing else; metrics
// come only from namespaces labelled metrics=enabled. Ports come from the Deployment's named
// container ports, so a moved port or a renamed label fails here.
func TestNetworkPolicies(t *testing.T) {
	in := readInstall(t)
	if len(in.policies) == 0 {
		t.Fatal("config/network-policy holds no NetworkPolicy")
	}
	tmpl := in.manager.Spec.Template
	ports := map[string]int32{}
	for _, p := range tmpl.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	api, metrics := ports["session-api"], ports["https-metrics"]
	if api == 0 || metrics == 0 {
		t.Fatalf("the manager container names no session-api or https-metrics port: %v", ports)
	}

	agent, err := agentpod.Build(&corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}},
	}}, agentpod.Params{Conversation: "support-42", Namespace: "team-a", SessionID: "0b6f0d0e-1b1a-4a4e-9d43-3a3c1e0f6a11", Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	plain := map[string]string{"app": "web"}
	agentsEnabled := map[string]string{"parley.dev/agents": "enabled"}
	tests := map[string]struct {
		src  source
		port int32
		want bool
	}{
		"an agent pod of a namespace labelled parley.dev/agents=enabled reaches the Session API": {
			source{namespace: "team-a", namespaceLabels: agentsEnabled, podLabels: agent.Labels}, api, true,
		},
		"a pod carrying the agent labels in a namespace that did not opt in does not reach it": {
			source{namespace: "team-b", podLabels: agent.Labels}, api, false,
		},
		"an agent pod does not reach metrics": {
			source{namespace: "team-a", namespaceLabels: agentsEnabled, podLabels: agent.Labels}, metrics, false,
		},
		"another pod of the agent's namespace does not reach the Session API": {
			source{namespace: "team-a", namespaceLabels: agentsEnabled, podLabels: plain}, api, false,
		},
		"a pod of a namespace labelled parley.dev/session-api=enabled reaches it": {
			source{namespace: "tools", namespaceLabels: map[string]string{"parley.dev/session-api": "enabled"}, podLabels: plain}, api, true,
		},
		"a pod of a namespace labelled metrics=enabled scrapes metrics": {
			source{namespace: "monitoring", namespaceLabels: map[string]string{"metrics": "enabled"}, podLabels: plain}, metrics, true,
		},
		"a pod of a namespace labelled metrics=enabled does not reach the Session API": {
			source{namespace: "monitoring", namespaceLabels: map[string]string{"metrics": "enabled"}, podLabels: plain}, api, false,
		},
		"the health probe port is not opened to pods": {
			source{namespace: "team-a", podLabels: agent.Labels}, 8081, false,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := admits(t, in.policies, in.manager.Namespace, tmpl.Labels, tc.src, tc.port)
			if got != tc.want {
				t.Errorf("admitted = %v, want %v (source %+v, port %d)", got, tc.want, tc.src, tc.port)
			}
		})
	}
}

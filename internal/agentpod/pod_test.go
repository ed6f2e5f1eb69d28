package agentpod

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func template() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "support-bot"}, Annotations: map[string]string{"team": "a"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "bot",
			Containers: []corev1.Container{{
				Name: "agent", Image: "example.com/bot:1",
				Env:          []corev1.EnvVar{{Name: "MODEL", Value: "m"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}},
			}, {Name: "sidecar", Image: "example.com/proxy:1"}},
			Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

func params() Params {
	return Params{
		Conversation: "support-42", Namespace: "team-a", SessionID: "5f0c",
		Owner:   metav1.OwnerReference{APIVersion: "parley.dev/v1alpha1", Kind: "Conversation", Name: "support-42", UID: "u1"},
		Attempt: 2, Resume: true, Checkpoint: "support-42-crash-1", APIURL: "https://api:8082",
		MountPath: "/var/run/parley", BundleName: "support-42-bundle",
		BundleItems: []corev1.KeyToPath{{Key: "conversation.json", Path: "conversation.json"}},
	}
}

func envOf(c *corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		if _, dup := m[e.Name]; dup {
			m[e.Name] = "DUPLICATE"
			continue
		}
		m[e.Name] = e.Value
	}
	return m
}

func TestBuildKeepsTheTemplateAndAddsWhatParleyNeeds(t *testing.T) {
	tmpl := template()
	before := tmpl.DeepCopy()
	pod, err := Build(tmpl, params())
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "support-42-agent-2" || pod.Namespace != "team-a" {
		t.Errorf("name %s/%s", pod.Namespace, pod.Name)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever || pod.Spec.ServiceAccountName != "bot" {
		t.Errorf("restartPolicy %q, serviceAccountName %q", pod.Spec.RestartPolicy, pod.Spec.ServiceAccountName)
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != "u1" {
		t.Errorf("owner references %+v", pod.OwnerReferences)
	}
	if pod.Labels["app"] != "support-bot" || pod.Labels[LabelConversation] != "support-42" || pod.Labels[LabelAttempt] != "2" ||
		pod.Annotations["team"] != "a" || pod.Annotations[AnnotationTemplateHash] != TemplateHash(before) {
		t.Errorf("labels %v annotations %v", pod.Labels, pod.Annotations)
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		env := envOf(c)
		want := map[string]string{
			EnvConversation: "support-42", EnvNamespace: "team-a", EnvSessionID: "5f0c", EnvAPIURL: "https://api:8082",
			EnvResume: "true", EnvResumeAttempt: "1", EnvCheckpoint: "support-42-crash-1", EnvResumeDir: "/var/run/parley",
			EnvTokenFile: TokenDir + "/token",
		}
		if i == 0 {
			want["MODEL"] = "m"
		}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("container %s: %s = %q, want %q", c.Name, k, env[k], v)
			}
		}
		if _, ok := env[EnvClaudeConfigDir]; ok {
			t.Errorf("container %s: CLAUDE_CONFIG_DIR set for a generic agent", c.Name)
		}
		mounts := map[string]corev1.VolumeMount{}
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = m
		}
		if m := mounts["/var/run/parley"]; m.Name != VolumeBundle || !m.ReadOnly {
			t.Errorf("container %s: bundle mount %+v", c.Name, m)
		}
		if m := mounts[TokenDir]; m.Name != VolumeToken || !m.ReadOnly {
			t.Errorf("container %s: token mount %+v", c.Name, m)
		}
	}
	var token *corev1.ServiceAccountTokenProjection
	var bundle *corev1.ConfigMapVolumeSource
	for _, v := range pod.Spec.Volumes {
		switch v.Name {
		case VolumeToken:
			token = v.Projected.Sources[0].ServiceAccountToken
		case VolumeBundle:
			bundle = v.ConfigMap
		}
	}
	if token == nil || token.Audience != "parley" || token.Path != "token" {
		t.Errorf("token projection %+v", token)
	}
	if bundle == nil || bundle.Name != "support-42-bundle" || len(bundle.Items) != 1 {
		t.Errorf("bundle volume %+v", bundle)
	}
	if len(tmpl.Spec.Containers[0].Env) != 1 || len(tmpl.Spec.Volumes) != 1 || tmpl.Labels[LabelAttempt] != "" {
		t.Error("Build changed the template it was given")
	}
}

func TestBuildForClaudeAndWithACA(t *testing.T) {
	p := params()
	p.ClaudeConfig, p.CAConfigMap = "claude", "parley-ca"
	pod, err := Build(template(), p)
	if err != nil {
		t.Fatal(err)
	}
	env := envOf(&pod.Spec.Containers[0])
	if env[EnvClaudeConfigDir] != "/var/run/parley/claude" || env[EnvCAFile] != CADir+"/ca.crt" {
		t.Errorf("CLAUDE_CONFIG_DIR %q, PARLEY_CA_FILE %q", env[EnvClaudeConfigDir], env[EnvCAFile])
	}
}

// TestBuildTellsNodeTheCA: Node agents trust the Session API's CA through NODE_EXTRA_CA_CERTS,
// the file PARLEY_CA_FILE names, unless the container sets its own; without a CA it is unset.
func TestBuildTellsNodeTheCA(t *testing.T) {
	for name, tc := range map[string]struct {
		inBundle bool
		own      string
		want     string
	}{
		"the CA in the bundle":             {inBundle: true, want: "/var/run/parley/" + CAFile},
		"the container's own file is kept": {inBundle: true, own: "/etc/corp-ca.pem", want: "/etc/corp-ca.pem"},
		"no CA of Parley's":                {},
	} {
		t.Run(name, func(t *testing.T) {
			p := params()
			p.CAInBundle = tc.inBundle
			tmpl := template()
			if tc.own != "" {
				tmpl.Spec.Containers[0].Env = append(tmpl.Spec.Containers[0].Env, corev1.EnvVar{Name: EnvNodeExtraCACerts, Value: tc.own})
			}
			pod, err := Build(tmpl, p)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range pod.Spec.Containers[0].Env {
				if e.Name == EnvNodeExtraCACerts {
					n++
				}
			}
			if got := envOf(&pod.Spec.Containers[0])[EnvNodeExtraCACerts]; got != tc.want || n > 1 {
				t.Errorf("NODE_EXTRA_CA_CERTS %q (set %d times), want %q once", got, n, tc.want)
			}
		})
	}
}

func TestBuildRefusesConflicts(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*corev1.PodTemplateSpec, *Params)
		field string
	}{
		{"restartPolicy Always", func(t *corev1.PodTemplateSpec, _ *Params) { t.Spec.RestartPolicy = corev1.RestartPolicyAlways }, "spec.agent.template.spec.restartPolicy"},
		{"no container", func(t *corev1.PodTemplateSpec, _ *Params) { t.Spec.Containers = nil }, "spec.agent.template.spec.containers"},
		{"a volume named like Parley's", func(t *corev1.PodTemplateSpec, _ *Params) {
			t.Spec.Volumes = append(t.Spec.Volumes, corev1.Volume{Name: VolumeBundle})
		}, "spec.agent.template.spec.volumes[1].name"},
		{"a mount at resumeMountPath", func(t *corev1.PodTemplateSpec, _ *Params) {
			t.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/var/run/parley/"}}
		}, "spec.agent.template.spec.containers[1].volumeMounts[0].mountPath"},
		{"a mount at a custom resumeMountPath", func(_ *corev1.PodTemplateSpec, p *Params) { p.MountPath = "/work" }, "spec.agent.template.spec.containers[0].volumeMounts[0].mountPath"},
		{"an init container mounting the token dir", func(t *corev1.PodTemplateSpec, _ *Params) {
			t.Spec.InitContainers = []corev1.Container{{Name: "i", VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: TokenDir}}}}
		}, "spec.agent.template.spec.initContainers[0].volumeMounts[0].mountPath"},
		{"PARLEY_SESSION_ID in the template", func(t *corev1.PodTemplateSpec, _ *Params) {
			t.Spec.Containers[0].Env = append(t.Spec.Containers[0].Env, corev1.EnvVar{Name: EnvSessionID, Value: "x"})
		}, "spec.agent.template.spec.containers[0].env[1].name"},
		{"CLAUDE_CONFIG_DIR for the claude adapter", func(t *corev1.PodTemplateSpec, p *Params) {
			p.ClaudeConfig = "claude"
			t.Spec.Containers[1].Env = []corev1.EnvVar{{Name: EnvClaudeConfigDir, Value: "/home"}}
		}, "spec.agent.template.spec.containers[1].env[0].name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, p := template(), params()
			tc.edit(tmpl, &p)
			pod, err := Build(tmpl, p)
			var conflict *ConflictError
			if !errors.As(err, &conflict) || pod != nil {
				t.Fatalf("Build = %v, %v; want a ConflictError", pod, err)
			}
			if conflict.Field != tc.field || conflict.Message == "" {
				t.Errorf("field %q (%s), want %q", conflict.Field, conflict.Message, tc.field)
			}
		})
	}
	t.Run("CLAUDE_CONFIG_DIR is the user's for a generic agent", func(t *testing.T) {
		tmpl := template()
		tmpl.Spec.Containers[0].Env = append(tmpl.Spec.Containers[0].Env, corev1.EnvVar{Name: EnvClaudeConfigDir, Value: "/home"})
		if _, err := Build(tmpl, params()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPodNameIsDeterministicAndValid(t *testing.T) {
	long := strings.Repeat("a", 253)
	a, b := PodName(long, 12), PodName(long, 12)
	if a != b || len(a) > 253 || !strings.HasSuffix(a, "-agent-12") {
		t.Fatalf("PodName = %q (%d)", a, len(a))
	}
	if PodName(long, 12) == PodName(long, 13) {
		t.Fatal("two attempts share a name")
	}
}

package agentpod

import (
	"path"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/parley-dev/parley/test/support/doctable"
)

// TestEnvTableMatchesPod: docs/resume-bundle.md's environment table names every variable Build
// sets in an agent container and no other, its PARLEY_CA_FILE row gives both paths, and init
// containers get none (as the page says).
func TestEnvTableMatchesPod(t *testing.T) {
	table, err := doctable.Find("docs/resume-bundle.md", "variable")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for _, row := range table.Rows {
		for _, name := range doctable.Codes(row[0]) {
			documented[name] = row[1]
		}
	}
	template := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "setup", Image: "setup:1"}},
		Containers:     []corev1.Container{{Name: "agent", Image: "agent:1"}},
	}}
	set := map[string]bool{}
	for _, p := range []Params{
		{Conversation: "c", Namespace: "n", SessionID: "s", Attempt: 1, MountPath: "/var/run/parley", CAInBundle: true, ClaudeConfig: "claude"},
		{Conversation: "c", Namespace: "n", SessionID: "s", Attempt: 2, Resume: true, MountPath: "/var/run/parley", CAConfigMap: "ca"},
	} {
		pod, err := Build(template, p)
		if err != nil {
			t.Fatal(err)
		}
		if env := pod.Spec.InitContainers[0].Env; len(env) != 0 {
			t.Errorf("an init container got %v; docs/resume-bundle.md says init containers get none", env)
		}
		for _, e := range pod.Spec.Containers[0].Env {
			set[e.Name] = true
			if e.Name == EnvCAFile {
				want := strings.Replace(e.Value, p.MountPath, "<mount>", 1)
				if !strings.Contains(documented[EnvCAFile], "`"+want+"`") {
					t.Errorf("docs/resume-bundle.md's %s row does not give %s", EnvCAFile, want)
				}
			}
		}
	}
	for name := range set {
		if _, ok := documented[name]; !ok {
			t.Errorf("Build sets %s, which docs/resume-bundle.md's environment table does not name", name)
		}
	}
	for name := range documented {
		if !set[name] {
			t.Errorf("docs/resume-bundle.md's environment table names %s, which Build does not set", name)
		}
	}
	if !strings.Contains(documented[EnvCAFile], path.Join(CADir, "ca.crt")) {
		t.Errorf("the %s row does not give the --agent-ca-configmap path %s", EnvCAFile, path.Join(CADir, "ca.crt"))
	}
}

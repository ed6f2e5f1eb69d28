package main

import (
	"strings"
	"testing"
)

func TestTemplateText(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"the namespace alone":          {"parley-system", "{{ .Release.Namespace }}"},
		"a DNS name":                   {"parley-session-api.parley-system.svc", "parley-session-api.{{ .Release.Namespace }}.svc"},
		"a longer name is not it":      {"parley-system-x", "parley-system-x"},
		"a name that ends in it":       {"my-parley-system", "my-parley-system"},
		"twice":                        {"parley-system/parley-system", "{{ .Release.Namespace }}/{{ .Release.Namespace }}"},
		"Prometheus template escaped":  {"{{ $labels.reason }} failing", "{{`{{`}} $labels.reason }} failing"},
		"nothing to do":                {"--leader-elect", "--leader-elect"},
		"escaped before the namespace": {"{{ parley-system }}", "{{`{{`}} {{ .Release.Namespace }} }}"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := templateText(tc.in, "parley-system"); got != tc.want {
				t.Errorf("templateText(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSplitImage(t *testing.T) {
	tests := map[string]struct{ repo, tag string }{
		"parley-manager:dev":                  {"parley-manager", "dev"},
		"registry.example.com:5000/parley:v1": {"registry.example.com:5000/parley", "v1"},
		"registry.example.com:5000/parley":    {"registry.example.com:5000/parley", "latest"},
		"parley":                              {"parley", "latest"},
	}
	for image, want := range tests {
		repo, tag := splitImage(image)
		if repo != want.repo || tag != want.tag {
			t.Errorf("splitImage(%q) = %q, %q; want %q, %q", image, repo, tag, want.repo, want.tag)
		}
	}
}

func TestRenderReplacesMarkers(t *testing.T) {
	tp := newTemplater()
	obj := map[string]any{
		"spec": map[string]any{"replicas": tp.scalar("{{ .Values.replicas }}")},
		"list": []any{map[string]any{
			tp.block("args", linesBlock([]string{"args:", "{{- if .Values.x }}", "- --x", "{{- end }}"})): nil,
			"name": "manager",
		}},
	}
	obj["spec"].(map[string]any)[tp.block("tolerations", withBlock("tolerations", ".Values.tolerations"))] = nil
	got, err := tp.render(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := `list:
- args:
  {{- if .Values.x }}
  - --x
  {{- end }}
  name: manager
spec:
  replicas: {{ .Values.replicas }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
`
	if got != want {
		t.Errorf("render:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderRefusesLostMarkers(t *testing.T) {
	tp := newTemplater()
	tp.scalar("{{ .Values.gone }}")
	if _, err := tp.render(map[string]any{"a": "b"}); err == nil {
		t.Error("a scalar marker no field holds must fail the render")
	}
	tp = newTemplater()
	key := tp.block("x", linesBlock([]string{"{{- if .Values.x }}", "x: 1", "{{- end }}"}))
	if _, err := tp.render(map[string]any{"l": []any{map[string]any{key: nil}}}); err == nil {
		t.Error("a block that starts with an action cannot be the first key of a list item")
	}
}

const baseYAML = `apiVersion: v1
kind: Namespace
metadata:
  name: parley-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  labels:
    app.kubernetes.io/managed-by: kustomize
  name: parley-controller-manager
  namespace: parley-system
spec:
  replicas: 2
  template:
    metadata:
      labels: {app: parley}
    spec:
      containers:
      - name: manager
        image: registry.example.com/parley-manager:v1
        args:
        - --leader-elect
        - --metrics-bind-address=:8443
        - --session-api-bind-address=:8082
        - --agent-api-url=https://parley-session-api.parley-system.svc:8082
        ports:
        - {containerPort: 8443, name: https-metrics}
        - {containerPort: 8082, name: session-api}
        resources:
          limits: {memory: 768Mi}
---
apiVersion: v1
kind: Service
metadata:
  name: parley-metrics
  namespace: parley-system
spec:
  ports:
  - {name: https, port: 8443, targetPort: 8443}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: parley-manager-role
rules:
- {apiGroups: [""], resources: [pods], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  labels:
    app.kubernetes.io/managed-by: kustomize
  name: parley-manager-rolebinding
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: parley-manager-role}
subjects:
- {kind: ServiceAccount, name: parley-controller-manager, namespace: parley-system}
`

const certManagerYAML = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: parley-session-api
  namespace: parley-system
spec:
  secretName: parley-session-api-tls
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: parley-controller-manager
  namespace: parley-system
spec:
  template:
    spec:
      containers:
      - name: manager
        args: [--session-api-cert-dir=/tls]
        volumeMounts: [{name: tls, mountPath: /tls}]
`

func mustDecode(t *testing.T, s string) []object {
	t.Helper()
	objs, err := decodeAll([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestBuild(t *testing.T) {
	files, err := build(inputs{
		base:    mustDecode(t, baseYAML),
		extras:  mustDecode(t, baseYAML+"---\n"+certManagerYAML),
		version: "1.2.3",
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]string{
		"values.yaml": {
			"repository: registry.example.com/parley-manager\n", `tag: "v1"`, "replicas: 2\n", "memory: 768Mi",
			"port: 8443\n", "port: 8082\n", "certDir: /tls\n",
		},
		"templates/deployment-controller-manager.yaml": {
			"namespace: '{{ .Release.Namespace }}'",
			"app.kubernetes.io/managed-by: {{ .Release.Service }}",
			"- --agent-api-url=https://parley-session-api.{{ .Release.Namespace }}.svc:{{ .Values.sessionAPI.port }}",
			"  name: tls\n",
		},
		"templates/service-metrics.yaml":            {"{{- if .Values.metrics.enabled }}", "port: {{ .Values.metrics.port }}"},
		"templates/certificate-session-api.yaml":    {"{{- if .Values.sessionAPI.tls.certManager.enabled }}"},
		"templates/_helpers.tpl":                    {"parley-session-api-tls"},
		"Chart.yaml":                                {"version: 1.2.3", `appVersion: "v1"`},
		"templates/NOTES.txt":                       {".Release.Namespace"},
		"templates/deployment-controller-manager.x": nil,
		// The manager's namespaced rights: cluster-wide without watchNamespaces, else a Role
		// and a RoleBinding in each watched namespace.
		"templates/clusterrole-manager-role.yaml":               {"{{- if not .Values.watchNamespaces }}\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"},
		"templates/clusterrolebinding-manager-rolebinding.yaml": {"{{- if not .Values.watchNamespaces }}\n", "kind: ClusterRoleBinding\n"},
		"templates/role-manager-role.yaml": {
			"{{- range .Values.watchNamespaces }}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n",
			"  namespace: {{ . | quote }}\n", "  - pods\n",
		},
		"templates/rolebinding-manager-rolebinding.yaml": {
			"kind: RoleBinding\n", "app.kubernetes.io/managed-by: {{ $.Release.Service }}",
			"  namespace: {{ . | quote }}\n", "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n",
			"  namespace: '{{ $.Release.Namespace }}'", "{{- end }}\n",
		},
	} {
		text, ok := files[path]
		if want == nil {
			if ok {
				t.Errorf("%s should not exist", path)
			}
			continue
		}
		if !ok {
			t.Errorf("no %s; files: %v", path, sortedPaths(files))
			continue
		}
		for _, w := range want {
			if !strings.Contains(string(text), w) {
				t.Errorf("%s does not hold %q:\n%s", path, w, text)
			}
		}
	}
	for path := range files {
		if strings.Contains(path, "namespace") {
			t.Errorf("the Namespace became %s; Helm installs into an existing namespace", path)
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	tests := map[string]struct {
		base, extras string
		want         string
	}{
		"an optional object the chart has no value for": {
			base: baseYAML, extras: baseYAML + "---\n" + certManagerYAML + "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x, namespace: parley-system}\n",
			want: "PodDisruptionBudget x comes from an optional component",
		},
		"no cert-manager render": {
			base: baseYAML, extras: baseYAML,
			want: "config/certmanager",
		},
		"a flag the chart owns is gone": {
			base:   strings.Replace(baseYAML, "        - --leader-elect\n", "", 1),
			extras: baseYAML + "---\n" + certManagerYAML,
			want:   "no longer sets --leader-elect",
		},
		"the manager's ClusterRole is gone": {
			base:   baseYAML[:strings.Index(baseYAML, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n")],
			extras: baseYAML + "---\n" + certManagerYAML,
			want:   "ClusterRole parley-manager-role",
		},
		"config/manager mounts volumes": {
			base:   strings.Replace(baseYAML, "        resources:", "        volumeMounts: [{name: x, mountPath: /x}]\n        resources:", 1),
			extras: baseYAML + "---\n" + certManagerYAML,
			want:   "volumeMounts",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := build(inputs{base: mustDecode(t, tc.base), extras: mustDecode(t, tc.extras), version: "0.1.0"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("build: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

package main

import (
	"fmt"
	"strconv"
	"strings"
)

// defaults are the values.yaml defaults read from the render, so that the chart with its
// default values renders what config/ renders.
type defaults struct {
	imageRepository string
	imageTag        string
	replicas        int64
	resources       any
	affinity        any
	leaderElection  bool
	metricsPort     int64
	sessionAPIPort  int64
	// certDir, tlsVolume and certSecret come from config/certmanager: where the Secret is
	// mounted, the volume's name and the Secret cert-manager writes.
	certDir    string
	tlsVolume  string
	certSecret string
	// leaseRoles name the Roles granting rights to Leases (lease.go).
	leaseRoles map[string]bool
}

// The manager's flags the chart sets from values. Flags not listed here pass through as
// config/manager has them.
const (
	flagLeaderElect   = "--leader-elect"
	flagMetricsAddr   = "--metrics-bind-address"
	flagSessionAddr   = "--session-api-bind-address"
	flagAgentAPIURL   = "--agent-api-url"
	flagSessionCertIn = "--session-api-cert-dir"
)

// optionalArgs are appended after config/manager's arguments, each only when its value is set.
// The int flags go through `int`: Helm reads numbers in values files as floats, and a float
// prints as 1e+06.
var optionalArgs = []string{
	`{{- if include "parley.tlsSecret" . }}`,
	`- --session-api-cert-dir={{ .Values.sessionAPI.tls.certDir }}`,
	`{{- end }}`,
	`{{- with .Values.leaderElection.namespace }}`,
	`- --leader-election-namespace={{ . }}`,
	`{{- end }}`,
	`{{- with .Values.watchNamespaces }}`,
	`- --watch-namespaces={{ join "," . }}`,
	`{{- end }}`,
	`{{- with .Values.kubeAPI.qps }}`,
	`- --kube-api-qps={{ . }}`,
	`{{- end }}`,
	`{{- with .Values.kubeAPI.burst }}`,
	`- --kube-api-burst={{ int . }}`,
	`{{- end }}`,
	`{{- with .Values.historyAPI.qps }}`,
	`- --history-api-qps={{ . }}`,
	`{{- end }}`,
	`{{- with .Values.historyAPI.burst }}`,
	`- --history-api-burst={{ int . }}`,
	`{{- end }}`,
	`{{- with .Values.maxConcurrentReconciles }}`,
	`- --max-concurrent-reconciles={{ int . }}`,
	`{{- end }}`,
	`{{- with .Values.maxConcurrentCompactions }}`,
	`- --max-concurrent-compactions={{ int . }}`,
	`{{- end }}`,
	`{{- if eq (toString .Values.sessionAPI.accessLog) "false" }}`,
	`- --session-api-access-log=false`,
	`{{- end }}`,
	`{{- with .Values.minForcedCompactionInterval }}`,
	`- --min-forced-compaction-interval={{ . }}`,
	`{{- end }}`,
	`{{- range .Values.extraArgs }}`,
	`- {{ . | quote }}`,
	`{{- end }}`,
}

// sessionAPILimitArgs are the Session API's limit flags, each set from
// .Values.sessionAPI.limits.<value> when that is set: value, flag, and the template function
// that prints it ("" for a float or a duration).
var sessionAPILimitArgs = [][3]string{
	{"conversationRate", "session-api-conversation-rate", ""},
	{"identityRate", "session-api-identity-rate", ""},
	{"sourceReviewRate", "session-api-source-review-rate", ""},
	{"identityReviewRate", "session-api-identity-review-rate", ""},
	{"maxInFlight", "session-api-max-in-flight", "int"},
	{"maxInFlightPerIdentity", "session-api-max-in-flight-per-identity", "int"},
	{"maxBodyBytesInFlight", "session-api-max-body-bytes-in-flight", "int64"},
	{"maxBodyBytesInFlightPerIdentity", "session-api-max-body-bytes-in-flight-per-identity", "int64"},
	{"maxAnswerBytesInFlight", "session-api-max-answer-bytes-in-flight", "int64"},
	{"maxAnswerBytesInFlightPerIdentity", "session-api-max-answer-bytes-in-flight-per-identity", "int64"},
	{"identityHistoryRate", "session-api-identity-history-rate", ""},
	{"namespaceHistoryRate", "session-api-namespace-history-rate", ""},
	{"answerCacheBytes", "session-api-answer-cache-bytes", "int64"},
	{"maxFollowsPerIdentity", "session-api-max-follows-per-identity", "int"},
	{"maxFollowsPerConversation", "session-api-max-follows-per-conversation", "int"},
	{"followReauthorize", "session-api-follow-reauthorize", ""},
	{"maxReviewsInFlight", "session-api-max-reviews-in-flight", "int"},
}

func init() {
	lines := make([]string, 0, 3*len(sessionAPILimitArgs)+len(optionalArgs))
	for _, a := range sessionAPILimitArgs {
		lines = append(lines, "{{- with .Values.sessionAPI.limits."+a[0]+" }}", "- --"+a[1]+"={{ "+strings.TrimSpace(a[2]+" .")+" }}", "{{- end }}")
	}
	optionalArgs = append(lines, optionalArgs...)
}

// flagValue splits "--name=value" (value "" and ok false for a bare "--name").
func flagValue(arg string) (name, value string, hasValue bool) {
	return strings.Cut(arg, "=")
}

// port reads ":8443" (an address on every interface).
func port(addr string) (int64, error) {
	p, ok := strings.CutPrefix(addr, ":")
	if !ok {
		return 0, fmt.Errorf("address %q is not :PORT", addr)
	}
	return strconv.ParseInt(p, 10, 32)
}

// managerArgs reads the ports and leader election from the manager's arguments.
func managerArgs(args []string, d *defaults) error {
	seen := map[string]bool{}
	for _, a := range args {
		name, value, hasValue := flagValue(a)
		seen[name] = true
		var err error
		switch name {
		case flagLeaderElect:
			d.leaderElection = !hasValue || value == "true"
		case flagMetricsAddr:
			d.metricsPort, err = port(value)
		case flagSessionAddr:
			d.sessionAPIPort, err = port(value)
		case flagSessionCertIn:
			return fmt.Errorf("config/manager sets %s: the chart sets it from sessionAPI.tls", name)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	for _, f := range []string{flagLeaderElect, flagMetricsAddr, flagSessionAddr} {
		if !seen[f] {
			return fmt.Errorf("config/manager no longer sets %s; update tools/gen-chart", f)
		}
	}
	return nil
}

// argLines is the template of the manager's args list: config/manager's arguments (already
// template text), those the chart owns written from values, then the optional ones.
func argLines(args []string, d defaults) ([]string, error) {
	lines := []string{"args:"}
	for _, a := range args {
		name, value, _ := flagValue(a)
		switch name {
		case flagLeaderElect:
			lines = append(lines,
				`{{- if .Values.leaderElection.enabled }}`,
				`- --leader-elect`,
				`{{- else }}`,
				`- --leader-elect=false`,
				`{{- end }}`)
		case flagMetricsAddr:
			lines = append(lines, `- --metrics-bind-address={{ if .Values.metrics.enabled }}:{{ .Values.metrics.port }}{{ else }}0{{ end }}`)
		case flagSessionAddr:
			lines = append(lines, `- --session-api-bind-address=:{{ .Values.sessionAPI.port }}`)
		case flagAgentAPIURL:
			suffix := fmt.Sprintf(":%d", d.sessionAPIPort)
			base, ok := strings.CutSuffix(value, suffix)
			if !ok {
				return nil, fmt.Errorf("%s=%s does not end in the Session API port %s", name, value, suffix)
			}
			lines = append(lines, `- `+name+"="+base+`:{{ .Values.sessionAPI.port }}`)
		default:
			item, err := marshalItem(a)
			if err != nil {
				return nil, err
			}
			lines = append(lines, item...)
		}
	}
	return append(lines, optionalArgs...), nil
}

// portLines is the template of the container's ports: the metrics port only with metrics on,
// both numbers from values.
func portLines(tp *templater, ports []any, d defaults) ([]string, error) {
	lines := []string{"ports:"}
	for _, p := range ports {
		pm, ok := p.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("a container port that is not a map: %v", p)
		}
		number, _ := pm["containerPort"].(float64)
		guard := false
		switch int64(number) {
		case d.metricsPort:
			pm["containerPort"] = tp.scalar("{{ .Values.metrics.port }}")
			guard = true
		case d.sessionAPIPort:
			pm["containerPort"] = tp.scalar("{{ .Values.sessionAPI.port }}")
		}
		item, err := marshalItem(pm)
		if err != nil {
			return nil, err
		}
		if guard {
			lines = append(lines, `{{- if .Values.metrics.enabled }}`)
			lines = append(lines, item...)
			lines = append(lines, `{{- end }}`)
			continue
		}
		lines = append(lines, item...)
	}
	return lines, nil
}

// toYAMLBlock is a key whose value is a values entry, as it is (resources).
func toYAMLBlock(key, value string) blockFunc {
	return func(indent int) []string {
		return []string{key + ":", fmt.Sprintf("  {{- toYaml %s | nindent %d }}", value, indent+2)}
	}
}

// withBlock is a key present only when its values entry is not empty.
func withBlock(key, value string) blockFunc {
	return func(indent int) []string {
		return []string{
			fmt.Sprintf("{{- with %s }}", value),
			key + ":",
			fmt.Sprintf("  {{- toYaml . | nindent %d }}", indent+2),
			"{{- end }}",
		}
	}
}

// linesBlock is a block of fixed lines.
func linesBlock(lines []string) blockFunc {
	return func(int) []string { return lines }
}

// templateDeployment marks the manager Deployment's values-driven fields and returns the
// defaults read from it.
func templateDeployment(tp *templater, o object, d *defaults) error {
	spec, _ := o.get("spec").(map[string]any)
	pod, _ := o.get("spec", "template", "spec").(map[string]any)
	meta, _ := o.get("spec", "template", "metadata").(map[string]any)
	if spec == nil || pod == nil || meta == nil {
		return fmt.Errorf("deployment %s has no pod template", o.name())
	}
	containers, _ := pod["containers"].([]any)
	if len(containers) != 1 {
		return fmt.Errorf("deployment %s has %d containers; the chart knows one (the manager)", o.name(), len(containers))
	}
	c, _ := containers[0].(map[string]any)
	for _, f := range []string{"imagePullPolicy", "volumeMounts"} {
		if _, ok := c[f]; ok {
			return fmt.Errorf("config/manager now sets the container's %s: teach tools/gen-chart to keep it", f)
		}
	}
	for _, f := range []string{"nodeSelector", "tolerations", "imagePullSecrets", "priorityClassName", "volumes"} {
		if _, ok := pod[f]; ok {
			return fmt.Errorf("config/manager now sets the pod's %s: teach tools/gen-chart to keep it", f)
		}
	}

	replicas, _ := spec["replicas"].(float64)
	d.replicas = int64(replicas)
	spec["replicas"] = tp.scalar("{{ .Values.replicas }}")

	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
		meta["annotations"] = annotations
	}
	annotations[tp.block("zz", func(indent int) []string {
		return []string{"{{- with .Values.podAnnotations }}", fmt.Sprintf("{{- toYaml . | nindent %d }}", indent), "{{- end }}"}
	})] = nil

	image, _ := c["image"].(string)
	d.imageRepository, d.imageTag = splitImage(image)
	c["image"] = tp.scalar(`{{ include "parley.image" . }}`)
	c[tp.block("imagePullPolicy", linesBlock([]string{
		"{{- with .Values.image.pullPolicy }}", "imagePullPolicy: {{ . }}", "{{- end }}",
	}))] = nil

	args, err := stringList(c["args"])
	if err != nil {
		return err
	}
	lines, err := argLines(args, *d)
	if err != nil {
		return err
	}
	delete(c, "args")
	c[tp.block("args", linesBlock(lines))] = nil

	ports, _ := c["ports"].([]any)
	plines, err := portLines(tp, ports, *d)
	if err != nil {
		return err
	}
	delete(c, "ports")
	c[tp.block("ports", linesBlock(plines))] = nil

	d.resources = c["resources"]
	delete(c, "resources")
	c[tp.block("resources", toYAMLBlock("resources", ".Values.resources"))] = nil

	c[tp.block("volumeMounts", linesBlock([]string{
		`{{- if include "parley.tlsSecret" . }}`,
		"volumeMounts:",
		"- mountPath: {{ .Values.sessionAPI.tls.certDir }}",
		"  name: " + d.tlsVolume,
		"  readOnly: true",
		"{{- end }}",
	}))] = nil

	d.affinity = pod["affinity"]
	delete(pod, "affinity")
	pod[tp.block("affinity", withBlock("affinity", ".Values.affinity"))] = nil
	pod[tp.block("imagePullSecrets", withBlock("imagePullSecrets", ".Values.imagePullSecrets"))] = nil
	pod[tp.block("nodeSelector", withBlock("nodeSelector", ".Values.nodeSelector"))] = nil
	pod[tp.block("priorityClassName", linesBlock([]string{
		"{{- with .Values.priorityClassName }}", "priorityClassName: {{ . }}", "{{- end }}",
	}))] = nil
	pod[tp.block("tolerations", withBlock("tolerations", ".Values.tolerations"))] = nil
	pod[tp.block("volumes", linesBlock([]string{
		`{{- with include "parley.tlsSecret" . }}`,
		"volumes:",
		"- name: " + d.tlsVolume,
		"  secret:",
		"    secretName: {{ . }}",
		"{{- end }}",
	}))] = nil
	return nil
}

// splitImage splits "repo[:tag]" (a registry port is part of the repository).
func splitImage(image string) (repo, tag string) {
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		return image[:colon], image[colon+1:]
	}
	return image, "latest"
}

func stringList(v any) ([]string, error) {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("an argument that is not a string: %v", e)
		}
		out = append(out, s)
	}
	return out, nil
}

// tlsFromCertManager reads, from the render with config/certmanager, where the Session API's
// certificate is mounted and which Secret cert-manager writes.
func tlsFromCertManager(extras []object, d *defaults) error {
	for _, o := range extras {
		switch {
		case o.kind() == "Certificate" && o.group() == "cert-manager.io" && o.get("spec", "isCA") != true:
			// The serving certificate; the CA's Certificate is not mounted.
			d.certSecret = o.str("spec", "secretName")
		case o.kind() == "Deployment":
			c, _ := o.get("spec", "template", "spec", "containers").([]any)
			if len(c) != 1 {
				continue
			}
			cm, _ := c[0].(map[string]any)
			args, err := stringList(cm["args"])
			if err != nil {
				return err
			}
			for _, a := range args {
				if name, value, _ := flagValue(a); name == flagSessionCertIn {
					d.certDir = value
				}
			}
			mounts, _ := cm["volumeMounts"].([]any)
			for _, m := range mounts {
				mm, _ := m.(map[string]any)
				if mm["mountPath"] == d.certDir {
					d.tlsVolume, _ = mm["name"].(string)
				}
			}
		}
	}
	if d.certSecret == "" || d.certDir == "" || d.tlsVolume == "" {
		return fmt.Errorf("the render with config/certmanager has no Certificate secretName (%q), %s (%q) or its volume (%q)",
			d.certSecret, flagSessionCertIn, d.certDir, d.tlsVolume)
	}
	return nil
}

package main

import (
	"bytes"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// valuesTemplate is values.yaml; the defaults in {{ }} come from config/ so that the chart with
// these values renders what dist/install.yaml holds.
var valuesTemplate = template.Must(template.New("values").Parse(`# Values of the Parley chart. With these defaults the chart renders the objects of
# dist/install.yaml (test/install checks it), except the Namespace: install into a namespace
# that exists, or with --create-namespace, and label it for the restricted Pod Security
# standard the manager meets:
#   kubectl label namespace parley-system pod-security.kubernetes.io/enforce=restricted
# Object names are fixed (parley-…): the manager finds its Session API Service and CA Secret
# by them, so install one release per cluster.

image:
  repository: {{ .ImageRepository }}
  tag: "{{ .ImageTag }}"
  # digest (sha256:…) wins over tag when set.
  digest: ""
  # pullPolicy: empty leaves the Kubernetes default (IfNotPresent for a tag other than latest).
  pullPolicy: ""
imagePullSecrets: []

# Manager replicas: one leader reconciles; every replica serves the Session API.
replicas: {{ .Replicas }}

# Sized from docs/benchmarks.md (scale); GOMEMLIMIT follows the memory limit. Helm merges your
# resources with these: set a key to null to drop it (e.g. limits.cpu: null).
resources:
{{ .Resources }}
leaderElection:
  enabled: {{ .LeaderElection }}
  # namespace of the Lease (--leader-election-namespace); empty: the release namespace. The
  # leader-election Role and RoleBinding are made there (the namespace must exist).
  namespace: ""

# Namespaces whose Conversations this manager reconciles (--watch-namespaces); empty: all.
# When set, the manager's rights on pods, ConfigMaps, Secrets, Events, Conversations and
# Checkpoints are a Role and a RoleBinding (parley-manager-role, parley-manager-rolebinding) in
# each of these namespaces instead of a ClusterRole bound cluster-wide; the namespaces must exist.
watchNamespaces: []

# Client-side rate limits toward the apiserver; empty keeps the manager's defaults
# (--kube-api-qps 500, --kube-api-burst 1000, --history-api-qps 600, --history-api-burst 1200).
kubeAPI:
  qps:
  burst:
historyAPI:
  qps:
  burst:
# Parallel reconciles and compactions; empty keeps the manager's defaults.
maxConcurrentReconciles:
maxConcurrentCompactions:
# Least time between two forced compactions of one conversation through the Session API,
# e.g. 10m; empty keeps the manager's default (--min-forced-compaction-interval 5m).
minForcedCompactionInterval:
# More manager flags, one per item (see manager --help), e.g. --zap-log-level=debug.
extraArgs: []

sessionAPI:
  port: {{ .SessionAPIPort }}
  tls:
    # Without a Secret each replica signs its own serving certificate (30 days, renewed while
    # running) with a name-constrained CA the replicas share (its keys in the Secret
    # parley-session-api-ca, which only the manager reads); agent pods get the CA in their
    # bundle and clients read it from the ConfigMap parley-session-api-ca.
    # secretName: a kubernetes.io/tls Secret (tls.crt, tls.key, optional ca.crt) to serve
    # instead, mounted at certDir (--session-api-cert-dir; reloaded when it changes).
    secretName: ""
    certDir: {{ .CertDir }}
    certManager:
      # enabled: a cert-manager CA (self-signed, two years, renewed with the same key), a CA
      # Issuer and a Certificate for the Session API Service's names (30 days), written to the
      # Secret {{ .CertSecret }} and served (needs cert-manager; the same as config/certmanager).
      # secretName is then ignored.
      enabled: false
  # Limits of the Session API (docs/session-api.md#limits); empty keeps the manager's defaults,
  # a negative value switches a bound off. Rates are per second, with bursts of twice as many.
  limits:
    conversationRate:
    identityRate:
    sourceReviewRate:
    identityReviewRate:
    maxInFlight:
    maxInFlightPerIdentity:
    maxBodyBytesInFlight:
    maxBodyBytesInFlightPerIdentity:
    maxAnswerBytesInFlight:
    maxAnswerBytesInFlightPerIdentity:
    # identityHistoryRate is in history bytes per second (bursts of 256 MiB).
    identityHistoryRate:
    # namespaceHistoryRate is in history bytes per second, all identities of a namespace together
    # (bursts of 256 MiB).
    namespaceHistoryRate:
    answerCacheBytes:
    maxFollowsPerIdentity:
    maxFollowsPerConversation:
    followReauthorize:
    maxReviewsInFlight:
  # accessLog: one line per request at info level (who, which conversation, what, status; no
  # content); false adds --session-api-access-log=false.
  accessLog: true

metrics:
  # enabled: the manager serves /metrics over HTTPS on port (authorised by the apiserver;
  # scrapers need the parley-metrics-reader ClusterRole), with a Service; false: no metrics.
  enabled: true
  port: {{ .MetricsPort }}
  # A ServiceMonitor for the Prometheus Operator (config/prometheus).
  serviceMonitor:
    enabled: false
  # Alerting rules (PrometheusRule, config/prometheus); see docs/operations.md.
  prometheusRule:
    enabled: false
  # The Grafana dashboard as a ConfigMap labelled grafana_dashboard for Grafana's sidecar
  # (config/grafana).
  grafanaDashboard:
    enabled: false

# NetworkPolicies (config/network-policy): the Session API admits only Parley's agent pods
# (label parley.dev/conversation) of namespaces labelled parley.dev/agents=enabled, and
# namespaces labelled parley.dev/session-api=enabled; metrics
# only namespaces labelled metrics=enabled. Off by default: on a CNI that enforces them, kubectl
# parley through the API server's service proxy and an unlabelled Prometheus are refused too
# (docs/operations.md).
networkPolicy:
  enabled: false

podAnnotations: {}
priorityClassName: ""
nodeSelector: {}
tolerations: []
# The default spreads the replicas over nodes when it can; null removes it (Helm merges a map
# you give with the default, so {} would keep it).
affinity:
{{ .Affinity }}`))

func valuesYAML(d defaults) ([]byte, error) {
	resources, err := indentedYAML(d.resources)
	if err != nil {
		return nil, err
	}
	affinity, err := indentedYAML(d.affinity)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(header)
	err = valuesTemplate.Execute(&b, map[string]any{
		"ImageRepository": d.imageRepository, "ImageTag": d.imageTag, "Replicas": d.replicas,
		"Resources": resources, "LeaderElection": d.leaderElection, "SessionAPIPort": d.sessionAPIPort,
		"CertDir": d.certDir, "CertSecret": d.certSecret, "MetricsPort": d.metricsPort, "Affinity": affinity,
	})
	return b.Bytes(), err
}

// indentedYAML is v as YAML indented by two spaces, without the final newline.
func indentedYAML(v any) (string, error) {
	if v == nil {
		return "  {}", nil
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return strings.Join(indentLines(strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"), 2), "\n"), nil
}

package agentpod

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/parley-dev/parley/internal/names"
)

// Environment variables Parley sets in every container of the agent pod.
const (
	EnvConversation  = "PARLEY_CONVERSATION"
	EnvNamespace     = "PARLEY_NAMESPACE"
	EnvSessionID     = "PARLEY_SESSION_ID"
	EnvAPIURL        = "PARLEY_API_URL"
	EnvResume        = "PARLEY_RESUME"
	EnvResumeAttempt = "PARLEY_RESUME_ATTEMPT"
	EnvCheckpoint    = "PARLEY_CHECKPOINT"
	EnvResumeDir     = "PARLEY_RESUME_DIR"
	EnvTokenFile     = "PARLEY_TOKEN_FILE"
	EnvCAFile        = "PARLEY_CA_FILE"
	// EnvClaudeConfigDir points the Claude Agent SDK (and the Claude Code CLI) at the bundle's
	// config directory, for adapter claude-agent-sdk.
	EnvClaudeConfigDir = "CLAUDE_CONFIG_DIR"
	// EnvNodeExtraCACerts is Node.js's file of extra trusted CAs, read once at start. Node's
	// fetch takes no CA per call, so a Node agent (the TypeScript clients, the examples) trusts
	// the Session API's certificate only through it: it is set to PARLEY_CA_FILE's file unless
	// the container sets it itself.
	EnvNodeExtraCACerts = "NODE_EXTRA_CA_CERTS"
)

// Volumes and paths Parley adds.
const (
	VolumeBundle = "parley-bundle"
	VolumeToken  = "parley-token"
	VolumeCA     = "parley-ca"
	// TokenDir holds the projected ServiceAccount token (audience TokenAudience), the default
	// pkg/client reads.
	TokenDir      = "/var/run/secrets/parley.dev/serviceaccount"
	TokenAudience = "parley"
	// TokenExpirationSeconds: the kubelet rotates the token at 80 % of it.
	TokenExpirationSeconds = 3600
	CADir                  = "/var/run/secrets/parley.dev/ca"
	// CAFile is the Session API CA's file in the bundle mount, when it travels there.
	CAFile = "parley-ca.crt"
)

// Labels and annotations on agent pods.
const (
	LabelConversation = "parley.dev/conversation"
	LabelSession      = "parley.dev/session-id"
	LabelAttempt      = "parley.dev/attempt"
	LabelComponent    = "app.kubernetes.io/component"
	ComponentAgent    = "agent"
	// AnnotationTemplateHash is the hash of the template the pod was built from: a pod that
	// cannot start is replaced when the template changes.
	AnnotationTemplateHash = "parley.dev/template-hash"
)

// Params is what Parley sets in the agent pod besides the user's template.
type Params struct {
	Conversation string
	Namespace    string
	Owner        metav1.OwnerReference
	SessionID    string
	// Attempt numbers the pods of this session from 1; the pod's name ends in it.
	Attempt int32
	// Resume: the pod replaces an earlier one (a crash, or a resume after suspend).
	Resume     bool
	Checkpoint string
	// APIURL is how the pod reaches the Session API; CAConfigMap, when set, names a ConfigMap
	// in the pod's namespace whose key ca.crt is the CA that signed the API's certificate.
	APIURL      string
	CAConfigMap string
	// CAInBundle: the bundle ConfigMap carries the CA as CAFile (when CAConfigMap is empty).
	CAInBundle bool
	// MountPath is spec.agent.resumeMountPath; the bundle ConfigMap's items are mounted there.
	MountPath    string
	BundleName   string
	BundleItems  []corev1.KeyToPath
	ClaudeConfig string // a directory of the bundle (relative) for CLAUDE_CONFIG_DIR; "" for none
}

// PodName is the agent pod's name for an attempt: deterministic, so a create whose answer was
// lost is found again instead of doubled.
func PodName(conversation string, attempt int32) string {
	return names.Child(conversation, "agent-"+strconv.Itoa(int(attempt)))
}

// ConflictError says which part of the template clashes with what Parley must set.
type ConflictError struct {
	Field   string
	Message string
}

func (e *ConflictError) Error() string { return e.Field + ": " + e.Message }

// TemplateHash is a short hash of the template, stable across reads.
func TemplateHash(t *corev1.PodTemplateSpec) string {
	b, _ := json.Marshal(t) // a PodTemplateSpec always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// Build makes the agent pod from the template: the user's fields win wherever they do not clash
// with what Parley sets (restartPolicy Never, the bundle and token volumes, the PARLEY_*
// variables); a clash is a *ConflictError and no pod.
func Build(template *corev1.PodTemplateSpec, p Params) (*corev1.Pod, error) {
	if err := checkConflicts(template, p); err != nil {
		return nil, err
	}
	t := template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            PodName(p.Conversation, p.Attempt),
			Namespace:       p.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			OwnerReferences: []metav1.OwnerReference{p.Owner},
		},
		Spec: t.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[LabelConversation] = names.Label(p.Conversation)
	pod.Labels[LabelSession] = names.Label(p.SessionID)
	pod.Labels[LabelAttempt] = strconv.Itoa(int(p.Attempt))
	if _, ok := pod.Labels[LabelComponent]; !ok {
		pod.Labels[LabelComponent] = ComponentAgent
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationTemplateHash] = TemplateHash(template)

	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	if pod.Spec.ServiceAccountName == "" {
		// The token projection needs a named ServiceAccount; "default" is what admission
		// would pick, said out loud.
		pod.Spec.ServiceAccountName = "default"
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, volumes(p)...)
	env := environment(p)
	mounts := mounts(p)
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		c.Env = append(c.Env, env...)
		if ca := caFile(p); ca != "" && !setsEnv(c, EnvNodeExtraCACerts) {
			c.Env = append(c.Env, corev1.EnvVar{Name: EnvNodeExtraCACerts, Value: ca})
		}
		c.VolumeMounts = append(c.VolumeMounts, mounts...)
	}
	return pod, nil
}

func volumes(p Params) []corev1.Volume {
	vols := []corev1.Volume{
		{Name: VolumeBundle, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: p.BundleName},
			Items:                p.BundleItems,
			DefaultMode:          ptr.To[int32](0o444),
		}}},
		{Name: VolumeToken, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: TokenAudience, ExpirationSeconds: ptr.To[int64](TokenExpirationSeconds), Path: "token",
			}}},
			DefaultMode: ptr.To[int32](0o444),
		}}},
	}
	if p.CAConfigMap != "" {
		vols = append(vols, corev1.Volume{Name: VolumeCA, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: p.CAConfigMap},
			Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
		}}})
	}
	return vols
}

func mounts(p Params) []corev1.VolumeMount {
	m := []corev1.VolumeMount{
		{Name: VolumeBundle, MountPath: p.MountPath, ReadOnly: true},
		{Name: VolumeToken, MountPath: TokenDir, ReadOnly: true},
	}
	if p.CAConfigMap != "" {
		m = append(m, corev1.VolumeMount{Name: VolumeCA, MountPath: CADir, ReadOnly: true})
	}
	return m
}

func environment(p Params) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: EnvConversation, Value: p.Conversation},
		{Name: EnvNamespace, Value: p.Namespace},
		{Name: EnvSessionID, Value: p.SessionID},
		{Name: EnvAPIURL, Value: p.APIURL},
		{Name: EnvResume, Value: strconv.FormatBool(p.Resume)},
		{Name: EnvResumeAttempt, Value: strconv.Itoa(int(p.Attempt - 1))}, // resumes so far: 0 for the first pod
		{Name: EnvCheckpoint, Value: p.Checkpoint},
		{Name: EnvResumeDir, Value: p.MountPath},
		{Name: EnvTokenFile, Value: path.Join(TokenDir, "token")},
	}
	if ca := caFile(p); ca != "" {
		env = append(env, corev1.EnvVar{Name: EnvCAFile, Value: ca})
	}
	if p.ClaudeConfig != "" {
		env = append(env, corev1.EnvVar{Name: EnvClaudeConfigDir, Value: path.Join(p.MountPath, p.ClaudeConfig)})
	}
	return env
}

// caFile is the file of the CAs agents verify the Session API with (empty: none of Parley's).
func caFile(p Params) string {
	switch {
	case p.CAConfigMap != "":
		return path.Join(CADir, "ca.crt")
	case p.CAInBundle:
		return path.Join(p.MountPath, CAFile)
	}
	return ""
}

// setsEnv reports whether the container sets the variable name itself.
func setsEnv(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// reservedEnv are the variables Parley sets; a template setting one would be silently
// overridden, so it is refused instead.
func reservedEnv(p Params) map[string]bool {
	r := map[string]bool{}
	for _, e := range environment(Params{CAConfigMap: "x", ClaudeConfig: p.ClaudeConfig}) {
		r[e.Name] = true
	}
	return r
}

func checkConflicts(t *corev1.PodTemplateSpec, p Params) error {
	if rp := t.Spec.RestartPolicy; rp != "" && rp != corev1.RestartPolicyNever {
		return &ConflictError{
			Field:   "spec.agent.template.spec.restartPolicy",
			Message: fmt.Sprintf("is %s; it must be Never or unset: Parley restarts a crashed agent itself, with the resume bundle", rp),
		}
	}
	if len(t.Spec.Containers) == 0 {
		return &ConflictError{Field: "spec.agent.template.spec.containers", Message: "the template has no container"}
	}
	for i, v := range t.Spec.Volumes {
		if v.Name == VolumeBundle || v.Name == VolumeToken || v.Name == VolumeCA {
			return &ConflictError{
				Field:   fmt.Sprintf("spec.agent.template.spec.volumes[%d].name", i),
				Message: fmt.Sprintf("%q is reserved for the volume Parley adds; rename the volume", v.Name),
			}
		}
	}
	reserved := reservedEnv(p)
	taken := map[string]string{path.Clean(p.MountPath): "spec.agent.resumeMountPath", TokenDir: "the Session API token", CADir: "the Session API CA"}
	for _, group := range []struct {
		field      string
		containers []corev1.Container
	}{{"containers", t.Spec.Containers}, {"initContainers", t.Spec.InitContainers}} {
		for i := range group.containers {
			c := &group.containers[i]
			for j, m := range c.VolumeMounts {
				if what, ok := taken[path.Clean(m.MountPath)]; ok {
					return &ConflictError{
						Field:   fmt.Sprintf("spec.agent.template.spec.%s[%d].volumeMounts[%d].mountPath", group.field, i, j),
						Message: fmt.Sprintf("%s is where Parley mounts %s; mount the volume elsewhere or set spec.agent.resumeMountPath", m.MountPath, what),
					}
				}
			}
			if group.field != "containers" {
				continue
			}
			for j, e := range c.Env {
				if reserved[e.Name] || strings.HasPrefix(e.Name, "PARLEY_") {
					return &ConflictError{
						Field:   fmt.Sprintf("spec.agent.template.spec.containers[%d].env[%d].name", i, j),
						Message: fmt.Sprintf("%s is set by Parley; remove it from the template", e.Name),
					}
				}
			}
		}
	}
	return nil
}

// Package agentpod holds the pure decisions about a Conversation's agent pod: what state a pod
// is in the way the kubelet reports it (Classify), how long to wait before the next restart
// (Backoff), whether the agent may be restarted at all (NextAfterCrash), and the pod itself
// built from the template (Build). Nothing here talks to the API server.
package agentpod

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// State is where an agent pod stands.
type State string

const (
	// Pending: created, not running yet, and nothing says it cannot start.
	Pending State = "Pending"
	// Running: the agent container runs.
	Running State = "Running"
	// Completed: the agent container exited 0. Not restarted.
	Completed State = "Completed"
	// Crashed: the agent failed; a restart may follow.
	Crashed State = "Crashed"
	// Blocked: the pod cannot start for a reason that is not the agent's (image pull, container
	// config, scheduling). No restart is spent; the kubelet or scheduler keeps trying.
	Blocked State = "Blocked"
)

// Observation is what Classify found.
type Observation struct {
	State State
	// Reason: an AgentFailure* reason when Crashed; when Blocked, the AgentRunning condition's
	// reason (ImagePullFailed, ContainerConfigInvalid, PodUnschedulable).
	Reason   string
	ExitCode int32
	// Message is the kubelet's message or the container's termination message (never
	// message content: the agent chooses what it writes there), cut to MaxMessage bytes.
	Message string
	// At is when the pod failed, finished or was found lost; zero when unknown.
	At time.Time
}

// MaxMessage bounds Observation.Message (status.agent.lastFailure.message).
const MaxMessage = 1024

// Node is what Classify needs to know about the node a pod is bound to.
type Node struct {
	// Ready is the node's Ready condition; Since is its lastTransitionTime.
	Ready corev1.ConditionStatus
	Since time.Time
	// Gone: the Node object does not exist any more.
	Gone bool
}

// AgentContainer is the container whose exit decides the agent's fate: the first container of
// the template (sidecars are init containers with restartPolicy Always, or later containers).
func AgentContainer(pod *corev1.Pod) string {
	if len(pod.Spec.Containers) == 0 {
		return ""
	}
	return pod.Spec.Containers[0].Name
}

// Classify reads a pod's status the way the kubelet reports it. node is the pod's node (nil when
// unbound or unknown); a node that is not Ready for longer than nodeLostGrace makes its pods
// lost. A pod being deleted that Parley did not delete is a crash (Deleted, or the disruption
// that deleted it); the caller passes only pods it did not delete itself.
func Classify(pod *corev1.Pod, node *Node, now time.Time, nodeLostGrace time.Duration) Observation {
	agent := containerStatus(pod.Status.ContainerStatuses, AgentContainer(pod))
	var term *corev1.ContainerStateTerminated
	if agent != nil {
		term = agent.State.Terminated
	}
	crash := func(reason string) Observation {
		obs := Observation{State: Crashed, Reason: reason, Message: cut(pod.Status.Message), At: failedAt(pod, now)}
		if term != nil {
			obs.ExitCode = term.ExitCode
			if obs.Message == "" {
				obs.Message = cut(term.Message)
			}
		}
		return obs
	}

	// The system's own verdict first: an evicted pod's containers were killed by the kubelet,
	// whatever exit code they show.
	if pod.Status.Phase == corev1.PodFailed {
		if reason := systemReason(pod); reason != "" {
			return crash(reason)
		}
	}
	if pod.DeletionTimestamp != nil {
		// Someone else deleted the pod (Parley passes only pods it did not delete): a crash,
		// even if the agent exited 0 on SIGTERM.
		if term != nil && term.Reason == "OOMKilled" {
			return crash(parleyv1alpha1.AgentFailureOOMKilled)
		}
		reason := disruption(pod)
		if reason == "" {
			reason = parleyv1alpha1.AgentFailureDeleted
		}
		obs := crash(reason)
		obs.At = pod.DeletionTimestamp.Time
		return obs
	}
	if term != nil {
		switch {
		case term.Reason == "OOMKilled":
			return crash(parleyv1alpha1.AgentFailureOOMKilled)
		case term.ExitCode != 0:
			return crash(parleyv1alpha1.AgentFailureError)
		default:
			return Observation{State: Completed, Reason: parleyv1alpha1.ReasonCompleted, Message: cut(term.Message), At: term.FinishedAt.Time}
		}
	}
	switch pod.Status.Phase {
	case corev1.PodFailed:
		return crash(parleyv1alpha1.AgentFailureError)
	case corev1.PodSucceeded:
		return Observation{State: Completed, Reason: parleyv1alpha1.ReasonCompleted, At: failedAt(pod, now)}
	}
	if node != nil && pod.Spec.NodeName != "" {
		if node.Gone {
			return Observation{State: Crashed, Reason: parleyv1alpha1.AgentFailureNodeLost, Message: "node " + pod.Spec.NodeName + " was removed", At: now}
		}
		if node.Ready != corev1.ConditionTrue && !node.Since.IsZero() && now.Sub(node.Since) >= nodeLostGrace {
			return Observation{
				State: Crashed, Reason: parleyv1alpha1.AgentFailureNodeLost,
				Message: "node " + pod.Spec.NodeName + " not Ready since " + node.Since.UTC().Format(time.RFC3339), At: now,
			}
		}
	}
	if b := blocked(pod); b.State == Blocked {
		return b
	}
	if agent != nil && agent.State.Running != nil {
		return Observation{State: Running, Reason: parleyv1alpha1.ReasonPodRunning, At: agent.State.Running.StartedAt.Time}
	}
	return Observation{State: Pending, Reason: parleyv1alpha1.ReasonPodPending}
}

// blocked finds a reason the pod cannot start that is not the agent's fault.
func blocked(pod *corev1.Pod) Observation {
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range statuses {
			w := statuses[i].State.Waiting
			if w == nil {
				continue
			}
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable":
				return Observation{State: Blocked, Reason: parleyv1alpha1.ReasonImagePullFailed, Message: cut(statuses[i].Name + ": " + w.Reason + ": " + w.Message)}
			case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return Observation{State: Blocked, Reason: parleyv1alpha1.ReasonContainerConfigInvalid, Message: cut(statuses[i].Name + ": " + w.Reason + ": " + w.Message)}
			}
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return Observation{State: Blocked, Reason: parleyv1alpha1.ReasonPodUnschedulable, Message: cut(c.Message)}
		}
	}
	return Observation{}
}

// systemReason names why the system failed a pod: its status reason (Evicted, DeadlineExceeded,
// OutOfcpu, ...) or the disruption condition; "" when the containers ended by themselves.
func systemReason(pod *corev1.Pod) string {
	if d := disruption(pod); d != "" {
		return d
	}
	if pod.Status.Reason == "Evicted" {
		return parleyv1alpha1.AgentFailureEvicted
	}
	return pod.Status.Reason
}

// disruption names why the system deleted or failed the pod, from its DisruptionTarget condition.
func disruption(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Reason {
		case "EvictionByEvictionAPI", "TerminationByKubelet":
			return parleyv1alpha1.AgentFailureEvicted
		case "PreemptionByScheduler", "PreemptionByKubeScheduler":
			return parleyv1alpha1.AgentFailurePreempted
		case "DeletionByTaintManager", "DeletionByPodGC":
			return parleyv1alpha1.AgentFailureNodeLost
		}
	}
	return ""
}

func failedAt(pod *corev1.Pod, now time.Time) time.Time {
	var at time.Time
	for i := range pod.Status.ContainerStatuses {
		if t := pod.Status.ContainerStatuses[i].State.Terminated; t != nil && t.FinishedAt.After(at) {
			at = t.FinishedAt.Time
		}
	}
	if at.IsZero() {
		return now
	}
	return at
}

func containerStatus(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

func cut(s string) string {
	if len(s) <= MaxMessage {
		return s
	}
	// Cut on a rune boundary so status stays valid UTF-8.
	i := MaxMessage
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i]
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// keepFailure writes report to e2e-NAME-failure.txt in the local cluster's log folder, which
// outlives the run (.ci/run prints it when make test-e2e fails), and returns it.
func keepFailure(ctx context.Context, name, report string) string {
	logs, err := localCluster(ctx, "logs")
	if err == nil {
		path := filepath.Join(logs, "e2e-"+name+"-failure.txt")
		if err := os.WriteFile(path, []byte(report), 0o600); err == nil {
			report = "(kept in " + path + ")\n" + report
		}
	}
	return report
}

// managerPodsReport says, for each installed manager pod, where it stands: phase, conditions,
// each container's state and restarts, the pod's Events, and the last lines of its log.
func managerPodsReport(ctx context.Context) string {
	var b strings.Builder
	pods, err := clientset.CoreV1().Pods(installNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "listing the pods of " + installNamespace + ": " + err.Error()
	}
	if len(pods.Items) == 0 {
		b.WriteString("no pod in " + installNamespace + "\n")
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s: phase %s, node %q\n", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "  container %s: image %s, ready %t, restarts %d, %s\n", cs.Name, cs.Image, cs.Ready, cs.RestartCount, containerState(cs.State))
			if cs.LastTerminationState.Terminated != nil {
				fmt.Fprintf(&b, "    last: %s\n", containerState(cs.LastTerminationState))
			}
		}
		events, err := clientset.CoreV1().Events(installNamespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name})
		if err == nil {
			for _, e := range events.Items {
				fmt.Fprintf(&b, "  event %s %s (x%d): %s\n", e.Type, e.Reason, e.Count, e.Message)
			}
		}
		tail := int64(15)
		log, err := clientset.CoreV1().Pods(installNamespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
		if err != nil {
			log = []byte(err.Error())
		}
		fmt.Fprintf(&b, "  log (last %d lines):\n%s\n", tail, log)
	}
	return b.String()
}

func containerState(s corev1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		return "waiting: " + s.Waiting.Reason + " " + s.Waiting.Message
	case s.Terminated != nil:
		return fmt.Sprintf("terminated: %s, exit %d %s", s.Terminated.Reason, s.Terminated.ExitCode, s.Terminated.Message)
	case s.Running != nil:
		return "running since " + s.Running.StartedAt.String()
	}
	return "no state"
}

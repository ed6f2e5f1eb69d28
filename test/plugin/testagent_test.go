package plugin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/internal/bundle"
	"github.com/parley-dev/parley/test/support/repopath"
)

// The cycle make run-local shows, with the test agent run here on the bundle of the pod a
// message woke (envtest runs no pods): the agent answered and slept; kubectl parley send wakes
// it; the new pod's bundle holds the message, and the test agent answers it knowing the whole
// conversation, then the next message as it comes.
func TestTestAgentAnswersTheMessageThatWokeIt(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	u.sleepingAgent(t, "talker")
	_, _, err := u.kp(ctx, "send", "talker", "wake up")
	must(t, err)

	pod := &corev1.Pod{}
	eventually(t, 30*time.Second, "the woken pod", func() bool {
		return env.admin.Get(ctx, client.ObjectKey{Namespace: u.ns, Name: agentpod.PodName("talker", 2)}, pod) == nil
	})
	dir := t.TempDir()
	writeBundle(t, pod, dir)
	agent := startTestAgent(t, u, "talker", dir)

	eventually(t, 30*time.Second, "the answer to the waking message", func() bool {
		return strings.Contains(lastText(t, u, "talker"), `You said "wake up"; I know 3 messages`)
	})
	out, _, err := u.kp(ctx, "send", "talker", "and now?", "--wait")
	must(t, err)
	if !strings.Contains(out, `You said "and now?"; I know 5 messages`) {
		t.Fatalf("send --wait printed %q", out)
	}
	if code := agent(); code != 0 {
		t.Fatalf("the test agent exited %d after SIGTERM", code)
	}
}

// writeBundle writes the files of the bundle ConfigMap pod mounts into dir, by their paths.
func writeBundle(t *testing.T, pod *corev1.Pod, dir string) {
	t.Helper()
	for _, v := range pod.Spec.Volumes {
		if v.Name != agentpod.VolumeBundle {
			continue
		}
		cm := &corev1.ConfigMap{}
		must(t, env.admin.Get(context.Background(), client.ObjectKey{Namespace: pod.Namespace, Name: v.ConfigMap.Name}, cm))
		for _, item := range v.ConfigMap.Items {
			path := filepath.Join(dir, item.Path)
			must(t, os.MkdirAll(filepath.Dir(path), 0o755))
			must(t, os.WriteFile(path, []byte(cm.Data[item.Key]), 0o600))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, bundle.ConversationFile)); err != nil {
		t.Fatalf("the bundle has no %s: %v", bundle.ConversationFile, err)
	}
}

// startTestAgent builds test/agent and runs `answer` as u, with the bundle in dir, the way the
// pod's environment would set it; the returned function stops it and returns its exit code.
func startTestAgent(t *testing.T, u *user, name, dir string) func() int {
	t.Helper()
	root, err := repopath.Root()
	must(t, err)
	bin := filepath.Join(env.dir, "test-agent")
	build := exec.Command("go", "build", "-o", bin, "./test/agent")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./test/agent: %v\n%s", err, out)
	}
	tokenFile, caFile := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	must(t, os.WriteFile(tokenFile, []byte(u.token), 0o600))
	must(t, os.WriteFile(caFile, env.apiCA, 0o600))
	cmd := exec.Command(bin, "answer")
	cmd.Env = append(os.Environ(),
		agentpod.EnvAPIURL+"="+fmt.Sprintf("https://127.0.0.1:%d", env.apiPort), agentpod.EnvTokenFile+"="+tokenFile,
		agentpod.EnvCAFile+"="+caFile, agentpod.EnvNamespace+"="+u.ns, agentpod.EnvConversation+"="+name,
		agentpod.EnvResumeDir+"="+dir, agentpod.EnvResume+"=true", agentpod.EnvResumeAttempt+"=1")
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	must(t, cmd.Start())
	exited := make(chan int, 1)
	go func() { _ = cmd.Wait(); exited <- cmd.ProcessState.ExitCode() }()
	stopped := false
	stop := func() int {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case code := <-exited:
			t.Logf("test agent:\n%s", log.String())
			return code
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			return -1
		}
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	return stop
}

// lastText is the text of the conversation's last message.
func lastText(t *testing.T, u *user, name string) string {
	t.Helper()
	page, err := u.direct(t).Messages(context.Background(), u.ns, name, 0, 0)
	if err != nil || len(page.Messages) == 0 {
		return ""
	}
	return page.Messages[len(page.Messages)-1].Text()
}

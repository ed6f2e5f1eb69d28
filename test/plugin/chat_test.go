package plugin

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/internal/plugin"
	"github.com/parley-dev/parley/pkg/conversation"
)

// idleAgent gives a Conversation an agent (its pods never run: envtest has no kubelet) that
// sleeps a second after it answered.
func idleAgent(s *parleyv1alpha1.ConversationSpec) {
	s.Agent = &parleyv1alpha1.AgentSpec{
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "example.com/agent:1"}}}},
		Idle:     &parleyv1alpha1.IdleSpec{SuspendAfter: metav1.Duration{Duration: time.Second}},
	}
}

// sleepingAgent creates a Conversation with an idleAgent whose first turn is answered ("hello",
// "hi") and waits until the agent sleeps.
func (u *user) sleepingAgent(t *testing.T, name string) *parleyv1alpha1.Conversation {
	t.Helper()
	conv := u.conversation(t, name, idleAgent)
	appendMessages(t, u, name, []conversation.Message{
		msg("u1", conversation.RoleUser, text("hello")), msg("a1", conversation.RoleAssistant, text("hi")),
	})
	eventually(t, 30*time.Second, "the agent of "+name+" asleep", func() bool {
		got := &parleyv1alpha1.Conversation{}
		return env.admin.Get(context.Background(), client.ObjectKeyFromObject(conv), got) == nil && got.AgentAsleep()
	})
	return conv
}

// chatSession is kubectl parley chat running as a user, its input a pipe as from a terminal.
type chatSession struct {
	typing      *io.PipeWriter
	out, errOut *syncBuffer
	exit        chan int
}

// chat starts kubectl parley chat as u with args after the command name.
func (u *user) chat(args ...string) *chatSession {
	in, typing := io.Pipe()
	c := &chatSession{typing: typing, out: &syncBuffer{}, errOut: &syncBuffer{}, exit: make(chan int, 1)}
	go func() {
		c.exit <- plugin.Execute(context.Background(), genericiooptions.IOStreams{In: in, Out: c.out, ErrOut: c.errOut},
			append([]string{"--kubeconfig", u.kubeconfig, "-n", u.ns, "chat"}, args...))
	}()
	return c
}

// say types a line and presses Enter.
func (c *chatSession) say(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(c.typing, line+"\n")
	must(t, err)
}

// exitCode waits for the session to end and returns its exit code.
func (c *chatSession) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case code := <-c.exit:
		return code
	case <-time.After(10 * time.Second):
		t.Fatalf("chat did not end; it printed %q, %q", c.out.String(), c.errOut.String())
	}
	return 0
}

// leave presses Ctrl-D (ends the input) and fails unless chat then exits 0.
func (c *chatSession) leave(t *testing.T) {
	t.Helper()
	must(t, c.typing.Close())
	if code := c.exitCode(t); code != 0 {
		t.Fatalf("chat exited %d at the end of its input: %s", code, c.errOut.String())
	}
}

func (c *chatSession) waitGreeting(t *testing.T) {
	t.Helper()
	eventually(t, 20*time.Second, "the greeting", func() bool { return strings.Contains(c.errOut.String(), "Ctrl-D leaves") })
}

// chat reads lines from a pipe, as from a terminal: each line is a message, the answers
// print as they come, end of input (Ctrl-D) leaves with exit 0.
func TestChat(t *testing.T) {
	u := newUser(t, "get", "create")
	u.conversation(t, "chat", nil)
	appendMessages(t, u, "chat", twoTurns(""))
	answerer(t, u, "chat")

	c := u.chat("chat", "--lines", "1")
	c.waitGreeting(t)
	if got := c.out.String(); !strings.Contains(got, "Two files") || strings.Contains(got, "What is in /tmp?") {
		t.Fatalf("--lines 1 did not print the last message alone:\n%s", got)
	}
	c.say(t, "first question")
	eventually(t, 20*time.Second, "the first answer", func() bool { return strings.Contains(c.out.String(), "You said: first question") })
	c.say(t, "\nsecond question")
	eventually(t, 20*time.Second, "the second answer", func() bool { return strings.Contains(c.out.String(), "You said: second question") })
	c.leave(t)
	got := c.out.String()
	inOrder(t, got, "Two files", "Looking it up.", "▸ Bash", "◂ result notes.txt", "You said: first question", "You said: second question")
	if strings.Contains(got, "\nuser\n") {
		t.Fatalf("chat printed the user's own lines back:\n%s", got)
	}
}

// A line typed to an agent asleep while idle wakes it: chat says so, the controller starts a
// new pod (no restart counted), and the answer prints as it comes. The stand-in agent answers
// from outside the (never running) pod.
func TestChatWakesASleepingAgent(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	conv := u.sleepingAgent(t, "sleepy")
	answerer(t, u, "sleepy")

	c := u.chat("sleepy")
	c.waitGreeting(t)
	c.say(t, "wake up")
	eventually(t, 20*time.Second, "the wake notice", func() bool {
		return strings.Contains(c.errOut.String(), "was asleep (idle); this message wakes it")
	})
	eventually(t, 30*time.Second, "the woken agent's pod", func() bool {
		return env.admin.Get(ctx, client.ObjectKey{Namespace: u.ns, Name: agentpod.PodName("sleepy", 2)}, &corev1.Pod{}) == nil
	})
	eventually(t, 20*time.Second, "the answer", func() bool { return strings.Contains(c.out.String(), "You said: wake up") })
	c.leave(t)
	inOrder(t, c.out.String(), "hi", "Looking it up.", "▸ Bash", "◂ result notes.txt", "You said: wake up")
	got := &parleyv1alpha1.Conversation{}
	must(t, env.admin.Get(ctx, client.ObjectKeyFromObject(conv), got))
	if got.Status.Agent == nil || got.Status.Agent.Restarts != 0 {
		t.Fatalf("the wake counted restarts: %+v", got.Status.Agent)
	}
}

// chat's errors end it with a non-zero exit and say what to do: a conversation that does not
// exist (list them), and a line from a user who may read but not write (what to ask for).
func TestChatErrorsSayWhatToDo(t *testing.T) {
	u := newUser(t, "get", "create")
	c := u.chat("no-such")
	if code := c.exitCode(t); code == 0 || !strings.Contains(c.errOut.String(), "kubectl get conversations") {
		t.Fatalf("chat with a missing conversation: exit %d, %q; want a hint to list them", code, c.errOut.String())
	}

	reader := newUser(t, "get")
	reader.conversation(t, "chat", nil)
	c = reader.chat("chat")
	c.waitGreeting(t)
	c.say(t, "hello")
	if code := c.exitCode(t); code == 0 || !strings.Contains(c.errOut.String(), "writing needs create") {
		t.Fatalf("chat as a user without create: exit %d, %q; want what to ask for", code, c.errOut.String())
	}
}

package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/pkg/conversation"
)

// answerer stands in for an agent: it follows the conversation and answers every person's
// message appended from now on with a tool call, its result and a final answer quoting the question. It stops with
// the test.
func answerer(t *testing.T, u *user, name string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	api := u.direct(t)
	head, err := api.Conversation(ctx, u.ns, name)
	must(t, err)
	go func() {
		defer close(done)
		_ = api.Follow(ctx, u.ns, name, head.Sequence, func(m conversation.Message) error {
			if m.Role != conversation.RoleUser || !strings.HasPrefix(m.ID, "user-") {
				return nil
			}
			call := msg(m.ID+"-call", conversation.RoleAssistant, text("Looking it up."),
				conversation.Block{Type: conversation.BlockToolUse, ToolUseID: m.ID + "-t", ToolName: "Bash", Input: []byte(`{"command":"ls"}`)})
			result := msg(m.ID+"-result", conversation.RoleTool, conversation.Block{Type: conversation.BlockToolResult, ToolUseID: m.ID + "-t", Text: "notes.txt"})
			answer := msg(m.ID+"-answer", conversation.RoleAssistant, text("You said: "+m.Text()))
			for _, reply := range []conversation.Message{call, result, answer} {
				time.Sleep(50 * time.Millisecond) // the answer streams in, message by message
				if _, err := api.Append(ctx, u.ns, name, []conversation.Message{reply}); err != nil {
					return err
				}
			}
			return nil
		})
	}()
}

func TestSendWaitsForTheAnswer(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	u.conversation(t, "chat", nil)

	out, errOut, err := u.kp(ctx, "send", "chat", "no one answers")
	must(t, err)
	if out != "" || !strings.Contains(errOut, "appended to "+u.ns+"/chat at sequence") {
		t.Fatalf("send without --wait printed %q, %q", out, errOut)
	}

	answerer(t, u, "chat")
	out, _, err = u.kp(ctx, "send", "chat", "what is here?", "--wait")
	must(t, err)
	inOrder(t, out, "assistant\n  Looking it up.", "▸ Bash", "tool\n  ◂ result notes.txt", "assistant\n  You said: what is here?\n")
	if strings.Contains(out, "what is here?\n\n") || strings.Contains(out, "user\n") {
		t.Fatalf("send --wait printed the user's own message:\n%s", out)
	}

	_, _, err = u.kp(ctx, "send", "chat", "   ")
	if err == nil || !strings.Contains(err.Error(), "the message is empty") {
		t.Fatalf("an empty message: %v", err)
	}
	_, _, err = u.kp(ctx, "send", "no-such", "hello")
	if err == nil || !strings.Contains(err.Error(), "kubectl get conversations") {
		t.Fatalf("a missing conversation: %v, want a hint to list them", err)
	}
	reader := newUser(t, "get")
	reader.conversation(t, "chat", nil)
	_, _, err = reader.kp(ctx, "send", "chat", "hello")
	if err == nil || !strings.Contains(err.Error(), "writing needs create") {
		t.Fatalf("a user without create: %v, want what to ask for", err)
	}
}

// A message to an agent asleep while idle wakes it: send says so, a new pod starts, and --wait
// prints the answer. The stand-in agent answers from outside the (never running) pod.
func TestSendWakesAnIdleAgent(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	conv := u.conversation(t, "sleepy", idleAgent)
	answerer(t, u, "sleepy")
	_, _, err := u.kp(ctx, "send", "sleepy", "hello", "--wait")
	must(t, err)
	get := func() *parleyv1alpha1.Conversation {
		c := &parleyv1alpha1.Conversation{}
		must(t, env.admin.Get(ctx, client.ObjectKeyFromObject(conv), c))
		return c
	}
	eventually(t, 30*time.Second, "the agent asleep", func() bool { return get().AgentAsleep() })

	out, errOut, err := u.kp(ctx, "send", "sleepy", "wake up", "--wait")
	must(t, err)
	if !strings.Contains(errOut, "was asleep (idle); this message wakes it") || !strings.Contains(out, "You said: wake up") {
		t.Fatalf("send to a sleeping agent printed %q, %q", out, errOut)
	}
	eventually(t, 30*time.Second, "the woken agent's pod", func() bool {
		err := env.admin.Get(ctx, client.ObjectKey{Namespace: u.ns, Name: agentpod.PodName("sleepy", 2)}, &corev1.Pod{})
		return err == nil
	})
	if c := get(); c.Status.Agent.Restarts != 0 {
		t.Fatalf("the wake counted %d restarts", c.Status.Agent.Restarts)
	}
}

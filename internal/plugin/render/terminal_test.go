package render

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/parley-dev/parley/pkg/conversation"
)

// hostile is text an agent, a tool's output, a store's error or an Event may carry: terminal
// escapes that set the clipboard (OSC 52), clear the screen, move the cursor up to rewrite
// lines already shown, return the carriage over a line, an 8-bit CSI, a bidi override that
// shows text in another order, and bytes that are not UTF-8.
const hostile = "ok\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x1b[1A\x1b[2Kfake\rover\u009b31m\u202eevil\xff\x9b\x00end"

func assertTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\r", "\x07", "\x00", "\u009b", "\u202e"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s prints %q to the terminal:\n%q", what, bad, out)
		}
	}
	if !utf8.ValidString(out) {
		t.Errorf("%s prints bytes that are not UTF-8:\n%q", what, out)
	}
	for _, seen := range []string{"ok", "fake", "over", "evil", "end"} {
		if !strings.Contains(out, seen) {
			t.Errorf("%s hides %q:\n%q", what, seen, out)
		}
	}
}

// What kubectl parley prints of a conversation comes from its agent and the tools it ran:
// never a control sequence that the person's terminal would act on.
func TestConversationTextCannotDriveTheTerminal(t *testing.T) {
	m := conversation.Message{ID: "m1", Role: conversation.RoleAssistant, Name: hostile, Model: hostile, Blocks: []conversation.Block{
		{Type: conversation.BlockText, Text: hostile},
		{Type: conversation.BlockThinking, Text: hostile},
		{Type: conversation.BlockToolUse, ToolUseID: hostile, ToolName: hostile, Arguments: hostile},
		{Type: conversation.BlockToolResult, ToolUseID: hostile, Text: hostile},
	}}
	for _, full := range []bool{false, true} {
		var out bytes.Buffer
		if err := Message(&out, &m, Options{Full: full, Width: 1000}); err != nil {
			t.Fatal(err)
		}
		assertTerminalSafe(t, "a message", out.String())
		out.Reset()
		st := conversation.State{SessionID: hostile, Messages: []conversation.Message{m}}
		if err := Conversation(&out, ConversationHeader{Namespace: "ns", Name: "c", SessionID: hostile}, &st, Options{Full: full, Width: 1000}); err != nil {
			t.Fatal(err)
		}
		assertTerminalSafe(t, "a conversation", out.String())
	}
}

// Condition messages quote what stores and endpoints answered, and Events are written by
// whoever may create them in the namespace: describe prints them as text only.
func TestDescribeCannotDriveTheTerminal(t *testing.T) {
	conv := crashedConversation()
	conv.Status.Conditions[0].Message = hostile
	conv.Status.Agent.LastFailure.Message = hostile
	var out bytes.Buffer
	err := Describe(&out, DescribeInput{Conversation: conv, Now: describeNow, Events: []corev1.Event{{
		Type: corev1.EventTypeWarning, Reason: "Hostile", Message: hostile, LastTimestamp: metav1.NewTime(describeNow),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	assertTerminalSafe(t, "describe", out.String())
}

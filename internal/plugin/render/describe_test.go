package render

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

var describeNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) *metav1.Time { t := metav1.NewTime(describeNow.Add(-d)); return &t }

func crashedConversation() *parleyv1alpha1.Conversation {
	return &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "chat", CreationTimestamp: *ago(3 * time.Hour)},
		Spec: parleyv1alpha1.ConversationSpec{
			History: parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}},
			Lifetime: parleyv1alpha1.LifetimeSpec{
				TTL: &metav1.Duration{Duration: 24 * time.Hour}, IdleTimeout: &metav1.Duration{Duration: time.Hour},
				ExpirationPolicy: parleyv1alpha1.ExpirationPolicyArchive,
			},
			Context:  parleyv1alpha1.ContextSpec{MaxTokens: ptr.To[int64](100000), CompactAtPercent: 80, Strategy: parleyv1alpha1.CompactionSlidingWindow},
			Agent:    &parleyv1alpha1.AgentSpec{MaxRestarts: ptr.To[int32](5)},
			ForkFrom: &parleyv1alpha1.ForkSource{Checkpoint: "base-ckpt"},
		},
		Status: parleyv1alpha1.ConversationStatus{
			SessionID: "0b7e1a3c-5f2d-4c8e-9a41-6d2f0e8b7c15", Phase: parleyv1alpha1.ConversationRecovering,
			History:          &parleyv1alpha1.HistoryStatus{Messages: 12, Turns: 4, Bytes: 34567, Sequence: 14, Epoch: 1, Location: "configmap demo/chat-0b7e"},
			Context:          &parleyv1alpha1.ContextStatus{Tokens: 31000, Limit: 100000, Percent: 31},
			LastActivityTime: ago(2 * time.Minute),
			ExpiresAt:        &metav1.Time{Time: describeNow.Add(21 * time.Hour)},
			Agent: &parleyv1alpha1.AgentStatus{
				PodName: "", Attempt: 2, Restarts: 1, FailuresAtTurn: 2, ResumedFrom: "chat-crash-1",
				NextStartAt: &metav1.Time{Time: describeNow.Add(10 * time.Second)},
				LastFailure: &parleyv1alpha1.AgentFailure{
					Reason: "OOMKilled", ExitCode: 137, PodName: "chat-agent-2", Turn: 3,
					Message: "the container used more than its 32Mi limit", Time: ago(5 * time.Minute),
				},
			},
			AdapterState: &parleyv1alpha1.AdapterState{Type: "claude-agent-sdk", SessionID: "sdk-1", Resumable: true},
			LastCompaction: &parleyv1alpha1.CompactionRecord{
				Time: ago(time.Hour), Strategy: parleyv1alpha1.CompactionSlidingWindow,
				TokensBefore: 90000, TokensAfter: 20000, MessagesFolded: 40, Checkpoint: "chat-compact-e0",
			},
			Conditions: []metav1.Condition{
				{Type: "Ready", Status: metav1.ConditionFalse, Reason: "AgentRecovering", Message: "restarting after OOMKilled", LastTransitionTime: *ago(5 * time.Minute)},
				{Type: "HistoryAvailable", Status: metav1.ConditionTrue, Reason: "HistoryReady", LastTransitionTime: *ago(3 * time.Hour)},
			},
		},
	}
}

func TestDescribeCrashedConversation(t *testing.T) {
	in := DescribeInput{
		Conversation: crashedConversation(),
		Checkpoints: []parleyv1alpha1.Checkpoint{
			{
				ObjectMeta: metav1.ObjectMeta{Name: "chat-crash-1", CreationTimestamp: *ago(5 * time.Minute)},
				Spec:       parleyv1alpha1.CheckpointSpec{Reason: parleyv1alpha1.CheckpointCrash},
				Status:     parleyv1alpha1.CheckpointStatus{Phase: parleyv1alpha1.CheckpointReady, Turn: 2, Messages: 8, Tokens: 21000},
			},
			{
				ObjectMeta: metav1.ObjectMeta{Name: "chat-compact-e0", CreationTimestamp: *ago(time.Hour)},
				Spec:       parleyv1alpha1.CheckpointSpec{Reason: parleyv1alpha1.CheckpointCompaction},
				Status:     parleyv1alpha1.CheckpointStatus{Phase: parleyv1alpha1.CheckpointReady, Turn: 2, Messages: 52, Tokens: 90000},
			},
		},
		Events: []corev1.Event{
			{Type: "Warning", Reason: "Crashed", Message: "agent pod chat-agent-2 OOMKilled", LastTimestamp: *ago(5 * time.Minute)},
			{Type: "Normal", Reason: "AgentStarted", Message: "started chat-agent-2", LastTimestamp: *ago(time.Hour), Count: 2},
		},
		Now: describeNow,
	}
	var out bytes.Buffer
	if err := Describe(&out, in); err != nil {
		t.Fatal(err)
	}
	want := `Name:             chat
Namespace:        demo
Session:          0b7e1a3c-5f2d-4c8e-9a41-6d2f0e8b7c15
Phase:            Recovering
Created:          3h ago (2026-11-23 09:00:00 UTC)
Expires:          in 21h (2026-11-24 09:00:00 UTC) · ttl 1d, idle timeout 1h, then Archive
Last activity:    2m ago (2026-11-23 11:58:00 UTC)
Forked from:      checkpoint base-ckpt
History:          12 messages · 4 turns · 34,567 bytes · epoch 1 · sequence 14 · configmap demo/chat-0b7e
Context:          [██████░░░░░░░░░░░░░░]  31%  31,000 / 100,000 tokens · compacts at 80% (SlidingWindow)
Last compaction:  1h ago (2026-11-23 11:00:00 UTC) · SlidingWindow · 90,000 → 20,000 tokens · 40 messages folded · checkpoint chat-compact-e0
Agent:            no pod · attempt 2 · 1 restart (at most 5) · resumed from chat-crash-1
Last failure:     OOMKilled (exit code 137) in turn 3 · pod chat-agent-2 · 5m ago
                  the container used more than its 32Mi limit
                  2 crashes in a row at this turn (3 make a poison turn)
Next start:       in 10s (2026-11-23 12:00:10 UTC)
Adapter:          claude-agent-sdk · session sdk-1 · resumable
Conditions:
  TYPE              STATUS  REASON           SINCE  MESSAGE
  Ready             False   AgentRecovering  5m     restarting after OOMKilled
  HistoryAvailable  True    HistoryReady     3h
Checkpoints:
  NAME             REASON      TURN  PHASE  MESSAGES  TOKENS  AGE
  chat-compact-e0  Compaction  2     Ready  52        90,000  1h
  chat-crash-1     Crash       2     Ready  8         21,000  5m
Events:
  TYPE     REASON        AGE      MESSAGE
  Normal   AgentStarted  1h (x2)  started chat-agent-2
  Warning  Crashed       5m       agent pod chat-agent-2 OOMKilled
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Fatalf("describe (-want +got):\n%s", diff)
	}
}

// The lines that change with the state, one case each.
func TestDescribeLines(t *testing.T) {
	cases := map[string]struct {
		edit func(c *parleyv1alpha1.Conversation)
		want []string
	}{
		"expired": {
			edit: func(c *parleyv1alpha1.Conversation) { c.Status.ExpiresAt = ago(90 * time.Second) },
			want: []string{"Expires:          expired 1m30s ago (2026-11-23 11:58:30 UTC) · ttl 1d, idle timeout 1h, then Archive"},
		},
		"no expiry time yet, no lifetime rules": {
			edit: func(c *parleyv1alpha1.Conversation) {
				c.Status.ExpiresAt, c.Spec.Lifetime = nil, parleyv1alpha1.LifetimeSpec{}
			},
			want: []string{"Expires:          -"},
		},
		"suspended": {
			edit: func(c *parleyv1alpha1.Conversation) { c.Spec.Suspend = ptr.To(true) },
			want: []string{"Suspended:        yes (the agent pod is stopped; resume with kubectl parley resume chat)"},
		},
		"no maxTokens: no bar": {
			edit: func(c *parleyv1alpha1.Conversation) {
				c.Spec.Context = parleyv1alpha1.ContextSpec{}
				c.Status.Context = &parleyv1alpha1.ContextStatus{Tokens: 1234}
			},
			want: []string{"Context:          1,234 tokens (no maxTokens set)"},
		},
		"compaction off": {
			edit: func(c *parleyv1alpha1.Conversation) { c.Spec.Context.Strategy = parleyv1alpha1.CompactionNone },
			want: []string{"Context:          [██████░░░░░░░░░░░░░░]  31%  31,000 / 100,000 tokens · no compaction"},
		},
		"compaction left to the defaults": {
			edit: func(c *parleyv1alpha1.Conversation) {
				c.Spec.Context = parleyv1alpha1.ContextSpec{MaxTokens: c.Spec.Context.MaxTokens}
			},
			want: []string{"Context:          [██████░░░░░░░░░░░░░░]  31%  31,000 / 100,000 tokens · compacts at 80% (SlidingWindow)"},
		},
		"history not initialised": {
			edit: func(c *parleyv1alpha1.Conversation) { c.Status.History = nil },
			want: []string{"History:          - (not initialised yet)"},
		},
		"a running agent without failures": {
			edit: func(c *parleyv1alpha1.Conversation) {
				c.Status.Agent = &parleyv1alpha1.AgentStatus{PodName: "chat-agent-1", Attempt: 1}
				c.Spec.Agent.MaxRestarts = nil
			},
			want: []string{"Agent:            pod chat-agent-1 · attempt 1 · 0 restarts"},
		},
		"no agent at all": {
			edit: func(c *parleyv1alpha1.Conversation) { c.Spec.Agent, c.Status.Agent = nil, nil },
			want: []string{"!Agent:", "!Last failure:"},
		},
		"agent spec without status": {
			edit: func(c *parleyv1alpha1.Conversation) { c.Status.Agent = nil },
			want: []string{"Agent:            no pod yet"},
		},
		"a failure without exit code or turn": {
			edit: func(c *parleyv1alpha1.Conversation) {
				c.Status.Agent.LastFailure = &parleyv1alpha1.AgentFailure{Reason: "Deleted"}
				c.Status.Agent.FailuresAtTurn = 1
				c.Status.Agent.NextStartAt = ago(time.Second)
			},
			want: []string{"Last failure:     Deleted", "!Next start:", "!crashes in a row"},
		},
		"nothing yet: no conditions, checkpoints or events": {
			edit: func(c *parleyv1alpha1.Conversation) { c.Status = parleyv1alpha1.ConversationStatus{} },
			want: []string{"Session:          -", "Phase:            -", "Conditions:\n  <none>\nCheckpoints:\n  <none>\nEvents:\n  <none>"},
		},
	}
	spaces := regexp.MustCompile(` {2,}`)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := crashedConversation()
			tc.edit(c)
			var buf bytes.Buffer
			if err := Describe(&buf, DescribeInput{Conversation: c, Now: describeNow}); err != nil {
				t.Fatal(err)
			}
			// Column widths depend on which fields are shown: compare with single spaces.
			out := spaces.ReplaceAllString(buf.String(), " ")
			for _, w := range tc.want {
				w = spaces.ReplaceAllString(w, " ")
				if absent, ok := strings.CutPrefix(w, "!"); ok {
					if strings.Contains(out, absent) {
						t.Errorf("output holds %q:\n%s", absent, out)
					}
				} else if !strings.Contains(out, w+"\n") {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestDescribeShowsTheLatestTenEvents(t *testing.T) {
	events := make([]corev1.Event, 0, 15)
	for i := range 15 {
		events = append(events, corev1.Event{Type: "Normal", Reason: fmt.Sprintf("E%02d", i), LastTimestamp: *ago(time.Duration(20-i) * time.Minute)})
	}
	var out bytes.Buffer
	if err := Describe(&out, DescribeInput{Conversation: crashedConversation(), Events: events, Now: describeNow}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, "E04") || !strings.Contains(s, "E05") || !strings.Contains(s, "E14") {
		t.Fatalf("want events E05..E14 only:\n%s", s)
	}
	if strings.Index(s, "E05") > strings.Index(s, "E14") {
		t.Fatalf("events not oldest first:\n%s", s)
	}
}

package historystore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/s3"
)

const sid = "0b7e1a3c-5f2d-4c8e-9a41-6d2f0e8b7c15"

func conversationWith(name, sessionID string, h parleyv1alpha1.HistorySpec) *parleyv1alpha1.Conversation {
	return &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name},
		Spec:       parleyv1alpha1.ConversationSpec{History: h},
		Status:     parleyv1alpha1.ConversationStatus{SessionID: sessionID},
	}
}

func cmHistory(name string) parleyv1alpha1.HistorySpec {
	return parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{Name: name}}
}

func s3History(prefix string) parleyv1alpha1.HistorySpec {
	return parleyv1alpha1.HistorySpec{ObjectStore: &parleyv1alpha1.ObjectStoreHistory{Bucket: "parley", Prefix: prefix}}
}

func TestKeyAndLocation(t *testing.T) {
	long := strings.Repeat("a", 127) + "-" + strings.Repeat("b", 40) // the cut lands on the hyphen
	tests := map[string]struct {
		conv         *parleyv1alpha1.Conversation
		wantKey      string
		wantLocation string
		wantErr      bool
	}{
		"configMap: the Conversation's name by default": {
			conv: conversationWith("chat", sid, cmHistory("")), wantKey: "team-a/chat-" + sid,
			wantLocation: "configmap://team-a/chat-" + sid + "-history",
		},
		"configMap: an explicit name": {
			conv: conversationWith("chat", sid, cmHistory("support")), wantKey: "team-a/support-" + sid,
			wantLocation: "configmap://team-a/support-" + sid + "-history",
		},
		"configMap: a long name is cut to 128 characters, without a trailing hyphen": {
			conv: conversationWith(long, sid, cmHistory("")), wantKey: "team-a/" + strings.Repeat("a", 127) + "-" + sid,
			wantLocation: "configmap://team-a/" + strings.Repeat("a", 127) + "-" + sid + "-history",
		},
		"configMap: a name of exactly 128 characters is kept": {
			conv:    conversationWith(strings.Repeat("c", 128), sid, cmHistory("")),
			wantKey: "team-a/" + strings.Repeat("c", 128) + "-" + sid, wantLocation: "configmap://team-a/" + strings.Repeat("c", 128) + "-" + sid + "-history",
		},
		"configMap: a long name cut on a dot": {
			conv:    conversationWith(strings.Repeat("d", 127)+".e", sid, cmHistory("")),
			wantKey: "team-a/" + strings.Repeat("d", 127) + "-" + sid, wantLocation: "configmap://team-a/" + strings.Repeat("d", 127) + "-" + sid + "-history",
		},
		"objectStore: the session id": {
			conv: conversationWith("chat", sid, s3History("")), wantKey: "team-a/" + sid,
			wantLocation: "s3://parley/team-a/" + sid + "/",
		},
		"objectStore: a prefix": {
			conv: conversationWith("chat", sid, s3History("prod/parley")), wantKey: "team-a/" + sid,
			wantLocation: "s3://parley/prod/parley/team-a/" + sid + "/",
		},
		"objectStore: slashes around the prefix are trimmed": {
			conv: conversationWith("chat", sid, s3History("/prod/")), wantKey: "team-a/" + sid,
			wantLocation: "s3://parley/prod/team-a/" + sid + "/",
		},
		"objectStore: a prefix of slashes only is none": {
			conv: conversationWith("chat", sid, s3History("//")), wantKey: "team-a/" + sid,
			wantLocation: "s3://parley/team-a/" + sid + "/",
		},
		"no session id yet": {conv: conversationWith("chat", "", cmHistory("")), wantErr: true},
		"no backend":        {conv: conversationWith("chat", sid, parleyv1alpha1.HistorySpec{}), wantKey: "team-a/" + sid},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.conv.DeepCopy()
			key, err := Key(tc.conv)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "team-a/chat") {
					t.Errorf("Key = %q, %v; want an error naming the Conversation", key, err)
				}
			} else if err != nil || key != tc.wantKey {
				t.Errorf("Key = %q, %v; want %q", key, err, tc.wantKey)
			}
			if loc := Location(tc.conv); loc != tc.wantLocation {
				t.Errorf("Location = %q, want %q", loc, tc.wantLocation)
			}
			if tc.conv.Spec.History.ConfigMap != nil && !tc.wantErr {
				// The longest ConfigMap of the history must still be a valid name.
				_, name, _ := strings.Cut(key, "/")
				if n := len(name+"-history.ckpt.") + 64; n > 253 {
					t.Errorf("checkpoint ConfigMap names reach %d characters", n)
				}
			}
			if !reflect.DeepEqual(before, tc.conv) {
				t.Error("the Conversation was changed")
			}
		})
	}
}

// Key depends on the session id, not only the name: a re-created Conversation does not reach
// the old history.
func TestKeyFollowsTheSession(t *testing.T) {
	for _, h := range []parleyv1alpha1.HistorySpec{cmHistory(""), s3History("p")} {
		a, errA := Key(conversationWith("chat", sid, h))
		b, errB := Key(conversationWith("chat", "6f1c2b8e-3d4a-4e5f-9a7b-1c2d3e4f5a6b", h))
		if errA != nil || errB != nil || a == b {
			t.Errorf("two sessions of one name share the key %q (%v %v)", a, errA, errB)
		}
	}
}

func TestReasonAndMessage(t *testing.T) {
	typed := &Error{Reason: parleyv1alpha1.ReasonSecretNotFound, Message: "Secret team-a/creds does not exist"}
	wrapping := &Error{Reason: parleyv1alpha1.ReasonBucketNotFound, Message: "bucket parley does not exist", Err: history.ErrNotFound}
	tests := map[string]struct {
		err         error
		wantReason  string
		wantMessage string
	}{
		"nil":                           {err: nil, wantReason: ""},
		"a typed error":                 {err: typed, wantReason: parleyv1alpha1.ReasonSecretNotFound, wantMessage: "Secret team-a/creds does not exist"},
		"a typed error with its cause":  {err: wrapping, wantReason: parleyv1alpha1.ReasonBucketNotFound, wantMessage: "bucket parley does not exist: history: not found"},
		"a wrapped typed error":         {err: fmt.Errorf("opening: %w", typed), wantReason: parleyv1alpha1.ReasonSecretNotFound, wantMessage: "Secret team-a/creds does not exist"},
		"a typed error wins over cause": {err: &Error{Reason: parleyv1alpha1.ReasonSnapshotCorrupt, Message: "bad", Err: history.ErrCorrupt}, wantReason: parleyv1alpha1.ReasonSnapshotCorrupt, wantMessage: "bad: history: corrupt"},
		"conditional writes unsupported": {
			err: fmt.Errorf("probe: %w", s3.ErrConditionalWritesUnsupported), wantReason: parleyv1alpha1.ReasonConditionalWritesUnsupported,
		},
		"unavailable":        {err: fmt.Errorf("x: %w", history.ErrUnavailable), wantReason: parleyv1alpha1.ReasonStoreUnavailable, wantMessage: "x: history: unavailable"},
		"deadline":           {err: context.DeadlineExceeded, wantReason: parleyv1alpha1.ReasonStoreUnavailable},
		"too large":          {err: history.ErrTooLarge, wantReason: parleyv1alpha1.ReasonHistoryTooLarge},
		"corrupt":            {err: fmt.Errorf("read: %w", history.ErrCorrupt), wantReason: parleyv1alpha1.ReasonHistoryCorrupt},
		"not found":          {err: history.ErrNotFound, wantReason: parleyv1alpha1.ReasonStoreError},
		"conflict":           {err: history.ErrConflict, wantReason: parleyv1alpha1.ReasonStoreError},
		"anything else":      {err: errors.New("boom"), wantReason: parleyv1alpha1.ReasonStoreError, wantMessage: "boom"},
		"a canceled context": {err: context.Canceled, wantReason: parleyv1alpha1.ReasonStoreError},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Reason(tc.err); got != tc.wantReason {
				t.Errorf("Reason = %q, want %q", got, tc.wantReason)
			}
			if tc.err == nil {
				return
			}
			want := tc.wantMessage
			if want == "" {
				want = tc.err.Error()
			}
			if got := Message(tc.err); got != want {
				t.Errorf("Message = %q, want %q", got, want)
			}
		})
	}
}

func TestError(t *testing.T) {
	e := errorf(parleyv1alpha1.ReasonStoreMisconfigured, history.ErrUnavailable, "endpoint %s unreachable", "s3.local")
	if e.Error() != "endpoint s3.local unreachable: history: unavailable" || !errors.Is(e, history.ErrUnavailable) {
		t.Errorf("Error() = %q, Is(ErrUnavailable) = %v", e.Error(), errors.Is(e, history.ErrUnavailable))
	}
	if Reason(e) != parleyv1alpha1.ReasonStoreMisconfigured {
		t.Errorf("Reason = %q: the typed reason must win over the cause's", Reason(e))
	}
	if bare := (&Error{Message: "m"}); bare.Error() != "m" || bare.Unwrap() != nil {
		t.Errorf("without a cause: %q %v", bare.Error(), bare.Unwrap())
	}
}

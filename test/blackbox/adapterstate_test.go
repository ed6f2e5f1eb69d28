package blackbox_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// adapterStateLeavesStatusWritable: an agent reports an adapter state whose type and session id
// are longer than the Conversation's status may hold (64 and 256 characters): it is refused
// with 422, and the controller keeps writing the conversation's status (the messages appended
// after it are counted there).
func adapterStateLeavesStatusWritable(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "adapter")
	conv := historyOnly(ns, "adapter")
	e.conversation(ctx, t, conv)
	agent := e.agentToken(ctx, t, ns)
	state := fmt.Sprintf(`{"type":%q,"state":{"sessionId":%q,"resumable":true}}`, strings.Repeat("t", 65), strings.Repeat("s", 300))
	res, body, err := e.do(ctx, http.MethodPut, convPath(ns, conv.Name)+"/adapter-state", agent, []byte(state))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("an adapter state with a type of 65 and a session id of 300 characters: %d %.200s, want 422", res.StatusCode, body)
	}
	if res, body, err := e.do(ctx, http.MethodPost, convPath(ns, conv.Name)+"/messages", agent, appendBody("after", 3, "hello")); err != nil || res.StatusCode >= 300 {
		t.Fatalf("an append after it: %v %v %s", err, res, body)
	}
	e.eventually(ctx, t, "status counts the messages appended after the adapter state", func() error {
		got := &parleyv1alpha1.Conversation{}
		if err := e.admin.Get(ctx, client.ObjectKeyFromObject(conv), got); err != nil {
			return err
		}
		if h := got.Status.History; h == nil || h.Messages < 3 {
			return fmt.Errorf("status.history %+v", h)
		}
		return nil
	})
}

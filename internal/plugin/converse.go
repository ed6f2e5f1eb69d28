package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
)

// What send and chat share: a person's message appended through the Session API, and the
// agent's messages followed until its answer.

// userMessage is a person's message: a fresh id, so a retry of the same send never stores it
// twice and two sends of the same words are two messages.
func userMessage(text string) conversation.Message {
	return conversation.Message{
		ID: "user-" + uuid.NewString(), Role: conversation.RoleUser, CreatedAt: time.Now().UTC(),
		Blocks: []conversation.Block{{Type: conversation.BlockText, Text: text}},
	}
}

// say appends a person's message and returns the sequence the store gave it. When the
// conversation's agent sleeps (suspended while idle) it says the message wakes it: the answer
// then waits for the pod's start too.
func (o *Options) say(ctx context.Context, t target, m conversation.Message) (uint64, error) {
	// Read before the append: the append wakes the agent at once, and a read after it races
	// the manager's wake and may find the agent already waking.
	asleep := o.agentAsleep(ctx, t)
	resp, err := t.api.Append(ctx, t.ns, t.name, []conversation.Message{m})
	if err != nil {
		return 0, o.apiError(err, t.ns, t.name)
	}
	if asleep {
		_, _ = fmt.Fprintf(o.err(), "the agent of %s was asleep (idle); this message wakes it, its pod is starting\n", t)
	}
	return resp.Sequences[0], nil
}

// agentAsleep reads the Conversation with the client the command opened, when the user may:
// false when not.
func (o *Options) agentAsleep(ctx context.Context, t target) bool {
	if t.kc == nil {
		return false
	}
	conv, err := o.getConversation(ctx, t.kc, t)
	return err == nil && conv.AgentAsleep()
}

// errAnswered ends a follow at the agent's final answer.
var errAnswered = errors.New("answered")

// follow calls show for each message appended after the sequence after, unless skip says it
// was shown or sent here, once it no longer streams. With untilAnswer it returns at the first
// final answer (conversation.Message.FinalAnswer); otherwise it follows until ctx ends. A
// compaction starts a new epoch: follow says so and goes on in it, skipping what was shown.
// tail -f, chat and send --wait all follow through it.
func (o *Options) follow(ctx context.Context, t target, after uint64, skip *idSet, untilAnswer bool,
	show func(*conversation.Message) error,
) error {
	for {
		err := t.api.Follow(ctx, t.ns, t.name, after, func(m conversation.Message) error {
			if !skip.add(m.ID) {
				return nil
			}
			if m.Streaming() {
				settled, err := settle(ctx, t, m)
				if err != nil {
					return err
				}
				m = settled
			}
			if err := show(&m); err != nil {
				return err
			}
			if untilAnswer && m.FinalAnswer() {
				return errAnswered
			}
			return nil
		})
		switch {
		case errors.Is(err, errAnswered):
			return nil
		case errors.Is(err, parleyclient.ErrEpochChanged):
			_, _ = fmt.Fprintln(o.out(), "── compacted: a new epoch starts ──")
			after = 0
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			return o.apiError(err, t.ns, t.name)
		}
	}
}

// settle waits until a streamed message is complete: the follow stream sends a message when
// it appears, not its later deltas, so it is read again until nothing of it is pending.
func settle(ctx context.Context, t target, m conversation.Message) (conversation.Message, error) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for m.Streaming() {
		select {
		case <-ctx.Done():
			return m, ctx.Err()
		case <-tick.C:
		}
		page, err := t.api.Messages(ctx, t.ns, t.name, uint64(m.Seq-1), 1)
		if err != nil {
			return m, err
		}
		if len(page.Messages) == 0 || page.Messages[0].ID != m.ID {
			return m, nil // gone from this epoch (compacted): show it as it was
		}
		m = page.Messages[0]
	}
	return m, nil
}

// idSet is the ids of the messages shown or sent in this session, safe for the follow and the
// sender at once: a message sent is added before its append, so the stream, however quick,
// never shows the user their own line again.
type idSet struct {
	mu  sync.Mutex
	ids map[string]bool
}

func newIDSet(ids ...string) *idSet {
	s := &idSet{ids: map[string]bool{}}
	for _, id := range ids {
		s.ids[id] = true
	}
	return s
}

// add adds id and reports whether it was new.
func (s *idSet) add(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids[id] {
		return false
	}
	s.ids[id] = true
	return true
}

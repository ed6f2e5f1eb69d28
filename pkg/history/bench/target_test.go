package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
)

// appender is what a benchmark drives: one conversation of one target.
type appender interface {
	append(ctx context.Context, rec history.Record) error
	// bytesWritten counts the payload bytes sent to the server so far.
	bytesWritten() int64
}

// target opens a conversation that already holds `history` messages of
// `size` bytes.
type target struct {
	name string
	open func(b *testing.B, conversation string, history, size int) appender
}

var targets = []target{
	{"configmap", openStore(newConfigMapStore)},
	{"s3", openStore(newS3Store)},
	{"naive-configmap", openNaiveConfigMap},
	{"naive-s3", openNaiveS3},
}

var conversationSeq atomic.Int64

var (
	storesMu sync.Mutex
	stores   []history.Store
)

func keepUntilExit(s history.Store) {
	storesMu.Lock()
	defer storesMu.Unlock()
	stores = append(stores, s)
}

func closeStores() {
	storesMu.Lock()
	defer storesMu.Unlock()
	for _, s := range stores {
		_ = s.Close()
	}
}

func conversationName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, conversationSeq.Add(1), nowUnix())
}

type storeAppender struct {
	store history.Store
	h     history.History
}

func openStore(newStore func(*testing.B) history.Store) func(*testing.B, string, int, int) appender {
	return func(b *testing.B, conversation string, historyLen, size int) appender {
		ctx := context.Background()
		s := newStore(b)
		keepUntilExit(s) // the framework reruns a benchmark; the store outlives each run
		h, err := s.Open(ctx, conversation, history.OpenOptions{Create: true})
		if err != nil {
			b.Fatal(err)
		}
		// Fill in batches that keep one tail object under the ConfigMap limit.
		batch := max(1, min(500, (512<<10)/size))
		for done := 0; done < historyLen; done += batch {
			recs := make([]history.Record, 0, batch)
			for i := done; i < min(historyLen, done+batch); i++ {
				recs = append(recs, record(fmt.Sprintf("fill-%d", i), size))
			}
			if _, err := h.Append(ctx, recs); err != nil {
				b.Fatalf("fill %s to %d: %v", conversation, historyLen, err)
			}
		}
		return &storeAppender{store: s, h: h}
	}
}

func (a *storeAppender) append(ctx context.Context, rec history.Record) error {
	_, err := a.h.Append(ctx, []history.Record{rec})
	return err
}

func (a *storeAppender) bytesWritten() int64 {
	return a.store.(*engine.Store).Stats().WrittenBytes
}

// record is a message of exactly size bytes of JSON.
func record(id string, size int) history.Record {
	data := make([]byte, size)
	copy(data, `{"text":"`)
	for i := 9; i < size-2; i++ {
		data[i] = 'a' + byte(i%26)
	}
	copy(data[size-2:], `"}`)
	return history.Record{ID: id, Data: data}
}

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/parley-dev/parley/pkg/history"
)

// The naive baseline keeps the whole history in one object and rewrites it
// on every append, as the Loom seed does with its JSONB column. Appends are
// serialised by a mutex, the role the row lock plays in PostgreSQL. The
// history is held at its starting length (the oldest message drops out as
// one comes in), so every append costs what it costs at that length and a
// benchmark's figure does not depend on how many appends it ran.
type naive struct {
	mu      sync.Mutex
	lines   [][]byte
	written int64
	write   func(ctx context.Context, body []byte) error
}

func (n *naive) fill(historyLen, size int) {
	for i := range historyLen {
		n.lines = append(n.lines, naiveLine(record("fill-"+strconv.Itoa(i), size)))
	}
}

func naiveLine(rec history.Record) []byte {
	b, _ := json.Marshal(struct {
		ID   string          `json:"id"`
		Data json.RawMessage `json:"data"`
	}{rec.ID, rec.Data})
	return append(b, '\n')
}

func (n *naive) append(ctx context.Context, rec history.Record) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	start := min(1, len(n.lines)) // hold the length: the oldest drops out
	lines := make([][]byte, 0, len(n.lines)+1)
	lines = append(append(lines, n.lines[start:]...), naiveLine(rec))
	body := bytes.Join(lines, nil)
	if err := n.write(ctx, body); err != nil {
		return err
	}
	n.lines = lines
	n.written += int64(len(body))
	return nil
}

func (n *naive) bytesWritten() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.written
}

func openNaiveConfigMap(b *testing.B, conversation string, historyLen, size int) appender {
	c := kubeClient(b)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: conversation + "-naive", Namespace: "default"}}
	n := &naive{}
	n.fill(historyLen, size)
	cm.Data = map[string]string{"history.jsonl": string(bytes.Join(n.lines, nil))}
	if err := c.Create(context.Background(), cm); err != nil {
		b.Fatalf("naive ConfigMap with %d messages of %d bytes: %v", historyLen, size, err)
	}
	n.write = func(ctx context.Context, body []byte) error {
		cm.Data = map[string]string{"history.jsonl": string(body)}
		return c.Update(ctx, cm) // carries resourceVersion: a compare-and-swap
	}
	return n
}

func openNaiveS3(b *testing.B, conversation string, historyLen, size int) appender {
	cfg := s3Config()
	mc, err := minio.New(s3srv.Endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""), BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		b.Fatal(err)
	}
	key := "naive/" + conversation + ".jsonl"
	n := &naive{}
	n.fill(historyLen, size)
	n.write = func(ctx context.Context, body []byte) error {
		_, err := mc.PutObject(ctx, bucket, key, bytes.NewReader(body), int64(len(body)),
			minio.PutObjectOptions{DisableMultipart: true, ContentType: "application/x-ndjson"})
		return err
	}
	if err := n.write(context.Background(), bytes.Join(n.lines, nil)); err != nil {
		b.Fatal(err)
	}
	return n
}

func nowUnix() int64 { return time.Now().UnixNano() % 1e9 }

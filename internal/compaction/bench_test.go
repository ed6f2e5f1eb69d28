package compaction

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/test/support/benchcpu"
	"github.com/parley-dev/parley/test/support/s3server"
)

// BenchmarkRunSlidingWindowS3 measures a compaction from the trigger to the new epoch on the
// S3 backend (versitygw on 127.0.0.1): the runner's whole job once the reconciler found it due
// and the Compaction Checkpoint is Ready. The view is warm, as the reconciler's history phase
// leaves it; building the history and that view is setup, outside the timer. It also reports
// refresh-ns/op: the reconciler's next read of the view, which rebuilds it from the new epoch
// (the one re-tokenization a compaction costs).
func BenchmarkRunSlidingWindowS3(b *testing.B) {
	srv, err := s3server.Start(s3server.Options{})
	if err != nil {
		b.Skipf("no S3 server: %v", err)
	}
	defer srv.Stop()
	ctx := context.Background()
	const bucket = "parley-bench-compaction"
	if err := s3.EnsureBucket(ctx, s3.Config{
		Endpoint: srv.Endpoint, Bucket: bucket, Insecure: true, Addressing: s3.AddressingPath,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey,
	}); err != nil {
		b.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := parleyv1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "s3"},
		Data:       map[string][]byte{s3.SecretAccessKeyID: []byte(srv.AccessKey), s3.SecretSecretAccessKey: []byte(srv.SecretKey)},
	}
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			var refresh time.Duration
			var meter benchcpu.Meter
			for i := range b.N {
				b.StopTimer()
				fx := newBenchFixture(ctx, b, scheme, secret, srv.Endpoint, bucket, n)
				if i == 0 {
					meter = benchcpu.Start()
				}
				b.StartTimer()
				out := fx.runner.run(ctx, fx.req)
				b.StopTimer()
				if out.Result != ResultCompacted {
					b.Fatalf("result %s: %s", out.Result, out.Message)
				}
				start := time.Now()
				if err := fx.live.With(ctx, func(v *journal.View) error {
					if v.Epoch != fx.req.Epoch+1 {
						return fmt.Errorf("view at epoch %d", v.Epoch)
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				refresh += time.Since(start)
				b.StartTimer()
			}
			b.StopTimer()
			meter.Report(b, 0, "")
			b.ReportMetric(float64(refresh.Nanoseconds())/float64(b.N), "refresh-ns/op")
		})
	}
}

type benchFixture struct {
	runner *Runner
	live   *session.Live
	req    Request
}

// newBenchFixture stores a history of n messages under a fresh session and warms its view.
func newBenchFixture(ctx context.Context, b *testing.B, scheme *runtime.Scheme, secret *corev1.Secret, endpoint, bucket string, n int) *benchFixture {
	b.Helper()
	window := int64(n) * 40 // about 100 % of what n messages cost: due at 80 %
	conv := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "c" + uuid.NewString()[:8], UID: types.UID(uuid.NewString())},
		Spec: parleyv1alpha1.ConversationSpec{
			History: parleyv1alpha1.HistorySpec{ObjectStore: &parleyv1alpha1.ObjectStoreHistory{
				Endpoint: "http://" + endpoint, Bucket: bucket, ForcePathStyle: true, Insecure: true,
				CredentialsSecretRef: &parleyv1alpha1.SecretReference{Name: secret.Name},
			}},
			Context: parleyv1alpha1.ContextSpec{
				MaxTokens: &window, CompactAtPercent: 80, Strategy: parleyv1alpha1.CompactionSlidingWindow,
				KeepRecentMessages: 10, Tokenizer: parleyv1alpha1.TokenizerCL100K,
			},
		},
		Status: parleyv1alpha1.ConversationStatus{SessionID: uuid.NewString()},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(conv, secret.DeepCopy()).Build()
	stores := &historystore.Stores{Secrets: c}
	h, err := stores.Open(ctx, conv, true)
	if err != nil {
		b.Fatal(err)
	}
	records := make([]history.Record, 0, n+1)
	for i := range n {
		role := conversation.RoleUser
		if i%2 == 1 {
			role = conversation.RoleAssistant
		}
		rec, err := journal.MessageRecord(&conversation.Message{ID: fmt.Sprintf("m%06d", i), Role: role, Blocks: []conversation.Block{{
			Type: conversation.BlockText, Text: fmt.Sprintf("message %d: %s", i, strings.Repeat("the quick brown fox jumps ", 5)),
		}}})
		if err != nil {
			b.Fatal(err)
		}
		records = append(records, rec)
	}
	marker, _ := journal.InitializedRecord()
	if _, err := journal.AppendAll(ctx, h, append(records, marker)); err != nil {
		b.Fatal(err)
	}
	sessions := &session.Sessions{Stores: stores}
	live, err := sessions.Open(ctx, conv, false)
	if err != nil {
		b.Fatal(err)
	}
	var epoch, seq uint64
	var tokens int
	if err := live.With(ctx, func(v *journal.View) error {
		epoch, seq, tokens = v.Epoch, v.Sequence, v.Tokens()
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	if tokens*100 < int(window)*80 {
		b.Fatalf("%d tokens do not reach 80 %% of %d", tokens, window)
	}
	return &benchFixture{
		runner: &Runner{Client: c, Secrets: c, Sessions: sessions, Clock: clock.RealClock{}},
		live:   live,
		req: Request{
			Conversation: client.ObjectKeyFromObject(conv), Epoch: epoch, Sequence: seq,
			Checkpoint: conv.Name + "-compact-e1", CheckpointSequence: int64(seq),
		},
	}
}

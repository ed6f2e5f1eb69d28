package envtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// compactionContext is a small window that a few dozen messages fill past 50 %.
func compactionContext(strategy parleyv1alpha1.CompactionStrategy) parleyv1alpha1.ContextSpec {
	return parleyv1alpha1.ContextSpec{
		MaxTokens: ptrTo(int64(2000)), CompactAtPercent: 50, Strategy: strategy, KeepRecentMessages: 4,
		Tokenizer: parleyv1alpha1.TokenizerApproximate,
	}
}

// appendMessages appends n alternating user/assistant messages straight to the history (as
// the Session API would) and pokes the Conversation so it is reconciled.
func appendMessages(conv *parleyv1alpha1.Conversation, from, n int) {
	h, err := stores.Open(ctx, conv, false)
	Expect(err).NotTo(HaveOccurred())
	var records []history.Record
	for i := from; i < from+n; i++ {
		role := conversation.RoleUser
		if i%2 == 1 {
			role = conversation.RoleAssistant
		}
		m := &conversation.Message{ID: fmt.Sprintf("m%04d", i), Role: role, Blocks: []conversation.Block{{
			Type: conversation.BlockText, Text: fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum dolor ", 6)),
		}}}
		rec, err := journal.MessageRecord(m)
		Expect(err).NotTo(HaveOccurred())
		records = append(records, rec)
	}
	_, err = journal.AppendAll(ctx, h, records)
	Expect(err).NotTo(HaveOccurred())
	poke(conv)
}

// poke changes an annotation so the controller reconciles (appends do not touch the object).
func poke(conv *parleyv1alpha1.Conversation) {
	Eventually(func(g Gomega) {
		fetch(conv)(g)
		patch := client.MergeFrom(conv.DeepCopy())
		if conv.Annotations == nil {
			conv.Annotations = map[string]string{}
		}
		conv.Annotations["test.parley.dev/poke"] = time.Now().Format(time.RFC3339Nano)
		g.Expect(k8sClient.Patch(ctx, conv, patch)).To(Succeed())
	}).Should(Succeed())
}

func compacting(conv *parleyv1alpha1.Conversation) *metav1.Condition {
	return meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionCompacting)
}

// compactedTo waits until the history is in epoch and reports the compaction.
func compactedTo(conv *parleyv1alpha1.Conversation, epoch int64) func(g Gomega) {
	return func(g Gomega) {
		fetch(conv)(g)
		g.Expect(conv.Status.History).NotTo(BeNil())
		g.Expect(conv.Status.History.Epoch).To(Equal(epoch), "Compacting: %+v, Degraded: %+v", compacting(conv),
			meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionDegraded))
		g.Expect(conv.Status.LastCompaction).NotTo(BeNil())
		c := compacting(conv)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Message)
	}
}

// openAIStub answers /v1/chat/completions with a short summary, or with what fail says.
type openAIStub struct {
	*httptest.Server
	calls atomic.Int64
	// status, when not 200, is the answer.
	status atomic.Int64
	// hold, when set, is waited on before answering (the test appends meanwhile).
	hold chan struct{}
	// called is closed at the first call.
	called chan struct{}
	once   atomic.Bool
}

func newOpenAIStub(hold chan struct{}) *openAIStub {
	s := &openAIStub{called: make(chan struct{}), hold: hold}
	s.status.Store(http.StatusOK)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		if s.once.CompareAndSwap(false, true) {
			close(s.called)
		}
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, `{"error":{"message":"bad path or key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
			return
		}
		if s.hold != nil {
			<-s.hold
		}
		if code := int(s.status.Load()); code != http.StatusOK {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"error":{"message":"stub failure","type":"server_error"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"choices": []map[string]any{{"message": map[string]any{"content": "The user and the agent talked."}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 8},
		})
	}))
	DeferCleanup(s.Close)
	return s
}

func summarizeContext(stub *openAIStub, secret string) parleyv1alpha1.ContextSpec {
	c := compactionContext(parleyv1alpha1.CompactionSummarize)
	c.Summarizer = &parleyv1alpha1.SummarizerSpec{
		Provider: parleyv1alpha1.SummarizerOpenAI, Endpoint: stub.URL, Insecure: true, Model: "stub-model",
		CredentialsSecretRef: &parleyv1alpha1.SecretReference{Name: secret},
	}
	return c
}

// summarizeConversation creates a Summarize Conversation whose summarizer is stub, waits for
// its history and returns its epoch.
func summarizeConversation(stub *openAIStub) (*parleyv1alpha1.Conversation, int64) {
	sec := apiKeySecret()
	conv := newConversation(parleyv1alpha1.ConversationSpec{Context: summarizeContext(stub, sec.Name)})
	Expect(k8sClient.Create(ctx, conv)).To(Succeed())
	Eventually(historyReady(conv)).Should(Succeed())
	return conv, conv.Status.History.Epoch
}

func apiKeySecret() *corev1.Secret {
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "summarizer-" + randSuffix()},
		Data:       map[string][]byte{"apiKey": []byte("test-key")},
	}
	Expect(k8sClient.Create(ctx, sec)).To(Succeed())
	return sec
}

var _ = Describe("Compaction by the operator", func() {
	It("compacts an S3 history past compactAtPercent: Checkpoint first, new epoch, lastCompaction, below the threshold", func() {
		secretName := "s3-" + randSuffix()
		Expect(k8sClient.Create(ctx, s3Secret("default", secretName))).To(Succeed())
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			History:      objectStoreHistory("compact-"+randSuffix(), secretName),
			SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "pinned system prompt"},
			Context:      compactionContext(parleyv1alpha1.CompactionSlidingWindow),
		})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).WithTimeout(60 * time.Second).Should(Succeed())
		epoch := conv.Status.History.Epoch
		Expect(compacting(conv).Reason).To(Equal(parleyv1alpha1.ReasonNotDue))

		appendMessages(conv, 0, 60)
		Eventually(compactedTo(conv, epoch+1)).WithTimeout(60 * time.Second).Should(Succeed())
		lc := conv.Status.LastCompaction
		Expect(lc.Strategy).To(Equal(parleyv1alpha1.CompactionSlidingWindow))
		Expect(lc.TokensBefore).To(BeNumerically(">=", 1000))
		Expect(lc.TokensAfter).To(BeNumerically("<", lc.TokensBefore))
		Expect(lc.MessagesFolded).To(BeNumerically(">", 0))
		Expect(lc.Time).NotTo(BeNil())
		Expect(lc.Checkpoint).To(Equal(fmt.Sprintf("%s-compact-e%d", conv.Name, epoch)))
		Expect(conv.Status.Context.Percent).To(BeNumerically("<", 50))
		Expect(compacting(conv).Reason).To(Equal(parleyv1alpha1.ReasonCompacted))

		By("the Compaction Checkpoint holds every message of the previous epoch")
		ckpt := &parleyv1alpha1.Checkpoint{ObjectMeta: metav1.ObjectMeta{Namespace: conv.Namespace, Name: lc.Checkpoint}}
		fetch(ckpt)(Default)
		Expect(ckpt.Spec.Reason).To(Equal(parleyv1alpha1.CheckpointCompaction))
		Expect(ckpt.Status.Phase).To(Equal(parleyv1alpha1.CheckpointReady))
		h, err := stores.Open(ctx, conv, false)
		Expect(err).NotTo(HaveOccurred())
		data, err := h.GetCheckpoint(ctx, history.Digest(ckpt.Status.Digest))
		Expect(err).NotTo(HaveOccurred())
		snap, err := conversation.UnmarshalSnapshot(data)
		Expect(err).NotTo(HaveOccurred())
		Expect(snap.State.Messages).To(HaveLen(60))
		for i, m := range snap.State.Messages {
			Expect(m.ID).To(Equal(fmt.Sprintf("m%04d", i)))
		}

		By("the new epoch: system prompt pinned, a truncation notice, the newest messages")
		v := loadState(conv)
		Expect(v.Epoch).To(Equal(uint64(epoch + 1)))
		Expect(v.Initialized).To(BeTrue(), "the new epoch is initialised: nothing is imported again")
		Expect(v.State.System).NotTo(BeNil())
		Expect(v.State.System.Text()).To(Equal("pinned system prompt"))
		Expect(v.State.Messages[0].Flags & conversation.FlagTruncationNotice).NotTo(BeZero())
		Expect(v.State.Messages[len(v.State.Messages)-1].ID).To(Equal("m0059"))
		Expect(int64(len(v.State.Messages))).To(Equal(60 - lc.MessagesFolded + 1))
		Expect(v.LastCompaction).NotTo(BeNil())
		Expect(conv.Status.History.Messages).To(Equal(int64(len(v.State.Messages))))
		Eventually(func() []string { return eventReasons(conv) }).Should(ContainElement(parleyv1alpha1.EventCompacted))
	})

	It("keeps an append that lands while the summarizer works, and records Summarize", func() {
		stub := newOpenAIStub(make(chan struct{}))
		conv, epoch := summarizeConversation(stub)

		appendMessages(conv, 0, 60)
		Eventually(stub.called).WithTimeout(30 * time.Second).Should(BeClosed())
		appendMessages(conv, 60, 1) // lands after the compaction read the history
		close(stub.hold)

		Eventually(compactedTo(conv, epoch+1)).WithTimeout(60 * time.Second).Should(Succeed())
		Expect(conv.Status.LastCompaction.Strategy).To(Equal(parleyv1alpha1.CompactionSummarize))
		v := loadState(conv)
		Expect(v.State.Messages[0].Flags & conversation.FlagCompactSummary).NotTo(BeZero())
		Expect(v.State.Messages[0].Text()).To(ContainSubstring("The user and the agent talked."))
		Expect(v.State.Messages[len(v.State.Messages)-1].ID).To(Equal("m0060"), "the racing append is carried into the new epoch")
	})

	It("never compacts with strategy None", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{Context: compactionContext(parleyv1alpha1.CompactionNone)})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())
		epoch := conv.Status.History.Epoch
		appendMessages(conv, 0, 60)
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.Context.Percent).To(BeNumerically(">=", 50))
			g.Expect(compacting(conv)).To(BeNil(), "compaction is off: no Compacting condition")
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.History.Epoch).To(Equal(epoch))
			g.Expect(conv.Status.LastCompaction).To(BeNil())
		}).WithTimeout(2 * time.Second).Should(Succeed())
		ckpt := &parleyv1alpha1.Checkpoint{}
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: conv.Namespace, Name: fmt.Sprintf("%s-compact-e%d", conv.Name, epoch)}, ckpt)
		Expect(client.IgnoreNotFound(err)).To(Succeed())
		Expect(err).To(HaveOccurred(), "no Compaction Checkpoint")
	})

	It("leaves the history untouched and Degraded while the summarizer answers 500, then recovers alone", func() {
		stub := newOpenAIStub(nil)
		stub.status.Store(http.StatusInternalServerError)
		conv, epoch := summarizeConversation(stub)
		appendMessages(conv, 0, 60)

		Eventually(func(g Gomega) {
			fetch(conv)(g)
			d := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionDegraded)
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(d.Reason).To(Equal(parleyv1alpha1.ReasonSummarizerUnavailable))
			g.Expect(d.Message).NotTo(ContainSubstring("test-key"))
			g.Expect(compacting(conv).Reason).To(Equal(parleyv1alpha1.ReasonCompactionRetrying))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(conv.Status.History.Epoch).To(Equal(epoch))
		v := loadState(conv)
		Expect(v.Epoch).To(Equal(uint64(epoch)))
		Expect(v.State.Messages).To(HaveLen(60))
		Eventually(func() []string { return eventReasons(conv) }).Should(ContainElement(parleyv1alpha1.EventCompactionFailed))
		Expect(stub.calls.Load()).To(BeNumerically(">=", 2))

		stub.status.Store(http.StatusOK)
		Eventually(compactedTo(conv, epoch+1)).WithTimeout(60 * time.Second).Should(Succeed())
		Expect(meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionDegraded)).To(BeNil())
		Expect(conv.Status.Context.Percent).To(BeNumerically("<", 50))
		By("the epoch's compaction record holds the usage the stub reported")
		Expect(loadState(conv).LastCompaction.SummarizerUsage).To(Equal(conversation.Usage{Input: 100, Output: 8}))
	})

	It("compacts on demand with parley.dev/compact-requested-at, once", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{Context: compactionContext(parleyv1alpha1.CompactionSlidingWindow)})
		conv.Spec.Context.CompactAtPercent = 100
		conv.Spec.Context.MaxTokens = ptrTo(int64(1000))
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())
		epoch := conv.Status.History.Epoch
		appendMessages(conv, 0, 25) // below 100 %, above the target budget (50 %)
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.History.Messages).To(Equal(int64(25)))
			g.Expect(compacting(conv).Reason).To(Equal(parleyv1alpha1.ReasonNotDue))
		}).Should(Succeed())

		patch := client.MergeFrom(conv.DeepCopy())
		conv.Annotations[parleyv1alpha1.AnnotationCompactRequestedAt] = time.Now().UTC().Format(time.RFC3339)
		Expect(k8sClient.Patch(ctx, conv, patch)).To(Succeed())
		Eventually(compactedTo(conv, epoch+1)).WithTimeout(30 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.History.Epoch).To(Equal(epoch + 1))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("records a compaction whose status write was lost, from the epoch itself, and does not compact again", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{Context: compactionContext(parleyv1alpha1.CompactionSlidingWindow)})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())
		epoch := conv.Status.History.Epoch
		appendMessages(conv, 0, 6) // far below the threshold

		By("a runner that wrote the new epoch and died before the reconcile recorded it")
		h, err := stores.Open(ctx, conv, false)
		Expect(err).NotTo(HaveOccurred())
		v := loadState(conv)
		done := &journal.Compaction{
			Time: time.Now().UTC(), Strategy: "SlidingWindow", TokensBefore: 1500, TokensAfter: 400, MessagesFolded: 3,
			Checkpoint: fmt.Sprintf("%s-compact-e%d", conv.Name, epoch), FromEpoch: v.Epoch, Through: v.Sequence,
		}
		first, err := journal.CompactionRecord(done)
		Expect(err).NotTo(HaveOccurred())
		kept := v.State
		kept.Messages = kept.Messages[3:]
		state, err := journal.StateRecords(&kept, "e:")
		Expect(err).NotTo(HaveOccurred())
		marker, err := journal.InitializedRecord()
		Expect(err).NotTo(HaveOccurred())
		_, err = h.NewEpoch(ctx, history.EpochRequest{Epoch: v.Epoch, Through: v.Sequence, Records: append(append([]history.Record{first}, state...), marker)})
		Expect(err).NotTo(HaveOccurred())
		poke(conv)

		Eventually(compactedTo(conv, epoch+1)).Should(Succeed())
		Expect(conv.Status.LastCompaction.Checkpoint).To(Equal(done.Checkpoint))
		Expect(conv.Status.LastCompaction.TokensBefore).To(Equal(int64(1500)))
		Expect(conv.Status.LastCompaction.MessagesFolded).To(Equal(int64(3)))
		Expect(conv.Status.History.Messages).To(Equal(int64(3)))
		Consistently(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.History.Epoch).To(Equal(epoch + 1))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("replaces a Compaction Checkpoint that misses the messages to fold (left by an earlier run), then compacts once", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{Context: compactionContext(parleyv1alpha1.CompactionSlidingWindow)})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())
		epoch := conv.Status.History.Epoch
		appendMessages(conv, 0, 2)
		stale := newCheckpoint(conv, fmt.Sprintf("%s-compact-e%d", conv.Name, epoch))
		stale.Spec.Reason = parleyv1alpha1.CheckpointCompaction
		Expect(k8sClient.Create(ctx, stale)).To(Succeed())
		Eventually(checkpointReady(stale)).Should(Succeed())
		Expect(stale.Status.Messages).To(Equal(int64(2)))
		staleUID := stale.UID

		appendMessages(conv, 2, 58)
		Eventually(compactedTo(conv, epoch+1)).WithTimeout(60 * time.Second).Should(Succeed())
		ckpt := &parleyv1alpha1.Checkpoint{ObjectMeta: metav1.ObjectMeta{Namespace: conv.Namespace, Name: conv.Status.LastCompaction.Checkpoint}}
		fetch(ckpt)(Default)
		Expect(ckpt.UID).NotTo(Equal(staleUID), "the stale Checkpoint was replaced")
		Expect(ckpt.Status.Messages).To(Equal(int64(60)), "the Checkpoint holds every message of the compacted epoch")
	})
})

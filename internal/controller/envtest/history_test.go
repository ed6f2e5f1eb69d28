package envtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/test/fixtures"
)

// seedConfigMap holds the Claude Code transcript of test/fixtures as a seed.
func seedConfigMap(name string) (*corev1.ConfigMap, conversation.State) {
	data, err := os.ReadFile(fixtures.Path(fixtures.ClaudeMain))
	Expect(err).NotTo(HaveOccurred())
	state, format, err := journal.ParseSeed(data, parleyv1alpha1.SeedFormatAuto)
	Expect(err).NotTo(HaveOccurred())
	Expect(format).To(Equal(parleyv1alpha1.SeedFormatClaudeCode))
	Expect(state.Messages).NotTo(BeEmpty())
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Data:       map[string]string{"transcript.jsonl": string(data)},
	}, state
}

// historyUnavailable waits for HistoryAvailable=False with a reason.
func historyUnavailable(conv *parleyv1alpha1.Conversation, reason string) func(g Gomega) {
	return func(g Gomega) {
		fetch(conv)(g)
		c := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Message)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
	}
}

// loadState folds a Conversation's stored history as the operator sees it.
func loadState(conv *parleyv1alpha1.Conversation) *journal.View {
	h, err := stores.Open(ctx, conv, false)
	Expect(err).NotTo(HaveOccurred())
	v := journal.NewView(conv.Status.SessionID, nil)
	Expect(v.Refresh(ctx, h)).To(Succeed())
	return v
}

func newCheckpoint(conv *parleyv1alpha1.Conversation, name string) *parleyv1alpha1.Checkpoint {
	return &parleyv1alpha1.Checkpoint{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: conv.Namespace},
		Spec:       parleyv1alpha1.CheckpointSpec{ConversationRef: parleyv1alpha1.ConversationReference{Name: conv.Name}},
	}
}

// archivedSoon creates a Conversation seeded from a ConfigMap named prefix plus a random
// suffix, expiring 6 s from now with expirationPolicy Archive, once its history is ready.
func archivedSoon(prefix string) (*parleyv1alpha1.Conversation, conversation.State) {
	cm, seed := seedConfigMap(prefix + randSuffix())
	Expect(k8sClient.Create(ctx, cm)).To(Succeed())
	conv := newConversation(parleyv1alpha1.ConversationSpec{
		Seed: &parleyv1alpha1.SeedSource{ConfigMapKeyRef: parleyv1alpha1.ConfigMapKeyReference{Name: cm.Name, Key: "transcript.jsonl"}},
		Lifetime: parleyv1alpha1.LifetimeSpec{
			TTL: &metav1.Duration{Duration: 6 * time.Second}, ExpirationPolicy: parleyv1alpha1.ExpirationPolicyArchive,
		},
	})
	Expect(k8sClient.Create(ctx, conv)).To(Succeed())
	Eventually(historyReady(conv)).Should(Succeed())
	return conv, seed
}

var _ = Describe("History kept by the operator", func() {
	It("initialises a history with the system prompt and a Claude Code seed, once", func() {
		cm, seed := seedConfigMap("seed-" + strings.ToLower(randSuffix()))
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "You are a careful agent."},
			Seed:         &parleyv1alpha1.SeedSource{ConfigMapKeyRef: parleyv1alpha1.ConfigMapKeyReference{Name: cm.Name, Key: "transcript.jsonl"}},
			Context:      parleyv1alpha1.ContextSpec{MaxTokens: ptrTo(int64(200000))},
		})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())

		Expect(conv.Status.History.Messages).To(Equal(int64(len(seed.Messages))))
		Expect(conv.Status.History.Turns).To(BeNumerically(">", 0))
		Expect(conv.Status.Context.Tokens).To(BeNumerically(">", 0))
		Expect(conv.Status.Context.Limit).To(Equal(int64(200000)))
		Expect(conv.Status.Context.Percent).To(Equal(int32(conv.Status.Context.Tokens * 100 / 200000)))
		Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationActive))

		v := loadState(conv)
		Expect(v.Initialized).To(BeTrue())
		Expect(v.State.System).NotTo(BeNil())
		Expect(v.State.System.Text()).To(Equal("You are a careful agent."))
		Expect(v.State.Messages).To(HaveLen(len(seed.Messages)))
		for i := range seed.Messages {
			Expect(v.State.Messages[i].ID).To(Equal(seed.Messages[i].ID))
		}
		Expect(v.State.Records).To(HaveLen(len(seed.Records)), "raw transcript lines are kept")
		// The session and its history started in one reconcile: one event says both.
		Eventually(func() []string { return eventReasons(conv) }).Should(ContainElements(
			parleyv1alpha1.EventSessionStarted, parleyv1alpha1.EventSeedImported))
		Expect(eventReasons(conv)).NotTo(ContainElement(parleyv1alpha1.EventHistoryCreated))

		By("never importing again on later reconciles")
		seq := conv.Status.History.Sequence
		Expect(k8sClient.Get(ctx, clientKey(conv), conv)).To(Succeed())
		conv.Spec.Lifetime.TTL = &metav1.Duration{Duration: 3 * time.Hour}
		Expect(k8sClient.Update(ctx, conv)).To(Succeed())
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.ObservedGeneration).To(Equal(conv.Generation))
		}).Should(Succeed())
		Expect(conv.Status.History.Sequence).To(Equal(seq))
	})

	It("reports a missing seed ConfigMap, then recovers when it appears", func() {
		name := "late-seed-" + randSuffix()
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			Seed: &parleyv1alpha1.SeedSource{ConfigMapKeyRef: parleyv1alpha1.ConfigMapKeyReference{Name: name, Key: "transcript.jsonl"}},
		})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyUnavailable(conv, parleyv1alpha1.ReasonConfigMapNotFound)).Should(Succeed())
		Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationPending))
		Expect(meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionReady).Reason).
			To(Equal(parleyv1alpha1.ReasonConfigMapNotFound))
		Eventually(func() []string { return eventReasons(conv) }).Should(ContainElement(parleyv1alpha1.EventHistoryUnavailable))

		cm, seed := seedConfigMap(name)
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		// Recovery needs nothing on the Conversation: the retry with backoff finds the seed.
		Eventually(historyReady(conv)).WithTimeout(60 * time.Second).Should(Succeed())
		Expect(conv.Status.History.Messages).To(Equal(int64(len(seed.Messages))))
		// The history came after the session: it has its own event.
		Eventually(func() []string { return eventReasons(conv) }).Should(ContainElements(
			parleyv1alpha1.EventSessionStarted, parleyv1alpha1.EventHistoryCreated))
	})

	It("refuses a seed that is not a transcript, naming the line", func() {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bad-seed-" + randSuffix()},
			Data:       map[string]string{"seed": "{\"id\":\"m1\",\"role\":\"user\",\"blocks\":[{\"type\":\"text\",\"text\":\"hi\"}]}\nnot json\n"},
		}
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			Seed: &parleyv1alpha1.SeedSource{ConfigMapKeyRef: parleyv1alpha1.ConfigMapKeyReference{Name: cm.Name, Key: "seed"}},
		})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyUnavailable(conv, parleyv1alpha1.ReasonSeedInvalid)).Should(Succeed())
		Expect(meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable).Message).To(ContainSubstring("line 2"))
	})

	It("writes a Checkpoint whose digest verifies, and forks a new session from it", func() {
		cm, seed := seedConfigMap("fork-seed-" + randSuffix())
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		src := newConversation(parleyv1alpha1.ConversationSpec{
			Seed: &parleyv1alpha1.SeedSource{ConfigMapKeyRef: parleyv1alpha1.ConfigMapKeyReference{Name: cm.Name, Key: "transcript.jsonl"}},
		})
		Expect(k8sClient.Create(ctx, src)).To(Succeed())
		Eventually(historyReady(src)).Should(Succeed())

		ckpt := newCheckpoint(src, src.Name+"-manual")
		Expect(k8sClient.Create(ctx, ckpt)).To(Succeed())
		Eventually(checkpointReady(ckpt)).Should(Succeed())
		Expect(ckpt.Status.SessionID).To(Equal(src.Status.SessionID))
		Expect(ckpt.Status.Messages).To(Equal(int64(len(seed.Messages))))
		Expect(ckpt.Status.Tokens).To(BeNumerically(">", 0))
		Expect(metav1.IsControlledBy(ckpt, src)).To(BeTrue(), "a Checkpoint is owned by its Conversation")
		Expect(ckpt.Finalizers).To(ContainElement("parley.dev/snapshot"))

		By("reading the stored snapshot back: its sha256 is the digest, and it decodes")
		h, err := stores.Open(ctx, src, false)
		Expect(err).NotTo(HaveOccurred())
		data, err := h.GetCheckpoint(ctx, history.Digest(ckpt.Status.Digest))
		Expect(err).NotTo(HaveOccurred())
		sum := sha256.Sum256(data)
		Expect("sha256:" + hex.EncodeToString(sum[:])).To(Equal(ckpt.Status.Digest))
		Expect(int64(len(data))).To(Equal(ckpt.Status.Bytes))
		snap, err := conversation.UnmarshalSnapshot(data)
		Expect(err).NotTo(HaveOccurred())
		Expect(snap.State.Messages).To(HaveLen(len(seed.Messages)))
		Eventually(func(g Gomega) {
			fetch(src)(g)
			g.Expect(src.Status.LatestCheckpoint).To(Equal(ckpt.Name))
		}).Should(Succeed())

		By("forking: the checkpoint's messages under a new session id")
		fork := newConversation(parleyv1alpha1.ConversationSpec{ForkFrom: &parleyv1alpha1.ForkSource{Checkpoint: ckpt.Name}})
		Expect(k8sClient.Create(ctx, fork)).To(Succeed())
		Eventually(historyReady(fork)).Should(Succeed())
		Expect(fork.Status.SessionID).NotTo(Equal(src.Status.SessionID))
		Expect(fork.Status.History.Messages).To(Equal(int64(len(seed.Messages))))
		fv := loadState(fork)
		Expect(fv.State.SessionID).To(Equal(fork.Status.SessionID))
		for i := range snap.State.Messages {
			Expect(fv.State.Messages[i].ID).To(Equal(snap.State.Messages[i].ID))
			Expect(fv.State.Messages[i].Text()).To(Equal(snap.State.Messages[i].Text()))
		}
		Eventually(func() []string { return eventReasons(fork) }).Should(ContainElement(parleyv1alpha1.EventForked))

		By("deleting the Checkpoint removes its stored snapshot")
		Expect(k8sClient.Delete(ctx, ckpt)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, clientKey(ckpt), ckpt)) }).Should(BeTrue())
		digests, err := h.Checkpoints(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(digests).NotTo(ContainElement(history.Digest(ckpt.Status.Digest)))
	})

	It("takes Scheduled checkpoints every N turns and keeps spec.checkpoints.keep of them", func() {
		cm, _ := seedConfigMap("sched-seed-" + randSuffix())
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			Seed:        &parleyv1alpha1.SeedSource{ConfigMapKeyRef: parleyv1alpha1.ConfigMapKeyReference{Name: cm.Name, Key: "transcript.jsonl"}},
			Checkpoints: &parleyv1alpha1.CheckpointPolicy{EveryTurns: ptrTo(int32(1)), Keep: ptrTo(int32(1))},
		})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())
		turns := conv.Status.History.Turns
		ckpt := &parleyv1alpha1.Checkpoint{}
		ckpt.Namespace, ckpt.Name = conv.Namespace, fmt.Sprintf("%s-turn-%d", conv.Name, turns)
		Eventually(checkpointReady(ckpt)).Should(Succeed())
		Expect(ckpt.Spec.Reason).To(Equal(parleyv1alpha1.CheckpointScheduled))
		Expect(ckpt.Status.Turn).To(Equal(turns))
		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.LatestCheckpoint).To(Equal(ckpt.Name))
		}).Should(Succeed())
		list := &parleyv1alpha1.CheckpointList{}
		Expect(k8sClient.List(ctx, list, client.InNamespace(conv.Namespace))).To(Succeed())
		n := 0
		for _, c := range list.Items {
			if c.Spec.ConversationRef.Name == conv.Name {
				n++
			}
		}
		Expect(n).To(Equal(1))
	})

	It("keeps spec.checkpoints.keep Checkpoints of every reason, their snapshots removed with them", func() {
		cm, _ := seedConfigMap("keep-seed-" + randSuffix())
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			Seed:        &parleyv1alpha1.SeedSource{ConfigMapKeyRef: parleyv1alpha1.ConfigMapKeyReference{Name: cm.Name, Key: "transcript.jsonl"}},
			Checkpoints: &parleyv1alpha1.CheckpointPolicy{Keep: ptrTo(int32(2))},
		})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())
		turns := conv.Status.History.Turns
		Expect(turns).To(BeNumerically(">=", 3), "the seed's last two turns are complete: two different snapshots")

		// Ten Checkpoints, alternately Crash and Manual, at the last two turns: the two kept hold
		// different snapshots, and every other snapshot has no Checkpoint left.
		names := make([]string, 0, 10)
		for i := range 10 {
			ckpt := newCheckpoint(conv, fmt.Sprintf("%s-k-%02d", conv.Name, i))
			ckpt.Spec.Reason = parleyv1alpha1.CheckpointCrash
			if i%2 == 1 {
				ckpt.Spec.Reason = parleyv1alpha1.CheckpointManual
			}
			ckpt.Spec.Turn = ptrTo(turns - int64(i%2))
			Expect(k8sClient.Create(ctx, ckpt)).To(Succeed())
			Eventually(checkpointReady(ckpt)).Should(Succeed())
			names = append(names, ckpt.Name)
		}
		mine := func(g Gomega) []parleyv1alpha1.Checkpoint {
			list := &parleyv1alpha1.CheckpointList{}
			g.Expect(k8sClient.List(ctx, list, client.InNamespace(conv.Namespace))).To(Succeed())
			var out []parleyv1alpha1.Checkpoint
			for _, c := range list.Items {
				if c.Spec.ConversationRef.Name == conv.Name {
					out = append(out, c)
				}
			}
			return out
		}
		var kept []parleyv1alpha1.Checkpoint
		Eventually(func(g Gomega) {
			kept = mine(g)
			g.Expect(kept).To(HaveLen(2))
		}).WithTimeout(40 * time.Second).Should(Succeed())
		Expect([]string{kept[0].Name, kept[1].Name}).To(ConsistOf(names[8], names[9]))
		Eventually(func() []string { return eventReasons(conv) }).Should(ContainElement(parleyv1alpha1.EventCheckpointPruned))

		h, err := stores.Open(ctx, conv, false)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			digests, err := h.Checkpoints(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(digests).To(ConsistOf(history.Digest(kept[0].Status.Digest), history.Digest(kept[1].Status.Digest)))
		}).Should(Succeed())
	})

	It("makes a fork of a missing Checkpoint wait with CheckpointNotFound", func() {
		fork := newConversation(parleyv1alpha1.ConversationSpec{ForkFrom: &parleyv1alpha1.ForkSource{Checkpoint: "no-such-" + randSuffix()}})
		Expect(k8sClient.Create(ctx, fork)).To(Succeed())
		Eventually(historyUnavailable(fork, parleyv1alpha1.ReasonCheckpointNotFound)).Should(Succeed())
	})

	It("archives on expiry: exactly one final checkpoint, no live segments, after a restart found it half done", func() {
		conv, seed := archivedSoon("archive-seed-")

		// A manager stopped after the final checkpoint and before removing the live history
		// leaves exactly this: the Archive Checkpoint, Ready, and the history intact.
		final := newCheckpoint(conv, conv.Name+"-archive")
		final.Spec.Reason = parleyv1alpha1.CheckpointArchive
		Expect(k8sClient.Create(ctx, final)).To(Succeed())
		Eventually(checkpointReady(final)).Should(Succeed())

		Eventually(historyUnavailable(conv, parleyv1alpha1.ReasonHistoryArchived)).WithTimeout(40 * time.Second).Should(Succeed())
		Expect(conv.Status.LatestCheckpoint).To(Equal(final.Name))
		Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationExpired))

		list := &parleyv1alpha1.CheckpointList{}
		Expect(k8sClient.List(ctx, list, client.InNamespace(conv.Namespace))).To(Succeed())
		var mine []string
		for _, c := range list.Items {
			if c.Spec.ConversationRef.Name == conv.Name {
				mine = append(mine, c.Name)
			}
		}
		Expect(mine).To(ConsistOf(final.Name))

		h, err := stores.Open(ctx, conv, false)
		Expect(err).NotTo(HaveOccurred())
		use, err := h.Usage(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(use.Head.Sequence).To(BeZero(), "no live messages")
		Expect(use.Epochs).To(Equal(1), "old epochs removed")
		Expect(use.Checkpoints).To(Equal(1))
		cms := &corev1.ConfigMapList{}
		Expect(k8sClient.List(ctx, cms, client.InNamespace(conv.Namespace),
			client.MatchingLabels{"parley.dev/conversation": conv.Name + "-" + conv.Status.SessionID})).To(Succeed())
		for _, c := range cms.Items {
			Expect(c.Labels["parley.dev/history-part"]).To(BeElementOf("index", "checkpoint"), c.Name)
		}
		data, err := h.GetCheckpoint(ctx, history.Digest(final.Status.Digest))
		Expect(err).NotTo(HaveOccurred())
		snap, err := conversation.UnmarshalSnapshot(data)
		Expect(err).NotTo(HaveOccurred())
		Expect(snap.State.Messages).To(HaveLen(len(seed.Messages)), "the archive holds the whole history")
	})

	It("keeps the live history when a Checkpoint under the final Checkpoint's name holds less of it", func() {
		conv, seed := archivedSoon("archive-squat-")

		// Whoever may create Checkpoints in the namespace takes the final Checkpoint's name
		// first, for a snapshot of another conversation of theirs.
		decoy := newConversation(parleyv1alpha1.ConversationSpec{SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "decoy"}})
		Expect(k8sClient.Create(ctx, decoy)).To(Succeed())
		Eventually(historyReady(decoy)).Should(Succeed())
		squat := newCheckpoint(decoy, conv.Name+"-archive")
		squat.Spec.Reason = parleyv1alpha1.CheckpointArchive
		Expect(k8sClient.Create(ctx, squat)).To(Succeed())
		Eventually(checkpointReady(squat)).Should(Succeed())
		Expect(squat.Status.Messages).To(BeNumerically("<", len(seed.Messages)), "the case needs a snapshot that holds less")

		Eventually(func(g Gomega) {
			fetch(conv)(g)
			g.Expect(conv.Status.Phase).To(Equal(parleyv1alpha1.ConversationExpired))
			c := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring(squat.Name))
		}).WithTimeout(40 * time.Second).Should(Succeed())
		Expect(meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable).Reason).
			NotTo(Equal(parleyv1alpha1.ReasonHistoryArchived))
		Expect(loadState(conv).State.Messages).To(HaveLen(len(seed.Messages)), "the live history is kept whole")
	})

	It("deletes the history on expiry with expirationPolicy Delete", func() {
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "short-lived"},
			Lifetime: parleyv1alpha1.LifetimeSpec{
				TTL: &metav1.Duration{Duration: 4 * time.Second}, ExpirationPolicy: parleyv1alpha1.ExpirationPolicyDelete,
			},
		})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyReady(conv)).Should(Succeed())
		Eventually(historyUnavailable(conv, parleyv1alpha1.ReasonHistoryDeleted)).WithTimeout(30 * time.Second).Should(Succeed())
		_, err := stores.Open(ctx, conv, false)
		Expect(err).To(MatchError(history.ErrNotFound))
	})
})

var _ = Describe("History in S3-compatible object storage", func() {
	It("reports a missing credentials Secret, recovers when it is created, and leaves no object after deletion", func() {
		ns := "default"
		secretName := "s3-" + randSuffix()
		prefix := "suite-" + randSuffix()
		cm, seed := seedConfigMap("s3-seed-" + randSuffix())
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		conv := newConversation(parleyv1alpha1.ConversationSpec{
			History:      objectStoreHistory(prefix, secretName),
			SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "stored in S3"},
			Seed:         &parleyv1alpha1.SeedSource{ConfigMapKeyRef: parleyv1alpha1.ConfigMapKeyReference{Name: cm.Name, Key: "transcript.jsonl"}},
		})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyUnavailable(conv, parleyv1alpha1.ReasonSecretNotFound)).Should(Succeed())
		Expect(conv.Finalizers).To(ContainElement("parley.dev/history"))

		Expect(k8sClient.Create(ctx, s3Secret(ns, secretName))).To(Succeed())
		Eventually(historyReady(conv)).WithTimeout(60 * time.Second).Should(Succeed())
		Expect(conv.Status.History.Messages).To(Equal(int64(len(seed.Messages))))
		Expect(conv.Status.History.Location).To(Equal("s3://" + testBucket + "/" + prefix + "/" + ns + "/" + conv.Status.SessionID + "/"))

		ckpt := newCheckpoint(conv, conv.Name+"-before-delete")
		Expect(k8sClient.Create(ctx, ckpt)).To(Succeed())
		Eventually(checkpointReady(ckpt)).Should(Succeed())
		Expect(objectsUnder(prefix + "/")).NotTo(BeEmpty())

		Expect(k8sClient.Delete(ctx, conv)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, clientKey(conv), conv)) }).Should(BeTrue())
		Expect(objectsUnder(prefix + "/")).To(BeEmpty())
	})

	It("refuses a bucket that does not exist with BucketNotFound", func() {
		secretName := "s3-" + randSuffix()
		Expect(k8sClient.Create(ctx, s3Secret("default", secretName))).To(Succeed())
		spec := objectStoreHistory("p", secretName)
		spec.ObjectStore.Bucket = "no-such-bucket-" + randSuffix()
		conv := newConversation(parleyv1alpha1.ConversationSpec{History: spec})
		Expect(k8sClient.Create(ctx, conv)).To(Succeed())
		Eventually(historyUnavailable(conv, parleyv1alpha1.ReasonBucketNotFound)).Should(Succeed())
		Expect(historystore.Location(conv)).To(HavePrefix("s3://" + spec.ObjectStore.Bucket + "/p/default/"))
	})
})

// objectsUnder lists the keys under a prefix of the suite's bucket.
func objectsUnder(prefix string) []string {
	mc, err := minio.New(s3srv.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s3srv.AccessKey, s3srv.SecretKey, "")})
	Expect(err).NotTo(HaveOccurred())
	var keys []string
	for obj := range mc.ListObjects(ctx, testBucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		Expect(obj.Err).NotTo(HaveOccurred())
		keys = append(keys, obj.Key)
	}
	return keys
}

func ptrTo[T any](v T) *T { return &v }

package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/agentpod"
	"github.com/parley-dev/parley/internal/bundle"
	"github.com/parley-dev/parley/internal/journal"
)

// AnnotationStoppedBy marks a pod Parley itself deletes (suspend, expiry, replacement), so a
// reconcile that reads it while it terminates never takes it for a crash.
const AnnotationStoppedBy = "parley.dev/stopped-by"

// DefaultNodeLostGrace is how long a pod's node may be NotReady before the pod counts as lost.
const DefaultNodeLostGrace = 2 * time.Minute

// reconcileAgent runs the agent phase: read the current pod (and its node), decide, then stop
// or start pods. Status is in the scope; the reconciler writes it once.
func (r *ConversationReconciler) reconcileAgent(ctx context.Context, s *conversationScope) {
	seen, err := r.seeAgent(ctx, s)
	if readPutOff(err) {
		s.requeueAfter(busyHistoryRecheck) // the history phase's event says why
		return
	}
	if err != nil {
		s.setCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionUnknown, parleyv1alpha1.ReasonPodPending, "reading the agent pod: "+err.Error())
		s.retryErr = err
		return
	}
	plan := decideAgent(s, seen)
	if plan.crashCheckpoint != "" {
		// The restart never waits for its Crash Checkpoint: the resume bundle is cut from the
		// history at the same turn, so a refused one only costs the record of the crash.
		turn := plan.crashTurn
		err := r.createCheckpoint(ctx, s.conv, plan.crashCheckpoint, parleyv1alpha1.CheckpointCrash, &turn)
		if err != nil && r.checkpointRefused(s, plan.crashCheckpoint, parleyv1alpha1.CheckpointCrash, err) == nil {
			s.retryErr = err
		}
	}
	if plan.stop {
		if err := r.stopAgentPod(ctx, s); err != nil {
			s.retryErr = err
			return
		}
	}
	if plan.start != "" {
		if err := r.startAgentPod(ctx, s, plan.start); err != nil {
			var conflict *agentpod.ConflictError
			var taken *nameTakenError
			switch {
			case readPutOff(err):
				s.requeueAfter(busyHistoryRecheck)
			case errors.As(err, &conflict):
				s.setCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, parleyv1alpha1.ReasonTemplateConflict,
					fmt.Sprintf("no agent pod is created: %s", conflict.Error()))
			case apierrors.IsInvalid(err):
				s.setCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, parleyv1alpha1.ReasonInvalidTemplate,
					"the API server refused the agent pod built from spec.agent.template: "+err.Error())
				if c := meta.FindStatusCondition(s.conv.Status.Conditions, parleyv1alpha1.ConditionAgentRunning); c == nil || c.Reason != parleyv1alpha1.ReasonInvalidTemplate {
					s.warning(parleyv1alpha1.EventAgentNotStarted, "Start", "the agent pod was refused: %s", err.Error())
				}
			case errors.Is(err, bundle.ErrInput):
				// e.g. claude-agent-sdk without a workingDir: the transcript has no folder to go in.
				s.setCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, parleyv1alpha1.ReasonInvalidTemplate, err.Error())
			case errors.Is(err, bundle.ErrTooLarge):
				s.setCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, parleyv1alpha1.ReasonBundleTooLarge, err.Error())
			case errors.As(err, &taken):
				msg := taken.Error() + "; Parley neither uses nor deletes it, and tries again until the name is free"
				if c := meta.FindStatusCondition(s.conv.Status.Conditions, parleyv1alpha1.ConditionAgentRunning); c == nil || c.Reason != taken.reason {
					s.warning(parleyv1alpha1.EventAgentNameTaken, "Start", "%s", msg)
				}
				s.setCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, taken.reason, msg)
				s.requeueAt(s.now.Add(r.nameTakenRetry()))
			default:
				s.setCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, parleyv1alpha1.ReasonPodPending, "creating the agent pod: "+err.Error())
				s.retryErr = err
			}
		}
	}
	r.requeueForNode(s, seen)
}

// seeAgent reads the pod status.agent.podName names: from the cache, and from the API server
// before calling it gone (a pod created a moment ago may not be cached yet).
func (r *ConversationReconciler) seeAgent(ctx context.Context, s *conversationScope) (agentSeen, error) {
	seen := agentSeen{}
	if s.conv.Spec.Agent != nil {
		seen.template = agentpod.TemplateHash(&s.conv.Spec.Agent.Template)
	}
	st := s.status.Agent
	if st == nil || st.PodName == "" {
		return seen, nil
	}
	pod := &corev1.Pod{}
	key := client.ObjectKey{Namespace: s.conv.Namespace, Name: st.PodName}
	err := r.Get(ctx, key, pod)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, pod)
	}
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return seen, fmt.Errorf("reading agent pod %s: %w", key, err)
	case pod.Annotations[AnnotationStoppedBy] != "":
		// Parley is deleting it (a status write after the delete was lost): nothing to record.
	case st.PodUID != "" && string(pod.UID) != st.PodUID:
		// Another pod under the name: the one Parley created is gone, whoever made this one.
	case !metav1.IsControlledBy(pod, s.conv):
		seen.exists, seen.foreign = true, true
	default:
		seen.exists, seen.podUID = true, string(pod.UID)
		seen.podTemplate = pod.Annotations[agentpod.AnnotationTemplateHash]
		seen.obs = agentpod.Classify(pod, r.nodeOf(ctx, pod), s.now, r.nodeLostGrace())
		s.agentPod = pod
	}
	newCrash := (!seen.exists || seen.obs.State == agentpod.Crashed) && (st.LastFailure == nil || st.LastFailure.PodName != st.PodName)
	if newCrash && s.conv.Spec.Agent != nil && !s.expired && !s.conv.Spec.IsSuspended() {
		turn, err := r.completeTurns(ctx, s)
		if err != nil {
			return seen, err
		}
		seen.crashTurn = int64(turn) + 1
	}
	return seen, nil
}

func (r *ConversationReconciler) nodeLostGrace() time.Duration {
	if r.NodeLostGrace > 0 {
		return r.NodeLostGrace
	}
	return DefaultNodeLostGrace
}

// nodeOf reads the pod's node from the cache; nil when the pod is unbound or the node cannot
// be read (a node that cannot be read is never taken for a lost one).
func (r *ConversationReconciler) nodeOf(ctx context.Context, pod *corev1.Pod) *agentpod.Node {
	if pod.Spec.NodeName == "" {
		return nil
	}
	node := &corev1.Node{}
	if err := r.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return &agentpod.Node{Gone: true}
		}
		return nil
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return &agentpod.Node{Ready: c.Status, Since: c.LastTransitionTime.Time}
		}
	}
	return nil
}

// requeueForNode looks again when the pod's NotReady node passes the grace period.
func (r *ConversationReconciler) requeueForNode(s *conversationScope, seen agentSeen) {
	if s.agentPod == nil || seen.obs.State == agentpod.Crashed || seen.obs.State == agentpod.Completed {
		return
	}
	if n := r.nodeOf(context.Background(), s.agentPod); n != nil && !n.Gone && n.Ready != corev1.ConditionTrue && !n.Since.IsZero() {
		s.requeueAt(n.Since.Add(r.nodeLostGrace()))
	}
}

// completeTurns is the last complete turn of the history: a crashed agent resumes after it.
func (r *ConversationReconciler) completeTurns(ctx context.Context, s *conversationScope) (int, error) {
	turn := 0
	err := r.withView(ctx, s, func(v *journal.View) error {
		_, t, err := journal.Cut(&v.State, 0)
		turn = t
		return err
	})
	return turn, err
}

// withView runs fn on the history's cached view.
func (r *ConversationReconciler) withView(ctx context.Context, s *conversationScope, fn func(*journal.View) error) error {
	conv := s.withStatus()
	leave, err := enterHistoryIO(r.HistoryGate, conv)
	if err != nil {
		return err
	}
	defer leave()
	live, err := r.Sessions.Open(ctx, conv, false)
	if err != nil {
		return err
	}
	return live.With(ctx, fn)
}

// stopAgentPod marks the current pod as Parley's to delete, then deletes it.
func (r *ConversationReconciler) stopAgentPod(ctx context.Context, s *conversationScope) error {
	pod := s.agentPod
	if pod == nil {
		return nil
	}
	patch := client.MergeFrom(pod.DeepCopy())
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationStoppedBy] = "parley"
	if err := r.Patch(ctx, pod, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("marking agent pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting agent pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// startAgentPod builds the resume bundle, stores it in an immutable ConfigMap, and creates the
// next attempt's pod. Both names are deterministic: a retry after a lost answer finds them.
func (r *ConversationReconciler) startAgentPod(ctx context.Context, s *conversationScope, cause agentStart) error {
	spec := s.conv.Spec.Agent
	st := s.status.Agent
	attempt := st.Attempt + 1
	checkpoint := ""
	checkpointTurn := 0
	if cause == startRestart && st.LastFailure != nil && st.LastFailure.Turn > 1 {
		checkpointTurn = int(st.LastFailure.Turn - 1)
		var err error
		if checkpoint, err = r.crashCheckpointOf(ctx, s.conv, st.Attempt); err != nil {
			return err
		}
	}
	owner := *metav1.NewControllerRef(s.conv, parleyv1alpha1.GroupVersion.WithKind("Conversation"))

	files, err := r.renderBundle(ctx, s, attempt, checkpoint, checkpointTurn)
	if err != nil {
		return err
	}
	cmName := bundleConfigMapName(s.conv.Name, attempt)
	_, caInBundle := files.data[agentpod.CAFile]
	params := agentpod.Params{
		Conversation: s.conv.Name, Namespace: s.conv.Namespace, Owner: owner, SessionID: s.status.SessionID,
		Attempt: attempt, Resume: attempt > 1, Checkpoint: checkpoint,
		APIURL: r.AgentAPIURL, CAConfigMap: r.AgentCAConfigMap, CAInBundle: caInBundle,
		MountPath: bundle.MountPath(s.conv), BundleName: cmName, BundleItems: files.items, ClaudeConfig: files.claudeDir,
	}
	pod, err := agentpod.Build(&spec.Template, params)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.conv.Namespace, Name: cmName, OwnerReferences: []metav1.OwnerReference{owner},
			Labels: map[string]string{LabelConversation: labelSafe(s.conv.Name), agentpod.LabelAttempt: strconv.Itoa(int(attempt))},
		},
		Data:      files.data,
		Immutable: ptr.To(true),
	}
	if err := r.createControlled(ctx, s.conv, cm, parleyv1alpha1.ReasonBundleNameTaken); err != nil {
		return fmt.Errorf("creating the resume bundle ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	if err := r.createControlled(ctx, s.conv, pod, parleyv1alpha1.ReasonPodNameTaken); err != nil {
		return fmt.Errorf("creating agent pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}

	if cause == startRestart {
		st.Restarts++
		if st.LastFailure != nil && st.LastFailure.Time != nil {
			s.restartedAfter = st.LastFailure.Time.Time
		}
	}
	previous := st.PodName
	st.Attempt, st.PodName, st.PodUID, st.NextStartAt, st.ResumedFrom = attempt, pod.Name, string(pod.UID), nil, checkpoint
	s.agentStarted = cause
	s.setCondition(parleyv1alpha1.ConditionAgentRunning, metav1.ConditionFalse, parleyv1alpha1.ReasonPodPending,
		fmt.Sprintf("agent pod %s created (attempt %d); waiting for it to run", pod.Name, attempt))
	switch cause {
	case startRestart:
		s.event(parleyv1alpha1.EventAgentRestarted, "Restart", "agent pod %s created after %s of %s (restart %d), resuming at turn %d",
			pod.Name, st.LastFailure.Reason, previous, st.Restarts, checkpointTurn)
	case startWake:
		s.event(parleyv1alpha1.EventAgentWoken, "Wake", "agent pod %s created (attempt %d): a user message woke the idle agent", pod.Name, attempt)
	default:
		s.event(parleyv1alpha1.EventAgentStarted, "Start", "agent pod %s created (%s, attempt %d)", pod.Name, cause, attempt)
	}
	r.pruneAgentObjects(ctx, s, attempt)
	return nil
}

// pruneAgentObjects deletes what older attempts left: pods before the previous one (the last
// failed pod stays for `kubectl logs`) and bundles before the current one. Best effort: the
// Conversation's owner references remove them all in the end.
func (r *ConversationReconciler) pruneAgentObjects(ctx context.Context, s *conversationScope, attempt int32) {
	if attempt > 2 {
		r.deleteControlled(ctx, s.conv, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.conv.Namespace, Name: agentpod.PodName(s.conv.Name, attempt-2)}})
	}
	if attempt > 1 {
		r.deleteControlled(ctx, s.conv, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.conv.Namespace, Name: bundleConfigMapName(s.conv.Name, attempt-1)}})
	}
}

// agentCA is what agents are told to trust now (nil: nothing of Parley's).
func (r *ConversationReconciler) agentCA() []byte {
	if r.AgentCA == nil {
		return nil
	}
	return r.AgentCA()
}

func bundleConfigMapName(conv string, attempt int32) string {
	return childName(conv, fmt.Sprintf("bundle-%d", attempt))
}

// renderedBundle is a bundle in ConfigMap form.
type renderedBundle struct {
	data      map[string]string
	items     []corev1.KeyToPath
	claudeDir string
}

// crashCheckpointOf is the name of the Crash Checkpoint of the attempt that crashed, "" when
// there is none (the API server refused it, or it was pruned): the pod and status.agent must
// not name a Checkpoint nobody can fork from. One created a moment ago may not be cached yet.
func (r *ConversationReconciler) crashCheckpointOf(ctx context.Context, conv *parleyv1alpha1.Conversation, attempt int32) (string, error) {
	name := crashCheckpointName(conv.Name, attempt)
	key := client.ObjectKey{Namespace: conv.Namespace, Name: name}
	err := r.Get(ctx, key, &parleyv1alpha1.Checkpoint{})
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, &parleyv1alpha1.Checkpoint{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading Crash Checkpoint %s: %w", key, err)
	}
	return name, nil
}

// renderBundle builds the resume bundle for the next attempt from the history, cut at the
// Crash Checkpoint's turn when there is one (the same messages the Checkpoint holds), else at
// the latest complete turn.
func (r *ConversationReconciler) renderBundle(ctx context.Context, s *conversationScope, attempt int32, checkpoint string, turn int) (renderedBundle, error) {
	conv := s.withStatus()
	claudeDir := ""
	if conv.Spec.Agent.Adapter == parleyv1alpha1.AdapterClaudeAgentSDK {
		claudeDir = bundle.ClaudeDir
	}
	var files bundle.Files
	err := r.withView(ctx, s, func(v *journal.View) error {
		state, _, err := journal.Cut(&v.State, turn)
		if errors.Is(err, journal.ErrTurnNotFound) {
			state, _, err = journal.Cut(&v.State, 0)
		}
		if err != nil {
			return err
		}
		files, err = bundle.Build(bundle.InputFor(conv, &state, attempt-1, checkpoint))
		return err
	})
	if err != nil {
		return renderedBundle{}, fmt.Errorf("building the resume bundle: %w", err)
	}
	if err := files.CheckConfigMapSize(); err != nil {
		return renderedBundle{}, err
	}
	data, items := files.ConfigMapData()
	if ca := r.agentCA(); r.AgentCAConfigMap == "" && len(ca) > 0 {
		data[agentpod.CAFile] = string(ca)
		items = append(items, corev1.KeyToPath{Key: agentpod.CAFile, Path: agentpod.CAFile})
	}
	return renderedBundle{data: data, items: items, claudeDir: claudeDir}, nil
}

package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	parleyclient "github.com/parley-dev/parley/pkg/client"
)

// typed makes a printer write apiVersion and kind, which typed clients leave empty.
func typed(p printers.ResourcePrinter) printers.ResourcePrinter {
	return printers.NewTypeSetter(scheme).ToPrinter(p)
}

// target is the conversation a command works on, and the clients it needs.
type target struct {
	ns, name string
	kc       client.Client        // with needKube; with mayKube when the kubeconfig gives one
	api      *parleyclient.Client // with needAPI
}

// needs says which clients a command on a conversation uses.
type needs int

const (
	needKube needs = 1 << iota // the API server, with the kubeconfig's credentials
	needAPI                    // the Session API
	// mayKube: the API server for a best-effort read (a hint, not the command's work); a
	// kubeconfig that gives no client leaves kc nil instead of failing the command.
	mayKube
)

// open is how a command on one conversation starts: the conversation named on the command line,
// in the namespace of the flags or the kubeconfig, with the clients the command needs.
func (o *Options) open(ctx context.Context, name string, n needs) (target, error) {
	t, err := o.target(name)
	if err != nil {
		return target{}, err
	}
	switch {
	case n&needKube != 0:
		if t.kc, err = o.kube(); err != nil {
			return target{}, err
		}
	case n&mayKube != 0:
		t.kc, _ = o.kube()
	}
	if n&needAPI != 0 {
		if t.api, err = o.sessionAPI(ctx); err != nil {
			return target{}, err
		}
	}
	return t, nil
}

func (o *Options) target(name string) (target, error) {
	ns, err := o.namespace()
	if err != nil {
		return target{}, err
	}
	return target{ns: ns, name: name}, nil
}

func (t target) String() string { return t.ns + "/" + t.name }

func (o *Options) getConversation(ctx context.Context, kc client.Client, t target) (*parleyv1alpha1.Conversation, error) {
	conv := &parleyv1alpha1.Conversation{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: t.ns, Name: t.name}, conv); err != nil {
		return nil, kubeError(err, "conversation "+t.String())
	}
	return conv, nil
}

// waitUntil polls cond every 250 ms until it is done, fails, or timeout passes; what says
// what was awaited, for the timeout's message.
func waitUntil(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, cond)
	if err != nil && wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("gave up after %s waiting for %s (raise --timeout, or look with kubectl parley describe)", timeout, what)
	}
	return err
}

// waitHistory waits until a Conversation's history is available, and fails with the
// condition's message when it reports a reason that will not go away by waiting.
func waitHistory(ctx context.Context, kc client.Client, t target, timeout time.Duration) (*parleyv1alpha1.Conversation, error) {
	conv := &parleyv1alpha1.Conversation{}
	err := waitUntil(ctx, timeout, "the history of "+t.String(), func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKey{Namespace: t.ns, Name: t.name}, conv); err != nil {
			return false, kubeError(err, "conversation "+t.String())
		}
		c := meta.FindStatusCondition(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
		switch {
		case c == nil || c.ObservedGeneration < conv.Generation && c.Status != "True":
			return false, nil
		case c.Status == "True":
			return true, nil
		case c.Reason == parleyv1alpha1.ReasonInitializing || c.Reason == parleyv1alpha1.ReasonCheckpointNotReady:
			return false, nil
		default:
			return false, fmt.Errorf("the history of %s is not available: %s: %s", t, c.Reason, c.Message)
		}
	})
	return conv, err
}

// waitCheckpoint waits until a Checkpoint is Ready, and fails when it is Failed.
func waitCheckpoint(ctx context.Context, kc client.Client, ns, name string, timeout time.Duration) (*parleyv1alpha1.Checkpoint, error) {
	ck := &parleyv1alpha1.Checkpoint{}
	err := waitUntil(ctx, timeout, "checkpoint "+ns+"/"+name, func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ck); err != nil {
			return false, kubeError(err, "checkpoint "+ns+"/"+name)
		}
		switch ck.Status.Phase {
		case parleyv1alpha1.CheckpointReady:
			return true, nil
		case parleyv1alpha1.CheckpointFailed:
			why := "failed"
			if c := meta.FindStatusCondition(ck.Status.Conditions, parleyv1alpha1.ConditionReady); c != nil {
				why = c.Reason + ": " + c.Message
			}
			return false, fmt.Errorf("checkpoint %s/%s failed: %s", ns, name, why)
		}
		return false, nil
	})
	return ck, err
}

// completeConversations completes a Conversation name (the first argument only).
func (o *Options) completeConversations(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return o.complete(cmd.Context(), &parleyv1alpha1.ConversationList{}, toComplete)
}

// completeCheckpoints completes a Checkpoint name (the first argument only).
func (o *Options) completeCheckpoints(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return o.complete(cmd.Context(), &parleyv1alpha1.CheckpointList{}, toComplete)
}

func (o *Options) complete(ctx context.Context, list client.ObjectList, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	kc, err := o.kube()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := kc.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []cobra.Completion
	_ = meta.EachListItem(list, func(obj runtime.Object) error {
		if m, err := meta.Accessor(obj); err == nil && strings.HasPrefix(m.GetName(), prefix) {
			names = append(names, m.GetName())
		}
		return nil
	})
	return names, cobra.ShellCompDirectiveNoFileComp
}

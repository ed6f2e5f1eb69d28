package controller

import (
	"errors"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/history"
)

// errNamespaceBusy: the Conversation's namespace has as many reconciles waiting on their
// histories as --max-history-io-per-namespace allows; the history is put off, not read.
var errNamespaceBusy = errors.New("as many reconciles of the namespace as it may have already wait on their histories")

// enterHistoryIO takes a slot of conv's namespace for I/O to its history; leave gives it back.
// A history in ConfigMaps takes none: it goes through the API server, which the manager trusts,
// not through an endpoint the Conversation names.
func (r *ConversationReconciler) enterHistoryIO(conv *parleyv1alpha1.Conversation) (leave func(), err error) {
	if r.historyGate == nil || conv.Spec.History.ObjectStore == nil {
		return func() {}, nil
	}
	leave, ok := r.historyGate.tryEnter(conv.Namespace)
	if !ok {
		return nil, errNamespaceBusy
	}
	return leave, nil
}

// readPutOff: the history was not read for want of room on this replica (the decode budget,
// the namespace's slots), not for anything wrong with it.
func readPutOff(err error) bool {
	return errors.Is(err, history.ErrBusy) || errors.Is(err, errNamespaceBusy)
}

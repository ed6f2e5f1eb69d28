package controller

import (
	"errors"
	"fmt"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/pkg/history"
)

// errNamespaceBusy: the Conversation's namespace has as many reconciles waiting on their
// histories as --max-history-io-per-namespace allows; the history is put off, not read.
var errNamespaceBusy = errors.New("as many reconciles of the namespace as it may have already wait on their histories")

// enterHistoryIO takes a slot of conv's namespace in gate for I/O to its history; leave gives
// it back. A history in ConfigMaps takes none: it goes through the API server, which the
// manager trusts, not through an endpoint the Conversation names. A nil gate bounds nothing.
func enterHistoryIO(gate *NamespaceGate, conv *parleyv1alpha1.Conversation) (leave func(), err error) {
	if gate == nil || conv.Spec.History.ObjectStore == nil {
		return func() {}, nil
	}
	leave, ok := gate.tryEnter(conv.Namespace)
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

// putOff says why a read was put off (readPutOff): the parley_history_store_errors_total
// reason and the HistoryReadDeferred message.
func putOff(cause error) (metricReason, message string) {
	if errors.Is(cause, errNamespaceBusy) {
		return metrics.ReasonNamespaceBusy, fmt.Sprintf("this namespace's Conversations and Checkpoints already wait on their histories as many at once as one namespace may (--max-history-io-per-namespace); trying again in %s", busyHistoryRecheck)
	}
	return metrics.ReasonDecodeBusy, fmt.Sprintf("this replica is decoding as much stored history as its memory allows (--history-decode-budget); trying again in %s", busyHistoryRecheck)
}

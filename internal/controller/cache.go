package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/parley-dev/parley/internal/agentpod"
)

// CacheOptions is the manager's cache as every manager of Parley's controllers needs it (the
// binary, and the test harnesses that stand in for it): the pod cache holds agent pods only
// (those labelled with their Conversation), so a cluster's other pods cost no memory, and
// managedFields are stripped from every cached object. They are never read here, they are a
// large part of the cache's heap at scale, and a status update sent from a cached object
// without them is much smaller (the API server keeps the stored ones; docs/benchmarks.md).
func CacheOptions() cache.Options {
	req, _ := labels.NewRequirement(agentpod.LabelConversation, selection.Exists, nil)
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: labels.NewSelector().Add(*req)},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}

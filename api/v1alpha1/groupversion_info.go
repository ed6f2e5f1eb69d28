// Package v1alpha1 contains the parley.dev/v1alpha1 API: Conversation and Checkpoint.
// +kubebuilder:object:generate=true
// +groupName=parley.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "parley.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this group-version. It depends on apimachinery only,
	// so agents and tools can import the API without controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&Conversation{}, &ConversationList{},
		&Checkpoint{}, &CheckpointList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

package v1alpha1

// SecretReference names a Secret in the referring object's namespace. Unlike core/v1's
// LocalObjectReference the name is required: an empty name is always a mistake.
type SecretReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ConfigMapKeyReference names one key of a ConfigMap in the referring object's namespace.
type ConfigMapKeyReference struct {
	// name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key in the ConfigMap's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

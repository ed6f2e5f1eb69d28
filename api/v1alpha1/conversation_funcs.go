package v1alpha1

// DefaultObjectStoreMaxBytes is spec.history.objectStore.maxBytes when it is unset: the CRD's
// default (TestDefaultsMatchTheCRD compares them).
const DefaultObjectStoreMaxBytes = 64 << 20

// GetMaxBytes returns the cap of an objectStore history: maxBytes, or its default.
func (o *ObjectStoreHistory) GetMaxBytes() int64 {
	if o.MaxBytes == nil {
		return DefaultObjectStoreMaxBytes
	}
	return o.MaxBytes.Value()
}

// Package history stores a conversation's messages durably and append-only.
//
// A Store holds many conversations; Open returns the History of one. A History
// assigns gap-free sequence numbers from 1 within an epoch, acknowledges an
// append only once it is durable, and treats a re-appended record id as a
// no-op that returns the sequence number already stored. Compaction writes a
// new epoch atomically; older epochs stay readable until retention removes
// them. Checkpoints are immutable blobs addressed by their sha256 digest.
//
// Backends live in subpackages: configmap (Kubernetes ConfigMaps), s3 (any
// S3-compatible object store) and memory (for unit tests). All of them pass
// the conformance suite in historytest. docs/storage.md describes the layout.
package history

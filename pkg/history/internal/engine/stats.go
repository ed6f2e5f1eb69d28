package engine

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Stats count the requests a store made to its backend.
type Stats struct {
	// Writes and WrittenBytes count creates and replaces and their payloads.
	Writes       int64
	WrittenBytes int64
	Reads        int64
	ReadBytes    int64
	Deletes      int64
	Lists        int64
}

type counters struct {
	writes, writtenBytes, reads, readBytes, deletes, lists atomic.Int64
}

// Stats returns the counts since the store was created.
func (s *Store) Stats() Stats {
	c := &s.counters
	return Stats{
		Writes: c.writes.Load(), WrittenBytes: c.writtenBytes.Load(),
		Reads: c.reads.Load(), ReadBytes: c.readBytes.Load(),
		Deletes: c.deletes.Load(), Lists: c.lists.Load(),
	}
}

type countingBackend struct {
	Backend
	c *counters
}

func (b countingBackend) Objects(name string, owner *metav1.OwnerReference) (Objects, error) {
	o, err := b.Backend.Objects(name, owner)
	if err != nil {
		return nil, err
	}
	return countingObjects{Objects: o, c: b.c}, nil
}

type countingObjects struct {
	Objects
	c *counters
}

func (o countingObjects) Get(ctx context.Context, key string) ([]byte, string, error) {
	data, ver, err := o.Objects.Get(ctx, key)
	o.c.reads.Add(1)
	o.c.readBytes.Add(int64(len(data)))
	return data, ver, err
}

func (o countingObjects) Create(ctx context.Context, key string, data []byte) (string, error) {
	o.c.writes.Add(1)
	o.c.writtenBytes.Add(int64(len(data)))
	return o.Objects.Create(ctx, key, data)
}

func (o countingObjects) Replace(ctx context.Context, key string, data []byte, version string) (string, error) {
	o.c.writes.Add(1)
	o.c.writtenBytes.Add(int64(len(data)))
	return o.Objects.Replace(ctx, key, data, version)
}

func (o countingObjects) Delete(ctx context.Context, key string) error {
	o.c.deletes.Add(1)
	return o.Objects.Delete(ctx, key)
}

func (o countingObjects) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	o.c.lists.Add(1)
	return o.Objects.List(ctx, prefix)
}

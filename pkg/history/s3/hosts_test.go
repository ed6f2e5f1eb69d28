package s3_test

import (
	"slices"
	gosync "sync"
)

// hostSet records host names seen by a dialer.
type hostSet struct {
	mu    gosync.Mutex
	hosts []string
}

func (s *hostSet) add(h string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.hosts, h) {
		s.hosts = append(s.hosts, h)
	}
}

func (s *hostSet) has(h string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.hosts, h)
}

func (s *hostSet) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hosts)
}

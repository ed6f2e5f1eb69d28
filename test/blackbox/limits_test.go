package blackbox_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// flood sends n requests from 8 clients at once and counts the answers by status; every 429
// must say when to retry, as problem+json.
func flood(t *testing.T, n int, send func(i int) (*http.Response, error)) map[int]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[int]int{}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				res, err := send(i)
				code := -1 // no answer
				if err == nil {
					code = res.StatusCode
					if code == http.StatusTooManyRequests && (res.Header.Get("Retry-After") == "" || res.Header.Get("Content-Type") != "application/problem+json") {
						t.Errorf("429 without Retry-After or problem+json: %v", res.Header)
					}
				}
				mu.Lock()
				counts[code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return counts
}

// appendsPastTheLimit: 2,000 back-to-back appends with one agent token to one conversation.
func appendsPastTheLimit(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "limits")
	e.conversation(ctx, t, historyOnly(ns, "busy"))
	agent := e.agentToken(ctx, t, ns)
	began := time.Now()
	counts := flood(t, 2000, func(i int) (*http.Response, error) {
		res, _, err := e.do(ctx, http.MethodPost, convPath(ns, "busy")+"/messages", agent, appendBody(fmt.Sprintf("b%d", i), 1, "hello"))
		return res, err
	})
	took := time.Since(began)
	t.Logf("2,000 appends in %s (%.0f/s): %v", took.Round(time.Millisecond), 2000/took.Seconds(), counts)
	if counts[http.StatusTooManyRequests] == 0 {
		t.Errorf("2,000 back-to-back appends with one agent token: %v, want some 429", counts)
	}
	if counts[http.StatusOK]+counts[http.StatusCreated] == 0 {
		t.Errorf("no append succeeded: %v", counts)
	}
	e.mustBeAlive(t)
}

// followsCapped: one identity cannot hold open follow streams without bound, on one
// conversation or across several.
func followsCapped(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "follows")
	for _, name := range []string{"tailed-a", "tailed-b", "tailed-c", "tailed-d"} {
		e.conversation(ctx, t, historyOnly(ns, name))
	}
	agent := e.agentToken(ctx, t, ns)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	open := func(conv string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+convPath(ns, conv)+"/messages?follow=true", nil)
		req.Header.Set("Authorization", "Bearer "+agent)
		res, err := e.http.Do(req)
		if err != nil {
			t.Fatalf("follow %s: %v", conv, err)
		}
		if res.StatusCode != http.StatusOK {
			_ = res.Body.Close()
		}
		return res.StatusCode // an open stream stays open until ctx ends
	}
	one := map[int]int{}
	for range 40 {
		one[open("tailed-a")]++
	}
	t.Logf("40 follow streams of one conversation: %v", one)
	if one[http.StatusTooManyRequests] == 0 {
		t.Errorf("40 follow streams of one conversation by one identity: %v, want a cap (429)", one)
	}
	across := map[int]int{}
	for _, conv := range []string{"tailed-b", "tailed-c", "tailed-d"} {
		for range 20 {
			across[open(conv)]++
		}
	}
	t.Logf("60 more follow streams over three conversations: %v", across)
	if across[http.StatusTooManyRequests] == 0 {
		t.Errorf("100 follow streams by one identity: %v, want a cap per identity (429)", across)
	}
	cancel()
	e.mustBeAlive(t)
}

// junkFloodReviews: 2,000 requests, each with a different junk token, cost the API server
// fewer than 500 TokenReviews (counted by the API server), and a known caller is served during
// the flood.
func junkFloodReviews(ctx context.Context, t *testing.T, e *env) {
	ns, agent := e.knownCaller(ctx, t, "junk")
	before := e.tokenReviews(ctx, t)
	counts, took := e.floodBeside(ctx, t, ns, agent, func(i int) (*http.Response, error) {
		res, _, err := e.do(ctx, http.MethodGet, convPath(ns, "target"), fmt.Sprintf("junk-%d-%d", i, time.Now().UnixNano()), nil)
		return res, err
	})
	reviews := e.tokenReviews(ctx, t) - before
	t.Logf("2,000 junk tokens in %s: %v; TokenReviews %.0f", took.Round(time.Millisecond), counts, reviews)
	if reviews >= 500 {
		t.Errorf("2,000 junk tokens cost %.0f TokenReviews, want fewer than 500", reviews)
	}
	e.mustBeAlive(t)
}

// namesFloodReviews: a token that may read nothing names 2,000 conversations, each in a
// namespace of its own (an answer is cached per namespace and name, so none is cached). The
// access reviews it causes are limited per identity, and a known caller is served meanwhile.
func namesFloodReviews(ctx context.Context, t *testing.T, e *env) {
	ns, agent := e.knownCaller(ctx, t, "names")
	// A ServiceAccount bound to nothing: what every pod of the cluster holds a token of.
	e.create(ctx, t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nobody"}})
	nobody := e.token(ctx, t, ns, "nobody", time.Hour, audience, nil)
	before := e.reviews(ctx, t, "subjectaccessreviews")
	counts, took := e.floodBeside(ctx, t, ns, agent, func(i int) (*http.Response, error) {
		res, _, err := e.do(ctx, http.MethodGet, convPath(fmt.Sprintf("n%d", i), fmt.Sprintf("c%d", i)), nobody, nil)
		return res, err
	})
	reviews := e.reviews(ctx, t, "subjectaccessreviews") - before
	t.Logf("2,000 names in %s: %v; SubjectAccessReviews %.0f", took.Round(time.Millisecond), counts, reviews)
	if limit := 100 + 50*took.Seconds() + 100; reviews > limit {
		t.Errorf("2,000 names cost %.0f SubjectAccessReviews, want at most %.0f (bursts of 100, 50/s, the known caller's)", reviews, limit)
	}
	e.mustBeAlive(t)
}

// knownCaller makes a namespace of prefix with a conversation "target" and returns the
// namespace and an agent token that has read it (the replica knows it).
func (e *env) knownCaller(ctx context.Context, t *testing.T, prefix string) (ns, agent string) {
	t.Helper()
	ns = e.namespace(ctx, t, prefix)
	e.conversation(ctx, t, historyOnly(ns, "target"))
	agent = e.agentToken(ctx, t, ns)
	if res, _, err := e.do(ctx, http.MethodGet, convPath(ns, "target"), agent, nil); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the known caller before the flood: %v %v", err, res)
	}
	return ns, agent
}

// floodBeside sends 2,000 requests with send while the known caller reads its conversation
// every 100, and fails t if it is refused; it returns the answers by status and the time taken.
func (e *env) floodBeside(ctx context.Context, t *testing.T, ns, agent string, send func(i int) (*http.Response, error)) (map[int]int, time.Duration) {
	t.Helper()
	var knownFailed atomic.Int64
	began := time.Now()
	counts := flood(t, 2000, func(i int) (*http.Response, error) {
		if i%100 == 0 {
			if res, _, err := e.do(ctx, http.MethodGet, convPath(ns, "target"), agent, nil); err != nil || res.StatusCode != http.StatusOK {
				knownFailed.Add(1)
			}
		}
		return send(i)
	})
	if n := knownFailed.Load(); n > 0 {
		t.Errorf("the known caller was refused %d of 20 times during the flood", n)
	}
	return counts, time.Since(began)
}

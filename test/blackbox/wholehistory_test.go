package blackbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/pkg/wire"
)

// How long the loop of whole-history reads runs, how many clients of the one token run it,
// and the manager's bound on the history bytes of one identity's whole-history answers
// (docs/session-api.md#whole-history-answers).
const (
	wholeHistoryLoop  = 20 * time.Second
	loopClients       = 8
	historyRate       = 16 << 20
	historyRateBurst  = 256 << 20
	historyRateMargin = 1.25 // the history's bytes as the manager counts them against a page's
)

// wholeHistoryReadsAreBounded: one agent token loops GET …/resume and GET …/state on its own
// large conversation from several clients at once, each waiting as Retry-After says (as
// pkg/client does). Each answer is built from the whole history and written whole; the
// answers the token gets must stay within its history bytes per second, and another
// identity's appends to another conversation must go on. The manager's CPU per second and
// the appends' latency are logged (docs/benchmarks.md#whole-history-reads).
func wholeHistoryReadsAreBounded(ctx context.Context, t *testing.T, e *env) {
	_, path, reader := e.bigHistory(ctx, t, "loop")
	otherNS, other := e.knownCaller(ctx, t, "loopother")
	res, page, err := e.do(ctx, http.MethodGet, path+"/messages?limit=1000", reader, nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the whole history as a page: %v %v", err, res)
	}

	e.resetPeakRSS(t)
	cpuBefore, err := e.proc.CPUTime()
	if err != nil {
		t.Skipf("the manager's CPU time is unreadable: %v", err)
	}
	began := time.Now()
	loopCtx, stop := context.WithTimeout(ctx, wholeHistoryLoop)
	defer stop()
	var counts map[string]int
	done := make(chan struct{})
	go func() {
		defer close(done)
		counts = e.loopWholeHistory(loopCtx, t, path, reader)
	}()
	var latencies []time.Duration
	for i := 0; loopCtx.Err() == nil; i++ {
		sent := time.Now()
		res, body, err := e.do(ctx, http.MethodPost, convPath(otherNS, "target")+"/messages", other, appendBody(fmt.Sprintf("beside%d", i), 1, "hello"))
		if err != nil || res.StatusCode >= 300 {
			t.Errorf("another identity's append during the loop: %v %v %.200s", err, res, body)
			break
		}
		latencies = append(latencies, time.Since(sent))
		time.Sleep(100 * time.Millisecond)
	}
	<-done
	wall := time.Since(began)
	cpuAfter, err := e.proc.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	e.mustBeAlive(t)
	if peak, err := e.proc.PeakRSS(); err == nil {
		t.Logf("the manager's peak RSS during the loop: %d MiB", peak>>20)
	}
	slices.Sort(latencies)
	t.Logf("%d clients of one token looping /resume and /state for %s: %v; the manager's CPU %.2f s per second; another identity's appends: %d, p50 %s, max %s",
		loopClients, wall.Round(time.Millisecond), counts, (cpuAfter-cpuBefore).Seconds()/wall.Seconds(),
		len(latencies), latencies[len(latencies)/2].Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond))

	served := counts["/resume 200"] + counts["/state 200"]
	bound := historyRateMargin*(historyRateBurst+historyRate*wall.Seconds())/float64(len(page)) + 1
	if float64(served) > bound {
		t.Errorf("one token was served %d whole-history answers of a %d MiB history in %s; its history bytes per second admit at most %.0f",
			served, len(page)>>20, wall.Round(time.Second), bound)
	}
}

// loopWholeHistory has loopClients clients GET …/resume and …/state of path with token until
// ctx ends, each waiting as a 429's Retry-After says, and counts the answers by route, status
// and, for a refusal, its detail.
func (e *env) loopWholeHistory(ctx context.Context, t *testing.T, path, token string) map[string]int {
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for c := range loopClients {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				route := []string{"/resume", "/state"}[(c+i)%2]
				res, body, err := e.do(ctx, http.MethodGet, path+route, token, nil)
				if ctx.Err() != nil {
					return // cut short by the end of the loop
				}
				key := route + " error"
				wait := time.Duration(0)
				if err == nil {
					key = fmt.Sprintf("%s %d", route, res.StatusCode)
					var p wire.Problem
					if res.StatusCode != http.StatusOK && json.Unmarshal(body, &p) == nil {
						key += " (" + p.Detail + ")"
					}
					if res.StatusCode == http.StatusTooManyRequests {
						seconds, err := strconv.Atoi(res.Header.Get("Retry-After"))
						if err != nil || res.Header.Get("Content-Type") != wire.ProblemContentType {
							t.Errorf("429 without Retry-After or problem+json: %v", res.Header)
						}
						wait = time.Duration(seconds) * time.Second
					}
				}
				mu.Lock()
				counts[key]++
				mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		})
	}
	wg.Wait()
	return counts
}

package scale

import (
	"context"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/parley-dev/parley/test/support/pprofhttp"
)

// profileWarmup is how far into the expiry window the profiles start: past the first
// seconds, when the burst of each whole second has reached its steady shape.
const profileWarmup = 5 * time.Second

// profileExpiry takes CPU profiles of the API server and the manager side by side in the
// expiry window (PARLEY_SCALE_PROFILE long) and writes them to PARLEY_SCALE_DIR, to see
// where an expiry's cost goes: `go tool pprof -top -cum <file>`.
func (bn *bench) profileExpiry(ctx context.Context, expiryBase time.Time, managerPprof string) {
	select {
	case <-time.After(time.Until(expiryBase.Add(profileWarmup))):
	case <-ctx.Done():
		return
	}
	targets := map[string]struct {
		hc   *http.Client
		base string
	}{
		"kube-apiserver": {bn.apiHC, bn.kube.Host},
		"manager":        {bn.hc, managerPprof},
	}
	var wg sync.WaitGroup
	for name, t := range targets {
		wg.Go(func() {
			path := filepath.Join(bn.s.dir, name+"-expiry.pprof")
			if err := pprofhttp.SaveCPUProfile(ctx, t.hc, t.base, bn.s.profile, path); err != nil {
				bn.b.Logf("profile of %s: %v", name, err)
				return
			}
			bn.b.Logf("CPU profile of %s in the expiry window (%s from %s): %s", name, bn.s.profile,
				expiryBase.Add(profileWarmup).Format("15:04:05"), path)
		})
	}
	wg.Wait()
}

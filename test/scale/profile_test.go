package scale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
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
	secs := fmt.Sprint(int(bn.s.profile.Seconds()))
	targets := map[string]struct {
		hc  *http.Client
		url string
	}{
		"kube-apiserver": {bn.apiHC, strings.TrimSuffix(bn.kube.Host, "/") + "/debug/pprof/profile?seconds=" + secs},
		"manager":        {bn.hc, managerPprof + "/debug/pprof/profile?seconds=" + secs},
	}
	var wg sync.WaitGroup
	for name, t := range targets {
		wg.Go(func() {
			path := filepath.Join(bn.s.dir, name+"-expiry.pprof")
			if err := fetchProfile(ctx, t.hc, t.url, path); err != nil {
				bn.b.Logf("profile of %s: %v", name, err)
				return
			}
			bn.b.Logf("CPU profile of %s in the expiry window (%s s from %s): %s", name, secs,
				expiryBase.Add(profileWarmup).Format("15:04:05"), path)
		})
	}
	wg.Wait()
}

func fetchProfile(ctx context.Context, hc *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

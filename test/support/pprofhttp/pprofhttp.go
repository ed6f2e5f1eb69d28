// Package pprofhttp saves the CPU profile a process serves on /debug/pprof (the API server's,
// the manager's) to a file, for the benchmarks that look inside the processes they drive.
package pprofhttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// SaveCPUProfile profiles the process at base (its URL, without a path) for the given time and
// writes the profile to path. It returns once the profile is written: about that long.
func SaveCPUProfile(ctx context.Context, hc *http.Client, base string, d time.Duration, path string) error {
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(base, "/"), max(1, int(d.Round(time.Second).Seconds())))
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
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
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

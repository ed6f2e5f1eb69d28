package apibench

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/test/support/pprofhttp"
)

// apiServerProfileFlag names the files the API server's CPU profiles go to, one per API phase
// (<prefix>.<n>.pb.gz; `go tool pprof` merges several): what a status write costs it, read
// from its own /debug/pprof rather than guessed from the request counts.
var apiServerProfileFlag = flag.String("apiserver-cpuprofile", "", "write the API server's CPU profile of each API phase to `prefix`.N.pb.gz")

// phaseProfileFlag names the files this process's CPU profiles go to, one per phase
// (<prefix>.<mode>.<n>.pb.gz): the API phases' profile against the store phases' shows what
// an append through the API adds in the manager, the Session API and the clients.
var phaseProfileFlag = flag.String("phase-cpuprofile", "", "write this process's CPU profile of each phase to `prefix`.MODE.N.pb.gz")

// profilePhase runs phase under this process's CPU profiler when -phase-cpuprofile is set.
func profilePhase(tb testing.TB, mode string, n int, phase func()) {
	tb.Helper()
	if *phaseProfileFlag == "" {
		phase()
		return
	}
	f, err := os.Create(fmt.Sprintf("%s.%s.%d.pb.gz", *phaseProfileFlag, mode, n))
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := pprof.StartCPUProfile(f); err != nil {
		tb.Fatalf("profiling the %s phase (-test.cpuprofile is not for use with -phase-cpuprofile): %v", mode, err)
	}
	phase()
	pprof.StopCPUProfile()
}

// apiServerProfiler takes the API server's CPU profile over one phase and its settling.
type apiServerProfiler struct {
	hc     *http.Client
	host   string
	prefix string
	n      int
}

func newAPIServerProfiler(hc *http.Client, host, prefix string) *apiServerProfiler {
	return &apiServerProfiler{hc: hc, host: host, prefix: prefix}
}

// around profiles the API server while phase runs, if this phase is to be profiled and the
// flag gave a prefix; otherwise it only runs phase.
func (p *apiServerProfiler) around(tb testing.TB, profile bool, phase func()) {
	tb.Helper()
	if !profile || p.prefix == "" {
		phase()
		return
	}
	p.n++
	file := fmt.Sprintf("%s.%d.pb.gz", p.prefix, p.n)
	var wg sync.WaitGroup
	var err error
	wg.Go(func() {
		err = pprofhttp.SaveCPUProfile(context.Background(), p.hc, p.host, *phaseFlag+*settleFlag, file)
	})
	// The profile starts when the API server receives the request.
	time.Sleep(50 * time.Millisecond)
	phase()
	wg.Wait()
	if err != nil {
		tb.Fatalf("the API server's CPU profile: %v", err)
	}
}

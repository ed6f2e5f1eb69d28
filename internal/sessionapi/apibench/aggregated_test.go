package apibench

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/test/support/loadphase"
)

// pathShapes are the loads both paths are compared on: one client, and 64 conversations with
// one writer each.
var pathShapes = []shape{{1, 1}, {64, 1}}

// BenchmarkAPIPaths: appends of 1 KiB messages by the Session API's two paths, phases
// alternating in the same run so the load of the shared machine falls on both alike:
//   - direct: pkg/client to the Session API over TLS with the agent ServiceAccount's token for
//     audience parley (TokenReview and SubjectAccessReview by the Session API), as agents
//     append;
//   - aggregated: pkg/client through the API server (the aggregated group session.parley.dev),
//     with the same ServiceAccount's token for the API server: the API server authenticates and
//     authorises it, then proxies to the Session API over mTLS with the identity in front-proxy
//     headers (SubjectAccessReview by the Session API), as kubectl parley does.
//
// Each writer is its own client with its own connections, as separate agents and kubectl
// processes are. One op is the whole measurement.
func BenchmarkAPIPaths(b *testing.B) {
	if aggregated == nil {
		b.Skip("this host has no address the API server's aggregator can be routed to")
	}
	for _, backend := range []string{"configmap", "s3"} {
		for _, sh := range pathShapes {
			b.Run(fmt.Sprintf("%s/conversations=%d/clients=%d", backend, sh.conversations, sh.clients), func(b *testing.B) {
				for range b.N {
					runPaths(b, backend, sh)
				}
			})
		}
	}
}

func runPaths(b *testing.B, backend string, sh shape) {
	ctx := context.Background()
	run := fmt.Sprintf("%s-%d-%d-%d", backend, sh.conversations, sh.clients, runSeq.Add(1))
	convs := map[string][]string{}
	clients := map[string][]*parleyclient.Client{}
	writers := sh.conversations * sh.clients
	for _, path := range []string{"direct", "aggregated"} {
		for _, c := range createConversations(b, backend, run+"-"+path, sh.conversations) {
			convs[path] = append(convs[path], c.Name)
		}
		for range writers {
			c, err := pathClient(path)
			if err != nil {
				b.Fatal(err)
			}
			clients[path] = append(clients[path], c)
		}
	}
	appendBy := func(path string) func(w int) error {
		return func(w int) error {
			_, err := clients[path][w].Append(ctx, namespace, convs[path][w/sh.clients],
				[]conversation.Message{message(run, runSeq.Add(1))})
			return err
		}
	}

	b.Logf("load average before: %s", loadphase.LoadAverage())
	results := map[string]*loadphase.Result{"direct": {}, "aggregated": {}}
	for range *roundsFlag {
		for _, path := range []string{"direct", "aggregated"} {
			results[path].Add(runPhase(b, writers, appendBy(path)))
		}
	}
	b.Logf("load average after: %s", loadphase.LoadAverage())
	logCPU(b, []string{"direct", "aggregated"}, results)
	b.StopTimer()
	direct, agg := results["direct"], results["aggregated"]
	b.ReportMetric(direct.Rate(), "direct-appends/s")
	b.ReportMetric(direct.QuantileMs(0.5), "direct-p50-ms")
	b.ReportMetric(direct.QuantileMs(0.99), "direct-p99-ms")
	b.ReportMetric(agg.Rate(), "aggregated-appends/s")
	b.ReportMetric(agg.QuantileMs(0.5), "aggregated-p50-ms")
	b.ReportMetric(agg.QuantileMs(0.99), "aggregated-p99-ms")
	b.ReportMetric(agg.Rate()/direct.Rate(), "aggregated/direct")
}

// pathClient is one writer's client of path, with connections of its own.
func pathClient(path string) (*parleyclient.Client, error) {
	if path == "direct" {
		return parleyclient.New(parleyclient.Options{URL: apiURL, Token: token, CA: apiCA, Retries: -1})
	}
	cfg := rest.CopyConfig(aggregated)
	// A dialer of its own keeps client-go from sharing one cached transport (one HTTP/2
	// connection) among the writers.
	cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return parleyclient.New(parleyclient.Options{URL: cfg.Host, HTTPClient: hc, Aggregated: true, Retries: -1})
}

package plugin

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// A --session-api-url without TLS to another machine would carry the kubeconfig's token, a
// credential for the whole API server, in clear text over the network: refused with a
// message saying why. Through a port-forward (loopback) it never leaves the machine.
func TestKubeconfigTokenIsNotSentInClearToAnotherMachine(t *testing.T) {
	kubeconfig := &rest.Config{Host: "https://api.example:6443", BearerToken: "kube-token"}
	for url, refused := range map[string]bool{
		"http://parley-session-api.parley-system.svc:8082": true,
		"http://10.0.0.7:8082":                             true,
		"http://localhost:8082":                            false,
		"http://127.0.0.1:8082":                            false,
		"http://[::1]:8082":                                false,
		"https://api.example:8082":                         false,
	} {
		o := &Options{API: APIFlags{URL: url, InsecureSkipVerify: true}}
		_, err := o.directClient(context.Background(), kubeconfig)
		if got := err != nil && strings.Contains(err.Error(), "https"); got != refused {
			t.Errorf("%s: error %v, refused %v, want %v", url, err, got, refused)
		}
	}
}

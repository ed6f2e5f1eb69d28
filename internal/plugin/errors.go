package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/parley-dev/parley/pkg/wire"
)

// apiError says what a failed Session API call means and what to do about it. A problem
// without a type is not the Session API's answer but the API server's: it authorises a request
// to the aggregated group before it proxies it, and answers when it cannot reach a replica.
func (o *Options) apiError(err error, namespace, name string) error {
	if err == nil {
		return nil
	}
	var p *wire.Problem
	if !errors.As(err, &p) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if o.API.URL != "" {
			return fmt.Errorf("cannot reach the Session API at %s: %w", o.API.URL, err)
		}
		return fmt.Errorf("cannot reach the Session API through the API server: %w", err)
	}
	conv := namespace + "/" + name
	const apiService = "apiservice v1alpha1.session.parley.dev"
	if p.Type == "" && o.API.URL == "" {
		switch p.Status {
		case http.StatusNotFound:
			return fmt.Errorf("the API server does not serve session.parley.dev/v1alpha1 (%s). Is Parley installed? "+
				"kubectl get %s shows its registration; or connect directly with --session-api-url", p.Detail, apiService)
		case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
			return fmt.Errorf("the API server could not reach the Session API (%s). Is the manager running and ready? "+
				"kubectl get %s says why in its Available condition", p.Detail, apiService)
		case http.StatusForbidden:
			return fmt.Errorf("the API server does not let you do this (%s). Reading a conversation needs get on "+
				"session.parley.dev conversations and conversations/history of parley.dev (parley's conversation-viewer-role); "+
				"writing needs conversation-editor-role (docs/kubectl-parley.md, Permissions)", p.Detail)
		case http.StatusUnauthorized:
			return fmt.Errorf("the API server did not accept your kubeconfig's credentials (%s)", p.Detail)
		}
	}
	if p.Type == wire.ProblemUnauthorized && o.API.URL == "" {
		return fmt.Errorf("the Session API did not accept the API server's front-proxy request (%s). The manager reads the request-header CA "+
			"from kube-system/extension-apiserver-authentication: is the API server started with --requestheader-client-ca-file "+
			"and --proxy-client-cert-file (docs/session-api.md)?", p.Detail)
	}
	switch p.Type {
	case wire.ProblemUnauthorized:
		return fmt.Errorf("the Session API did not accept your token (%s). It needs a bearer token for the API server or for audience parley: "+
			"pass --session-api-token \"$(kubectl create token SERVICE-ACCOUNT -n NAMESPACE --audience parley)\"", p.Detail)
	case wire.ProblemForbidden:
		return fmt.Errorf("%s. Reading a conversation needs get on conversations/history (parley's conversation-viewer-role), "+
			"writing needs create, reset needs delete (conversation-editor-role)", p.Detail)
	case wire.ProblemNotFound:
		return fmt.Errorf("%s (kubectl get conversations -n %s lists them)", p.Detail, namespace)
	case wire.ProblemNotReady:
		return fmt.Errorf("%s; kubectl parley describe %s -n %s says why", p.Detail, name, namespace)
	case wire.ProblemConflict, wire.ProblemInvalid, wire.ProblemTooLarge, wire.ProblemMalformed:
		return fmt.Errorf("%s: %s", conv, p.Detail)
	}
	return fmt.Errorf("%s: the Session API answered %s", conv, p.Error())
}

// kubeError says what a failed call to the API server means.
func kubeError(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s not found (kubectl get conversations,checkpoints lists them; -n picks the namespace)", what)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: %w (ask for a RoleBinding to parley's conversation-viewer-role or conversation-editor-role)", what, err)
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

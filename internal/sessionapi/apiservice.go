package sessionapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/parley-dev/parley/pkg/wire"
)

// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,verbs=get;patch,resourceNames=v1alpha1.session.parley.dev,roleName=manager-cluster-role

// APIServiceName is the APIService (config/default) that registers the aggregated group with
// the API server's aggregator.
const APIServiceName = wire.AggregatedVersion + "." + wire.AggregatedGroup

var apiServiceKind = schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}

// apiServiceCheck is how often the APIService's caBundle is compared with the CAs clients
// trust: a CA rotation reaches the aggregator within it, and so does a caBundle someone
// overwrote.
const apiServiceCheck = 30 * time.Second

// APIServiceCABundle keeps the caBundle of the APIService Name equal to the CAs the Session
// API's clients trust (TrustedCA, the bundle published in the ConfigMap CAConfigMapName): the
// aggregator verifies the Session API's serving certificate with it, for the Service name
// <service>.<namespace>.svc, which the serving certificate and the CA's name constraints
// permit. The leader writes it, only when it differs.
type APIServiceCABundle struct {
	Client    client.Client
	Name      string
	TrustedCA func() []byte
	Clock     clock.Clock
}

// NeedLeaderElection is true: one replica writes the APIService.
func (a *APIServiceCABundle) NeedLeaderElection() bool { return true }

// Start checks the caBundle now and every apiServiceCheck until ctx ends.
func (a *APIServiceCABundle) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("apiservice").WithValues("apiService", a.Name)
	clk := a.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	for {
		if err := a.sync(ctx); err != nil {
			log.Error(err, "keeping the APIService's caBundle current")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-clk.After(apiServiceCheck):
		}
	}
}

// sync writes the trusted CAs into the APIService's caBundle when they differ. A missing
// APIService (an install without the aggregated group) is left alone.
func (a *APIServiceCABundle) sync(ctx context.Context) error {
	bundle := a.TrustedCA()
	if len(bundle) == 0 {
		return nil
	}
	svc := &unstructured.Unstructured{}
	svc.SetGroupVersionKind(apiServiceKind)
	if err := a.Client.Get(ctx, client.ObjectKey{Name: a.Name}, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	want := base64.StdEncoding.EncodeToString(bundle)
	if current, _, _ := unstructured.NestedString(svc.Object, "spec", "caBundle"); current == want {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"caBundle": want}})
	if err != nil {
		return err
	}
	return a.Client.Patch(ctx, svc, client.RawPatch(types.MergePatchType, patch))
}

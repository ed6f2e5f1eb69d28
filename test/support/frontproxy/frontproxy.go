// Package frontproxy sets envtest's API server up for API aggregation as a cluster's control
// plane is: a request-header CA, the client certificate the aggregator presents to extension
// API servers (front-proxy-client), and aggregator routing to a Service's endpoints (envtest
// runs no kube-proxy). It registers the install's APIService and publishes the Session API
// Service with one endpoint at an address of this host, where a test's Session API listens.
// The kubectl parley tests (test/plugin) and the Session API benchmark
// (internal/sessionapi/apibench) share it.
package frontproxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// The install's names (config/default, dist/install.yaml).
const (
	// ClientName is the aggregator's client certificate's name (--requestheader-allowed-names).
	ClientName = "front-proxy-client"
	// APIServiceName registers the aggregated group session.parley.dev.
	APIServiceName = "v1alpha1.session.parley.dev"
	// Namespace is where Parley is installed.
	Namespace = "parley-system"
	// ServiceName is the Session API Service the APIService names.
	ServiceName = "parley-session-api"
	// ServiceHost is the name the aggregator verifies the Session API's certificate for.
	ServiceHost = ServiceName + "." + Namespace + ".svc"
)

// FrontProxy is the API server's front-proxy identity: files for its flags, and the same CA
// and client certificate in memory for a test that stands where the aggregator dials.
type FrontProxy struct {
	CAFile, CertFile, KeyFile string
	// CA verifies the aggregator's client certificate.
	CA *x509.CertPool
	// Client is the aggregator's client certificate.
	Client tls.Certificate
}

// New makes the request-header CA and the aggregator's client certificate in dir.
func New(dir string) (*FrontProxy, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "front-proxy-ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ClientName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	fp := &FrontProxy{
		CAFile: filepath.Join(dir, "front-proxy-ca.crt"), CertFile: filepath.Join(dir, "front-proxy-client.crt"),
		KeyFile: filepath.Join(dir, "front-proxy-client.key"), CA: x509.NewCertPool(),
		Client: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
	}
	fp.CA.AddCert(caCert)
	for path, block := range map[string]*pem.Block{
		fp.CAFile: {Type: "CERTIFICATE", Bytes: caDER}, fp.CertFile: {Type: "CERTIFICATE", Bytes: der},
		fp.KeyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			return nil, err
		}
	}
	return fp, nil
}

// Configure starts te's API server with the front-proxy flags a cluster's control plane has,
// and has the aggregator dial the Service's endpoints.
func (fp *FrontProxy) Configure(te *envtest.Environment) {
	args := te.ControlPlane.GetAPIServer().Configure()
	args.Set("requestheader-client-ca-file", fp.CAFile)
	args.Set("requestheader-allowed-names", ClientName)
	args.Set("requestheader-username-headers", "X-Remote-User")
	args.Set("requestheader-group-headers", "X-Remote-Group")
	args.Set("requestheader-extra-headers-prefix", "X-Remote-Extra-")
	args.Set("proxy-client-cert-file", fp.CertFile)
	args.Set("proxy-client-key-file", fp.KeyFile)
	args.Set("enable-aggregator-routing", "true")
}

// CreateAPIService creates the install's APIService, as dist/install.yaml (under root) has it.
func CreateAPIService(ctx context.Context, c client.Client, root string) error {
	raw, err := os.ReadFile(filepath.Join(root, "dist", "install.yaml"))
	if err != nil {
		return err
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return err
		}
		if obj["kind"] == "APIService" {
			return c.Create(ctx, &unstructured.Unstructured{Object: obj})
		}
	}
	return errors.New("dist/install.yaml has no APIService")
}

// APIService reads the install's APIService.
func APIService(ctx context.Context, c client.Client) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiregistration.k8s.io/v1")
	u.SetKind("APIService")
	return u, c.Get(ctx, client.ObjectKey{Name: APIServiceName}, u)
}

// WaitAvailable waits until the aggregator finds the Session API available: the manager wrote
// the caBundle, and the aggregator reached the group's discovery through it.
func WaitAvailable(ctx context.Context, c client.Client) error {
	for {
		u, err := APIService(ctx, c)
		if err == nil {
			conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, cond := range conditions {
				if m, ok := cond.(map[string]any); ok && m["type"] == "Available" && m["status"] == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the APIService %s never became Available: %v", APIServiceName, u.Object["status"])
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// PublishService creates the install's Session API Service without a selector, and endpoints
// naming hostIP:port (no controller manager runs on envtest to write them): the endpoints name
// a manager pod, which the kubelet would report running at that address.
func PublishService(ctx context.Context, c client.Client, hostIP string, port int32) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ServiceName},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 8082, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(port),
		}}},
	}
	if err := c.Create(ctx, svc); err != nil {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "parley-controller-manager-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "parley-manager:dev"}}},
	}
	if err := c.Create(ctx, pod); err != nil {
		return err
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: hostIP, PodIPs: []corev1.PodIP{{IP: hostIP}}}
	if err := c.Status().Update(ctx, pod); err != nil {
		return err
	}
	target := &corev1.ObjectReference{Kind: "Pod", Namespace: Namespace, Name: pod.Name, UID: pod.UID}
	if err := c.Create(ctx, &corev1.Endpoints{ //nolint:staticcheck // the aggregator may still read Endpoints
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: svc.Name},
		Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // as above
			Addresses: []corev1.EndpointAddress{{IP: hostIP, TargetRef: target}},
			Ports:     []corev1.EndpointPort{{Name: "https", Port: port, Protocol: corev1.ProtocolTCP}},
		}},
	}); err != nil {
		return err
	}
	return c.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: Namespace, Name: svc.Name + "-host",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "parley-test"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses: []string{hostIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, TargetRef: target,
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: &port, Protocol: ptr.To(corev1.ProtocolTCP)}},
	})
}

// HostIPv4 is this host's first global IPv4 address (an endpoint a pod could have; the API
// refuses loopback endpoints).
func HostIPv4() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String(), nil
			}
		}
	}
	return "", errors.New("this host has no global IPv4 address for the API server to proxy to")
}

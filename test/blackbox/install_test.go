package blackbox_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/test/support/kubeenv"
)

// installDist creates every object of dist/install.yaml as shipped (the Deployment and Services
// too: envtest runs no controllers, so they stay objects) and waits until the CRDs are served.
func installDist(cfg *rest.Config, root string) error {
	c, _, err := kubeenv.NewClient(cfg)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(root, "dist", "install.yaml"))
	if err != nil {
		return err
	}
	ctx := context.Background()
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var created int
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return err
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := createWhenServed(ctx, c, u); err != nil {
			return fmt.Errorf("creating %s %s from dist/install.yaml: %w", u.GetKind(), u.GetName(), err)
		}
		created++
	}
	if created == 0 {
		return errors.New("dist/install.yaml holds no objects")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.List(ctx, &parleyv1alpha1.ConversationList{})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the CRDs of dist/install.yaml are not served: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createWhenServed creates u, retrying while its kind is not served yet (a kind whose CRD was
// created a moment ago).
func createWhenServed(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := c.Create(ctx, u.DeepCopy())
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

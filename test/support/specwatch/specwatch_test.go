package specwatch

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func widget(generation int64, size string, phase string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns", "generation": generation},
		"spec":     map[string]any{"size": size},
		"status":   map[string]any{"phase": phase},
	}}
	return u
}

// TestUnchanged: status writes pass; a new generation or another spec is named; too few
// versions fail.
func TestUnchanged(t *testing.T) {
	cases := map[string]struct {
		writes []*unstructured.Unstructured
		min    int
		want   string
	}{
		"status writes only":        {writes: []*unstructured.Unstructured{widget(1, "s", "a"), widget(1, "s", "b")}, min: 3},
		"a new generation":          {writes: []*unstructured.Unstructured{widget(1, "s", "a"), widget(2, "s", "a")}, min: 3, want: "a spec write at resourceVersion"},
		"another spec, same gen":    {writes: []*unstructured.Unstructured{widget(1, "m", "a")}, min: 2, want: "spec changed at resourceVersion"},
		"fewer versions than asked": {writes: nil, min: 2, want: "the watch saw 1 versions, fewer than the 2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{widgets: "WidgetList"}, widget(1, "s", "new"))
			sw, err := Start(ctx, c, widgets, "ns", "w")
			if err != nil {
				t.Fatal(err)
			}
			defer sw.Stop()
			for _, u := range tc.writes {
				if _, err := c.Resource(widgets).Namespace("ns").Update(ctx, u, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			want := 1 + len(tc.writes)
			for deadline := time.Now().Add(5 * time.Second); sw.Seen() < want; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the watch delivered %d of %d versions", sw.Seen(), want)
				}
			}
			err = sw.Unchanged(tc.min)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Unchanged: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Unchanged: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

package bundle

import (
	"bytes"
	"errors"
	"path"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestConfigMapData: every key is a valid ConfigMap key, the items put every file back at its
// path (as the kubelet does for a configMap volume with items), and sizes add up.
func TestConfigMapData(t *testing.T) {
	for name, in := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			files, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			data, items := files.ConfigMapData()
			if len(data) != len(files) || len(items) != len(files) {
				t.Fatalf("%d keys, %d items for %d files", len(data), len(items), len(files))
			}
			size := 0
			restored := Files{}
			for i, item := range items {
				if errs := validation.IsConfigMapKey(item.Key); len(errs) > 0 {
					t.Errorf("key %q: %v", item.Key, errs)
				}
				if i > 0 && items[i-1].Path >= item.Path {
					t.Errorf("items not sorted by path at %d", i)
				}
				if path.IsAbs(item.Path) || strings.Contains(item.Path, "..") {
					t.Errorf("item path %q", item.Path)
				}
				content, ok := data[item.Key]
				if !ok {
					t.Fatalf("item key %q not in data", item.Key)
				}
				restored[item.Path] = []byte(content)
				size += len(content)
			}
			for p, c := range files {
				if !bytes.Equal(restored[p], c) {
					t.Errorf("%s not restored", p)
				}
			}
			if size != files.Size() {
				t.Errorf("data holds %d bytes, Size says %d", size, files.Size())
			}
		})
	}
}

func TestConfigMapKey(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"conversation.json", "conversation.json"},
		{"claude/projects/-w/s.jsonl", "claude_projects_-w_s.jsonl"},
		// 254 characters with '_': past the key limit, so hashed.
		{"claude/projects/" + strings.Repeat("x", 232) + "/s.jsonl", "f-"},
	} {
		got := configMapKey(tc.path)
		if tc.want == "f-" {
			if !strings.HasPrefix(got, "f-") || len(got) != 42 {
				t.Errorf("%s: key %q", tc.path, got)
			}
			if configMapKey(tc.path+"x") == got {
				t.Errorf("two paths share key %q", got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s: key %q, want %q", tc.path, got, tc.want)
		}
	}
}

// TestCheckConfigMapSize: a bundle up to MaxConfigMapBytes passes; one byte more is refused
// with ErrTooLarge and a message that gives the limit and what to do.
func TestCheckConfigMapSize(t *testing.T) {
	if MaxConfigMapBytes != 1_024_000 {
		t.Errorf("MaxConfigMapBytes = %d; docs/resume-bundle.md states 1,024,000", MaxConfigMapBytes)
	}
	fits := Files{"a": make([]byte, MaxConfigMapBytes-1), "b": []byte("x")}
	if err := fits.CheckConfigMapSize(); err != nil {
		t.Errorf("%d bytes: %v", fits.Size(), err)
	}
	over := Files{"a": make([]byte, MaxConfigMapBytes), "b": []byte("x")}
	err := over.CheckConfigMapSize()
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%d bytes: %v, want ErrTooLarge", over.Size(), err)
	}
	for _, want := range []string{"1024001 bytes", "1024000", "1048576", "compaction", "kubectl parley reset"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the message does not say %q: %s", want, err)
		}
	}
}

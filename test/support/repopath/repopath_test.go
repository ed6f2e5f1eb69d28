package repopath

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRootFindsTheModule(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("Root() = %s holds no go.mod: %v", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, "test", "support", "repopath", "repopath.go")); err != nil {
		t.Fatalf("Root() = %s is not this repository: %v", root, err)
	}
}

func TestRootFailsOutsideAModule(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, err := Root(); err == nil {
		t.Fatal("found a go.mod above a fresh temporary folder")
	}
}

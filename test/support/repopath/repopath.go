// Package repopath finds the repository's root from a test's working directory, so test
// harnesses can locate bin/ without relative paths that break when a package moves.
package repopath

import (
	"errors"
	"os"
	"path/filepath"
)

// Root is the nearest folder at or above the working directory that holds go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

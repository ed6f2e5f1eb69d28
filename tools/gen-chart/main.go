// Command gen-chart writes the Helm chart (dist/chart) from two kustomize renders of config/:
// config/default as dist/install.yaml has it, and the same with every optional component
// (config/prometheus, config/grafana, config/certmanager). Every object becomes a template with
// the values-driven fields marked (image, replicas, resources, ports, leader election, TLS,
// scheduling); the optional components' objects are guarded by their values; the CRDs go to
// crds/ unchanged. `make chart` runs it and `make verify` fails when the committed chart differs,
// so the chart cannot drift from config/.
//
//	go run ./tools/gen-chart -base dist/install.yaml -extras EXTRAS.yaml -out dist/chart
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	base := flag.String("base", "dist/install.yaml", "render of config/default")
	extras := flag.String("extras", "", "render of config/default with every optional component")
	out := flag.String("out", "dist/chart", "chart folder (replaced)")
	version := flag.String("version", "0.1.0", "chart version")
	flag.Parse()
	if *extras == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*base, *extras, *out, *version); err != nil {
		fmt.Fprintln(os.Stderr, "gen-chart:", err)
		os.Exit(1)
	}
}

func run(basePath, extrasPath, out, version string) error {
	in := inputs{version: version}
	for _, r := range []struct {
		path string
		objs *[]object
	}{{basePath, &in.base}, {extrasPath, &in.extras}} {
		data, err := os.ReadFile(r.path)
		if err != nil {
			return err
		}
		if *r.objs, err = decodeAll(data); err != nil {
			return fmt.Errorf("%s: %w", r.path, err)
		}
	}
	files, err := build(in)
	if err != nil {
		return err
	}
	// The folder is generated whole: files of objects that are gone must go too.
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	for _, p := range sortedPaths(files) {
		full := filepath.Join(out, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "gen-chart: wrote %s (%d files)\n", out, len(files))
	return nil
}

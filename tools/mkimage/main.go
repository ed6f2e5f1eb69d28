// Command mkimage packs files (typically one static Go binary) into an image in the
// docker-save tarball format, which `ctr images import` accepts. It lets the local cluster run
// images built on this machine without a registry or a Docker engine.
//
//	go run ./tools/mkimage -o out.tar -name localhost/parley-manager:dev \
//	    -file bin/manager=/manager -entrypoint /manager -user 65532:65532
//
// A whole root file system (an agent image: node, its libraries, node_modules) comes as
// prebuilt layer tarballs instead, each given with -layer and streamed from disk (they are
// hundreds of megabytes); the -file layer, when there is one, goes on top of them:
//
//	go run ./tools/mkimage -o out.tar -name localhost/agent:dev -layer node.tar -layer app.tar \
//	    -entrypoint /usr/bin/node -entrypoint /app/agent.mjs
//
// The output is deterministic for the same inputs (fixed timestamps, sorted entries), so
// re-importing an unchanged image is a no-op for containerd.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// epoch is the modification time of every entry: fixed so the digest depends only on content.
var epoch = time.Unix(0, 0).UTC()

type fileFlag []string

func (f *fileFlag) String() string     { return strings.Join(*f, ",") }
func (f *fileFlag) Set(v string) error { *f = append(*f, v); return nil }

type listFlag []string

func (f *listFlag) String() string     { return strings.Join(*f, ",") }
func (f *listFlag) Set(v string) error { *f = append(*f, v); return nil }

// imageConfig is the part of the OCI/Docker image configuration this tool writes.
type imageConfig struct {
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Created      time.Time       `json:"created"`
	Config       containerConfig `json:"config"`
	RootFS       rootFS          `json:"rootfs"`
	History      []history       `json:"history"`
}

type containerConfig struct {
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	User       string            `json:"User,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type history struct {
	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by"`
}

type manifestEntry struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

func main() {
	var (
		files      fileFlag
		layers     listFlag
		workdir    = flag.String("workdir", "", "working directory inside the image")
		env        listFlag
		cmd        listFlag
		out        = flag.String("o", "", "output tarball (docker-save format)")
		name       = flag.String("name", "", "image reference, e.g. localhost/parley-manager:dev")
		entrypoint listFlag
		user       = flag.String("user", "", "user (uid[:gid]) the container runs as")
		arch       = flag.String("arch", runtime.GOARCH, "image architecture")
	)
	flag.Var(&files, "file", "SRC=DEST: copy host file SRC to DEST in the image (repeatable)")
	flag.Var(&entrypoint, "entrypoint", "entrypoint path inside the image, then its first arguments (repeatable)")
	flag.Var(&layers, "layer", "an uncompressed layer tarball, bottom first (repeatable; streamed from disk)")
	flag.Var(&env, "env", "KEY=VALUE environment variable (repeatable)")
	flag.Var(&cmd, "cmd", "default argument after the entrypoint (repeatable)")
	flag.Parse()
	if *out == "" || *name == "" || len(files)+len(layers) == 0 {
		fmt.Fprintln(os.Stderr, "usage: mkimage -o OUT.tar -name REF {-file SRC=DEST | -layer TAR} … [-entrypoint PATH] [-cmd ARG …] [-user UID] [-env K=V] [-workdir DIR]")
		os.Exit(2)
	}
	spec := imageSpec{name: *name, entrypoint: entrypoint, user: *user, arch: *arch, workdir: *workdir, env: env, cmd: cmd}
	if err := run(*out, spec, layers, files); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

// imageSpec is the image's name and runtime configuration.
type imageSpec struct {
	name, user, arch, workdir string
	entrypoint, env, cmd      []string
}

// layerSource is one layer of the image: a tarball on disk, read twice (digest, then copy).
type layerSource struct {
	path   string
	size   int64
	digest string
}

func run(out string, spec imageSpec, layerFiles, files []string) error {
	tmpDir, err := os.MkdirTemp(filepath.Dir(out), ".mkimage-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmpDir) }()
	path := "PATH=/"
	if len(layerFiles) > 0 {
		// A root file system from layers has the usual folders of programs.
		path = "PATH=/usr/local/bin:/usr/bin:/bin"
	}
	if len(files) > 0 {
		layer, err := buildLayer(files)
		if err != nil {
			return err
		}
		top := filepath.Join(tmpDir, "files.tar")
		if err := os.WriteFile(top, layer, 0o644); err != nil {
			return err
		}
		layerFiles = append(layerFiles, top)
	}
	layers := make([]layerSource, 0, len(layerFiles))
	for _, p := range layerFiles {
		l, err := describeLayer(p)
		if err != nil {
			return err
		}
		layers = append(layers, l)
	}

	cfg := imageConfig{
		Architecture: spec.arch,
		OS:           "linux",
		Created:      epoch,
		Config: containerConfig{
			Env:        append([]string{path}, spec.env...),
			Cmd:        spec.cmd,
			User:       spec.user,
			WorkingDir: spec.workdir,
			Labels:     map[string]string{"org.opencontainers.image.source": "https://github.com/parley-dev/parley"},
		},
		RootFS: rootFS{Type: "layers"},
	}
	for _, l := range layers {
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, "sha256:"+l.digest)
		cfg.History = append(cfg.History, history{Created: epoch, CreatedBy: "tools/mkimage"})
	}
	cfg.Config.Entrypoint = spec.entrypoint
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	cfgSum := sha256.Sum256(cfgJSON)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	entry := manifestEntry{Config: cfgName, RepoTags: []string{spec.name}}
	for _, l := range layers {
		entry.Layers = append(entry.Layers, l.digest+"/layer.tar")
	}
	manifest, err := json.Marshal([]manifestEntry{entry})
	if err != nil {
		return err
	}

	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	tw := tar.NewWriter(f)
	if err := writeFile(tw, cfgName, cfgJSON, 0o644); err != nil {
		return err
	}
	for _, l := range layers {
		if err := writeLayer(tw, l); err != nil {
			return err
		}
	}
	if err := writeFile(tw, "manifest.json", manifest, 0o644); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// describeLayer reads a layer tarball once for its size and digest.
func describeLayer(p string) (layerSource, error) {
	f, err := os.Open(p)
	if err != nil {
		return layerSource{}, err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return layerSource{}, err
	}
	return layerSource{path: p, size: n, digest: hex.EncodeToString(h.Sum(nil))}, nil
}

// writeLayer copies a layer tarball into the image as DIGEST/layer.tar.
func writeLayer(tw *tar.Writer, l layerSource) error {
	if err := writeDir(tw, l.digest+"/"); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: l.digest + "/layer.tar", Mode: 0o644, Size: l.size, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	f, err := os.Open(l.path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	n, err := io.Copy(tw, f)
	if err == nil && n != l.size {
		err = fmt.Errorf("%s changed while it was packed", l.path)
	}
	return err
}

// buildLayer returns an uncompressed layer tar holding the requested files and their parent
// folders, plus an empty /tmp (world-writable, for programs that need scratch space).
func buildLayer(files []string) ([]byte, error) {
	type item struct {
		src, dest string
	}
	items := make([]item, 0, len(files))
	dirs := map[string]bool{"tmp/": true}
	for _, f := range files {
		src, dest, ok := strings.Cut(f, "=")
		if !ok || src == "" || dest == "" {
			return nil, fmt.Errorf("-file %q: want SRC=DEST", f)
		}
		dest = strings.TrimPrefix(path.Clean("/"+dest), "/")
		if dest == "" {
			return nil, fmt.Errorf("-file %q: empty destination", f)
		}
		for d := path.Dir(dest); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d+"/"] = true
		}
		items = append(items, item{src, dest})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].dest < items[j].dest })
	dirNames := make([]string, 0, len(dirs))
	for d := range dirs {
		dirNames = append(dirNames, d)
	}
	sort.Strings(dirNames)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range dirNames {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	for _, it := range items {
		if err := addFile(tw, it.src, it.dest); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func addFile(tw *tar.Writer, src, dest string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return errors.New(src + ": not a regular file")
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     dest,
		Mode:     int64(st.Mode().Perm()),
		Size:     st.Size(),
		ModTime:  epoch,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

func writeDir(tw *tar.Writer, name string) error {
	return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
}

func writeFile(tw *tar.Writer, name string, data []byte, mode int64) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

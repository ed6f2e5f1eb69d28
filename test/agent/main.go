// Command test-agent is the small static program the local cluster's e2e tests and
// `make run-local` run in pods (image localhost/parley-test-agent:dev, built by hack/images.sh).
// It stands in for a real AI agent: it needs nothing but the standard library, so the image is
// one file.
//
//	test-agent serve                       print what the pod was given, then wait for SIGTERM
//	test-agent check -file F -configmap N  read a mounted file, call the apiserver with the pod's
//	           [-sa-dir DIR]               ServiceAccount token (DIR/token, ca.crt, namespace); print
//	                                       a JSON report; exit 0 if all worked
//	test-agent exit -code N -message M     write M as the termination message and exit with N
//	test-agent get URL                     HTTP GET (plain HTTP), print the status and body; exit 0 on 2xx
//	test-agent converse [-turns N]         read the resume bundle, append turns through the Session API,
//	           [-crash-at-turn T -crash M] fail at turn T in the first pod (exit 1, oom, hang)
//	test-agent answer                      reply to the user message the resume bundle ends with, then to
//	                                       each new one as it is appended, until SIGTERM (an agent that talks
//	                                       with a person, suspended while idle and woken by a message)
//
// Reports are written to stdout (one line, prefixed "RESULT ") and, where the kubelet can read
// it, to /dev/termination-log, so tests can read them from the pod's logs or status.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

const (
	saDir           = "/var/run/secrets/kubernetes.io/serviceaccount"
	terminationPath = "/dev/termination-log"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var code int
	switch os.Args[1] {
	case "serve":
		code = serve(os.Args[2:])
	case "check":
		code = check(os.Args[2:])
	case "exit":
		code = exit(os.Args[2:])
	case "get":
		code = get(os.Args[2:])
	case "converse":
		code = converse(os.Args[2:])
	case "answer":
		code = answer(os.Args[2:])
	default:
		usage()
	}
	os.Exit(code)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: test-agent serve [-resume DIR] | check -file PATH [-configmap NAME] [-sa-dir DIR] | exit -code N [-message TEXT] | get URL | converse [-turns N] [-crash-at-turn T] [-crash exit|oom|hang] | answer")
	os.Exit(2)
}

// serve prints the pod's Parley environment and resume files, then waits for a signal.
func serve(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	resume := fs.String("resume", envOr("PARLEY_RESUME_DIR", "/var/run/parley"), "folder of the mounted resume bundle")
	_ = fs.Parse(args)

	fmt.Println("parley-test-agent: started")
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PARLEY_") {
			env = append(env, kv)
		}
	}
	sort.Strings(env)
	for _, kv := range env {
		fmt.Println("  env", kv)
	}
	entries, err := os.ReadDir(*resume)
	switch {
	case err == nil:
		for _, e := range entries {
			if info, ierr := e.Info(); ierr == nil {
				fmt.Printf("  resume %s (%d bytes)\n", filepath.Join(*resume, e.Name()), info.Size())
			}
		}
	case errors.Is(err, os.ErrNotExist):
		fmt.Printf("  no resume bundle at %s\n", *resume)
	default:
		fmt.Printf("  resume bundle at %s unreadable: %v\n", *resume, err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fmt.Println("parley-test-agent: waiting for SIGTERM")
	<-ctx.Done()
	fmt.Println("parley-test-agent: stopping")
	return 0
}

// Report is what `check` prints (as JSON, after "RESULT ") and writes as termination message.
type Report struct {
	File        string `json:"file"`
	FileContent string `json:"fileContent,omitempty"`
	FileError   string `json:"fileError,omitempty"`
	// Username the apiserver saw for the pod's token (from a SelfSubjectReview).
	Username string `json:"username,omitempty"`
	// WhoAmIStatus is the HTTP status of the SelfSubjectReview request.
	WhoAmIStatus int `json:"whoAmIStatus,omitempty"`
	// ConfigMapStatus is the HTTP status of GET configmaps/NAME in the pod's namespace.
	ConfigMapStatus int               `json:"configMapStatus,omitempty"`
	ConfigMapData   map[string]string `json:"configMapData,omitempty"`
	APIError        string            `json:"apiError,omitempty"`
	OK              bool              `json:"ok"`
}

func check(args []string) int {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	file := fs.String("file", "", "a mounted file to read (e.g. from a ConfigMap volume)")
	configMap := fs.String("configmap", "", "a ConfigMap in the pod's namespace to GET with the token")
	dir := fs.String("sa-dir", saDir, "folder holding the ServiceAccount token, ca.crt and namespace files")
	_ = fs.Parse(args)

	r := Report{File: *file}
	ok := true
	if *file != "" {
		b, err := os.ReadFile(*file)
		if err != nil {
			r.FileError = err.Error()
			ok = false
		} else {
			r.FileContent = string(b)
		}
	}
	if err := callAPIServer(&r, *dir, *configMap); err != nil {
		r.APIError = err.Error()
		ok = false
	}
	r.OK = ok && r.WhoAmIStatus == http.StatusCreated && (*configMap == "" || r.ConfigMapStatus == http.StatusOK)
	out, _ := json.Marshal(r)
	fmt.Printf("RESULT %s\n", out)
	_ = os.WriteFile(terminationPath, out, 0o644)
	if !r.OK {
		return 1
	}
	return 0
}

func callAPIServer(r *Report, dir, configMap string) error {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return errors.New("KUBERNETES_SERVICE_HOST/PORT not set")
	}
	token, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s/ca.crt: no certificate", dir)
	}
	ns, err := os.ReadFile(filepath.Join(dir, "namespace"))
	if err != nil {
		return err
	}
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	base := "https://" + net.JoinHostPort(host, port)
	bearer := "Bearer " + strings.TrimSpace(string(token))

	// Who does the apiserver think we are?
	body := `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	status, err := do(client, http.MethodPost, base+"/apis/authentication.k8s.io/v1/selfsubjectreviews", bearer, body, &review)
	r.WhoAmIStatus = status
	if err != nil {
		return fmt.Errorf("selfsubjectreview: %w", err)
	}
	r.Username = review.Status.UserInfo.Username

	if configMap == "" {
		return nil
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	status, err = do(client, http.MethodGet, base+"/api/v1/namespaces/"+strings.TrimSpace(string(ns))+"/configmaps/"+configMap, bearer, "", &cm)
	r.ConfigMapStatus = status
	if err != nil {
		return fmt.Errorf("get configmap: %w", err)
	}
	r.ConfigMapData = cm.Data
	return nil
}

// do sends one request and decodes a 2xx JSON answer into out. It returns the HTTP status.
func do(client *http.Client, method, url, bearer, body string, out any) (int, error) {
	req, err := http.NewRequestWithContext(context.Background(), method, url, bytes.NewBufferString(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", bearer)
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(data))
	}
	return resp.StatusCode, json.Unmarshal(data, out)
}

// exit writes a termination message and exits with the given code, like an agent that crashed.
func exit(args []string) int {
	fs := flag.NewFlagSet("exit", flag.ExitOnError)
	code := fs.Int("code", 1, "exit code")
	message := fs.String("message", "", "termination message")
	_ = fs.Parse(args)
	if *message != "" {
		fmt.Fprintln(os.Stderr, *message)
		_ = os.WriteFile(terminationPath, []byte(*message), 0o644)
	}
	return *code
}

// get fetches a URL, e.g. a Session API on the host at 10.88.0.1, and prints what came back.
func get(args []string) int {
	if len(args) != 1 {
		usage()
	}
	client := &http.Client{Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, args[0], http.NoBody)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Printf("RESULT error %v\n", err)
		return 1
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	fmt.Printf("RESULT status %d\n%s\n", resp.StatusCode, body)
	if resp.StatusCode/100 != 2 {
		return 1
	}
	return 0
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

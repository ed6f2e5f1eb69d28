// Command stubmodel serves the stub model (package stubmodel) on an address, for running real
// agents against it outside a Go test: a process on the host or a pod.
//
//	go run ./test/stubmodel/cmd -listen 10.88.0.1:8090 -script replies.json
//
// The script (a JSON list of replies) can also be replaced at run time with
// PUT /_stub/script; GET /_stub/requests is the record.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/parley-dev/parley/test/stubmodel"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8090", "address to listen on")
	scriptFile := flag.String("script", "", "JSON file with the list of replies (optional)")
	flag.Parse()
	if err := run(*listen, *scriptFile); err != nil {
		fmt.Fprintln(os.Stderr, "stubmodel:", err)
		os.Exit(1)
	}
}

func run(listen, scriptFile string) error {
	var script []stubmodel.Reply
	if scriptFile != "" {
		b, err := os.ReadFile(scriptFile)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &script); err != nil {
			return fmt.Errorf("%s: %w", scriptFile, err)
		}
	}
	stub, err := stubmodel.New(script, time.Now)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: listen, Handler: stub, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}

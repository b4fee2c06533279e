// Command httpecho is the endpoint of the HTTP job in `make demo`: it
// answers every request with 200 and prints one line per request with the
// sharding item it carries in the shardingContext header (the item's
// ShardingContext JSON, exactly as ElasticJob's HTTP job sends it).
//
//	httpecho -addr 127.0.0.1:0 -port-file /tmp/port
//
// With port 0 the system picks a free port; -port-file receives it once
// the server listens, so a script can wait for it. SIGTERM or SIGINT stop
// the server.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

type shardingContext struct {
	JobName            string `json:"jobName"`
	TaskID             string `json:"taskId"`
	ShardingTotalCount int    `json:"shardingTotalCount"`
	JobParameter       string `json:"jobParameter"`
	ShardingItem       int    `json:"shardingItem"`
	ShardingParameter  string `json:"shardingParameter"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	portFile := flag.String("port-file", "", "write the port here once listening")
	flag.Parse()
	if err := run(*addr, *portFile); err != nil {
		fmt.Fprintln(os.Stderr, "httpecho:", err)
		os.Exit(1)
	}
}

func run(addr, portFile string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if portFile != "" {
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		if err := os.WriteFile(portFile, []byte(port+"\n"), 0o644); err != nil {
			return err
		}
	}
	srv := &http.Server{Handler: http.HandlerFunc(echo), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
	raw := r.Header.Get("shardingContext")
	var sc shardingContext
	if err := json.Unmarshal([]byte(raw), &sc); err != nil {
		fmt.Printf("[HTTP   ] %s %s %s without a valid shardingContext header: %q\n",
			time.Now().Format("15:04:05"), r.Method, r.URL.Path, raw)
	} else {
		param := ""
		if sc.ShardingParameter != "" {
			param = " (" + sc.ShardingParameter + ")"
		}
		fmt.Printf("[HTTP   %s] %s item %d/%d%s  %s %s body=%q\n",
			sc.JobName, time.Now().Format("15:04:05"), sc.ShardingItem, sc.ShardingTotalCount, param,
			r.Method, r.URL.Path, body)
	}
	fmt.Fprintln(w, "ok")
}

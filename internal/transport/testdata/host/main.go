// Command host launches a plugin, prints the plugin's pid on stdout and
// blocks until killed. Used to check that plugins do not outlive a host
// killed by SIGKILL.
//
//	host launch PLUGIN [PIDFILE]
//	                     start it with transport.Launch (Pdeathsig + watcher);
//	                     with PIDFILE, first run a "daemon" Execute of
//	                     TEST_JOB (a setsid child whose pid goes to PIDFILE)
//	host raw PLUGIN      start it with a bare exec.Cmd that sets only the
//	                     handshake environment (parent watcher alone)
//	host lease PLUGIN DIR
//	                     launch it, then run a "leased" Execute of TEST_JOB
//	                     (files DIR/started, DIR/cancelled) under an
//	                     execution lease of 300 ms that the host keeps
//	                     renewing; a SIGSTOP of this process stops the
//	                     renewals
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/ejob-io/ejob/internal/transport"
	"github.com/ejob-io/ejob/spi"
)

func main() {
	if len(os.Args) == 4 && os.Args[1] == "lease" {
		leased(os.Args[2], os.Args[3])
		return
	}
	if len(os.Args) != 3 && !(len(os.Args) == 4 && os.Args[1] == "launch") {
		fmt.Fprintln(os.Stderr, "usage: host launch PLUGIN [PIDFILE] | host raw PLUGIN | host lease PLUGIN DIR")
		os.Exit(2)
	}
	var pid int
	switch os.Args[1] {
	case "launch":
		p, err := transport.Launch(context.Background(), transport.LaunchConfig{Path: os.Args[2]})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		pid = p.Pid()
		if len(os.Args) == 4 {
			if _, err := p.Conn().JobExecutor("TEST_JOB").Execute(context.Background(), spi.ExecuteRequest{
				Context: spi.ShardingContext{JobName: "daemon"}, Props: map[string]string{"pidfile": os.Args[3]},
			}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	case "raw":
		hs := transport.Handshake()
		cmd := exec.Command(os.Args[2])
		cmd.Env = append(os.Environ(),
			hs.MagicCookieKey+"="+hs.MagicCookieValue,
			"PLUGIN_PROTOCOL_VERSIONS="+strconv.Itoa(int(hs.ProtocolVersion)))
		devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		// Nothing of the plugin's output must reach a pipe whose reader
		// dies with this process (SIGPIPE would end the plugin for the
		// wrong reason): stderr to /dev/null, stdout read only for the
		// handshake line, after which go-plugin stops writing to it.
		cmd.Stderr = devnull
		out, err := cmd.StdoutPipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			fmt.Fprintln(os.Stderr, "no handshake:", err)
			os.Exit(1)
		}
		pid = cmd.Process.Pid
	default:
		os.Exit(2)
	}
	fmt.Println(pid)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
}

// leased runs the "lease" mode: it prints the plugin's pid once the
// Execute has started and blocks until SIGTERM.
func leased(pluginPath, dir string) {
	p, err := transport.Launch(context.Background(), transport.LaunchConfig{Path: pluginPath})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer p.Kill()
	const ttl = 300 * time.Millisecond
	ctx := spi.WithLease(context.Background(), spi.LeaseFunc(func() time.Time { return time.Now().Add(ttl) }))
	go func() {
		_, err := p.Conn().JobExecutor("TEST_JOB").Execute(ctx, spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "leased"},
			Props:   map[string]string{"started": filepath.Join(dir, "started"), "cancelled": filepath.Join(dir, "cancelled")},
		})
		fmt.Fprintln(os.Stderr, "execute returned:", err)
	}()
	fmt.Println(p.Pid())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
}

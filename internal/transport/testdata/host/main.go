// Command host launches a plugin, prints the plugin's pid on stdout and
// blocks until killed. Used to check that plugins do not outlive a host
// killed by SIGKILL.
//
//	host launch PLUGIN   start it with transport.Launch (Pdeathsig + watcher)
//	host raw PLUGIN      start it with a bare exec.Cmd that sets only the
//	                     handshake environment (parent watcher alone)
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/ejob-io/ejob/internal/transport"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: host launch|raw PLUGIN")
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

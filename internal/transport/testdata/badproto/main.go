// Command badproto is an ejob plugin built for another handshake protocol
// version: the one given as its argument, default ProtocolVersion+98.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/ejob-io/ejob/internal/transport"
	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
)

type grpcPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterPluginServer(s, pb.UnimplementedPluginServer{})
	return nil
}

func (grpcPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}

func main() {
	hs := transport.Handshake()
	hs.ProtocolVersion = transport.ProtocolVersion + 98
	if len(os.Args) > 1 {
		v, err := strconv.Atoi(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "badproto: protocol version:", err)
			os.Exit(2)
		}
		hs.ProtocolVersion = uint(v)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         plugin.PluginSet{"ejob": grpcPlugin{}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}

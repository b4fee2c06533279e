// Command badproto is an ejob plugin built for another handshake protocol
// version.
package main

import (
	"context"

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
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         plugin.PluginSet{"ejob": grpcPlugin{}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}

// Command badapi completes the handshake but reports another spi.APIVersion.
package main

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/ejob-io/ejob/internal/transport"
	pb "github.com/ejob-io/ejob/internal/transport/pluginpb"
)

type server struct{ pb.UnimplementedPluginServer }

func (server) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	return &pb.InfoResponse{PluginVersion: "bad", ApiVersion: 99,
		Types: []*pb.TypeKey{{Kind: "sharding", Type: "X"}}}, nil
}

type grpcPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterPluginServer(s, server{})
	return nil
}

func (grpcPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: transport.Handshake(),
		Plugins:         plugin.PluginSet{"ejob": grpcPlugin{}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}

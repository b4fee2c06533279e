// Package pluginpb holds the generated protobuf messages and gRPC stubs of
// the ejob plugin protocol (plugin.proto). Only package transport uses it;
// regenerate with `make proto`, and never edit the .pb.go files by hand.
package pluginpb

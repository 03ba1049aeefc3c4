// A small gRPC server and client on grpc-go's own health service (no generated code of ours):
// gives the unit tests a real grpc-go binary whose DWARF describes the server transport and its
// streams, peer.Peer, the status types and the client's connection and call attempts. The tests
// build it against several grpc-go releases, each in a copy of this directory whose go.mod they
// point at that release (go mod edit -require), so the go.mod here names only the oldest.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// refuseUnknownPeers fails a call whose peer the server cannot name, with a status error.
func refuseUnknownPeers(ctx context.Context, req interface{}, info *grpc.UnaryServerInfo,
	h grpc.UnaryHandler) (interface{}, error) {
	if p, ok := peer.FromContext(ctx); !ok || p.Addr == nil {
		return nil, status.Error(codes.Unavailable, "no peer for "+info.FullMethod)
	}
	return h(ctx, req)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: grpcserver LISTEN-ADDR | -call TARGET")
		os.Exit(2)
	}
	if os.Args[1] == "-call" && len(os.Args) > 2 {
		cc, err := grpc.Dial(os.Args[2], grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
		if s, ok := status.FromError(err); ok && err != nil {
			fmt.Println(s.Code(), s.Proto().GetMessage())
			os.Exit(1)
		}
		fmt.Println(resp.GetStatus())
		return
	}
	l, err := net.Listen("tcp", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(refuseUnknownPeers))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	_ = srv.Serve(l)
}

// grpcserver is the gRPC service of make bench's grpc part (bench/run): grpc-go's interop
// TestService (google.golang.org/grpc/interop/grpc_testing, generated code that ships in the grpc
// module, so no protoc) on grpc.NewServer, with no net/http server. UnaryCall answers a payload of
// the size asked for; nothing else is done per call, so what a tracer adds is what shows.
//
// With -otel the same binary is instrumented by hand the way OpenTelemetry's documentation shows
// it: otelgrpc's stats handler on the server, a tracer provider with the SDK's batch span
// processor and the OTLP/HTTP protobuf exporter, configured by the standard OTEL_* variables
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_BSP_*) as bench/otelsdk is. Without it nothing of
// OpenTelemetry runs (the code is linked in either way, so the binaries do not differ).
//
//	grpcserver -addr 127.0.0.1:0 [-otel]    prints "listening on HOST:PORT"; SIGTERM stops it
//	                                        (and flushes the SDK's spans)
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// maxPayload stays well under grpc-go's default 4 MiB message limit.
const maxPayload = 1 << 20

type server struct {
	testpb.UnimplementedTestServiceServer
}

func (server) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

func (server) UnaryCall(_ context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	size := req.GetResponseSize()
	if size < 0 || size > maxPayload {
		return nil, status.Errorf(codes.InvalidArgument,
			"response size %d is out of range: want 0 to %d bytes", size, maxPayload)
	}
	return &testpb.SimpleResponse{Payload: &testpb.Payload{
		Type: testpb.PayloadType_COMPRESSABLE, Body: make([]byte, size)}}, nil
}

// tracing installs the SDK as bench/otelsdk does: OTLP/HTTP protobuf exporter, batch span
// processor (OTEL_BSP_* defaults, as gospan's), always-on parent-based sampling, W3C trace
// context.
func tracing(ctx context.Context) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	res, err := resource.Merge(resource.Default(), resource.Environment())
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return tp, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (port 0 picks a free one)")
	withOtel := flag.Bool("otel", false, "instrument with otelgrpc and the OpenTelemetry SDK")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var opts []grpc.ServerOption
	var tp *sdktrace.TracerProvider
	if *withOtel {
		var err error
		if tp, err = tracing(ctx); err != nil {
			log.Fatalf("grpcserver: cannot set up tracing: %v", err)
		}
		opts = append(opts, grpc.StatsHandler(otelgrpc.NewServerHandler()))
	}
	srv := grpc.NewServer(opts...)
	testpb.RegisterTestServiceServer(srv, server{})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("grpcserver: cannot listen on '%s': %v", *addr, err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Printf("listening on %s\n", ln.Addr())

	select {
	case err = <-done:
	case <-ctx.Done():
		// Stop, not GracefulStop: the load generator has ended its calls, and a connection it
		// left open would hold a graceful stop until the client goes.
		srv.Stop()
	}
	if tp != nil {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if terr := tp.Shutdown(shutdownCtx); terr != nil {
			log.Printf("grpcserver: flushing spans: %v", terr)
		}
		cancel()
	}
	if err != nil {
		log.Fatalf("grpcserver: %v", err)
	}
}

// server is the gRPC half of grpcmix: grpc-go's interop TestService served by grpc.NewServer,
// and no net/http server at all, so a test can show that gospan traces a binary that links gRPC
// without serving anything through net/http. Every outcome a test may want (each status code, a
// deadline, a cancellation, a recovered panic, a call to a further server) is chosen by the
// request, so one server answers them all. Every method sends back, as response header
// metadata, the trace context it received.
//
//	server -addr 127.0.0.1:0 [-downstream HOST:PORT]    prints "listening on HOST:PORT"
//
// Without -downstream the "relay" command calls this same server, so a single server is enough
// for a test of a handler's own outgoing call.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

const (
	// maxSleep bounds every requested wait so a typo in a test cannot hold a stream for minutes.
	maxSleep = 10 * time.Second
	// maxPayload stays well under grpc-go's default 4 MiB message limit.
	maxPayload = 1 << 20
)

type server struct {
	testpb.UnimplementedTestServiceServer
	downstream testpb.TestServiceClient // -downstream, or this server itself
}

// seen is the header metadata every method answers with: the trace context that arrived. When
// a key arrived more than once (a caller's own traceparent and one a tracer added), the values
// are joined with commas, so a test sees both.
func seen(ctx context.Context) metadata.MD {
	md, _ := metadata.FromIncomingContext(ctx)
	return metadata.Pairs(
		"seen-traceparent", strings.Join(md.Get("traceparent"), ","),
		"seen-tracestate", strings.Join(md.Get("tracestate"), ","))
}

// echoStatus is the error the request's ResponseStatus asks for, nil when it asks for none.
func echoStatus(st *testpb.EchoStatus) error {
	if st == nil || st.GetCode() == 0 {
		return nil
	}
	return status.Error(codes.Code(st.GetCode()), st.GetMessage())
}

func payload(size int32) (*testpb.Payload, error) {
	if size < 0 || size > maxPayload {
		return nil, status.Errorf(codes.InvalidArgument,
			"payload size %d is out of range: want 0 to %d bytes", size, maxPayload)
	}
	return &testpb.Payload{Type: testpb.PayloadType_COMPRESSABLE, Body: make([]byte, size)}, nil
}

// sleep waits D, or less when the call ends first: then it returns the status that says why
// (DeadlineExceeded or Canceled), as a handler honouring its context would.
func sleep(ctx context.Context, d time.Duration) error {
	if d < 0 || d > maxSleep {
		return status.Errorf(codes.InvalidArgument, "sleep of %v is out of range: want 0 to %v",
			d, maxSleep)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

func (s *server) EmptyCall(ctx context.Context, _ *testpb.Empty) (*testpb.Empty, error) {
	if err := grpc.SetHeader(ctx, seen(ctx)); err != nil {
		return nil, err
	}
	return &testpb.Empty{}, nil
}

// UnaryCall answers the status in ResponseStatus when one is set; otherwise the payload body
// is a command: "sleep:DURATION", "panic", "relay", anything else an OK answer of ResponseSize
// bytes.
func (s *server) UnaryCall(ctx context.Context,
	req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if err := grpc.SetHeader(ctx, seen(ctx)); err != nil {
		return nil, err
	}
	if err := echoStatus(req.GetResponseStatus()); err != nil {
		return nil, err
	}
	cmd := string(req.GetPayload().GetBody())
	switch {
	case strings.HasPrefix(cmd, "sleep:"):
		d, err := time.ParseDuration(strings.TrimPrefix(cmd, "sleep:"))
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "bad command '%s': %v", cmd, err)
		}
		if err := sleep(ctx, d); err != nil {
			return nil, err
		}
	case cmd == "panic":
		// A real panic on the handler's goroutine; recoverPanic turns it into Internal.
		panic("grpcmix: the request asked the handler to panic")
	case cmd == "relay":
		return s.relay(ctx)
	}
	p, err := payload(req.GetResponseSize())
	if err != nil {
		return nil, err
	}
	return &testpb.SimpleResponse{Payload: p}, nil
}

// relay calls the downstream server with the handler's own context, on the handler's own
// goroutine, so its CLIENT span belongs inside this call's SERVER span; the downstream's code
// comes back unchanged.
func (s *server) relay(ctx context.Context) (*testpb.SimpleResponse, error) {
	resp, err := s.downstream.UnaryCall(ctx, &testpb.SimpleRequest{})
	if err != nil {
		st := status.Convert(err)
		return nil, status.Errorf(st.Code(), "relay: %s", st.Message())
	}
	return resp, nil
}

// StreamingOutputCall sends one response per ResponseParameters entry, each after its
// IntervalUs, then ends with ResponseStatus.
func (s *server) StreamingOutputCall(req *testpb.StreamingOutputCallRequest,
	stream testpb.TestService_StreamingOutputCallServer) error {
	ctx := stream.Context()
	if err := stream.SetHeader(seen(ctx)); err != nil {
		return err
	}
	if err := respond(stream, req.GetResponseParameters()); err != nil {
		return err
	}
	return echoStatus(req.GetResponseStatus())
}

// sender is what the server-streaming and the bidi streams have in common, in every grpc-go
// release (their generated types differ: interfaces before v1.64, generic aliases after).
type sender interface {
	Context() context.Context
	Send(*testpb.StreamingOutputCallResponse) error
}

func respond(stream sender, params []*testpb.ResponseParameters) error {
	for _, p := range params {
		if err := sleep(stream.Context(), time.Duration(p.GetIntervalUs())*time.Microsecond); err != nil {
			return err
		}
		pl, err := payload(p.GetSize())
		if err != nil {
			return err
		}
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: pl}); err != nil {
			return err
		}
	}
	return nil
}

// StreamingInputCall answers, once the client has closed its side, the sum of the payload
// sizes it sent.
func (s *server) StreamingInputCall(stream testpb.TestService_StreamingInputCallServer) error {
	if err := stream.SetHeader(seen(stream.Context())); err != nil {
		return err
	}
	var sum int32
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return stream.SendAndClose(&testpb.StreamingInputCallResponse{
				AggregatedPayloadSize: sum,
			})
		}
		if err != nil {
			return err
		}
		sum += int32(len(req.GetPayload().GetBody()))
	}
}

// FullDuplexCall answers each request as it arrives: one response per ResponseParameters
// entry, or the request's own payload back when it has none. A ResponseStatus in any request
// ends the stream with that status.
func (s *server) FullDuplexCall(stream testpb.TestService_FullDuplexCallServer) error {
	if err := stream.SetHeader(seen(stream.Context())); err != nil {
		return err
	}
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := echoStatus(req.GetResponseStatus()); err != nil {
			return err
		}
		if len(req.GetResponseParameters()) == 0 {
			err = stream.Send(&testpb.StreamingOutputCallResponse{Payload: req.GetPayload()})
		} else {
			err = respond(stream, req.GetResponseParameters())
		}
		if err != nil {
			return err
		}
	}
}

// recoverPanic turns a panicking unary handler into an Internal status instead of a crashed
// server. It recovers a frame above the handler, as the recovery interceptors of real services
// do: the handler itself never returns.
func recoverPanic(ctx context.Context, req interface{}, info *grpc.UnaryServerInfo,
	handler grpc.UnaryHandler) (resp interface{}, err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Printf("server: %s panicked: %v", info.FullMethod, r)
			resp, err = nil, status.Errorf(codes.Internal, "panic in %s: %v", info.FullMethod, r)
		}
	}()
	return handler(ctx, req)
}

// selfSigned makes a certificate for 127.0.0.1 and localhost, valid for a day: -tls serves with
// it, and clients of the test skip verifying it.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "grpcmix"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (port 0 picks a free one)")
	downstream := flag.String("downstream", "", "HOST:PORT of another grpcmix server, "+
		"for the \"relay\" command (default: this server itself)")
	useTLS := flag.Bool("tls", false, "serve over TLS, with a certificate made at start "+
		"(relays then use TLS too)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("server: cannot listen on '%s': %v", *addr, err)
	}
	if *downstream == "" {
		*downstream = ln.Addr().String()
	}
	// One connection made at start and shared by every relay, as services hold theirs. Dial
	// does not wait for it to connect, so a downstream may start later.
	dialCreds, opts := insecure.NewCredentials(), []grpc.ServerOption{grpc.UnaryInterceptor(recoverPanic)}
	if *useTLS {
		cert, err := selfSigned()
		if err != nil {
			log.Fatalf("server: cannot make a TLS certificate: %v", err)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
		// The test's own certificate: nothing to verify it against.
		dialCreds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})
	}
	conn, err := grpc.Dial(*downstream, grpc.WithTransportCredentials(dialCreds))
	if err != nil {
		log.Fatalf("server: cannot set up a connection to '%s': %v", *downstream, err)
	}
	defer conn.Close()
	s := &server{downstream: testpb.NewTestServiceClient(conn)}

	srv := grpc.NewServer(opts...)
	testpb.RegisterTestServiceServer(srv, s)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	// Printed after Listen (os.Stdout is not buffered), so whoever waits for this line can
	// connect at once.
	fmt.Printf("listening on %s\n", ln.Addr())

	select {
	case err = <-done:
	case <-ctx.Done():
		// GracefulStop waits for running calls; a stream left open must not keep the
		// process alive for ever.
		stopped := make(chan struct{})
		go func() { srv.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			srv.Stop()
		}
		err = <-done
	}
	if err != nil && err != grpc.ErrServerStopped {
		log.Fatalf("server: %v", err)
	}
}

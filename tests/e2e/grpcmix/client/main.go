// client is the calling half of grpcmix: a long-running process with one gRPC connection to a
// grpcmix server, made at start, and a small net/http API that runs a scenario of gRPC calls on
// request and answers what each call got. The calls run on the HTTP handler's own goroutine
// (except in "concurrent"), so a tracer has an HTTP SERVER span to put the gRPC CLIENT spans in.
//
//	client -addr 127.0.0.1:0 -target HOST:PORT     prints "listening on HOST:PORT"
//	GET /run?scenario=NAME                          runs NAME ("all": every scenario), answers
//	                                                a JSON list of calls
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
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

// Method names as they go on the wire (written out: the generated constants for them are
// newer than grpc-go v1.50).
const (
	methodEmpty        = "/grpc.testing.TestService/EmptyCall"
	methodUnary        = "/grpc.testing.TestService/UnaryCall"
	methodServerStream = "/grpc.testing.TestService/StreamingOutputCall"
	methodClientStream = "/grpc.testing.TestService/StreamingInputCall"
	methodBidi         = "/grpc.testing.TestService/FullDuplexCall"
)

const (
	// The trace context of the "with_traceparent" call, as a hand-instrumented caller sends it
	// (the example of the W3C Trace Context specification).
	handTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	handTracestate  = "vendor=value"

	streamLength = 5  // messages in each streaming scenario
	concurrency  = 64 // calls at once in "concurrent"
	reconnects   = 32 // connections made, one call each, in "reconnect"
	warmTimeout  = 10 * time.Second
)

var (
	// The deadline, or the time to cancel, against how long the handler is asked to sleep:
	// both stretched by GOSPAN_TEST_SLOWDOWN (the tests' factor for a slow machine), as in an
	// arm64 guest under TCG 50 ms ran out before the request had left the client.
	serverSleep = slowed(500 * time.Millisecond)
	clientLimit = slowed(50 * time.Millisecond)
)

func slowed(d time.Duration) time.Duration {
	f, err := strconv.ParseFloat(os.Getenv("GOSPAN_TEST_SLOWDOWN"), 64)
	if err != nil || f < 1 {
		return d
	}
	return time.Duration(float64(d) * f)
}

// errorCodes are the codes "unary_error" asks the server for, one call each.
var errorCodes = []codes.Code{
	codes.NotFound, codes.InvalidArgument, codes.Internal, codes.Unavailable,
	codes.PermissionDenied, codes.Unauthenticated, codes.AlreadyExists, codes.ResourceExhausted,
	codes.FailedPrecondition, codes.Aborted, codes.OutOfRange, codes.Unimplemented,
	codes.DataLoss, codes.Unknown,
}

// call is one gRPC call as the client saw it.
type call struct {
	Name        string `json:"name"`
	Method      string `json:"method"`
	StartUnixNs int64  `json:"start_unix_ns"`
	EndUnixNs   int64  `json:"end_unix_ns"`
	Code        int    `json:"code"`
	// WantCode is what the scenario expects the client to get, so a test (or a person with
	// curl) can compare without a table of its own.
	WantCode        int    `json:"want_code"`
	Message         string `json:"message"`
	SeenTraceparent string `json:"seen_traceparent"`
	SeenTracestate  string `json:"seen_tracestate"`
	// Responses counts the messages a streaming call received.
	Responses int `json:"responses,omitempty"`
	// LocalPort is the client's port of the call's own connection ("reconnect" only).
	LocalPort int `json:"local_port,omitempty"`
}

func begin(name, method string, want codes.Code) call {
	return call{Name: name, Method: method, WantCode: int(want), StartUnixNs: time.Now().UnixNano()}
}

// end records the outcome: ERR as a status (nil is OK), and the trace context the server says
// it received, from the response header metadata.
func (c *call) end(err error, header metadata.MD) {
	c.EndUnixNs = time.Now().UnixNano()
	st := status.Convert(err)
	c.Code = int(st.Code())
	c.Message = st.Message()
	c.SeenTraceparent = strings.Join(header.Get("seen-traceparent"), ",")
	c.SeenTracestate = strings.Join(header.Get("seen-tracestate"), ",")
}

type app struct {
	tc     testpb.TestServiceClient
	target string
	creds  credentials.TransportCredentials
}

func command(s string) *testpb.Payload { return &testpb.Payload{Body: []byte(s)} }

// unary makes one UnaryCall with REQ and records it.
func (a *app) unary(ctx context.Context, name string, want codes.Code,
	req *testpb.SimpleRequest) call {
	var header metadata.MD
	c := begin(name, methodUnary, want)
	_, err := a.tc.UnaryCall(ctx, req, grpc.Header(&header))
	c.end(err, header)
	return c
}

func (a *app) unaryOK(ctx context.Context) []call {
	return []call{a.unary(ctx, "unary_ok", codes.OK,
		&testpb.SimpleRequest{ResponseSize: 64, Payload: command("ok")})}
}

func (a *app) empty(ctx context.Context) []call {
	var header metadata.MD
	c := begin("empty", methodEmpty, codes.OK)
	_, err := a.tc.EmptyCall(ctx, &testpb.Empty{}, grpc.Header(&header))
	c.end(err, header)
	return []call{c}
}

func (a *app) unaryError(ctx context.Context) []call {
	calls := make([]call, 0, len(errorCodes))
	for _, code := range errorCodes {
		calls = append(calls, a.unary(ctx, "unary_error/"+code.String(), code,
			&testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{
				Code:    int32(code),
				Message: "fail-" + code.String(),
			}}))
	}
	return calls
}

func (a *app) serverStream(ctx context.Context) []call {
	req := &testpb.StreamingOutputCallRequest{}
	for i := 0; i < streamLength; i++ {
		req.ResponseParameters = append(req.ResponseParameters,
			&testpb.ResponseParameters{Size: int32(16 * (i + 1)), IntervalUs: 1000})
	}
	var header metadata.MD
	c := begin("server_stream", methodServerStream, codes.OK)
	stream, err := a.tc.StreamingOutputCall(ctx, req)
	if err == nil {
		for {
			if _, err = stream.Recv(); err != nil {
				break
			}
			c.Responses++
		}
		if err == io.EOF {
			err = nil
		}
		header, _ = stream.Header()
	}
	c.end(err, header)
	return []call{c}
}

func (a *app) clientStream(ctx context.Context) []call {
	var header metadata.MD
	c := begin("client_stream", methodClientStream, codes.OK)
	stream, err := a.tc.StreamingInputCall(ctx)
	if err == nil {
		for i := 0; i < streamLength && err == nil; i++ {
			err = stream.Send(&testpb.StreamingInputCallRequest{
				Payload: &testpb.Payload{Body: make([]byte, 100*(i+1))},
			})
		}
		// A failed Send says only io.EOF; the status is what CloseAndRecv returns.
		if _, err = stream.CloseAndRecv(); err == nil {
			c.Responses = 1
		}
		header, _ = stream.Header()
	}
	c.end(err, header)
	return []call{c}
}

func (a *app) bidi(ctx context.Context) []call {
	var header metadata.MD
	c := begin("bidi", methodBidi, codes.OK)
	stream, err := a.tc.FullDuplexCall(ctx)
	if err == nil {
		// Round trips: each request waits for its answer before the next goes out.
		for i := 0; i < streamLength && err == nil; i++ {
			err = stream.Send(&testpb.StreamingOutputCallRequest{
				ResponseParameters: []*testpb.ResponseParameters{{Size: int32(32 * (i + 1))}},
			})
			if err == nil {
				if _, err = stream.Recv(); err == nil {
					c.Responses++
				}
			}
		}
		if err == nil {
			err = stream.CloseSend()
		}
		// The status arrives with the end of the stream, also after a failed Send.
		for err == nil {
			if _, err = stream.Recv(); err == nil {
				c.Responses++
			}
		}
		if err == io.EOF {
			err = nil
		}
		header, _ = stream.Header()
	}
	c.end(err, header)
	return []call{c}
}

func (a *app) deadline(ctx context.Context) []call {
	ctx, cancel := context.WithTimeout(ctx, clientLimit)
	defer cancel()
	return []call{a.unary(ctx, "deadline", codes.DeadlineExceeded,
		&testpb.SimpleRequest{Payload: command("sleep:" + serverSleep.String())})}
}

func (a *app) canceled(ctx context.Context) []call {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := time.AfterFunc(clientLimit, cancel)
	defer t.Stop()
	return []call{a.unary(ctx, "cancel", codes.Canceled,
		&testpb.SimpleRequest{Payload: command("sleep:" + serverSleep.String())})}
}

func (a *app) panicking(ctx context.Context) []call {
	return []call{a.unary(ctx, "panic", codes.Internal,
		&testpb.SimpleRequest{Payload: command("panic")})}
}

// concurrent makes its calls on goroutines it starts, all on the one connection: HTTP/2
// streams interleaved on one socket.
func (a *app) concurrent(ctx context.Context) []call {
	calls := make([]call, concurrency)
	var wg sync.WaitGroup
	for i := 0; i < concurrency; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			calls[i] = a.unary(ctx, fmt.Sprintf("concurrent/%d", i), codes.OK,
				&testpb.SimpleRequest{ResponseSize: 32, Payload: command("ok")})
		}(i)
	}
	wg.Wait()
	return calls
}

func (a *app) relay(ctx context.Context) []call {
	return []call{a.unary(ctx, "relay", codes.OK,
		&testpb.SimpleRequest{Payload: command("relay")})}
}

// withTraceparent calls with trace context already in the outgoing metadata, as a service
// instrumented by hand sends it.
func (a *app) withTraceparent(ctx context.Context) []call {
	ctx = metadata.AppendToOutgoingContext(ctx,
		"traceparent", handTraceparent, "tracestate", handTracestate)
	return []call{a.unary(ctx, "with_traceparent", codes.OK,
		&testpb.SimpleRequest{ResponseSize: 16, Payload: command("ok")})}
}

// reconnect makes each call on a connection of its own, made for it and closed after it, and
// records the connection's local port: the server sees connections come and go one after
// another, and a tracer that keeps anything by connection must tell each from the one before.
func (a *app) reconnect(ctx context.Context) []call {
	calls := make([]call, 0, reconnects)
	for i := 0; i < reconnects; i++ {
		var mu sync.Mutex
		local := 0
		dial := func(ctx context.Context, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err == nil {
				mu.Lock()
				local = conn.LocalAddr().(*net.TCPAddr).Port
				mu.Unlock()
			}
			return conn, err
		}
		cc, err := grpc.Dial(a.target, grpc.WithTransportCredentials(a.creds),
			grpc.WithContextDialer(dial))
		if err != nil {
			c := begin(fmt.Sprintf("reconnect/%d", i), methodUnary, codes.OK)
			c.end(err, nil)
			calls = append(calls, c)
			continue
		}
		c := (&app{tc: testpb.NewTestServiceClient(cc)}).unary(ctx,
			fmt.Sprintf("reconnect/%d", i), codes.OK,
			&testpb.SimpleRequest{ResponseSize: 8, Payload: command("ok")})
		_ = cc.Close()
		mu.Lock()
		c.LocalPort = local
		mu.Unlock()
		calls = append(calls, c)
	}
	return calls
}

// scenarios in the order "all" runs them.
func (a *app) scenarios() []struct {
	name string
	run  func(context.Context) []call
} {
	return []struct {
		name string
		run  func(context.Context) []call
	}{
		{"unary_ok", a.unaryOK},
		{"empty", a.empty},
		{"unary_error", a.unaryError},
		{"server_stream", a.serverStream},
		{"client_stream", a.clientStream},
		{"bidi", a.bidi},
		{"deadline", a.deadline},
		{"cancel", a.canceled},
		{"panic", a.panicking},
		{"concurrent", a.concurrent},
		{"relay", a.relay},
		{"with_traceparent", a.withTraceparent},
		{"reconnect", a.reconnect},
	}
}

func writeJSON(w http.ResponseWriter, status int, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// run serves GET /run?scenario=NAME. The calls are made here, on the handler's goroutine, with
// the request's context: the HTTP SERVER span of /run is their parent.
func (a *app) run(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use GET"})
		return
	}
	name := r.URL.Query().Get("scenario")
	calls := []call{}
	var names []string
	for _, s := range a.scenarios() {
		names = append(names, s.name)
		if name == "all" || name == s.name {
			calls = append(calls, s.run(r.Context())...)
		}
	}
	if name != "all" && len(calls) == 0 {
		sort.Strings(names)
		writeJSON(w, http.StatusNotFound, map[string]string{
			"error": fmt.Sprintf("unknown scenario '%s': want all, %s", name,
				strings.Join(names, ", ")),
		})
		return
	}
	writeJSON(w, http.StatusOK, calls)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address of the HTTP API "+
		"(port 0 picks a free one)")
	target := flag.String("target", "", "HOST:PORT of the grpcmix server")
	useTLS := flag.Bool("tls", false, "call over TLS (the server's certificate is not verified: "+
		"grpcmix server -tls makes its own)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if *target == "" {
		log.Fatalf("client: -target HOST:PORT is required")
	}

	// One connection for every call, made once, as services hold theirs.
	creds := insecure.NewCredentials()
	if *useTLS {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})
	}
	conn, err := grpc.Dial(*target, grpc.WithTransportCredentials(creds))
	if err != nil {
		log.Fatalf("client: cannot set up a connection to '%s': %v", *target, err)
	}
	defer conn.Close()
	a := &app{tc: testpb.NewTestServiceClient(conn), target: *target, creds: creds}

	// The first call connects; made before the listening line, so no scenario pays for the
	// handshake and every scenario's calls go over an established connection.
	warm, cancel := context.WithTimeout(context.Background(), warmTimeout)
	_, err = a.tc.EmptyCall(warm, &testpb.Empty{}, grpc.WaitForReady(true))
	cancel()
	if err != nil {
		log.Fatalf("client: first call to '%s' failed: %v", *target, err)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("client: cannot listen on '%s': %v", *addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/run", a.run)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	// Printed after Listen, so whoever waits for this line can connect at once.
	fmt.Printf("listening on %s\n", ln.Addr())

	select {
	case err = <-done:
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = srv.Shutdown(shutdownCtx)
		cancel()
	}
	if err != nil && err != http.ErrServerClosed {
		log.Fatalf("client: %v", err)
	}
}

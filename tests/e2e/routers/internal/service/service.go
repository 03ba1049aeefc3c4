// Package service is what the router test services share: the flags, the listener and the
// "listening on" line the end-to-end harness waits for, graceful shutdown, the outgoing call of
// /call/{id} and the parsing of /fail/{code}'s status. The routing itself, middleware included,
// is each framework's own, in its main package. The code keeps to the Go 1.17 language and
// standard library, so every framework release in range builds with the oldest Go it allows.
package service

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

var (
	addr    = flag.String("addr", "127.0.0.1:0", "listen address (port 0 picks a free one)")
	backend = flag.String("backend", os.Getenv("BACKEND_URL"),
		"base URL /call/{id} sends GET BASE/x to (default $BACKEND_URL)")
	verbose = flag.Bool("v", false, "log every request from the timing middleware")
)

// Run parses the flags, listens, prints "listening on HOST:PORT" once connections can be made
// and serves H until SIGINT or SIGTERM, then shuts down gracefully (exit status 0).
func Run(name string, h http.Handler) {
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.SetPrefix(name + ": ")

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("cannot listen on '%s': %v", *addr, err)
	}
	srv := &http.Server{
		Handler:           h,
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
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("%v", err)
	}
}

// Timed is the body of every service's timing middleware: it runs NEXT and, with -v, logs the
// request, the route ROUTE says the framework matched (asked after NEXT, as OpenTelemetry's
// middleware for chi asks) and how long it took. It does nothing visible otherwise; it is there
// because route templates must survive middleware.
func Timed(r *http.Request, next func(), route func() string) {
	start := time.Now()
	next()
	if *verbose {
		log.Printf("%s %s route %q %s", r.Method, r.URL.Path, route(), time.Since(start))
	}
}

// Call makes one GET to the backend's /x with net/http's default client on the handler's own
// goroutine (a CLIENT span, child of the request's SERVER span, carrying its traceparent), and
// says what to answer: 200 and the backend's status, or 502 and why.
func Call(ctx context.Context, id string) (int, string) {
	if *backend == "" {
		return http.StatusBadGateway, "call " + id + ": no backend (-backend or BACKEND_URL)\n"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *backend+"/x", nil)
	if err != nil {
		return http.StatusBadGateway, fmt.Sprintf("call %s: %v\n", id, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return http.StatusBadGateway, fmt.Sprintf("call %s: %v\n", id, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return http.StatusOK, fmt.Sprintf("call %s: backend %d\n", id, resp.StatusCode)
}

// FailCode is /fail/{code}'s status: the parameter when it is 200..599, else 400.
func FailCode(param string) int {
	code, err := strconv.Atoi(param)
	if err != nil || code < 200 || code > 599 {
		return http.StatusBadRequest
	}
	return code
}

// Package service is what the fasthttp test services share: the flags, the listener and the
// "listening on" line the end-to-end harness waits for, shutdown on SIGTERM, the outgoing calls
// of /call/{id} (fasthttp.Client) and /hostcall/{id} (fasthttp.HostClient) and the parsing of
// /fail/{code}'s status. The serving and routing are each program's own: fasthttp.Server in
// fasthttp/, fiber's router in fiber2/ and fiber3/. The code keeps to the Go 1.17 language and
// standard library, so the oldest fasthttp in range builds with the oldest Go it allows.
package service

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

var (
	addr    = flag.String("addr", "127.0.0.1:0", "listen address (port 0 picks a free one)")
	backend = flag.String("backend", os.Getenv("BACKEND_URL"),
		"base URL /call/{id} and /hostcall/{id} send GET BASE/x to (default $BACKEND_URL)")
	verbose = flag.Bool("v", false, "log every request from the timing middleware")
)

// Run parses the flags, listens, prints "listening on HOST:PORT" once connections can be made
// and runs SERVE on the listener until SIGINT or SIGTERM, then calls SHUTDOWN (which must make
// SERVE return) and exits with status 0. SERVE is fasthttp's Server.Serve or fiber's
// App.Listener; both return nil after a shutdown.
func Run(name string, serve func(ln net.Listener) error, shutdown func() error) {
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.SetPrefix(name + ": ")

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("cannot listen on '%s': %v", *addr, err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- serve(ln) }()
	// Printed after Listen, so whoever waits for this line can connect at once.
	fmt.Printf("listening on %s\n", ln.Addr())

	select {
	case err = <-done:
		if err == nil {
			err = errors.New("server stopped")
		}
	case <-sig:
		stopped := make(chan error, 1)
		go func() { stopped <- shutdown() }()
		select {
		case err = <-stopped:
		case <-time.After(5 * time.Second):
			err = errors.New("shutdown took longer than 5 s")
		}
	}
	if err != nil {
		log.Fatalf("%v", err)
	}
}

// Verbose says whether -v was given, for the services' own logging.
func Verbose() bool { return *verbose }

// Timed is the body of every service's timing middleware: it runs NEXT and, with -v, logs the
// request, the route ROUTE says the framework matched (asked after NEXT) and how long it took.
// It does nothing visible otherwise; it is there because route templates must survive
// middleware.
func Timed(method, path string, next func() error, route func() string) error {
	start := time.Now()
	err := next()
	if *verbose {
		log.Printf("%s %s route %q err %v %s", method, path, route(), err, time.Since(start))
	}
	return err
}

var (
	client = &fasthttp.Client{
		Name:         "gospan-test",
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
	}
	hostOnce   sync.Once
	hostClient *fasthttp.HostClient
	hostErr    error
)

// backendHostClient is a fasthttp.HostClient for the backend's host and port, made on first
// use (the flags are parsed by then).
func backendHostClient() (*fasthttp.HostClient, error) {
	hostOnce.Do(func() {
		u, err := url.Parse(*backend)
		if err != nil {
			hostErr = err
			return
		}
		if u.Scheme != "http" || u.Host == "" {
			hostErr = fmt.Errorf("'%s' is not an http://HOST:PORT URL", *backend)
			return
		}
		h := u.Host
		if u.Port() == "" {
			h += ":80"
		}
		hostClient = &fasthttp.HostClient{
			Addr:         h,
			Name:         "gospan-test",
			ReadTimeout:  10 * time.Second,
			WriteTimeout: 10 * time.Second,
		}
	})
	return hostClient, hostErr
}

// Call makes one GET BACKEND/x on the handler's own goroutine, through the shared
// fasthttp.Client (viaHost false: (*Client).Do, which finds the HostClient for the URL's host)
// or a fasthttp.HostClient of the backend's host ((*HostClient).Do), and says what to answer:
// 200 and the backend's status, or 502 and why. fasthttp has no context to carry a trace;
// a CLIENT span's parent is whatever request the goroutine is serving.
func Call(id string, viaHost bool) (int, string) {
	what := "call"
	if viaHost {
		what = "hostcall"
	}
	if *backend == "" {
		return fasthttp.StatusBadGateway,
			what + " " + id + ": no backend (-backend or BACKEND_URL)\n"
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(*backend + "/x")
	req.Header.SetMethod(fasthttp.MethodGet)

	var err error
	if viaHost {
		var hc *fasthttp.HostClient
		if hc, err = backendHostClient(); err == nil {
			err = hc.Do(req, resp)
		}
	} else {
		err = client.Do(req, resp)
	}
	if err != nil {
		return fasthttp.StatusBadGateway, fmt.Sprintf("%s %s: %v\n", what, id, err)
	}
	return fasthttp.StatusOK, fmt.Sprintf("%s %s: backend %d\n", what, id, resp.StatusCode())
}

// FailCode is /fail/{code}'s status: the parameter when it is 200..599, else 400.
func FailCode(param string) int {
	code, err := strconv.Atoi(param)
	if err != nil || code < 200 || code > 599 {
		return fasthttp.StatusBadRequest
	}
	return code
}

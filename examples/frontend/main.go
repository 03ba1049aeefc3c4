// frontend is the upstream half of gospan's distributed-tracing example: each request it serves,
// routed by chi, calls the backend with net/http's client, on the handler's own goroutine or on
// one the handler starts, so gospan has client calls to link to the request that caused them.
// With -background it also calls the backend on a timer, outside any request. With -inventory
// it also looks the request's item up in the inventory example over gRPC, on the handler's
// goroutine.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"gospan.example/inventory/inventorypb"
)

const (
	backgroundEvery = 200 * time.Millisecond
	callTimeout     = 15 * time.Second
	maxBody         = 1 << 20
)

// call is one request to the backend as the frontend saw it; handlers answer with a list of them.
type call struct {
	Via    string          `json:"via"`
	URL    string          `json:"url"`
	Status int             `json:"status,omitempty"`
	Error  string          `json:"error,omitempty"`
	Body   json.RawMessage `json:"body,omitempty"` // the backend's answer when it is JSON
	Text   string          `json:"text,omitempty"` // else its text
}

func (c call) ok() bool { return c.Error == "" && c.Status == http.StatusOK }

// lookup is one GetItem call to the inventory as the frontend saw it.
type lookup struct {
	ID      string `json:"id"`
	Code    string `json:"code"` // the gRPC status code: "OK", "NotFound", ...
	Message string `json:"message,omitempty"`
	Item    *item  `json:"item,omitempty"`

	code codes.Code
}

type item struct {
	Name       string `json:"name"`
	Quantity   int32  `json:"quantity"`
	PriceCents int64  `json:"price_cents"`
}

type app struct {
	client      *http.Client
	backend     string // base URL, no trailing slash
	unreachable string // base URL where nothing listens

	inventory inventorypb.InventoryClient // nil without -inventory
}

// get calls URL and records the outcome; it never fails, the caller decides what is an error.
func (a *app) get(ctx context.Context, via, u string) call {
	return a.getWith(ctx, via, u, nil)
}

// getWith is get with extra request headers.
func (a *app) getWith(ctx context.Context, via, u string, h http.Header) call {
	c := call{Via: via, URL: u}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := a.client.Do(req)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	c.Status = resp.StatusCode
	if err != nil {
		c.Error = "reading the body: " + err.Error()
	}
	body = bytes.TrimSpace(body)
	if json.Valid(body) {
		c.Body = body
	} else {
		c.Text = string(body)
	}
	return c
}

// workURL names the backend call for ID; the query's key says how the call was made, so it
// survives gospan's redaction of query values in url.full ("?direct=REDACTED").
func (a *app) workURL(id, via string) string {
	return a.backend + "/work/" + url.PathEscape(id) + "?" + url.QueryEscape(via) + "=yes"
}

// spawn runs a call on a goroutine of its own and returns the channel its outcome arrives on.
func (a *app) spawn(ctx context.Context, id string) <-chan call {
	ch := make(chan call, 1)
	go func() { ch <- a.get(ctx, "spawn", a.workURL(id, "spawn")) }()
	return ch
}

// lookup asks the inventory for item ID, when the frontend has one (else nil); like get, it
// never fails.
func (a *app) lookup(ctx context.Context, id string) *lookup {
	if a.inventory == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	it, err := a.inventory.GetItem(ctx, &inventorypb.GetItemRequest{Id: id})
	st := status.Convert(err)
	l := &lookup{ID: id, Code: st.Code().String(), Message: st.Message(), code: st.Code()}
	if err == nil {
		l.Item = &item{
			Name:       it.GetName(),
			Quantity:   it.GetQuantity(),
			PriceCents: it.GetPriceCents(),
		}
	}
	return l
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// answer replies 200 when every call got a 200 from the backend, else 502 Bad Gateway. With an
// inventory lookup (not nil) it adds the lookup to the answer, and an unknown item is 404 Not
// Found unless a backend call failed; any other failed lookup is 502.
func answer(w http.ResponseWriter, l *lookup, calls ...call) {
	status := http.StatusOK
	for _, c := range calls {
		if !c.ok() {
			status = http.StatusBadGateway
		}
	}
	body := map[string]any{"service": "frontend", "calls": calls}
	if l != nil {
		body["inventory"] = l
		// A failed backend call has decided the status already.
		if status == http.StatusOK && l.code != codes.OK {
			status = http.StatusBadGateway
			if l.code == codes.NotFound {
				status = http.StatusNotFound
			}
		}
	}
	writeJSON(w, status, body)
}

// itemID is the request's {id}, decoded as net/http's ServeMux hands it over. chi routes on the
// escaped path when it differs from the decoded one (an id with an escaped "/") and then gives
// the parameter as it found it there, still escaped.
func itemID(r *http.Request) string {
	id := chi.URLParam(r, "id")
	if r.URL.RawPath == "" {
		return id
	}
	if s, err := url.PathUnescape(id); err == nil {
		return s
	}
	return id
}

// routes serves the frontend's requests with chi. /direct, /spawn and /both are each a
// sub-router mounted at the prefix, so chi assembles their route template ("/both/{id}") from
// the mount's pattern and the sub-router's own, as larger chi services do.
func (a *app) routes() http.Handler {
	r := chi.NewRouter()
	// GetHead answers HEAD with the GET route, as net/http's ServeMux does for a "GET /path"
	// pattern; Recoverer turns a handler's panic into a 500 and a stack on stderr.
	r.Use(middleware.GetHead, middleware.Recoverer)

	// The routes with an item id look the item up (with -inventory) on the handler's own
	// goroutine before calling the backend.
	r.Route("/direct", func(r chi.Router) {
		r.Get("/{id}", func(w http.ResponseWriter, r *http.Request) {
			id := itemID(r)
			l := a.lookup(r.Context(), id)
			answer(w, l, a.get(r.Context(), "direct", a.workURL(id, "direct")))
		})
	})
	r.Route("/spawn", func(r chi.Router) {
		r.Get("/{id}", func(w http.ResponseWriter, r *http.Request) {
			id := itemID(r)
			l := a.lookup(r.Context(), id)
			answer(w, l, <-a.spawn(r.Context(), id))
		})
	})
	r.Route("/both", func(r chi.Router) {
		r.Get("/{id}", func(w http.ResponseWriter, r *http.Request) {
			id := itemID(r)
			l := a.lookup(r.Context(), id)
			// The spawned call runs while the direct one does, on a second connection.
			ch := a.spawn(r.Context(), id)
			direct := a.get(r.Context(), "direct", a.workURL(id, "direct"))
			answer(w, l, direct, <-ch)
		})
	})
	r.Get("/credentials/{id}", func(w http.ResponseWriter, r *http.Request) {
		// Calls the backend with the credentials this request brought in every place a call
		// can hold them: user info in the URL (which net/http turns into an Authorization
		// header), query values, and the X-Api-Key and Cookie headers passed on. A tracer
		// must export none of them.
		q := r.URL.Query()
		u, err := url.Parse(a.backend)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		u.User = url.UserPassword(q.Get("user"), q.Get("password"))
		u.Path = "/work/" + itemID(r)
		u.RawQuery = url.Values{"token": {q.Get("token")}, "user": {q.Get("user")}}.Encode()
		h := http.Header{}
		for _, k := range []string{"X-Api-Key", "Cookie"} {
			if v := r.Header.Values(k); len(v) > 0 {
				h[k] = v
			}
		}
		answer(w, nil, a.getWith(r.Context(), "credentials", u.String(), h))
	})
	r.Get("/error", func(w http.ResponseWriter, r *http.Request) {
		answer(w, nil, a.get(r.Context(), "error", a.unreachable+"/nowhere"))
	})
	r.Get("/backend-fail", func(w http.ResponseWriter, r *http.Request) {
		answer(w, nil, a.get(r.Context(), "backend-fail", a.backend+"/fail"))
	})
	r.Get("/health", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	return r
}

// background calls the backend every backgroundEvery until ctx ends, outside any request.
func (a *app) background(ctx context.Context) {
	t := time.NewTicker(backgroundEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if c := a.get(ctx, "background", a.backend+"/work/bg"); !c.ok() && ctx.Err() == nil {
				log.Printf("frontend: background call to '%s' failed: status %d %s",
					c.URL, c.Status, c.Error)
			}
		}
	}
}

// closedPort returns a loopback address that was free a moment ago: connecting to it is refused.
func closedPort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address (port 0 picks a free one)")
	backend := flag.String("backend", "http://127.0.0.1:8081", "base URL of the backend")
	unreachable := flag.String("unreachable", "", "base URL where nothing listens, for /error "+
		"(default: a loopback port that was free at start)")
	bg := flag.Bool("background", false, "call the backend's /work/bg every 200 ms")
	inventory := flag.String("inventory", "", "HOST:PORT of the inventory gRPC service, "+
		"asked for the item of each /direct, /spawn and /both request (default: none)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	if u, err := url.Parse(*backend); err != nil || u.Host == "" ||
		(u.Scheme != "http" && u.Scheme != "https") {
		log.Fatalf("frontend: -backend '%s' is not an http(s) URL", *backend)
	}
	if *unreachable == "" {
		a, err := closedPort()
		if err != nil {
			log.Fatalf("frontend: cannot find a closed loopback port: %v", err)
		}
		*unreachable = "http://" + a
	}

	// One client for every call, so connections to the backend are kept alive and reused. No
	// proxy: an HTTP_PROXY in the environment must not reroute the calls.
	a := &app{
		client: &http.Client{
			Timeout: callTimeout,
			Transport: &http.Transport{
				Proxy: nil,
				DialContext: (&net.Dialer{
					Timeout:   5 * time.Second,
					KeepAlive: 30 * time.Second,
				}).DialContext,
				MaxIdleConns:        256,
				MaxIdleConnsPerHost: 128,
				IdleConnTimeout:     90 * time.Second,
			},
		},
		backend:     strings.TrimRight(*backend, "/"),
		unreachable: strings.TrimRight(*unreachable, "/"),
	}
	if *inventory != "" {
		// One connection for every lookup; grpc.NewClient connects on the first call and
		// reconnects by itself, so the inventory may start after the frontend.
		conn, err := grpc.NewClient(*inventory,
			grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			log.Fatalf("frontend: cannot set up a gRPC connection to '%s': %v", *inventory, err)
		}
		defer conn.Close()
		a.inventory = inventorypb.NewInventoryClient(conn)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("frontend: cannot listen on '%s': %v", *addr, err)
	}
	srv := &http.Server{
		Handler:           a.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *bg {
		go a.background(ctx)
	}
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
		log.Fatalf("frontend: %v", err)
	}
}

// httpserver is the service gospan's demo and end-to-end tests trace: a small user/item API on
// Go 1.22 routing patterns, with handlers that are slow, block for seconds, recurse deep enough
// to grow their stack to megabytes, fail, panic, call another service with net/http's client, or
// answer from the mux itself (404, 405), so every kind of span gospan produces has a request that
// causes it.
package main

import (
	"context"
	"encoding/json"
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

const (
	// maxSlow bounds /slow, /sleep and /block so a typo in a test cannot hold a connection for
	// minutes.
	maxSlow = 10 * time.Second
	// maxDeep bounds /deep: 250000 frames of deep's take a goroutine stack of 128 MB, well
	// below the runtime's 1 GB limit.
	maxDeep = 250000
)

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// writeUser answers with user ID. It calls writeJSON last, so a span of writeJSON here is one of
// a call made in tail position (make bench measures it); noinline keeps it a call of its own,
// as a bigger function would be.
//
//go:noinline
func writeUser(w http.ResponseWriter, id string) error {
	return writeJSON(w, http.StatusOK, map[string]string{"id": id, "name": "user " + id})
}

// logWrite reports an answer that could not be written, which is the client's going away.
func logWrite(r *http.Request, err error) {
	log.Printf("httpserver: %s %s: writing the answer: %v", r.Method, r.URL.Path, err)
}

// readBody drains the request body so the connection stays reusable, and reports its size.
func readBody(r *http.Request) int64 {
	n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	return n
}

// deep recurses N levels and returns 0+1+...+N. Each frame keeps an array alive across the
// recursive call, so a deep call makes the goroutine's stack grow again and again, each time
// through runtime.morestack copying the whole stack to a new one twice the size.
//
//go:noinline
func deep(n int) uint64 {
	var frame [32]uint64
	for i := range frame {
		frame[i] = uint64(n + i)
	}
	if n == 0 {
		return 0
	}
	sum := deep(n - 1)
	// frame[n%32] - n%32 is n: read back after the call, so the array must survive it.
	return sum + frame[n%32] - uint64(n%32)
}

// msDuration reads V as milliseconds, up to maxSlow; false, with a 400 answered, when it is not
// a non-negative integer.
func msDuration(w http.ResponseWriter, v string) (time.Duration, bool) {
	ms, err := strconv.Atoi(v)
	if err != nil || ms < 0 {
		http.Error(w, "ms must be a non-negative integer", http.StatusBadRequest)
		return 0, false
	}
	return min(time.Duration(ms)*time.Millisecond, maxSlow), true
}

func routes() *http.ServeMux {
	mux := http.NewServeMux()

	mux.HandleFunc("GET /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		if err := writeUser(w, r.PathValue("id")); err != nil {
			logWrite(r, err)
		}
	})
	mux.HandleFunc("POST /users", func(w http.ResponseWriter, r *http.Request) {
		n := readBody(r)
		if err := writeJSON(w, http.StatusCreated, map[string]any{"created": true, "bytes": n}); err != nil {
			logWrite(r, err)
		}
	})
	mux.HandleFunc("PUT /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		n := readBody(r)
		if err := writeJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "replaced": true, "bytes": n}); err != nil {
			logWrite(r, err)
		}
	})
	mux.HandleFunc("PATCH /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		n := readBody(r)
		if err := writeJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "updated": true, "bytes": n}); err != nil {
			logWrite(r, err)
		}
	})
	mux.HandleFunc("DELETE /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /items/{path...}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "item %s\n", r.PathValue("path"))
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		d := 100 * time.Millisecond
		if v := r.URL.Query().Get("ms"); v != "" {
			var ok bool
			if d, ok = msDuration(w, v); !ok {
				return
			}
		}
		time.Sleep(d)
		fmt.Fprintf(w, "slept %d ms\n", d.Milliseconds())
	})
	mux.HandleFunc("GET /sleep/{ms}", func(w http.ResponseWriter, r *http.Request) {
		d, ok := msDuration(w, r.PathValue("ms"))
		if !ok {
			return
		}
		time.Sleep(d)
		fmt.Fprintf(w, "slept %d ms\n", d.Milliseconds())
	})
	mux.HandleFunc("GET /block/{ms}", func(w http.ResponseWriter, r *http.Request) {
		// Parked on a channel receive rather than in time.Sleep: another goroutine, started
		// by the timer, wakes the handler.
		d, ok := msDuration(w, r.PathValue("ms"))
		if !ok {
			return
		}
		done := make(chan struct{})
		time.AfterFunc(d, func() { close(done) })
		<-done
		fmt.Fprintf(w, "blocked %d ms\n", d.Milliseconds())
	})
	mux.HandleFunc("GET /deep/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil || n < 0 || n > maxDeep {
			http.Error(w, fmt.Sprintf("n must be 0..%d", maxDeep), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "depth %d sum %d\n", n, deep(n))
	})
	mux.HandleFunc("GET /fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "this handler always fails", http.StatusInternalServerError)
	})
	mux.HandleFunc("GET /status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.PathValue("code"))
		if err != nil || code < 200 || code > 599 {
			http.Error(w, "code must be 200..599", http.StatusBadRequest)
			return
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "status %d\n", code)
	})
	mux.HandleFunc("GET /panic", func(w http.ResponseWriter, r *http.Request) {
		// net/http recovers this, logs it and closes the connection without a response.
		panic("httpserver: /panic was requested")
	})
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		// A secret in a response header: the session the query names comes back as a cookie.
		http.SetCookie(w, &http.Cookie{Name: "session", Value: r.URL.Query().Get("session"),
			Path: "/", HttpOnly: true})
		fmt.Fprintln(w, "logged in")
	})
	mux.HandleFunc("GET /call", func(w http.ResponseWriter, r *http.Request) {
		// One outgoing call with net/http's default client, answered with what it returned:
		// the call gets a CLIENT span, and the request carries its traceparent.
		resp, err := http.Get(r.URL.Query().Get("to"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "httpserver: try /users/42, /items/a/b, /slow?ms=200, /sleep/200, /block/200, /deep/1000, /fail, /panic, /call?to=URL, /echo/anything")
	})
	// The catch-all echo lives under /echo/ rather than at "/": a pattern matching every path
	// would leave the mux nothing to answer 404 or 405 for, and those spans carry no route.
	mux.HandleFunc("/echo/", func(w http.ResponseWriter, r *http.Request) {
		readBody(r)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "%s %s\n", r.Method, r.URL.Path)
	})
	return mux
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address (port 0 picks a free one)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("httpserver: cannot listen on '%s': %v", *addr, err)
	}
	srv := &http.Server{
		Handler:           routes(),
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
		log.Fatalf("httpserver: %v", err)
	}
}

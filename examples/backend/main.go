// backend is the downstream half of gospan's distributed-tracing example: the frontend calls it
// over HTTP. It answers with the trace context headers it received, so a test can see what
// gospan injected into the frontend's outgoing requests without reading any span.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// maxSlow bounds /slow so a typo in a test cannot hold a connection for minutes.
const maxSlow = 10 * time.Second

// work is what GET /work/{id} answers.
type work struct {
	Service     string `json:"service"`
	ID          string `json:"id"`
	Traceparent string `json:"traceparent"`
	Tracestate  string `json:"tracestate"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func routes() *http.ServeMux {
	mux := http.NewServeMux()

	mux.HandleFunc("GET /work/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, work{
			Service:     "backend",
			ID:          r.PathValue("id"),
			Traceparent: r.Header.Get("Traceparent"),
			Tracestate:  r.Header.Get("Tracestate"),
		})
	})
	mux.HandleFunc("GET /fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "backend: this handler always fails", http.StatusInternalServerError)
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		d := 100 * time.Millisecond
		if v := r.URL.Query().Get("ms"); v != "" {
			ms, err := strconv.Atoi(v)
			if err != nil || ms < 0 {
				http.Error(w, "ms must be a non-negative integer", http.StatusBadRequest)
				return
			}
			d = min(time.Duration(ms)*time.Millisecond, maxSlow)
		}
		time.Sleep(d)
		fmt.Fprintf(w, "slept %d ms\n", d.Milliseconds())
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	return mux
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "listen address (port 0 picks a free one)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("backend: cannot listen on '%s': %v", *addr, err)
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
		log.Fatalf("backend: %v", err)
	}
}

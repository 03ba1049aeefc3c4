// otelsdk is examples/httpserver instrumented by hand with the OpenTelemetry Go SDK, the way the
// SDK's documentation shows it: the mux wrapped in otelhttp, a tracer provider with the batch
// span processor and the OTLP/HTTP protobuf exporter. It is the benchmark's third configuration
// (bench/run), the cost gospan is compared with. Same routes and server settings as
// examples/httpserver; the exporter is configured by the standard OTEL_* variables
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_BSP_*), like gospan.
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

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

const maxSlow = 10 * time.Second

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func readBody(r *http.Request) int64 {
	n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	return n
}

func routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"id": r.PathValue("id"), "name": "user " + r.PathValue("id")})
	})
	mux.HandleFunc("POST /users", func(w http.ResponseWriter, r *http.Request) {
		n := readBody(r)
		writeJSON(w, http.StatusCreated, map[string]any{"created": true, "bytes": n})
	})
	mux.HandleFunc("PUT /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		n := readBody(r)
		writeJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "replaced": true, "bytes": n})
	})
	mux.HandleFunc("PATCH /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		n := readBody(r)
		writeJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "updated": true, "bytes": n})
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
		panic("otelsdk: /panic was requested")
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "otelsdk: try /users/42, /items/a/b, /slow?ms=200, /fail, /panic, /echo/anything")
	})
	mux.HandleFunc("/echo/", func(w http.ResponseWriter, r *http.Request) {
		readBody(r)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "%s %s\n", r.Method, r.URL.Path)
	})
	return mux
}

// tracing installs the SDK: OTLP/HTTP protobuf exporter, batch span processor (OTEL_BSP_*
// defaults, as gospan's), always-on parent-based sampling, W3C trace context.
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
	addr := flag.String("addr", "127.0.0.1:8080", "listen address (port 0 picks a free one)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tp, err := tracing(ctx)
	if err != nil {
		log.Fatalf("otelsdk: cannot set up tracing: %v", err)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("otelsdk: cannot listen on '%s': %v", *addr, err)
	}
	srv := &http.Server{
		Handler:           otelhttp.NewHandler(routes(), "server"),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Printf("listening on %s\n", ln.Addr())

	select {
	case err = <-done:
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = srv.Shutdown(shutdownCtx)
		if terr := tp.Shutdown(shutdownCtx); terr != nil {
			log.Printf("otelsdk: flushing spans: %v", terr)
		}
		cancel()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("otelsdk: %v", err)
	}
}

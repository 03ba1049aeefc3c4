// dbmix makes database and cache calls on request, for the tests of gospan's tracing of them: a
// small net/http API whose handlers call PostgreSQL (lib/pq, and pgx with the pgx tag), Redis
// (go-redis, redis tag), SQLite (modernc.org/sqlite, sqlite tag) and MySQL (go-sql-driver/mysql,
// mysql tag), each on the handler's own goroutine with the request's context, so the client
// spans belong inside the HTTP SERVER span.
//
//	dbmix -addr 127.0.0.1:0 -pg postgres://... -redis HOST:PORT -sqlite PATH -mysql DSN
//	                        prints "listening on HOST:PORT"
//
// This file is the HTTP plumbing; each driver group lives in a file of its own (built with its
// tag) and adds its routes in init() through addRoutes. The code keeps to Go 1.17, the oldest Go
// build.sh builds the pq-only program with.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type config struct {
	pg     string // PostgreSQL URL
	redis  string // HOST:PORT
	sqlite string // database file
	mysql  string // go-sql-driver/mysql's data source name
}

// statusError is an error answered with a status other than 500.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

func badRequest(format string, args ...interface{}) error {
	return &statusError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// handler answers 200 with the text it returns, or the error's text with the error's status
// (500 for any error that is not a *statusError).
type handler func(r *http.Request) (string, error)

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := h(r)
	code := http.StatusOK
	if err != nil {
		code, body = http.StatusInternalServerError, err.Error()
		if se, ok := err.(*statusError); ok {
			code = se.code
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, body)
}

// A route group is set up once the flags are known; it returns a function that releases what
// it opened (nil when nothing).
type routeGroup func(mux *http.ServeMux, cfg *config) (func(), error)

var groups []routeGroup

func addRoutes(g routeGroup) { groups = append(groups, g) }

func main() {
	var cfg config
	addr := flag.String("addr", "127.0.0.1:0", "HTTP listen address")
	flag.StringVar(&cfg.pg, "pg", "",
		"PostgreSQL URL, e.g. postgres://user@127.0.0.1:5432/db?sslmode=disable")
	flag.StringVar(&cfg.redis, "redis", "", "Redis address, HOST:PORT")
	flag.StringVar(&cfg.sqlite, "sqlite", "", "SQLite database file")
	flag.StringVar(&cfg.mysql, "mysql", "",
		"MySQL data source name, e.g. user:password@tcp(127.0.0.1:3306)/db")
	flag.Parse()
	log.SetFlags(0)

	mux := http.NewServeMux()
	for _, g := range groups {
		release, err := g(mux, &cfg)
		if err != nil {
			log.Fatalf("dbmix: %v", err)
		}
		if release != nil {
			defer release()
		}
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("dbmix: cannot listen on '%s': %v", *addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

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
		log.Printf("dbmix: %v", err)
	}
}

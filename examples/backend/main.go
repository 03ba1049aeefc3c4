// backend is the downstream half of gospan's distributed-tracing example: the frontend calls it
// over HTTP. It answers with the trace context headers it received, so a test can see what
// gospan injected into the frontend's outgoing requests without reading any span. With -pg (and
// -redis) GET /work/{id} also reads item ID from PostgreSQL through a Redis cache (store.go), so
// a request's trace shows data store calls; without them it touches no data store. With -kafka
// (or KAFKA_BROKERS) each GET /work/{id} is also an order, published to a Kafka topic
// (orders.go), so the trace goes on through Kafka to the consumer (../consumer).
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
	"strings"
	"syscall"
	"time"
)

// maxSlow bounds /slow so a typo in a test cannot hold a connection for minutes.
const maxSlow = 10 * time.Second

// work is what GET /work/{id} answers. Item and From are there with -pg only: the item with
// that id (absent when there is none) and where it was read, "redis" or "postgresql". Order and
// Topic with -kafka only: the id of the order event published, and its topic.
type work struct {
	Service     string `json:"service"`
	ID          string `json:"id"`
	Traceparent string `json:"traceparent"`
	Tracestate  string `json:"tracestate"`
	Item        *item  `json:"item,omitempty"`
	From        string `json:"from,omitempty"`
	Order       string `json:"order,omitempty"`
	Topic       string `json:"topic,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// routes serves the API; ST is nil without -pg, ORD without -kafka.
func routes(st *store, ord *orders) *http.ServeMux {
	mux := http.NewServeMux()

	mux.HandleFunc("GET /work/{id}", func(w http.ResponseWriter, r *http.Request) {
		answer := work{
			Service:     "backend",
			ID:          r.PathValue("id"),
			Traceparent: r.Header.Get("Traceparent"),
			Tracestate:  r.Header.Get("Tracestate"),
		}
		if st != nil {
			var err error
			answer.Item, answer.From, err = st.item(r.Context(), answer.ID)
			if err != nil {
				log.Printf("backend: %v", err)
				http.Error(w, "backend: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		if ord != nil {
			var err error
			if answer.Order, err = ord.publish(r.Context(), answer.ID, answer.Item); err != nil {
				log.Printf("backend: %v", err)
				http.Error(w, "backend: "+err.Error(), http.StatusInternalServerError)
				return
			}
			answer.Topic = ord.topic
		}
		writeJSON(w, http.StatusOK, answer)
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
	pg := flag.String("pg", "", "PostgreSQL to read items from, a lib/pq connection string "+
		"(postgres://USER@HOST:PORT/DB?sslmode=disable); none: GET /work/{id} reads no item")
	redisAddr := flag.String("redis", "", "Redis HOST:PORT to cache items in (needs -pg)")
	ttl := flag.Duration("cache-ttl", 30*time.Second, "how long Redis keeps an item")
	brokers := flag.String("kafka", os.Getenv("KAFKA_BROKERS"), "Kafka brokers "+
		"(HOST:PORT,...) to publish an order event to per GET /work/{id} (default: "+
		"$KAFKA_BROKERS); none: no order is published")
	topic := flag.String("kafka-topic", "orders", "the topic of the order events, made "+
		"at start when missing")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	var st *store
	switch {
	case *redisAddr != "" && *pg == "":
		log.Fatalf("backend: -redis is a cache of the items in PostgreSQL: it needs -pg")
	case *ttl <= 0:
		log.Fatalf("backend: -cache-ttl %v is not a positive duration", *ttl)
	case *pg != "":
		var err error
		if st, err = openStore(*pg, *redisAddr, *ttl); err != nil {
			log.Fatalf("backend: %v", err)
		}
		defer st.close()
		if *redisAddr != "" {
			log.Printf("backend: items in PostgreSQL, cached in Redis at '%s' for %v",
				*redisAddr, *ttl)
		} else {
			log.Printf("backend: items in PostgreSQL, no cache")
		}
	}

	var ord *orders
	if b := splitBrokers(*brokers); len(b) > 0 {
		var err error
		if ord, err = openOrders(b, *topic); err != nil {
			log.Fatalf("backend: %v", err)
		}
		defer ord.close()
		log.Printf("backend: an order event per GET /work/{id} to the topic '%s' on Kafka at "+
			"'%s'", *topic, strings.Join(b, ","))
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("backend: cannot listen on '%s': %v", *addr, err)
	}
	srv := &http.Server{
		Handler:           routes(st, ord),
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

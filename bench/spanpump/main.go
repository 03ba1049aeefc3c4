// spanpump drives net/http's server as fast as it can, or at a set rate, without sockets: an
// http.Server serves connections that are in-memory pipes, each fed keep-alive GET requests by a
// writer goroutine while a reader goroutine drains the answers. Every request is one call of
// net/http.serverHandler.ServeHTTP, so a tracer attached to this process sees one span per
// request, at rates no socket-bound service on the same machine reaches. gospan's synthetic
// exporter test (bench/run) uses it.
//
//	spanpump -conns 64 -rate 10000 -duration 10s [-wait]
//
// Prints "listening on pipe" when serving, one "pump: ..." line per second, and a final
// "pump: served N requests in S s: R/s" line counting from the start of traffic. With -wait,
// traffic starts at SIGUSR1, so a tracer can attach to an idle process first, and after the run
// the pump answers what was already sent, prints "pump: drained: N requests in all" and stays
// idle until SIGTERM, so the tracer can finish exporting before its target exits.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// pipeListener hands out the server ends of in-memory connections.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// batch is how many requests a writer sends per Write: fewer handoffs between goroutines.
const batch = 16

func main() {
	conns := flag.Int("conns", 64, "connections (each with its own writer and reader)")
	rate := flag.Float64("rate", 0, "requests per second in all, 0: as fast as possible")
	duration := flag.Duration("duration", 10*time.Second, "how long to run, 0: until SIGTERM")
	wait := flag.Bool("wait", false, "start sending at SIGUSR1")
	flag.Parse()

	var served atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Length", "3")
		_, _ = io.WriteString(w, "ok\n")
	})
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(ln) }()

	req := []byte("GET /pump HTTP/1.1\r\nHost: pump\r\nUser-Agent: spanpump\r\n\r\n")
	var burst []byte
	for i := 0; i < batch; i++ {
		burst = append(burst, req...)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	if *wait {
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		fmt.Println("listening on pipe")
		select {
		case <-usr1:
		case <-sig:
			return
		}
	}
	stop := make(chan struct{})
	start := time.Now()
	perConn := *rate / float64(*conns)
	for i := 0; i < *conns; i++ {
		client, server := net.Pipe()
		ln.conns <- server
		go func() { _, _ = io.Copy(io.Discard, bufio.NewReaderSize(client, 64<<10)) }()
		go func() {
			sent := 0.0
			for {
				select {
				case <-stop:
					client.Close()
					return
				default:
				}
				if perConn > 0 {
					// Paced: never ahead of the schedule, catch up in bursts when behind.
					due := perConn * time.Since(start).Seconds()
					if sent+batch > due {
						time.Sleep(time.Duration((sent + batch - due) / perConn * 1e9))
						continue
					}
				}
				if _, err := client.Write(burst); err != nil {
					if !errors.Is(err, io.ErrClosedPipe) {
						fmt.Fprintf(os.Stderr, "pump: write: %v\n", err)
					}
					return
				}
				sent += batch
			}
		}()
	}
	if !*wait {
		fmt.Println("listening on pipe")
	}
	var end <-chan time.Time
	if *duration > 0 {
		end = time.After(*duration)
	}
	tick := time.NewTicker(time.Second)
	last, lastT := int64(0), start
loop:
	for {
		select {
		case <-sig:
			break loop
		case <-end:
			break loop
		case now := <-tick.C:
			n := served.Load()
			fmt.Printf("pump: t=%.0f s served %d, %.0f/s\n", now.Sub(start).Seconds(), n,
				float64(n-last)/now.Sub(lastT).Seconds())
			last, lastT = n, now
		}
	}
	n, el := served.Load(), time.Since(start).Seconds()
	close(stop)
	fmt.Printf("pump: served %d requests in %.3f s: %.0f/s\n", n, el, float64(n)/el)
	if !*wait {
		return
	}
	// Stay alive, idle, until SIGTERM: a tracer attached with --pid keeps running to export
	// what it captured. The requests already written are answered first.
	for prev := int64(-1); prev != served.Load(); time.Sleep(100 * time.Millisecond) {
		prev = served.Load()
	}
	fmt.Printf("pump: drained: %d requests in all\n", served.Load())
	<-sig
}

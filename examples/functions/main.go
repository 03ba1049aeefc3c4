// functions is the service gospan's function-span tests trace (--functions): ordinary Go
// functions that nest, recurse, run on many goroutines at once, block or burn CPU, called from
// HTTP handlers (so they sit under SERVER spans) and from a background loop (so they start traces
// of their own). The probed functions are marked //go:noinline so that they keep a body of their
// own; double is left to the inliner on purpose, for the "inlined" message.
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
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Config is held by value in Store: a path like "s.cfg.Limit" reads through it.
type Config struct {
	Limit   int
	Ratio   float64
	Verbose bool
}

type Store struct {
	name string
	cfg  Config
	mu   sync.Mutex
	data map[string]string
	hits int64
}

type Customer struct {
	Name string
	Tier int32
}

type Order struct {
	ID       int64
	Customer *Customer
	Express  bool
}

// Get looks a key up: a method with a pointer receiver and a string argument.
//
//go:noinline
func (s *Store) Get(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits++
	v, ok := s.data[key]
	return v, ok
}

// process is the top of a small call tree: validate, then fib, then the store.
//
//go:noinline
func process(user string, n int, ok bool, ratio float64, level int8) int {
	if !validate(n) {
		return -1
	}
	r := fib(n)
	if ok {
		store.Get(user)
	}
	return r + int(ratio) + int(level)
}

//go:noinline
func validate(n int) bool {
	return n >= 0 && n < 40
}

// fib recurses: fib(n) makes 2 calls of fib for n >= 2.
//
//go:noinline
func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

// spin burns the CPU for ms milliseconds: its on-CPU time is its wall time.
//
//go:noinline
func spin(ms int) int {
	deadline := time.Now().Add(time.Duration(ms) * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		for i := 0; i < 1000; i++ {
			x += i ^ x
		}
	}
	return x
}

// sleepFor blocks for ms milliseconds: almost none of its wall time is on a CPU.
//
//go:noinline
func sleepFor(ms int) {
	time.Sleep(time.Duration(ms) * time.Millisecond)
}

// handleOrder reads through pointers: "o.ID", "o.Customer.Name", "o.Customer.Tier".
//
//go:noinline
func handleOrder(o *Order) int64 {
	if o.Express {
		return o.ID * 2
	}
	return o.ID
}

// double is small enough for the inliner: it has no body of its own to probe.
func double(x int) int {
	if x > 1000 {
		x %= 1000
	}
	return x * 2
}

// tick is what the background loop calls: each call is the root of a trace of its own.
//
//go:noinline
func tick(i int) int {
	store.Get("tick")
	return double(i) + fib(3)
}

// render is respond's last call: respond returns at once after it, so render's end is found in
// respond's callers. It sleeps ms milliseconds, then calls fib (nested in its span); a negative n
// panics through respond.
//
//go:noinline
func render(n, ms int) string {
	if n < 0 {
		panic("render: negative n")
	}
	time.Sleep(time.Duration(ms) * time.Millisecond)
	return strconv.Itoa(fib(n))
}

//go:noinline
func respond(n, ms int) string {
	return render(n, ms)
}

// safeRespond recovers what respond panics with: the goroutine goes on, at the same depth.
//
//go:noinline
func safeRespond(n, ms int) string {
	// A deferred function of no arguments is called directly, where a closure (or one with
	// arguments, which Go wraps in a closure) is called through a register.
	defer recoverQuietly()
	return respond(n, ms)
}

var recovered atomic.Int64

func recoverQuietly() {
	if recover() != nil {
		recovered.Add(1)
	}
}

// countdown calls itself last, n times, then render: every call returns at once after the
// next.
//
//go:noinline
func countdown(n, ms int) string {
	if n == 0 {
		return render(3, ms)
	}
	return countdown(n-1, ms)
}

// holdThen waits, then calls render last.
//
//go:noinline
func holdThen(ms int) string {
	time.Sleep(time.Duration(ms) * time.Millisecond)
	return render(2, 0)
}

// writeLast answers for a handler that calls it last, as most handlers end: the handler is
// called through a func value, from places gospan cannot all find, so this end stays where the
// kernel single-steps it.
//
//go:noinline
func writeLast(w http.ResponseWriter, n int) {
	fmt.Fprintf(w, "%d\n", fib(n))
}

var store = &Store{name: "main-store", cfg: Config{Limit: 42, Ratio: 0.5, Verbose: true},
	data: map[string]string{"alice": "admin", "tick": "tock"}}

func intParam(r *http.Request, name string, def int) int {
	if v, err := strconv.Atoi(r.URL.Query().Get(name)); err == nil {
		return v
	}
	return def
}

func routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /process", func(w http.ResponseWriter, r *http.Request) {
		user := r.URL.Query().Get("user")
		res := process(user, intParam(r, "n", 5), r.URL.Query().Get("ok") == "true", 2.5, -3)
		fmt.Fprintf(w, "%d\n", res)
	})
	mux.HandleFunc("GET /spin", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%d\n", spin(intParam(r, "ms", 100)))
	})
	mux.HandleFunc("GET /sleep", func(w http.ResponseWriter, r *http.Request) {
		sleepFor(intParam(r, "ms", 100))
		fmt.Fprintln(w, "slept")
	})
	mux.HandleFunc("GET /order", func(w http.ResponseWriter, r *http.Request) {
		o := &Order{ID: int64(intParam(r, "id", 7)), Express: true,
			Customer: &Customer{Name: r.URL.Query().Get("name"), Tier: int32(intParam(r, "tier", 1))}}
		fmt.Fprintf(w, "%d\n", handleOrder(o))
	})
	// /tail: respond (render last), then a pause before the answer, which render's span must
	// not include. /tailpanic: a render that panics, recovered in safeRespond, then one that
	// does not, on the same goroutine at the same depth. /countdown: render under n calls of
	// countdown that each return at once.
	mux.HandleFunc("GET /tail", func(w http.ResponseWriter, r *http.Request) {
		s := respond(intParam(r, "n", 5), intParam(r, "ms", 30))
		time.Sleep(time.Duration(intParam(r, "pause", 60)) * time.Millisecond)
		fmt.Fprintln(w, s)
	})
	mux.HandleFunc("GET /tailpanic", func(w http.ResponseWriter, r *http.Request) {
		a := safeRespond(-1, 0) + strconv.FormatInt(recovered.Load(), 10)
		time.Sleep(20 * time.Millisecond)
		b := safeRespond(intParam(r, "n", 4), intParam(r, "ms", 30))
		fmt.Fprintln(w, a, b)
	})
	mux.HandleFunc("GET /countdown", func(w http.ResponseWriter, r *http.Request) {
		s := countdown(intParam(r, "n", 3), intParam(r, "ms", 20))
		time.Sleep(time.Duration(intParam(r, "pause", 40)) * time.Millisecond)
		fmt.Fprintln(w, s)
	})
	mux.HandleFunc("GET /hold", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, holdThen(intParam(r, "ms", 100)))
	})
	mux.HandleFunc("GET /last", func(w http.ResponseWriter, r *http.Request) {
		writeLast(w, intParam(r, "n", 3))
	})
	// /fanout runs process on N goroutines at once and waits for them all.
	mux.HandleFunc("GET /fanout", func(w http.ResponseWriter, r *http.Request) {
		n := intParam(r, "g", 8)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				process(fmt.Sprintf("g%d", i), 4+i%3, false, 0, int8(i))
			}(i)
		}
		wg.Wait()
		fmt.Fprintln(w, n)
	})
	return mux
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address (port 0 picks a free one)")
	every := flag.Duration("tick", 200*time.Millisecond, "background loop period (0: no loop)")
	flag.Parse()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: routes(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *every > 0 {
		go func() {
			t := time.NewTicker(*every)
			defer t.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					tick(i)
				}
			}
		}()
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

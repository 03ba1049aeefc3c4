// dbload is the traced process of make bench's db part (bench/run): data store calls in a loop
// from a fixed number of goroutines, one kind of call per process, against a PostgreSQL and a
// Redis given by flags. It serves nothing: a binary with data store clients and no server, of
// which gospan traces only the data store calls.
//
//	dbload -kind sql|pgx|redis [-pg DSN] [-redis HOST:PORT] [-pool 16] [-arg]
//	       [-concurrency 1] [-duration 6s | -calls N] [-stdin]
//
// The kinds:
//
//	sql    database/sql with lib/pq: QueryContext of "SELECT id, name FROM items WHERE id = 42"
//	       (-arg: "... WHERE id = $1" with 42 as its argument), the row read with Scan
//	pgx    the same query through a pgxpool.Pool's Query (pgx v5's native API), the row read
//	redis  go-redis v9: GET of one key, the value checked
//
// At start it makes what the calls read (the items table and its rows, the key), then fills its
// connection pool (-pool connections, each used by a call) so that no connection is made, and no
// driver handshake sent, during a measured run; then it says "dbload: ready" on stderr. Then
// either one run with the flags given, or, with -stdin, one run per line read from stdin, each
// line holding that run's -concurrency and -duration or -calls (e.g. "-concurrency 16 -duration
// 3s"), until stdin ends: one process, and one tracer attached to it, for several runs.
//
// Each run prints one JSON line on stdout: calls, errors (and the first one), rows read, seconds,
// calls per second, latency percentiles in microseconds. Calls in flight when the time is up are
// waited for and counted, so the calls printed are every call the data store answered.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/lib/pq" // registers "postgres" with database/sql
	"github.com/redis/go-redis/v9"
)

const (
	queryLiteral = "SELECT id, name FROM items WHERE id = 42"
	queryArg     = "SELECT id, name FROM items WHERE id = $1"
	itemID       = 42
	itemRows     = 100 // rows in items: ids 1 to itemRows
	redisKey     = "dbload:key"
	redisValue   = "dbload-value-0123456789abcdef012" // 32 bytes
)

// caller makes one call of its kind; it returns the rows it read (1 for a GET that found the
// key).
type caller interface {
	call(ctx context.Context) (int, error)
	close()
}

type result struct {
	Kind        string  `json:"kind"`
	Calls       int64   `json:"calls"`
	Errors      int64   `json:"errors"`
	FirstError  string  `json:"first_error,omitempty"`
	Rows        int64   `json:"rows"`
	Concurrency int     `json:"concurrency"`
	Seconds     float64 `json:"seconds"`
	RPS         float64 `json:"rps"`
	P50         float64 `json:"p50_us"`
	P90         float64 `json:"p90_us"`
	P99         float64 `json:"p99_us"`
	P999        float64 `json:"p999_us"`
	Max         float64 `json:"max_us"`
}

// ---- the kinds -----------------------------------------------------------------------------

type sqlCaller struct {
	db   *sql.DB
	args []any
	text string
}

func newSQL(dsn string, pool int, arg bool) (caller, error) {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, err
	}
	// As many idle connections as open ones: the pool filled at start stays filled.
	db.SetMaxOpenConns(pool)
	db.SetMaxIdleConns(pool)
	c := &sqlCaller{db: db, text: queryLiteral}
	if arg {
		c.text, c.args = queryArg, []any{itemID}
	}
	return c, nil
}

func (c *sqlCaller) call(ctx context.Context) (int, error) {
	rows, err := c.db.QueryContext(ctx, c.text, c.args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

func (c *sqlCaller) close() { c.db.Close() }

type pgxCaller struct {
	pool *pgxpool.Pool
	args []any
	text string
}

func newPgx(dsn string, pool int, arg bool) (caller, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(pool)
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	c := &pgxCaller{pool: p, text: queryLiteral}
	if arg {
		c.text, c.args = queryArg, []any{itemID}
	}
	return c, nil
}

func (c *pgxCaller) call(ctx context.Context) (int, error) {
	rows, err := c.pool.Query(ctx, c.text, c.args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int32
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

func (c *pgxCaller) close() { c.pool.Close() }

type redisCaller struct{ rdb *redis.Client }

func newRedis(addr string, pool int) caller {
	return &redisCaller{rdb: redis.NewClient(&redis.Options{Addr: addr, PoolSize: pool})}
}

func (c *redisCaller) call(ctx context.Context) (int, error) {
	v, err := c.rdb.Get(ctx, redisKey).Result()
	if err != nil {
		return 0, err
	}
	if v != redisValue {
		return 1, fmt.Errorf("GET %s: got %q", redisKey, v)
	}
	return 1, nil
}

func (c *redisCaller) close() { c.rdb.Close() }

// ---- setup ---------------------------------------------------------------------------------

// setup makes what KIND's calls read: the items table and its rows (through database/sql or pgx,
// as the calls will), or the key.
func setup(ctx context.Context, kind string, c caller) error {
	stmts := []string{
		"CREATE TABLE IF NOT EXISTS items (id integer PRIMARY KEY, name text NOT NULL)",
		fmt.Sprintf("INSERT INTO items (id, name) SELECT i, 'item-' || i FROM "+
			"generate_series(1, %d) AS i ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name",
			itemRows),
	}
	switch c := c.(type) {
	case *sqlCaller:
		for _, s := range stmts {
			if _, err := c.db.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
	case *pgxCaller:
		for _, s := range stmts {
			if _, err := c.pool.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
	case *redisCaller:
		if err := c.rdb.Set(ctx, redisKey, redisValue, 0).Err(); err != nil {
			return fmt.Errorf("SET %s: %w", redisKey, err)
		}
	default:
		return fmt.Errorf("no setup for kind '%s'", kind)
	}
	return nil
}

// fill opens the pool's POOL connections: POOL goroutines making calls at once, several rounds,
// each call checked. Connections are made here, before anyone traces the process, and not
// during a run: a new connection costs a handshake (go-redis's HELLO, pgx's statement cache)
// that is no part of a call.
func fill(ctx context.Context, c caller, pool int) error {
	var wg sync.WaitGroup
	errs := make([]error, pool)
	for w := 0; w < pool; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				n, err := c.call(ctx)
				if err == nil && n != 1 {
					err = fmt.Errorf("%d rows, not 1", n)
				}
				if err != nil {
					errs[w] = err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ---- runs ----------------------------------------------------------------------------------

// percentile of the sorted latencies LAT, in microseconds.
func percentile(lat []time.Duration, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	i := int(p * float64(len(lat)-1))
	return float64(lat[i]) / 1e3
}

// run makes calls from CONCURRENCY goroutines for DURATION, or CALLS calls in all when CALLS > 0;
// RATE > 0 paces them to RATE calls per second in all (each goroutine its share, on a schedule:
// a late call is not made up for by a burst).
func run(kind string, c caller, concurrency int, duration time.Duration, calls int64, rate float64) result {
	var (
		started, failed, rows atomic.Int64
		firstErr              atomic.Value
		wg                    sync.WaitGroup
	)
	lats := make([][]time.Duration, concurrency)
	begin := time.Now()
	deadline := begin.Add(duration)
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ctx := context.Background()
			lat := make([]time.Duration, 0, 1<<14)
			var every time.Duration
			next := begin
			if rate > 0 {
				every = time.Duration(float64(concurrency) / rate * float64(time.Second))
				// the goroutines' schedules staggered over one interval
				next = begin.Add(every * time.Duration(w) / time.Duration(concurrency))
			}
			for {
				if every > 0 {
					if d := time.Until(next); d > 0 {
						time.Sleep(d)
					}
					next = next.Add(every)
					if now := time.Now(); next.Before(now) {
						next = now
					}
				}
				if calls > 0 {
					if started.Add(1) > calls {
						break
					}
				} else if !time.Now().Before(deadline) {
					break
				}
				t0 := time.Now()
				n, err := c.call(ctx)
				lat = append(lat, time.Since(t0))
				rows.Add(int64(n))
				if err == nil && n != 1 {
					err = fmt.Errorf("%d rows, not 1", n)
				}
				if err != nil && failed.Add(1) == 1 {
					firstErr.Store(err.Error())
				}
			}
			lats[w] = lat
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(begin)

	all := slices.Concat(lats...)
	slices.Sort(all)
	res := result{
		Kind: kind, Calls: int64(len(all)), Errors: failed.Load(), Rows: rows.Load(),
		Concurrency: concurrency, Seconds: elapsed.Seconds(),
		RPS: float64(len(all)) / elapsed.Seconds(),
		P50: percentile(all, 0.50), P90: percentile(all, 0.90), P99: percentile(all, 0.99),
		P999: percentile(all, 0.999), Max: percentile(all, 1),
	}
	if s, ok := firstErr.Load().(string); ok {
		res.FirstError = s
	}
	return res
}

// runFlags are a run's flags, on the command line or on a line of stdin (-stdin).
type runFlags struct {
	concurrency int
	duration    time.Duration
	calls       int64
	rate        float64
}

func (r *runFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&r.concurrency, "concurrency", 1, "goroutines making calls, each one after another")
	fs.DurationVar(&r.duration, "duration", 6*time.Second, "how long to make calls")
	fs.Int64Var(&r.calls, "calls", 0, "make this many calls in all, then stop (instead of -duration)")
	fs.Float64Var(&r.rate, "rate", 0, "calls per second in all, paced (0: as fast as they go)")
}

func (r *runFlags) check(pool int) error {
	if r.concurrency < 1 || r.concurrency > pool {
		return fmt.Errorf("-concurrency %d: want 1 to -pool (%d)", r.concurrency, pool)
	}
	if r.calls < 0 || (r.calls == 0 && r.duration <= 0) {
		return fmt.Errorf("want -calls N > 0 or -duration > 0")
	}
	return nil
}

func emit(out *json.Encoder, res result) {
	if err := out.Encode(res); err != nil {
		log.Fatalf("dbload: cannot write the result: %v", err)
	}
}

func main() {
	log.SetFlags(0)
	kind := flag.String("kind", "", "the calls to make: sql, pgx or redis")
	pg := flag.String("pg", "", "PostgreSQL's DSN (sql, pgx), e.g. postgres://user@127.0.0.1:5432/db?sslmode=disable")
	redisAddr := flag.String("redis", "", "Redis's HOST:PORT (redis)")
	pool := flag.Int("pool", 16, "connections in the pool, all opened at start; the highest -concurrency")
	arg := flag.Bool("arg", false, "sql, pgx: the id as the query's argument ($1), not a literal")
	fromStdin := flag.Bool("stdin", false, "one run per line of stdin (its -concurrency, -duration, -calls), until it ends")
	var rf runFlags
	rf.register(flag.CommandLine)
	flag.Parse()
	if flag.NArg() > 0 || *pool < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := rf.check(*pool); err != nil && !*fromStdin {
		log.Fatalf("dbload: %v", err)
	}

	var (
		c   caller
		err error
	)
	switch *kind {
	case "sql", "pgx":
		if *pg == "" {
			log.Fatalf("dbload: -kind %s needs -pg", *kind)
		}
		if *kind == "sql" {
			c, err = newSQL(*pg, *pool, *arg)
		} else {
			c, err = newPgx(*pg, *pool, *arg)
		}
	case "redis":
		if *redisAddr == "" {
			log.Fatalf("dbload: -kind redis needs -redis")
		}
		c = newRedis(*redisAddr, *pool)
	default:
		log.Fatalf("dbload: -kind '%s': want sql, pgx or redis", *kind)
	}
	if err != nil {
		log.Fatalf("dbload: cannot open the %s client: %v", *kind, err)
	}
	defer c.close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	err = setup(ctx, *kind, c)
	if err == nil {
		err = fill(ctx, c, *pool)
	}
	cancel()
	if err != nil {
		log.Fatalf("dbload: setup of %s failed: %v", *kind, err)
	}
	log.Printf("dbload: ready: pid %d, kind %s, %d connections open", os.Getpid(), *kind, *pool)

	out := json.NewEncoder(os.Stdout)
	if !*fromStdin {
		emit(out, run(*kind, c, rf.concurrency, rf.duration, rf.calls, rf.rate))
		return
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		var r runFlags
		r.register(fs)
		if err := fs.Parse(strings.Fields(line)); err != nil {
			log.Fatalf("dbload: bad run line %q: %v", line, err)
		}
		if err := r.check(*pool); err != nil {
			log.Fatalf("dbload: bad run line %q: %v", line, err)
		}
		emit(out, run(*kind, c, r.concurrency, r.duration, r.calls, r.rate))
	}
	if err := in.Err(); err != nil {
		log.Fatalf("dbload: reading stdin: %v", err)
	}
}

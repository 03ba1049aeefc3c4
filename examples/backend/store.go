// The backend's data layer, there with -pg: the items GET /work/{id} answers with live in
// PostgreSQL (database/sql with lib/pq) and, with -redis as well, are read through a Redis cache
// (go-redis v9): a GET, and on a miss a SELECT and a SET of the item for -cache-ttl. Each of those
// calls is one CLIENT span for gospan, the child of the request's SERVER span.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log"
	"strings"
	"sync"
	"time"

	_ "github.com/lib/pq" // registers "postgres" with database/sql
	"github.com/redis/go-redis/v9"
)

// setupTimeout bounds how long the backend waits at start for its data stores, which may come up
// after it (docker compose restarts it otherwise).
const setupTimeout = 30 * time.Second

// item is what the backend knows of an item of the shop; the inventory (../inventory) has the
// same ids and their stock.
type item struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// seed is written at every start (an upsert), so a database kept from an earlier run is right too.
var seed = []item{
	{"1", "espresso cup", "double-walled glass, 80 ml"},
	{"2", "milk jug", "stainless steel, 350 ml"},
	{"3", "burr grinder", "conical steel burrs, 40 settings"},
	{"4", "tamper", "58 mm, flat base"},
	{"5", "paper filters (100)", "size 02, unbleached"},
	{"6", "pour-over kettle", "gooseneck, 1 l"},
	{"7", "scale", "0.1 g steps, with a timer"},
	{"42", "towel", "microfibre, for the steam wand"},
}

const schema = `CREATE TABLE IF NOT EXISTS items (
	id text PRIMARY KEY,
	name text NOT NULL,
	description text NOT NULL
)`

const selectItem = "SELECT name, description FROM items WHERE id = $1"

// lockStripes: how many locks the item ids share (by hash), so that a burst of requests for one
// item reads PostgreSQL once, not once per request, with memory bounded whatever ids come.
const lockStripes = 64

type store struct {
	db  *sql.DB
	rdb *redis.Client // nil without -redis: every read goes to PostgreSQL
	ttl time.Duration

	// One reader of an id at a time: the first fills the cache, the others then hit it (no cache
	// stampede). It also makes the demo's counts of data store calls exact.
	locks [lockStripes]sync.Mutex
}

// openStore connects to PostgreSQL at DSN (and Redis at REDIS when not empty), creates the items
// table and seeds it, retrying for up to setupTimeout while the servers are not up yet.
func openStore(dsn, redisAddr string, ttl time.Duration) (*store, error) {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, fmt.Errorf("cannot open PostgreSQL '%s': %w", dsn, err)
	}
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	s := &store{db: db, ttl: ttl}
	if redisAddr != "" {
		s.rdb = redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 16})
	}

	deadline := time.Now().Add(setupTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = s.setup(ctx)
		cancel()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *store) setup(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("cannot create the items table: %w", err)
	}
	var values []string
	var args []any
	for i, it := range seed {
		values = append(values, fmt.Sprintf("($%d, $%d, $%d)", 3*i+1, 3*i+2, 3*i+3))
		args = append(args, it.ID, it.Name, it.Description)
	}
	upsert := "INSERT INTO items (id, name, description) VALUES " + strings.Join(values, ", ") +
		" ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, description = EXCLUDED.description"
	if _, err := s.db.ExecContext(ctx, upsert, args...); err != nil {
		return fmt.Errorf("cannot seed the items table: %w", err)
	}
	if s.rdb != nil {
		if err := s.rdb.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("cannot reach Redis at '%s': %w", s.rdb.Options().Addr, err)
		}
	}
	return nil
}

func (s *store) close() {
	s.db.Close()
	if s.rdb != nil {
		s.rdb.Close()
	}
}

func cacheKey(id string) string { return "item:" + id }

// item reads item ID: from the cache when it has it, else from PostgreSQL, then caching it.
// It returns where it was found ("redis" or "postgresql"), or a nil item for an unknown id.
func (s *store) item(ctx context.Context, id string) (*item, string, error) {
	h := fnv.New32a()
	h.Write([]byte(id))
	mu := &s.locks[h.Sum32()%lockStripes]
	mu.Lock()
	defer mu.Unlock()

	if s.rdb != nil {
		b, err := s.rdb.Get(ctx, cacheKey(id)).Bytes()
		if err == nil {
			var it item
			if err = json.Unmarshal(b, &it); err == nil {
				return &it, "redis", nil
			}
		}
		// A cache that fails is no reason to fail the request: PostgreSQL has the item.
		if err != nil && !errors.Is(err, redis.Nil) {
			log.Printf("backend: cannot read item '%s' from the cache: %v", id, err)
		}
	}

	it := item{ID: id}
	err := s.db.QueryRowContext(ctx, selectItem, id).Scan(&it.Name, &it.Description)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "postgresql", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("cannot read item '%s': %w", id, err)
	}
	if s.rdb != nil {
		b, _ := json.Marshal(it) // cannot fail: strings only
		if err := s.rdb.Set(ctx, cacheKey(id), b, s.ttl).Err(); err != nil {
			log.Printf("backend: cannot cache item '%s': %v", id, err)
		}
	}
	return &it, "postgresql", nil
}

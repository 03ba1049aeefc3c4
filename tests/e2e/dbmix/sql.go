// The /sql/ routes: the same database/sql calls through whichever driver ?driver= names (pq by
// default). The drivers register themselves from their own files (pq.go, pgx.go, sqlite.go), so
// a build without a driver's tag answers 400 for it.
//
// Values are written into the SQL text as literals, except where a placeholder is the point
// (/sql/prepared), so a tracer's recorded statement shows what a real one looks like.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sqlDriver is a database/sql driver as the /sql/ routes use it.
type sqlDriver struct {
	driver   string                   // the name it registers with database/sql
	dsn      func(cfg *config) string // its data source, "" when the flag it needs is missing
	flag     string                   // that flag, for the error saying it is missing
	param    string                   // its first placeholder: "$1" or "?"
	sleep    string                   // a statement taking 5 s on its server, "" for none
	selected string                   // filled in by registerSQL: the ?driver= name
}

var sqlDrivers = map[string]*sqlDriver{}

func registerSQL(name string, d *sqlDriver) {
	d.selected = name
	sqlDrivers[name] = d
}

// sqlDB is one driver's pool, and the id the last /sql/insert through it inserted, which
// /sql/update and /sql/delete default to.
type sqlDB struct {
	*sqlDriver
	db *sql.DB

	mu     sync.Mutex
	lastID int64
}

const selectItem = "SELECT id, name FROM items WHERE id = 42 AND name = 'widget'"

var setupStatements = []string{
	// CREATE IF NOT EXISTS and refilling, not DROP: a schema change would leave drivers that
	// cache prepared statements (pgx) with plans that fail once.
	"CREATE TABLE IF NOT EXISTS items (id integer PRIMARY KEY, name text, price numeric(10, 2))",
	"CREATE TABLE IF NOT EXISTS users (id integer, name text, password text)",
	"DELETE FROM items",
	"DELETE FROM users",
	"INSERT INTO items (id, name, price) VALUES " +
		"(42, 'widget', 9.99), (7, 'gadget', 19.50), (8, 'gizmo', 4.25)",
	"INSERT INTO users (id, name, password) VALUES " +
		"(1, 'admin', 'initial-pw'), (2, 'guest', 'guest-pw')",
}

func init() { addRoutes(sqlRoutes) }

func sqlRoutes(mux *http.ServeMux, cfg *config) (func(), error) {
	dbs := map[string]*sqlDB{}
	for name, d := range sqlDrivers {
		dsn := d.dsn(cfg)
		if dsn == "" {
			continue
		}
		db, err := sql.Open(d.driver, dsn)
		if err != nil {
			return nil, fmt.Errorf("cannot open driver '%s': %v", name, err)
		}
		// As many idle connections as open ones: a burst of requests then reuses its
		// connections instead of dialling new ones.
		db.SetMaxOpenConns(16)
		db.SetMaxIdleConns(16)
		dbs[name] = &sqlDB{sqlDriver: d, db: db}
	}
	routes := map[string]func(ctx context.Context, d *sqlDB, r *http.Request) (string, error){
		"/sql/setup":     sqlSetup,
		"/sql/select":    sqlSelect,
		"/sql/insert":    sqlInsert,
		"/sql/update":    sqlUpdate,
		"/sql/delete":    sqlDelete,
		"/sql/prepared":  sqlPrepared,
		"/sql/tx":        sqlTx,
		"/sql/error":     sqlError,
		"/sql/cancel":    sqlCancel,
		"/sql/password":  sqlPassword,
		"/sql/goroutine": sqlGoroutine,
		"/sql/run":       sqlRun,
	}
	for path, f := range routes {
		f := f
		mux.Handle(path, handler(func(r *http.Request) (string, error) {
			d, err := pickDB(dbs, r.URL.Query().Get("driver"))
			if err != nil {
				return "", err
			}
			return f(r.Context(), d, r)
		}))
	}
	return func() {
		for _, d := range dbs {
			d.db.Close()
		}
	}, nil
}

func pickDB(dbs map[string]*sqlDB, name string) (*sqlDB, error) {
	if name == "" {
		name = "pq"
	}
	if d, ok := dbs[name]; ok {
		return d, nil
	}
	if d, ok := sqlDrivers[name]; ok {
		return nil, badRequest("driver '%s' needs %s", name, d.flag)
	}
	var built []string
	for n := range sqlDrivers {
		built = append(built, n)
	}
	sort.Strings(built)
	return nil, badRequest("driver '%s' is not built in (built in: %s)", name,
		strings.Join(built, ", "))
}

func sqlSetup(ctx context.Context, d *sqlDB, r *http.Request) (string, error) {
	for _, s := range setupStatements {
		if _, err := d.db.ExecContext(ctx, s); err != nil {
			return "", err
		}
	}
	return "setup: items 3 rows, users 2 rows", nil
}

func sqlSelect(ctx context.Context, d *sqlDB, r *http.Request) (string, error) {
	rows, err := d.db.QueryContext(ctx, selectItem)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return "", err
		}
		got = append(got, fmt.Sprintf("%d %s", id, name))
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return describeRows(got), nil
}

// describeRows is "1 row: 42 widget", "2 rows: 42 widget; 7 gadget" or "0 rows".
func describeRows(rows []string) string {
	s := rowCount(int64(len(rows)))
	if len(rows) > 0 {
		s += ": " + strings.Join(rows, "; ")
	}
	return s
}

func rowCount(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

var random = struct {
	sync.Mutex
	*rand.Rand
}{Rand: rand.New(rand.NewSource(time.Now().UnixNano()))}

func randomID(base int64) int64 {
	random.Lock()
	defer random.Unlock()
	return base + random.Int63n(1000000)
}

// queryID is ?id=N, or DEF when absent (an error when DEF is 0: nothing to default to).
func queryID(r *http.Request, def int64) (int64, error) {
	s := r.URL.Query().Get("id")
	if s == "" {
		if def == 0 {
			return 0, badRequest("no ?id= given and nothing inserted yet")
		}
		return def, nil
	}
	id, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, badRequest("bad ?id=: %v", err)
	}
	return id, nil
}

func (d *sqlDB) last() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastID
}

// exec runs one statement and says how many rows it touched: "insert: 1 row (id 1234)".
func exec(ctx context.Context, d *sqlDB, what string, id int64, query string) (string, error) {
	res, err := d.db.ExecContext(ctx, query)
	if err != nil {
		return "", err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: %s (id %d)", what, rowCount(n), id), nil
}

func sqlInsert(ctx context.Context, d *sqlDB, r *http.Request) (string, error) {
	id, err := queryID(r, randomID(1000))
	if err != nil {
		return "", err
	}
	body, err := exec(ctx, d, "insert", id,
		fmt.Sprintf("INSERT INTO items (id, name, price) VALUES (%d, 'inserted', 1.25)", id))
	if err == nil {
		d.mu.Lock()
		d.lastID = id
		d.mu.Unlock()
	}
	return body, err
}

func sqlUpdate(ctx context.Context, d *sqlDB, r *http.Request) (string, error) {
	id, err := queryID(r, d.last())
	if err != nil {
		return "", err
	}
	return exec(ctx, d, "update", id, fmt.Sprintf("UPDATE items SET price = 2.50 WHERE id = %d", id))
}

func sqlDelete(ctx context.Context, d *sqlDB, r *http.Request) (string, error) {
	id, err := queryID(r, d.last())
	if err != nil {
		return "", err
	}
	return exec(ctx, d, "delete", id, fmt.Sprintf("DELETE FROM items WHERE id = %d", id))
}

func sqlPrepared(ctx context.Context, d *sqlDB, r *http.Request) (string, error) {
	n := 100
	if s := r.URL.Query().Get("n"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 || n > 100000 {
			return "", badRequest("bad ?n=: want 1 to 100000")
		}
	}
	stmt, err := d.db.PrepareContext(ctx, "SELECT name FROM items WHERE id = "+d.param)
	if err != nil {
		return "", err
	}
	defer stmt.Close()
	var name string
	for i := 0; i < n; i++ {
		if err := stmt.QueryRowContext(ctx, 42).Scan(&name); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("prepared: %d queries, name %s", n, name), nil
}

func sqlTx(ctx context.Context, d *sqlDB, r *http.Request) (string, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback() // a no-op after Commit
	_, err = tx.ExecContext(ctx, fmt.Sprintf(
		"INSERT INTO items (id, name, price) VALUES (%d, 'tx', 3.75)", randomID(2000000)))
	if err != nil {
		return "", err
	}
	var count int64
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM items").Scan(&count); err != nil {
		return "", err
	}
	if err := tx.Commit(); err != nil {
		return "", err
	}
	return fmt.Sprintf("tx: committed, items %d", count), nil
}

// drain runs QUERY and reads every row, for the calls that are expected to fail.
func drain(ctx context.Context, db *sql.DB, query string) error {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

func sqlError(ctx context.Context, d *sqlDB, r *http.Request) (string, error) {
	if err := drain(ctx, d.db, "SELEC 1"); err != nil {
		return "", err
	}
	return "error: the statement succeeded", nil
}

func sqlCancel(ctx context.Context, d *sqlDB, r *http.Request) (string, error) {
	if d.sleep == "" {
		return "", badRequest("cancel: driver '%s' has no sleep statement", d.selected)
	}
	ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := drain(ctx, d.db, d.sleep)
	if err == nil {
		return fmt.Sprintf("cancel: %q was not cancelled", d.sleep), nil
	}
	// Drivers word it their own way (pq passes the server's "canceling statement due to user
	// request"), so the context's own error follows when the driver's does not include it.
	if ctx.Err() != nil && !strings.Contains(err.Error(), ctx.Err().Error()) {
		err = fmt.Errorf("%v (%v)", err, ctx.Err())
	}
	return "", err
}

func sqlPassword(ctx context.Context, d *sqlDB, r *http.Request) (string, error) {
	res, err := d.db.ExecContext(ctx,
		"UPDATE users SET password = 'hunter2-SECRET-pw' WHERE name = 'admin'")
	if err != nil {
		return "", err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return "", err
	}
	return "password: " + rowCount(n), nil
}

// sqlGoroutine queries from a goroutine the handler starts and waits for, so the call's
// goroutine is not the request's but a child of it.
func sqlGoroutine(ctx context.Context, d *sqlDB, r *http.Request) (string, error) {
	var wg sync.WaitGroup
	var v int
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		err = d.db.QueryRowContext(ctx, "SELECT 1").Scan(&v)
	}()
	wg.Wait()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("goroutine: %d", v), nil
}

// sqlRun runs each ?q= statement in order, as given (no placeholders, no arguments), through
// ExecContext, or through QueryContext with every row read when ?query=1: any statement form a
// test wants to see traced, on whichever driver. The first failure ends it (500).
func sqlRun(ctx context.Context, d *sqlDB, r *http.Request) (string, error) {
	params := r.URL.Query()
	stmts := params["q"]
	if len(stmts) == 0 {
		return "", badRequest("run: no ?q= statement given")
	}
	for i, q := range stmts {
		var err error
		if params.Get("query") == "1" {
			err = drain(ctx, d.db, q)
		} else {
			_, err = d.db.ExecContext(ctx, q)
		}
		if err != nil {
			return "", fmt.Errorf("run: statement %d of %d: %v", i+1, len(stmts), err)
		}
	}
	if len(stmts) == 1 {
		return "run: 1 statement", nil
	}
	return fmt.Sprintf("run: %d statements", len(stmts)), nil
}

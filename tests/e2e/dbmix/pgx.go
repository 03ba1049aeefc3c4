//go:build pgx

// pgx v5, both ways a service uses it: its database/sql driver (?driver=pgx on the /sql/
// routes) and its native API through a pgxpool.Pool (the /pgx/ routes).
package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx" with database/sql
)

func init() {
	registerSQL("pgx", &sqlDriver{driver: "pgx", dsn: pgDSN, flag: "-pg", param: "$1",
		sleep: "SELECT pg_sleep(5)"})
	addRoutes(pgxRoutes)
}

func pgxRoutes(mux *http.ServeMux, cfg *config) (func(), error) {
	var pool *pgxpool.Pool
	if cfg.pg != "" {
		pc, err := pgxpool.ParseConfig(cfg.pg)
		if err != nil {
			return nil, fmt.Errorf("bad -pg for pgx: %v", err)
		}
		pc.MaxConns = 16
		// Connects on first use, like sql.Open, so the program starts before the server does.
		if pool, err = pgxpool.NewWithConfig(context.Background(), pc); err != nil {
			return nil, fmt.Errorf("cannot make a pgx pool: %v", err)
		}
	}
	routes := map[string]func(ctx context.Context, pool *pgxpool.Pool) (string, error){
		"/pgx/query":    pgxQuery,
		"/pgx/queryrow": pgxQueryRow,
		"/pgx/exec":     pgxExec,
		"/pgx/batch":    pgxBatch,
		"/pgx/error":    pgxError,
	}
	for path, f := range routes {
		f := f
		mux.Handle(path, handler(func(r *http.Request) (string, error) {
			if pool == nil {
				return "", badRequest("pgx needs -pg")
			}
			return f(r.Context(), pool)
		}))
	}
	return func() {
		if pool != nil {
			pool.Close()
		}
	}, nil
}

func pgxQuery(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	rows, err := pool.Query(ctx, selectItem)
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

func pgxQueryRow(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var name string
	if err := pool.QueryRow(ctx, "SELECT name FROM items WHERE id = $1", 42).Scan(&name); err != nil {
		return "", err
	}
	return "queryrow: " + name, nil
}

func pgxExec(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	tag, err := pool.Exec(ctx, "UPDATE items SET price = 9.99 WHERE id = 42")
	if err != nil {
		return "", err
	}
	return "exec: " + tag.String(), nil
}

// pgxBatch sends three statements in one round trip and reads each result in order.
func pgxBatch(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	b := &pgx.Batch{}
	b.Queue("SELECT name FROM items WHERE id = $1", 42)
	b.Queue("SELECT $1::int + 1", 41)
	b.Queue("UPDATE items SET price = 9.99 WHERE id = 42")
	br := pool.SendBatch(ctx, b)
	var name string
	var n int
	var tag pgconn.CommandTag
	err := br.QueryRow().Scan(&name)
	if err == nil {
		err = br.QueryRow().Scan(&n)
	}
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("batch: %s, %d, %s", name, n, tag), nil
}

func pgxError(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	if _, err := pool.Exec(ctx, "SELEC 1"); err != nil {
		return "", err
	}
	return "error: the statement succeeded", nil
}

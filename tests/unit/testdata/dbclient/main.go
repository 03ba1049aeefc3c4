// A pgx v5 and go-redis v9 client: gives the unit tests a real binary whose DWARF describes the
// pgx and go-redis structs gospan reads (pgx's Conn, ConnConfig with its pgconn.Config, Batch and
// QueuedQuery, and its database/sql driver's Conn; go-redis's baseClient, Options and baseCmd). The tests build it against several
// releases of each, in a copy of this directory whose go.mod they point at those releases (go
// mod edit -require), so the go.mod here names only the oldest. Given no arguments it exits.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
)

func main() {
	ctx := context.Background()
	if len(os.Args) > 1 {
		conn, err := pgx.Connect(ctx, os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		cfg := conn.Config()
		fmt.Println(cfg.Host, cfg.Port)
		if err := stdlib.OpenDB(*cfg).Ping(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		b := &pgx.Batch{}
		b.Queue("SELECT 1")
		b.Queue("SELECT 2")
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		_ = conn.Close(ctx)
	}
	if len(os.Args) > 2 {
		c := redis.NewClient(&redis.Options{Addr: os.Args[2]})
		cmd := c.Set(ctx, "gospan", "1", 0)
		fmt.Println(cmd.Args()...)
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Get(ctx, "gospan")
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		_ = c.Close()
	}
}

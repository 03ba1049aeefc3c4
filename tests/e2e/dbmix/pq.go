// lib/pq, always built: it is the one driver old Go releases still build (v1.10.9 with Go 1.17).
package main

import _ "github.com/lib/pq" // registers "postgres" with database/sql

func init() {
	registerSQL("pq", &sqlDriver{driver: "postgres", dsn: pgDSN, flag: "-pg", param: "$1",
		sleep: "SELECT pg_sleep(5)"})
}

func pgDSN(cfg *config) string { return cfg.pg }

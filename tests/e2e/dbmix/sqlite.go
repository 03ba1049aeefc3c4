//go:build sqlite

// modernc.org/sqlite (pure Go, no cgo) for ?driver=sqlite on the /sql/ routes.
package main

import _ "modernc.org/sqlite" // registers "sqlite" with database/sql

func init() {
	registerSQL("sqlite", &sqlDriver{driver: "sqlite", dsn: sqliteDSN, flag: "-sqlite", param: "?"})
}

// With up to 16 connections on one file, a writer finding it locked waits for it instead of
// failing at once with SQLITE_BUSY.
func sqliteDSN(cfg *config) string {
	if cfg.sqlite == "" {
		return ""
	}
	return "file:" + cfg.sqlite + "?_pragma=busy_timeout(5000)"
}

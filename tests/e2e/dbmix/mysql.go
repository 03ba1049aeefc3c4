//go:build mysql

// go-sql-driver/mysql for ?driver=mysql on the /sql/ routes, against MySQL or MariaDB. Without
// interpolateParams in the DSN (the driver's default) a call with arguments is prepared on the
// server, so /sql/prepared runs the server's own prepared statement.
package main

import _ "github.com/go-sql-driver/mysql" // registers "mysql" with database/sql

func init() {
	registerSQL("mysql", &sqlDriver{driver: "mysql", dsn: mysqlDSN, flag: "-mysql", param: "?",
		sleep: "SELECT SLEEP(5)"})
}

func mysqlDSN(cfg *config) string { return cfg.mysql }

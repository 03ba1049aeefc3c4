// A database/sql client with no driver and no net/http: gives the unit tests a Go binary whose
// DWARF describes database/sql.Stmt, built with several Go releases to check the table's
// database/sql.Stmt.query against. It prepares a statement only when given a driver name, which
// nothing registers, so it never reaches a database.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 3 {
		return
	}
	db, err := sql.Open(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer db.Close()
	st, err := db.PrepareContext(context.Background(), "SELECT 1")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = st.Close()
}

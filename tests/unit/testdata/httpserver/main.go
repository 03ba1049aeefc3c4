// A minimal net/http server: gives the unit tests a real Go binary with
// net/http.serverHandler.ServeHTTP, runtime.gopanic and buildinfo in it.
package main

import (
	"fmt"
	"net/http"
	"os"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	if len(os.Args) > 1 {
		_ = http.ListenAndServe(os.Args[1], nil)
	}
}

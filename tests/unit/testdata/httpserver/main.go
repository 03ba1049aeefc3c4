// A minimal net/http server that also makes calls: gives the unit tests a real Go binary with
// net/http.serverHandler.ServeHTTP, the client's (*Transport).roundTrip, runtime.gopanic and
// buildinfo in it.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	http.HandleFunc("/call", func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(r.URL.Query().Get("to"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(w, resp.Body)
	})
	if len(os.Args) > 1 {
		_ = http.ListenAndServe(os.Args[1], nil)
	}
}

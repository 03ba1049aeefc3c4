// mux serves the router test routes through gorilla/mux's own API (mux.NewRouter, HandleFunc,
// Methods, PathPrefix().Subrouter(), "{param}"), for the tests of gospan's http.route on
// gorilla/mux services. /orders/{oid}/... is a sub-router, with middleware of its own, so its
// template is put together from the prefix and the sub-router's path. gorilla/mux has no
// recovery middleware of its own (gorilla/handlers, another module, has one), so /panic and
// /panic-raw/{id} both panic out of (*mux.Router).ServeHTTP and net/http recovers. The route
// mux matched (CurrentRoute's path template) is in each handler's answer.
//
// Middleware is applied by wrapping each handler, not with Router.Use: Use came in v1.6.1, and
// this program builds with v1.6.0. The middleware have mux.MiddlewareFunc's shape, so wrapping
// them with Use instead changes nothing but where mux calls them (inside (*Router).Match).
//
//	mux -addr 127.0.0.1:0 [-backend URL] [-v]     prints "listening on HOST:PORT"
package main

import (
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"gospan.test/routers/internal/service"
)

func timing(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		service.Timed(r, func() { next.ServeHTTP(w, r) }, func() string { return route(r) })
	})
}

func ordersMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Group", "orders")
		next.ServeHTTP(w, r)
	})
}

// route says which route mux matched.
func route(r *http.Request) string {
	cur := mux.CurrentRoute(r)
	if cur == nil {
		return ""
	}
	tpl, err := cur.GetPathTemplate()
	if err != nil {
		return err.Error()
	}
	return tpl
}

func text(w http.ResponseWriter, code int, format string, args ...interface{}) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, format, args...)
}

// handle registers H for PATH on R behind the timing middleware.
func handle(r *mux.Router, path string, h http.HandlerFunc) *mux.Route {
	return r.Handle(path, timing(h))
}

func routes() *mux.Router {
	r := mux.NewRouter()
	handle(r, "/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		text(w, http.StatusOK, "user %s route %s\n", mux.Vars(r)["id"], route(r))
	}).Methods(http.MethodGet)

	orders := r.PathPrefix("/orders/{oid}").Subrouter()
	orders.Handle("/items/{iid}", timing(ordersMiddleware(http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			v := mux.Vars(r)
			text(w, http.StatusOK, "order %s item %s route %s\n", v["oid"], v["iid"], route(r))
		})))).Methods(http.MethodGet)

	handle(r, "/fail/{code}", func(w http.ResponseWriter, r *http.Request) {
		code := service.FailCode(mux.Vars(r)["code"])
		text(w, code, "fail %d\n", code)
	}).Methods(http.MethodPost)
	handle(r, "/panic", func(w http.ResponseWriter, r *http.Request) {
		panic("mux: /panic was requested")
	}).Methods(http.MethodGet)
	handle(r, "/panic-raw/{id}", func(w http.ResponseWriter, r *http.Request) {
		panic("mux: /panic-raw/" + mux.Vars(r)["id"] + " was requested")
	}).Methods(http.MethodGet)
	handle(r, "/call/{id}", func(w http.ResponseWriter, r *http.Request) {
		code, body := service.Call(r.Context(), mux.Vars(r)["id"])
		text(w, code, "%s", body)
	}).Methods(http.MethodGet)
	return r
}

func main() {
	service.Run("mux", routes())
}

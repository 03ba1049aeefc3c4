// chi serves the router test routes through chi's own API (chi.NewRouter, Use, Group, Route,
// "{param}"), for the tests of gospan's http.route on chi services. Every route passes the
// timing middleware; all but /panic-raw/{id} are in a Group with middleware.Recoverer, and
// /orders/{oid}/... is a sub-router mounted with Route, with middleware of its own, so its
// template is put together from the mount's pattern and the sub-router's. The route chi
// matched (RoutePattern()) is in each handler's answer, with the RoutePatterns it was joined
// from.
//
//	chi -addr 127.0.0.1:0 [-backend URL] [-v]     prints "listening on HOST:PORT"
package main

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"gospan.test/routers/internal/service"
)

func timing(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		service.Timed(r, func() { next.ServeHTTP(w, r) }, func() string {
			// The routing context is the one routing fills in below; nil only when this
			// Mux is not the one that made it.
			if rctx := chi.RouteContext(r.Context()); rctx != nil {
				return rctx.RoutePattern()
			}
			return ""
		})
	})
}

func ordersMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Group", "orders")
		next.ServeHTTP(w, r)
	})
}

// route says which route chi matched, and the patterns it joined it from.
func route(r *http.Request) string {
	rctx := chi.RouteContext(r.Context())
	return fmt.Sprintf("%s patterns %s", rctx.RoutePattern(), strings.Join(rctx.RoutePatterns, ","))
}

func text(w http.ResponseWriter, code int, format string, args ...interface{}) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, format, args...)
}

func routes() *chi.Mux {
	r := chi.NewRouter()
	r.Use(timing)

	r.Get("/panic-raw/{id}", func(w http.ResponseWriter, r *http.Request) {
		panic("chi: /panic-raw/" + chi.URLParam(r, "id") + " was requested")
	})

	r.Group(func(r chi.Router) {
		r.Use(middleware.Recoverer)
		r.Get("/users/{id}", func(w http.ResponseWriter, r *http.Request) {
			text(w, http.StatusOK, "user %s route %s\n", chi.URLParam(r, "id"), route(r))
		})
		r.Route("/orders/{oid}", func(r chi.Router) {
			r.Use(ordersMiddleware)
			r.Get("/items/{iid}", func(w http.ResponseWriter, r *http.Request) {
				text(w, http.StatusOK, "order %s item %s route %s\n", chi.URLParam(r, "oid"),
					chi.URLParam(r, "iid"), route(r))
			})
		})
		r.Post("/fail/{code}", func(w http.ResponseWriter, r *http.Request) {
			code := service.FailCode(chi.URLParam(r, "code"))
			text(w, code, "fail %d\n", code)
		})
		r.Get("/panic", func(w http.ResponseWriter, r *http.Request) {
			panic("chi: /panic was requested")
		})
		r.Get("/call/{id}", func(w http.ResponseWriter, r *http.Request) {
			code, body := service.Call(r.Context(), chi.URLParam(r, "id"))
			text(w, code, "%s", body)
		})
	})
	return r
}

func main() {
	service.Run("chi", routes())
}

// httprouter serves the router test routes through julienschmidt/httprouter's own API
// (httprouter.New, GET/POST, ":param", httprouter.Params), for the tests of gospan's http.route
// on httprouter services. httprouter has no groups or sub-routers: /orders/:oid/items/:iid is
// one route. Its PanicHandler answers /panic with 500; for /panic-raw/:id it panics again, so
// that the panic leaves (*httprouter.Router).ServeHTTP unrecovered and net/http recovers it, as
// in the other services. The route is in each handler's answer, put back from the path and the
// parameters as gospan does (httprouter keeps no template).
//
//	httprouter -addr 127.0.0.1:0 [-backend URL] [-v]     prints "listening on HOST:PORT"
package main

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"gospan.test/routers/internal/service"
)

func text(w http.ResponseWriter, code int, format string, args ...interface{}) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, format, args...)
}

// timed wraps H with the service's timing middleware, ROUTE being H's template.
func timed(route string, h httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		service.Timed(r, func() { h(w, r, ps) }, func() string { return route })
	}
}

func routes() *httprouter.Router {
	r := httprouter.New()
	r.GET("/users/:id", timed("/users/:id",
		func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
			text(w, http.StatusOK, "user %s route /users/:id\n", ps.ByName("id"))
		}))
	r.GET("/orders/:oid/items/:iid", timed("/orders/:oid/items/:iid",
		func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
			text(w, http.StatusOK, "order %s item %s route /orders/:oid/items/:iid\n",
				ps.ByName("oid"), ps.ByName("iid"))
		}))
	r.POST("/fail/:code", timed("/fail/:code",
		func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
			code := service.FailCode(ps.ByName("code"))
			text(w, code, "fail %d\n", code)
		}))
	r.GET("/panic", timed("/panic",
		func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
			panic("httprouter: /panic was requested")
		}))
	r.GET("/panic-raw/:id", timed("/panic-raw/:id",
		func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
			panic("httprouter: /panic-raw/" + ps.ByName("id") + " was requested")
		}))
	r.GET("/call/:id", timed("/call/:id",
		func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
			code, body := service.Call(r.Context(), ps.ByName("id"))
			text(w, code, "%s", body)
		}))
	r.PanicHandler = func(w http.ResponseWriter, r *http.Request, v interface{}) {
		if strings.HasPrefix(r.URL.Path, "/panic-raw/") {
			panic(v)
		}
		text(w, http.StatusInternalServerError, "recovered: %v\n", v)
	}
	return r
}

func main() {
	service.Run("httprouter", routes())
}

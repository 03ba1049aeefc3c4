// fasthttp serves the fasthttp test routes with a plain fasthttp.Server whose one handler
// switches on the path (fasthttp has no router), for the tests of gospan's SERVER and CLIENT
// spans on services that do not use net/http. The handler is wrapped in a timing middleware,
// as a plain fasthttp service wraps its RequestHandler.
//
// fasthttp recovers no panic: a handler that panics kills the whole process (the panic runs
// off the top of the connection's worker goroutine). So /panic recovers in the handler itself
// and answers 500, as a fasthttp service has to.
//
//	fasthttp -addr 127.0.0.1:0 [-backend URL] [-v]     prints "listening on HOST:PORT"
package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"gospan.test/fasthttp/internal/service"
)

// route is the pattern the handler matched, for -v and the X-Route header: what a route
// would be had fasthttp a router. "" for a 404 or 405.
func route(method, path string) (pattern string, params []string, allow string) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	switch {
	case len(parts) == 2 && parts[0] == "users":
		pattern, allow = "/users/{id}", fasthttp.MethodGet
	case len(parts) == 4 && parts[0] == "orders" && parts[2] == "items":
		pattern, allow, parts = "/orders/{oid}/items/{iid}", fasthttp.MethodGet,
			[]string{parts[0], parts[1], parts[3]}
	case len(parts) == 2 && parts[0] == "fail":
		pattern, allow = "/fail/{code}", fasthttp.MethodPost
	case len(parts) == 1 && parts[0] == "panic":
		pattern, allow = "/panic", fasthttp.MethodGet
	case len(parts) == 2 && parts[0] == "call":
		pattern, allow = "/call/{id}", fasthttp.MethodGet
	case len(parts) == 2 && parts[0] == "hostcall":
		pattern, allow = "/hostcall/{id}", fasthttp.MethodGet
	default:
		return "", nil, ""
	}
	if method != allow && !(method == fasthttp.MethodHead && allow == fasthttp.MethodGet) {
		return "", nil, allow
	}
	return pattern, parts[1:], ""
}

func handler(ctx *fasthttp.RequestCtx) {
	pattern, params, allow := route(string(ctx.Method()), string(ctx.Path()))
	switch pattern {
	case "":
		if allow != "" {
			// ctx.Error resets the headers first (v1.40.0 and later).
			ctx.Error("method not allowed\n", fasthttp.StatusMethodNotAllowed)
			ctx.Response.Header.Set("Allow", allow)
			return
		}
		ctx.Error("not found\n", fasthttp.StatusNotFound)
	case "/users/{id}":
		fmt.Fprintf(ctx, "user %s\n", params[0])
	case "/orders/{oid}/items/{iid}":
		ctx.Response.Header.Set("X-Group", "orders")
		fmt.Fprintf(ctx, "order %s item %s\n", params[0], params[1])
	case "/fail/{code}":
		code := service.FailCode(params[0])
		ctx.SetStatusCode(code)
		fmt.Fprintf(ctx, "fail %d\n", code)
	case "/panic":
		defer func() {
			if r := recover(); r != nil {
				ctx.Error(fmt.Sprintf("recovered: %v\n", r), fasthttp.StatusInternalServerError)
			}
		}()
		panic("fasthttp: /panic was requested")
	case "/call/{id}", "/hostcall/{id}":
		code, body := service.Call(params[0], pattern == "/hostcall/{id}")
		ctx.SetStatusCode(code)
		ctx.SetBodyString(body)
	}
}

func timing(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		method, path := string(ctx.Method()), string(ctx.Path())
		pattern, _, _ := route(method, path)
		_ = service.Timed(method, path, func() error { next(ctx); return nil },
			func() string { return pattern })
		// Set after the handler: ctx.Error (404, 405, the recovered panic) resets headers.
		ctx.Response.Header.Set("X-Route", pattern)
	}
}

func main() {
	srv := &fasthttp.Server{
		Handler:     timing(handler),
		Name:        "gospan-test",
		ReadTimeout: 10 * time.Second,
		IdleTimeout: 120 * time.Second,
	}
	service.Run("fasthttp", srv.Serve, srv.Shutdown)
}

// echo5 serves the router test routes through Echo v5's own API (echo.New, Use, Group,
// ":param"), for the tests of gospan's http.route on Echo services. Every route passes the
// timing middleware, and middleware.Recover, whose Skipper lets /panic-raw/:id through: Echo's
// Use middleware wraps every route, and from v5.3 a Group given middleware registers catch-all
// routes for its prefix, as Echo v4 does (so a group holding the whole API would leave no 404 or
// 405). The route Echo matched (c.Path()) is in each handler's answer and, as the timing
// middleware saw it, in the X-Route header.
//
//	echo5 -addr 127.0.0.1:0 [-backend URL] [-v]    prints "listening on HOST:PORT"
package main

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"gospan.test/routers/internal/service"
)

func timing(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		// Echo routes before it runs the Use middleware, so the route is known here.
		c.Response().Header().Set("X-Route", c.Path())
		var err error
		service.Timed(c.Request(), func() { err = next(c) }, c.Path)
		return err
	}
}

func ordersMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		c.Response().Header().Set("X-Group", "orders")
		return next(c)
	}
}

func routes() *echo.Echo {
	e := echo.New()
	e.Use(timing)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		Skipper: func(c *echo.Context) bool { return strings.HasPrefix(c.Path(), "/panic-raw/") },
	}))

	e.GET("/users/:id", func(c *echo.Context) error {
		return c.String(http.StatusOK, fmt.Sprintf("user %s route %s\n", c.Param("id"), c.Path()))
	})
	orders := e.Group("/orders/:oid", ordersMiddleware)
	orders.GET("/items/:iid", func(c *echo.Context) error {
		return c.String(http.StatusOK, fmt.Sprintf("order %s item %s route %s\n", c.Param("oid"),
			c.Param("iid"), c.Path()))
	})
	e.POST("/fail/:code", func(c *echo.Context) error {
		code := service.FailCode(c.Param("code"))
		return c.String(code, fmt.Sprintf("fail %d\n", code))
	})
	e.GET("/panic", func(c *echo.Context) error {
		panic("echo5: /panic was requested")
	})
	e.GET("/panic-raw/:id", func(c *echo.Context) error {
		panic("echo5: /panic-raw/" + c.Param("id") + " was requested")
	})
	e.GET("/call/:id", func(c *echo.Context) error {
		code, body := service.Call(c.Request().Context(), c.Param("id"))
		return c.String(code, body)
	})
	return e
}

func main() {
	service.Run("echo5", routes())
}

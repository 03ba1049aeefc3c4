// gin serves the router test routes through gin's own API (gin.New, Use, Group, ":param"), for
// the tests of gospan's http.route on gin services. Every route passes the timing middleware;
// all but /panic-raw/:id also gin.Recovery, which is on a group of its own so that a panic
// there leaves (*gin.Engine).ServeHTTP unrecovered. The route gin matched (c.FullPath()) is in
// each handler's answer and, as the timing middleware saw it, in the X-Route header.
//
//	gin -addr 127.0.0.1:0 [-backend URL] [-v]     prints "listening on HOST:PORT"
package main

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"gospan.test/routers/internal/service"
)

func timing(c *gin.Context) {
	// FullPath is set before the first handler runs: "" when nothing matched (404, 405).
	c.Header("X-Route", c.FullPath())
	service.Timed(c.Request, c.Next, c.FullPath)
}

func ordersMiddleware(c *gin.Context) {
	c.Header("X-Group", "orders")
	c.Next()
}

func routes() *gin.Engine {
	r := gin.New()
	// gin answers a path registered for other methods only with 404 unless told.
	r.HandleMethodNotAllowed = true
	r.Use(timing)

	r.GET("/panic-raw/:id", func(c *gin.Context) {
		panic("gin: /panic-raw/" + c.Param("id") + " was requested")
	})

	app := r.Group("", gin.Recovery())
	app.GET("/users/:id", func(c *gin.Context) {
		c.String(http.StatusOK, "user %s route %s\n", c.Param("id"), c.FullPath())
	})
	orders := app.Group("/orders/:oid", ordersMiddleware)
	orders.GET("/items/:iid", func(c *gin.Context) {
		c.String(http.StatusOK, "order %s item %s route %s\n", c.Param("oid"), c.Param("iid"),
			c.FullPath())
	})
	app.POST("/fail/:code", func(c *gin.Context) {
		code := service.FailCode(c.Param("code"))
		c.String(code, "fail %d\n", code)
	})
	app.GET("/panic", func(c *gin.Context) {
		panic("gin: /panic was requested")
	})
	app.GET("/call/:id", func(c *gin.Context) {
		code, body := service.Call(c.Request.Context(), c.Param("id"))
		c.String(code, "%s", body)
	})
	return r
}

func main() {
	gin.SetMode(gin.ReleaseMode)
	service.Run("gin", routes())
}

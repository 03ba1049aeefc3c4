// fiber2 serves the fasthttp test routes through Fiber v2's own API (fiber.New, Use, Group,
// ":param", the recover middleware), for the tests of gospan's SERVER spans and http.route
// on Fiber services. Every route passes the timing middleware and recover.New(); the route
// Fiber matched (c.Route().Path) is in each handler's answer and, as the timing middleware saw
// it after the chain, in the X-Route header.
//
//	fiber2 -addr 127.0.0.1:0 [-backend URL] [-v]     prints "listening on HOST:PORT"
package main

import (
	"fmt"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"gospan.test/fasthttp/internal/service"
)

func timing(c *fiber.Ctx) error {
	// c.Route() is this middleware's own route until c.Next() has run the rest of the chain;
	// after it, the last route Fiber matched (for a 404 or 405 still this middleware's).
	err := service.Timed(c.Method(), c.Path(), c.Next, func() string { return c.Route().Path })
	c.Set("X-Route", c.Route().Path)
	return err
}

func ordersMiddleware(c *fiber.Ctx) error {
	c.Set("X-Group", "orders")
	return c.Next()
}

func routes() *fiber.App {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(timing)
	app.Use(recover.New())

	app.Get("/users/:id", func(c *fiber.Ctx) error {
		return c.SendString(fmt.Sprintf("user %s route %s\n", c.Params("id"), c.Route().Path))
	})
	orders := app.Group("/orders", ordersMiddleware)
	orders.Get("/:oid/items/:iid", func(c *fiber.Ctx) error {
		return c.SendString(fmt.Sprintf("order %s item %s route %s\n", c.Params("oid"),
			c.Params("iid"), c.Route().Path))
	})
	app.Post("/fail/:code", func(c *fiber.Ctx) error {
		code := service.FailCode(c.Params("code"))
		return c.Status(code).SendString(fmt.Sprintf("fail %d\n", code))
	})
	app.Get("/panic", func(c *fiber.Ctx) error {
		panic("fiber2: /panic was requested")
	})
	app.Get("/call/:id", func(c *fiber.Ctx) error {
		code, body := service.Call(c.Params("id"), false)
		return c.Status(code).SendString(body)
	})
	app.Get("/hostcall/:id", func(c *fiber.Ctx) error {
		code, body := service.Call(c.Params("id"), true)
		return c.Status(code).SendString(body)
	})
	return app
}

func main() {
	app := routes()
	service.Run("fiber2", app.Listener, app.Shutdown)
}

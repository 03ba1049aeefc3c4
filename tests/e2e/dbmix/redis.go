//go:build redis

// go-redis v9 for the /redis/ routes.
package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
)

// The keys the routes use; redisMissing is never written.
const (
	redisKey     = "dbmix:key" // /redis/set writes redisValue, /redis/get reads it
	redisValue   = "dbmix-value"
	redisCounter = "dbmix:counter"
	redisText    = "dbmix:text"
	redisMissing = "dbmix:missing"
)

func init() { addRoutes(redisRoutes) }

func redisRoutes(mux *http.ServeMux, cfg *config) (func(), error) {
	var rdb *redis.Client
	if cfg.redis != "" {
		// Connects on first use.
		rdb = redis.NewClient(&redis.Options{Addr: cfg.redis, PoolSize: 16})
		// Gives up at a context's deadline: /redis/timeout.
		timed = redis.NewClient(&redis.Options{Addr: cfg.redis, PoolSize: 1,
			ContextTimeoutEnabled: true})
	}
	routes := map[string]func(ctx context.Context, rdb *redis.Client) (string, error){
		"/redis/set":      redisSet,
		"/redis/get":      redisGet,
		"/redis/pipeline": redisPipeline,
		"/redis/error":    redisError,
		"/redis/missing":  redisMissingKey,
		"/redis/timeout":  redisTimeout,
		"/redis/retries":  redisRetries,
	}
	for path, f := range routes {
		f := f
		mux.Handle(path, handler(func(r *http.Request) (string, error) {
			if rdb == nil {
				return "", badRequest("redis needs -redis")
			}
			return f(r.Context(), rdb)
		}))
	}
	return func() {
		if rdb != nil {
			rdb.Close()
			timed.Close()
		}
	}, nil
}

// timed is a client that gives up at its context's deadline.
var timed *redis.Client

// redisTimeout waits for an element of a list nobody writes, longer than its context allows:
// the command fails with a timeout, which go-redis does not retry.
func redisTimeout(ctx context.Context, _ *redis.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	return "", timed.BLPop(ctx, time.Second, redisMissing).Err()
}

// redisRetries sends GET to a port nobody listens on, with two retries: each attempt fails to
// connect, which go-redis retries, until it runs out of them.
func redisRetries(ctx context.Context, _ *redis.Client) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: 2,
		MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond})
	defer c.Close()
	return "", c.Get(ctx, redisKey).Err()
}

func redisSet(ctx context.Context, rdb *redis.Client) (string, error) {
	res, err := rdb.Set(ctx, redisKey, redisValue, 0).Result()
	if err != nil {
		return "", err
	}
	return "set: " + res, nil
}

// get reads KEY: its value, or "nil" when it has none (redis.Nil is not a failure).
func get(ctx context.Context, rdb *redis.Client, key string) (string, error) {
	v, err := rdb.Get(ctx, key).Result()
	if err == redis.Nil {
		return "nil", nil
	}
	return v, err
}

func redisGet(ctx context.Context, rdb *redis.Client) (string, error) {
	return get(ctx, rdb, redisKey)
}

func redisMissingKey(ctx context.Context, rdb *redis.Client) (string, error) {
	return get(ctx, rdb, redisMissing)
}

// redisPipeline sends SET, INCR and GET in one round trip.
func redisPipeline(ctx context.Context, rdb *redis.Client) (string, error) {
	pipe := rdb.Pipeline()
	set := pipe.Set(ctx, redisCounter, 1, 0)
	incr := pipe.Incr(ctx, redisCounter)
	got := pipe.Get(ctx, redisCounter)
	if _, err := pipe.Exec(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("pipeline: %s %d %s", set.Val(), incr.Val(), got.Val()), nil
}

// redisError makes the server answer an error: INCR of a key holding text. The SET first makes
// sure it does, whatever ran before.
func redisError(ctx context.Context, rdb *redis.Client) (string, error) {
	if err := rdb.Set(ctx, redisText, "not a number", 0).Err(); err != nil {
		return "", err
	}
	n, err := rdb.Incr(ctx, redisText).Result()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("error: INCR answered %d", n), nil
}

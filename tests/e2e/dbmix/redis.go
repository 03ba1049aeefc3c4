//go:build redis

// go-redis v9 for the /redis/ routes.
package main

import (
	"context"
	"fmt"
	"net/http"

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
	}
	routes := map[string]func(ctx context.Context, rdb *redis.Client) (string, error){
		"/redis/set":      redisSet,
		"/redis/get":      redisGet,
		"/redis/pipeline": redisPipeline,
		"/redis/error":    redisError,
		"/redis/missing":  redisMissingKey,
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
		}
	}, nil
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

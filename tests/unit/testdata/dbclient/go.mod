module example.com/gospan/testdata/dbclient

go 1.21

require (
	github.com/jackc/pgx/v5 v5.0.0
	github.com/redis/go-redis/v9 v9.0.0
)

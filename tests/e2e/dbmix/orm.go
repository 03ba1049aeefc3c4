//go:build orm

// Two libraries over database/sql that write the SQL for the service, on -pg: gorm (through
// gorm.io/driver/postgres, which opens pgx's database/sql driver) for the /orm/gorm/ routes,
// and sqlx (over lib/pq) for the /orm/sqlx/ routes. A tracer sees only the statements they
// send; these routes are there to show what those are.
package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/jmoiron/sqlx"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// OrmItem is gorm's model: table orm_items (gorm's name for it), id given by the database.
type OrmItem struct {
	ID    int64
	Name  string
	Price float64
}

// sqlxItem is a row of the /sql/ routes' items table as sqlx maps it.
type sqlxItem struct {
	ID    int64   `db:"id"`
	Name  string  `db:"name"`
	Price float64 `db:"price"`
}

type ormDBs struct {
	gorm *gorm.DB
	sqlx *sqlx.DB

	mu     sync.Mutex
	lastID int64 // the id of the row the last /orm/gorm/create made
}

func init() { addRoutes(ormRoutes) }

func ormRoutes(mux *http.ServeMux, cfg *config) (func(), error) {
	var dbs *ormDBs
	if cfg.pg != "" {
		// No ping at open: the server may start after dbmix. Silent: the routes say what
		// failed.
		g, err := gorm.Open(postgres.Open(cfg.pg), &gorm.Config{
			Logger: logger.Default.LogMode(logger.Silent), DisableAutomaticPing: true})
		if err != nil {
			return nil, fmt.Errorf("gorm cannot open -pg: %v", err)
		}
		x, err := sqlx.Open("postgres", cfg.pg)
		if err != nil {
			return nil, fmt.Errorf("sqlx cannot open -pg: %v", err)
		}
		dbs = &ormDBs{gorm: g, sqlx: x}
	}
	routes := map[string]func(ctx context.Context, d *ormDBs, r *http.Request) (string, error){
		"/orm/setup":          ormSetup,
		"/orm/gorm/create":    gormCreate,
		"/orm/gorm/first":     gormFirst,
		"/orm/gorm/update":    gormUpdate,
		"/orm/gorm/delete":    gormDelete,
		"/orm/sqlx/get":       sqlxGet,
		"/orm/sqlx/select":    sqlxSelect,
		"/orm/sqlx/namedexec": sqlxNamedExec,
	}
	for path, f := range routes {
		f := f
		mux.Handle(path, handler(func(r *http.Request) (string, error) {
			if dbs == nil {
				return "", badRequest("orm needs -pg")
			}
			return f(r.Context(), dbs, r)
		}))
	}
	return func() {
		if dbs != nil {
			if s, err := dbs.gorm.DB(); err == nil {
				s.Close()
			}
			dbs.sqlx.Close()
		}
	}, nil
}

// ormSetup makes gorm's table (empty) through database/sql itself, not gorm's AutoMigrate,
// which reads the catalogue first; sqlx uses the /sql/ routes' items table (/sql/setup).
func ormSetup(ctx context.Context, d *ormDBs, r *http.Request) (string, error) {
	for _, s := range []string{
		"CREATE TABLE IF NOT EXISTS orm_items (id bigserial PRIMARY KEY, name text, " +
			"price numeric(10, 2))",
		"DELETE FROM orm_items",
	} {
		if _, err := d.sqlx.ExecContext(ctx, s); err != nil {
			return "", err
		}
	}
	return "setup: orm_items 0 rows", nil
}

func (d *ormDBs) last() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastID
}

func gormCreate(ctx context.Context, d *ormDBs, r *http.Request) (string, error) {
	item := OrmItem{Name: "gorm-widget", Price: 9.99}
	if err := d.gorm.WithContext(ctx).Create(&item).Error; err != nil {
		return "", err
	}
	d.mu.Lock()
	d.lastID = item.ID
	d.mu.Unlock()
	return fmt.Sprintf("create: id %d", item.ID), nil
}

func gormFirst(ctx context.Context, d *ormDBs, r *http.Request) (string, error) {
	var item OrmItem
	err := d.gorm.WithContext(ctx).Where("name = ?", "gorm-widget").First(&item).Error
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("first: id %d, %s %.2f", item.ID, item.Name, item.Price), nil
}

func gormUpdate(ctx context.Context, d *ormDBs, r *http.Request) (string, error) {
	id, err := queryID(r, d.last())
	if err != nil {
		return "", err
	}
	res := d.gorm.WithContext(ctx).Model(&OrmItem{ID: id}).Update("price", 2.5)
	if res.Error != nil {
		return "", res.Error
	}
	return fmt.Sprintf("update: %s (id %d)", rowCount(res.RowsAffected), id), nil
}

func gormDelete(ctx context.Context, d *ormDBs, r *http.Request) (string, error) {
	id, err := queryID(r, d.last())
	if err != nil {
		return "", err
	}
	res := d.gorm.WithContext(ctx).Delete(&OrmItem{ID: id})
	if res.Error != nil {
		return "", res.Error
	}
	return fmt.Sprintf("delete: %s (id %d)", rowCount(res.RowsAffected), id), nil
}

func sqlxGet(ctx context.Context, d *ormDBs, r *http.Request) (string, error) {
	var item sqlxItem
	err := d.sqlx.GetContext(ctx, &item, "SELECT id, name, price FROM items WHERE id = $1", 42)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("get: %d %s %.2f", item.ID, item.Name, item.Price), nil
}

func sqlxSelect(ctx context.Context, d *ormDBs, r *http.Request) (string, error) {
	var items []sqlxItem
	err := d.sqlx.SelectContext(ctx, &items,
		"SELECT id, name, price FROM items WHERE price < $1 ORDER BY id", 100)
	if err != nil {
		return "", err
	}
	var got []string
	for _, it := range items {
		got = append(got, fmt.Sprintf("%d %s", it.ID, it.Name))
	}
	return "select: " + describeRows(got), nil
}

func sqlxNamedExec(ctx context.Context, d *ormDBs, r *http.Request) (string, error) {
	item := sqlxItem{ID: randomID(3000000), Name: "named", Price: 5.5}
	res, err := d.sqlx.NamedExecContext(ctx,
		"INSERT INTO items (id, name, price) VALUES (:id, :name, :price)", item)
	if err != nil {
		return "", err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("namedexec: %s (id %d)", rowCount(n), item.ID), nil
}

// Command gen writes gospan's offset tables: offsets/go_offsets.json, the struct member offsets
// gospan's probes need per Go release, and one table per Go module whose structs they read,
// keyed by the module's version: offsets/grpc_offsets.json (grpc-go, google.golang.org/grpc),
// offsets/pgx_offsets.json (github.com/jackc/pgx/v5), offsets/redis_offsets.json
// (github.com/redis/go-redis/v9), and the routers' offsets/gin_offsets.json
// (github.com/gin-gonic/gin), offsets/echo_offsets.json (github.com/labstack/echo/v4),
// offsets/echo5_offsets.json (github.com/labstack/echo/v5), offsets/chi_offsets.json
// (github.com/go-chi/chi/v5) and offsets/mux_offsets.json (github.com/gorilla/mux). For every Go
// minor from 1.17 on that the Go module proxy carries toolchains for, it builds a small net/http
// program with the minor's first and latest releases; for every minor of a module that the proxy
// serves (modTables says from which), a small program using it with the minor's first and latest
// patches. It reads the members' offsets from the programs' DWARF, and where a minor's first and
// latest disagree bisects the patches in between until it finds the release that changed the
// layout. Each table then lists every release it built, and folds the offsets into ranges of
// consecutive releases over which they hold. Builds are cached in a temporary directory, so
// running it again costs little. Run it with `make offsets`.
package main

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/dwarf"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// field is one struct member a table lists, named in the JSON "<type>.<member>", where type is
// "<import path>.<type name>" as Go's DWARF names it. A member written "*name" is the member
// name, listed only for the releases where it is a pointer: the offset alone cannot tell an
// embedded *T from an embedded T, and reaching T's members through the first takes a load that
// the second must not have.
type field struct{ typ, member string }

func (f field) name() string { return f.typ + "." + f.member }

// dwarfMember is the member's name in DWARF, and whether only a pointer member counts.
func (f field) dwarfMember() (string, bool) {
	name, ptr := strings.CutPrefix(f.member, "*")
	return name, ptr
}

// goFields is the one list of what gospan reads from Go's own structs, in the order of
// go_field_names[] in exporter/analysis/fields.c. A member a release does not have (Request.Pattern
// before 1.23, Request.pat and the pattern type before 1.22) is left out of that release's table
// rather than treated as an error.
var goFields = []field{
	{"runtime.g", "goid"},
	{"net/http.Request", "Method"},
	{"net/http.Request", "URL"},
	{"net/http.Request", "Proto"},
	{"net/http.Request", "Header"},
	{"net/http.Request", "ContentLength"},
	{"net/http.Request", "Host"},
	{"net/http.Request", "RemoteAddr"},
	{"net/http.Request", "TLS"},
	{"net/http.Request", "Pattern"},
	{"net/http.Request", "pat"},
	{"net/http.pattern", "str"},
	{"net/url.URL", "Path"},
	{"net/http.response", "status"},
	{"runtime.g", "parentGoid"},
	{"net/url.URL", "Scheme"},
	{"net/url.URL", "User"},
	{"net/url.URL", "Host"},
	{"net/url.URL", "RawQuery"},
	{"net/http.Response", "StatusCode"},
	{"bufio.Writer", "buf"},
	{"bufio.Writer", "n"},
	// Go's maps: the bucketed hash map up to 1.23, Swiss tables from 1.24 (their package path
	// is the same in every release that has them).
	{"runtime.hmap", "count"},
	{"runtime.hmap", "B"},
	{"runtime.hmap", "buckets"},
	{"internal/runtime/maps.Map", "used"},
	{"internal/runtime/maps.Map", "dirPtr"},
	{"internal/runtime/maps.Map", "dirLen"},
	{"internal/runtime/maps.table", "groups"},
	{"internal/runtime/maps.groupsReference", "data"},
	{"internal/runtime/maps.groupsReference", "lengthMask"},
	{"net/http.Response", "Proto"},
	// The peer address grpc-go keeps as a net.Addr (a *net.TCPAddr for TCP), and the values
	// it hangs on a context (its method name, its peer) through context.WithValue.
	{"net.TCPAddr", "IP"},
	{"net.TCPAddr", "Port"},
	{"context.valueCtx", "key"},
	{"context.valueCtx", "val"},
	// The SQL text a prepared statement was made from: database/sql keeps it in the Stmt.
	{"database/sql.Stmt", "query"},
	// From a *net.TCPConn (whose net.conn it embeds first) to its peer's net.Addr: the server a
	// database driver that keeps no host of its own (lib/pq before v1.11) is connected to.
	{"net.conn", "fd"},
	{"net.netFD", "raddr"},
	// HTTP/2's response writer (net/http's bundled copy of golang.org/x/net/http2) holds only a
	// pointer to its state, where the status written is.
	{"net/http.http2responseWriter", "rws"},
	{"net/http.http2responseWriterState", "status"},
	// The same from Go 1.27, where HTTP/2 is the package net/http/internal/http2 (net/http hands
	// handlers a one-pointer wrapper of its *responseWriter: the interface's data word).
	{"net/http/internal/http2.responseWriter", "rws"},
	{"net/http/internal/http2.responseWriterState", "status"},
}

// goTypes are the types of the Go members gospan reads through, where it matters (see
// grpcTypes): a string read as a (pointer, length) pair must still be a string.
var goTypes = map[string]string{
	"database/sql.Stmt.query":                            "struct string",
	"net.conn.fd":                                        "*net.netFD",
	"net.netFD.raddr":                                    "net.Addr",
	"net/http.http2responseWriter.rws":                   "*net/http.http2responseWriterState",
	"net/http.http2responseWriterState.status":           "int",
	"net/http/internal/http2.responseWriter.rws":         "*net/http/internal/http2.responseWriterState",
	"net/http/internal/http2.responseWriterState.status": "int",
}

// The Go structs every release from 1.17 has: a probe's DWARF without one means the probe no
// longer pulls it in, not that Go dropped it.
var goMust = []string{"runtime.g", "net/http.Request", "net/url.URL", "net/http.response",
	"net/http.Response", "bufio.Writer", "net.TCPAddr", "context.valueCtx", "database/sql.Stmt",
	"net.conn", "net.netFD"}

const (
	grpcTransport = "google.golang.org/grpc/internal/transport"
	grpcStatus    = "google.golang.org/grpc/internal/status"
	grpcPeer      = "google.golang.org/grpc/peer"
	grpcPkg       = "google.golang.org/grpc"
	// The google.rpc.Status message grpc-go's status wraps. Its package path is the same
	// whether it comes from the old monolithic google.golang.org/genproto module or from
	// google.golang.org/genproto/googleapis/rpc, which took it over in 2023.
	rpcStatus = "google.golang.org/genproto/googleapis/rpc/status"
)

// grpcFields is the one list of what gospan reads from grpc-go's structs, in the order of
// grpc_field_names[] in exporter/analysis/fields.c.
var grpcFields = []field{
	{grpcTransport + ".Stream", "method"},
	{grpcTransport + ".Stream", "ctx"},
	{grpcTransport + ".Stream", "id"},
	// From 1.69 the server's stream is a ServerStream embedding the common Stream, by
	// pointer up to 1.76 and by value from 1.77; before 1.69 the server used *Stream itself.
	{grpcTransport + ".ServerStream", "Stream"},
	{grpcTransport + ".ServerStream", "*Stream"},
	// The server transport kept the peer's addresses in members of its own until 1.60 gave
	// it a peer.Peer value, and peer.Peer its LocalAddr.
	{grpcTransport + ".http2Server", "remoteAddr"},
	{grpcTransport + ".http2Server", "localAddr"},
	{grpcTransport + ".http2Server", "peer"},
	{grpcPeer + ".Peer", "Addr"},
	{grpcPeer + ".Peer", "LocalAddr"},
	{grpcStatus + ".Status", "s"},
	{grpcStatus + ".Error", "s"},
	{rpcStatus + ".Status", "Code"},
	{rpcStatus + ".Status", "Message"},
	{grpcPkg + ".csAttempt", "cs"},
	{grpcPkg + ".ClientConn", "target"},
}

// grpcTypes are the member types gospan's probes rely on, as debug/dwarf spells them ("a|b":
// either): what they read through a member must still be there in a new release, not only the
// member's name. A mismatch fails the generator, for a look at what grpc-go changed.
var grpcTypes = map[string]string{
	grpcTransport + ".Stream.method": "struct string",
	grpcTransport + ".Stream.ctx":    "context.Context",
	grpcTransport + ".Stream.id":     "uint32",
	grpcTransport + ".ServerStream.Stream": "*" + grpcTransport + ".Stream|" +
		grpcTransport + ".Stream",
	grpcTransport + ".http2Server.remoteAddr": "net.Addr",
	grpcTransport + ".http2Server.localAddr":  "net.Addr",
	grpcTransport + ".http2Server.peer":       grpcPeer + ".Peer",
	grpcPeer + ".Peer.Addr":                   "net.Addr",
	grpcPeer + ".Peer.LocalAddr":              "net.Addr",
	grpcStatus + ".Status.s":                  "*" + rpcStatus + ".Status",
	grpcStatus + ".Error.s":                   "*" + grpcStatus + ".Status",
	rpcStatus + ".Status.Code":                "int32",
	rpcStatus + ".Status.Message":             "struct string",
	grpcPkg + ".csAttempt.cs":                 "*" + grpcPkg + ".clientStream",
	grpcPkg + ".ClientConn.target":            "struct string",
}

// The grpc-go structs every release from 1.50 has (ServerStream is newer).
var grpcMust = []string{grpcTransport + ".Stream", grpcTransport + ".http2Server",
	grpcPeer + ".Peer", grpcStatus + ".Status", grpcStatus + ".Error", rpcStatus + ".Status",
	grpcPkg + ".csAttempt", grpcPkg + ".ClientConn"}

const (
	pgxPkg    = "github.com/jackc/pgx/v5"
	pgconnPkg = "github.com/jackc/pgx/v5/pgconn"
	pgxStdlib = "github.com/jackc/pgx/v5/stdlib"
)

// pgxFields is the one list of what gospan reads from pgx v5's structs, in the order of
// pgx_field_names[] in exporter/analysis/fields.c: the connection's configuration (a *ConnConfig, which
// embeds pgconn.Config by value) for the server's host and port, and a batch's queued queries
// with their SQL text. Early v5 releases kept both unexported (Batch.queuedQueries,
// QueuedQuery.query); a release has one name or the other, and the table lists both. Last, the
// *pgx.Conn of a connection of pgx's database/sql driver (stdlib), for its server.
var pgxFields = []field{
	{pgxPkg + ".Conn", "config"},
	{pgxPkg + ".ConnConfig", "Config"},
	{pgconnPkg + ".Config", "Host"},
	{pgconnPkg + ".Config", "Port"},
	{pgxPkg + ".Batch", "QueuedQueries"},
	{pgxPkg + ".Batch", "queuedQueries"},
	{pgxPkg + ".QueuedQuery", "SQL"},
	{pgxPkg + ".QueuedQuery", "query"},
	{pgxStdlib + ".Conn", "conn"},
}

var pgxTypes = map[string]string{
	pgxPkg + ".Conn.config":         "*" + pgxPkg + ".ConnConfig",
	pgxPkg + ".ConnConfig.Config":   pgconnPkg + ".Config",
	pgconnPkg + ".Config.Host":      "struct string",
	pgconnPkg + ".Config.Port":      "uint16",
	pgxPkg + ".Batch.QueuedQueries": "struct []*" + pgxPkg + ".QueuedQuery",
	pgxPkg + ".Batch.queuedQueries": "struct []*" + pgxPkg + ".QueuedQuery",
	pgxPkg + ".QueuedQuery.SQL":     "struct string",
	pgxPkg + ".QueuedQuery.query":   "struct string",
	pgxStdlib + ".Conn.conn":        "*" + pgxPkg + ".Conn",
}

// The pgx structs every v5 release has.
var pgxMust = []string{pgxPkg + ".Conn", pgxPkg + ".ConnConfig", pgconnPkg + ".Config",
	pgxPkg + ".Batch", pgxPkg + ".QueuedQuery", pgxStdlib + ".Conn"}

// lib/pq (github.com/lib/pq): what gospan reads from a connection for the server a
// database/sql span went to, in the order of pq_field_names[] (exporter/analysis/fields.c): its
// net.Conn, and from v1.11 its Config (by value) with the host and port it connected to.
const pqPkg = "github.com/lib/pq"

var pqFields = []field{
	{pqPkg + ".conn", "c"},
	{pqPkg + ".conn", "cfg"},
	{pqPkg + ".Config", "Host"},
	{pqPkg + ".Config", "Port"},
}

var pqTypes = map[string]string{
	pqPkg + ".conn.c":      "net.Conn",
	pqPkg + ".conn.cfg":    pqPkg + ".Config",
	pqPkg + ".Config.Host": "struct string",
	pqPkg + ".Config.Port": "uint16",
}

// checkPQ: every pq release has conn.c; from v1.11 its Config with Host and Port, all three or
// none.
func checkPQ(_ map[string]*dwarf.StructType, offs map[string]int64) error {
	if _, ok := offs[pqPkg+".conn.c"]; !ok {
		return fmt.Errorf("%s.conn.c is missing", pqPkg)
	}
	n := 0
	for _, f := range pqFields[1:] {
		if _, ok := offs[f.name()]; ok {
			n++
		}
	}
	if n != 0 && n != len(pqFields)-1 {
		return fmt.Errorf("%s: conn.cfg, Config.Host and Config.Port: %d of the three", pqPkg, n)
	}
	return nil
}

// go-sql-driver/mysql (github.com/go-sql-driver/mysql): a connection's *Config and its Addr,
// in the order of mysql_field_names[].
const mysqlPkg = "github.com/go-sql-driver/mysql"

var mysqlFields = []field{
	{mysqlPkg + ".mysqlConn", "cfg"},
	{mysqlPkg + ".Config", "Addr"},
}

var mysqlTypes = map[string]string{
	mysqlPkg + ".mysqlConn.cfg": "*" + mysqlPkg + ".Config",
	mysqlPkg + ".Config.Addr":   "struct string",
}

const redisPkg = "github.com/redis/go-redis/v9"

// redisFields is the one list of what gospan reads from go-redis v9's structs, in the order of
// redis_field_names[] in exporter/analysis/fields.c: a client's options (for the server's address) and
// a command's arguments, its name first.
var redisFields = []field{
	{redisPkg + ".baseClient", "opt"},
	{redisPkg + ".Options", "Addr"},
	{redisPkg + ".baseCmd", "args"},
}

var redisTypes = map[string]string{
	redisPkg + ".baseClient.opt": "*" + redisPkg + ".Options",
	redisPkg + ".Options.Addr":   "struct string",
	redisPkg + ".baseCmd.args":   "struct []interface {}",
}

// The go-redis structs every v9 release has.
var redisMust = []string{redisPkg + ".baseClient", redisPkg + ".Options", redisPkg + ".baseCmd"}

// The routers: what gospan reads to name a request's span after the route template it matched
// ("/users/:id") rather than its path. Each list is in the order of its field names in
// exporter/analysis/fields.c.
const (
	ginPkg   = "github.com/gin-gonic/gin"
	echoPkg  = "github.com/labstack/echo/v4"
	echo5Pkg = "github.com/labstack/echo/v5"
	chiPkg   = "github.com/go-chi/chi/v5"
	muxPkg   = "github.com/gorilla/mux"
)

// gin: the template the handler's Context carries (what its FullPath() returns).
var ginFields = []field{{ginPkg + ".Context", "fullPath"}}

var ginTypes = map[string]string{ginPkg + ".Context.fullPath": "struct string"}

// echo v4: the handler's context (unexported behind the echo.Context interface) keeps the
// matched route's path and the handler routing chose.
var echoFields = []field{
	{echoPkg + ".context", "path"},
	{echoPkg + ".context", "handler"},
}

var echoTypes = map[string]string{
	echoPkg + ".context.path":    "struct string",
	echoPkg + ".context.handler": echoPkg + ".HandlerFunc",
}

// echo v5: Context is a struct; besides the path it points to the matched route's RouteInfo.
// Its handler member is newer than v5.0.0: a release without it has no range for it.
var echo5Fields = []field{
	{echo5Pkg + ".Context", "path"},
	{echo5Pkg + ".Context", "handler"},
	{echo5Pkg + ".Context", "route"},
	{echo5Pkg + ".RouteInfo", "Path"},
}

var echo5Types = map[string]string{
	echo5Pkg + ".Context.path":    "struct string",
	echo5Pkg + ".Context.handler": echo5Pkg + ".HandlerFunc",
	echo5Pkg + ".Context.route":   "*" + echo5Pkg + ".RouteInfo",
	echo5Pkg + ".RouteInfo.Path":  "struct string",
}

// The echo v5 members every v5 release has.
var echo5Always = []string{echo5Pkg + ".Context.path", echo5Pkg + ".Context.route",
	echo5Pkg + ".RouteInfo.Path"}

// chi: the routing context's stack of patterns (one per router a request went through) and
// the pattern of the current one.
var chiFields = []field{
	{chiPkg + ".Context", "RoutePatterns"},
	{chiPkg + ".Context", "routePattern"},
}

var chiTypes = map[string]string{
	chiPkg + ".Context.RoutePatterns": "struct []string",
	chiPkg + ".Context.routePattern":  "struct string",
}

// gorilla/mux: a RouteMatch's *Route, and the way from a Route to its path template, which
// changed in v1.7.0. Up to v1.6.2 Route has a *routeRegexpGroup member, regexp (listed as
// "Route.*regexp", a pointer to load); from v1.7.0 Route embeds a routeConf by value, which
// holds the routeRegexpGroup by value (Route.routeConf + routeConf.regexp, no load). Either
// way the group's path is a *routeRegexp whose template is the string.
var muxFields = []field{
	{muxPkg + ".RouteMatch", "Route"},
	{muxPkg + ".Route", "routeConf"},
	{muxPkg + ".routeConf", "regexp"},
	{muxPkg + ".Route", "*regexp"},
	{muxPkg + ".routeRegexpGroup", "path"},
	{muxPkg + ".routeRegexp", "template"},
}

var muxTypes = map[string]string{
	muxPkg + ".RouteMatch.Route":      "*" + muxPkg + ".Route",
	muxPkg + ".Route.routeConf":       muxPkg + ".routeConf",
	muxPkg + ".routeConf.regexp":      muxPkg + ".routeRegexpGroup",
	muxPkg + ".Route.*regexp":         "*" + muxPkg + ".routeRegexpGroup",
	muxPkg + ".routeRegexpGroup.path": "*" + muxPkg + ".routeRegexp",
	muxPkg + ".routeRegexp.template":  "struct string",
}

// fasthttp (github.com/valyala/fasthttp), which serves and calls HTTP without net/http: what
// its server's per-connection RequestCtx and its client's Request and Response hold, member by
// member, in the order of fasthttp_field_names[] (exporter/analysis/fields.c). The request and
// response headers embed a shared header struct in later releases (v1.69 has it, v1.51 not);
// before, their members are the headers' own: each release has one of the two ways, all of it.
// net.conn.fd and net.netFD.raddr are Go's own (the way from a *net.TCPConn to its peer's
// address), in this table because the Go table would need every Go release rebuilt for them:
// they have not moved since Go 1.17, and a binary's own DWARF still comes first.
const fasthttpPkg = "github.com/valyala/fasthttp"

var fasthttpFields = []field{
	{fasthttpPkg + ".RequestCtx", "Request"},
	{fasthttpPkg + ".RequestCtx", "Response"},
	{fasthttpPkg + ".RequestCtx", "c"},
	{fasthttpPkg + ".Request", "Header"},
	{fasthttpPkg + ".Request", "uri"},
	{fasthttpPkg + ".Request", "isTLS"},
	{fasthttpPkg + ".Response", "Header"},
	{fasthttpPkg + ".RequestHeader", "method"},
	{fasthttpPkg + ".RequestHeader", "requestURI"},
	{fasthttpPkg + ".RequestHeader", "host"},
	{fasthttpPkg + ".RequestHeader", "header"},
	{fasthttpPkg + ".RequestHeader", "proto"},
	{fasthttpPkg + ".RequestHeader", "h"},
	{fasthttpPkg + ".RequestHeader", "contentLength"},
	{fasthttpPkg + ".ResponseHeader", "statusCode"},
	{fasthttpPkg + ".ResponseHeader", "header"},
	{fasthttpPkg + ".ResponseHeader", "protocol"},
	{fasthttpPkg + ".header", "protocol"},
	{fasthttpPkg + ".header", "h"},
	{fasthttpPkg + ".header", "contentLength"},
	{fasthttpPkg + ".URI", "scheme"},
	{fasthttpPkg + ".URI", "host"},
	{fasthttpPkg + ".URI", "path"},
	{fasthttpPkg + ".URI", "queryString"},
	{fasthttpPkg + ".argsKV", "key"},
	{fasthttpPkg + ".argsKV", "value"},
	{"net.conn", "fd"},
	{"net.netFD", "raddr"},
}

const goBytes = "struct []uint8"

var fasthttpTypes = map[string]string{
	fasthttpPkg + ".RequestCtx.Request":          fasthttpPkg + ".Request",
	fasthttpPkg + ".RequestCtx.Response":         fasthttpPkg + ".Response",
	fasthttpPkg + ".RequestCtx.c":                "net.Conn",
	fasthttpPkg + ".Request.Header":              fasthttpPkg + ".RequestHeader",
	fasthttpPkg + ".Request.uri":                 fasthttpPkg + ".URI",
	fasthttpPkg + ".Request.isTLS":               "bool",
	fasthttpPkg + ".Response.Header":             fasthttpPkg + ".ResponseHeader",
	fasthttpPkg + ".RequestHeader.method":        goBytes,
	fasthttpPkg + ".RequestHeader.requestURI":    goBytes,
	fasthttpPkg + ".RequestHeader.host":          goBytes,
	fasthttpPkg + ".RequestHeader.header":        fasthttpPkg + ".header",
	fasthttpPkg + ".RequestHeader.proto":         goBytes,
	fasthttpPkg + ".RequestHeader.h":             "struct []" + fasthttpPkg + ".argsKV",
	fasthttpPkg + ".RequestHeader.contentLength": "int",
	fasthttpPkg + ".ResponseHeader.statusCode":   "int",
	fasthttpPkg + ".ResponseHeader.header":       fasthttpPkg + ".header",
	fasthttpPkg + ".ResponseHeader.protocol":     goBytes,
	fasthttpPkg + ".header.protocol":             goBytes,
	fasthttpPkg + ".header.h":                    "struct []" + fasthttpPkg + ".argsKV",
	fasthttpPkg + ".header.contentLength":        "int",
	fasthttpPkg + ".URI.scheme":                  goBytes,
	fasthttpPkg + ".URI.host":                    goBytes,
	fasthttpPkg + ".URI.path":                    goBytes,
	fasthttpPkg + ".URI.queryString":             goBytes,
	fasthttpPkg + ".argsKV.key":                  goBytes,
	fasthttpPkg + ".argsKV.value":                goBytes,
	"net.conn.fd":                                "*net.netFD",
	"net.netFD.raddr":                            "net.Addr",
}

var fasthttpMust = []string{fasthttpPkg + ".RequestCtx", fasthttpPkg + ".Request",
	fasthttpPkg + ".Response", fasthttpPkg + ".RequestHeader", fasthttpPkg + ".ResponseHeader",
	fasthttpPkg + ".URI", fasthttpPkg + ".argsKV", "net.conn", "net.netFD"}

// The members every release has; and the two header layouts, one of which a release has.
var fasthttpAlways = []string{fasthttpPkg + ".RequestCtx.Request",
	fasthttpPkg + ".RequestCtx.Response", fasthttpPkg + ".RequestCtx.c",
	fasthttpPkg + ".Request.Header", fasthttpPkg + ".Request.uri", fasthttpPkg + ".Request.isTLS",
	fasthttpPkg + ".Response.Header", fasthttpPkg + ".RequestHeader.method",
	fasthttpPkg + ".RequestHeader.requestURI", fasthttpPkg + ".RequestHeader.host",
	fasthttpPkg + ".ResponseHeader.statusCode", fasthttpPkg + ".URI.scheme",
	fasthttpPkg + ".URI.host", fasthttpPkg + ".URI.path", fasthttpPkg + ".URI.queryString",
	fasthttpPkg + ".argsKV.key", fasthttpPkg + ".argsKV.value", "net.conn.fd",
	"net.netFD.raddr"}

var fasthttpLayouts = [][]string{
	{fasthttpPkg + ".RequestHeader.proto", fasthttpPkg + ".RequestHeader.h",
		fasthttpPkg + ".RequestHeader.contentLength", fasthttpPkg + ".ResponseHeader.protocol"},
	{fasthttpPkg + ".RequestHeader.header", fasthttpPkg + ".ResponseHeader.header",
		fasthttpPkg + ".header.protocol", fasthttpPkg + ".header.h",
		fasthttpPkg + ".header.contentLength"},
}

// Fiber v2 and v3 (github.com/gofiber/fiber/v2, /v3): the route a request's context matched
// last, whether a route that is not middleware matched, and a route's path as registered.
const (
	fiber2Pkg = "github.com/gofiber/fiber/v2"
	fiber3Pkg = "github.com/gofiber/fiber/v3"
)

// The flag was renamed isMatched in Fiber v3.3.0: a release has one of the two names.
var fiber2Fields = []field{
	{fiber2Pkg + ".Ctx", "route"},
	{fiber2Pkg + ".Ctx", "matched"},
	{fiber2Pkg + ".Ctx", "isMatched"},
	{fiber2Pkg + ".Route", "Path"},
}

var fiber2Types = map[string]string{
	fiber2Pkg + ".Ctx.route":     "*" + fiber2Pkg + ".Route",
	fiber2Pkg + ".Ctx.matched":   "bool",
	fiber2Pkg + ".Ctx.isMatched": "bool",
	fiber2Pkg + ".Route.Path":    "struct string",
}

var fiber3Fields = []field{
	{fiber3Pkg + ".DefaultCtx", "route"},
	{fiber3Pkg + ".DefaultCtx", "matched"},
	{fiber3Pkg + ".DefaultCtx", "isMatched"},
	{fiber3Pkg + ".Route", "Path"},
}

var fiber3Types = map[string]string{
	fiber3Pkg + ".DefaultCtx.route":     "*" + fiber3Pkg + ".Route",
	fiber3Pkg + ".DefaultCtx.matched":   "bool",
	fiber3Pkg + ".DefaultCtx.isMatched": "bool",
	fiber3Pkg + ".Route.Path":           "struct string",
}

// fiberCheck: the route and its path, and one of the two names of the flag.
func fiberCheck(pkg, ctx string) func(map[string]*dwarf.StructType, map[string]int64) error {
	return checkMembers([]string{pkg + "." + ctx + ".route", pkg + ".Route.Path"},
		[][]string{{pkg + "." + ctx + ".matched"}, {pkg + "." + ctx + ".isMatched"}})
}

// segmentio/kafka-go: a Writer's topic and address, the Message a writer sends and a reader
// hands over (its topic, partition, offset, key, headers; Time, its last member, gives its
// size), a header's key and value, a Reader's consumer group and brokers, and the address a
// networkAddress (what kafka.TCP makes) holds.
const kafkagoPkg = "github.com/segmentio/kafka-go"

var kafkagoFields = []field{
	{kafkagoPkg + ".Writer", "Topic"},
	{kafkagoPkg + ".Writer", "Addr"},
	{kafkagoPkg + ".Message", "Topic"},
	{kafkagoPkg + ".Message", "Partition"},
	{kafkagoPkg + ".Message", "Offset"},
	{kafkagoPkg + ".Message", "Key"},
	{kafkagoPkg + ".Message", "Value"},
	{kafkagoPkg + ".Message", "Headers"},
	{kafkagoPkg + ".Message", "Time"},
	{kafkagoPkg + "/protocol.Header", "Key"},
	{kafkagoPkg + "/protocol.Header", "Value"},
	{kafkagoPkg + ".Reader", "config"},
	{kafkagoPkg + ".ReaderConfig", "GroupID"},
	{kafkagoPkg + ".ReaderConfig", "Brokers"},
	{kafkagoPkg + ".networkAddress", "address"},
}

var kafkagoTypes = map[string]string{
	kafkagoPkg + ".Writer.Topic":           "struct string",
	kafkagoPkg + ".Writer.Addr":            "net.Addr",
	kafkagoPkg + ".Message.Topic":          "struct string",
	kafkagoPkg + ".Message.Partition":      "int",
	kafkagoPkg + ".Message.Offset":         "int64",
	kafkagoPkg + ".Message.Key":            goBytes,
	kafkagoPkg + ".Message.Value":          goBytes,
	kafkagoPkg + ".Message.Headers":        "struct []" + kafkagoPkg + "/protocol.Header",
	kafkagoPkg + ".Message.Time":           "time.Time",
	kafkagoPkg + "/protocol.Header.Key":    "struct string",
	kafkagoPkg + "/protocol.Header.Value":  goBytes,
	kafkagoPkg + ".Reader.config":          kafkagoPkg + ".ReaderConfig",
	kafkagoPkg + ".ReaderConfig.GroupID":   "struct string",
	kafkagoPkg + ".ReaderConfig.Brokers":   "struct []string",
	kafkagoPkg + ".networkAddress.address": "struct string",
}

// IBM/sarama: the topic, key and value (Encoder interfaces) of a ProducerMessage, which its
// producers send, and the offset and partition the broker gave it, an asyncProducer's input
// channel; for its consumer groups, a ConsumerMessage's headers ([]*RecordHeader),
// key, topic, partition and offset, a RecordHeader's key and value (Value, its last member, gives
// its size), a partition consumer's channel of messages, and the way from a group session to its
// group's ID.
const saramaPkg = "github.com/IBM/sarama"

var saramaFields = []field{
	{saramaPkg + ".ProducerMessage", "Topic"},
	{saramaPkg + ".ProducerMessage", "Key"},
	{saramaPkg + ".ProducerMessage", "Value"},
	{saramaPkg + ".ProducerMessage", "Offset"},
	{saramaPkg + ".ProducerMessage", "Partition"},
	{saramaPkg + ".asyncProducer", "input"},
	{saramaPkg + ".ConsumerMessage", "Headers"},
	{saramaPkg + ".ConsumerMessage", "Key"},
	{saramaPkg + ".ConsumerMessage", "Topic"},
	{saramaPkg + ".ConsumerMessage", "Partition"},
	{saramaPkg + ".ConsumerMessage", "Offset"},
	{saramaPkg + ".RecordHeader", "Key"},
	{saramaPkg + ".RecordHeader", "Value"},
	{saramaPkg + ".partitionConsumer", "messages"},
	{saramaPkg + ".consumerGroupSession", "parent"},
	{saramaPkg + ".consumerGroup", "groupID"},
}

var saramaTypes = map[string]string{
	saramaPkg + ".ProducerMessage.Topic":       "struct string",
	saramaPkg + ".ProducerMessage.Key":         saramaPkg + ".Encoder",
	saramaPkg + ".ProducerMessage.Value":       saramaPkg + ".Encoder",
	saramaPkg + ".ConsumerMessage.Headers":     "struct []*" + saramaPkg + ".RecordHeader",
	saramaPkg + ".ConsumerMessage.Key":         goBytes,
	saramaPkg + ".ConsumerMessage.Topic":       "struct string",
	saramaPkg + ".ConsumerMessage.Partition":   "int32",
	saramaPkg + ".ConsumerMessage.Offset":      "int64",
	saramaPkg + ".RecordHeader.Key":            goBytes,
	saramaPkg + ".RecordHeader.Value":          goBytes,
	saramaPkg + ".partitionConsumer.messages":  "chan *" + saramaPkg + ".ConsumerMessage",
	saramaPkg + ".consumerGroupSession.parent": "*" + saramaPkg + ".consumerGroup",
	saramaPkg + ".consumerGroup.groupID":       "struct string",
}

// The probe sends through a SyncProducer and consumes through a ConsumerGroup, so that the
// messages, the partition consumer and the group session are all in its DWARF.
const saramaProbeMain = `package main

import (
	"context"
	"os"

	"github.com/IBM/sarama"
)

type handler struct{}

func (handler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		_, _ = os.Stdout.Write(m.Key)
		_, _ = os.Stdout.WriteString(m.Topic + string(m.Headers[0].Key))
		s.MarkMessage(m, "")
	}
	return nil
}

func main() {
	if len(os.Args) > 2 {
		p, err := sarama.NewSyncProducer(os.Args[1:2], sarama.NewConfig())
		if err != nil {
			return
		}
		m := &sarama.ProducerMessage{Topic: os.Args[2], Key: sarama.StringEncoder(os.Args[0]),
			Value: sarama.ByteEncoder(os.Args[0])}
		_, _, _ = p.SendMessage(m)
		_ = p.SendMessages([]*sarama.ProducerMessage{m})
		_, _ = os.Stdout.WriteString(m.Topic)
		_ = p.Close()
		g, err := sarama.NewConsumerGroup(os.Args[1:2], os.Args[0], sarama.NewConfig())
		if err != nil {
			return
		}
		_ = g.Consume(context.Background(), os.Args[2:3], handler{})
		_ = g.Close()
	}
}
`

// twmb/franz-go's kgo: the Record a producer sends and a poll hands over (its key, value,
// headers, topic, partition, offset), a header's key and value (Value, its last member, gives its
// size), and a Client's consumer group and seed brokers, in its cfg.
const franzPkg = "github.com/twmb/franz-go/pkg/kgo"

var franzFields = []field{
	{franzPkg + ".Record", "Key"},
	{franzPkg + ".Record", "Value"},
	{franzPkg + ".Record", "Headers"},
	{franzPkg + ".Record", "Topic"},
	{franzPkg + ".Record", "Partition"},
	{franzPkg + ".Record", "Offset"},
	{franzPkg + ".RecordHeader", "Key"},
	{franzPkg + ".RecordHeader", "Value"},
	{franzPkg + ".Client", "cfg"},
	{franzPkg + ".cfg", "group"},
	{franzPkg + ".cfg", "seedBrokers"},
}

var franzTypes = map[string]string{
	franzPkg + ".Record.Key":         goBytes,
	franzPkg + ".Record.Value":       goBytes,
	franzPkg + ".Record.Headers":     "struct []" + franzPkg + ".RecordHeader",
	franzPkg + ".Record.Topic":       "struct string",
	franzPkg + ".Record.Partition":   "int32",
	franzPkg + ".Record.Offset":      "int64",
	franzPkg + ".RecordHeader.Key":   "struct string",
	franzPkg + ".RecordHeader.Value": goBytes,
	franzPkg + ".Client.cfg":         franzPkg + ".cfg",
	franzPkg + ".cfg.group":          "struct string",
	franzPkg + ".cfg.seedBrokers":    "struct []string",
}

// The probe produces and polls, so that the Record, its headers and the client's config are
// all in its DWARF.
const franzProbeMain = `package main

import (
	"context"
	"os"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) > 2 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(os.Args[1]), kgo.ConsumerGroup(os.Args[2]))
		if err != nil {
			return
		}
		r := &kgo.Record{Topic: os.Args[2], Key: []byte(os.Args[0]),
			Headers: []kgo.RecordHeader{{Key: "k", Value: []byte(os.Args[0])}}}
		_ = cl.ProduceSync(context.Background(), r).FirstErr()
		cl.PollFetches(context.Background()).EachRecord(func(r *kgo.Record) {
			_, _ = os.Stdout.Write(r.Value)
		})
		cl.Close()
	}
}
`

const kafkagoProbeMain = `package main

import (
	"context"
	"os"

	"github.com/segmentio/kafka-go"
)

func main() {
	ctx := context.Background()
	if len(os.Args) > 2 {
		w := &kafka.Writer{Addr: kafka.TCP(os.Args[1]), Topic: os.Args[2]}
		_ = w.WriteMessages(ctx, kafka.Message{Key: []byte(os.Args[0]),
			Headers: []kafka.Header{{Key: "k", Value: []byte(os.Args[0])}}})
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: os.Args[1:2], GroupID: os.Args[0],
			Topic: os.Args[2]})
		m, _ := r.ReadMessage(ctx)
		m, _ = r.FetchMessage(ctx)
		_ = r.CommitMessages(ctx, m)
		_, _ = os.Stdout.WriteString(m.Topic + string(m.Key) + m.Headers[0].Key + m.Time.String())
		_ = r.Close()
	}
}
`

// Go 1.17 is the first release with the register ABI on amd64, which gospan's probes rely on.
const defaultMinMinor = 17

// The probe uses the server, the mux, the request, the client and its response, a bufio.Writer,
// a map, a TCP address, a context value and a prepared database/sql statement so that every
// type in goFields reaches the binary's DWARF; it never runs. (The runtime's own types, runtime.g and the map implementation, are
// there in any Go binary.)
const probeMain = `package main

import (
	"bufio"
	"context"
	"database/sql"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
)

type probeKey struct{}

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("/x", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte(r.Method + r.URL.Path + r.Proto + r.Host + r.RemoteAddr))
		_ = r.TLS != nil && r.ContentLength > 0 && r.Header != nil
	})
	u, _ := url.Parse(os.Args[0])
	ctx := context.WithValue(context.Background(), probeKey{}, u)
	if len(os.Args) > 1 && u != nil {
		l, err := net.Listen("tcp", os.Args[1])
		if err == nil {
			if a, ok := l.Addr().(*net.TCPAddr); ok && a.Port > 0 {
				_, _ = os.Stdout.WriteString(a.IP.String())
			}
			_ = (&http.Server{Handler: mux}).Serve(l)
		}
	}
	if len(os.Args) > 2 && u != nil {
		m := map[string][]string{u.Scheme: {u.Host, u.RawQuery, u.User.String()}}
		req, err := http.NewRequestWithContext(ctx, "GET", os.Args[2], nil)
		if err == nil {
			req.Header = m
			resp, err := (&http.Client{}).Do(req)
			if err == nil {
				bw := bufio.NewWriter(os.Stdout)
				_, _ = bw.WriteString(resp.Status)
				_ = bw.Flush()
				_ = resp.StatusCode == len(m) && resp.Body.Close() == nil
			}
		}
	}
	if len(os.Args) > 3 && u != nil {
		db, err := sql.Open(u.Scheme, os.Args[3])
		if err == nil {
			st, err := db.PrepareContext(ctx, u.Path)
			if err == nil {
				_ = st.Close()
			}
			_ = db.Close()
		}
	}
	_ = ctx.Value(probeKey{}) != nil
	runtime.Gosched()
}
`

// go 1.17 in go.mod: every toolchain from 1.17 on accepts it, and a forced GOTOOLCHAIN never
// needs to upgrade past it.
const probeGoMod = "module gospan.invalid/offsetprobe\n\ngo 1.17\n"

// The grpc probe serves the health service (part of grpc-go itself, so no generated code of
// ours) behind an interceptor that looks at the peer and returns a status error, and calls it as
// a client: that links the server transport and its streams, peer.Peer, the client connection
// and its call attempts, and grpc-go's status types with the google.rpc.Status they wrap. The
// unexported types reach DWARF through the functions that use them. It never runs.
const grpcProbeMain = `package main

import (
	"context"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

func main() {
	ctx := context.Background()
	if len(os.Args) > 1 {
		srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req interface{},
			info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (interface{}, error) {
			if p, ok := peer.FromContext(ctx); !ok || p.Addr == nil {
				return nil, status.Error(codes.Unavailable, info.FullMethod)
			}
			return h(ctx, req)
		}))
		healthpb.RegisterHealthServer(srv, health.NewServer())
		if l, err := net.Listen("tcp", os.Args[1]); err == nil {
			_ = srv.Serve(l)
		}
	}
	if len(os.Args) > 2 {
		cc, err := grpc.Dial(os.Args[2], grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err == nil {
			_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
			if s, ok := status.FromError(err); ok {
				_, _ = os.Stdout.WriteString(s.Code().String() + s.Proto().GetMessage())
			}
			_ = cc.Close()
		}
	}
}
`

// The pgx probe connects, reads its connection's configuration, queues a batch and sends it,
// which links Conn and ConnConfig with the embedded pgconn.Config, Batch and QueuedQuery, and
// opens a database through pgx's database/sql driver (stdlib.Conn). It never runs.
const pgxProbeMain = `package main

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

func main() {
	ctx := context.Background()
	if len(os.Args) > 2 {
		// pgx's database/sql driver, whose connections gospan reads too
		_ = stdlib.OpenDB(pgx.ConnConfig{}).Close()
	}
	if len(os.Args) > 1 {
		conn, err := pgx.Connect(ctx, os.Args[1])
		if err == nil {
			cfg := conn.Config()
			_, _ = os.Stdout.WriteString(cfg.Host)
			_ = cfg.Port > 0
			b := &pgx.Batch{}
			b.Queue(os.Args[0])
			_ = b.Len()
			_ = conn.SendBatch(ctx, b).Close()
			_, _ = conn.Exec(ctx, os.Args[0])
			_ = conn.Close(ctx)
		}
	}
}
`

// sqlDriverProbe is the probe of a database/sql driver at import path PKG: it opens a
// database with it and runs a query, which links the driver's connection and its
// configuration. It never runs.
func sqlDriverProbe(pkg string) string {
	return fmt.Sprintf(`package main

import (
	"database/sql"
	"os"

	_ %q
)

func main() {
	if len(os.Args) > 2 {
		db, err := sql.Open(os.Args[1], os.Args[2])
		if err == nil {
			rows, err := db.Query(os.Args[0])
			if err == nil {
				_ = rows.Close()
			}
			_ = db.Close()
		}
	}
}
`, pkg)
}

// The go-redis probe makes a client from Options, runs one command and reads its arguments, and
// runs a pipeline: that links baseClient, Options and baseCmd. It never runs.
const redisProbeMain = `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"
)

func main() {
	ctx := context.Background()
	if len(os.Args) > 1 {
		c := redis.NewClient(&redis.Options{Addr: os.Args[1]})
		cmd := c.Get(ctx, os.Args[0])
		_, _ = os.Stdout.WriteString(cmd.Val() + fmt.Sprint(cmd.Args()...) + c.Options().Addr)
		_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, os.Args[0], os.Args[1], 0)
			return nil
		})
		_ = c.Close()
	}
}
`

// routerProbe is a router probe's program: IMPORTS brings in the framework, SETUP makes r, a
// router with a route that has a path parameter, whose handler reads the route template the
// way the framework offers it; r then serves a request for it through net/http/httptest. That
// links the router's context and route types into the DWARF through the functions that fill
// and read them. It never runs.
func routerProbe(imports, setup string) string {
	return `package main

import (
	"net/http/httptest"
	"os"
` + imports + `)

func main() {
` + setup + `
	if len(os.Args) > 1 {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest("GET", os.Args[1], nil))
		_, _ = os.Stdout.WriteString(w.Body.String())
	}
}
`
}

// gin: the handler's *gin.Context and its FullPath().
var ginProbeMain = routerProbe(`
	"github.com/gin-gonic/gin"
`, `	r := gin.New()
	r.GET("/users/:id", func(c *gin.Context) {
		c.String(200, c.FullPath()+c.Param("id"))
	})`)

// echo v4: the handler's echo.Context, an interface over the unexported *context.
var echoProbeMain = routerProbe(`
	"github.com/labstack/echo/v4"
`, `	r := echo.New()
	r.GET("/users/:id", func(c echo.Context) error {
		return c.String(200, c.Path()+c.Param("id"))
	})`)

// echo v5: the handler's *echo.Context, with the matched route's RouteInfo.
var echo5ProbeMain = routerProbe(`
	"github.com/labstack/echo/v5"
`, `	r := echo.New()
	r.GET("/users/:id", func(c *echo.Context) error {
		return c.String(200, c.Path()+c.RouteInfo().Path+c.Param("id"))
	})`)

// chi: the routing context a request carries, its pattern and its stack of patterns.
var chiProbeMain = routerProbe(`	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
`, `	r := chi.NewRouter()
	r.Get("/users/{id}", func(w http.ResponseWriter, req *http.Request) {
		rc := chi.RouteContext(req.Context())
		_, _ = w.Write([]byte(rc.RoutePattern() + strings.Join(rc.RoutePatterns, ",") +
			chi.URLParam(req, "id")))
	})`)

// gorilla/mux: the matched route's path template, and a RouteMatch filled by Router.Match.
var muxProbeMain = routerProbe(`	"net/http"

	"github.com/gorilla/mux"
`, `	r := mux.NewRouter()
	r.HandleFunc("/users/{id}", func(w http.ResponseWriter, req *http.Request) {
		t, _ := mux.CurrentRoute(req).GetPathTemplate()
		var m mux.RouteMatch
		if r.Match(req, &m) && m.Route != nil {
			t += m.Route.GetName()
		}
		_, _ = w.Write([]byte(t + mux.Vars(req)["id"]))
	})`)

// fasthttp: a server whose handler reads what a span reports, and a HostClient call; the
// *net.TCPConn assertion brings net's conn and netFD into the DWARF. It never runs.
const fasthttpProbeMain = `package main

import (
	"fmt"
	"net"
	"os"

	"github.com/valyala/fasthttp"
)

func main() {
	if len(os.Args) > 1 {
		if ln, err := net.Listen("tcp", os.Args[1]); err == nil {
			_ = fasthttp.Serve(ln, func(ctx *fasthttp.RequestCtx) {
				_, _ = ctx.WriteString(string(ctx.Method()) + string(ctx.RequestURI()) +
					string(ctx.Host()) + string(ctx.Request.Header.Peek("Traceparent")) +
					ctx.RemoteAddr().String() + fmt.Sprint(ctx.IsTLS()))
				ctx.SetStatusCode(ctx.Response.StatusCode())
			})
		}
	}
	if len(os.Args) > 2 {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI(os.Args[2])
		err := (&fasthttp.HostClient{Addr: os.Args[2]}).Do(req, resp)
		u := req.URI()
		_, _ = os.Stdout.WriteString(string(u.Scheme()) + string(u.Host()) + string(u.Path()) +
			string(u.QueryString()) + fmt.Sprint(resp.StatusCode(), err))
		if c, err := net.Dial("tcp", os.Args[2]); err == nil {
			_, _ = os.Stdout.WriteString(c.(*net.TCPConn).RemoteAddr().String())
		}
	}
}
`

// fiberProbe is a Fiber probe's program: a route with a parameter whose handler reads the route
// it matched; CTX is the handler's context type. It never runs.
func fiberProbe(pkg, ctx string) string {
	return `package main

import (
	"os"

	"` + pkg + `"
)

func main() {
	app := fiber.New()
	app.Get("/users/:id", func(c ` + ctx + `) error {
		return c.SendString(c.Route().Path + c.Params("id"))
	})
	if len(os.Args) > 1 {
		_ = app.Listen(os.Args[1])
	}
}
`
}

// modTable is a table keyed by one Go module's version: what to cover, how to probe it.
type modTable struct {
	path     string // the module path, as buildinfo lists it: "google.golang.org/grpc"
	name     string // for messages: "grpc-go"
	major    int    // the major version the table covers, whose path this is
	minMinor int    // the oldest minor of it to cover, unless -*-min-minor says otherwise
	// The probe program (its go.mod is probeGoMod()).
	probeMain string
	// What the table's flags (-grpc-out), its probes' cache ("grpc-probe-<hash>") and their
	// binaries' names start with.
	binPrefix string
	fields    []field
	must      []string
	types     map[string]string
	check     func(structs map[string]*dwarf.StructType, offs map[string]int64) error
}

// probeGoMod is the probe's go.mod before 'go mod tidy' fills in the rest; its %s is the
// module version. go 1.21, the oldest line the installed go command (1.21 or later) leaves
// alone; tidy raises it to what the module requires.
func (m *modTable) probeGoMod() string {
	return fmt.Sprintf("module gospan.invalid/%sprobe\n\ngo 1.21\n\nrequire %s %%s\n",
		m.binPrefix, m.path)
}

// The module tables, in the order their flags are listed. grpc-go 1.50 (October 2022) is the
// oldest release the grpc table covers, gin 1.7 (April 2021) the oldest gin, gorilla/mux 1.6
// (November 2017) the oldest mux; the others cover their whole current major, from its .0.
var modTables = []*modTable{
	{path: "google.golang.org/grpc", name: "grpc-go", major: 1, minMinor: 50,
		probeMain: grpcProbeMain, binPrefix: "grpc", fields: grpcFields, must: grpcMust,
		types: grpcTypes, check: checkGRPC},
	{path: pgxPkg, name: "pgx", major: 5, probeMain: pgxProbeMain, binPrefix: "pgx",
		fields: pgxFields, must: pgxMust, types: pgxTypes,
		check: checkMembers(append(names(pgxFields[:4]), pgxStdlib+".Conn.conn"),
			[][]string{{pgxPkg + ".Batch.QueuedQueries"}, {pgxPkg + ".Batch.queuedQueries"}},
			[][]string{{pgxPkg + ".QueuedQuery.SQL"}, {pgxPkg + ".QueuedQuery.query"}})},
	{path: redisPkg, name: "go-redis", major: 9, probeMain: redisProbeMain,
		binPrefix: "redis", fields: redisFields, must: redisMust, types: redisTypes,
		check: checkMembers(names(redisFields))},
	{path: pqPkg, name: "lib/pq", major: 1, minMinor: 8, probeMain: sqlDriverProbe(pqPkg),
		binPrefix: "pq", fields: pqFields, must: []string{pqPkg + ".conn"}, types: pqTypes,
		check: checkPQ},
	{path: mysqlPkg, name: "go-sql-driver/mysql", major: 1, minMinor: 5,
		probeMain: sqlDriverProbe(mysqlPkg), binPrefix: "mysql", fields: mysqlFields,
		must: []string{mysqlPkg + ".mysqlConn", mysqlPkg + ".Config"}, types: mysqlTypes,
		check: checkMembers(names(mysqlFields))},
	{path: ginPkg, name: "gin", major: 1, minMinor: 7, probeMain: ginProbeMain,
		binPrefix: "gin", fields: ginFields, must: []string{ginPkg + ".Context"},
		types: ginTypes, check: checkMembers(names(ginFields))},
	{path: echoPkg, name: "echo", major: 4, probeMain: echoProbeMain, binPrefix: "echo",
		fields: echoFields, must: []string{echoPkg + ".context"}, types: echoTypes,
		check: checkMembers(names(echoFields))},
	{path: echo5Pkg, name: "echo v5", major: 5, probeMain: echo5ProbeMain,
		binPrefix: "echo5", fields: echo5Fields,
		must:  []string{echo5Pkg + ".Context", echo5Pkg + ".RouteInfo"},
		types: echo5Types, check: checkMembers(echo5Always)},
	{path: chiPkg, name: "chi", major: 5, probeMain: chiProbeMain, binPrefix: "chi",
		fields: chiFields, must: []string{chiPkg + ".Context"}, types: chiTypes,
		check: checkMembers(names(chiFields))},
	{path: fasthttpPkg, name: "fasthttp", major: 1, minMinor: 40, probeMain: fasthttpProbeMain,
		binPrefix: "fasthttp", fields: fasthttpFields, must: fasthttpMust,
		types: fasthttpTypes, check: checkMembers(fasthttpAlways, fasthttpLayouts)},
	{path: fiber2Pkg, name: "fiber v2", major: 2, minMinor: 40,
		probeMain: fiberProbe(fiber2Pkg, "*fiber.Ctx"), binPrefix: "fiber2",
		fields: fiber2Fields, must: []string{fiber2Pkg + ".Ctx", fiber2Pkg + ".Route"},
		types: fiber2Types, check: fiberCheck(fiber2Pkg, "Ctx")},
	{path: fiber3Pkg, name: "fiber v3", major: 3, probeMain: fiberProbe(fiber3Pkg, "fiber.Ctx"),
		binPrefix: "fiber3", fields: fiber3Fields,
		must:  []string{fiber3Pkg + ".DefaultCtx", fiber3Pkg + ".Route"},
		types: fiber3Types, check: fiberCheck(fiber3Pkg, "DefaultCtx")},
	{path: kafkagoPkg, name: "kafka-go", major: 0, minMinor: 4, probeMain: kafkagoProbeMain,
		binPrefix: "kafkago", fields: kafkagoFields,
		must: []string{kafkagoPkg + ".Writer", kafkagoPkg + ".Message",
			kafkagoPkg + "/protocol.Header", kafkagoPkg + ".Reader",
			kafkagoPkg + ".ReaderConfig"},
		types: kafkagoTypes, check: checkMembers(names(kafkagoFields[:14]))},
	{path: saramaPkg, name: "sarama", major: 1, minMinor: 41, probeMain: saramaProbeMain,
		binPrefix: "sarama", fields: saramaFields,
		must: []string{saramaPkg + ".ProducerMessage", saramaPkg + ".asyncProducer",
			saramaPkg + ".ConsumerMessage",
			saramaPkg + ".RecordHeader", saramaPkg + ".partitionConsumer",
			saramaPkg + ".consumerGroupSession", saramaPkg + ".consumerGroup"},
		types: saramaTypes, check: checkMembers(names(saramaFields))},
	{path: "github.com/twmb/franz-go", name: "franz-go", major: 1, minMinor: 21,
		probeMain: franzProbeMain, binPrefix: "franz", fields: franzFields,
		must:  []string{franzPkg + ".Record", franzPkg + ".RecordHeader", franzPkg + ".cfg"},
		types: franzTypes, check: checkMembers(names(franzFields))},
	{path: muxPkg, name: "gorilla/mux", major: 1, minMinor: 6, probeMain: muxProbeMain,
		binPrefix: "mux", fields: muxFields,
		must: []string{muxPkg + ".RouteMatch", muxPkg + ".Route", muxPkg + ".routeRegexpGroup",
			muxPkg + ".routeRegexp"},
		types: muxTypes,
		check: checkMembers([]string{muxPkg + ".RouteMatch.Route",
			muxPkg + ".routeRegexpGroup.path", muxPkg + ".routeRegexp.template"},
			[][]string{{muxPkg + ".Route.*regexp"},
				{muxPkg + ".Route.routeConf", muxPkg + ".routeConf.regexp"}})},
}

// version is a release: a Go toolchain (1.22.12) or a module version (1.62.1 for v1.62.1).
type version struct{ major, minor, patch int }

func (v version) String() string { return fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch) }

// toolchain is the name GOTOOLCHAIN and the proxy use for Go release V: releases before 1.21
// call their first release "go1.N", later ones "go1.N.0".
func (v version) toolchain() string {
	if v.patch == 0 && v.major == 1 && v.minor < 21 {
		return fmt.Sprintf("go%d.%d", v.major, v.minor)
	}
	return "go" + v.String()
}

func (v version) less(w version) bool {
	if v.major != w.major {
		return v.major < w.major
	}
	if v.minor != w.minor {
		return v.minor < w.minor
	}
	return v.patch < w.patch
}

// releaseRE matches release toolchain names only: betas and release candidates never ship in
// production binaries worth tracing, and their structs may still change.
var releaseRE = regexp.MustCompile(`^go(\d+)\.(\d+)(?:\.(\d+))?$`)

func parseToolchain(s string) (version, bool) {
	m := releaseRE.FindStringSubmatch(s)
	if m == nil {
		return version{}, false
	}
	var v version
	v.major, _ = strconv.Atoi(m[1])
	v.minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.patch, _ = strconv.Atoi(m[3])
	}
	return v, true
}

// moduleRE matches module release versions only: a pre-release (v1.59.0-dev, -rc.1) is not a
// release anyone pins, and its layout may be the next release's or not.
var moduleRE = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)$`)

func parseModuleVersion(s string) (version, bool) {
	m := moduleRE.FindStringSubmatch(s)
	if m == nil {
		return version{}, false
	}
	var v version
	v.major, _ = strconv.Atoi(m[1])
	v.minor, _ = strconv.Atoi(m[2])
	v.patch, _ = strconv.Atoi(m[3])
	return v, true
}

// parseVersionList reads "1.22.12,1.23.4" (a leading "go" or "v" is allowed).
func parseVersionList(s string) ([]version, error) {
	var out []version
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, ok := parseToolchain("go" + strings.TrimPrefix(strings.TrimPrefix(f, "go"), "v"))
		if !ok {
			return nil, fmt.Errorf("'%s' is not a release version", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func goEnv(goCmd, key string) (string, error) {
	out, err := exec.Command(goCmd, "env", key).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", key, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// proxyToolchains lists the toolchain releases for this host on the first module proxy in
// GOPROXY that answers. The toolchain module is only fetched through the proxy protocol, so
// GOPROXY=direct or off leaves nothing to ask.
func proxyToolchains(goCmd string) ([]version, error) {
	proxies, err := goEnv(goCmd, "GOPROXY")
	if err != nil {
		return nil, err
	}
	suffix := "." + runtime.GOOS + "-" + runtime.GOARCH
	client := &http.Client{Timeout: 60 * time.Second}
	var errs []error
	for _, p := range strings.FieldsFunc(proxies, func(r rune) bool { return r == ',' || r == '|' }) {
		if !strings.HasPrefix(p, "https://") && !strings.HasPrefix(p, "http://") {
			continue
		}
		url := strings.TrimSuffix(p, "/") + "/golang.org/toolchain/@v/list"
		resp, err := client.Get(url)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			errs = append(errs, fmt.Errorf("%s: %s %v", url, resp.Status, err))
			continue
		}
		var vs []version
		for _, line := range strings.Split(string(body), "\n") {
			name, ok := strings.CutPrefix(strings.TrimSpace(line), "v0.0.1-")
			if !ok || !strings.HasSuffix(name, suffix) {
				continue
			}
			if v, ok := parseToolchain(strings.TrimSuffix(name, suffix)); ok {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			errs = append(errs, fmt.Errorf("%s: no %s toolchains listed", url, suffix[1:]))
			continue
		}
		return vs, nil
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("GOPROXY=%q names no proxy to ask", proxies)
	}
	return nil, errors.Join(errs...)
}

// byMinor returns, for every Go minor from minMinor on, its releases from .0 to the latest
// patch listed. Go numbers patches without gaps, but the proxy's list leaves some out (go1.17
// and go1.19 themselves, for one) although it serves them, so the list only says how far each
// minor goes.
func byMinor(all []version, minMinor int) [][]version {
	latest := map[int]int{}
	for _, v := range all {
		if v.major != 1 || v.minor < minMinor {
			continue
		}
		if p, ok := latest[v.minor]; !ok || v.patch > p {
			latest[v.minor] = v.patch
		}
	}
	var out [][]version
	for minor, last := range latest {
		var g []version
		for patch := 0; patch <= last; patch++ {
			g = append(g, version{1, minor, patch})
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0].less(out[j][0]) })
	return out
}

// groupListed returns, for every MAJOR.N minor from minMinor on, the listed releases of it in
// order. Unlike Go, a module's patch numbers can have gaps that are real (grpc-go never tagged
// v1.52.2), so only listed releases are candidates.
func groupListed(all []version, major, minMinor int) [][]version {
	set := map[version]bool{}
	for _, v := range all {
		if v.major == major && v.minor >= minMinor {
			set[v] = true
		}
	}
	byMinor := map[int][]version{}
	for v := range set {
		byMinor[v.minor] = append(byMinor[v.minor], v)
	}
	var out [][]version
	for _, g := range byMinor {
		sort.Slice(g, func(i, j int) bool { return g[i].less(g[j]) })
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0].less(out[j][0]) })
	return out
}

// moduleListed lists MODULE's releases as `go list -m -versions` gives them through GOPROXY:
// retracted releases and pre-releases (v1.59.0-dev) are left out.
func moduleListed(goCmd, dir, module string) ([]version, error) {
	cmd := exec.Command(goCmd, "list", "-m", "-versions", module)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m -versions %s: %v\n%s", module, err,
			stderr.String())
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 || fields[0] != module {
		return nil, fmt.Errorf("go list -m -versions %s: no versions listed", module)
	}
	var vs []version
	for _, f := range fields[1:] {
		if v, ok := parseModuleVersion(f); ok {
			vs = append(vs, v)
		}
	}
	return vs, nil
}

// moduleInfo is what `go list -m -json MODULE@VERSION` says about one module version.
type moduleInfo struct {
	Version   string
	GoVersion string
	Error     *struct{ Err string }
}

func listModule(goCmd, dir, module string, v version) (*moduleInfo, error) {
	cmd := exec.Command(goCmd, "list", "-m", "-json", module+"@v"+v.String())
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m %s@v%s: %v\n%s", module, v, err, stderr.String())
	}
	var mi moduleInfo
	if err := json.Unmarshal(out, &mi); err != nil {
		return nil, fmt.Errorf("go list -m %s@v%s: %w", module, v, err)
	}
	if mi.Error != nil {
		return nil, fmt.Errorf("go list -m %s@v%s: %s", module, v, mi.Error.Err)
	}
	return &mi, nil
}

// served says whether the proxy serves MODULE's release V, its zip included: a proxy may list
// a release it cannot hand out (403 "not available"), or serve one it does not list.
func served(goCmd, dir, module string, v version) bool {
	cmd := exec.Command(goCmd, "mod", "download", "-json", module+"@v"+v.String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	return cmd.Run() == nil
}

// maxUnlistedPatch bounds the walk through the patches of a minor the list leaves out.
const maxUnlistedPatch = 30

// withServed adds to MINORS (the listed releases, by minor) the releases of MAJOR.minMinor and
// later that the proxy serves although `go list -m -versions` leaves them out: in each minor the
// patches up to its newest listed one and those after it up to the first the proxy does not
// serve, and the minors the list leaves out altogether, up to the first whose .0 it does not
// serve after the newest listed minor. A list can miss much: a retracted release (grpc-go
// v1.74.0, "published prematurely"; every go-redis v9.15 release), a proxy that lists only what
// it has been asked for (one listed echo v4.1.16 but not v4.0.0 to v4.1.15), and binaries built
// with all of these exist. Patches after a gap past the newest listed are not found.
func withServed(goCmd, dir, module string, major, minMinor int, minors [][]version) [][]version {
	listed := map[int]map[int]bool{}
	newest := minMinor - 1
	for _, g := range minors {
		m := g[0].minor
		listed[m] = map[int]bool{}
		for _, v := range g {
			listed[m][v.patch] = true
		}
		newest = max(newest, m)
	}
	var out [][]version
	for minor := minMinor; ; minor++ {
		last := -1
		for p := range listed[minor] {
			last = max(last, p)
		}
		var g, added []version
		for patch := 0; patch <= last+maxUnlistedPatch; patch++ {
			v := version{major, minor, patch}
			if listed[minor][patch] {
				g = append(g, v)
				continue
			}
			if !served(goCmd, dir, module, v) {
				if patch > last {
					break
				}
				continue // never published: grpc-go has no v1.52.2
			}
			g = append(g, v)
			added = append(added, v)
		}
		if len(added) > 0 {
			fmt.Fprintf(os.Stderr, "gen: %s: served though not listed: %v\n", module,
				added)
		}
		if len(g) > 0 {
			out = append(out, g)
		} else if minor > newest {
			return out
		}
	}
}

// probeDir is where a probe's source and builds live in CACHE: a directory named after the
// source, so a binary built from an older probe, which may lack a type the fields now name, is
// never reused for the current one.
func probeDir(cache, prefix string, sources ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(sources, "\x00")))
	return filepath.Join(cache, prefix+hex.EncodeToString(sum[:6]))
}

// writeFiles puts a probe's files in DIR, creating it.
func writeFiles(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// runGo runs the go command in DIR with ENV added, and says what failed with its output.
func runGo(goCmd, dir string, env []string, args ...string) error {
	cmd := exec.Command(goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s (%s): %v\n%s", strings.Join(args, " "), dir,
			strings.Join(env, " "), err, out.String())
	}
	return nil
}

// goBuilder builds the Go probe, one binary per toolchain and GOARCH.
type goBuilder struct{ goCmd, dir string }

func (g *goBuilder) prepare() error {
	if err := os.MkdirAll(filepath.Join(g.dir, "bin"), 0o755); err != nil {
		return err
	}
	return writeFiles(filepath.Join(g.dir, "src"),
		map[string]string{"go.mod": probeGoMod, "main.go": probeMain})
}

// build builds the probe with toolchain V for GOARCH ARCH, unless the cache already has it.
func (g *goBuilder) build(v version, arch string) (string, error) {
	bin := filepath.Join(g.dir, "bin", v.toolchain()+"-"+arch)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	// Unique per run: two runs sharing the cache must not write one file at once.
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	fmt.Fprintf(os.Stderr, "gen: building the Go probe with %s for %s\n", v.toolchain(), arch)
	// GOFLAGS is set to a flag every release knows, so a user's GOFLAGS (say -buildvcs, which
	// 1.17 rejects) cannot break old toolchains; an empty value would not override go env.
	err := runGo(g.goCmd, filepath.Join(g.dir, "src"), []string{"GOTOOLCHAIN=" + v.toolchain(),
		"GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + arch},
		"build", "-o", tmp, ".")
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	// A go command older than 1.21 ignores GOTOOLCHAIN and builds with itself; only the
	// binary's buildinfo says for sure which toolchain built it.
	bi, err := buildinfo.ReadFile(tmp)
	if err == nil && bi.GoVersion != v.toolchain() {
		err = fmt.Errorf("asked for %s, the probe was built by %s", v.toolchain(),
			bi.GoVersion)
	}
	if err == nil {
		err = os.Rename(tmp, bin)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("probe built with %s for %s: %w", v.toolchain(), arch, err)
	}
	return bin, nil
}

// modBuilder builds a module table's probe against one release of the module at a time, with
// the installed Go unless the release needs a newer one.
type modBuilder struct {
	goCmd, dir string
	installed  version // the installed go command's release
	mod        *modTable
}

// toolchainFor is the GOTOOLCHAIN to build the module's release V with: "local" when the
// installed Go is at least what V's go.mod asks for, else that exact release (a go line of
// "1.24" or "1.24.0" means go1.24.0), which the go command fetches through the proxy.
// GOTOOLCHAIN=auto would do the same implicitly; naming it keeps the choice in the build log.
func (g *modBuilder) toolchainFor(v version) (string, error) {
	mi, err := listModule(g.goCmd, g.dir, g.mod.path, v)
	if err != nil {
		return "", err
	}
	if mi.GoVersion == "" {
		return "local", nil
	}
	need, ok := parseToolchain("go" + mi.GoVersion)
	if !ok {
		return "", fmt.Errorf("%s v%s: go.mod's go line '%s' is not a Go release", g.mod.path,
			v, mi.GoVersion)
	}
	if !g.installed.less(need) {
		return "local", nil
	}
	// "go1.24.0", never "go1.24": from 1.21 on the first release carries its ".0".
	if need.minor >= 21 {
		return "go" + need.String(), nil
	}
	return need.toolchain(), nil
}

// prepare writes the probe module for release V and tidies it, once: go.sum is only written by
// a tidy that succeeded.
func (g *modBuilder) prepare(v version, toolchain string) (string, error) {
	src := filepath.Join(g.dir, "src", "v"+v.String())
	if _, err := os.Stat(filepath.Join(src, "go.sum")); err == nil {
		return src, nil
	}
	err := writeFiles(src, map[string]string{"main.go": g.mod.probeMain,
		"go.mod": fmt.Sprintf(g.mod.probeGoMod(), "v"+v.String())})
	if err != nil {
		return "", err
	}
	err = runGo(g.goCmd, src, []string{"GOTOOLCHAIN=" + toolchain, "GOFLAGS=-mod=mod"},
		"mod", "tidy")
	return src, err
}

func (g *modBuilder) build(v version, arch string) (string, error) {
	toolchain, err := g.toolchainFor(v)
	if err != nil {
		return "", err
	}
	builder := toolchain
	if builder == "local" {
		builder = g.installed.toolchain()
	}
	// The Go release is in the name: a cached probe built by another Go is not this one.
	bin := filepath.Join(g.dir, "bin", fmt.Sprintf("%s-v%s-%s-%s", g.mod.binPrefix, v, builder,
		arch))
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	src, err := g.prepare(v, toolchain)
	if err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	fmt.Fprintf(os.Stderr, "gen: building the %s probe with %s v%s, %s, for %s\n",
		g.mod.binPrefix, g.mod.name, v, builder, arch)
	err = runGo(g.goCmd, src, []string{"GOTOOLCHAIN=" + toolchain, "GOFLAGS=-mod=mod",
		"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + arch}, "build", "-o", tmp, ".")
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	// The table is keyed by the module version the binary says it has: check it is the one
	// asked for, not another that the module graph selected or a replacement.
	bi, err := buildinfo.ReadFile(tmp)
	if err == nil {
		err = fmt.Errorf("the probe built for %s v%s does not list %s", g.mod.name, v,
			g.mod.path)
		for _, d := range bi.Deps {
			if d.Path != g.mod.path {
				continue
			}
			err = nil
			if d.Version != "v"+v.String() || d.Replace != nil {
				err = fmt.Errorf("asked for %s v%s, the probe has %s", g.mod.name, v,
					d.Version)
			}
		}
	}
	if err == nil {
		err = os.Rename(tmp, bin)
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return bin, nil
}

// spec is one table: the members it lists, the structs every covered release must have, extra
// checks on what the DWARF gave, and how to build the probe for one of its releases.
type spec struct {
	name   string // "Go", "grpc-go", "pgx", "go-redis": for messages
	fields []field
	must   []string
	types  map[string]string // field name -> the member's type, where it matters
	check  func(structs map[string]*dwarf.StructType, offs map[string]int64) error
	build  func(v version, arch string) (string, error)
}

// checkGoMaps: every Go release has one map implementation, all of whose types gospan reads:
// both or neither would mean a renamed type, and a partial Swiss set a renamed helper type.
func checkGoMaps(structs map[string]*dwarf.StructType, _ map[string]int64) error {
	swiss := 0
	for _, t := range []string{"internal/runtime/maps.Map", "internal/runtime/maps.table",
		"internal/runtime/maps.groupsReference"} {
		if structs[t] != nil {
			swiss++
		}
	}
	if (structs["runtime.hmap"] != nil) == (swiss > 0) || (swiss != 0 && swiss != 3) {
		return fmt.Errorf("DWARF has runtime.hmap: %v and %d of the 3 Swiss map types; "+
			"want exactly one map implementation", structs["runtime.hmap"] != nil, swiss)
	}
	return nil
}

// checkGRPC: the server transport has the peer's address one way or the other, never both and
// never neither (either would be a renamed member gospan would silently lose), and a server
// stream type, where there is one, embeds the common Stream.
func checkGRPC(structs map[string]*dwarf.StructType, offs map[string]int64) error {
	_, remote := offs[grpcTransport+".http2Server.remoteAddr"]
	_, local := offs[grpcTransport+".http2Server.localAddr"]
	_, peer := offs[grpcTransport+".http2Server.peer"]
	if remote != local || remote == peer {
		return fmt.Errorf("http2Server has remoteAddr: %v, localAddr: %v, peer: %v; want "+
			"the two addresses or the peer", remote, local, peer)
	}
	if _, ok := offs[grpcPeer+".Peer.Addr"]; !ok {
		return fmt.Errorf("peer.Peer has no Addr")
	}
	_, embeds := offs[grpcTransport+".ServerStream.Stream"]
	if structs[grpcTransport+".ServerStream"] != nil && !embeds {
		return fmt.Errorf("transport.ServerStream does not embed Stream")
	}
	for _, m := range []string{".Stream.method", ".Stream.ctx", ".Stream.id"} {
		if _, ok := offs[grpcTransport+m]; !ok {
			return fmt.Errorf("transport%s is missing", m)
		}
	}
	return nil
}

// names are the JSON names of FIELDS.
func names(fields []field) []string {
	var out []string
	for _, fl := range fields {
		out = append(out, fl.name())
	}
	return out
}

// checkMembers returns a check that every member in ALL is there and that, of each choice's
// alternatives (members that took one another's place between releases: pgx's renamed
// Batch.queuedQueries, mux's Route.*regexp and its embedded routeConf), exactly one is there,
// all of it, and nothing of the others: none would be a new layout gospan does not know, more
// than one a table no lookup could make sense of.
func checkMembers(all []string, choices ...[][]string) func(map[string]*dwarf.StructType,
	map[string]int64) error {
	return func(_ map[string]*dwarf.StructType, offs map[string]int64) error {
		for _, m := range all {
			if _, ok := offs[m]; !ok {
				return fmt.Errorf("%s is missing", m)
			}
		}
		for _, alts := range choices {
			whole, some := 0, 0
			for _, alt := range alts {
				n := 0
				for _, m := range alt {
					if _, ok := offs[m]; ok {
						n++
					}
				}
				if n > 0 {
					some++
				}
				if n == len(alt) {
					whole++
				}
			}
			if whole != 1 || some != 1 {
				var got []string
				for _, alt := range alts {
					for _, m := range alt {
						if _, ok := offs[m]; ok {
							got = append(got, m)
						}
					}
				}
				return fmt.Errorf("of %v the DWARF has %v; want exactly one", alts, got)
			}
		}
		return nil
	}
}

// readOffsets returns the offsets of the members in SP's fields that BIN's DWARF has.
// debug/elf decompresses .zdebug_* and SHF_COMPRESSED sections, which Go has used since 1.11.
func readOffsets(sp *spec, bin string) (map[string]int64, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	want := map[string]bool{}
	for _, fl := range sp.fields {
		want[fl.typ] = true
	}
	structs := map[string]*dwarf.StructType{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", bin, err)
		}
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagStructType {
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if !want[name] || structs[name] != nil {
			r.SkipChildren()
			continue
		}
		t, err := d.Type(e.Offset)
		if err != nil {
			return nil, fmt.Errorf("%s: type %s: %w", bin, name, err)
		}
		st, ok := t.(*dwarf.StructType)
		if !ok || st.Incomplete {
			return nil, fmt.Errorf("%s: %s is not a complete struct", bin, name)
		}
		structs[name] = st
		r.SkipChildren()
	}
	for _, must := range sp.must {
		if structs[must] == nil {
			return nil, fmt.Errorf("%s: no DWARF for %s, which every %s release has: the "+
				"probe no longer links it", bin, must, sp.name)
		}
	}
	out := map[string]int64{}
	for _, fl := range sp.fields {
		st := structs[fl.typ]
		if st == nil {
			continue
		}
		member, ptrOnly := fl.dwarfMember()
		for _, m := range st.Field {
			if m.Name != member {
				continue
			}
			if _, isPtr := m.Type.(*dwarf.PtrType); isPtr || !ptrOnly {
				out[fl.name()] = m.ByteOffset
			}
			want, ok := sp.types[fl.name()]
			if ok && !slices.Contains(strings.Split(want, "|"), m.Type.String()) {
				return nil, fmt.Errorf("%s: %s is a %s, not a %s", bin, fl.name(),
					m.Type.String(), want)
			}
			break
		}
	}
	if sp.check != nil {
		if err := sp.check(structs, out); err != nil {
			return nil, fmt.Errorf("%s: %w", bin, err)
		}
	}
	return out, nil
}

// prober builds and reads probes, a bounded number at a time.
type prober struct {
	sp     *spec
	arches []string
	slots  chan struct{}
}

// offsets returns the member offsets for release V, after checking that every arch agrees:
// one table serves all 64-bit targets.
func (p *prober) offsets(v version) (map[string]int64, error) {
	p.slots <- struct{}{}
	defer func() { <-p.slots }()
	var first map[string]int64
	for i, arch := range p.arches {
		bin, err := p.sp.build(v, arch)
		if err != nil {
			return nil, err
		}
		offs, err := readOffsets(p.sp, bin)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			first = offs
		} else if !maps.Equal(first, offs) {
			return nil, fmt.Errorf("%s %s: offsets differ between %s and %s:\n%v\n%v",
				p.sp.name, v, p.arches[0], arch, first, offs)
		}
	}
	return first, nil
}

// coverMinor probes the first and last of one minor's releases and, where they differ, bisects
// the releases between them. It returns the releases it probed, in order, with their offsets.
// Patch releases rarely touch these structs, but they can (Go 1.26 grew net/http.response in a
// patch), and a lookup falls back to the nearest listed release below, so every change point
// must be listed. A change undone later in the same minor would go unseen; none is known.
func coverMinor(p *prober, vs []version) ([]version, []map[string]int64, error) {
	got := make([]map[string]int64, len(vs))
	probe := func(i int) error {
		var err error
		if got[i] == nil {
			got[i], err = p.offsets(vs[i])
		}
		return err
	}
	var bisect func(lo, hi int) error
	bisect = func(lo, hi int) error {
		if hi-lo < 2 || maps.Equal(got[lo], got[hi]) {
			return nil
		}
		mid := (lo + hi) / 2
		if err := probe(mid); err != nil {
			return err
		}
		if err := bisect(lo, mid); err != nil {
			return err
		}
		return bisect(mid, hi)
	}
	if err := probe(0); err != nil {
		return nil, nil, err
	}
	if err := probe(len(vs) - 1); err != nil {
		return nil, nil, err
	}
	if err := bisect(0, len(vs)-1); err != nil {
		return nil, nil, err
	}
	var outV []version
	var outO []map[string]int64
	for i, o := range got {
		if o != nil {
			outV = append(outV, vs[i])
			outO = append(outO, o)
		}
	}
	return outV, outO, nil
}

// probeAll covers every minor, minors in parallel, and returns all probed releases in order.
func probeAll(p *prober, minors [][]version) ([]version, []map[string]int64, error) {
	vs := make([][]version, len(minors))
	offs := make([][]map[string]int64, len(minors))
	errs := make([]error, len(minors))
	var wg sync.WaitGroup
	for i := range minors {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			vs[i], offs[i], errs[i] = coverMinor(p, minors[i])
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	var allV []version
	var allO []map[string]int64
	for i := range minors {
		allV = append(allV, vs[i]...)
		allO = append(allO, offs[i]...)
	}
	return allV, allO, nil
}

type entry struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Offset int64  `json:"offset"`
}

type table struct {
	Schema      int                `json:"schema"`
	GeneratedBy string             `json:"generated_by"`
	Versions    []string           `json:"versions"`
	Fields      map[string][]entry `json:"fields"`
}

// fold turns per-version offsets into ranges of consecutive versions with the same offset. A
// version without the member ends a range, so the range never claims a version that lacks it.
func fold(fields []field, versions []version, per []map[string]int64) map[string][]entry {
	out := map[string][]entry{}
	for _, fl := range fields {
		name := fl.name()
		var cur *entry
		es := []entry{}
		for i, v := range versions {
			off, ok := per[i][name]
			if cur != nil && (!ok || off != cur.Offset) {
				es = append(es, *cur)
				cur = nil
			}
			if !ok {
				continue
			}
			if cur == nil {
				cur = &entry{From: v.String(), Offset: off}
			}
			cur.To = v.String()
		}
		if cur != nil {
			es = append(es, *cur)
		}
		out[name] = es
	}
	return out
}

// render writes the table with fields in the order of the fields list and one range per line,
// so a regeneration diff reads as "this member moved in that release".
func render(t *table, fields []field) ([]byte, error) {
	var b bytes.Buffer
	versions, err := json.Marshal(t.Versions)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(&b, "{\n  \"schema\": %d,\n  \"generated_by\": %q,\n  \"versions\": %s,\n",
		t.Schema, t.GeneratedBy, strings.ReplaceAll(string(versions), ",", ", "))
	b.WriteString("  \"fields\": {\n")
	for i, fl := range fields {
		name := fl.name()
		fmt.Fprintf(&b, "    %q: [", name)
		for j, e := range t.Fields[name] {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n      {\"from\": %q, \"to\": %q, \"offset\": %d}", e.From,
				e.To, e.Offset)
		}
		if len(t.Fields[name]) > 0 {
			b.WriteString("\n    ")
		}
		b.WriteString("]")
		if i < len(fields)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("  }\n}\n")
	// What we wrote by hand must read back as the same table.
	var back table
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		return nil, fmt.Errorf("rendered table is not JSON: %w", err)
	}
	return b.Bytes(), nil
}

// generate covers MINORS for SP and writes (or, with VERIFY, compares) the table at OUT.
func generate(sp *spec, minors [][]version, arches []string, slots chan struct{}, out string,
	verify bool) error {
	if len(minors) == 0 {
		return fmt.Errorf("no %s releases to cover", sp.name)
	}
	p := &prober{sp: sp, arches: arches, slots: slots}
	versions, per, err := probeAll(p, minors)
	if err != nil {
		return err
	}
	t := &table{Schema: 1, GeneratedBy: "make offsets", Fields: fold(sp.fields, versions, per)}
	for _, v := range versions {
		t.Versions = append(t.Versions, v.String())
	}
	data, err := render(t, sp.fields)
	if err != nil {
		return err
	}
	if verify {
		old, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		if !bytes.Equal(old, data) {
			os.Stdout.Write(data)
			return fmt.Errorf("%s differs from what the %s builds give (printed above)", out,
				sp.name)
		}
		fmt.Fprintf(os.Stderr, "gen: %s matches %d %s releases\n", out, len(versions),
			sp.name)
		return nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: wrote %s: %d %s releases, %s to %s\n", out, len(versions),
		sp.name, t.Versions[0], t.Versions[len(t.Versions)-1])
	return nil
}

// modFlags are one module table's flags: -NAME-out, -NAME-versions, -NAME-min-minor.
type modFlags struct {
	mod      *modTable
	out      *string
	list     *string
	minMinor *int
}

func run() error {
	out := flag.String("out", "", "where to write the Go table (go_offsets.json)")
	cache := flag.String("cache", filepath.Join(os.TempDir(), "gospan-offsets-gen"),
		"directory for probe sources and binaries, reused across runs")
	minMinor := flag.Int("min-minor", defaultMinMinor, "oldest Go 1.N minor to cover")
	list := flag.String("versions", "",
		"comma-separated Go releases standing in for the module proxy's list (e.g. 1.22.12,1.23.4)")
	var mods []modFlags
	for _, m := range modTables {
		p := m.binPrefix
		mods = append(mods, modFlags{mod: m,
			out: flag.String(p+"-out", "", fmt.Sprintf("where to write the %s table "+
				"(%s_offsets.json)", m.name, p)),
			list: flag.String(p+"-versions", "", fmt.Sprintf("comma-separated %s "+
				"releases standing in for the module proxy's list (e.g. %d.3.0,%d.3.1)",
				m.name, m.major, m.major)),
			minMinor: flag.Int(p+"-min-minor", m.minMinor, fmt.Sprintf("oldest %s "+
				"%d.N minor to cover", m.name, m.major)),
		})
	}
	arches := flag.String("arches", "amd64",
		"GOARCHes to build for (e.g. amd64,arm64); the offsets must agree, as one table serves all")
	jobs := flag.Int("j", min(runtime.NumCPU(), 4), "probe builds to run at once")
	verify := flag.Bool("verify", false,
		"compare with the -out and -*-out files instead of writing them; exit 1 on a difference")
	dir := flag.String("dir", "", "write (with -verify, compare) every table, as "+
		"DIR/go_offsets.json and DIR/NAME_offsets.json, where -out and -NAME-out say nothing else")
	flag.Parse()
	if *dir != "" {
		if *out == "" {
			*out = filepath.Join(*dir, "go_offsets.json")
		}
		for _, mf := range mods {
			if *mf.out == "" {
				*mf.out = filepath.Join(*dir, mf.mod.binPrefix+"_offsets.json")
			}
		}
	}
	want := *out != ""
	for _, mf := range mods {
		want = want || *mf.out != ""
	}
	if !want || flag.NArg() != 0 {
		flag.Usage()
		usage := "usage: gen [-dir DIR] [-out go_offsets.json]"
		for _, m := range modTables {
			usage += fmt.Sprintf(" [-%s-out %s_offsets.json]", m.binPrefix, m.binPrefix)
		}
		return errors.New(usage + " [flags]; at least one table")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*cache, 0o755); err != nil {
		return err
	}
	slots := make(chan struct{}, max(*jobs, 1))
	archList := strings.Split(*arches, ",")

	// Each table's plan (which releases, how to build them) is made first, so that a failure
	// to list one is known before hours of building the others.
	type job struct {
		sp     *spec
		minors [][]version
		out    string
	}
	var plans []job
	if *out != "" {
		var candidates []version
		if *list != "" {
			candidates, err = parseVersionList(*list)
		} else {
			candidates, err = proxyToolchains(goCmd)
		}
		if err != nil {
			return err
		}
		g := &goBuilder{goCmd: goCmd, dir: probeDir(*cache, "probe-", probeGoMod, probeMain)}
		if err := g.prepare(); err != nil {
			return err
		}
		plans = append(plans, job{&spec{name: "Go", fields: goFields, must: goMust,
			types: goTypes, check: checkGoMaps, build: g.build},
			byMinor(candidates, *minMinor), *out})
	}
	var installed version
	for _, mf := range mods {
		m := mf.mod
		if *mf.out == "" {
			continue
		}
		if installed == (version{}) {
			gv, err := goEnv(goCmd, "GOVERSION")
			if err != nil {
				return err
			}
			var ok bool
			if installed, ok = parseToolchain(gv); !ok {
				return fmt.Errorf("the installed Go '%s' is not a release: the module "+
					"probes are built with it", gv)
			}
		}
		g := &modBuilder{goCmd: goCmd, installed: installed, mod: m,
			dir: probeDir(*cache, m.binPrefix+"-probe-", m.probeGoMod(), m.probeMain)}
		if err := os.MkdirAll(g.dir, 0o755); err != nil {
			return err
		}
		var candidates []version
		if *mf.list != "" {
			candidates, err = parseVersionList(*mf.list)
		} else {
			candidates, err = moduleListed(goCmd, g.dir, m.path)
		}
		if err != nil {
			return err
		}
		minors := groupListed(candidates, m.major, *mf.minMinor)
		if *mf.list == "" {
			minors = withServed(goCmd, g.dir, m.path, m.major, *mf.minMinor, minors)
		}
		plans = append(plans, job{&spec{name: m.name, fields: m.fields, must: m.must,
			types: m.types, check: m.check, build: g.build}, minors, *mf.out})
	}
	// All tables at once, their builds sharing the -j slots.
	errs := make([]error, len(plans))
	var wg sync.WaitGroup
	for i := range plans {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			j := plans[i]
			errs[i] = generate(j.sp, j.minors, archList, slots, j.out, *verify)
		}(i)
	}
	wg.Wait()
	return errors.Join(errs...)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
}

// Command gen writes offsets/go_offsets.json, the per-Go-version struct member offsets gospan's
// probes need. For every Go minor from 1.17 on that the Go module proxy carries toolchains for,
// it builds a small net/http program with the minor's first and latest releases, reads the
// members' offsets from the programs' DWARF, and where the two differ bisects the patch releases
// in between until it finds the release that changed the layout. The table then lists every
// release it built, and folds the offsets into ranges of consecutive releases over which they
// hold. Builds are cached in a temporary directory, so running it again costs little. Run it
// with `make offsets`.
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
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fields is the one list of what gospan reads from Go's structs: the JSON names are
// "<type>.<member>", as in go_field_names[] in exporter/offsets.c. A member a release does not
// have (Request.Pattern before 1.23, Request.pat and the pattern type before 1.22) is left out of
// that release's table rather than treated as an error.
var fields = []struct{ typ, member string }{
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
}

// Go 1.17 is the first release with the register ABI on amd64, which gospan's probes rely on.
const defaultMinMinor = 17

// The probe uses the server, the mux, the request, the client and its response, a bufio.Writer
// and a map so that every type in fields reaches the binary's DWARF; it never runs. (The
// runtime's own types, runtime.g and the map implementation, are there in any Go binary.)
const probeMain = `package main

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
)

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("/x", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte(r.Method + r.URL.Path + r.Proto + r.Host + r.RemoteAddr))
		_ = r.TLS != nil && r.ContentLength > 0 && r.Header != nil
	})
	u, _ := url.Parse(os.Args[0])
	if len(os.Args) > 1 && u != nil {
		l, err := net.Listen("tcp", os.Args[1])
		if err == nil {
			_ = (&http.Server{Handler: mux}).Serve(l)
		}
	}
	if len(os.Args) > 2 && u != nil {
		m := map[string][]string{u.Scheme: {u.Host, u.RawQuery, u.User.String()}}
		req, err := http.NewRequest("GET", os.Args[2], nil)
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
	runtime.Gosched()
}
`

// go 1.17 in go.mod: every toolchain from 1.17 on accepts it, and a forced GOTOOLCHAIN never
// needs to upgrade past it.
const probeGoMod = "module gospan.invalid/offsetprobe\n\ngo 1.17\n"

type goVersion struct{ major, minor, patch int }

func (v goVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch) }

// toolchain is the name GOTOOLCHAIN and the proxy use: releases before 1.21 call their first
// release "go1.N", later ones "go1.N.0".
func (v goVersion) toolchain() string {
	if v.patch == 0 && v.major == 1 && v.minor < 21 {
		return fmt.Sprintf("go%d.%d", v.major, v.minor)
	}
	return "go" + v.String()
}

func (v goVersion) less(w goVersion) bool {
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

func parseToolchain(s string) (goVersion, bool) {
	m := releaseRE.FindStringSubmatch(s)
	if m == nil {
		return goVersion{}, false
	}
	var v goVersion
	v.major, _ = strconv.Atoi(m[1])
	v.minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.patch, _ = strconv.Atoi(m[3])
	}
	return v, true
}

func parseVersionList(s string) ([]goVersion, error) {
	var out []goVersion
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, ok := parseToolchain("go" + strings.TrimPrefix(f, "go"))
		if !ok {
			return nil, fmt.Errorf("'%s' is not a Go release version", f)
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
func proxyToolchains(goCmd string) ([]goVersion, error) {
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
		var vs []goVersion
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

// byMinor returns, for every minor from minMinor on, its releases from .0 to the latest patch
// listed. Go numbers patches without gaps, but the proxy's list leaves some out (go1.17 and
// go1.19 themselves, for one) although it serves them, so the list only says how far each
// minor goes.
func byMinor(all []goVersion, minMinor int) [][]goVersion {
	latest := map[int]int{}
	for _, v := range all {
		if v.major != 1 || v.minor < minMinor {
			continue
		}
		if p, ok := latest[v.minor]; !ok || v.patch > p {
			latest[v.minor] = v.patch
		}
	}
	var out [][]goVersion
	for minor, last := range latest {
		var g []goVersion
		for patch := 0; patch <= last; patch++ {
			g = append(g, goVersion{1, minor, patch})
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0].less(out[j][0]) })
	return out
}

// probeDir is where the probe's source and builds live in CACHE: a directory named after the
// source, so a binary built from an older probe, which may lack a type fields now names, is never
// reused for the current one.
func probeDir(cache string) string {
	sum := sha256.Sum256([]byte(probeGoMod + "\x00" + probeMain))
	return filepath.Join(cache, "probe-"+hex.EncodeToString(sum[:6]))
}

// writeProbe puts the probe's source in the cache once, before any build reads it.
func writeProbe(cache string) error {
	src := filepath.Join(cache, "src")
	if err := os.MkdirAll(filepath.Join(cache, "bin"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(probeGoMod), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(src, "main.go"), []byte(probeMain), 0o644)
}

// buildProbe builds the probe with toolchain V for GOARCH ARCH, unless the cache already has it.
func buildProbe(goCmd, cache string, v goVersion, arch string) (string, error) {
	bin := filepath.Join(cache, "bin", v.toolchain()+"-"+arch)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	// Unique per run: two runs sharing the cache must not write one file at once.
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	cmd := exec.Command(goCmd, "build", "-o", tmp, ".")
	cmd.Dir = filepath.Join(cache, "src")
	// GOFLAGS is set to a flag every release knows, so a user's GOFLAGS (say -buildvcs, which
	// 1.17 rejects) cannot break old toolchains; an empty value would not override go env.
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+v.toolchain(), "GOFLAGS=-mod=mod",
		"CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	fmt.Fprintf(os.Stderr, "gen: building probe with %s for %s\n", v.toolchain(), arch)
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("building with %s for %s: %v\n%s", v.toolchain(), arch, err,
			stderr.String())
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

// readOffsets returns the offsets of the members in fields that the binary's DWARF has.
// debug/elf decompresses .zdebug_* and SHF_COMPRESSED sections, which Go has used since 1.11.
func readOffsets(bin string) (map[string]int64, error) {
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
	for _, fl := range fields {
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
	// The types every supported release has must be there: their absence means the probe no
	// longer pulls them in, not that Go dropped them.
	for _, must := range []string{"runtime.g", "net/http.Request", "net/url.URL",
		"net/http.response", "net/http.Response", "bufio.Writer"} {
		if structs[must] == nil {
			return nil, fmt.Errorf("%s: no DWARF for %s", bin, must)
		}
	}
	// Every release has one map implementation, all of whose types gospan reads: both or
	// neither would mean a renamed type, and a partial Swiss set a renamed helper type.
	swiss := 0
	for _, t := range []string{"internal/runtime/maps.Map", "internal/runtime/maps.table",
		"internal/runtime/maps.groupsReference"} {
		if structs[t] != nil {
			swiss++
		}
	}
	if (structs["runtime.hmap"] != nil) == (swiss > 0) || (swiss != 0 && swiss != 3) {
		return nil, fmt.Errorf("%s: DWARF has runtime.hmap: %v and %d of the 3 Swiss map "+
			"types; want exactly one map implementation",
			bin, structs["runtime.hmap"] != nil, swiss)
	}
	out := map[string]int64{}
	for _, fl := range fields {
		st := structs[fl.typ]
		if st == nil {
			continue
		}
		for _, m := range st.Field {
			if m.Name == fl.member {
				out[fl.typ+"."+fl.member] = m.ByteOffset
				break
			}
		}
	}
	return out, nil
}

// prober builds and reads probes, a bounded number at a time.
type prober struct {
	goCmd, cache string
	arches       []string
	slots        chan struct{}
}

// offsets returns the member offsets for release V, after checking that every arch agrees:
// one table serves all 64-bit targets.
func (p *prober) offsets(v goVersion) (map[string]int64, error) {
	p.slots <- struct{}{}
	defer func() { <-p.slots }()
	var first map[string]int64
	for i, arch := range p.arches {
		bin, err := buildProbe(p.goCmd, p.cache, v, arch)
		if err != nil {
			return nil, err
		}
		offs, err := readOffsets(bin)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			first = offs
		} else if !maps.Equal(first, offs) {
			return nil, fmt.Errorf("Go %s: offsets differ between %s and %s:\n%v\n%v", v,
				p.arches[0], arch, first, offs)
		}
	}
	return first, nil
}

// coverMinor probes the first and last of one minor's releases and, where they differ, bisects
// the releases between them. It returns the releases it probed, in order, with their offsets.
// Patch releases rarely touch these structs, but they can (1.26 grew net/http.response in a
// patch), and a lookup falls back to the nearest listed release below, so every change point
// must be listed. A change undone later in the same minor would go unseen; none is known.
func coverMinor(p *prober, vs []goVersion) ([]goVersion, []map[string]int64, error) {
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
	var outV []goVersion
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
func probeAll(p *prober, minors [][]goVersion) ([]goVersion, []map[string]int64, error) {
	vs := make([][]goVersion, len(minors))
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
	var allV []goVersion
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
func fold(versions []goVersion, per []map[string]int64) map[string][]entry {
	out := map[string][]entry{}
	for _, fl := range fields {
		name := fl.typ + "." + fl.member
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
func render(t *table) ([]byte, error) {
	var b bytes.Buffer
	versions, err := json.Marshal(t.Versions)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(&b, "{\n  \"schema\": %d,\n  \"generated_by\": %q,\n  \"versions\": %s,\n",
		t.Schema, t.GeneratedBy, strings.ReplaceAll(string(versions), ",", ", "))
	b.WriteString("  \"fields\": {\n")
	for i, fl := range fields {
		name := fl.typ + "." + fl.member
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

func run() error {
	out := flag.String("out", "", "where to write the table (required)")
	cache := flag.String("cache", filepath.Join(os.TempDir(), "gospan-offsets-gen"),
		"directory for probe sources and binaries, reused across runs")
	minMinor := flag.Int("min-minor", defaultMinMinor, "oldest Go 1.N minor to cover")
	list := flag.String("versions", "",
		"comma-separated releases standing in for the module proxy's list (e.g. 1.22.12,1.23.4)")
	arches := flag.String("arches", "amd64",
		"GOARCHes to build for (e.g. amd64,arm64); the offsets must agree, as one table serves all")
	jobs := flag.Int("j", min(runtime.NumCPU(), 4), "probe builds to run at once")
	verify := flag.Bool("verify", false, "compare with -out instead of writing it; exit 1 on a difference")
	flag.Parse()
	if *out == "" || flag.NArg() != 0 {
		flag.Usage()
		return errors.New("usage: gen -out FILE [flags]")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return err
	}

	var candidates []goVersion
	if *list != "" {
		candidates, err = parseVersionList(*list)
	} else {
		candidates, err = proxyToolchains(goCmd)
	}
	if err != nil {
		return err
	}
	minors := byMinor(candidates, *minMinor)
	if len(minors) == 0 {
		return errors.New("no Go releases to cover")
	}
	dir := probeDir(*cache)
	if err := writeProbe(dir); err != nil {
		return err
	}
	p := &prober{goCmd: goCmd, cache: dir, arches: strings.Split(*arches, ","),
		slots: make(chan struct{}, max(*jobs, 1))}
	versions, per, err := probeAll(p, minors)
	if err != nil {
		return err
	}

	t := &table{Schema: 1, GeneratedBy: "make offsets", Fields: fold(versions, per)}
	for _, v := range versions {
		t.Versions = append(t.Versions, v.String())
	}
	data, err := render(t)
	if err != nil {
		return err
	}
	if *verify {
		old, err := os.ReadFile(*out)
		if err != nil {
			return err
		}
		if !bytes.Equal(old, data) {
			os.Stdout.Write(data)
			return fmt.Errorf("%s differs from what the toolchains give (printed above)", *out)
		}
		fmt.Fprintf(os.Stderr, "gen: %s matches %d releases\n", *out, len(versions))
		return nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", *out, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, *out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: wrote %s: %d releases, %s to %s\n", *out, len(versions),
		t.Versions[0], t.Versions[len(t.Versions)-1])
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
}

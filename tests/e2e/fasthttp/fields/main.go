// fields prints struct field offsets from a Go binary's DWARF, for SITES.md: either every field
// of the named struct types, or (-c) the offset of a field chain from a root type, descending
// into embedded structs where a name is not found at one level.
//
//	fields BINARY TYPE...                  e.g. github.com/valyala/fasthttp.RequestCtx
//	fields BINARY -c TYPE:a.b.c...         e.g. github.com/valyala/fasthttp.RequestCtx:Request.Header.method
package main

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
	"strings"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: fields BINARY TYPE... | fields BINARY -c TYPE:a.b...")
		os.Exit(2)
	}
	f, err := elf.Open(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "fields: cannot open '%s': %v\n", os.Args[1], err)
		os.Exit(1)
	}
	d, err := f.DWARF()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fields: cannot read DWARF of '%s': %v\n", os.Args[1], err)
		os.Exit(1)
	}
	if os.Args[2] == "-c" {
		types := map[string]dwarf.Offset{}
		r := d.Reader()
		for {
			e, err := r.Next()
			if err != nil || e == nil {
				break
			}
			if e.Tag == dwarf.TagStructType {
				if n, ok := e.Val(dwarf.AttrName).(string); ok {
					if _, dup := types[n]; !dup {
						types[n] = e.Offset
					}
				}
			}
		}
		for _, spec := range os.Args[3:] {
			fmt.Printf("  %-52s %s\n", spec, chain(d, types, spec))
		}
		return
	}
	want := map[string]bool{}
	for _, n := range os.Args[2:] {
		want[n] = true
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagStructType {
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if !want[name] {
			continue
		}
		t, err := d.Type(e.Offset)
		if err != nil {
			continue
		}
		st := t.(*dwarf.StructType)
		fmt.Printf("%s (size %#x)\n", name, st.ByteSize)
		for _, fl := range st.Field {
			fmt.Printf("  %#6x %-28s %s\n", fl.ByteOffset, fl.Name, fl.Type.String())
		}
		delete(want, name)
	}
	for n := range want {
		fmt.Printf("%s: not found\n", n)
	}
}

// chain resolves ROOT:a.b.c to an offset, descending into struct fields; a field missing at
// one level is looked for inside embedded ("header") fields too.
func chain(d *dwarf.Data, types map[string]dwarf.Offset, spec string) string {
	parts := strings.SplitN(spec, ":", 2)
	off, ok := types[parts[0]]
	if !ok {
		return "type not found"
	}
	t, _ := d.Type(off)
	total := int64(0)
	path := []string{}
	for _, name := range strings.Split(parts[1], ".") {
		st, ok := t.(*dwarf.StructType)
		if !ok {
			return fmt.Sprintf("not a struct at %s: %T", name, t)
		}
		f := field(st, name)
		if f == nil {
			// embedded?
			for _, ef := range st.Field {
				et := ef.Type
				if tt, ok := et.(*dwarf.TypedefType); ok {
					et = tt.Type
				}
				if es, ok := et.(*dwarf.StructType); ok && field(es, name) != nil && ef.Name != name {
					total += ef.ByteOffset
					path = append(path, ef.Name)
					st = es
					f = field(es, name)
					break
				}
			}
		}
		if f == nil {
			return "-"
		}
		total += f.ByteOffset
		path = append(path, name)
		t = f.Type
		if pt, ok := t.(*dwarf.TypedefType); ok {
			t = pt.Type
		}
	}
	return fmt.Sprintf("%#x  (%s) %s", total, strings.Join(path, "."), t.String())
}

func field(st *dwarf.StructType, name string) *dwarf.StructField {
	for _, f := range st.Field {
		if f.Name == name {
			return f
		}
	}
	return nil
}

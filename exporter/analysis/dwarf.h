/* SPDX-License-Identifier: MIT */
/*
 * Struct member offsets read from the target's own DWARF with libdw. A binary that carries its
 * debug information describes its exact layouts, so a Go release newer than the offset tables
 * works without regenerating them; the tables remain the answer for binaries built with -w.
 */
#ifndef GOSPAN_DWARF_H
#define GOSPAN_DWARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/fields.h"

/*
 * Reads the offsets of the members FIELDS names ("net/http.Request.Method", a member written
 * "STRUCT.*MEMBER" only where it is a pointer) from PATH's DWARF: OUT[i] (one per field) = byte
 * offset of the member, or -1 when the DWARF has no such struct or member (a release without it,
 * or a part of a module the binary does not link). 0 when the DWARF was read, even when it
 * describes none of the structs (every field -1); -ENODATA when PATH has no DWARF (stripped,
 * -ldflags=-w); -EINVAL on bad arguments or when the ELF file or its DWARF is corrupt or
 * truncated; -ENOEXEC when PATH is not ELF; else open(2)'s errno; failures logged.
 */
int dwarf__read_fields(const char *path, const struct offsets_fields *fields, int64_t *out);

/*
 * The reads keep the last binary's DWARF open, inflated, for the next read of the same file:
 * closes it. The end of a target's analysis calls it.
 */
void dwarf__release(void);

/*
 * Reads the offsets of the fields in go_field_names[] (fields.h) from PATH's DWARF.
 * OUT[i] = byte offset of the member, or -1 when the binary's DWARF has no such struct/member.
 * 0 on success (at least runtime.g.goid found); -ENODATA when PATH has no DWARF (stripped,
 * -ldflags=-w); other negative errno on failure, logged: -ENOENT when the DWARF describes no
 * runtime.g.goid (not a Go binary), -ENOEXEC when PATH is not ELF, -EINVAL when the ELF file or
 * its DWARF is corrupt or truncated, else open(2)'s errno.
 */
int dwarf__read_offsets(const char *path, int64_t out[GO_FIELD__COUNT]);

/*
 * dwarf__read_fields() of the fields in grpc_field_names[] (fields.h): a client has no
 * server transport, a Go binary without grpc-go none of them, and is no error.
 */
int dwarf__read_grpc_offsets(const char *path, int64_t out[GRPC_FIELD__COUNT]);

#define DWARF_MAX_PARAMS 32
#define DWARF_MAX_DEREFS 3
#define DWARF_NAME_MAX 64

/* Go's reflect.Kind numbering, as DW_AT_go_kind carries it. */
enum go_kind {
	GO_KIND_BOOL = 1,
	GO_KIND_INT = 2,
	GO_KIND_INT64 = 6,
	GO_KIND_UINT = 7,
	GO_KIND_UINTPTR = 12,
	GO_KIND_FLOAT32 = 13,
	GO_KIND_FLOAT64 = 14,
	GO_KIND_COMPLEX64 = 15,
	GO_KIND_COMPLEX128 = 16,
	GO_KIND_ARRAY = 17,
	GO_KIND_CHAN = 18,
	GO_KIND_FUNC = 19,
	GO_KIND_INTERFACE = 20,
	GO_KIND_MAP = 21,
	GO_KIND_PTR = 22,
	GO_KIND_SLICE = 23,
	GO_KIND_STRING = 24,
	GO_KIND_STRUCT = 25,
	GO_KIND_UNSAFE_POINTER = 26,
};

/* One input parameter of a function, receiver first, with what the register ABI needs. */
struct dwarf_param {
	char name[DWARF_NAME_MAX];
	int kind;	       /* enum go_kind of the parameter's type */
	unsigned size;	       /* bytes */
	unsigned nint, nfloat; /* registers it takes if it takes any */
	bool stack;	       /* the ABI never passes it in registers */
};

/* One argument path to resolve: "key", "s.cfg.Limit", "o.Customer.Name". */
struct dwarf_arg {
	const char *path; /* in */
	int err;	  /* out: 0; -ENOENT no such parameter or field; -EOPNOTSUPP unreadable type */
	char why[128];	  /* out: when ERR, what is wrong, for the message */
	unsigned param;	  /* out: index of the parameter the path starts from */
	int kind;	  /* out: enum go_kind of the value */
	unsigned size;	  /* out: the value's size */
	unsigned nderefs; /* out: 0 = the parameter's registers; else pointer hops, OFFS as BPF uses */
	int32_t offs[DWARF_MAX_DEREFS];
};

/* A function to look up by its symbol name. */
struct dwarf_func {
	const char *name; /* in */
	struct dwarf_arg *args; /* in/out, NARGS of them */
	size_t nargs;
	bool found;   /* out: it has an out-of-line body described in DWARF */
	bool inlined; /* out: DWARF has an abstract (inlined) instance of it */
	size_t nparams;
	struct dwarf_param params[DWARF_MAX_PARAMS];
};

/*
 * Looks FUNCS[0..N) up in PATH's DWARF: parameters, argument paths, inlining. 0 when the DWARF
 * was read (functions it does not describe stay !found); -ENODATA when PATH has no DWARF; other
 * negative errno on failure, logged.
 */
int dwarf__read_funcs(const char *path, struct dwarf_func *funcs, size_t n);

#endif

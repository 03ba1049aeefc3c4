// SPDX-License-Identifier: MIT
/*
 * Struct member offsets from a Go binary's DWARF, through libdw: the fields of any offset table
 * (Go's own structs, grpc-go's, pgx's, go-redis's), whose names say which struct and member to
 * look for. Go's linker puts every struct type at the top level of a compile unit, named with its
 * full import path ("net/http.Request", "google.golang.org/grpc/internal/transport.Stream"), its
 * members as DW_TAG_member children with a constant DW_AT_data_member_location. So only the
 * top-level DIEs of each unit are looked at, nothing deeper than the members of a wanted struct,
 * and the walk stops once every wanted struct has been seen or is known to be absent: a binary
 * has one map implementation, not both, and the linker moves every type into one unit of the
 * runtime package (movetomodule in cmd/link/internal/ld/dwarf.go), so a struct that unit lacks is
 * not in the binary (most services link no database/sql, many no grpc-go). Every loop is bounded
 * and every offset checked, because a corrupt file must cost a warning, never a wrong offset
 * handed to BPF.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

#include "analysis/dwarf.h"
#include "core/log.h"

/*
 * Bounds that no real binary comes near (a large Go service has some 10^5 top-level DIEs in a few
 * hundred units, and runtime.g, the biggest struct read, some 60 members). They only keep a
 * corrupt file from turning into a long walk.
 */
#define MAX_UNITS (1 << 20)
#define MAX_TOP_DIES (1UL << 24)
#define MAX_MEMBERS 4096
/* The same bound the offset tables use: beyond it BPF would read unrelated memory. */
#define OFFSET_MAX (1 << 16)
#define STRUCT_NAME_MAX 128
/* Fields one walk can look for: more than any table has. */
#define WALK_MAX_FIELDS 64

_Static_assert(GO_FIELD__COUNT <= WALK_MAX_FIELDS && GRPC_FIELD__COUNT <= WALK_MAX_FIELDS &&
		       PGX_FIELD__COUNT <= WALK_MAX_FIELDS && REDIS_FIELD__COUNT <= WALK_MAX_FIELDS,
	       "a table has more fields than a DWARF walk can look for");

/*
 * Structs a binary has one or the other of, never both: Go's maps are the bucketed runtime.hmap
 * up to 1.23 (and in 1.24 and 1.25 built with GOEXPERIMENT=noswissmap), the Swiss tables of
 * internal/runtime/maps from 1.24 on. Finding one settles the other, so that the walk can stop
 * early in a binary of either kind. A name ending in '.' stands for every struct of a package.
 */
static const struct {
	const char *a, *b;
} exclusive_structs[] = {
	{ "runtime.hmap", "internal/runtime/maps." },
};

/*
 * Structs reached only through a member of another (named as the tables name fields): Go before
 * 1.22 has neither Request.pat nor net/http.pattern, and once Request is seen without pat there
 * is no pattern to look for.
 */
static const struct {
	const char *name;
	const char *via;
} dependent_structs[] = {
	{ "net/http.pattern", "net/http.Request.pat" },
};

struct want_struct {
	char name[STRUCT_NAME_MAX]; /* as Go's DWARF names it: "net/http.Request" */
	bool found;
	bool settled; /* found, or known not to be in this binary */
};

struct walk {
	const char *path;
	const struct offsets_fields *fields; /* what to look for */
	int64_t *out;			     /* one per field */
	struct want_struct structs[WALK_MAX_FIELDS];
	size_t nstructs, nfound, nsettled;
	size_t field_struct[WALK_MAX_FIELDS]; /* index into structs */
	const char *field_member[WALK_MAX_FIELDS];
	/* The field was named "STRUCT.*MEMBER": it counts only when the member is a pointer. */
	bool field_ptr_only[WALK_MAX_FIELDS];
	unsigned long dies; /* top-level DIEs looked at, against MAX_TOP_DIES */
};

static bool type_of(Dwarf_Die *die, Dwarf_Die *out);

/* Splits each field name at its last '.' into struct and member, and lists each struct once. */
static int plan_fields(struct walk *w)
{
	const char *name, *dot;
	size_t f, s, len;

	if (w->fields->count > WALK_MAX_FIELDS) {
		pr_err("cannot look up the %s fields in DWARF: %zu of them, at most %d",
		       w->fields->what, w->fields->count, WALK_MAX_FIELDS);
		return -EINVAL;
	}
	for (f = 0; f < w->fields->count; f++) {
		name = w->fields->names[f];
		dot = strrchr(name, '.');
		len = dot ? (size_t)(dot - name) : 0;
		if (!len || len >= STRUCT_NAME_MAX || !dot[1]) {
			pr_err("cannot look up field '%s' in DWARF: not STRUCT.MEMBER", name);
			return -EINVAL;
		}
		for (s = 0; s < w->nstructs; s++) {
			if (!strncmp(w->structs[s].name, name, len) && !w->structs[s].name[len])
				break;
		}
		if (s == w->nstructs) {
			memcpy(w->structs[s].name, name, len);
			w->structs[s].name[len] = '\0';
			w->nstructs++;
		}
		w->field_struct[f] = s;
		w->field_ptr_only[f] = dot[1] == '*';
		w->field_member[f] = dot + 1 + w->field_ptr_only[f];
		if (!*w->field_member[f]) {
			pr_err("cannot look up field '%s' in DWARF: no member name", name);
			return -EINVAL;
		}
	}
	return 0;
}

/* Whether struct NAME is PAT, or in package PAT when PAT ends with '.'. */
static bool struct_matches(const char *name, const char *pat)
{
	size_t len = strlen(pat);

	if (len && pat[len - 1] == '.')
		return !strncmp(name, pat, len) && !strchr(name + len, '.');
	return !strcmp(name, pat);
}

static void settle(struct walk *w, size_t s)
{
	if (w->structs[s].settled)
		return;
	w->structs[s].settled = true;
	w->nsettled++;
}

/* The index of the field named NAME in the walk's table, or -1 when it has none. */
static ssize_t field_index(const struct walk *w, const char *name)
{
	size_t f;

	for (f = 0; f < w->fields->count; f++) {
		if (!strcmp(w->fields->names[f], name))
			return (ssize_t)f;
	}
	return -1;
}

/* Records that struct S has been read, and settles what that rules out. */
static void mark_found(struct walk *w, size_t s)
{
	const char *name = w->structs[s].name;
	ssize_t via;
	size_t i, t;

	w->structs[s].found = true;
	w->nfound++;
	settle(w, s);
	for (t = 0; t < w->nstructs; t++) {
		const char *other = w->structs[t].name;

		for (i = 0; i < sizeof(exclusive_structs) / sizeof(exclusive_structs[0]); i++) {
			if ((struct_matches(name, exclusive_structs[i].a) &&
			     struct_matches(other, exclusive_structs[i].b)) ||
			    (struct_matches(name, exclusive_structs[i].b) &&
			     struct_matches(other, exclusive_structs[i].a)))
				settle(w, t);
		}
		for (i = 0; i < sizeof(dependent_structs) / sizeof(dependent_structs[0]); i++) {
			via = field_index(w, dependent_structs[i].via);
			if (via >= 0 && w->field_struct[via] == s && w->out[via] < 0 &&
			    !strcmp(other, dependent_structs[i].name))
				settle(w, t);
		}
	}
}

/*
 * The debug sections the walk reads. libdw inflates every debug section it knows when it opens
 * a file, and in a Go binary the line table, frames and location lists are most of the bytes
 * while only the entries themselves are needed: hiding the rest makes the read several times
 * faster.
 */
static const char *const needed_sections[] = {
	"debug_info", "debug_abbrev", "debug_str", "debug_line_str", "debug_str_offsets",
	"debug_addr", "debug_types",
};

/* "debug_X" for a section named ".debug_X" or, GNU-compressed, ".zdebug_X"; else NULL. */
static const char *debug_section_name(const char *name)
{
	if (!strncmp(name, ".debug_", 7))
		return name + 1;
	if (!strncmp(name, ".zdebug_", 8))
		return name + 2;
	return NULL;
}

/*
 * Hides the debug sections the walk does not need from libdw, by giving them the empty name in
 * the in-memory section headers (libelf never writes them back: the file is opened read-only).
 * 0 when the file has a .debug_info, plain or compressed either way; -ENODATA when it has none,
 * which is the ordinary case of a binary built with -ldflags=-w and not worth a warning.
 * FILE_SIZE catches a truncated copy here, with a clear message: libdw skips a section it cannot
 * read without saying so, and a missing .debug_str would only show up later as nameless types.
 */
static int prepare_sections(Elf *elf, const char *path, uint64_t file_size)
{
	size_t shstrndx, nsec, i, k;
	const char *name, *dbg;
	bool has_info = false;
	GElf_Ehdr ehdr;
	GElf_Shdr shdr;
	uint64_t table;
	Elf_Scn *scn;

	if (!gelf_getehdr(elf, &ehdr)) {
		pr_warn("cannot read the ELF header of '%s': %s", path, elf_errmsg(-1));
		return -EINVAL;
	}
	/*
	 * libelf reports no sections at all, rather than an error, when the section header table
	 * is cut off; that must not pass for a binary built without DWARF. (e_shnum is 0 when the
	 * count lives in section 0, which must then be in the file too.)
	 */
	table = (uint64_t)(ehdr.e_shnum ? ehdr.e_shnum : 1) * ehdr.e_shentsize;
	if (ehdr.e_shoff && (ehdr.e_shoff > file_size || table > file_size - ehdr.e_shoff)) {
		pr_warn("cannot read the DWARF of '%s': its section headers end past the end "
			"of the file, which is truncated or corrupt",
			path);
		return -EINVAL;
	}
	if (elf_getshdrnum(elf, &nsec) || elf_getshdrstrndx(elf, &shstrndx)) {
		pr_warn("cannot read the sections of '%s': %s", path, elf_errmsg(-1));
		return -EINVAL;
	}
	for (i = 1; i < nsec; i++) {
		scn = elf_getscn(elf, i);
		if (!scn || !gelf_getshdr(scn, &shdr)) {
			pr_warn("cannot read section header %zu of '%s': %s", i, path,
				elf_errmsg(-1));
			return -EINVAL;
		}
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name) {
			pr_warn("cannot read the name of section %zu of '%s': %s", i, path,
				elf_errmsg(-1));
			return -EINVAL;
		}
		if (shdr.sh_type != SHT_NOBITS &&
		    (shdr.sh_offset > file_size || shdr.sh_size > file_size - shdr.sh_offset)) {
			pr_warn("cannot read the DWARF of '%s': section '%s' ends past the end "
				"of the file, which is truncated or corrupt",
				path, name);
			return -EINVAL;
		}
		/* Go before 1.19 wrote GNU-style .zdebug_*, later releases SHF_COMPRESSED. */
		dbg = debug_section_name(name);
		if (!dbg || shdr.sh_type == SHT_NOBITS)
			continue;
		if (!strcmp(dbg, "debug_info"))
			has_info = true;
		for (k = 0; k < sizeof(needed_sections) / sizeof(needed_sections[0]); k++) {
			if (!strcmp(dbg, needed_sections[k]))
				break;
		}
		if (k < sizeof(needed_sections) / sizeof(needed_sections[0]))
			continue;
		/* Offset 0 of a section name table is the empty string, by the ELF spec. */
		shdr.sh_name = 0;
		if (!gelf_update_shdr(scn, &shdr)) {
			pr_warn("cannot hide section '%s' of '%s' from libdw: %s", name, path,
				elf_errmsg(-1));
			return -EINVAL;
		}
	}
	return has_info ? 0 : -ENODATA;
}

/* DW_AT_data_member_location of member M: Go writes a constant, DWARF 2 had an expression. */
static int member_offset(Dwarf_Die *m, Dwarf_Word *off)
{
	Dwarf_Attribute attr;
	Dwarf_Op *ops;
	size_t nops;

	if (!dwarf_attr(m, DW_AT_data_member_location, &attr))
		return -ENOENT;
	switch (dwarf_whatform(&attr)) {
	case DW_FORM_block:
	case DW_FORM_block1:
	case DW_FORM_block2:
	case DW_FORM_block4:
	case DW_FORM_exprloc:
		if (dwarf_getlocation(&attr, &ops, &nops) || nops != 1 ||
		    ops[0].atom != DW_OP_plus_uconst)
			return -EINVAL;
		*off = ops[0].number;
		return 0;
	default:
		return dwarf_formudata(&attr, off) ? -EINVAL : 0;
	}
}

/* Records member M of struct S (SIZE bytes, or -1 if unknown) if it is one of the wanted fields. */
static int read_member(struct walk *w, Dwarf_Die *m, size_t s, int size)
{
	const char *mname = dwarf_diename(m);
	Dwarf_Die type;
	Dwarf_Word off;
	size_t f;
	int err;

	if (!mname)
		return 0;
	for (f = 0; f < w->fields->count; f++) {
		if (w->field_struct[f] != s || w->out[f] >= 0 || strcmp(w->field_member[f], mname))
			continue;
		/* A member of another type is not this field's: it stays -1, no error. */
		if (w->field_ptr_only[f] &&
		    (!type_of(m, &type) || dwarf_tag(&type) != DW_TAG_pointer_type))
			continue;
		err = member_offset(m, &off);
		if (err) {
			pr_warn("cannot read the DWARF of '%s': member '%s' has %s "
				"DW_AT_data_member_location",
				w->path, w->fields->names[f], err == -ENOENT ? "no" : "a bad");
			return -EINVAL;
		}
		/* Go gives every struct a DW_AT_byte_size; a member past it is damage. */
		if (off > OFFSET_MAX || (size >= 0 && off > (Dwarf_Word)size)) {
			pr_warn("cannot read the DWARF of '%s': member '%s' is at offset %llu, "
				"outside its struct of %d bytes",
				w->path, w->fields->names[f], (unsigned long long)off, size);
			return -EINVAL;
		}
		w->out[f] = (int64_t)off;
	}
	return 0;
}

/* Fills the wanted members of struct S from its DIE; members it lacks stay -1. */
static int read_members(struct walk *w, Dwarf_Die *die, size_t s)
{
	int size = dwarf_bytesize(die);
	int rc, n, err;
	Dwarf_Die m;

	for (n = 0, rc = dwarf_child(die, &m); rc == 0; n++, rc = dwarf_siblingof(&m, &m)) {
		if (n >= MAX_MEMBERS) {
			pr_warn("cannot read the DWARF of '%s': struct '%s' has more than %d "
				"members, the DWARF is corrupt",
				w->path, w->structs[s].name, MAX_MEMBERS);
			return -EINVAL;
		}
		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		err = read_member(w, &m, s, size);
		if (err)
			return err;
	}
	if (rc < 0) {
		pr_warn("cannot read the members of '%s' in the DWARF of '%s': %s",
			w->structs[s].name, w->path, dwarf_errmsg(-1));
		return -EINVAL;
	}
	return 0;
}

/* Looks at the top-level DIEs of one unit, and at the members of the wanted structs among them. */
static int walk_unit(struct walk *w, Dwarf_Die *cudie)
{
	const char *name, *unit = dwarf_diename(cudie);
	unsigned long types = 0;
	Dwarf_Die die;
	size_t s;
	int rc, err;

	for (rc = dwarf_child(cudie, &die); rc == 0 && w->nsettled < w->nstructs;
	     rc = dwarf_siblingof(&die, &die)) {
		if (++w->dies > MAX_TOP_DIES) {
			pr_warn("cannot read the DWARF of '%s': more than %lu top-level entries, "
				"the DWARF is corrupt",
				w->path, MAX_TOP_DIES);
			return -EINVAL;
		}
		if (dwarf_tag(&die) != DW_TAG_structure_type || !(name = dwarf_diename(&die)))
			continue;
		types++;
		for (s = 0; s < w->nstructs; s++) {
			/*
			 * Go's linker writes each type once; a second copy changes nothing, and a
			 * settled struct this binary is not meant to have is left alone too.
			 */
			if (w->structs[s].settled || strcmp(w->structs[s].name, name))
				continue;
			err = read_members(w, &die, s);
			if (err)
				return err;
			mark_found(w, s);
			break;
		}
	}
	if (rc < 0) {
		pr_warn("cannot read the DWARF of '%s': %s", w->path, dwarf_errmsg(-1));
		return -EINVAL;
	}
	/* The unit with the binary's types, read to its end: what it lacks, the binary lacks. */
	if (rc == 1 && types && unit && !strcmp(unit, "runtime")) {
		for (s = 0; s < w->nstructs; s++)
			settle(w, s);
	}
	return 0;
}

static int walk_units(struct walk *w, Dwarf *dbg)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie;
	int units, rc, err;

	for (units = 0; w->nsettled < w->nstructs; units++) {
		if (units >= MAX_UNITS) {
			pr_warn("cannot read the DWARF of '%s': more than %d units, the DWARF is "
				"corrupt",
				w->path, MAX_UNITS);
			return -EINVAL;
		}
		rc = dwarf_get_units(dbg, cu, &cu, &version, &unit_type, &cudie, NULL);
		if (rc == 1)
			break;
		if (rc < 0) {
			pr_warn("cannot read unit %d of the DWARF of '%s': %s", units, w->path,
				dwarf_errmsg(-1));
			return -EINVAL;
		}
		err = walk_unit(w, &cudie);
		if (err)
			return err;
	}
	pr_debug("DWARF of '%s': found %zu of %zu structs, ruled out %zu, in %d units and %lu "
		 "top-level entries (%s fields)",
		 w->path, w->nfound, w->nstructs, w->nsettled - w->nfound, units, w->dies,
		 w->fields->what);
	return 0;
}

/*
 * Opens PATH's DWARF for reading: *FD, *ELF and *DBG to be closed with close_dwarf. -ENODATA when
 * it has none; other negative errno on failure, logged.
 */
static int open_dwarf(const char *path, int *fd, Elf **elf, Dwarf **dbg)
{
	struct stat st;
	int err;

	*elf = NULL;
	*dbg = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		pr_err("cannot initialise libelf: %s", elf_errmsg(-1));
		*fd = -1;
		return -EINVAL;
	}
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		err = -errno;
		pr_warn("cannot open '%s' to read its DWARF: %s", path, strerror(-err));
		return err;
	}
	if (fstat(*fd, &st)) {
		err = -errno;
		pr_warn("cannot stat '%s' to read its DWARF: %s", path, strerror(-err));
		return err;
	}
	/*
	 * ELF_C_READ, not a mapping: a service being redeployed may have its binary truncated
	 * while we read it, and a read past the end of a mapping is SIGBUS, not an error.
	 */
	*elf = elf_begin(*fd, ELF_C_READ, NULL);
	if (!*elf) {
		pr_warn("cannot read '%s' as ELF: %s", path, elf_errmsg(-1));
		return -EINVAL;
	}
	if (elf_kind(*elf) != ELF_K_ELF) {
		pr_warn("cannot read the DWARF of '%s': not an ELF file", path);
		return -ENOEXEC;
	}
	err = prepare_sections(*elf, path, (uint64_t)st.st_size);
	if (err == -ENODATA)
		pr_debug("'%s' has no DWARF (built with -ldflags=-w or stripped)", path);
	if (err)
		return err;
	/* libdw inflates both .zdebug_* and SHF_COMPRESSED sections as it opens them. */
	*dbg = dwarf_begin_elf(*elf, DWARF_C_READ, NULL);
	if (!*dbg) {
		pr_warn("cannot read the DWARF of '%s': %s", path, dwarf_errmsg(-1));
		return -EINVAL;
	}
	return 0;
}

static void close_dwarf(int fd, Elf *elf, Dwarf *dbg)
{
	if (dbg)
		dwarf_end(dbg);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
}

/*
 * The DWARF last opened, kept until dwarf__release(): an attach reads the offsets of several
 * modules (net/http, grpc-go, a data store's, a router's), and libdw inflates a compressed
 * .debug_info at each open, a tenth of a second for a 120 MB binary. Kept by the file's identity,
 * not its path alone: /proc/PID/exe names another file once the process is gone.
 */
static struct {
	char *path;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int fd;
	Elf *elf;
	Dwarf *dbg;
} kept = { .fd = -1 };

void dwarf__release(void)
{
	close_dwarf(kept.fd, kept.elf, kept.dbg);
	free(kept.path);
	memset(&kept, 0, sizeof(kept));
	kept.fd = -1;
}

/* PATH's DWARF in *DBG, opened now or kept from the last call; open_dwarf()'s errors. */
static int get_dwarf(const char *path, Dwarf **dbg)
{
	struct stat st;
	int fd, err;
	Elf *elf;

	if (kept.dbg && !strcmp(kept.path, path) && !stat(path, &st) && st.st_dev == kept.dev &&
	    st.st_ino == kept.ino && st.st_size == kept.size &&
	    st.st_mtim.tv_sec == kept.mtime.tv_sec && st.st_mtim.tv_nsec == kept.mtime.tv_nsec) {
		*dbg = kept.dbg;
		return 0;
	}
	dwarf__release();
	err = open_dwarf(path, &fd, &elf, dbg);
	if (!err && fstat(fd, &st))
		err = -errno;
	if (!err && !(kept.path = strdup(path)))
		err = -ENOMEM;
	if (err) {
		close_dwarf(fd, elf, *dbg);
		*dbg = NULL;
		return err;
	}
	kept.dev = st.st_dev;
	kept.ino = st.st_ino;
	kept.size = st.st_size;
	kept.mtime = st.st_mtim;
	kept.fd = fd;
	kept.elf = elf;
	kept.dbg = *dbg;
	return 0;
}

int dwarf__read_fields(const char *path, const struct offsets_fields *fields, int64_t *out)
{
	struct walk w = { .path = path, .fields = fields, .out = out };
	Dwarf *dbg = NULL;
	size_t f, n = 0;
	int err;

	if (!path || !fields || !fields->names || !out)
		return -EINVAL;
	for (f = 0; f < fields->count; f++)
		out[f] = -1;
	err = plan_fields(&w);
	if (err)
		return err;
	err = get_dwarf(path, &dbg);
	if (err)
		goto cleanup;
	err = walk_units(&w, dbg);
	if (err)
		goto cleanup;
	for (f = 0; f < fields->count; f++)
		n += out[f] >= 0;
	pr_debug("read %zu of %zu %s struct offsets from the DWARF of '%s'", n, fields->count,
		 fields->what, path);
cleanup:
	/* A half-read answer must not look like DWARF's word on any field. */
	if (err) {
		for (f = 0; f < fields->count; f++)
			out[f] = -1;
	}
	return err;
}

int dwarf__read_offsets(const char *path, int64_t out[GO_FIELD__COUNT])
{
	int err, f;

	err = dwarf__read_fields(path, &go_offsets_fields, out);
	if (err)
		return err;
	if (out[GO_FIELD_G_GOID] < 0) {
		pr_warn("cannot read offsets from the DWARF of '%s': it describes no "
			"'runtime.g.goid', so it is not a Go binary's",
			path);
		for (f = 0; f < GO_FIELD__COUNT; f++)
			out[f] = -1;
		return -ENOENT;
	}
	return 0;
}

int dwarf__read_grpc_offsets(const char *path, int64_t out[GRPC_FIELD__COUNT])
{
	/* A Go binary without grpc-go has none of these structs: every field -1, and no error. */
	return dwarf__read_fields(path, &grpc_offsets_fields, out);
}

/* ---- functions: parameters, argument paths, inlining (--functions) ---- */

#define DW_AT_GO_KIND 0x2900
/* Typedef chains and struct nesting deeper than this are corrupt DWARF. */
#define MAX_TYPE_DEPTH 16
/* Type entries one parameter's register count may look at (count_regs). */
#define MAX_TYPE_NODES 1024

/* DIE's DW_AT_type, through typedefs; false when it has none. */
static bool type_of(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute attr;
	int i;

	if (!dwarf_attr_integrate(die, DW_AT_type, &attr) || !dwarf_formref_die(&attr, out))
		return false;
	for (i = 0; i < MAX_TYPE_DEPTH && dwarf_tag(out) == DW_TAG_typedef; i++) {
		if (!dwarf_attr(out, DW_AT_type, &attr) || !dwarf_formref_die(&attr, out))
			return false;
	}
	return dwarf_tag(out) != DW_TAG_typedef;
}

/* The Go kind of type DIE T: DW_AT_go_kind when Go wrote it, else from the DWARF tag. */
static int go_kind_of(Dwarf_Die *t)
{
	Dwarf_Attribute attr;
	Dwarf_Word v, enc;
	const char *name;
	int size;

	if (dwarf_attr(t, DW_AT_GO_KIND, &attr) && !dwarf_formudata(&attr, &v) && v)
		return (int)v;
	size = dwarf_bytesize(t);
	switch (dwarf_tag(t)) {
	case DW_TAG_pointer_type:
		return GO_KIND_PTR;
	case DW_TAG_array_type:
		return GO_KIND_ARRAY;
	case DW_TAG_base_type:
		if (!dwarf_attr(t, DW_AT_encoding, &attr) || dwarf_formudata(&attr, &enc))
			return 0;
		switch (enc) {
		case DW_ATE_boolean:
			return GO_KIND_BOOL;
		case DW_ATE_signed:
			return GO_KIND_INT;
		case DW_ATE_unsigned:
			return GO_KIND_UINT;
		case DW_ATE_float:
			return size == 4 ? GO_KIND_FLOAT32 : GO_KIND_FLOAT64;
		case DW_ATE_complex_float:
			return size == 8 ? GO_KIND_COMPLEX64 : GO_KIND_COMPLEX128;
		}
		return 0;
	case DW_TAG_structure_type:
		name = dwarf_diename(t);
		if (name && !strcmp(name, "string"))
			return GO_KIND_STRING;
		if (name && !strncmp(name, "[]", 2))
			return GO_KIND_SLICE;
		return GO_KIND_STRUCT;
	}
	return 0;
}

/* Elements of array type T; -1 when DWARF does not say. */
static long array_count(Dwarf_Die *t)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;
	Dwarf_Die sub;

	if (dwarf_child(t, &sub) != 0)
		return -1;
	do {
		if (dwarf_tag(&sub) != DW_TAG_subrange_type)
			continue;
		if (dwarf_attr(&sub, DW_AT_count, &attr) && !dwarf_formudata(&attr, &v))
			return (long)v;
		if (dwarf_attr(&sub, DW_AT_upper_bound, &attr) && !dwarf_formudata(&attr, &v))
			return (long)v + 1;
		return -1;
	} while (dwarf_siblingof(&sub, &sub) == 0);
	return -1;
}

/*
 * Counts the registers type T takes under Go's register ABI (internal/abi, "ABIInternal"):
 * scalars one integer or float register, strings and interfaces two, slices three, complex two
 * floats, structs the sum of their fields, arrays of one element their element's, empty arrays
 * none; longer arrays are never in registers (*STACK). *BUDGET bounds the type entries looked
 * at: struct members can name one type many times (or, in a corrupt file, their own struct), and
 * the walk is exponential in the depth then; a type that big is not passed in registers anyway.
 */
static void count_regs(Dwarf_Die *t, int depth, unsigned *budget, unsigned *nint, unsigned *nfloat,
		       bool *stack)
{
	Dwarf_Die m, mt, et;
	long count;

	if (depth > MAX_TYPE_DEPTH || !*budget) {
		*stack = true;
		return;
	}
	(*budget)--;
	switch (go_kind_of(t)) {
	case GO_KIND_FLOAT32:
	case GO_KIND_FLOAT64:
		*nfloat += 1;
		return;
	case GO_KIND_COMPLEX64:
	case GO_KIND_COMPLEX128:
		*nfloat += 2;
		return;
	case GO_KIND_STRING:
	case GO_KIND_INTERFACE:
		*nint += 2;
		return;
	case GO_KIND_SLICE:
		*nint += 3;
		return;
	case GO_KIND_STRUCT:
		if (dwarf_child(t, &m) != 0)
			return;
		do {
			if (dwarf_tag(&m) != DW_TAG_member)
				continue;
			if (!type_of(&m, &mt)) {
				*stack = true;
				return;
			}
			count_regs(&mt, depth + 1, budget, nint, nfloat, stack);
		} while (dwarf_siblingof(&m, &m) == 0);
		return;
	case GO_KIND_ARRAY:
		count = array_count(t);
		if (count == 0)
			return;
		if (count == 1 && type_of(t, &et)) {
			count_regs(&et, depth + 1, budget, nint, nfloat, stack);
			return;
		}
		*stack = true;
		return;
	case 0:
		*stack = true; /* unknown: do not guess registers */
		return;
	default:
		*nint += 1; /* integers, bools, pointers, maps, chans, funcs */
		return;
	}
}

/* Finds member NAME of struct T: its offset and type. */
static bool find_member(Dwarf_Die *t, const char *name, Dwarf_Word *off, Dwarf_Die *type)
{
	Dwarf_Die m;
	const char *mname;
	int n = 0;

	if (dwarf_child(t, &m) != 0)
		return false;
	do {
		if (++n > MAX_MEMBERS)
			return false;
		if (dwarf_tag(&m) != DW_TAG_member || !(mname = dwarf_diename(&m)) ||
		    strcmp(mname, name))
			continue;
		return !member_offset(&m, off) && type_of(&m, type);
	} while (dwarf_siblingof(&m, &m) == 0);
	return false;
}

static int arg_fail(struct dwarf_arg *a, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int arg_fail(struct dwarf_arg *a, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->why, sizeof(a->why), fmt, ap);
	va_end(ap);
	a->err = err;
	return err;
}

/* Whether values of KIND can be recorded: scalars and strings. */
static bool recordable(int kind)
{
	return (kind >= GO_KIND_BOOL && kind <= GO_KIND_FLOAT64) || kind == GO_KIND_STRING;
}

/*
 * Resolves A->path from parameter TYPE: its first component named the parameter; each further
 * one is a struct member, reached through a pointer (a new hop) or inside a struct value.
 */
static int resolve_path(struct dwarf_arg *a, Dwarf_Die *type)
{
	char comp[DWARF_NAME_MAX];
	const char *p = strchr(a->path, '.'), *end;
	Dwarf_Die cur = *type, next;
	Dwarf_Word off;
	size_t len;
	int kind;

	a->nderefs = 0;
	while (p) {
		p++;
		end = strchr(p, '.');
		len = end ? (size_t)(end - p) : strlen(p);
		if (!len || len >= sizeof(comp))
			return arg_fail(a, -ENOENT, "bad field name in the path");
		memcpy(comp, p, len);
		comp[len] = '\0';
		kind = go_kind_of(&cur);
		if (kind == GO_KIND_PTR) {
			if (a->nderefs >= DWARF_MAX_DEREFS)
				return arg_fail(a, -EOPNOTSUPP, "more than %d pointer hops",
						DWARF_MAX_DEREFS);
			if (!type_of(&cur, &next))
				return arg_fail(a, -EOPNOTSUPP, "a pointer of unknown type");
			cur = next;
			a->offs[a->nderefs++] = 0;
			kind = go_kind_of(&cur);
		} else if (!a->nderefs) {
			return arg_fail(a, -EOPNOTSUPP,
					"a field of a parameter passed by value: only paths "
					"through pointers are read");
		}
		if (kind != GO_KIND_STRUCT)
			return arg_fail(a, -ENOENT, "'%s' is not a field of a struct", comp);
		if (!find_member(&cur, comp, &off, &next))
			return arg_fail(a, -ENOENT, "'%s' has no field '%s'",
					dwarf_diename(&cur) ?: "the struct", comp);
		if (off > OFFSET_MAX)
			return arg_fail(a, -EOPNOTSUPP, "field '%s' too far in its struct", comp);
		a->offs[a->nderefs - 1] += (int32_t)off;
		cur = next;
		p = end;
	}
	kind = go_kind_of(&cur);
	a->kind = kind;
	a->size = (unsigned)(dwarf_bytesize(&cur) > 0 ? dwarf_bytesize(&cur) : 0);
	if (!recordable(kind))
		return arg_fail(a, -EOPNOTSUPP, "its type '%s' is not a number, bool or string",
				dwarf_diename(&cur) ?: "?");
	if (!a->nderefs && (kind == GO_KIND_FLOAT32 || kind == GO_KIND_FLOAT64))
		return arg_fail(a, -EOPNOTSUPP,
				"a float in a register: uprobes see integer registers only");
	return 0;
}

/* Reads the parameters of subprogram DIE into F and resolves its argument paths. */
static int read_params(struct dwarf_func *f, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Die c, types[DWARF_MAX_PARAMS];
	bool typed[DWARF_MAX_PARAMS] = { false };
	bool output;
	const char *name;
	unsigned budget;
	size_t i, j;
	int n = 0;

	f->nparams = 0;
	if (dwarf_child(die, &c) == 0) {
		do {
			if (++n > MAX_MEMBERS)
				return -EINVAL;
			if (dwarf_tag(&c) != DW_TAG_formal_parameter)
				continue;
			output = dwarf_attr_integrate(&c, DW_AT_variable_parameter, &attr) &&
				 !dwarf_formflag(&attr, &output) && output;
			if (output)
				continue;
			if (f->nparams == DWARF_MAX_PARAMS)
				return -E2BIG;
			struct dwarf_param *p = &f->params[f->nparams];

			name = dwarf_diename(&c);
			snprintf(p->name, sizeof(p->name), "%s", name ?: "");
			if (!type_of(&c, &types[f->nparams])) {
				p->stack = true;
				f->nparams++;
				continue;
			}
			typed[f->nparams] = true;
			p->kind = go_kind_of(&types[f->nparams]);
			p->size = (unsigned)(dwarf_bytesize(&types[f->nparams]) > 0 ?
						     dwarf_bytesize(&types[f->nparams]) :
						     0);
			budget = MAX_TYPE_NODES;
			count_regs(&types[f->nparams], 0, &budget, &p->nint, &p->nfloat, &p->stack);
			f->nparams++;
		} while (dwarf_siblingof(&c, &c) == 0);
	}
	for (i = 0; i < f->nargs; i++) {
		struct dwarf_arg *a = &f->args[i];
		size_t len = strcspn(a->path, ".");

		a->err = 0;
		for (j = 0; j < f->nparams; j++)
			if (strlen(f->params[j].name) == len &&
			    !strncmp(f->params[j].name, a->path, len))
				break;
		if (j == f->nparams) {
			arg_fail(a, -ENOENT, "no parameter '%.*s'", (int)len, a->path);
			continue;
		}
		a->param = (unsigned)j;
		/* A parameter of no type gospan can read (corrupt DWARF) has nothing to walk. */
		if (!typed[j]) {
			arg_fail(a, -EOPNOTSUPP, "parameter '%s' has no type in the DWARF",
				 f->params[j].name);
			continue;
		}
		resolve_path(a, &types[j]);
	}
	return 0;
}

static int func_cmp(const void *key, const void *elem)
{
	return strcmp(key, (*(struct dwarf_func *const *)elem)->name);
}

static int func_sort_cmp(const void *a, const void *b)
{
	return strcmp((*(struct dwarf_func *const *)a)->name, (*(struct dwarf_func *const *)b)->name);
}

int dwarf__read_funcs(const char *path, struct dwarf_func *funcs, size_t n)
{
	struct dwarf_func **sorted = NULL, **hit;
	Dwarf_Attribute attr;
	Dwarf_CU *cu = NULL;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie, die;
	Dwarf *dbg = NULL;
	unsigned long dies = 0;
	const char *name;
	int err, rc, units;
	size_t i;

	if (!n)
		return 0;
	sorted = calloc(n, sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		funcs[i].found = funcs[i].inlined = false;
		funcs[i].nparams = 0;
		sorted[i] = &funcs[i];
	}
	qsort(sorted, n, sizeof(*sorted), func_sort_cmp);
	err = get_dwarf(path, &dbg);
	if (err)
		goto cleanup;
	/* Go puts every function's DIE at the top level of its package's unit. */
	for (units = 0;; units++) {
		if (units >= MAX_UNITS) {
			err = -EINVAL;
			goto cleanup;
		}
		rc = dwarf_get_units(dbg, cu, &cu, &version, &unit_type, &cudie, NULL);
		if (rc == 1)
			break;
		if (rc < 0) {
			pr_warn("cannot read unit %d of the DWARF of '%s': %s", units, path,
				dwarf_errmsg(-1));
			err = -EINVAL;
			goto cleanup;
		}
		for (rc = dwarf_child(&cudie, &die); rc == 0; rc = dwarf_siblingof(&die, &die)) {
			if (++dies > MAX_TOP_DIES) {
				err = -EINVAL;
				goto cleanup;
			}
			if (dwarf_tag(&die) != DW_TAG_subprogram || !(name = dwarf_diename(&die)))
				continue;
			hit = bsearch(name, sorted, n, sizeof(*sorted), func_cmp);
			if (!hit)
				continue;
			/* The abstract instance of an inlined function has no code of its own. */
			if (dwarf_attr(&die, DW_AT_inline, &attr)) {
				(*hit)->inlined = true;
				continue;
			}
			if (!dwarf_hasattr(&die, DW_AT_low_pc) || (*hit)->found)
				continue;
			(*hit)->found = true;
			err = read_params(*hit, &die);
			if (err) {
				pr_warn("cannot read the parameters of '%s' in the DWARF of '%s'",
					name, path);
				(*hit)->found = false;
				err = 0;
			}
		}
	}
cleanup:
	free(sorted);
	return err;
}

// SPDX-License-Identifier: MIT
/*
 * Struct member offsets from a Go binary's DWARF, through libdw. Go's linker puts every struct
 * type at the top level of a compile unit, named with its full import path ("net/http.Request"),
 * its members as DW_TAG_member children with a constant DW_AT_data_member_location. So only the
 * top-level DIEs of each unit are looked at, nothing deeper than the members of a wanted struct,
 * and the walk stops once every wanted struct has been seen or is known to be absent (a binary
 * has one map implementation, not both). Every loop is bounded and every offset checked, because
 * a corrupt file must cost a warning, never a wrong offset handed to BPF.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

#include "dwarf.h"
#include "log.h"
#include "offsets.h"

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
 * Structs reached only through a member of another: Go before 1.22 has neither Request.pat nor
 * net/http.pattern, and once Request is seen without pat there is no pattern to look for.
 */
static const struct {
	const char *name;
	enum go_field via;
} dependent_structs[] = {
	{ "net/http.pattern", GO_FIELD_REQ_PAT },
};

struct want_struct {
	char name[STRUCT_NAME_MAX]; /* as Go's DWARF names it: "net/http.Request" */
	bool found;
	bool settled; /* found, or known not to be in this binary */
};

struct walk {
	const char *path;
	int64_t *out;
	struct want_struct structs[GO_FIELD__COUNT];
	size_t nstructs, nfound, nsettled;
	size_t field_struct[GO_FIELD__COUNT]; /* index into structs */
	const char *field_member[GO_FIELD__COUNT];
	unsigned long dies; /* top-level DIEs looked at, against MAX_TOP_DIES */
};

/* Splits each field name at its last '.' into struct and member, and lists each struct once. */
static int plan_fields(struct walk *w)
{
	const char *name, *dot;
	size_t f, s, len;

	for (f = 0; f < GO_FIELD__COUNT; f++) {
		name = go_field_names[f];
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
		w->field_member[f] = dot + 1;
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

/* Records that struct S has been read, and settles what that rules out. */
static void mark_found(struct walk *w, size_t s)
{
	const char *name = w->structs[s].name;
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
			enum go_field via = dependent_structs[i].via;

			if (w->field_struct[via] == s && w->out[via] < 0 &&
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
	Dwarf_Word off;
	size_t f;
	int err;

	if (!mname)
		return 0;
	for (f = 0; f < GO_FIELD__COUNT; f++) {
		if (w->field_struct[f] != s || w->out[f] >= 0 || strcmp(w->field_member[f], mname))
			continue;
		err = member_offset(m, &off);
		if (err) {
			pr_warn("cannot read the DWARF of '%s': member '%s' has %s "
				"DW_AT_data_member_location",
				w->path, go_field_names[f], err == -ENOENT ? "no" : "a bad");
			return -EINVAL;
		}
		/* Go gives every struct a DW_AT_byte_size; a member past it is damage. */
		if (off > OFFSET_MAX || (size >= 0 && off > (Dwarf_Word)size)) {
			pr_warn("cannot read the DWARF of '%s': member '%s' is at offset %llu, "
				"outside its struct of %d bytes",
				w->path, go_field_names[f], (unsigned long long)off, size);
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
	const char *name;
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
		 "top-level entries",
		 w->path, w->nfound, w->nstructs, w->nsettled - w->nfound, units, w->dies);
	return 0;
}

int dwarf__read_offsets(const char *path, int64_t out[GO_FIELD__COUNT])
{
	struct walk w = { .path = path, .out = out };
	struct stat st;
	Dwarf *dbg = NULL;
	Elf *elf = NULL;
	int fd = -1, err, f, n = 0;

	for (f = 0; f < GO_FIELD__COUNT; f++)
		out[f] = -1;
	err = plan_fields(&w);
	if (err)
		return err;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		pr_err("cannot initialise libelf: %s", elf_errmsg(-1));
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		pr_warn("cannot open '%s' to read its DWARF: %s", path, strerror(-err));
		return err;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		pr_warn("cannot stat '%s' to read its DWARF: %s", path, strerror(-err));
		goto cleanup;
	}
	/*
	 * ELF_C_READ, not a mapping: a service being redeployed may have its binary truncated
	 * while we read it, and a read past the end of a mapping is SIGBUS, not an error.
	 */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		pr_warn("cannot read '%s' as ELF: %s", path, elf_errmsg(-1));
		err = -EINVAL;
		goto cleanup;
	}
	if (elf_kind(elf) != ELF_K_ELF) {
		pr_warn("cannot read the DWARF of '%s': not an ELF file", path);
		err = -ENOEXEC;
		goto cleanup;
	}
	err = prepare_sections(elf, path, (uint64_t)st.st_size);
	if (err == -ENODATA)
		pr_debug("'%s' has no DWARF (built with -ldflags=-w or stripped)", path);
	if (err)
		goto cleanup;
	/* libdw inflates both .zdebug_* and SHF_COMPRESSED sections as it opens them. */
	dbg = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dbg) {
		pr_warn("cannot read the DWARF of '%s': %s", path, dwarf_errmsg(-1));
		err = -EINVAL;
		goto cleanup;
	}
	err = walk_units(&w, dbg);
	if (err)
		goto cleanup;
	if (out[GO_FIELD_G_GOID] < 0) {
		pr_warn("cannot read offsets from the DWARF of '%s': it describes no "
			"'runtime.g.goid', so it is not a Go binary's",
			path);
		err = -ENOENT;
		goto cleanup;
	}
	for (f = 0; f < GO_FIELD__COUNT; f++)
		n += out[f] >= 0;
	pr_debug("read %d of %d struct offsets from the DWARF of '%s'", n, GO_FIELD__COUNT, path);
cleanup:
	/* A half-read answer must not look like DWARF's word on any field. */
	if (err) {
		for (f = 0; f < GO_FIELD__COUNT; f++)
			out[f] = -1;
	}
	if (dbg)
		dwarf_end(dbg);
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

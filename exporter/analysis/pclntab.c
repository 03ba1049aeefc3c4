// SPDX-License-Identifier: MIT
/*
 * Reads the function table (pclntab) that every Go binary keeps for its runtime, stripped or not,
 * and indexes its functions by name. Only what placing a probe needs is read: the header, the
 * function table (entry, record offset) and each record's name offset. Every read is checked
 * against the bytes the table was found in: a corrupt table is refused with the reason, never
 * trusted. Layouts are those Go's own runtime/symtab.go and debug/gosym read, Go 1.16 onwards.
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "analysis/pclntab.h"

#define GO12_MAGIC 0xfffffffbU	/* Go 1.2-1.15: not supported */
#define GO116_MAGIC 0xfffffffaU /* Go 1.16-1.17: absolute uintptr entries */
#define GO118_MAGIC 0xfffffff0U /* Go 1.18-1.19: uint32 entries relative to the text start */
#define GO120_MAGIC 0xfffffff1U /* Go 1.20 on: same layout as 1.18 */

/* The header: magic (4 bytes), two zero pads, instruction size, pointer size, then words. */
#define HDR_PREFIX 8

/*
 * Words of runtime.moduledata (the same from Go 1.16 to 1.26): the pcHeader pointer, then six
 * slices (funcnametab, cutab, filetab, pctab, pclntable, ftab), findfunctab, minpc, maxpc, text.
 */
enum {
	MD_PCHEADER = 0,
	MD_FUNCNAMETAB = 1,
	MD_PCLNTABLE = 13,
	MD_FTAB = 16,
	MD_FTAB_LEN = 17,
	MD_MINPC = 20,
	MD_MAXPC = 21,
	MD_TEXT = 22,
	MD_WORDS,
};

/*
 * Longest name indexed. Real names stay far below it (long generic instantiations are a few
 * hundred bytes); the cap bounds the work a corrupt table can cause with unterminated names.
 */
#define NAME_MAX_LEN 4096

struct pclntab {
	struct sym_entry *funcs; /* sorted by name, then address */
	size_t nfuncs;
	uint64_t text_start; /* runtime.text; 0 when the table does not say */
};

/* One candidate table: where it lies and what its header says. */
struct pcln_view {
	const char *where;   /* the section it was found in */
	const uint8_t *data; /* the header */
	uint64_t size;	     /* bytes from the header to the end of that section */
	uint64_t addr;	     /* link-time address of the header */
	uint32_t magic;
	unsigned int ptrsize;
	unsigned int fieldsize; /* of a function table field: ptrsize before Go 1.18, then 4 */
	uint64_t nfunc;
	uint64_t text_start; /* what 1.18+ entries are relative to; 0 before 1.18 */
	const char *text_from;
	uint64_t funcname_off;
	uint64_t pcln_off; /* the function table, followed by the records it points at */
	char why[192];	   /* why the candidate was refused */
};

static uint64_t get_uint(const uint8_t *p, unsigned int n)
{
	uint64_t v8;
	uint32_t v4;

	if (n == 4) {
		memcpy(&v4, p, sizeof(v4));
		return le32toh(v4);
	}
	memcpy(&v8, p, sizeof(v8));
	return le64toh(v8);
}

static int refuse(struct pcln_view *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(struct pcln_view *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v->why, sizeof(v->why), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Header word I after the prefix; parse_header() checked that all of them are present. */
static uint64_t hdr_word(const struct pcln_view *v, unsigned int i)
{
	return get_uint(v->data + HDR_PREFIX + (uint64_t)i * v->ptrsize, v->ptrsize);
}

/* Function table field I: an entry (even I) or a record offset (odd I); bounded by the header. */
static uint64_t ft_field(const struct pcln_view *v, uint64_t i)
{
	return get_uint(v->data + v->pcln_off + i * v->fieldsize, v->fieldsize);
}

static int parse_header(struct pcln_view *v)
{
	const uint8_t *d = v->data;
	unsigned int nwords;
	uint64_t ftsize;

	if (v->size < HDR_PREFIX)
		return refuse(v, "header truncated");
	v->magic = get_uint(d, 4);
	switch (v->magic) {
	case GO116_MAGIC:
		nwords = 7;
		break;
	case GO118_MAGIC:
	case GO120_MAGIC:
		nwords = 8; /* one more: the text start */
		break;
	case GO12_MAGIC:
		return refuse(v, "format of Go 1.2-1.15 (magic 0x%08x) not supported", v->magic);
	default:
		return refuse(v, "unknown magic 0x%08x", v->magic);
	}
	if (d[4] || d[5])
		return refuse(v, "header padding is not zero");
	if (d[6] != 1 && d[6] != 2 && d[6] != 4)
		return refuse(v, "bad instruction size %u", d[6]);
	if (d[7] != 4 && d[7] != 8)
		return refuse(v, "bad pointer size %u", d[7]);
	v->ptrsize = d[7];
	v->fieldsize = v->magic == GO116_MAGIC ? v->ptrsize : 4;
	if (v->size < HDR_PREFIX + nwords * v->ptrsize)
		return refuse(v, "header truncated");
	v->nfunc = hdr_word(v, 0);
	if (v->magic == GO116_MAGIC) {
		v->funcname_off = hdr_word(v, 2);
		v->pcln_off = hdr_word(v, 6);
	} else {
		v->text_start = hdr_word(v, 2);
		v->funcname_off = hdr_word(v, 3);
		v->pcln_off = hdr_word(v, 7);
	}
	if (!v->nfunc)
		return refuse(v, "no functions");
	if (v->funcname_off >= v->size)
		return refuse(v, "name table offset 0x%llx past the end (0x%llx)",
			      (unsigned long long)v->funcname_off, (unsigned long long)v->size);
	if (v->pcln_off >= v->size)
		return refuse(v, "function table offset 0x%llx past the end (0x%llx)",
			      (unsigned long long)v->pcln_off, (unsigned long long)v->size);
	/* Bounding the count first keeps the size computation from overflowing. */
	if (v->nfunc > (v->size - v->pcln_off) / (2 * v->fieldsize))
		return refuse(v, "function count %llu too large for the table",
			      (unsigned long long)v->nfunc);
	ftsize = (2 * v->nfunc + 1) * v->fieldsize; /* entries and offsets, then the end entry */
	if (ftsize > v->size - v->pcln_off)
		return refuse(v, "function table truncated");
	return 0;
}

/*
 * Is P the runtime.moduledata of the table in V? Checking the fields that point into the table
 * and the PC range against the function table makes a false match practically impossible.
 */
static bool is_moduledata(const struct pcln_view *v, const uint8_t *p)
{
	uint64_t mask = v->ptrsize == 4 ? UINT32_MAX : UINT64_MAX;
	unsigned int n = v->ptrsize;
	uint64_t text;

#define MD_WORD(i) get_uint(p + (i) * n, n)
	if (MD_WORD(MD_FUNCNAMETAB) != ((v->addr + v->funcname_off) & mask) ||
	    MD_WORD(MD_PCLNTABLE) != ((v->addr + v->pcln_off) & mask) ||
	    MD_WORD(MD_FTAB) != ((v->addr + v->pcln_off) & mask) ||
	    MD_WORD(MD_FTAB_LEN) != v->nfunc + 1)
		return false;
	text = MD_WORD(MD_TEXT);
	return MD_WORD(MD_MINPC) == ((text + ft_field(v, 0)) & mask) &&
	       MD_WORD(MD_MAXPC) == ((text + ft_field(v, 2 * v->nfunc)) & mask);
#undef MD_WORD
}

/* Looks for the moduledata of V in section NAME; its text field is what entries are based on. */
static int moduledata_text(struct elf_file *ef, const struct pcln_view *v, const char *name,
			   uint64_t *text)
{
	uint64_t mask = v->ptrsize == 4 ? UINT32_MAX : UINT64_MAX;
	uint64_t addr, off, need = (uint64_t)MD_WORDS * v->ptrsize;
	const void *data;
	const uint8_t *d;
	size_t size;

	if (elf_file__section(ef, name, &data, &size, &addr))
		return -ENOENT;
	d = data;
	/* moduledata is pointer-aligned in memory. */
	for (off = (v->ptrsize - addr % v->ptrsize) % v->ptrsize;
	     size >= need && off <= size - need; off += v->ptrsize) {
		if (get_uint(d + off + MD_PCHEADER * v->ptrsize, v->ptrsize) == (v->addr & mask) &&
		    is_moduledata(v, d + off)) {
			*text = get_uint(d + off + MD_TEXT * v->ptrsize, v->ptrsize);
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * The base of 1.18+ entries: runtime.text. The header holds it up to Go 1.25 (PIE: relocated,
 * but linkers also write the value into the file); Go 1.26 stopped storing it there, and the
 * runtime then reads it from moduledata. The start of .text is the last resort only: with
 * external linking C start-up code comes first and runtime.text lies past the section start.
 */
static void find_text_start(struct elf_file *ef, struct pcln_view *v)
{
	static const char *const md_sections[] = { ".go.module", ".noptrdata", ".data",
						   ".data.rel.ro" };
	size_t i;

	if (v->text_start) {
		v->text_from = "the table header";
		return;
	}
	for (i = 0; i < sizeof(md_sections) / sizeof(md_sections[0]); i++) {
		if (!moduledata_text(ef, v, md_sections[i], &v->text_start)) {
			v->text_from = "runtime.moduledata";
			return;
		}
	}
	if (!elf_file__section(ef, ".text", NULL, NULL, &v->text_start))
		v->text_from = "the start of .text";
}

/*
 * Reads the name of function I. 1 when the name is too long to index (skipped), -EINVAL when
 * the record or name lies outside the table or the record disagrees with the function table.
 */
static int read_name(struct pcln_view *v, uint64_t i, const char **name)
{
	uint64_t funcoff = ft_field(v, 2 * i + 1), room = v->size - v->pcln_off, rec, nameoff, at;
	const char *s;
	size_t max;

	/* A record starts with its entry (a functab field wide) and the name offset (4 bytes). */
	if (funcoff > room || room - funcoff < v->fieldsize + 4)
		return refuse(v, "record of function %llu at 0x%llx past the end",
			      (unsigned long long)i, (unsigned long long)funcoff);
	rec = v->pcln_off + funcoff;
	if (get_uint(v->data + rec, v->fieldsize) != ft_field(v, 2 * i))
		return refuse(v, "record of function %llu disagrees with the function table",
			      (unsigned long long)i);
	nameoff = get_uint(v->data + rec + v->fieldsize, 4);
	if (nameoff >= v->size - v->funcname_off)
		return refuse(v, "name of function %llu at 0x%llx past the end",
			      (unsigned long long)i, (unsigned long long)nameoff);
	at = v->funcname_off + nameoff;
	s = (const char *)v->data + at;
	max = v->size - at < NAME_MAX_LEN ? v->size - at : NAME_MAX_LEN;
	if (!memchr(s, '\0', max)) {
		if (max < NAME_MAX_LEN)
			return refuse(v, "name of function %llu is not terminated",
				      (unsigned long long)i);
		return 1;
	}
	if (!*s)
		return refuse(v, "function %llu has an empty name", (unsigned long long)i);
	*name = s;
	return 0;
}

/*
 * The function table spells some compiler-made names with a middle dot ("type:.eq.T·1"); the
 * Go linker writes them with "." in .symtab (for ASCII-only tools), and callers look functions
 * up by .symtab names. Returns a rewritten copy, or NULL (errno set) when NAME needs none.
 */
static char *dotted_name(const char *name)
{
	char *copy, *in, *out;

	if (!strstr(name, "\xc2\xb7")) {
		errno = 0;
		return NULL;
	}
	copy = strdup(name);
	if (!copy)
		return NULL;
	for (in = out = copy; *in; in++) {
		if (in[0] == '\xc2' && in[1] == '\xb7') {
			*out++ = '.';
			in++;
			continue;
		}
		*out++ = *in;
	}
	*out = '\0';
	return copy;
}

/* Checks that the functions lie inside .text: a wrong text start or entry shows up here. */
static int check_text_range(struct elf_file *ef, struct pcln_view *v, uint64_t base)
{
	uint64_t first = ft_field(v, 0), end = ft_field(v, 2 * v->nfunc), taddr;
	size_t tsize;

	if (end < first || base + end < base)
		return refuse(v, "function table not sorted by address");
	first += base;
	end += base;
	if (elf_file__section(ef, ".text", NULL, &tsize, &taddr))
		return 0; /* nothing to check against */
	if (first < taddr || end > taddr + tsize)
		return refuse(v, "functions [0x%llx, 0x%llx) lie outside .text [0x%llx, 0x%llx)",
			      (unsigned long long)first, (unsigned long long)end,
			      (unsigned long long)taddr, (unsigned long long)(taddr + tsize));
	return 0;
}

static int index_funcs(struct elf_file *ef, struct pcln_view *v, struct pclntab *pt)
{
	uint64_t ones = v->fieldsize == 8 ? UINT64_MAX : UINT32_MAX, base = 0, i;
	size_t skipped = 0;
	int err;

	if (v->magic != GO116_MAGIC) {
		find_text_start(ef, v);
		if (!v->text_from)
			return refuse(v, "cannot tell where the text starts");
		base = v->text_start;
	}
	err = check_text_range(ef, v, base);
	if (err)
		return err;
	pt->text_start = v->magic != GO116_MAGIC ? v->text_start : 0;
	pt->funcs = calloc(v->nfunc, sizeof(*pt->funcs));
	if (!pt->funcs)
		return -ENOMEM;
	for (i = 0; i < v->nfunc; i++) {
		uint64_t entry = ft_field(v, 2 * i), next = ft_field(v, 2 * i + 2);
		struct sym_entry *f;
		const char *name = NULL;

		if (next < entry)
			return refuse(v, "function table not sorted by address at function %llu",
				      (unsigned long long)i);
		/* An all-ones offset marks the gap between two text sections, not a function. */
		if (ft_field(v, 2 * i + 1) == ones)
			continue;
		err = read_name(v, i, &name);
		if (err < 0)
			return err;
		if (err) {
			skipped++;
			continue;
		}
		f = &pt->funcs[pt->nfuncs++];
		f->name = dotted_name(name);
		if (f->name)
			f->owned = true;
		else if (errno)
			return -ENOMEM;
		else
			f->name = name;
		f->addr = base + entry;
		f->size = next - entry;
		f->is_func = true;
	}
	if (skipped)
		pr_debug("'%s': %zu functions with names over %d bytes not indexed",
			 elf_file__path(ef), skipped, NAME_MAX_LEN);
	sym_index__sort(pt->funcs, pt->nfuncs);
	return 0;
}

static void free_funcs(struct pclntab *pt)
{
	size_t i;

	for (i = 0; i < pt->nfuncs; i++) {
		if (pt->funcs[i].owned)
			free((char *)pt->funcs[i].name);
	}
	free(pt->funcs);
	pt->funcs = NULL;
	pt->nfuncs = 0;
}

/* Parses and indexes the candidate in V into a fresh PT; on failure PT is left empty. */
static int try_table(struct elf_file *ef, struct pcln_view *v, struct pclntab *pt)
{
	int err = parse_header(v);

	if (!err)
		err = index_funcs(ef, v, pt);
	if (err)
		free_funcs(pt);
	return err;
}

/*
 * A header's first 8 bytes, cheap to test at every offset of a scanned section: one of the
 * supported magics (or the old one, to report it) and zero padding.
 */
static bool looks_like_header(const uint8_t *d)
{
	return d[1] == 0xff && d[2] == 0xff && d[3] == 0xff && !d[4] && !d[5] &&
	       (d[0] == 0xfa || d[0] == 0xf0 || d[0] == 0xf1 || d[0] == 0xfb);
}

/*
 * External linkers merge the Go linker's .data.rel.ro.gopclntab into .data.rel.ro (PIE before
 * Go 1.26), so no section carries the table's name: look for its header instead. -ENOENT when
 * nothing looks like one, else the last candidate's refusal.
 */
static int scan_section(struct elf_file *ef, const char *name, struct pcln_view *v,
			struct pclntab *pt)
{
	int err = -ENOENT;
	const void *data;
	uint64_t addr;
	size_t size, off;

	if (elf_file__section(ef, name, &data, &size, &addr))
		return -ENOENT;
	/* The header is at least 4-byte aligned: its magic is read as a uint32. */
	for (off = (4 - addr % 4) % 4; size >= HDR_PREFIX && off <= size - HDR_PREFIX; off += 4) {
		const uint8_t *d = (const uint8_t *)data + off;

		if (!looks_like_header(d))
			continue;
		memset(v, 0, sizeof(*v));
		v->where = name;
		v->data = d;
		v->size = size - off;
		v->addr = addr + off;
		err = try_table(ef, v, pt);
		if (!err)
			return 0;
		pr_debug("'%s': no Go function table at 0x%llx in '%s': %s", elf_file__path(ef),
			 (unsigned long long)v->addr, name, v->why);
	}
	return err;
}

static int locate(struct elf_file *ef, struct pcln_view *v, struct pclntab *pt)
{
	static const char *const named[] = { ".gopclntab", ".data.rel.ro.gopclntab" };
	static const char *const scanned[] = { ".data.rel.ro", ".rodata" };
	int err, res = -ENOENT;
	const void *data;
	uint64_t addr;
	size_t i, size;

	for (i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		memset(v, 0, sizeof(*v));
		v->where = named[i];
		err = elf_file__section(ef, named[i], &data, &size, &addr);
		if (err == -ENOENT)
			continue;
		if (err)
			return refuse(v, "section '%s' unreadable: %s", named[i], strerror(-err));
		/* A section with this name is the table: no second guess if it is broken. */
		v->data = data;
		v->size = size;
		v->addr = addr;
		return try_table(ef, v, pt);
	}
	for (i = 0; i < sizeof(scanned) / sizeof(scanned[0]); i++) {
		err = scan_section(ef, scanned[i], v, pt);
		if (!err)
			return 0;
		if (err != -ENOENT)
			res = err;
	}
	return res;
}

uint64_t pclntab__text_start(const struct pclntab *pt)
{
	return pt->text_start;
}

struct pclntab *pclntab__open(struct elf_file *ef)
{
	struct pcln_view v = { 0 };
	struct pclntab *pt;
	int err;

	pt = calloc(1, sizeof(*pt));
	if (!pt)
		return NULL;
	err = locate(ef, &v, pt);
	if (err)
		goto cleanup;
	pr_debug("'%s': Go function table in '%s' at 0x%llx (magic 0x%08x): %zu functions%s%s",
		 elf_file__path(ef), v.where, (unsigned long long)v.addr, v.magic, pt->nfuncs,
		 v.text_from ? ", text start from " : "", v.text_from ? v.text_from : "");
	return pt;

cleanup:
	if (err == -ENOENT)
		pr_debug("no Go function table in '%s'", elf_file__path(ef));
	else if (err == -EINVAL)
		pr_err("cannot read the Go function table of '%s': %s", elf_file__path(ef), v.why);
	else
		pr_err("cannot read the Go function table of '%s': %s", elf_file__path(ef),
		       strerror(-err));
	pclntab__close(pt);
	errno = -err;
	return NULL;
}

int pclntab__find_func(const struct pclntab *pt, const char *name, struct elf_symbol *out)
{
	return sym_index__find(pt->funcs, pt->nfuncs, name, out);
}

size_t pclntab__functions(const struct pclntab *pt, const struct sym_entry **out)
{
	*out = pt->funcs;
	return pt->nfuncs;
}

void pclntab__close(struct pclntab *pt)
{
	if (!pt)
		return;
	free_funcs(pt);
	free(pt);
}

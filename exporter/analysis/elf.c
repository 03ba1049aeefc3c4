// SPDX-License-Identifier: MIT
/*
 * A target binary seen through libelf. Everything that later code asks for is validated once at
 * open time (program headers, section headers, the symbol table), so that a truncated or corrupt
 * file is refused with one clear message instead of failing halfway through target analysis. The
 * file stays mapped until close: symbol names and section bytes point into the mapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/elf.h"
#include "core/log.h"

struct elf_segment {
	uint64_t vaddr;
	uint64_t offset;
	uint64_t filesz;
};

struct elf_file {
	char *path;
	int fd;
	Elf *elf;
	const char *raw; /* the whole file, mapped by libelf */
	size_t raw_size;
	uint16_t machine;
	uint16_t type;
	size_t shstrndx;
	struct elf_segment *segs;
	size_t nsegs;
	uint64_t tls_memsz, tls_align; /* PT_TLS; tls_align 0: the file has none */
	struct sym_entry *syms; /* sorted by name, then address */
	size_t nsyms;
};

/* [off, off + len) lies inside a file of SIZE bytes, without overflowing. */
static bool in_file(uint64_t off, uint64_t len, size_t size)
{
	return off <= size && len <= size - off;
}

/*
 * libelf quietly reports zero program or section headers when their tables lie past the end of
 * the file, which would make a truncated binary look like one with no code and no symbols.
 */
static int check_header_tables(struct elf_file *ef, const GElf_Ehdr *eh)
{
	uint64_t n;

	/* PN_XNUM and a zero e_shnum mean "the count is in section 0": check that one entry. */
	n = eh->e_phnum == PN_XNUM ? 1 : eh->e_phnum;
	if (n && !in_file(eh->e_phoff, n * eh->e_phentsize, ef->raw_size)) {
		pr_err("cannot open '%s': program headers extend past the file (truncated?)",
		       ef->path);
		return -EINVAL;
	}
	n = eh->e_shnum ? eh->e_shnum : eh->e_shoff ? 1 : 0;
	if (n && !in_file(eh->e_shoff, n * eh->e_shentsize, ef->raw_size)) {
		pr_err("cannot open '%s': section headers extend past the file (truncated?)",
		       ef->path);
		return -EINVAL;
	}
	return 0;
}

static int load_segments(struct elf_file *ef)
{
	size_t i, n;

	if (elf_getphdrnum(ef->elf, &n)) {
		pr_err("cannot open '%s': bad program header count: %s", ef->path, elf_errmsg(-1));
		return -EINVAL;
	}
	if (!n)
		return 0;
	ef->segs = calloc(n, sizeof(*ef->segs));
	if (!ef->segs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(ef->elf, i, &ph)) {
			pr_err("cannot open '%s': bad program header %zu (truncated?): %s",
			       ef->path, i, elf_errmsg(-1));
			return -EINVAL;
		}
		if (ph.p_type == PT_TLS) {
			ef->tls_memsz = ph.p_memsz;
			ef->tls_align = ph.p_align ? ph.p_align : 1;
		}
		if (ph.p_type != PT_LOAD)
			continue;
		if (!in_file(ph.p_offset, ph.p_filesz, ef->raw_size)) {
			pr_err("cannot open '%s': segment %zu extends past the file (truncated?)",
			       ef->path, i);
			return -EINVAL;
		}
		if (ph.p_vaddr + ph.p_filesz < ph.p_vaddr) {
			pr_err("cannot open '%s': segment %zu wraps around the address space",
			       ef->path, i);
			return -EINVAL;
		}
		ef->segs[ef->nsegs].vaddr = ph.p_vaddr;
		ef->segs[ef->nsegs].offset = ph.p_offset;
		ef->segs[ef->nsegs].filesz = ph.p_filesz;
		ef->nsegs++;
	}
	return 0;
}

/* Checks every section header once, so later lookups can trust sh_offset and sh_size. */
static int check_sections(struct elf_file *ef)
{
	Elf_Scn *scn = NULL;
	int eerr;

	if (elf_getshdrstrndx(ef->elf, &ef->shstrndx)) {
		pr_err("cannot open '%s': bad section name table index: %s", ef->path,
		       elf_errmsg(-1));
		return -EINVAL;
	}
	(void)elf_errno(); /* clears any earlier error, see below */
	while ((scn = elf_nextscn(ef->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh)) {
			pr_err("cannot open '%s': bad section header %zu (truncated?): %s",
			       ef->path, elf_ndxscn(scn), elf_errmsg(-1));
			return -EINVAL;
		}
		if (sh.sh_type != SHT_NOBITS && !in_file(sh.sh_offset, sh.sh_size, ef->raw_size)) {
			pr_err("cannot open '%s': section %zu extends past the file (truncated?)",
			       ef->path, elf_ndxscn(scn));
			return -EINVAL;
		}
	}
	/* elf_nextscn() also returns NULL on error; tell that apart from the end of the list. */
	eerr = elf_errno();
	if (eerr) {
		pr_err("cannot open '%s': bad section table: %s", ef->path, elf_errmsg(eerr));
		return -EINVAL;
	}
	return 0;
}

static int sym_entry_cmp(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static Elf_Scn *find_symtab(struct elf_file *ef, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(ef->elf, scn))) {
		if (gelf_getshdr(scn, sh) && sh->sh_type == SHT_SYMTAB)
			return scn;
	}
	return NULL;
}

/*
 * Keeps only defined functions and objects with a name: those are what gospan looks up (probe
 * sites, itabs), and it halves the index of a Go binary.
 */
static int index_symbols(struct elf_file *ef)
{
	size_t i, count, entsize;
	Elf_Data *data;
	Elf_Scn *scn;
	GElf_Shdr sh;

	scn = find_symtab(ef, &sh);
	if (!scn)
		return 0; /* stripped: lookups answer -ENOENT */
	entsize = gelf_fsize(ef->elf, ELF_T_SYM, 1, EV_CURRENT);
	data = elf_getdata(scn, NULL);
	if (!entsize || !data) {
		pr_err("cannot read the symbol table of '%s': %s", ef->path, elf_errmsg(-1));
		return -EINVAL;
	}
	count = data->d_size / entsize;
	if (!count)
		return 0;
	ef->syms = calloc(count, sizeof(*ef->syms));
	if (!ef->syms)
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		struct sym_entry *e;
		const char *name;
		GElf_Sym sym;
		int type;

		if (!gelf_getsym(data, i, &sym)) {
			pr_err("cannot read symbol %zu of '%s': %s", i, ef->path, elf_errmsg(-1));
			return -EINVAL;
		}
		type = GELF_ST_TYPE(sym.st_info);
		/* STT_TLS: st_value is the offset in the TLS block (runtime.tlsg). */
		if ((type != STT_FUNC && type != STT_OBJECT && type != STT_TLS) ||
		    sym.st_shndx == SHN_UNDEF ||
		    !sym.st_name)
			continue;
		name = elf_strptr(ef->elf, sh.sh_link, sym.st_name);
		if (!name) {
			pr_err("cannot read the name of symbol %zu of '%s': %s", i, ef->path,
			       elf_errmsg(-1));
			return -EINVAL;
		}
		e = &ef->syms[ef->nsyms++];
		e->name = name;
		e->addr = sym.st_value;
		e->size = sym.st_size;
		e->is_func = type == STT_FUNC;
	}
	sym_index__sort(ef->syms, ef->nsyms);
	return 0;
}

struct elf_file *elf_file__open(const char *path)
{
	struct elf_file *ef;
	GElf_Ehdr eh;
	struct stat st;
	int err;

	ef = calloc(1, sizeof(*ef));
	if (!ef)
		return NULL;
	ef->fd = -1;
	ef->path = strdup(path);
	if (!ef->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		pr_err("cannot open '%s': libelf does not support the current ELF version", path);
		err = -ENOTSUP;
		goto cleanup;
	}
	ef->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (ef->fd < 0 || fstat(ef->fd, &st)) {
		err = -errno;
		pr_err("cannot open '%s': %s", path, strerror(errno));
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		pr_err("cannot open '%s': not a regular file", path);
		err = -ENOEXEC;
		goto cleanup;
	}
	/* libelf accepts an empty file as a "non-ELF" file; say what it really is. */
	if (!st.st_size) {
		pr_err("cannot open '%s': empty file", path);
		err = -ENOEXEC;
		goto cleanup;
	}
	ef->elf = elf_begin(ef->fd, ELF_C_READ_MMAP, NULL);
	if (!ef->elf) {
		pr_err("cannot open '%s': %s", path, elf_errmsg(-1));
		err = -EINVAL;
		goto cleanup;
	}
	if (elf_kind(ef->elf) != ELF_K_ELF) {
		pr_err("cannot open '%s': not an ELF file", path);
		err = -ENOEXEC;
		goto cleanup;
	}
	if (!gelf_getehdr(ef->elf, &eh)) {
		pr_err("cannot open '%s': bad ELF header (truncated?): %s", path, elf_errmsg(-1));
		err = -EINVAL;
		goto cleanup;
	}
	ef->machine = eh.e_machine;
	ef->type = eh.e_type;
	ef->raw = elf_rawfile(ef->elf, &ef->raw_size);
	if (!ef->raw) {
		pr_err("cannot open '%s': %s", path, elf_errmsg(-1));
		err = -EINVAL;
		goto cleanup;
	}
	err = check_header_tables(ef, &eh);
	if (err)
		goto cleanup;
	err = load_segments(ef);
	if (err)
		goto cleanup;
	err = check_sections(ef);
	if (err)
		goto cleanup;
	err = index_symbols(ef);
	if (err)
		goto cleanup;
	return ef;

cleanup:
	elf_file__close(ef);
	errno = -err;
	return NULL;
}

void elf_file__close(struct elf_file *ef)
{
	if (!ef)
		return;
	free(ef->syms);
	free(ef->segs);
	if (ef->elf)
		elf_end(ef->elf);
	if (ef->fd >= 0)
		close(ef->fd);
	free(ef->path);
	free(ef);
}

const char *elf_file__path(const struct elf_file *ef)
{
	return ef->path;
}

uint16_t elf_file__machine(const struct elf_file *ef)
{
	return ef->machine;
}

bool elf_file__is_pie(const struct elf_file *ef)
{
	return ef->type == ET_DYN;
}

void sym_index__sort(struct sym_entry *entries, size_t n)
{
	qsort(entries, n, sizeof(*entries), sym_entry_cmp);
}

int sym_index__find(const struct sym_entry *entries, size_t n, const char *name,
		    struct elf_symbol *out)
{
	size_t lo = 0, hi = n;

	/* Lower bound, so that of several entries with one name the lowest address wins. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(entries[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n || strcmp(entries[lo].name, name))
		return -ENOENT;
	out->addr = entries[lo].addr;
	out->size = entries[lo].size;
	return 0;
}

size_t elf_file__symbols(const struct elf_file *ef, const struct sym_entry **out)
{
	*out = ef->syms;
	return ef->nsyms;
}

int elf_file__find_symbol(struct elf_file *ef, const char *name, struct elf_symbol *out)
{
	return sym_index__find(ef->syms, ef->nsyms, name, out);
}

/* The PT_LOAD segment whose file-backed part holds [addr, addr + len), or NULL. */
static const struct elf_segment *find_segment(const struct elf_file *ef, uint64_t addr,
					      uint64_t len)
{
	size_t i;

	for (i = 0; i < ef->nsegs; i++) {
		const struct elf_segment *s = &ef->segs[i];

		if (addr >= s->vaddr && addr - s->vaddr < s->filesz &&
		    len <= s->filesz - (addr - s->vaddr))
			return s;
	}
	return NULL;
}

int elf_file__tls(const struct elf_file *ef, uint64_t *memsz, uint64_t *align)
{
	if (!ef->tls_align)
		return -ENOENT;
	*memsz = ef->tls_memsz;
	*align = ef->tls_align;
	return 0;
}

int elf_file__addr_to_offset(const struct elf_file *ef, uint64_t addr, uint64_t *off)
{
	const struct elf_segment *s = find_segment(ef, addr, 1);

	if (!s)
		return -ERANGE;
	*off = s->offset + (addr - s->vaddr);
	return 0;
}

int elf_file__offset_to_addr(const struct elf_file *ef, uint64_t off, uint64_t *addr)
{
	size_t i;

	for (i = 0; i < ef->nsegs; i++) {
		const struct elf_segment *s = &ef->segs[i];

		if (off >= s->offset && off - s->offset < s->filesz) {
			*addr = s->vaddr + (off - s->offset);
			return 0;
		}
	}
	return -ERANGE;
}

int elf_file__read_addr(const struct elf_file *ef, uint64_t addr, void *buf, size_t len)
{
	const struct elf_segment *s = find_segment(ef, addr, len ? len : 1);

	if (!s)
		return -ERANGE;
	/* load_segments() checked that the whole file-backed part of S is in the file. */
	memcpy(buf, ef->raw + s->offset + (addr - s->vaddr), len);
	return 0;
}

int elf_file__section(const struct elf_file *ef, const char *name, const void **data, size_t *size,
		      uint64_t *addr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(ef->elf, scn))) {
		const char *sname;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return -EINVAL; /* cannot happen: check_sections() read them all */
		sname = elf_strptr(ef->elf, ef->shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, name))
			continue;
		if (sh.sh_type == SHT_NOBITS)
			return -ENODATA;
		/* Compressed bytes would look valid and be garbage to every caller. */
		if (sh.sh_flags & SHF_COMPRESSED)
			return -EOPNOTSUPP;
		if (data)
			*data = ef->raw + sh.sh_offset;
		if (size)
			*size = sh.sh_size;
		if (addr)
			*addr = sh.sh_addr;
		return 0;
	}
	return -ENOENT;
}

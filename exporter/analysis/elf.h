/* SPDX-License-Identifier: MIT */
/*
 * Reading a target binary with libelf: symbols to addresses, addresses to file offsets (what a
 * uprobe is placed by), and raw bytes at a virtual address (code to disassemble, buildinfo).
 */
#ifndef GOSPAN_ELF_H
#define GOSPAN_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_file;

struct elf_symbol {
	uint64_t addr; /* link-time virtual address */
	uint64_t size;
};

/*
 * A name -> address index, sorted by name then address: .symtab's and the Go function table's
 * (pclntab.c) are both searched through it.
 */
struct sym_entry {
	const char *name;
	uint64_t addr;
	uint64_t size;
	bool owned; /* NAME was allocated for the index (pclntab.c rewrites some names) */
	bool is_func; /* a function (the rest of .symtab's index are data objects) */
};

void sym_index__sort(struct sym_entry *entries, size_t n);
/* Of several entries named NAME, the lowest address wins. -ENOENT when there is none. */
int sym_index__find(const struct sym_entry *entries, size_t n, const char *name,
		    struct elf_symbol *out);

/*
 * Opens and indexes PATH. NULL with errno set on failure, the reason logged: ENOEXEC when PATH is
 * not an ELF file (or empty), EINVAL when it is a truncated or corrupt one, else open(2)'s errno.
 */
struct elf_file *elf_file__open(const char *path);
void elf_file__close(struct elf_file *ef);

const char *elf_file__path(const struct elf_file *ef);
/* e_machine: EM_X86_64 or EM_AARCH64 for the targets gospan supports. */
uint16_t elf_file__machine(const struct elf_file *ef);
/* ET_DYN: the load address is chosen at run time (-buildmode=pie). */
bool elf_file__is_pie(const struct elf_file *ef);

/* Looks NAME up in .symtab. -ENOENT when absent (stripped binaries have no .symtab). */
int elf_file__find_symbol(struct elf_file *ef, const char *name, struct elf_symbol *out);
/* The whole .symtab index, sorted by name (functions and objects: see is_func); its size. */
size_t elf_file__symbols(const struct elf_file *ef, const struct sym_entry **out);
/* The thread-local storage segment (PT_TLS): its size in memory and alignment; -ENOENT if none. */
int elf_file__tls(const struct elf_file *ef, uint64_t *memsz, uint64_t *align);
/* Translates a virtual address to a file offset through the PT_LOAD segments; -ERANGE if none. */
int elf_file__addr_to_offset(const struct elf_file *ef, uint64_t addr, uint64_t *off);
/* The inverse: the virtual address file offset OFF is loaded at; -ERANGE if no segment maps it. */
int elf_file__offset_to_addr(const struct elf_file *ef, uint64_t off, uint64_t *addr);
/* Copies LEN file-backed bytes at virtual address ADDR; -ERANGE if they are not all in the file. */
int elf_file__read_addr(const struct elf_file *ef, uint64_t addr, void *buf, size_t len);
/*
 * Finds section NAME: its bytes (valid until close), size and address; any of the three may be
 * NULL. -ENOENT if absent, -ENODATA if it has no bytes in the file (SHT_NOBITS), -EOPNOTSUPP if
 * it is compressed (SHF_COMPRESSED).
 */
int elf_file__section(const struct elf_file *ef, const char *name, const void **data, size_t *size,
		      uint64_t *addr);

#endif

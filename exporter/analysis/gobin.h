/* SPDX-License-Identifier: MIT */
/*
 * Go buildinfo (.go.buildinfo): the toolchain version and module list the Go linker records in
 * every binary, stripped or not. This is how gospan knows which offset table a target needs.
 */
#ifndef GOSPAN_GOBIN_H
#define GOSPAN_GOBIN_H

#include <stdbool.h>
#include <stddef.h>

struct elf_file;

struct gobin_module {
	char *path;
	char *version;
};

struct gobin {
	char *go_version; /* as recorded, e.g. "go1.22.12" or "go1.23.0 X:boringcrypto" */
	int major, minor, patch;
	char *main_path;    /* main module path; NULL when built without module info */
	char *main_version; /* e.g. "(devel)" */
	struct gobin_module *deps;
	size_t ndeps;
};

/*
 * Reads buildinfo from an opened binary. NULL with errno set: ENOEXEC when the binary is not Go
 * (no buildinfo), EINVAL when the buildinfo is corrupt. The reason is logged.
 */
struct gobin *gobin__read(struct elf_file *ef);
void gobin__free(struct gobin *gb);

/*
 * Whether GB, PATH's buildinfo, was built by a Go release whose compiler passes arguments in
 * registers for MACHINE (an ELF e_machine): 1.17 on amd64, 1.18 on arm64. gospan's probes read
 * arguments from registers, so it cannot trace an earlier build: -EOPNOTSUPP, said.
 */
int gobin__check_abi(const struct gobin *gb, uint16_t machine, const char *path);

/*
 * The version of MODULE the binary was built with, from its buildinfo: a dependency's, or the
 * main module's when the binary is one of the module's own programs (grpc-go's examples).
 * "(devel)" for a replacement without a version; NULL when the binary does not use MODULE.
 */
const char *gobin__module_version(const struct gobin *gb, const char *module);

/*
 * Parses "go1.22.12", "1.22.12", "go1.21" (patch 0), "go1.21rc2" (patch 0), ignoring anything
 * after the version such as " X:boringcrypto". -EINVAL when it is not a Go version.
 */
int gobin__parse_version(const char *s, int *major, int *minor, int *patch);

#endif

// SPDX-License-Identifier: MIT
/*
 * Go buildinfo reader. The Go linker writes a .go.buildinfo section that begins with a 16-byte
 * header: the 14-byte magic "\xff Go buildinf:", the pointer size and a flags byte (bit 0: big
 * endian, bit 1: strings inline). Go 1.18 and later put the version and module-info strings right
 * after a 32-byte header, each prefixed with its length as a uvarint; older toolchains stored two
 * pointers at offset 16 to Go string headers (data pointer, length) elsewhere in the binary. Every
 * length and pointer read from the target is bounded before use: the file may be hostile.
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/elf.h"
#include "analysis/gobin.h"
#include "core/log.h"

#define BUILDINFO_MAGIC "\xff Go buildinf:"
#define BUILDINFO_MAGIC_LEN 14
#define BUILDINFO_HDR_LEN 32
#define BUILDINFO_PTRS_OFF 16
#define BUILDINFO_FLAG_BIG_ENDIAN 0x1
#define BUILDINFO_FLAG_INLINE 0x2
/* Module info is framed by 16 bytes of sentinel on each side so the go command can find it. */
#define MODINFO_SENTINEL_LEN 16
/* Real module lists are kilobytes; anything this large is a corrupt length, not a big program. */
#define BUILDINFO_MAX_STR (16u << 20)

/* A string that borrows from the section or from a buffer the caller owns. */
struct bstr {
	const char *p;
	size_t len;
};

/* Decodes a uvarint at *POS in BUF; -EINVAL when it is truncated or overflows 64 bits. */
static int read_uvarint(const uint8_t *buf, size_t size, size_t *pos, uint64_t *out)
{
	uint64_t v = 0;
	unsigned int shift;

	for (shift = 0; shift < 64 && *pos < size; shift += 7) {
		uint8_t b = buf[(*pos)++];

		if (shift == 63 && b > 1)
			return -EINVAL;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EINVAL;
}

static int read_inline_str(const uint8_t *buf, size_t size, size_t *pos, struct bstr *out)
{
	uint64_t len;

	if (read_uvarint(buf, size, pos, &len) || len > size - *pos)
		return -EINVAL;
	out->p = (const char *)buf + *pos;
	out->len = len;
	*pos += len;
	return 0;
}

static uint64_t decode_ptr(const uint8_t *p, int ptrsize, bool big_endian)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < ptrsize; i++) {
		int shift = big_endian ? (ptrsize - 1 - i) * 8 : i * 8;

		v |= (uint64_t)p[i] << shift;
	}
	return v;
}

/*
 * Follows a pointer to a Go string header (data pointer, length) and copies the string into a
 * malloc'ed buffer that *OUT then borrows. The old format is only readable where the pointers
 * are in the file as link-time addresses, which is how the Go linker wrote executables.
 */
static int read_pointed_str(const struct elf_file *ef, uint64_t hdr_addr, int ptrsize,
			    bool big_endian, char **buf, struct bstr *out)
{
	uint8_t hdr[16];
	uint64_t data, len;
	int err;

	err = elf_file__read_addr(ef, hdr_addr, hdr, 2 * ptrsize);
	if (err)
		return -EINVAL;
	data = decode_ptr(hdr, ptrsize, big_endian);
	len = decode_ptr(hdr + ptrsize, ptrsize, big_endian);
	if (len > BUILDINFO_MAX_STR)
		return -EINVAL;
	*buf = malloc(len + 1);
	if (!*buf)
		return -ENOMEM;
	err = elf_file__read_addr(ef, data, *buf, len);
	if (err)
		return -EINVAL;
	out->p = *buf;
	out->len = len;
	return 0;
}

static int parse_digits(const char **s, int *out)
{
	long v = 0;

	if (**s < '0' || **s > '9')
		return -EINVAL;
	while (**s >= '0' && **s <= '9') {
		v = v * 10 + (**s - '0');
		if (v > 1000000)
			return -EINVAL;
		(*s)++;
	}
	*out = v;
	return 0;
}

int gobin__parse_version(const char *s, int *major, int *minor, int *patch)
{
	int ma, mi, pa = 0, pre;

	if (!s)
		return -EINVAL;
	if (!strncmp(s, "go", 2))
		s += 2;
	if (parse_digits(&s, &ma) || *s++ != '.' || parse_digits(&s, &mi))
		return -EINVAL;
	if (*s == '.') {
		s++;
		if (parse_digits(&s, &pa))
			return -EINVAL;
	} else if (!strncmp(s, "rc", 2) || !strncmp(s, "beta", 4)) {
		/* A pre-release of x.y comes before x.y.0: it has x.y's layout, so patch 0. */
		s += s[0] == 'r' ? 2 : 4;
		if (parse_digits(&s, &pre))
			return -EINVAL;
	}
	/* A space starts suffixes such as " X:boringcrypto"; anything else glued on is not Go's. */
	if (*s && *s != ' ')
		return -EINVAL;
	*major = ma;
	*minor = mi;
	*patch = pa;
	return 0;
}

static char *bstr_dup(struct bstr s)
{
	return strndup(s.p, s.len);
}

/* Splits off the next tab-separated field of LINE; an absent field is empty. */
static struct bstr next_field(struct bstr *line)
{
	const char *tab = memchr(line->p, '\t', line->len);
	struct bstr f = *line;

	if (tab) {
		f.len = tab - line->p;
		line->p = tab + 1;
		line->len -= f.len + 1;
	} else {
		line->p += line->len;
		line->len = 0;
	}
	return f;
}

static int add_dep(struct gobin *gb, struct bstr path, struct bstr version)
{
	struct gobin_module *deps, *m;

	deps = realloc(gb->deps, (gb->ndeps + 1) * sizeof(*deps));
	if (!deps)
		return -ENOMEM;
	gb->deps = deps;
	m = &deps[gb->ndeps];
	m->path = bstr_dup(path);
	m->version = bstr_dup(version);
	if (!m->path || !m->version) {
		free(m->path);
		free(m->version);
		return -ENOMEM;
	}
	gb->ndeps++;
	return 0;
}

/*
 * A "=>" line replaces the module on the line before it. The module keeps its own path, which is
 * what offset tables and users know it by, and takes the replacement's version, since that is
 * the code actually linked in; a directory replacement has no version and counts as "(devel)".
 */
static int replace_last(char **last_version, struct bstr version)
{
	char *v;

	if (!last_version)
		return -EINVAL;
	v = version.len ? bstr_dup(version) : strdup("(devel)");
	if (!v)
		return -ENOMEM;
	free(*last_version);
	*last_version = v;
	return 0;
}

static int parse_modinfo(struct gobin *gb, struct bstr mod)
{
	char **last_version = NULL;
	int err;

	/* Without both sentinels there is no module info (GOPATH mode), which is not an error. */
	if (mod.len < 2 * MODINFO_SENTINEL_LEN + 1 ||
	    mod.p[mod.len - MODINFO_SENTINEL_LEN - 1] != '\n')
		return 0;
	mod.p += MODINFO_SENTINEL_LEN;
	mod.len -= 2 * MODINFO_SENTINEL_LEN;

	while (mod.len) {
		const char *nl = memchr(mod.p, '\n', mod.len);
		struct bstr line = { mod.p, nl ? (size_t)(nl - mod.p) : mod.len };
		struct bstr key, path, version;

		mod.p += line.len + (nl ? 1 : 0);
		mod.len -= line.len + (nl ? 1 : 0);
		key = next_field(&line);
		path = next_field(&line);
		version = next_field(&line);

		/*
		 * "path" (the main package, not the module) and "build" settings are not needed,
		 * nor keys that a later toolchain may add.
		 */
		if (key.len == 3 && !memcmp(key.p, "mod", 3)) {
			if (!path.len || gb->main_path)
				return -EINVAL;
			gb->main_path = bstr_dup(path);
			gb->main_version = bstr_dup(version);
			if (!gb->main_path || !gb->main_version)
				return -ENOMEM;
			last_version = &gb->main_version;
		} else if (key.len == 3 && !memcmp(key.p, "dep", 3)) {
			if (!path.len)
				return -EINVAL;
			err = add_dep(gb, path, version);
			if (err)
				return err;
			/* Valid until the next "dep" line, which resets it before use. */
			last_version = &gb->deps[gb->ndeps - 1].version;
		} else if (key.len == 2 && !memcmp(key.p, "=>", 2)) {
			err = replace_last(last_version, version);
			if (err)
				return err;
			last_version = NULL; /* one replacement per module */
		}
	}
	return 0;
}

int gobin__check_abi(const struct gobin *gb, uint16_t machine, const char *path)
{
	/* Go 1.17 (amd64) and 1.18 (arm64) release notes: arguments in registers from then on. */
	int first = machine == EM_AARCH64 ? 18 : 17;

	if (gb->major == 1 && gb->minor >= first)
		return 0;
	pr_err("cannot trace '%s': built with %s; gospan needs Go 1.%d or later on %s "
	       "(register ABI)",
	       path, gb->go_version, first, machine == EM_AARCH64 ? "arm64" : "amd64");
	return -EOPNOTSUPP;
}

void gobin__free(struct gobin *gb)
{
	size_t i;

	if (!gb)
		return;
	for (i = 0; i < gb->ndeps; i++) {
		free(gb->deps[i].path);
		free(gb->deps[i].version);
	}
	free(gb->deps);
	free(gb->go_version);
	free(gb->main_path);
	free(gb->main_version);
	free(gb);
}

struct gobin *gobin__read(struct elf_file *ef)
{
	const char *path = elf_file__path(ef);
	char *vers_buf = NULL, *mod_buf = NULL;
	struct bstr vers = { 0 }, mod = { 0 };
	struct gobin *gb = NULL;
	const uint8_t *sec;
	const void *data;
	uint64_t sec_addr;
	size_t size;
	int err, ptrsize;
	uint8_t flags;

	err = elf_file__section(ef, ".go.buildinfo", &data, &size, &sec_addr);
	if (err == -ENOENT) {
		pr_err("cannot read buildinfo of '%s': not a Go binary", path);
		err = -ENOEXEC;
		goto cleanup;
	}
	if (err) {
		/* Present but without bytes (NOBITS, compressed): nothing a Go linker writes. */
		pr_err("cannot read buildinfo of '%s': .go.buildinfo is unreadable: %s", path,
		       strerror(-err));
		if (err != -ENOMEM)
			err = -EINVAL;
		goto cleanup;
	}
	sec = data;
	err = -EINVAL;
	if (!sec || size < BUILDINFO_HDR_LEN || memcmp(sec, BUILDINFO_MAGIC, BUILDINFO_MAGIC_LEN)) {
		pr_err("cannot read buildinfo of '%s': no buildinfo header in .go.buildinfo", path);
		goto cleanup;
	}
	ptrsize = sec[BUILDINFO_MAGIC_LEN];
	flags = sec[BUILDINFO_MAGIC_LEN + 1];
	if (flags & BUILDINFO_FLAG_INLINE) {
		size_t pos = BUILDINFO_HDR_LEN;

		if (read_inline_str(sec, size, &pos, &vers) ||
		    read_inline_str(sec, size, &pos, &mod)) {
			pr_err("cannot read buildinfo of '%s': truncated string", path);
			goto cleanup;
		}
	} else {
		bool be = flags & BUILDINFO_FLAG_BIG_ENDIAN;
		const uint8_t *ptrs = sec + BUILDINFO_PTRS_OFF;

		if (ptrsize != 4 && ptrsize != 8) {
			pr_err("cannot read buildinfo of '%s': bad pointer size %d", path, ptrsize);
			goto cleanup;
		}
		err = read_pointed_str(ef, decode_ptr(ptrs, ptrsize, be), ptrsize, be, &vers_buf,
				       &vers);
		if (!err)
			err = read_pointed_str(ef, decode_ptr(ptrs + ptrsize, ptrsize, be), ptrsize,
					       be, &mod_buf, &mod);
		if (err) {
			if (err == -EINVAL)
				pr_err("cannot read buildinfo of '%s': bad string pointer", path);
			goto cleanup;
		}
	}
	/* The go command says the same of a buildinfo without a version: not a Go executable. */
	if (!vers.len) {
		pr_err("cannot read buildinfo of '%s': not a Go binary (no Go version recorded)",
		       path);
		err = -ENOEXEC;
		goto cleanup;
	}

	if (memchr(vers.p, '\0', vers.len)) {
		pr_err("cannot read buildinfo of '%s': the Go version contains a NUL byte", path);
		err = -EINVAL;
		goto cleanup;
	}

	gb = calloc(1, sizeof(*gb));
	if (!gb) {
		err = -ENOMEM;
		goto cleanup;
	}
	gb->go_version = bstr_dup(vers);
	if (!gb->go_version) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* A development toolchain ("devel go1.24-abc...") names no release: leave 0.0.0. */
	if (gobin__parse_version(gb->go_version, &gb->major, &gb->minor, &gb->patch))
		pr_warn("'%s' was built with Go '%s', which names no Go release", path,
			gb->go_version);
	err = parse_modinfo(gb, mod);
	if (err) {
		if (err == -EINVAL)
			pr_err("cannot read buildinfo of '%s': corrupt module list", path);
		goto cleanup;
	}
	pr_debug("'%s': %s, main module %s, %zu dependencies", path, gb->go_version,
		 gb->main_path ? gb->main_path : "(none)", gb->ndeps);

cleanup:
	free(vers_buf);
	free(mod_buf);
	if (err) {
		gobin__free(gb);
		errno = -err;
		return NULL;
	}
	return gb;
}

const char *gobin__module_version(const struct gobin *gb, const char *module)
{
	size_t i;

	if (gb->main_path && !strcmp(gb->main_path, module))
		return gb->main_version ? gb->main_version : "(devel)";
	for (i = 0; i < gb->ndeps; i++) {
		if (gb->deps[i].path && !strcmp(gb->deps[i].path, module))
			return gb->deps[i].version ? gb->deps[i].version : "(devel)";
	}
	return NULL;
}

/* SPDX-License-Identifier: MIT */
/*
 * Span attributes from values the probes captured: BPF copies a Go string up to a bound and
 * hands back its real length, so a cut value is known as such.
 */
#ifndef GOSPAN_ATTRS_H
#define GOSPAN_ATTRS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct span;

/* Appends KEY to the span's gospan.truncated list: its value was cut at the capture bound. */
void attrs__mark_truncated(struct span *s, const char *key);

/*
 * Sets KEY to a captured Go string (DATA, real length LEN, at most CAP bytes of it captured),
 * marked when the capture cut it. No character is cut in two; the rest is made valid UTF-8.
 */
void attrs__set_captured(struct span *s, const char *key, const char *data, uint32_t len,
			 size_t cap);

/*
 * How many bytes of a captured Go string (DATA, real length LEN, at most CAP captured) C code
 * would read of its copy: no character cut in two, and up to a NUL it holds. What the copy says
 * of those bytes, the caller can then ask of DATA itself when it looks only for ASCII (a method,
 * a delimiter), and hand them to the span, which makes them valid UTF-8 as it copies them: no
 * copy on the stack first.
 */
size_t attrs__captured_text_len(const char *data, uint32_t len, size_t cap);

/* A captured Go string as valid UTF-8 in OUT (OUT_CAP bytes); returns the bytes written. */
size_t attrs__captured_copy(char *out, size_t out_cap, const char *data, uint32_t len,
			    size_t cap);

/*
 * Splits "host:port", "[v6]:port", "host" or "v6" (HP, HP_LEN bytes) into attributes HOST_KEY
 * and PORT_KEY, of the lengths given.
 */
void attrs__host_port(struct span *s, const char *hp, size_t hp_len, const char *host_key,
		      size_t host_key_len, const char *port_key, size_t port_key_len);

/*
 * The same for HP of HP_LEN bytes (a length the caller knows, such as attrs__captured_text_len's:
 * HP is not measured again). Inline so that the keys' lengths, semconv.h literals at every call,
 * are worked out by the compiler.
 */
static inline void attrs__set_host_port_len(struct span *s, const char *hp, size_t hp_len,
					    const char *host_key, const char *port_key)
{
	attrs__host_port(s, hp, hp_len, host_key, strlen(host_key), port_key, strlen(port_key));
}

/* The same for a NUL-terminated HP. */
static inline void attrs__set_host_port(struct span *s, const char *hp, const char *host_key,
					const char *port_key)
{
	attrs__set_host_port_len(s, hp, strlen(hp), host_key, port_key);
}

#endif

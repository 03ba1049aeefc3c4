/* SPDX-License-Identifier: MIT */
/* Files built into the gospan binary so it runs from anywhere: the offset tables. */
#ifndef GOSPAN_EMBED_H
#define GOSPAN_EMBED_H

/* offsets/go_offsets.json, NUL-terminated; its length excludes the NUL. */
extern const char gospan_offsets_json[];
extern const char gospan_offsets_json_end[];

/* offsets/grpc_offsets.json, NUL-terminated; its length excludes the NUL. */
extern const char gospan_grpc_offsets_json[];
extern const char gospan_grpc_offsets_json_end[];

/* offsets/pgx_offsets.json, NUL-terminated; its length excludes the NUL. */
extern const char gospan_pgx_offsets_json[];
extern const char gospan_pgx_offsets_json_end[];

/* offsets/redis_offsets.json, NUL-terminated; its length excludes the NUL. */
extern const char gospan_redis_offsets_json[];
extern const char gospan_redis_offsets_json_end[];

#endif

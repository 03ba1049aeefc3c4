/* SPDX-License-Identifier: MIT */
/*
 * Where a call ends, without probing its RETs: the kernel single-steps a RET (two traps a hit)
 * where it emulates a direct CALL, JMP, Jcc, NOP or PUSH (one). A call's end is seen instead in
 * its caller, on the first emulated instruction the return leads to, when every call of the
 * function is a direct call gospan can find; or, for a function whose common way out follows one
 * inner call, on the conditional jump that tests that call's error, with the RETs of the other
 * ways kept; or, for a function whose ways out after its inner calls are apart from its others,
 * right after those calls, with the RETs of the others kept. amd64 only: elsewhere the RETs keep
 * their probes.
 */
#ifndef GOSPAN_SITES_H
#define GOSPAN_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/disasm.h"
#include "analysis/elf.h"

/* Where one end probe goes, and what its program must know about the place. */
struct end_site {
	uint64_t off;	  /* a file offset once target.c has placed it; a code address before */
	uint64_t caller;  /* the function it is in (link-time address) */
	bool emulated;	  /* one trap a hit, not two */
	bool in_caller;	  /* after the return: SP is 8 bytes above where the callee's RET saw it */
	bool if_no_error; /* the call ends here when its error is nil (success_exit, after_inner) */
	int8_t result;	  /* where the call's first result is now (x86 register number); -1: as returned */
	/*
	 * With IN_CALLER: bytes of the frames of callers that returned at once after the call
	 * (it was their last), the site being in their caller (exporter/analysis/funcends.c).
	 */
	uint32_t frames;
	/*
	 * A conditional jump that ends the call on one of its ways only (sites__error_ends): the
	 * one taken when the low COND_SIZE bytes of the register of ABI slot COND_SLOT (1: first;
	 * 0: none, the end is on every way) are zero if COND_IF_ZERO, else when they are not.
	 */
	uint8_t cond_slot;
	uint8_t cond_size;
	bool cond_if_zero;
};

/* What sites__after_call() may step over on its way to an emulated instruction. */
enum {
	/*
	 * Indirect calls: for an end whose timing may include a cheap call the caller makes next
	 * (net/http's conn.serve cancels the request's context between ServeHTTP and its next
	 * direct call). Never for function spans, whose callers' next calls are unknown.
	 */
	AFTER_CALL_PASS_CALLS = 1,
	/*
	 * The result after RESULT_REG in the ABI's order (an error's data word after its itab) must
	 * stay in its own register too: no instruction on the way may write it.
	 */
	AFTER_CALL_KEEP_PAIR = 2,
};

/*
 * The end site in the caller INS of the call whose return address is instruction RET_IDX: the
 * first emulated instruction on the straight line from it, before any RET, indirect jump or
 * change of SP; where RESULT_REG is given, the call's result it was returned in must still be in
 * a register there (it may have been copied to another: *OUT says where), and no other path may
 * join on the way, as it would not have set it. Without one, the return address itself
 * (single-stepped, but only on this path). The site may be on other paths too: the end programs
 * find no call of theirs in flight there.
 */
void sites__after_call(const struct insns *ins, long ret_idx, unsigned int flags, int result_reg,
		       struct end_site *out);

/*
 * For a function INS whose usual way out follows one inner call (net/http's roundTrip after
 * persistConn.roundTrip): from that call's return address RET_IDX, the JE or JNE that tests its
 * error register ERR_REG (TEST r, r), reached with RESULTS (a register mask) still the call's, on
 * every way into it (other calls' results may join it there, as a JMP right after a call). The
 * site in *SITE; *EXCL (malloc'ed), the indexes of the RETs that only the error-free branch
 * reaches, whose probes it replaces. -ENOENT when the code does not have that shape.
 */
int sites__success_exit(const struct insns *ins, long ret_idx, int err_reg, uint16_t results,
			struct end_site *site, long **excl, size_t *nexcl);

/*
 * For a function INS whose usual ways out follow a call of one of a few inner functions (pgx's
 * Exec after (*Conn).exec; Query after the pgconn call that sends the query): each of the N
 * CALLs at the indexes CALLS gets the end site its return leads to (sites__after_call with FLAGS
 * and RESULT_REG) in ENDS[i], which must be emulated, when every way from those returns ends at
 * a RET without coming back to a CALL or a site of theirs, and no other way joins them. *EXCL
 * (malloc'ed): the indexes of those RETs, whose probes the sites replace; the other RETs (ways
 * out before the calls) must stay. -ENOENT when the code does not have that shape.
 */
int sites__after_inner(const struct insns *ins, const long *calls, size_t n, unsigned int flags,
		       int result_reg, struct end_site *ends, long **excl, size_t *nexcl);

/*
 * For a function INS that returns an error (AX, BX) from the work calls at the NCALLS indexes
 * CALLS, followed through registers and its frame: where the work is over for good, the ends.
 * Without ENDS_INSIDE (a retry loop around its attempts), the first emulated instruction on
 * each way out of the work where a pair of registers holds the error every RET after it
 * returns, into *ENDS (malloc'ed; result: the register of the error's itab, its data word in
 * the next ABI register); where there is none, the JE or JNE (after a TEST) that takes that
 * way, an end on it alone (struct end_site's cond); with it, the calls end the call themselves (their callee's ends were
 * shown right), and each RET after them must return their error. Every way from instruction
 * START must pass exactly one end, or none and stop at a RET: *KEPT (malloc'ed), the indexes of
 * those RETs, which keep their probes. *NIL_STEPS: 1 when a way where a work call returned no
 * error can reach a kept RET. KEEPING: the NKEEPING functions whose calls change no register
 * but R11-R13 (the Go runtime's write barriers). -ENOENT when the code does not allow it.
 */
int sites__error_ends(const struct insns *ins, long start, const long *calls, size_t ncalls,
		      bool ends_inside, const uint64_t *keeping, size_t nkeeping,
		      struct end_site **ends, size_t *nends, long **kept, size_t *nkept,
		      int *nil_steps);

/* A target's code, for finding the calls of a function. */
struct code_map {
	struct elf_file *ef;
	uint16_t machine;
	const uint8_t *text;
	size_t text_len;
	uint64_t text_addr;
	uint64_t text_base; /* runtime.text, which method tables count from; 0: unknown */
	/* The function containing ADDR: its start and size. */
	int (*func_at)(void *ctx, uint64_t addr, struct elf_symbol *sym);
	void *ctx;
	/* What sites__find_calls() looks up, built at its first call (sites__refs_new()). */
	struct code_refs *refs;
};

struct code_refs;
struct code_refs *sites__refs_new(void);
void sites__refs_free(struct code_refs *r);

/* One direct call of a function, and the caller it is in, decoded. */
struct call_site {
	struct elf_symbol caller;
	struct insns ins;
	long ret_idx; /* the instruction after the call */
};

enum {
	/*
	 * The caller knows that no code reaches the function through a method table: no interface
	 * value built at run time (a type assertion) holds its type. net/http's own serverHandler
	 * and Transport.roundTrip are such; a function named in a --functions file is not known to
	 * be, and if it is a method its RETs stay.
	 */
	FIND_CALLS_NOT_DYNAMIC = 1,
	/* For target.c: where the function's own entry is single-stepped, probe the CALLs. */
	FIND_CALLS_ENTRY_IN_CALLERS = 2,
};

/*
 * Every direct call (CALL rel32) of the function at ADDR in CM into *CALLS (free with
 * sites__free_calls). -ENOENT when some of its calls cannot be found that way, and its RETs
 * must stay: its address is stored somewhere (a static interface table, a func value, a method
 * value, a LEA), it is in a type's method table (unless FLAGS says that does not matter), or
 * another function jumps to it as a tail call. -EOPNOTSUPP on arm64.
 */
int sites__find_calls(const struct code_map *cm, uint64_t addr, unsigned int flags,
		      struct call_site **calls, size_t *n);
void sites__free_calls(struct call_site *calls, size_t n);

/* The Go ABI's result slot (1: first) held by x86 register REG; 0 when none. */
int sites__slot_of(int reg);

#endif

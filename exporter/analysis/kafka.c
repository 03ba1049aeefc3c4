// SPDX-License-Identifier: MIT
/*
 * kafka-go in a target (kafka.h). WriteMessages, ReadMessage and FetchMessage are methods of the
 * concrete *Writer and *Reader that applications call directly: their ends go into the callers,
 * after each CALL, where the error is in the first result registers (AX, BX) and a read's
 * Message at SP, and their entries onto those CALLs where their own would be single-stepped.
 * ReadMessage calls FetchMessage: that end, inside ReadMessage, is not one where a message is
 * handed over, and is left out; where FetchMessage's ends cannot be told apart from it (its RETs
 * stay), only ReadMessage hands messages over.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/disasm.h"
#include "analysis/elf.h"
#include "analysis/gobin.h"
#include "analysis/kafka.h"
#include "analysis/offsets.h"
#include "analysis/sites.h"
#include "core/log.h"

#define KG_MODULE "github.com/segmentio/kafka-go"
#define KG KG_MODULE "."
#define SYM_WRITE_MESSAGES KG "(*Writer).WriteMessages"
#define SYM_READ_MESSAGE KG "(*Reader).ReadMessage"
#define SYM_FETCH_MESSAGE KG "(*Reader).FetchMessage"
#define SYM_COMMIT_MESSAGES KG "(*Reader).CommitMessages"
#define SYM_READER_CLOSE KG "(*Reader).Close"
#define SYM_NETADDR_NETWORK KG "(*networkAddress).Network"
#define SM_MODULE "github.com/IBM/sarama"
#define SYM_SEND_MESSAGE SM_MODULE ".(*syncProducer).SendMessage"
#define SYM_SEND_MESSAGE_CONTEXT SM_MODULE ".(*syncProducer).SendMessageContext"
#define SYM_SEND_MESSAGES SM_MODULE ".(*syncProducer).SendMessages"

#define FZ_MODULE "github.com/twmb/franz-go"
#define FZ FZ_MODULE "/pkg/kgo."
#define SYM_FZ_PRODUCE_SYNC FZ "(*Client).ProduceSync"
#define SYM_FZ_PRODUCE FZ "(*Client).produce"
#define SYM_FZ_PROMISE FZ "(*Client).finishRecordPromise"
#define SYM_FZ_POLL_RECORDS FZ "(*Client).PollRecords"
#define SYM_FZ_POLL_FETCHES FZ "(*Client).PollFetches"
#define SYM_FZ_NEXT FZ "(*FetchesRecordIter).Next"
#define SYM_FZ_EACH_RECORD FZ "Fetches.EachRecord"
/* Where kgo's ends go into their callers (sites.h). */
#define FRANZ_FIND_CALLS (FIND_CALLS_NOT_DYNAMIC | FIND_CALLS_ENTRY_IN_CALLERS)

/* A time.Time: wall, ext, loc. */
#define GO_TIME_SIZE 24
/* A Go []byte. */
#define GO_SLICE_SIZE 24

static void drop(struct probe_site *s)
{
	probe_site__release(s);
	s->addr = 0;
}

/* SYMBOL's entry and its ends after its direct CALLs (its RETs where not all calls are direct). */
static int with_ends(struct analysis *a, const char *symbol, struct probe_site *s)
{
	int err = analysis__find_site(a, symbol, s, SITE_RETS, 0);

	if (!err && site_planner_policy == SITES_BEST)
		err = analysis__caller_ends(a, s,
					    FIND_CALLS_NOT_DYNAMIC | FIND_CALLS_ENTRY_IN_CALLERS,
					    AFTER_CALL_KEEP_PAIR, X86_AX);
	return err;
}

/* Leaves out the ends of S in the function at CALLER. */
static void drop_ends_in(struct probe_site *s, uint64_t caller)
{
	size_t i, n = 0;

	for (i = 0; i < s->nends; i++)
		if (s->ends[i].caller != caller)
			s->ends[n++] = s->ends[i];
	s->nends = n;
}

/*
 * The offsets the probes cannot go without: a message's topic and key, for a send and a read
 * alike. A send needs the Writer's topic as well (sendable()): a consumer that links no Writer
 * has none of its fields in its DWARF, and is traced all the same.
 */
static bool readable(const int64_t *o)
{
	return o[KAFKAGO_FIELD_MSG_TOPIC] >= 0 && o[KAFKAGO_FIELD_MSG_KEY] >= 0;
}

static bool sendable(const int64_t *o)
{
	return o[KAFKAGO_FIELD_WRITER_TOPIC] >= 0;
}

static int find_sender(struct analysis *a, struct kafka_target *k)
{
	return with_ends(a, SYM_WRITE_MESSAGES, &k->send);
}

/* OFF + ADD, or -1 when either is unknown. */
static int64_t sum(int64_t off, int64_t add)
{
	return off < 0 || add < 0 ? -1 : off + add;
}

/*
 * Where FetchMessage and ReadMessage hand a Message over inside themselves (kafka_handover.c): in
 * place of their ends, which are single-stepped where the caller copies the Message it got before
 * any emulated instruction (go1.26). FetchMessage's skip the returns into ReadMessage, whose own
 * ends (its probes inside, else after its CALLs) hand the message over once it has committed.
 * Either read without such probes keeps its ends.
 */
static int find_handovers(struct analysis *a, struct kafka_target *k)
{
	int64_t size = sum(k->offs[KAFKAGO_FIELD_MSG_TIME], GO_TIME_SIZE);
	struct kafka_handover *h = k->handover;
	struct elf_symbol read;
	size_t nf = 0, nr = 0, i;
	int err;

	if (site_planner_policy != SITES_BEST || a->machine != EM_X86_64)
		return 0;
	if (k->read.addr && !analysis__find_func(a, SYM_READ_MESSAGE, &read)) {
		k->read_lo = read.addr;
		k->read_hi = read.addr + read.size;
	}
	err = kafka_handover__find(a, SYM_FETCH_MESSAGE, size, h, KAFKA_HANDOVERS_MAX, &nf);
	if (err == -ENOMEM)
		return err;
	if (err)
		pr_debug("'%s': kafka-go's FetchMessage hands its messages over at its ends: no "
			 "emulated probe inside it (%s)",
			 a->path, strerror(-err));
	for (i = 0; i < nf; i++)
		h[i].inner = true;
	if (k->read.addr) {
		err = kafka_handover__find(a, SYM_READ_MESSAGE, size, h + nf,
					   KAFKA_HANDOVERS_MAX - nf, &nr);
		if (err == -ENOMEM)
			return err;
		if (err)
			pr_debug("'%s': kafka-go's ReadMessage hands its messages over at its ends: "
				 "no emulated probe inside it (%s)",
				 a->path, strerror(-err));
	}
	k->nhandover = nf + nr;
	if (nf) {
		free(k->fetch.ret_offs);
		k->fetch.ret_offs = NULL;
		k->fetch.nrets = 0;
		k->fetch.nends = 0;
	}
	if (nr) {
		free(k->read.ret_offs);
		k->read.ret_offs = NULL;
		k->read.nrets = 0;
		k->read.nends = 0;
	}
	return 0;
}

/*
 * The reader's sites: FetchMessage's entry and ReadMessage's ends at least; FetchMessage's ends
 * where they are in its callers; CommitMessages' and Close's entries where they are linked.
 */
static int find_reader(struct analysis *a, struct kafka_target *k)
{
	int err;

	err = with_ends(a, SYM_READ_MESSAGE, &k->read);
	if (err == -ENOENT) {
		drop(&k->read);
		err = 0;
	}
	err = err ?: with_ends(a, SYM_FETCH_MESSAGE, &k->fetch);
	if (err)
		return err;
	if (k->fetch.nrets) {
		pr_debug("'%s': kafka-go's FetchMessage ends at its RETs (%s): only ReadMessage "
			 "hands messages over",
			 a->path, k->fetch.rets_why ? k->fetch.rets_why : "no callers found");
		free(k->fetch.ret_offs);
		k->fetch.ret_offs = NULL;
		k->fetch.nrets = 0;
		k->fetch.nends = 0;
	}
	if (k->read.addr)
		drop_ends_in(&k->fetch, k->read.addr);
	err = find_handovers(a, k);
	if (err)
		return err;
	err = analysis__find_site(a, SYM_COMMIT_MESSAGES, &k->commit, SITE_ENTRY, 0);
	if (err == -ENOENT) {
		drop(&k->commit);
		err = 0;
	}
	if (err)
		return err;
	err = analysis__find_site(a, SYM_READER_CLOSE, &k->close, SITE_ENTRY, 0);
	if (err == -ENOENT) {
		drop(&k->close);
		err = 0;
	}
	return err;
}

/* The first instruction of the straight run of INS that ends at I. */
static long straight_start(const struct insns *ins, long i)
{
	while (i > 0 && !ins->v[i].branch_target && ins->v[i - 1].kind == INSN_OTHER)
		i--;
	return i;
}

/* One way out of SendMessage that starts at a JE (or JNE) testing a register: which, and what. */
struct sent_way {
	long jcc;
	int reg;	  /* the register the Jcc tests: the *ProducerError */
	bool ok;	  /* the message's way (nil error), else the error's */
	int32_t msg_slot; /* ok: the message at SP + this */
	int32_t err_at;	  /* the error's: its Err in the ProducerError */
};

/*
 * Whether the RET at R of INS (the function at ADDR) ends a way straight from a JE or JNE that
 * tests a register, and which (into *W): the message's (XORL CX, CX; msg.Partition into AX and
 * msg.Offset into BX, at the offset table's offsets O, the message loaded from SP + M) or the
 * error's (a word loaded from the register, at E: pErr.Err).
 */
static bool sent_way(const struct insns *ins, uint64_t addr, const int64_t *o, long r,
		     struct sent_way *w)
{
	const struct insn *v = ins->v;
	int32_t part_at = -1, off_at = -1, base_slot[16];
	long start = straight_start(ins, r), i;
	bool zeroed = false;

	memset(w, 0, sizeof(*w));
	w->msg_slot = w->err_at = -1;
	if (!v[start].branch_target) {
		/* Its Jcc's fall-through. */
		w->jcc = start - 1;
		if (w->jcc < 0 || v[w->jcc].kind != INSN_JCC)
			return false;
	} else {
		/* The one Jcc that jumps here, and nothing falls through into it. */
		if (start > 0 && v[start - 1].kind != INSN_RET && v[start - 1].kind != INSN_JMP)
			return false;
		for (w->jcc = -1, i = 0; i < (long)ins->n; i++) {
			if ((v[i].kind != INSN_JCC && v[i].kind != INSN_JMP) ||
			    v[i].target != addr + v[start].off)
				continue;
			if (w->jcc >= 0 || v[i].kind != INSN_JCC)
				return false;
			w->jcc = i;
		}
		if (w->jcc < 0)
			return false;
	}
	if (!v[w->jcc].emulated || !v[w->jcc].jcc_zf || w->jcc < 1 || v[w->jcc - 1].test_reg < 0)
		return false;
	w->reg = v[w->jcc - 1].test_reg;
	for (i = 0; i < 16; i++)
		base_slot[i] = -1;
	for (i = start; i < r; i++) {
		const struct insn *in = &v[i];

		if (in->op == OP_ZERO && in->reg == X86_CX)
			zeroed = true;
		if (in->op != OP_MOV || in->to_mem || !in->has_mem || in->mem_index || in->reg < 0 ||
		    in->reg >= 16)
			continue;
		if (in->mem_base == X86_SP)
			base_slot[in->reg] = in->disp;
		else if (in->mem_base == w->reg && in->reg != X86_AX && in->reg != X86_BX &&
			 w->err_at < 0)
			w->err_at = in->disp; /* pErr.Err's itab */
		else if (in->mem_base >= 0 && in->reg == X86_AX)
			part_at = in->disp, w->msg_slot = base_slot[in->mem_base];
		else if (in->mem_base >= 0 && in->reg == X86_BX)
			off_at = in->disp;
	}
	w->ok = zeroed;
	if (zeroed)
		return part_at == o[SARAMA_FIELD_MSG_PARTITION] &&
		       off_at == o[SARAMA_FIELD_MSG_OFFSET] && w->msg_slot >= 0;
	return w->err_at >= 0;
}

/*
 * Where SendMessage ends without its RETs. It ends by testing the *ProducerError its
 * expectation brought, `MOVQ k(SP), r; TESTQ r, r; JE ok`, and each way from that JE (or JNE)
 * goes straight to a RET: the error's (-1, -1, pErr.Err, Err loaded from r + E) or the
 * message's (msg.Partition, msg.Offset, nil: XORL CX, CX, the message loaded from SP + M). The
 * Jcc, emulated, is the end: the register r tells which (0: sent), r + E the error, SP + M the
 * message. In SendMessage (to v1.61) every RET must be one of those two. From v1.62 SendMessage
 * only calls SendMessageContext (and returns its results): there, its other RETs (the context's
 * end, a message not submitted) stay probed, into K->sarama_one's RETs, and SendMessage's own go.
 */
static int sarama_sent_site(struct analysis *a, struct kafka_target *k)
{
	const int64_t *o = k->sm_offs;
	struct sent_way w, ok = { .jcc = -1 }, bad = { .jcc = -1 };
	uint64_t *others = NULL;
	struct elf_symbol fn;
	struct insns ins = {};
	uint8_t *code = NULL;
	bool keep_others;
	size_t nothers = 0;
	long r;
	int err;

	if (site_planner_policy != SITES_BEST || a->machine != EM_X86_64 ||
	    o[SARAMA_FIELD_MSG_PARTITION] < 0 || o[SARAMA_FIELD_MSG_OFFSET] < 0)
		return 0;
	keep_others = !analysis__find_func(a, SYM_SEND_MESSAGE_CONTEXT, &fn);
	if (!keep_others && analysis__find_func(a, SYM_SEND_MESSAGE, &fn))
		return 0;
	code = malloc(fn.size ? fn.size : 1);
	if (!code)
		return -ENOMEM;
	err = elf_file__read_addr(a->ef, fn.addr, code, fn.size);
	err = err ?: disasm__decode(a->machine, code, fn.size, fn.addr, &ins);
	if (!err) {
		others = calloc(ins.n ? ins.n : 1, sizeof(*others));
		err = others ? 0 : -ENOMEM;
	}
	if (err) {
		err = err == -ENOMEM ? err : 0;
		goto cleanup;
	}
	for (r = 0; r < (long)ins.n; r++) {
		if (ins.v[r].kind != INSN_RET)
			continue;
		if (!sent_way(&ins, fn.addr, o, r, &w)) {
			if (!keep_others)
				goto cleanup;
			err = elf_file__addr_to_offset(a->ef, fn.addr + ins.v[r].off,
						       &others[nothers++]);
			if (err)
				goto cleanup;
			continue;
		}
		/* One way of each kind, both from the one Jcc. */
		if ((w.ok ? ok.jcc : bad.jcc) >= 0)
			goto cleanup;
		*(w.ok ? &ok : &bad) = w;
	}
	if (ok.jcc < 0 || ok.jcc != bad.jcc || ok.reg != bad.reg)
		goto cleanup;
	err = elf_file__addr_to_offset(a->ef, fn.addr + ins.v[ok.jcc].off, &k->sm_sent_at);
	if (err)
		goto cleanup;
	k->sm_sent_reg = ok.reg;
	k->sm_sent_msg_slot = ok.msg_slot;
	k->sm_sent_err_at = bad.err_at;
	k->sm_sent = true;
	/* SendMessage's RETs give way to the end and, in SendMessageContext, its other RETs. */
	free(k->sarama_one.ret_offs);
	k->sarama_one.ret_offs = others;
	k->sarama_one.nrets = nothers;
	k->sarama_one.nends = 0;
	others = NULL;
cleanup:
	free(others);
	free(code);
	disasm__insns_free(&ins);
	return err;
}

/*
 * sarama's SyncProducer: its two sends, each a method the application calls through the
 * SyncProducer interface, so that their RETs stay (the sites are said in --verbose).
 */
static int find_sarama(struct analysis *a, const struct module_tables *modules,
		       struct kafka_target *k)
{
	const char *version = gobin__module_version(a->gobin, SM_MODULE);
	int err;

	if (!version)
		return 0;
	snprintf(k->sarama_version, sizeof(k->sarama_version), "%s", version);
	err = module_offsets__for_binary(modules ? modules->sarama : NULL, SM_MODULE, a->path,
					 a->gobin, k->sm_offs, k->sarama_offsets,
					 sizeof(k->sarama_offsets));
	if (err == -ENOMEM)
		return err;
	if (err || k->sm_offs[SARAMA_FIELD_MSG_TOPIC] < 0 ||
	    k->sm_offs[SARAMA_FIELD_MSG_KEY] < 0 || k->sm_offs[SARAMA_FIELD_MSG_VALUE] < 0) {
		pr_warn("'%s' uses sarama %s, whose structs gospan cannot read (no DWARF and no "
			"offset table row): its messages are not traced; 'make offsets' adds newer "
			"releases",
			a->path, version);
		return 0;
	}
	err = with_ends(a, SYM_SEND_MESSAGE, &k->sarama_one);
	if (err == -ENOMEM)
		return err;
	if (err)
		drop(&k->sarama_one);
	err = with_ends(a, SYM_SEND_MESSAGES, &k->sarama_many);
	if (err == -ENOMEM)
		return err;
	if (err)
		drop(&k->sarama_many);
	err = k->sarama_one.addr ? sarama_sent_site(a, k) : 0;
	if (err)
		return err;
	/*
	 * A send's usual way ends at the Jcc: SendMessageContext's RETs kept (v1.62) are its ways
	 * out when the context ends first or the message is not submitted.
	 */
	if (k->sarama_one.addr)
		k->sarama_steps = k->sm_sent ? probe_site__stepped(&k->sarama_one, true) -
						       (k->sarama_one.nrets && !k->sarama_one.rets_emulated) :
					       probe_site__stepped(&k->sarama_one, true);
	err = sarama_groups__find(a, k);
	return err ?: sarama_async__find(a, k);
}

int kafka__optional_site(struct analysis *a, const char *symbol, struct probe_site *s,
			 enum site_kind kind)
{
	int err = analysis__find_site(a, symbol, s, kind, 0);

	if (err == -ENOENT) {
		drop(s);
		return 0;
	}
	return err;
}

/*
 * Where Next hands its record over without its RETs: it returns the record it saved on its
 * stack before its last call (prepareNext, which moves the iterator on), `MOVQ r, K(SP) ... CALL
 * prepareNext; MOVQ K(SP), AX; ADDQ $n, SP; POPQ BP; RET`. That CALL, which the kernel
 * emulates, is the probe: the record is at SP + K there, a word the call cannot change (a value
 * live across a call is never in the callee's spill area). Every RET must have that shape.
 */
static int franz_next_calls(struct analysis *a, struct kafka_target *k)
{
	struct elf_symbol fn;
	struct insns ins = {};
	uint8_t *code = NULL;
	int64_t slot = -1;
	size_t i, n = 0;
	long r, j;
	int err;

	if (site_planner_policy != SITES_BEST || a->machine != EM_X86_64 ||
	    analysis__find_func(a, SYM_FZ_NEXT, &fn))
		return 0;
	code = malloc(fn.size ? fn.size : 1);
	if (!code)
		return -ENOMEM;
	err = elf_file__read_addr(a->ef, fn.addr, code, fn.size);
	err = err ?: disasm__decode(a->machine, code, fn.size, fn.addr, &ins);
	if (err) {
		err = err == -ENOMEM ? err : 0;
		goto cleanup;
	}
	for (i = 0; i < ins.n; i++) {
		const struct insn *v = ins.v;
		bool saved = false;

		if (v[i].kind != INSN_RET)
			continue;
		r = (long)i;
		if (r < 4 || n == sizeof(k->fz_next_calls) / sizeof(k->fz_next_calls[0]) ||
		    v[r - 1].op != OP_SP_ADD || v[r - 1].disp != 8 || v[r - 2].op != OP_SP_ADD ||
		    v[r - 3].op != OP_MOV || v[r - 3].to_mem || v[r - 3].reg != X86_AX ||
		    v[r - 3].size != 8 || v[r - 3].mem_base != X86_SP || v[r - 3].mem_index ||
		    (slot >= 0 && v[r - 3].disp != slot) || v[r - 4].kind != INSN_CALL ||
		    !v[r - 4].emulated || v[r - 3].branch_target || v[r - 2].branch_target ||
		    v[r - 1].branch_target || v[r].branch_target)
			goto cleanup;
		slot = v[r - 3].disp;
		/* The slot written on the straight way into the CALL. */
		for (j = r - 5; j >= 0 && !saved; j--) {
			if (v[j].kind != INSN_OTHER && v[j].kind != INSN_NOP)
				break;
			saved = v[j].op == OP_MOV && v[j].to_mem && v[j].size == 8 &&
				v[j].mem_base == X86_SP && !v[j].mem_index && v[j].disp == slot;
			if (v[j].branch_target)
				break;
		}
		if (!saved)
			goto cleanup;
		err = elf_file__addr_to_offset(a->ef, fn.addr + v[r - 4].off,
					       &k->fz_next_calls[n]);
		if (err)
			goto cleanup;
		n++;
	}
	k->fz_nnext_calls = n;
	k->fz_next_slot = slot;
cleanup:
	free(code);
	disasm__insns_free(&ins);
	return err;
}

/*
 * franz-go's kgo. Its sends: ProduceSync (entry and ends, where its results are), produce
 * (what the inlined Produce calls) and finishRecordPromise, where an asynchronous send ends. Its
 * records handed over: Next's last CALL (franz_next_calls), else its ends, begins one; Next's
 * entry, EachRecord's ends and a poll's entry end it. The ends go after the callers' CALLs where
 * every call is one the analysis finds (a method value or a static interface table keeps the
 * RETs).
 */
static int find_franz(struct analysis *a, const struct module_tables *modules,
		      struct kafka_target *k)
{
	const char *version = gobin__module_version(a->gobin, FZ_MODULE);
	const int64_t *o = k->fz_offs;
	int err;

	if (!version)
		return 0;
	snprintf(k->franz_version, sizeof(k->franz_version), "%s", version);
	err = module_offsets__for_binary(modules ? modules->franz : NULL, FZ_MODULE, a->path,
					 a->gobin, k->fz_offs, k->franz_offsets,
					 sizeof(k->franz_offsets));
	if (err == -ENOMEM)
		return err;
	if (err || o[FRANZ_FIELD_REC_KEY] < 0 || o[FRANZ_FIELD_REC_VALUE] < 0 ||
	    o[FRANZ_FIELD_REC_TOPIC] < 0 || o[FRANZ_FIELD_REC_PARTITION] < 0 ||
	    o[FRANZ_FIELD_REC_OFFSET] < 0) {
		pr_warn("'%s' uses franz-go %s, whose structs gospan cannot read (no DWARF and no "
			"offset table row): its records are not traced; 'make offsets' adds newer "
			"releases",
			a->path, version);
		return 0;
	}
	err = kafka__optional_site(a, SYM_FZ_PRODUCE_SYNC, &k->fz_sync, SITE_RETS);
	err = err ?: kafka__optional_site(a, SYM_FZ_PRODUCE, &k->fz_produce, SITE_ENTRY);
	err = err ?: kafka__optional_site(a, SYM_FZ_PROMISE, &k->fz_promise, SITE_ENTRY);
	err = err ?: kafka__optional_site(a, SYM_FZ_POLL_RECORDS, &k->fz_poll, SITE_ENTRY);
	err = err ?: kafka__optional_site(a, SYM_FZ_POLL_FETCHES, &k->fz_poll_fetches, SITE_ENTRY);
	err = err ?: kafka__optional_site(a, SYM_FZ_NEXT, &k->fz_next, SITE_RETS);
	err = err ?: kafka__optional_site(a, SYM_FZ_EACH_RECORD, &k->fz_each, SITE_RETS);
	if (err == -ENOMEM)
		return err;
	if (err) {
		pr_warn("'%s' uses franz-go %s, but it could not be probed (%s): its records "
			"are not traced",
			a->path, version, strerror(-err));
		goto none;
	}
	/* An asynchronous send without its end would never be sent. */
	if (!k->fz_produce.addr || !k->fz_promise.addr) {
		drop(&k->fz_produce);
		drop(&k->fz_promise);
	}
	/* A record begun needs its ends: the iterator's own entry at least. */
	if (!k->fz_next.addr) {
		drop(&k->fz_poll);
		drop(&k->fz_poll_fetches);
		drop(&k->fz_each);
	}
	/*
	 * Their ends after the application's CALLs where every call is one (kgo calls Next from
	 * EachRecord, directly): ProduceSync's results and Next's *Record are still in their
	 * registers there, or where the caller moved them.
	 */
	err = k->fz_next.addr ? franz_next_calls(a, k) : 0;
	if (err)
		return err;
	if (k->fz_nnext_calls) {
		free(k->fz_next.ret_offs);
		k->fz_next.ret_offs = NULL;
		k->fz_next.nrets = 0;
	}
	if (site_planner_policy == SITES_BEST) {
		err = k->fz_sync.addr ? analysis__caller_ends(a, &k->fz_sync, FRANZ_FIND_CALLS,
							      AFTER_CALL_KEEP_PAIR, X86_AX) :
					0;
		err = err ?: k->fz_next.addr && !k->fz_nnext_calls ?
			      analysis__caller_ends(a, &k->fz_next, FRANZ_FIND_CALLS, 0, X86_AX) :
			      0;
		err = err ?: k->fz_each.addr ?
			      analysis__caller_ends(a, &k->fz_each, FRANZ_FIND_CALLS, 0, -1) :
			      0;
		if (err)
			return err;
	}
	if (k->fz_sync.addr)
		k->franz_send_steps = probe_site__stepped(&k->fz_sync, true);
	if (k->fz_next.addr)
		k->franz_process_steps = probe_site__stepped(&k->fz_next, true);
	return 0;
none:
	drop(&k->fz_sync);
	drop(&k->fz_produce);
	drop(&k->fz_promise);
	drop(&k->fz_poll);
	drop(&k->fz_poll_fetches);
	drop(&k->fz_next);
	drop(&k->fz_each);
	return 0;
}

int kafka__find(struct analysis *a, const struct module_tables *modules, struct kafka_target *k)
{
	const char *version = gobin__module_version(a->gobin, KG_MODULE);
	struct elf_symbol sym;
	int err;

	memset(k, 0, sizeof(*k));
	k->send_steps = k->process_steps = k->sarama_steps = k->sarama_process_steps = -1;
	k->franz_send_steps = k->franz_process_steps = -1;
	err = find_sarama(a, modules, k);
	err = err ?: find_franz(a, modules, k);
	if (err)
		return err;
	if (!version)
		return 0;
	snprintf(k->version, sizeof(k->version), "%s", version);
	err = module_offsets__for_binary(modules ? modules->kafkago : NULL, KG_MODULE, a->path,
					 a->gobin, k->offs, k->offsets, sizeof(k->offsets));
	if (err == -ENOMEM)
		return err;
	if (err || !readable(k->offs)) {
		pr_warn("'%s' uses kafka-go %s, whose structs gospan cannot read (no DWARF and no "
			"offset table row): its messages are not traced; 'make offsets' adds newer "
			"releases",
			a->path, version);
		return 0;
	}
	/* No Writer's fields: no Writer linked, so no WriteMessages to find either. */
	err = sendable(k->offs) ? find_sender(a, k) : -ENOENT;
	if (err == -ENOMEM)
		return err;
	if (err) {
		if (err != -ENOENT)
			pr_warn("'%s' uses kafka-go %s, but its Writer could not be probed (%s): no "
				"producer spans",
				a->path, version, strerror(-err));
		drop(&k->send);
	}
	err = find_reader(a, k);
	if (err == -ENOMEM)
		return err;
	if (err || (!k->read.addr && !k->fetch.nends && !k->nhandover)) {
		if (err && err != -ENOENT)
			pr_warn("'%s' uses kafka-go %s, but its Reader could not be probed (%s): no "
				"consumer spans",
				a->path, version, strerror(-err));
		drop(&k->read);
		drop(&k->fetch);
		k->nhandover = 0;
		drop(&k->commit);
		drop(&k->close);
	}
	if (!analysis__find_func(a, SYM_NETADDR_NETWORK, &sym))
		k->fn_netaddr_network = sym.addr;
	if (k->send.addr)
		k->send_steps = probe_site__stepped(&k->send, true);
	/* A message comes through one of the two reads; the dearer one is said. */
	if (k->fetch.addr) {
		/* With probes inside the reads, none of their ends is left (find_handovers). */
		k->process_steps = probe_site__stepped(&k->fetch, false);
		if (k->read.addr && probe_site__stepped(&k->read, false) > k->process_steps)
			k->process_steps = probe_site__stepped(&k->read, false);
		k->process_steps += k->fetch.nentry_calls ? 0 : !k->fetch.entry_emulated;
	}
	return 0;
}

/* Whether franz-go's sends or records are probed. */
static bool franz_any(const struct kafka_target *k)
{
	return k->fz_sync.addr || k->fz_produce.addr || k->fz_next.addr;
}

static void configure_franz(const struct kafka_target *k, struct target_config *c)
{
	const int64_t *o = k->fz_offs;

	c->franz = franz_any(k);
	c->fz_rec_key = o[FRANZ_FIELD_REC_KEY];
	c->fz_rec_value = o[FRANZ_FIELD_REC_VALUE];
	c->fz_rec_headers = o[FRANZ_FIELD_REC_HEADERS];
	c->fz_rec_topic = o[FRANZ_FIELD_REC_TOPIC];
	c->fz_rec_partition = o[FRANZ_FIELD_REC_PARTITION];
	c->fz_rec_offset = o[FRANZ_FIELD_REC_OFFSET];
	c->fz_header_key = o[FRANZ_FIELD_HEADER_KEY];
	c->fz_header_value = o[FRANZ_FIELD_HEADER_VALUE];
	c->fz_header_size = sum(o[FRANZ_FIELD_HEADER_VALUE], GO_SLICE_SIZE);
	c->fz_client_group = sum(o[FRANZ_FIELD_CLIENT_CFG], o[FRANZ_FIELD_CFG_GROUP]);
	c->fz_client_seeds = sum(o[FRANZ_FIELD_CLIENT_CFG], o[FRANZ_FIELD_CFG_SEEDS]);
	c->fz_next_slot = k->fz_nnext_calls ? k->fz_next_slot : -1;
}

void kafka__configure(const struct kafka_target *k, struct target_config *c)
{
	const int64_t *o = k->offs;
	size_t i;

	c->sarama = k->sarama_one.addr || k->sarama_many.addr;
	c->sm_msg_topic = k->sm_offs[SARAMA_FIELD_MSG_TOPIC];
	c->sm_msg_key = k->sm_offs[SARAMA_FIELD_MSG_KEY];
	c->sm_msg_value = k->sm_offs[SARAMA_FIELD_MSG_VALUE];
	c->sm_sent_msg_slot = k->sm_sent ? k->sm_sent_msg_slot : -1;
	c->sm_sent_err_at = k->sm_sent ? k->sm_sent_err_at : -1;
	sarama__configure(k, c);
	configure_franz(k, c);
	c->kafka_go = k->send.addr || k->fetch.addr;
	if (!c->kafka_go)
		return;
	c->kg_writer_topic = o[KAFKAGO_FIELD_WRITER_TOPIC];
	c->kg_writer_addr = o[KAFKAGO_FIELD_WRITER_ADDR];
	c->kg_msg_topic = o[KAFKAGO_FIELD_MSG_TOPIC];
	c->kg_msg_partition = o[KAFKAGO_FIELD_MSG_PARTITION];
	c->kg_msg_offset = o[KAFKAGO_FIELD_MSG_OFFSET];
	c->kg_msg_key = o[KAFKAGO_FIELD_MSG_KEY];
	c->kg_msg_value = o[KAFKAGO_FIELD_MSG_VALUE];
	c->kg_msg_headers = o[KAFKAGO_FIELD_MSG_HEADERS];
	c->kg_msg_size = sum(o[KAFKAGO_FIELD_MSG_TIME], GO_TIME_SIZE);
	c->kg_header_key = o[KAFKAGO_FIELD_HEADER_KEY];
	c->kg_header_value = o[KAFKAGO_FIELD_HEADER_VALUE];
	c->kg_header_size = sum(o[KAFKAGO_FIELD_HEADER_VALUE], GO_SLICE_SIZE);
	c->kg_reader_group = sum(o[KAFKAGO_FIELD_READER_CONFIG], o[KAFKAGO_FIELD_CONFIG_GROUP_ID]);
	c->kg_reader_brokers = sum(o[KAFKAGO_FIELD_READER_CONFIG], o[KAFKAGO_FIELD_CONFIG_BROKERS]);
	c->kg_netaddr_address = o[KAFKAGO_FIELD_NETADDR_ADDRESS];
	for (i = 0; i < k->nhandover; i++) {
		const struct kafka_handover *h = &k->handover[i];
		struct kafka_handover_site *cs = &c->kg_handover[i];

		cs->at = h->at;
		cs->skip_lo = h->inner ? k->read_lo : 0;
		cs->skip_hi = h->inner ? k->read_hi : 0;
		cs->msg_off = h->msg_off;
		cs->err_off = h->err_off;
		cs->ret_off = h->ret_off;
		cs->msg_reg = (uint8_t)h->msg_reg;
		cs->cond = h->cond;
	}
}

bool kafka__any(const struct kafka_target *k)
{
	return k->send.addr || k->fetch.addr || k->sarama_one.addr || k->sarama_many.addr ||
	       k->sm_nrecvs || k->sm_nsends || franz_any(k);
}

void kafka__release(struct kafka_target *k)
{
	probe_site__release(&k->send);
	probe_site__release(&k->fetch);
	probe_site__release(&k->read);
	probe_site__release(&k->commit);
	probe_site__release(&k->close);
	probe_site__release(&k->sarama_one);
	probe_site__release(&k->sarama_many);
	sarama_groups__release(k);
	sarama_async__release(k);
	probe_site__release(&k->fz_sync);
	probe_site__release(&k->fz_produce);
	probe_site__release(&k->fz_promise);
	probe_site__release(&k->fz_poll);
	probe_site__release(&k->fz_poll_fetches);
	probe_site__release(&k->fz_next);
	probe_site__release(&k->fz_each);
}

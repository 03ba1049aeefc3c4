// SPDX-License-Identifier: MIT
/*
 * IBM/sarama's consumer groups in a target (kafka.h; bpf/kafka_sarama.bpf.c probes them).
 *
 * A group's handler is the application's: sarama calls its ConsumeClaim(session, claim) through
 * the ConsumerGroupHandler interface, and ConsumeClaim takes each message from the claim's
 * channel with the Go runtime's receive functions, which it calls directly: chanrecv2 for a
 * `range claim.Messages()`, chanrecv1 for `<-claim.Messages()`, selectgo for a select with other
 * cases, selectnbrecv for one with a default. Those CALLs, and where each returns to, are the
 * probe sites of a message handed over; the RETs of ConsumeClaim end the last. The handler is
 * found by its method's name: any function named ConsumeClaim outside sarama itself; its receives
 * are its own and those of the functions of its package it calls (a loop left to a helper).
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/disasm.h"
#include "analysis/gobin.h"
#include "analysis/kafka.h"
#include "core/log.h"

#define SM "github.com/IBM/sarama."
#define SYM_CONSUME SM "(*consumerGroupSession).consume"
#define SYM_CONSUME_PARTITION SM "(*consumer).ConsumePartition"
#define SYM_MARK_MESSAGE SM "(*consumerGroupSession).MarkMessage"
#define HANDLER_METHOD ".ConsumeClaim"
#define SYM_DISPATCHER SM "(*asyncProducer).dispatcher"
#define SYM_NEW_ASYNC_PRODUCER SM "newAsyncProducer"
#define SYM_RETURN_SUCCESSES SM "(*asyncProducer).returnSuccesses"
#define SYM_RETURN_ERRORS SM "(*asyncProducer).returnErrors"
#define SYM_RETURN_ERROR SM "(*asyncProducer).returnError"

/* Handlers probed at most: an application has one or two. */
#define HANDLERS_MAX 16
/* The application's channel sends probed at most. */
#define SENDS_MAX 512
/* A Go []byte, which a RecordHeader's Value is and ends with. */
#define GO_SLICE_SIZE 24

/* The runtime's receives, their kind and the registers of their results. */
static const struct {
	const char *symbol;
	enum recv_kind kind;
	int result_reg;
	unsigned int after_flags;
} receives[] = {
	{ "runtime.chanrecv1", RECV_CHAN1, -1, 0 },
	{ "runtime.chanrecv2", RECV_CHAN2, X86_AX, 0 },
	{ "runtime.selectnbrecv", RECV_NONBLOCK, X86_AX, AFTER_CALL_KEEP_PAIR },
	{ "runtime.selectgo", RECV_SELECT, X86_AX, AFTER_CALL_KEEP_PAIR },
};

static bool is_handler(const struct sym_entry *s)
{
	size_t n, m = strlen(HANDLER_METHOD);

	if (!s->is_func || !s->name || !strncmp(s->name, "github.com/IBM/sarama", 21))
		return false;
	n = strlen(s->name);
	return n > m && !strcmp(s->name + n - m, HANDLER_METHOD);
}

/* The receives the function at ADDR (SIZE bytes) makes, appended to K's. */
static int find_receives(struct analysis *a, uint64_t addr, uint64_t size,
			 const struct elf_symbol *callee, struct kafka_target *k)
{
	size_t i;
	int err = 0;

	for (i = 0; !err && i < sizeof(receives) / sizeof(receives[0]); i++) {
		if (callee[i].addr)
			err = site_planner__calls_in(a->sp, addr, size, callee[i].addr,
						     receives[i].after_flags,
						     receives[i].result_reg, receives[i].kind,
						     &k->sm_recvs, &k->sm_nrecvs);
	}
	return err;
}

/* The length of the package path of the function NAME ("main" of "main.(*h).ConsumeClaim"). */
static size_t package_len(const char *name)
{
	const char *slash = strrchr(name, '/'), *dot = strchr(slash ? slash : name, '.');

	return dot ? (size_t)(dot - name) : 0;
}

/*
 * The receives of the functions of the handler FN's own package that it calls (a handler that
 * leaves the loop to a helper: `return h.loop(sess, claim)`), appended to K's. SYMS: the
 * binary's N functions.
 */
static int find_helpers(struct analysis *a, const struct sym_entry *syms, size_t n,
			const struct sym_entry *fn, const struct elf_symbol *callee,
			struct kafka_target *k)
{
	size_t plen = package_len(fn->name), nc, i, j, before;
	uint64_t *calls;
	int err;

	err = site_planner__callees(a->sp, fn->addr, fn->size, &calls, &nc);
	for (i = 0; !err && i < nc; i++) {
		for (j = 0; j < i && calls[j] != calls[i]; j++)
			;
		if (j < i)
			continue;
		for (j = 0; j < n && (!syms[j].is_func || syms[j].addr != calls[i]); j++)
			;
		if (j == n || !syms[j].name || is_handler(&syms[j]) || !plen ||
		    strncmp(syms[j].name, fn->name, plen) || syms[j].name[plen] != '.')
			continue;
		before = k->sm_nrecvs;
		err = find_receives(a, syms[j].addr, syms[j].size, callee, k);
		if (!err && k->sm_nrecvs > before)
			pr_debug("'%s': sarama handler %s: %zu receives in %s", a->path, fn->name,
				 k->sm_nrecvs - before, syms[j].name);
	}
	free(calls);
	return err;
}

/*
 * The receives the handler FN makes, itself or in the helpers of its package it calls, appended
 * to K's; its RETs into K's next handler.
 */
static int find_handler(struct analysis *a, const struct sym_entry *syms, size_t n,
			const struct sym_entry *fn, const struct elf_symbol *callee,
			struct kafka_target *k)
{
	size_t before = k->sm_nrecvs;
	char *name;
	int err;

	err = find_receives(a, fn->addr, fn->size, callee, k);
	err = err ?: find_helpers(a, syms, n, fn, callee, k);
	if (!err && k->sm_nrecvs > before)
		err = analysis__find_site(a, fn->name, &k->sm_handlers[k->sm_nhandlers], SITE_RETS,
					  0);
	if (err == -ENOMEM)
		return err;
	if (err) {
		pr_debug("'%s': sarama handler %s: cannot probe it (%s)", a->path, fn->name,
			 strerror(-err));
		k->sm_nrecvs = before;
		return 0;
	}
	if (k->sm_nrecvs == before) {
		probe_site__release(&k->sm_handlers[k->sm_nhandlers]);
		return 0;
	}
	/* The name, for --verbose after the analysis (whose function index it is in) is gone. */
	name = strdup(fn->name);
	if (!name) {
		probe_site__release(&k->sm_handlers[k->sm_nhandlers]);
		return -ENOMEM;
	}
	k->sm_handlers[k->sm_nhandlers].symbol = name;
	pr_debug("'%s': sarama handler %s: %zu receives", a->path, fn->name,
		 k->sm_nrecvs - before);
	k->sm_nhandlers++;
	return 0;
}

/* The offsets a message needs: its topic, partition, offset and key, and the claim's channel. */
static bool readable(const int64_t *o)
{
	return o[SARAMA_FIELD_CM_TOPIC] >= 0 && o[SARAMA_FIELD_CM_PARTITION] >= 0 &&
	       o[SARAMA_FIELD_CM_OFFSET] >= 0 && o[SARAMA_FIELD_CM_KEY] >= 0 &&
	       o[SARAMA_FIELD_PC_MESSAGES] >= 0;
}

int sarama_groups__find(struct analysis *a, struct kafka_target *k)
{
	struct elf_symbol callee[sizeof(receives) / sizeof(receives[0])] = {};
	const struct sym_entry *syms;
	size_t n, i;
	bool stepped = false;
	int err = 0;

	if (!readable(k->sm_offs))
		return 0;
	for (i = 0; i < sizeof(receives) / sizeof(receives[0]); i++)
		if (analysis__find_func(a, receives[i].symbol, &callee[i]))
			callee[i].addr = 0;
	n = analysis__functions(a, &syms);
	for (i = 0; i < n && !err; i++) {
		if (!is_handler(&syms[i]))
			continue;
		if (k->sm_nhandlers == HANDLERS_MAX) {
			pr_warn("'%s': more than %d sarama consumer group handlers: %s and the rest "
				"are not traced",
				a->path, HANDLERS_MAX, syms[i].name);
			break;
		}
		if (!k->sm_handlers) {
			k->sm_handlers = calloc(HANDLERS_MAX, sizeof(*k->sm_handlers));
			if (!k->sm_handlers)
				return -ENOMEM;
		}
		err = find_handler(a, syms, n, &syms[i], callee, k);
	}
	if (err)
		return err;
	if (!k->sm_nrecvs) {
		if (k->sm_nhandlers || a->machine != EM_X86_64)
			pr_info("'%s' uses sarama %s, whose consumer group handlers gospan cannot "
				"probe (%s): their messages have no CONSUMER spans",
				a->path, k->sarama_version,
				a->machine != EM_X86_64 ? "amd64 only" :
							  "no channel receive found in ConsumeClaim");
		goto none;
	}
	err = kafka__optional_site(a, SYM_CONSUME, &k->sm_consume, SITE_ENTRY);
	err = err ?: kafka__optional_site(a, SYM_CONSUME_PARTITION, &k->sm_partition, SITE_RETS);
	err = err ?: kafka__optional_site(a, SYM_MARK_MESSAGE, &k->sm_mark, SITE_ENTRY);
	if (err == -ENOMEM)
		return err;
	/* Without them, no channel is ever known to be a claim's. */
	if (err || ((!k->sm_consume.addr || !k->sm_partition.addr) && !k->sm_mark.addr)) {
		pr_warn("'%s' uses sarama %s, but its consumer groups could not be probed (%s): "
			"their messages have no CONSUMER spans",
			a->path, k->sarama_version,
			err ? strerror(-err) : "no consumerGroupSession.consume nor MarkMessage");
		goto none;
	}
	for (i = 0; i < k->sm_nrecvs; i++)
		stepped |= !k->sm_recvs[i].after.emulated;
	k->sarama_process_steps = stepped;
	return 0;
none:
	sarama_groups__release(k);
	return 0;
}

void sarama__configure(const struct kafka_target *k, struct target_config *c)
{
	const int64_t *o = k->sm_offs;

	c->sarama_async = k->sm_nsends > 0;
	c->sm_msg_offset = o[SARAMA_FIELD_MSG_OFFSET];
	c->sm_msg_partition = o[SARAMA_FIELD_MSG_PARTITION];
	c->sm_ap_input = o[SARAMA_FIELD_AP_INPUT];
	c->sarama_group = k->sm_nrecvs > 0;
	c->sm_cm_headers = o[SARAMA_FIELD_CM_HEADERS];
	c->sm_cm_key = o[SARAMA_FIELD_CM_KEY];
	c->sm_cm_topic = o[SARAMA_FIELD_CM_TOPIC];
	c->sm_cm_partition = o[SARAMA_FIELD_CM_PARTITION];
	c->sm_cm_offset = o[SARAMA_FIELD_CM_OFFSET];
	c->sm_header_key = o[SARAMA_FIELD_HEADER_KEY];
	c->sm_header_value = o[SARAMA_FIELD_HEADER_VALUE];
	c->sm_header_size = o[SARAMA_FIELD_HEADER_VALUE] < 0 ? -1 :
				o[SARAMA_FIELD_HEADER_VALUE] + GO_SLICE_SIZE;
	c->sm_pc_messages = o[SARAMA_FIELD_PC_MESSAGES];
	c->sm_session_group = o[SARAMA_FIELD_SESSION_PARENT];
	c->sm_group_id = o[SARAMA_FIELD_GROUP_ID];
}

void sarama_groups__release(struct kafka_target *k)
{
	size_t i;

	for (i = 0; i < k->sm_nhandlers; i++) {
		free((char *)k->sm_handlers[i].symbol);
		probe_site__release(&k->sm_handlers[i]);
	}
	free(k->sm_handlers);
	free(k->sm_recvs);
	k->sm_handlers = NULL;
	k->sm_recvs = NULL;
	k->sm_nhandlers = k->sm_nrecvs = 0;
	probe_site__release(&k->sm_consume);
	probe_site__release(&k->sm_partition);
	probe_site__release(&k->sm_mark);
	k->sm_consume.addr = k->sm_partition.addr = k->sm_mark.addr = 0;
}

/* Whether the function NAME is of the main module MAIN (NULL: package main's only). */
static bool in_main_module(const char *name, const char *main)
{
	size_t n = main ? strlen(main) : 0;

	if (!strncmp(name, "main.", 5))
		return true;
	return n && !strncmp(name, main, n) && (name[n] == '.' || name[n] == '/');
}

/*
 * The channel sends of the main module's functions: each CALL of runtime.chansend1 and
 * selectgo there, appended to K's sends (an AsyncProducer's input is told from other channels
 * at run time).
 */
static int find_sends(struct analysis *a, struct kafka_target *k)
{
	/* A select's return says which case it chose, in AX: whether it sent. */
	static const struct {
		const char *symbol;
		enum send_kind kind;
		int result_reg;
	} sends[] = { { "runtime.chansend1", SEND_CHAN, -1 },
		      { "runtime.selectgo", SEND_SELECT, X86_AX } };
	uint64_t targets[sizeof(sends) / sizeof(sends[0])] = {};
	const struct sym_entry *syms;
	struct elf_symbol sym;
	size_t n, i, j;
	int err = 0;

	for (j = 0; j < sizeof(sends) / sizeof(sends[0]); j++)
		if (!analysis__find_func(a, sends[j].symbol, &sym))
			targets[j] = sym.addr;
	n = analysis__functions(a, &syms);
	for (i = 0; !err && i < n; i++) {
		if (!syms[i].is_func || !syms[i].name ||
		    !in_main_module(syms[i].name, a->gobin->main_path) ||
		    !site_planner__may_call(a->sp, syms[i].addr, syms[i].size, targets,
					    sizeof(targets) / sizeof(targets[0])))
			continue;
		for (j = 0; !err && j < sizeof(sends) / sizeof(sends[0]); j++)
			if (targets[j])
				err = site_planner__calls_in(a->sp, syms[i].addr, syms[i].size,
							     targets[j], 0, sends[j].result_reg,
							     sends[j].kind, &k->sm_sends,
							     &k->sm_nsends);
		if (!err && k->sm_nsends > SENDS_MAX) {
			pr_warn("'%s': more than %d channel sends in its own code: the messages it "
				"sends to a sarama AsyncProducer from %s on are not traced",
				a->path, SENDS_MAX, syms[i].name);
			k->sm_nsends = SENDS_MAX;
			break;
		}
	}
	return err;
}

int sarama_async__find(struct analysis *a, struct kafka_target *k)
{
	struct elf_symbol dispatcher, recv;
	int err;

	if (analysis__find_func(a, SYM_DISPATCHER, &dispatcher) ||
	    analysis__find_func(a, "runtime.chanrecv2", &recv))
		return 0;
	err = kafka__optional_site(a, SYM_NEW_ASYNC_PRODUCER, &k->sm_made, SITE_RETS);
	err = err ?: kafka__optional_site(a, SYM_RETURN_SUCCESSES, &k->sm_successes, SITE_ENTRY);
	err = err ?: kafka__optional_site(a, SYM_RETURN_ERRORS, &k->sm_errors, SITE_ENTRY);
	err = err ?: kafka__optional_site(a, SYM_RETURN_ERROR, &k->sm_error, SITE_ENTRY);
	err = err ?: site_planner__calls_in(a->sp, dispatcher.addr, dispatcher.size, recv.addr, 0,
					    -1, 0, &k->sm_inputs, &k->sm_ninputs);
	err = err ?: find_sends(a, k);
	if (err == -ENOMEM)
		return err;
	if (err || !k->sm_ninputs || !k->sm_successes.addr ||
	    (!k->sm_errors.addr && !k->sm_error.addr)) {
		pr_warn("'%s' uses sarama %s, but its AsyncProducer could not be probed (%s): "
			"messages sent through one have no PRODUCER spans",
			a->path, k->sarama_version,
			err == -EOPNOTSUPP ? "its sends are found on amd64 only" :
			err		   ? strerror(-err) :
					     "no dispatcher receive or no returnSuccesses");
		goto none;
	}
	if (!k->sm_nsends) {
		pr_debug("'%s': no channel send in its own code: no sarama AsyncProducer sends",
			 a->path);
		goto none;
	}
	pr_debug("'%s': sarama AsyncProducer: %zu channel sends in its own code probed", a->path,
		 k->sm_nsends);
	return 0;
none:
	sarama_async__release(k);
	return 0;
}

void sarama_async__release(struct kafka_target *k)
{
	free(k->sm_inputs);
	free(k->sm_sends);
	k->sm_inputs = k->sm_sends = NULL;
	k->sm_ninputs = k->sm_nsends = 0;
	probe_site__release(&k->sm_made);
	probe_site__release(&k->sm_successes);
	probe_site__release(&k->sm_errors);
	probe_site__release(&k->sm_error);
	k->sm_made.addr = k->sm_successes.addr = k->sm_errors.addr = k->sm_error.addr = 0;
}

// SPDX-License-Identifier: MIT
/*
 * Unit tests for caps.c: a set of capabilities named in each style a user types them in, cut to
 * a small buffer; and the effective set read with capget(2), checked against a capability this
 * test takes out of its own effective set and puts back.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <linux/capability.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/caps.h"
#include "helpers.h"

#define TRACING (CAPS_BIT(CAP_BPF) | CAPS_BIT(CAP_PERFMON) | CAPS_BIT(CAP_SYS_PTRACE))

static void assert_list(uint64_t set, enum caps_style style, const char *want)
{
	char buf[256];

	assert_int_equal(caps__list(set, style, buf, sizeof(buf)), strlen(want));
	assert_string_equal(buf, want);
}

static void test_caps__list_styles(void **state)
{
	(void)state;
	/* In the order of their numbers: CAP_SYS_PTRACE is 19, CAP_PERFMON 38, CAP_BPF 39. */
	assert_list(TRACING, CAPS_PROSE, "CAP_SYS_PTRACE, CAP_PERFMON and CAP_BPF");
	assert_list(TRACING, CAPS_SETCAP, "cap_sys_ptrace,cap_perfmon,cap_bpf");
	assert_list(TRACING, CAPS_SYSTEMD, "CAP_SYS_PTRACE CAP_PERFMON CAP_BPF");
	assert_list(CAPS_BIT(CAP_SYS_PTRACE) | CAPS_BIT(CAP_SYS_ADMIN), CAPS_PROSE,
		    "CAP_SYS_PTRACE and CAP_SYS_ADMIN");
	assert_list(CAPS_BIT(CAP_BPF), CAPS_PROSE, "CAP_BPF");
	assert_list(CAPS_BIT(CAP_CHOWN) | CAPS_BIT(CAP_DAC_READ_SEARCH) | CAPS_BIT(CAP_NET_ADMIN),
		    CAPS_SETCAP, "cap_chown,cap_dac_read_search,cap_net_admin");
	assert_list(0, CAPS_PROSE, "");
	/* One the table does not know (a kernel newer than gospan): by its number. */
	assert_list(CAPS_BIT(45) | CAPS_BIT(CAP_BPF), CAPS_PROSE, "CAP_BPF and CAP_45");
	assert_list(CAPS_BIT(45), CAPS_SETCAP, "cap_45");
}

static void test_caps__list_cut_to_the_buffer(void **state)
{
	const char *whole = "CAP_SYS_PTRACE, CAP_PERFMON and CAP_BPF";
	char buf[10];

	(void)state;
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(caps__list(TRACING, CAPS_PROSE, buf, sizeof(buf)), strlen(whole));
	assert_string_equal(buf, "CAP_SYS_P");
	assert_int_equal(caps__list(TRACING, CAPS_PROSE, NULL, 0), strlen(whole));
}

static int effective_bpf(int on)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	if (on)
		data[CAP_BPF / 32].effective |= 1U << (CAP_BPF % 32);
	else
		data[CAP_BPF / 32].effective &= ~(1U << (CAP_BPF % 32));
	return syscall(SYS_capset, &hdr, data) ? -1 : 0;
}

/* The effective set, not the permitted one: what the kernel checks is what gospan reads. */
static void test_caps__effective_is_what_the_kernel_checks(void **state)
{
	uint64_t set = 0;

	(void)state;
	assert_int_equal(caps__effective(&set), 0);
	if (!(set & CAPS_BIT(CAP_BPF)))
		TEST_SKIP("CAP_BPF is not in this test's effective set (run as root)");
	assert_int_equal(effective_bpf(0), 0);
	assert_int_equal(caps__effective(&set), 0);
	assert_false(set & CAPS_BIT(CAP_BPF));
	assert_int_equal(effective_bpf(1), 0);
	assert_int_equal(caps__effective(&set), 0);
	assert_true(set & CAPS_BIT(CAP_BPF));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_caps__list_styles),
		cmocka_unit_test(test_caps__list_cut_to_the_buffer),
		cmocka_unit_test(test_caps__effective_is_what_the_kernel_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

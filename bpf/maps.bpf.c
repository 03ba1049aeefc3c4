// SPDX-License-Identifier: GPL-2.0
/* The maps the uprobe families share (probe.bpf.h), defined once for the object they make. */
#include "probe.bpf.h"

struct targets_map targets SEC(".maps");
struct goroutines_map goroutines SEC(".maps");
struct forgotten_map forgotten SEC(".maps");
struct drops_map drops SEC(".maps");
struct scratch_map scratch SEC(".maps");
struct tracestate_scratch_map tracestate_scratch SEC(".maps");
struct gclocks_map gclocks SEC(".maps");

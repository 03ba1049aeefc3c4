// SPDX-License-Identifier: GPL-2.0
/* The maps the uprobe families share (probe.bpf.h), defined once for the object they make. */
#include "probe.bpf.h"

PROBE_MAPS(SHARED_MAP_DEFINE)

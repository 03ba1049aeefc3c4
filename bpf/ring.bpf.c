// SPDX-License-Identifier: GPL-2.0
/* The ring buffer and its wakeup threshold (ring.bpf.h), for the objects this is linked into. */
#include "ring.bpf.h"

struct events_map events SEC(".maps");

/* User space sets it before load, from the buffer's size. */
const volatile __u64 wake_threshold = 1 << 20;

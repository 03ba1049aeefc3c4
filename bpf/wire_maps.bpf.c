// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The maps the uprobe object and the socket-layer writer share (wire_maps.bpf.h), linked into
 * both: the writer's own copies are replaced by the uprobe object's before it loads.
 */
#include "wire_maps.bpf.h"

WIRE_MAPS(SHARED_MAP_DEFINE)
